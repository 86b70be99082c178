//! A worker's schedule, kept apart from its sockets: when each of its connections is due to
//! open (the ramp), when a lost one is reopened, when a connect attempt times out, and when
//! each open-loop connection's next batch is due. Time is always passed in, never read
//! here, so the schedules are tested deterministically (as vegeta's pacer is).
//!
//! Due times come from the run's start and the global connection number, never from when
//! the worker happened to wake up: shards and workers interleave exactly into the whole
//! run, and a late wake-up does not shift the open loop's schedule (coordinated omission).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::time::{Duration, Instant};

use super::reconnects::Reconnects;
use crate::config::{StageKind, StagePlan};

/// Longest a worker sleeps without checking the run's phase.
pub const TICK: Duration = Duration::from_millis(20);

/// One open-loop batch: when it is due, and which connection sends it (slab key, and the
/// connection's start as its identity, since keys are reused).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ScheduledSend {
    pub due: Instant,
    pub key: usize,
    pub started: Instant,
}

#[derive(Debug)]
pub struct Pacer {
    start: Instant,
    /// New connections per second; `None`: all at the start.
    ramp_per_sec: Option<f64>,
    /// Open loop: time between two batches of one connection.
    message_interval: Option<Duration>,
    connect_timeout: Duration,
    /// Connections of the whole run: the open-loop phases spread over all of them.
    run_connections: u64,
    /// This worker's connections (global numbers), in the order they open.
    connections: Vec<u64>,
    next_connection: usize,
    /// Connections to reopen (`--reconnect`), and when.
    pub reconnects: Reconnects,
    /// Connect attempts in progress: deadline, slab key, start (the attempt's identity).
    connect_deadlines: VecDeque<(Instant, usize, Instant)>,
    sends: BinaryHeap<Reverse<ScheduledSend>>,
    /// Open loop: how early a send may go out ([`Pacer::with_send_window`]).
    send_window: Duration,
    /// `--stages` ([`Pacer::with_stages`]): connection stages say when each connection
    /// opens and closes, rate stages when each send is due.
    stages: Option<StagePlan>,
    /// Connection stages: this worker's connections closed so far, from the last.
    closed: usize,
    /// Rate stages: the senders the run's sends are dealt to in turn.
    senders: u64,
}

impl Pacer {
    pub fn new(
        start: Instant,
        ramp_per_sec: Option<f64>,
        message_interval: Option<Duration>,
        connect_timeout: Duration,
        run_connections: u64,
        connections: Vec<u64>,
    ) -> Pacer {
        Pacer {
            start,
            ramp_per_sec,
            message_interval,
            connect_timeout,
            run_connections,
            connections,
            next_connection: 0,
            reconnects: Reconnects::default(),
            connect_deadlines: VecDeque::new(),
            sends: BinaryHeap::new(),
            send_window: Duration::ZERO,
            stages: None,
            closed: 0,
            senders: 1,
        }
    }

    /// Lost connections are reopened by `policy` (none: they stay lost).
    pub fn with_reconnects(mut self, policy: Option<crate::config::ReconnectPolicy>) -> Pacer {
        self.reconnects = Reconnects::new(policy);
        self
    }

    /// The run follows `plan`: connection stages open and close connections, rate stages
    /// pace the open loop's sends (instead of the ramp and the interval).
    pub fn with_stages(mut self, plan: Option<StagePlan>) -> Pacer {
        self.stages = plan;
        self
    }

    /// The stage plan, when its targets are `kind`.
    fn staged(&self, kind: StageKind) -> Option<&StagePlan> {
        self.stages.as_ref().filter(|plan| plan.kind == kind)
    }

    fn at_s(&self, s: f64) -> Instant {
        self.start + Duration::from_secs_f64(s.max(0.0))
    }

    /// Sends may go out up to `window` before they are due: the worker wakes for a send half
    /// the window ahead ([`Pacer::next_due`]; half a window of lateness is then still on
    /// time), and takes every send due within the window then ([`Pacer::pop_due_send`] with
    /// a horizon `window` past now: those due up to half a window after the first).
    pub fn with_send_window(mut self, window: Duration) -> Pacer {
        self.send_window = window;
        self
    }

