//! Where the workers publish what they measured while the run goes on, for the live view,
//! the metrics endpoint and the stream (`crate::live`). A worker publishes once per
//! second, at the first loop turn of a new second: its finished seconds (round trips and
//! their latency histogram, exact) and its counters. Nothing here is touched per message,
//! so the hot path pays nothing for live figures, and a second counts every echo of that
//! second whatever the rate.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Range;
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::metrics::{Counters, Interval, Metrics, new_histogram};

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

/// Seconds every worker has finished, merged, and the counters summed over workers.
#[derive(Debug, Clone)]
pub struct LiveSeconds {
    pub intervals: Vec<Interval>,
    pub counters: Counters,
    /// Every error so far by kind: the counters' and the scenario's own.
    pub errors: BTreeMap<String, u64>,
}

impl LiveBoard {
    fn lock(&self) -> MutexGuard<'_, Board> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The run has `workers` workers: a second is complete once each has published it.
    pub(super) fn expect_workers(&self, workers: usize) {
        let mut board = self.lock();
        board.next_second.resize(workers, 0);
        board.counters.resize(workers, Counters::default());
        board.scenario_errors.resize(workers, BTreeMap::new());
    }

    /// Worker `worker` finished `seconds` (its intervals in `metrics`); its counters and
    /// its scenario's errors now.
    pub(super) fn publish(
        &self,
        worker: usize,
        metrics: &Metrics,
        scenario_errors: &BTreeMap<String, u64>,
        seconds: Range<u64>,
    ) {
        let mut board = self.lock();
        if board.next_second.len() <= worker {
            board.next_second.resize(worker + 1, 0);
            board.counters.resize(worker + 1, Counters::default());
            board.scenario_errors.resize(worker + 1, BTreeMap::new());
        }
        for second in seconds.clone() {
            // A second is taken only once every worker published it: never one of these.
            let Some(index) = second.checked_sub(board.taken) else { continue };
            while board.pending.len() as u64 <= index {
                let second = board.taken + board.pending.len() as u64;
                board.pending.push_back(Interval {
                    second,
                    exchanges: 0,
                    connections_open: 0,
                    latency: new_histogram(),
                });
            }
            let merged = &mut board.pending[index as usize];
            if let Some(mine) = metrics.intervals.get(second as usize) {
                merged.exchanges += mine.exchanges;
                merged.connections_open += mine.connections_open;
                merged.latency.add(&mine.latency).expect("histograms share bounds");
            }
        }
        board.next_second[worker] = board.next_second[worker].max(seconds.end);
        board.counters[worker].clone_from(&metrics.counters);
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

    fn worker_with(seconds: &[(u64, u64)]) -> Metrics {
        let mut metrics = Metrics::default();
        for &(second, echoes) in seconds {
            let interval = metrics.interval(second);
            interval.exchanges = echoes;
            record_us(&mut interval.latency, 100 * (second + 1));
            metrics.counters.messages_received += echoes;
        }
        metrics
    }

    #[test]
    fn a_second_is_complete_only_once_every_worker_published_it() {
        let board = LiveBoard::default();
        board.expect_workers(2);
        board.publish(0, &worker_with(&[(0, 3), (1, 4)]), &BTreeMap::new(), 0..2);
        assert!(board.take_complete().intervals.is_empty(), "worker 1 has published nothing");
        board.publish(1, &worker_with(&[(0, 5)]), &[("lost".to_owned(), 2)].into(), 0..1);
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
}
