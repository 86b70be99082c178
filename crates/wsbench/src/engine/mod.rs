//! The load engine: splits the connections over one worker thread per client CPU, runs the
//! phases its [`Plan`] gives (connect at the ramp's pace → warm-up → measured window →
//! drain and close), and merges the workers' metrics. Its coordinator (the calling thread)
//! takes each second once every worker has finished it, keeps it in the timeline and hands
//! it on to the caller's `progress`. What connections send and what their
//! messages mean is the scenario's [`Workload`]; the engine knows no scenario, no result
//! file and no report: it returns numbers.

pub mod batch;
pub mod capacity;
mod compression;
pub mod conn;
pub mod dial;
pub mod disruption;
pub mod handshake_failure;
mod io;
mod live_board;
pub mod pacer;
pub mod reconnects;
pub mod recorder;
mod rx_time;
pub mod stream;
pub mod timers;
pub mod tls;
mod worker;
pub mod workload;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::config::{StagePlan, Target};
use crate::metrics::{Metrics, StageTally, TimelineSecond, add_stage_second};
use crate::probe::{own_heap_bytes, own_rss_bytes};
use crate::samples::{ClientMemory, WorkerCpu};
use worker::{Worker, WorkerOutput, WorkerPlan};

pub use crate::config::LoadSpec;
pub use live_board::{LiveBoard, LiveSeconds};
pub use workload::{PhasePlan, Plan, Window, Workload};

/// What the workers share, read-only: the load, its target, the scenario's plan and the
/// client's TLS set-up, made once for every connection.
#[derive(Debug)]
pub struct Job {
    pub load: LoadSpec,
    pub target: Target,
    pub plan: Arc<dyn Plan>,
    /// For a `wss://` target: its configurations, with or without resumption.
    pub tls: Option<tls::ClientTls>,
    /// The process's budget for messages still arriving (`--max-message-memory`), shared
    /// by every worker's connections.
    pub message_memory: Arc<wsbench_proto::MessageMemory>,
    /// The run's disruptions (`--disrupt`), as the session makes them.
    pub disruptions: Arc<disruption::Disruptions>,
}

impl Job {
    /// Fails only when rustls refuses the TLS options (validation has checked them).
    pub fn new(load: LoadSpec, target: Target, plan: Arc<dyn Plan>) -> std::io::Result<Job> {
        let alpn = dial::by_name(load.transport.name).map_or(&[][..], |dial| dial.alpn());
        let tls = match target.tls {
            true => Some(
                tls::ClientTls::new(load.insecure, &load.tls, alpn, load.connections)
                    .map_err(std::io::Error::other)?,
            ),
            false => None,
        };
        let message_memory = wsbench_proto::MessageMemory::new(load.max_message_memory);
        let disruptions = Arc::new(disruption::Disruptions::new());
        Ok(Job { load, target, plan, tls, message_memory, disruptions })
    }
}

/// Checks once, before any load, that the target speaks the run's transport: `Err` is one
/// line naming the cause and what to do.
pub fn check(job: &Job) -> Result<(), dial::CheckError> {
    dial::of(job).check(job)
}

/// The run's phase, shared by the coordinator (writer) and the workers (readers).
#[derive(Debug)]
pub struct Control {
    pub start: Instant,
    measure_start_us: AtomicU64,
    end_us: AtomicU64,
    stop: AtomicBool,
    /// Connections may send. Without a ramp this waits until every connection is up, so a
    /// slow server is not drowned in echoes while it still accepts; with a ramp (and in
    /// c10k) clients send as soon as they open, as the seeds' clients did.
    traffic: AtomicBool,
    pub interrupted: AtomicBool,
    pub workers_connected: AtomicUsize,
    /// Connections open now, over every worker.
    pub open_connections: AtomicU64,
    /// Connections the load closed itself as part of its work (a churn cycle's close), over
    /// every worker: a run with none open is not cut short by the server when the load
    /// closed them.
    pub closed_by_load: AtomicU64,
    /// The seconds the workers have finished, published at each second boundary for the
    /// live view, the metrics endpoint and the stream.
    pub live: LiveBoard,
}