    /// When connection `index` (global number) is due to open.
    pub fn connection_due(&self, index: u64) -> Instant {
        if let Some(plan) = self.staged(StageKind::Connections) {
            return self.at_s(plan.open_s(index).unwrap_or(0.0));
        }
        match self.ramp_per_sec {
            Some(rate) => self.start + Duration::from_secs_f64(index as f64 / rate),
            None => self.start,
        }
    }

    /// When this worker's next connection is due; `None` once all have been started.
    pub fn next_connection_due(&self) -> Option<Instant> {
        self.connections.get(self.next_connection).map(|&index| self.connection_due(index))
    }

    /// The next connection to open, if it is due by `now`.
    pub fn pop_due_connection(&mut self, now: Instant) -> Option<u64> {
        let index = *self.connections.get(self.next_connection)?;
        if self.connection_due(index) > now {
            return None;
        }
        self.next_connection += 1;
        Some(index)
    }

    pub fn all_connections_started(&self) -> bool {
        self.next_connection == self.connections.len()
    }

    /// Connection stages: when this worker's next connection to close (the highest-numbered
    /// still open) is due to close.
    pub fn next_close_due(&self) -> Option<Instant> {
        let plan = self.staged(StageKind::Connections)?;
        let index = *self.connections.iter().rev().nth(self.closed)?;
        plan.close_s(index).map(|s| self.at_s(s))
    }

    /// Connection stages: the next connection to close, if it is due by `now`.
    pub fn pop_due_close(&mut self, now: Instant) -> Option<u64> {
        let due = self.next_close_due()?;
        if due > now {
            return None;
        }
        self.closed += 1;
        self.connections.iter().rev().nth(self.closed - 1).copied()
    }

    /// A connect attempt began at `started`: it times out after the connect timeout.
    pub fn watch_connect(&mut self, key: usize, started: Instant) {
        self.connect_deadlines.push_back((started + self.connect_timeout, key, started));
    }

    /// A connect attempt whose deadline has passed by `now` (key, start), whether or not it
    /// has completed since: the caller checks.
    pub fn pop_expired_connect(&mut self, now: Instant) -> Option<(usize, Instant)> {
        match self.connect_deadlines.front() {
            Some(&(deadline, key, started)) if deadline <= now => {
                self.connect_deadlines.pop_front();
                Some((key, started))
            }
            _ => None,
        }
    }

    /// Open loop: starts connection `index`'s schedule at `now`, offset by its share of the
    /// interval so that the run's connections send evenly spread.
    pub fn start_sends(&mut self, key: usize, index: u64, started: Instant, now: Instant) {
        self.start_sends_among(key, index % self.run_connections, self.run_connections, started, now);
    }

    /// Open loop: starts a schedule offset by `position / of` of the interval, so that `of`
    /// senders (pubsub's publishers) send evenly spread.
    pub fn start_sends_among(&mut self, key: usize, position: u64, of: u64, started: Instant, now: Instant) {
        let Some(interval) = self.message_interval else { return };
        if let Some(plan) = self.staged(StageKind::Rate) {
            // The run's sends are dealt to the senders in turn: this one sends the
            // `position`-th of every `of`, from the first not yet due.
            let of = of.max(1) as f64;
            let first = ((plan.sends_by(self.s_of(now)) - position as f64) / of).ceil().max(0.0);
            let Some(due) = plan.send_due_s(first * of + position as f64) else { return };
            self.senders = of as u64;
            let due = self.at_s(due);
            self.sends.push(Reverse(ScheduledSend { due, key, started }));
            return;
        }
        let phase = interval.mul_f64(position as f64 / of.max(1) as f64);
        self.sends.push(Reverse(ScheduledSend { due: now + phase, key, started }));
    }

    /// The earliest scheduled batch, if it is due by `now`.
    #[inline]
    pub fn pop_due_send(&mut self, now: Instant) -> Option<ScheduledSend> {
        match self.sends.peek() {
            Some(&Reverse(send)) if send.due <= now => {
                self.sends.pop();
                Some(send)
            }
            _ => None,
        }
    }

