//! A worker's wake-ups other than the pacer's: when a workload asked to be woken for a
//! connection (a flow's sleep or expectation, a subscription's deadline, a ping's
//! timeout), and when a close the load started times out. One heap for all, keyed by the
//! connection's slot and its start (its identity, since slots are reused): a stale entry is
//! skipped when it falls due. Pure: time is passed in.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

/// How long the server has to answer a close the load started before it counts unanswered.
pub const CLOSE_TIMEOUT: Duration = Duration::from_secs(2);

/// What fell due.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Due {
    /// The workload's own timer.
    Workload,
    /// A close started by the load was not answered in time.
    CloseTimeout,
    /// The connection's protocol session wants to act (a heartbeat).
    Session,
}

#[derive(Debug, Default)]
pub struct Timers {
    heap: BinaryHeap<Reverse<(Instant, usize, Instant, Due)>>,
}

impl Timers {
    /// Wakes the workload for the connection at `slot` (started at `started`) at `at`.
    pub fn wake(&mut self, slot: usize, started: Instant, at: Instant) {
        self.heap.push(Reverse((at, slot, started, Due::Workload)));
    }

    /// Wakes the session of the connection at `slot` at `at`.
    pub fn session(&mut self, slot: usize, started: Instant, at: Instant) {
        self.heap.push(Reverse((at, slot, started, Due::Session)));
    }

    /// Watches a close started at `now`.
    pub fn close_deadline(&mut self, slot: usize, started: Instant, now: Instant) {
        self.heap.push(Reverse((now + CLOSE_TIMEOUT, slot, started, Due::CloseTimeout)));
    }

    /// The earliest wake-up.
    pub fn next(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse((at, ..))| *at)
    }

    /// A wake-up due by `now`: slot, start and kind; the caller checks the connection.
    pub fn pop_due(&mut self, now: Instant) -> Option<(usize, Instant, Due)> {
        let &Reverse((at, slot, started, due)) = self.heap.peek()?;
        (at <= now).then(|| {
            self.heap.pop();
            (slot, started, due)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wake_ups_come_in_time_order_with_their_kind() {
        let now = Instant::now();
        let mut timers = Timers::default();
        timers.close_deadline(3, now, now);
        timers.wake(4, now, now + Duration::from_millis(10));
        assert_eq!(timers.next(), Some(now + Duration::from_millis(10)));
        assert_eq!(timers.pop_due(now + Duration::from_millis(9)), None);
        assert_eq!(timers.pop_due(now + Duration::from_millis(10)), Some((4, now, Due::Workload)));
        assert_eq!(timers.pop_due(now + CLOSE_TIMEOUT - Duration::from_millis(1)), None);
        assert_eq!(timers.pop_due(now + CLOSE_TIMEOUT), Some((3, now, Due::CloseTimeout)));
        assert_eq!(timers.next(), None);
    }
}