impl Control {
    /// Every worker has opened its connections and none is open now. Never with
    /// `--reconnect`: connections may come back (a restarting server).
    fn nothing_open(&self, reconnect: bool, worker_count: usize) -> bool {
        !reconnect
            && self.workers_connected.load(Ordering::SeqCst) == worker_count
            && self.open_connections.load(Ordering::Relaxed) == 0
    }

    /// Nothing is open and the server took every connection: the load closed none itself
    /// (churn's cycles are its work done, not the server's doing).
    fn server_took_every_connection(&self, reconnect: bool, worker_count: usize) -> bool {
        self.nothing_open(reconnect, worker_count) && self.closed_by_load.load(Ordering::Relaxed) == 0
    }

    /// Nothing is left to measure: nothing is open; with `--stages`, which may close every
    /// connection before their end (the server's memory after a ramp-down is what they
    /// watch), only when the server took every connection.
    fn nothing_left(&self, load: &LoadSpec, worker_count: usize) -> bool {
        match load.stages.is_some() {
            true => self.server_took_every_connection(load.reconnect.is_some(), worker_count),
            false => self.nothing_open(load.reconnect.is_some(), worker_count),
        }
    }

    /// [`Control::begin`] for `load`: with stages, traffic from the start and the measured
    /// window opening after the warm-up stages.
    fn begin_load(&self, phases: &PhasePlan, load: &LoadSpec) -> bool {
        let from_start = self.begin(phases, load.ramp_per_sec.is_some() || load.stages.is_some());
        if let Some(plan) = &load.stages {
            self.measure_start_us.store(plan.warmup_s() * 1_000_000, Ordering::SeqCst);
        }
        from_start
    }

    fn new() -> Control {
        Control {
            start: Instant::now(),
            measure_start_us: AtomicU64::new(u64::MAX),
            end_us: AtomicU64::new(u64::MAX),
            stop: AtomicBool::new(false),
            traffic: AtomicBool::new(false),
            interrupted: AtomicBool::new(false),
            workers_connected: AtomicUsize::new(0),
            open_connections: AtomicU64::new(0),
            closed_by_load: AtomicU64::new(0),
            live: LiveBoard::default(),
        }
    }

    /// The measured window in µs since start (both `u64::MAX` until the ramp is over).
    pub fn window(&self) -> (u64, u64) {
        (self.measure_start_us.load(Ordering::Relaxed), self.end_us.load(Ordering::Relaxed))
    }

    /// µs from the run's start to `at` (0 before it).
    #[inline]
    pub fn micros_since_start(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.start).as_micros() as u64
    }

    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    pub fn sending_allowed(&self, now_us: u64) -> bool {
        self.traffic.load(Ordering::Relaxed)
            && !self.stopping()
            && now_us < self.end_us.load(Ordering::Relaxed)
    }

    pub fn traffic(&self) -> bool {
        self.traffic.load(Ordering::Relaxed)
    }

    /// The run begins: a window from the start is set now, and traffic allowed at once when
    /// connections send as they open (or with a ramp, as the seeds' clients did). Returns
    /// whether the window runs from the start.
    fn begin(&self, phases: &PhasePlan, ramp: bool) -> bool {
        let from_start = match phases.window {
            Window::FromStart(end) => {
                // An open loop of new clients measures from the first one on.
                self.measure_start_us.store(0, Ordering::SeqCst);
                self.end_us.store(end.as_micros() as u64, Ordering::SeqCst);
                true
            }
            Window::AfterConnect { .. } => false,
        };
        if phases.traffic_from_start || ramp {
            self.traffic.store(true, Ordering::SeqCst);
        }
        from_start
    }

    /// The connect phase is over: the measured window (µs since start) is set and every
    /// connection may send.
    fn load_phase(&self, phases: &PhasePlan) -> (u64, u64) {
        let now_us = self.start.elapsed().as_micros() as u64;
        let (start, end) = match phases.window {
            Window::FromStart(_) => self.window(),
            Window::AfterConnect { warmup, measured } => {
                let start = now_us + warmup.as_micros() as u64;
                (start, start + measured.as_micros() as u64)
            }
        };
        self.measure_start_us.store(start, Ordering::SeqCst);
        self.end_us.store(end, Ordering::SeqCst);
        self.traffic.store(true, Ordering::SeqCst);
        (start, end)
    }
}

