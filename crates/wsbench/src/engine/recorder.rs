//! Where one worker's measurements go: its [`Metrics`] (no locks: one per worker), the run's
//! measured window to judge each exchange by, and the second being recorded, published to
//! the live board as soon as a later one begins. Workloads record through it (an exchange
//! with its latency, a message sent, how late a send went out), so every scenario records
//! the same way. A worker holds one second's histogram, never one per second of the run.

use std::sync::Arc;
use std::time::{Duration, Instant};

use std::collections::BTreeMap;

use super::Control;
use super::conn::Tally;
use crate::metrics::{Interval, Metrics, Section, record_us};

/// How an exchange counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counted {
    /// In the measured window: into the run's latency and rate.
    Measured,
    /// Before the measured window: counted as a warm-up message only.
    Warmup,
    /// Neither (after the window): only the second's timeline.
    Neither,
}

#[derive(Debug)]
pub struct Recorder {
    control: Arc<Control>,
    /// This worker's index.
    worker: usize,
    /// The second being recorded; every earlier one is published.
    current: Interval,
    /// Connections open at the last loop turn: what the seconds without one (a stalled
    /// worker, a stopped process) had too.
    last_open: u64,
    /// Whether the workload awaited replies at the last loop turn: what the seconds without
    /// one began with too.
    last_awaiting: bool,
    /// The second in which the counters were last published.
    counters_published: u64,
    /// Open loop: sends have due times, and the uncorrected latency is its own figure.
    open_loop: bool,
    pub metrics: Metrics,
    /// Exchanges counted [`Counted::Measured`].
    pub measured: u64,
}

impl Recorder {
    pub fn new(control: Arc<Control>, worker: usize, open_loop: bool) -> Recorder {
        Recorder {
            control,
            worker,
            current: Interval::new(0),
            last_open: 0,
            last_awaiting: false,
            counters_published: 0,
            open_loop,
            metrics: Metrics::default(),
            measured: 0,
        }
    }

    /// µs from the run's start to `at`.
    #[inline]
    pub fn micros(&self, at: Instant) -> u64 {
        self.control.micros_since_start(at)
    }

    /// Whether `at` falls inside the measured window.
    #[inline]
    pub fn in_window(&self, at: Instant) -> bool {
        let (start, end) = self.control.window();
        let at_us = self.micros(at);
        at_us >= start && at_us <= end
    }

    /// How many of the `count` instants `first`, `first + every`, … fall inside the measured
    /// window (none while it is not yet known).
    pub fn in_window_count(&self, first: Instant, every: Duration, count: u64) -> u64 {
        let (start, end) = self.control.window();
        let (first_us, step) = (self.micros(first), (every.as_micros() as u64).max(1));
        if start == u64::MAX || count == 0 || first_us > end {
            return 0;
        }
        let from = start.saturating_sub(first_us).div_ceil(step);
        let to = ((end - first_us) / step + 1).min(count);
        to.saturating_sub(from)
    }

    /// How an exchange completed at `now` counts: by the window it falls in.
    #[inline]
    pub fn counted_at(&self, now: Instant) -> Counted {
        let (start, end) = self.control.window();
        let now_us = self.micros(now);
        if now_us >= start && now_us <= end {
            Counted::Measured
        } else if now_us < start {
            Counted::Warmup
        } else {
            Counted::Neither
        }
    }

    /// Whether connections may send at `at` (traffic started, the window not over).
    #[inline]
    pub fn sending_allowed(&self, at: Instant) -> bool {
        self.control.sending_allowed(self.micros(at))
    }

    pub fn open_loop(&self) -> bool {
        self.open_loop
    }

    /// One exchange completed at `now`: in the second's timeline, and by `counted` in the
    /// run's latency (from the intended send, and `uncorrected` from the actual one when
    /// that differs) and rate.
    #[inline]
    pub fn exchange(&mut self, now: Instant, latency_us: u64, uncorrected_us: Option<u64>, counted: Counted) {
        let second = self.micros(now) / 1_000_000;
        if second > self.current.second {
            self.advance(second, self.last_awaiting);
        }
        self.current.exchanges += 1;
        record_us(&mut self.current.latency, latency_us);
        match counted {
            Counted::Measured => {
                record_us(&mut self.metrics.latency, latency_us);
                if let Some(uncorrected) = uncorrected_us {
                    record_us(&mut self.metrics.latency_uncorrected, uncorrected);
                }
                self.measured += 1;
            }
            Counted::Warmup => self.metrics.counters.warmup_messages += 1,
            Counted::Neither => self.metrics.counters.answered_after_window += 1,
        }
    }

