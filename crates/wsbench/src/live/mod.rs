//! The run while it runs: each second the engine's workers have finished
//! ([`crate::engine::LiveBoard`]) shown on stderr ([`view`]), served as Prometheus text at
//! `--metrics-addr` ([`metrics_endpoint`], rendered by [`exposition`]), written as JSON
//! lines to `--stream` ([`stream`]) and as a histogram to `--hlog` ([`crate::hlog`]), then
//! dropped: nothing here keeps a second once it is written. [`Live`] is set up once per
//! session, before any load (the endpoint bound, the stream file created); each measurement
//! gets a [`Tracker`] that the engine's coordinator thread feeds a few times a second.
//! A `--processes` shard hands its seconds to the parent instead ([`shard_feed`]), which
//! sums them up into one second for all its shards ([`shards`]) and shows, streams and
//! serves that second through the same [`Publisher`] a tracker writes through, and to the
//! `--dashboard` page when one is open ([`dashboard`]).

pub mod dashboard;
pub mod exposition;
mod http_head;
pub mod metrics_endpoint;
pub mod shard_feed;
pub mod shards;
pub mod stream;
pub mod view;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use hdrhistogram::Histogram;

use crate::config::{Exchange, LiveOutputs, LoadSpec};
use crate::engine::{Control, EngineOutput, LiveSeconds, Phase, PhasePlan};
use crate::hlog::HlogWriter;
use crate::metrics::{Counters, Interval};
use crate::samples::ServerSample;
use exposition::Totals;
use metrics_endpoint::MetricsEndpoint;
use shard_feed::Feed;
use stream::Stream;
use view::View;

/// Why the live outputs could not be set up (before any load is sent).
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error("--metrics-addr {addr}: cannot listen there (is another program using the port?)")]
    Bind {
        addr: std::net::SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("--stream {}: cannot create the file", path.display())]
    Stream {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// One second of the run as every worker finished it.
#[derive(Debug, Clone, PartialEq)]
pub struct Second {
    /// Seconds since the run's start.
    pub second: u64,
    pub phase: Phase,
    /// With `--stages`, the stage the second belongs to, numbered from 1 as the result
    /// names them (`stage1`, …); `None` without stages or past the last.
    pub stage: Option<u64>,
    /// Round trips completed in this second (exact).
    pub round_trips: u64,
    pub connections_open: u64,
    /// Replies were awaited when the second began: with no round trip in it, it stalled.
    pub awaiting: bool,
    /// Attempts to reopen lost connections started in this second (`--reconnect`).
    pub reconnects: u64,
    /// Seconds the stall going on has lasted, this one included (0: not stalled), as the
    /// [`Publisher`] that wrote the second counted them.
    pub stall_s: u64,
    /// Latency of this second's round trips, µs (0 when there were none).
    pub p50_us: u64,
    pub p90_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
    /// The run's counters when this second was published.
    pub counters: Counters,
    /// Every error so far by kind (the counters' and the scenario's own).
    pub errors: BTreeMap<String, u64>,
    /// Seconds left until the measured window ends, once it is known.
    pub remaining_secs: Option<u64>,
    /// A `--processes` run's second, summed over its shards: how they compare.
    pub shards: Option<ShardSpread>,
}

/// How the shards of a `--processes` run compare in one second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardSpread {
    /// The shards still running (those that ended are not counted).
    pub running: u64,
    /// Shards that have not reported this second yet; their latest second stands in.
    pub behind: u64,
    /// The lowest and highest round trips (exchanges) of one shard in this second.
    pub rate: (u64, u64),
    /// The fewest and most connections open in one shard.
    pub open: (u64, u64),
}

impl Second {
    fn of(
        interval: &Interval,
        phase: Phase,
        (counters, errors): (&Counters, &BTreeMap<String, u64>),
        end_us: u64,
    ) -> Second {
        let latency = &interval.latency;
        let quantile = |q: f64| interval.quantile_us(q);
        let now_us = (interval.second + 1) * 1_000_000;
        Second {
            second: interval.second,
            phase,
            stage: None,
            round_trips: interval.exchanges,
            connections_open: interval.connections_open,
            awaiting: interval.awaiting,
            reconnects: interval.reconnects,
            stall_s: 0,
            p50_us: quantile(0.5),
            p90_us: quantile(0.9),
            p99_us: quantile(0.99),
            max_us: if latency.is_empty() { 0 } else { latency.max() },
            counters: counters.clone(),
            errors: errors.clone(),
            remaining_secs: (end_us != u64::MAX).then(|| end_us.saturating_sub(now_us).div_ceil(1_000_000)),
            shards: None,
        }
    }

    /// Whether replies were awaited through the second and none came.
    pub fn stalled(&self) -> bool {
        self.awaiting && self.round_trips == 0
    }

    /// The second's stage as the result names it (`stage2`), when it has one.
    pub fn stage_name(&self) -> Option<String> {
        self.stage.map(|n| format!("stage{n}"))
    }

    /// Every error counted so far, of any kind.
    pub fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }
}

