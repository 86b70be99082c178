//! Where the workers publish what they measured while the run goes on. A worker publishes
//! each second once it is over (at the first exchange or loop turn of a later one): the
//! second's exchanges and their latency histogram, exact, and once a second its counters.
//! The board merges the workers' shares of a second; once every worker has published it, the
//! engine's coordinator takes it ([`LiveBoard::take_complete`]), keeps it in the run's
//! timeline and hands it to the live outputs (`crate::live`). Nothing here is touched per
//! message, so the hot path pays nothing for live figures, and the board holds only the
//! seconds not yet taken: one or two, whatever the run's length.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::metrics::{Counters, Interval};

/// The workers' published seconds, merged, and each worker's counters.
#[derive(Debug, Default)]
pub struct LiveBoard {
    inner: Mutex<Board>,
}

#[derive(Debug, Default)]
struct Board {
    /// Per worker: the first second it has not published yet (`u64::MAX` once it ended).
    next_second: Vec<u64>,
    counters: Vec<Counters>,
    /// Per worker: its scenario's own errors by kind.
    scenario_errors: Vec<BTreeMap<String, u64>>,
    /// The published seconds not yet taken, merged over workers: `pending[i]` is second
    /// `taken + i`. Taken seconds are dropped, so the board holds only a second or two.
    pending: VecDeque<Interval>,
    taken: u64,
}

/// What a worker's seconds without a loop turn had: what the last turn left.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Carried {
    pub open: u64,
    /// Requests awaited replies.
    pub awaiting: bool,
}

/// Seconds every worker has finished, merged, and the counters summed over workers.
#[derive(Debug, Clone, Default)]
pub struct LiveSeconds {
    pub intervals: Vec<Interval>,
    pub counters: Counters,
    /// Every error so far by kind: the counters' and the scenario's own.
    pub errors: BTreeMap<String, u64>,
}

impl Board {
    fn grow_to(&mut self, workers: usize) {
        if self.next_second.len() < workers {
            self.next_second.resize(workers, 0);
            self.counters.resize(workers, Counters::default());
            self.scenario_errors.resize(workers, BTreeMap::new());
        }
    }

    /// The pending entry of `second`, created (with any before it) on first use; `None`
    /// for a second already taken.
    fn pending(&mut self, second: u64) -> Option<&mut Interval> {
        let index = second.checked_sub(self.taken)?;
        while self.pending.len() as u64 <= index {
            let second = self.taken + self.pending.len() as u64;
            self.pending.push_back(Interval::new(second));
        }
        self.pending.get_mut(index as usize)
    }
}

impl LiveBoard {
    fn lock(&self) -> MutexGuard<'_, Board> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The run has `workers` workers: a second is complete once each has published it.
    pub(super) fn expect_workers(&self, workers: usize) {
        self.lock().grow_to(workers);
    }

    /// Worker `worker` finished `interval` and every second after it until `next` (not
    /// included). Those between saw no loop turn of the worker (it was stalled, or the whole
    /// process was stopped): they completed nothing, and what it had before (`carried`:
    /// connections open, requests awaiting replies) stayed through them.
    pub(super) fn publish_second(&self, worker: usize, interval: &Interval, next: u64, carried: Carried) {
        let mut board = self.lock();
        board.grow_to(worker + 1);
        // A second is taken only once every worker published it: never one of these.
        if let Some(merged) = board.pending(interval.second) {
            merged.add(interval);
        }
        for second in interval.second + 1..next {
            if let Some(merged) = board.pending(second) {
                merged.connections_open += carried.open;
                merged.awaiting |= carried.awaiting;
            }
        }
        board.next_second[worker] = board.next_second[worker].max(next);
    }

    /// Worker `worker`'s counters now, and its scenario's errors.
    pub(super) fn publish_counters(
        &self,
        worker: usize,
        counters: &Counters,
        scenario_errors: &BTreeMap<String, u64>,
    ) {
        let mut board = self.lock();
        board.grow_to(worker + 1);
        board.counters[worker].clone_from(counters);
        board.scenario_errors[worker].clone_from(scenario_errors);
    }

    /// Worker `worker` ended: no second waits for it any more.
    pub(super) fn worker_done(&self, worker: usize) {
        if let Some(next) = self.lock().next_second.get_mut(worker) {
            *next = u64::MAX;
        }
    }