    /// An attempt to reopen a lost connection starts at `now` (the second's count of them).
    pub fn reconnect_attempt(&mut self, now: Instant) {
        let second = self.micros(now) / 1_000_000;
        if second > self.current.second {
            self.advance(second, self.last_awaiting);
        }
        self.current.reconnects += 1;
        self.metrics.counters.reconnections += 1;
    }

    /// Messages the socket took: how many, their bytes on the wire and of payload (the
    /// worker counts them from the connection's ledger as writes finish, never as messages
    /// are queued).
    #[inline]
    pub fn sent(&mut self, written: Tally) {
        let counters = &mut self.metrics.counters;
        counters.messages_sent += written.messages;
        counters.bytes_sent += written.wire_bytes;
        counters.payload_bytes_sent += written.payload_bytes;
    }

    /// An open-loop send due at `due` went out at `now`: its lag, when due in the window.
    #[inline]
    pub fn send_lag(&mut self, due: Instant, now: Instant) {
        if self.in_window(due) {
            record_us(&mut self.metrics.send_lag, now.duration_since(due).as_micros() as u64);
        }
    }

    /// Once per loop, before the turn's events: notes the connections open in this second
    /// and whether the workload awaits replies (`awaiting`: as the last turn left it, which
    /// is how a new second begins); when a new second begins, publishes the finished one,
    /// and once a second the counters (off the per-message path). `scenario_errors` gives the
    /// scenario's own errors, asked for once a second. Returns whether this was the first
    /// turn of a new second.
    pub fn tick(
        &mut self,
        now: Instant,
        open: u64,
        awaiting: bool,
        scenario_errors: impl FnOnce() -> BTreeMap<String, u64>,
    ) -> bool {
        let second = self.micros(now) / 1_000_000;
        if second > self.current.second {
            self.advance(second, awaiting);
        }
        self.last_awaiting = awaiting;
        self.last_open = open;
        self.current.connections_open = self.current.connections_open.max(open);
        if second > self.counters_published {
            self.control.live.publish_counters(self.worker, &self.metrics.counters, &scenario_errors());
            self.counters_published = second;
            return true;
        }
        false
    }

    /// Second `second` has begun, `awaiting` replies or not: the one being recorded is
    /// published (with the seconds between, which saw no loop turn and began as the last
    /// turn left them), and its histogram reused for the new one.
    #[cold]
    fn advance(&mut self, second: u64, awaiting: bool) {
        let carried = super::live_board::Carried { open: self.last_open, awaiting };
        self.control.live.publish_second(self.worker, &self.current, second, carried);
        self.current.second = second;
        self.current.exchanges = 0;
        self.current.reconnects = 0;
        self.current.connections_open = self.last_open;
        self.current.awaiting = awaiting;
        self.current.latency.reset();
    }

    /// The worker's figures at its end, with the scenario's section (and its errors); its
    /// last seconds go to the live board too.
    pub fn finish(
        mut self,
        section: Option<Box<dyn Section>>,
        errors: &BTreeMap<String, u64>,
    ) -> (Metrics, u64) {
        self.metrics.section = section;
        let next = self.current.second + 1;
        let carried = super::live_board::Carried { open: self.last_open, awaiting: self.last_awaiting };
        self.control.live.publish_second(self.worker, &self.current, next, carried);
        self.control.live.publish_counters(self.worker, &self.metrics.counters, errors);
        self.control.live.worker_done(self.worker);
        if !self.open_loop {
            // A closed loop sends when it means to: the two figures are one.
            self.metrics.latency_uncorrected = self.metrics.latency.clone();
        }
        (self.metrics, self.measured)
    }
}