/// Where a run is: opening connections, warming up, measured, or draining at the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Ramp,
    Warmup,
    Measured,
    Drain,
}

impl Phase {
    /// The phase at `at_us` µs since start, given the measured `window` (as
    /// [`Control::window`] says) and the warm-up before it (µs).
    pub fn at(at_us: u64, window: (u64, u64), warmup_us: u64) -> Phase {
        let (measure_start, end) = window;
        if measure_start == u64::MAX || at_us < measure_start.saturating_sub(warmup_us) {
            Phase::Ramp
        } else if at_us < measure_start {
            Phase::Warmup
        } else if at_us <= end {
            Phase::Measured
        } else {
            Phase::Drain
        }
    }

    pub const ALL: [Phase; 4] = [Phase::Ramp, Phase::Warmup, Phase::Measured, Phase::Drain];

    pub fn name(self) -> &'static str {
        match self {
            Phase::Ramp => "ramp",
            Phase::Warmup => "warm-up",
            Phase::Measured => "measured",
            Phase::Drain => "drain",
        }
    }
}

/// What the engine measured.
#[derive(Debug)]
pub struct EngineOutput {
    /// The workers' metrics merged, with the run's timeline.
    pub metrics: Metrics,
    /// The seconds the workers finished last, not yet handed to `progress`, whole (the
    /// timeline has them too), with the final counters.
    pub last_seconds: LiveSeconds,
    /// Exchanges completed inside the measured window.
    pub measured_exchanges: u64,
    pub measured_secs: f64,
    pub elapsed_secs: f64,
    /// From the first connection attempt until every connection was established or failed.
    pub connect_phase_secs: f64,
    pub workers: Vec<WorkerCpu>,
    /// This process's resident memory and heap in use before the workers started and once
    /// every connection was open (or had failed).
    pub client_memory: ClientMemory,
    pub interrupted: bool,
    /// The run stopped before its measured window ended because no connection was left
    /// (the server closed, reset or refused them all, or wsbench failed them for what the
    /// server sent; the counters say which): the window it was to have, s.
    pub ended_early: Option<f64>,
    /// How long the end of the run waited for replies still in flight (the longest any
    /// worker waited), s.
    pub drain_secs: f64,
}