    /// Schedules the connection's batch after `send`: one interval after it was due, however
    /// late it went out.
    #[inline]
    pub fn schedule_next(&mut self, send: ScheduledSend) {
        if let Some(plan) = self.staged(StageKind::Rate) {
            // The send's number in the run, then the sender's next one.
            let number = plan.sends_by(self.s_of(send.due)).round() + self.senders as f64;
            if let Some(due) = plan.send_due_s(number) {
                let due = self.at_s(due);
                self.sends.push(Reverse(ScheduledSend { due, ..send }));
            }
            return;
        }
        if let Some(interval) = self.message_interval {
            self.sends.push(Reverse(ScheduledSend { due: send.due + interval, ..send }));
        }
    }

    fn s_of(&self, at: Instant) -> f64 {
        at.saturating_duration_since(self.start).as_secs_f64()
    }

    /// How long the worker may sleep after `now`: until the first thing due, at most
    /// [`TICK`]. `connect_allowed`: a new connection may be opened when due.
    pub fn next_wakeup(&self, now: Instant, connect_allowed: bool) -> Duration {
        self.next_due(connect_allowed).map_or(TICK, |due| TICK.min(due.saturating_duration_since(now)))
    }

    /// The first instant something is due: a connection to open (if `connect_allowed`), a
    /// connect deadline, a reconnection or an open-loop send (the send window before it).
    pub fn next_due(&self, connect_allowed: bool) -> Option<Instant> {
        let connect = self.next_connection_due().filter(|_| connect_allowed);
        let due = [
            connect,
            self.next_close_due(),
            self.connect_deadlines.front().map(|&(deadline, _, _)| deadline),
            self.reconnects.next_due(),
            self.sends.peek().map(|Reverse(send)| {
                send.due.checked_sub(self.send_window / 2).map_or(self.start, |early| early.max(self.start))
            }),
        ];
        due.into_iter().flatten().min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn pacer(ramp: Option<f64>, interval: Option<Duration>, run: u64, mine: Vec<u64>) -> (Pacer, Instant) {
        // Any instant will do; one well past the clock's origin lets tests step back from it.
        let start = Instant::now() + Duration::from_secs(10);
        (Pacer::new(start, ramp, interval, Duration::from_secs(2), run, mine), start)
    }

    /// Opens every connection, waking at each due time; returns (connection, due).
    fn open_all(pacer: &mut Pacer) -> Vec<(u64, Instant)> {
        let mut opened = Vec::new();
        while let Some(due) = pacer.next_connection_due() {
            assert_eq!(pacer.pop_due_connection(due - Duration::from_nanos(1)), None, "opened early");
            opened.push((pacer.pop_due_connection(due).expect("due"), due));
        }
        opened
    }

    #[test]
    fn a_ramp_opens_connection_k_at_k_over_the_rate() {
        let (mut pacer, start) = pacer(Some(75.0), None, 300, (0..300).collect());
        for (k, due) in open_all(&mut pacer) {
            assert_eq!(due, start + Duration::from_secs_f64(k as f64 / 75.0));
        }
        assert!(pacer.all_connections_started());
        let one_second = pacer.connection_due(75);
        assert_eq!(one_second, start + Duration::from_secs(1));
    }

    #[test]
    fn without_a_ramp_every_connection_is_due_at_the_start() {
        let (mut pacer, start) = pacer(None, None, 3, vec![0, 1, 2]);
        assert_eq!(pacer.pop_due_connection(start), Some(0));
        assert_eq!(pacer.pop_due_connection(start), Some(1));
        assert_eq!(pacer.pop_due_connection(start), Some(2));
        assert_eq!(pacer.pop_due_connection(start), None);
        assert!(pacer.all_connections_started());
    }

    #[test]
    fn shards_interleave_into_the_whole_ramp() {
        let start = Instant::now();
        let timeout = Duration::from_secs(2);
        let whole = open_all(&mut Pacer::new(start, Some(75.0), None, timeout, 10, (0..10).collect()));
        let mut parts: Vec<(u64, Instant)> = (0..3)
            .flat_map(|shard| {
                let mine = (0..10).filter(|i| i % 3 == shard).collect();
                open_all(&mut Pacer::new(start, Some(75.0), None, timeout, 10, mine))
            })
            .collect();
        parts.sort();
        assert_eq!(parts, whole);
    }

    #[test]
    fn an_open_loop_stays_on_schedule_after_late_wakeups() {
        let (mut pacer, start) = pacer(None, Some(10 * MS), 4, (0..4).collect());
        // Connection 2 of 4 is phased half an interval in.
        pacer.start_sends(7, 2, start, start);
        assert_eq!(pacer.pop_due_send(start + 4 * MS), None);
        // The worker wakes 25 ms late: every batch due by then comes out, at its own time.
        let late = start + 30 * MS;
        let mut dues = Vec::new();
        while let Some(send) = pacer.pop_due_send(late) {
            assert_eq!((send.key, send.started), (7, start));
            dues.push(send.due);
            pacer.schedule_next(send);
        }
        assert_eq!(dues, [start + 5 * MS, start + 15 * MS, start + 25 * MS]);
        assert_eq!(pacer.next_wakeup(late, false), 5 * MS);
    }

    #[test]
    fn a_send_window_wakes_the_worker_that_much_ahead_and_keeps_the_schedule() {
        let (pacer, start) = pacer(None, Some(10 * MS), 4, (0..4).collect());
        let mut pacer = pacer.with_send_window(2 * MS);
        pacer.start_sends(7, 2, start, start);
        // Due at 5 ms: the worker wakes at 4 ms, and takes the send with a 2 ms horizon.
        assert_eq!(pacer.next_wakeup(start, false), 4 * MS);
        assert_eq!(pacer.pop_due_send(start + 3 * MS - Duration::from_nanos(1) + 2 * MS), None);
        let send = pacer.pop_due_send(start + 4 * MS + 2 * MS).expect("due within the window");
        assert_eq!(send.due, start + 5 * MS);
        // The next one keeps its own time: one interval after the due time, not the send.
        pacer.schedule_next(send);
        assert_eq!(pacer.next_wakeup(start + 4 * MS, false), 10 * MS);
    }

    #[test]
    fn the_next_wakeup_is_the_earliest_due_time() {
        let (mut pacer, start) = pacer(Some(100.0), Some(8 * MS), 10, vec![5, 6]);
        // Nothing due soon: sleep one tick at most.
        assert_eq!(pacer.next_wakeup(start, false), TICK);
        // Connection 5 is due at 50 ms, when connecting is allowed.
        assert_eq!(pacer.next_wakeup(start + 45 * MS, true), 5 * MS);
        assert_eq!(pacer.next_wakeup(start + 45 * MS, false), TICK);
        pacer.start_sends(1, 5, start, start + 40 * MS);
        assert_eq!(pacer.next_wakeup(start + 40 * MS, true), 4 * MS);
        pacer.reconnects = Reconnects::new(Some(crate::config::ReconnectPolicy::parse("fixed:1s").unwrap()));
        pacer.reconnects.lost(9, start);
        assert_eq!(pacer.next_wakeup(start + 40 * MS, true), 4 * MS);
        pacer.watch_connect(3, start + 40 * MS - Duration::from_secs(2) + 2 * MS);
        assert_eq!(pacer.next_wakeup(start + 40 * MS, true), 2 * MS);
        // Overdue: wake at once.
        assert_eq!(pacer.next_wakeup(start + 200 * MS, true), Duration::ZERO);
    }

    #[test]
    fn reconnects_and_connect_timeouts_fall_due_in_order() {
        let (mut pacer, start) = pacer(None, None, 2, vec![0, 1]);
        pacer.reconnects =
            Reconnects::new(Some(crate::config::ReconnectPolicy::parse("fixed:100ms").unwrap()));
        pacer.reconnects.lost(1, start);
        pacer.reconnects.lost(0, start + MS);
        assert_eq!(pacer.reconnects.pop_due(start + 99 * MS), None);
        let late = start + 101 * MS;
        let mut due = [pacer.reconnects.pop_due(late), pacer.reconnects.pop_due(late)];
        due.sort();
        assert_eq!(due, [Some(0), Some(1)]);
        assert_eq!(pacer.reconnects.pop_due(late), None);
        pacer.watch_connect(4, start);
        assert_eq!(pacer.pop_expired_connect(start + Duration::from_millis(1999)), None);
        assert_eq!(pacer.pop_expired_connect(start + Duration::from_secs(2)), Some((4, start)));
    }
}