/// Which measurement of a session a second belongs to: its seconds count from 0 again in
/// each (an unmeasured warm-up run, then the measured one; the steps of a search).
#[derive(Debug, Default)]
pub struct Steps {
    step: u64,
    last_second: Option<u64>,
}

impl Steps {
    /// The step of the next second written, `second`.
    pub fn of(&mut self, second: u64) -> u64 {
        if self.last_second.is_some_and(|last| second <= last) {
            self.step += 1;
        }
        self.last_second = Some(second);
        self.step
    }
}

/// The session's live outputs: the endpoint (bound for the session's whole life), the
/// stream file, the feed to a `--processes` parent, and whether progress is shown.
#[derive(Debug)]
pub struct Live {
    quiet: bool,
    endpoint: Option<Arc<MetricsEndpoint>>,
    stream: Option<Arc<Mutex<Stream>>>,
    feed: Option<Mutex<Feed>>,
}

impl Live {
    /// Binds the endpoint and creates the stream file: a failure here comes before any load.
    pub fn start(config: &LiveOutputs) -> Result<Live, LiveError> {
        let endpoint = config
            .metrics_addr
            .map(|addr| MetricsEndpoint::start(addr).map_err(|source| LiveError::Bind { addr, source }))
            .transpose()?;
        let stream = config
            .stream
            .as_ref()
            .map(|path| {
                Stream::create(path).map_err(|source| LiveError::Stream { path: path.clone(), source })
            })
            .transpose()?;
        if let Some(endpoint) = &endpoint {
            // Said even with --quiet: with port 0 this is how the scraper learns the port.
            eprintln!("wsbench: metrics at http://{}/metrics", endpoint.addr());
        }
        // A shard's progress is its parent's to show.
        let quiet = config.quiet || config.to_parent;
        let feed = config.to_parent.then(|| Mutex::new(Feed::default()));
        Ok(Live {
            quiet,
            endpoint: endpoint.map(Arc::new),
            stream: stream.map(|s| Arc::new(Mutex::new(s))),
            feed,
        })
    }

    /// Where one measurement of `connections_planned` connections is written second by
    /// second (the stream, the endpoint's page), `server_pids` sampled for the page. The
    /// page starts empty, before the measurement's first second.
    pub fn publisher(&self, connections_planned: u64, server_pids: Vec<u32>) -> Publisher {
        let publisher = Publisher {
            stream: self.stream.clone(),
            endpoint: self.endpoint.clone(),
            totals: Totals::new(connections_planned),
            server_pids,
            dashboard: dashboard::current(),
            unpaged: Vec::new(),
            stall_s: 0,
        };
        if let Some(endpoint) = &publisher.endpoint {
            endpoint.publish(publisher.totals.render());
        }
        publisher
    }

    /// Where the endpoint listens (its port when `--metrics-addr` gave port 0).
    pub fn metrics_addr(&self) -> Option<std::net::SocketAddr> {
        self.endpoint.as_ref().map(|endpoint| endpoint.addr())
    }

    /// A `--find-max-rate` step begins.
    pub fn step_started(&self, rate: f64) {
        if !self.quiet {
            eprintln!("wsbench: step at {rate:.0} messages/s");
        }
    }

    /// Follows one measurement of `load`, whose phases are `phases` and whose exchanges
    /// are called `exchange`; `server_pids` are sampled for RSS and CPU; every second goes
    /// to `hlog` too, when given.
    pub fn track(
        &self,
        load: &LoadSpec,
        phases: &PhasePlan,
        exchange: Exchange,
        server_pids: Vec<u32>,
        hlog: Option<HlogWriter>,
    ) -> Tracker<'_> {
        Tracker {
            live: self,
            view: (!self.quiet).then(|| View::start(exchange.many)),
            next: 0,
            window: (u64::MAX, u64::MAX),
            warmup_us: phases.warmup().as_micros() as u64,
            warmup_run: false,
            stages: load.stages.clone(),
            publisher: self.publisher(load.connections, server_pids),
            hlog,
        }
    }

    /// Follows an unmeasured run before the measured one (every second of it is warm-up).
    pub fn track_warmup(&self, load: &LoadSpec, exchange: Exchange) -> Tracker<'_> {
        Tracker {
            live: self,
            view: (!self.quiet).then(|| View::start(exchange.many)),
            next: 0,
            window: (u64::MAX, u64::MAX),
            warmup_us: 0,
            warmup_run: true,
            stages: None,
            publisher: self.publisher(load.connections, Vec::new()),
            hlog: None,
        }
    }
}

/// One measurement followed second by second.
#[derive(Debug)]
pub struct Tracker<'a> {
    live: &'a Live,
    view: Option<View>,
    /// The first second not yet shown.
    next: u64,
    /// The engine's measured window (µs since start), as last seen.
    window: (u64, u64),
    warmup_us: u64,
    /// The run is an unmeasured warm-up of its own: every second of it is warm-up.
    warmup_run: bool,
    /// `--stages`: each second is named by the stage it falls in.
    stages: Option<crate::config::StagePlan>,
    publisher: Publisher,
    /// `--hlog`, written a second at a time.
    hlog: Option<HlogWriter>,
}