/// Runs the scenario. `cpus` gives one entry per worker (its CPU, or None to leave it
/// unpinned); `interrupt` ends the run early (Ctrl-C); `progress` is called a few times a
/// second from this thread, with the seconds every worker has finished since its last call.
pub fn run(
    job: Job,
    cpus: &[Option<usize>],
    interrupt: &AtomicBool,
    progress: &mut dyn FnMut(&Control, &LiveSeconds),
) -> std::io::Result<EngineOutput> {
    let job = Arc::new(job);
    if let Some(start_at) = job.load.start_at_unix_ms {
        wait_for_unix_ms(start_at, interrupt);
    }
    let control = Arc::new(Control::new());
    let (rss_baseline_bytes, heap_baseline_bytes) = (own_rss_bytes(), own_heap_bytes());
    let handles = spawn_workers(&job, &control, cpus)?;
    let worker_count = handles.len();
    let tick = Duration::from_millis(100);
    let mut timeline = Kept { seconds: Vec::new(), stages: stage_tallies(job.load.stages.as_ref()) };
    let take_seconds = |timeline: &mut Kept| timeline.take(&control.live);
    let mut wait_until = |deadline: Option<Instant>,
                          done: &dyn Fn() -> bool,
                          progress: &mut dyn FnMut(&Control, &LiveSeconds)| loop {
        if interrupt.load(Ordering::Relaxed) {
            control.interrupted.store(true, Ordering::SeqCst);
            return;
        }
        if done() || deadline.is_some_and(|d| Instant::now() >= d) {
            return;
        }
        progress(&control, &take_seconds(&mut timeline));
        let sleep = deadline.map_or(tick, |d| d.saturating_duration_since(Instant::now()).min(tick));
        std::thread::sleep(sleep);
    };
    let phases = staged_phases(job.plan.phases(), job.load.stages.as_ref());
    let from_start = control.begin_load(&phases, &job.load);
    let all_connected = || control.workers_connected.load(Ordering::SeqCst) == worker_count;
    let connect_deadline = from_start.then(|| control.start + job.load.duration);
    wait_until(connect_deadline, &all_connected, progress);
    let connect_phase_secs = control.start.elapsed().as_secs_f64();
    let (rss_connected_bytes, heap_connected_bytes) = (own_rss_bytes(), own_heap_bytes());
    // Load phase.
    let (measure_start_us, end_us) = control.load_phase(&phases);
    job.disruptions.load_began(control.start, if from_start { control.start } else { Instant::now() });
    let mut ended_early = None;
    if !control.interrupted.load(Ordering::Relaxed) {
        // With every connection gone (refused, failed, or the server died) there is nothing left
        // to measure: the run ends now instead of idling to the end of its window, and
        // says so.
        let end = control.start + Duration::from_micros(end_us);
        let nothing_open = || control.nothing_left(&job.load, worker_count);
        wait_until(Some(end), &nothing_open, progress);
        let lost_all = control.server_took_every_connection(job.load.reconnect.is_some(), worker_count);
        if !control.interrupted.load(Ordering::Relaxed) && Instant::now() < end && lost_all {
            ended_early = Some(end_us.saturating_sub(measure_start_us) as f64 / 1e6);
        }
    }
    let stopped_us = control.start.elapsed().as_micros() as u64;
    control.stop.store(true, Ordering::SeqCst);
    let (mut metrics, measured_exchanges, workers, drain_secs) =
        join_workers(handles, control.start.elapsed().as_secs_f64())?;
    // Every worker has ended: its last seconds are on the board.
    let last_seconds = take_seconds(&mut timeline);
    (metrics.timeline, metrics.stages) = (timeline.seconds, timeline.stages);
    Ok(EngineOutput {
        metrics,
        last_seconds,
        measured_exchanges,
        measured_secs: stopped_us.min(end_us).saturating_sub(measure_start_us) as f64 / 1e6,
        elapsed_secs: control.start.elapsed().as_secs_f64(),
        connect_phase_secs,
        workers,
        client_memory: ClientMemory {
            rss_baseline_bytes,
            rss_connected_bytes,
            heap_baseline_bytes,
            heap_connected_bytes,
        },
        interrupted: control.interrupted.load(Ordering::Relaxed),
        ended_early,
        drain_secs,
    })
}

/// What the coordinator keeps of the seconds every worker has finished: the timeline, and
/// each stage's share.
struct Kept {
    seconds: Vec<TimelineSecond>,
    stages: Vec<StageTally>,
}

impl Kept {
    /// Takes the seconds finished since the last call from `board` and keeps them.
    fn take(&mut self, board: &LiveBoard) -> LiveSeconds {
        let seen = board.take_complete();
        self.seconds.extend(seen.intervals.iter().map(TimelineSecond::of));
        for second in &seen.intervals {
            add_stage_second(&mut self.stages, second, &seen.errors);
        }
        seen
    }
}

/// The stages of `plan`, nothing measured yet.
fn stage_tallies(plan: Option<&StagePlan>) -> Vec<StageTally> {
    let Some(plan) = plan else { return Vec::new() };
    (0..plan.stages.len())
        .map(|i| {
            StageTally::new(plan.label(i), plan.start_s(i), plan.start_s(i + 1), plan.stages[i].measured)
        })
        .collect()
}