    /// Takes the seconds every worker has published since the last call; with the counters.
    pub fn take_complete(&self) -> LiveSeconds {
        let mut board = self.lock();
        let complete = board.next_second.iter().copied().min().unwrap_or(0);
        let mut intervals = Vec::new();
        while board.pending.front().is_some_and(|i| i.second < complete) {
            intervals.extend(board.pending.pop_front());
            board.taken += 1;
        }
        let mut counters = Counters::default();
        for worker in &board.counters {
            counters += worker;
        }
        let mut errors = counters.errors();
        for (kind, count) in board.scenario_errors.iter().flatten() {
            *errors.entry(kind.clone()).or_default() += count;
        }
        LiveSeconds { intervals, counters, errors }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::record_us;

    fn second(second: u64, echoes: u64, open: u64) -> Interval {
        let mut interval = Interval::new(second);
        interval.exchanges = echoes;
        interval.connections_open = open;
        record_us(&mut interval.latency, 100 * (second + 1));
        interval
    }

    fn open(open: u64) -> Carried {
        Carried { open, awaiting: false }
    }

    #[test]
    fn a_second_is_complete_only_once_every_worker_published_it() {
        let board = LiveBoard::default();
        board.expect_workers(2);
        board.publish_second(0, &second(0, 3, 1), 1, open(1));
        board.publish_second(0, &second(1, 4, 1), 2, open(1));
        board.publish_counters(
            0,
            &Counters { messages_received: 7, ..Counters::default() },
            &BTreeMap::new(),
        );
        assert!(board.take_complete().intervals.is_empty(), "worker 1 has published nothing");
        board.publish_second(1, &second(0, 5, 1), 1, open(1));
        board.publish_counters(
            1,
            &Counters { messages_received: 5, ..Counters::default() },
            &[("lost".to_owned(), 2)].into(),
        );
        let seen = board.take_complete();
        assert_eq!(seen.intervals.iter().map(|i| i.exchanges).collect::<Vec<_>>(), [8]);
        assert_eq!(seen.intervals[0].latency.len(), 2);
        assert_eq!(seen.counters.messages_received, 12);
        assert_eq!(seen.errors.get("lost"), Some(&2), "the scenario's errors are counted with the rest");
        assert!(board.take_complete().intervals.is_empty(), "a second is taken once");
        board.worker_done(1);
        let rest = board.take_complete();
        assert_eq!(rest.intervals.iter().map(|i| (i.second, i.exchanges)).collect::<Vec<_>>(), [(1, 4)]);
        assert!(board.take_complete().intervals.is_empty());
    }

    #[test]
    fn seconds_a_stalled_worker_skipped_keep_its_connections_open() {
        let board = LiveBoard::default();
        board.expect_workers(1);
        // Second 1 was the last loop turn before a stall; the next was in second 4.
        board.publish_second(0, &second(0, 10, 50), 1, open(50));
        board.publish_second(0, &second(1, 10, 50), 4, open(50));
        let seen = board.take_complete();
        let open: Vec<(u64, u64, u64)> =
            seen.intervals.iter().map(|i| (i.second, i.exchanges, i.connections_open)).collect();
        assert_eq!(open, [(0, 10, 50), (1, 10, 50), (2, 0, 50), (3, 0, 50)]);
    }

    #[test]
    fn seconds_a_worker_skipped_while_awaiting_replies_are_stalls_of_the_run() {
        let board = LiveBoard::default();
        board.expect_workers(2);
        // Worker 0 awaited replies when its loop stopped turning in second 1 (until 4);
        // worker 1 answered in second 2 only.
        board.publish_second(0, &second(1, 10, 5), 4, Carried { open: 5, awaiting: true });
        board.publish_second(1, &second(1, 0, 5), 2, open(5));
        board.publish_second(1, &second(2, 3, 5), 4, open(5));
        let seen = board.take_complete();
        let stalled: Vec<(u64, bool)> = seen
            .intervals
            .iter()
            .map(|i| (i.second, crate::metrics::TimelineSecond::of(i).stalled()))
            .collect();
        assert_eq!(stalled, [(0, false), (1, false), (2, false), (3, true)]);
    }
}