impl Tracker<'_> {
    /// Called by the engine's coordinator a few times a second with the seconds every
    /// worker has finished since the last call.
    pub fn update(&mut self, control: &Control, seen: &LiveSeconds) {
        self.window = control.window();
        self.show(&seen.intervals, (&seen.counters, &seen.errors));
    }

    /// The run ended: its last seconds are shown and written, the stream flushed.
    pub fn finish(mut self, output: &EngineOutput) {
        let rest = &output.last_seconds.intervals;
        self.show(rest, (&output.metrics.counters, &output.metrics.errors()));
        if let Some(view) = self.view.take() {
            view.finish();
        }
        self.publisher.flush();
    }

    /// Writes, serves, then shows `intervals`: once a second's line is on stderr, the
    /// stream and the endpoint have it too.
    fn show(&mut self, intervals: &[Interval], counters: (&Counters, &BTreeMap<String, u64>)) {
        if intervals.is_empty() {
            return;
        }
        let mut seconds = Vec::with_capacity(intervals.len());
        for interval in intervals {
            // A second's phase is the one at its middle.
            let phase = match self.warmup_run {
                true => Phase::Warmup,
                false => Phase::at(interval.second * 1_000_000 + 500_000, self.window, self.warmup_us),
            };
            let mut second = Second::of(interval, phase, counters, self.window.1);
            second.stage =
                self.stages.as_ref().and_then(|plan| plan.stage_of(interval.second)).map(|i| i as u64 + 1);
            self.publisher.write(&mut second, &interval.latency);
            if let Some(feed) = &self.live.feed {
                feed.lock().unwrap_or_else(PoisonError::into_inner).write(&second, interval);
            }
            if let Some(hlog) = &mut self.hlog {
                hlog.write(interval);
            }
            self.next = interval.second + 1;
            seconds.push(second);
        }
        self.publisher.publish(self.next);
        if let Some(view) = &mut self.view {
            seconds.iter().for_each(|second| view.second(second));
        }
    }
}

/// Where a measurement's seconds go besides the view: one line each to the `--stream` file,
/// and into the totals that the `--metrics-addr` page shows. The engine's [`Tracker`] writes
/// its seconds here, and a `--processes` parent the seconds it summed over its shards.
#[derive(Debug)]
pub struct Publisher {
    stream: Option<Arc<Mutex<Stream>>>,
    endpoint: Option<Arc<MetricsEndpoint>>,
    totals: Totals,
    server_pids: Vec<u32>,
    /// The `--dashboard` page, and the seconds written since it was last sent some (with
    /// their p99.9).
    dashboard: Option<Arc<dashboard::Dashboard>>,
    unpaged: Vec<(Second, u64)>,
    /// Seconds the stall going on has lasted so far.
    stall_s: u64,
}

impl Publisher {
    /// Writes `second`, whose round trips took `latency`, to the stream, and adds it to the
    /// page's totals ([`Publisher::publish`] serves them); first says how long the stall
    /// going on has lasted, if the second stalled ([`Second::stall_s`]).
    pub fn write(&mut self, second: &mut Second, latency: &Histogram<u64>) {
        self.stall_s = if second.stalled() { self.stall_s + 1 } else { 0 };
        second.stall_s = self.stall_s;
        if let Some(stream) = &self.stream {
            stream.lock().unwrap_or_else(PoisonError::into_inner).write(second);
        }
        self.totals.add(latency, second);
        if self.dashboard.is_some() {
            let p999 = if latency.is_empty() { 0 } else { latency.value_at_quantile(0.999) };
            self.unpaged.push((second.clone(), p999));
        }
    }

    /// Serves the totals so far, with the server as sampled now (`seconds` into the run),
    /// and sends the seconds written since the last call to the page.
    pub fn publish(&mut self, seconds: u64) {
        if self.endpoint.is_none() && self.dashboard.is_none() {
            return;
        }
        self.totals.server = sample_server(&self.server_pids, seconds);
        if let Some(endpoint) = &self.endpoint {
            endpoint.publish(self.totals.render());
        }
        if let Some(page) = &self.dashboard {
            let own = crate::probe::sample(&[std::process::id()], seconds * 1000).ok();
            page.seconds(&std::mem::take(&mut self.unpaged), self.totals.server.as_ref(), own.as_ref());
        }
    }

    /// A new measurement: the page's totals count from nothing again.
    pub fn restart(&mut self) {
        self.totals = Totals::new(self.totals.connections_planned());
        self.stall_s = 0;
    }

    /// Puts what the stream buffered on disk.
    pub fn flush(&self) {
        if let Some(stream) = &self.stream {
            stream.lock().unwrap_or_else(PoisonError::into_inner).flush();
        }
    }
}

/// The server's RSS and CPU now, from the same `/proc` sampler the probe uses.
fn sample_server(pids: &[u32], second: u64) -> Option<ServerSample> {
    if pids.is_empty() {
        return None;
    }
    crate::probe::sample(pids, second * 1000).ok()
}