/// With `--stages`, the run's window is the plan's, timed from the run's start: traffic
/// from the first connection on, measured from the end of the warm-up stages (set by the
/// caller) to the end of the last stage.
fn staged_phases(phases: PhasePlan, stages: Option<&StagePlan>) -> PhasePlan {
    match stages {
        Some(plan) => PhasePlan {
            window: Window::FromStart(Duration::from_secs(plan.total_s())),
            traffic_from_start: true,
            ..phases
        },
        None => phases,
    }
}

/// Splits this process's connections over one worker per entry of `cpus` (at most one
/// per connection) and starts them; each opens connections as its pacer says.
fn spawn_workers(
    job: &Arc<Job>,
    control: &Arc<Control>,
    cpus: &[Option<usize>],
) -> std::io::Result<Vec<JoinHandle<WorkerOutput>>> {
    let my_connections = job.load.shard.map_or(job.load.connections, |s| s.share_of(job.load.connections));
    let worker_count = cpus.len().max(1).min(my_connections as usize);
    control.live.expect_workers(worker_count);
    let mut plans: Vec<WorkerPlan> = (0..worker_count)
        .map(|id| WorkerPlan { id, cpu: cpus.get(id).copied().flatten(), connections: Vec::new() })
        .collect();
    let mine = (0..job.load.connections).filter(|&i| job.load.shard.is_none_or(|shard| shard.owns(i)));
    // Connections that share a TCP connection (`--streams-per-connection`) go to one worker
    // in whole groups, so N of them ride on N / S connections.
    let group = job.load.transport.streams_per_connection.max(1) as usize;
    for (n, index) in mine.enumerate() {
        plans[(n / group) % worker_count].connections.push(index);
    }
    let mut handles = Vec::with_capacity(worker_count);
    for plan in plans {
        let worker = Worker::new(job.clone(), control.clone(), plan.clone())?;
        handles.push(std::thread::Builder::new().name(format!("wsbench-w{}", plan.id)).spawn(move || {
            if let Some(cpu) = plan.cpu {
                let _ = crate::affinity::pin_current_thread(cpu);
            }
            worker.run()
        })?);
    }
    Ok(handles)
}

/// Waits for the stopped workers and merges what they measured; `elapsed_secs` is the run
/// so far, against which each worker's CPU share is computed.
fn join_workers(
    handles: Vec<JoinHandle<WorkerOutput>>,
    elapsed_secs: f64,
) -> std::io::Result<(Metrics, u64, Vec<WorkerCpu>, f64)> {
    let mut metrics = Metrics::default();
    let mut measured_exchanges = 0;
    let mut drain_secs: f64 = 0.0;
    let mut workers = Vec::with_capacity(handles.len());
    for (id, handle) in handles.into_iter().enumerate() {
        let output = handle.join().map_err(|_| std::io::Error::other(format!("worker {id} panicked")))?;
        metrics.merge(&output.metrics);
        measured_exchanges += output.measured_exchanges;
        drain_secs = drain_secs.max(output.drain_secs);
        workers.push(WorkerCpu {
            name: format!("wsbench-w{id}"),
            cpu_seconds: output.cpu.total(),
            share: output.cpu.total() / elapsed_secs.max(1e-9),
            user_seconds: output.cpu.user_seconds,
            system_seconds: output.cpu.system_seconds,
            io: output.io.to_owned(),
        });
    }
    if let Some(section) = metrics.section.as_mut() {
        section.complete();
    }
    Ok((metrics, measured_exchanges, workers, drain_secs))
}

/// Sleeps until the wall clock reaches `unix_ms` (shards of one run start together);
/// returns at once if that instant has passed or the run is interrupted.
fn wait_for_unix_ms(unix_ms: u64, interrupt: &AtomicBool) {
    loop {
        let now_ms = crate::machine::unix_ms();
        if now_ms >= unix_ms || interrupt.load(Ordering::Relaxed) {
            return;
        }
        std::thread::sleep(Duration::from_millis((unix_ms - now_ms).min(50)));
    }
}

#[cfg(test)]
mod tests;
