//! Each stage of a `--stages` run, measured as the run goes: the exact sum of the
//! per-second histograms of its seconds (stages last whole seconds, so every second belongs
//! to one), its exchanges, the connections open at its last second and over its seconds
//! (their mean is the concurrency Little's law needs per stage) and the errors counted by
//! then. The engine's coordinator adds each second once every worker has finished it,
//! off the message path; a run holds one histogram per stage (at most 100) whatever its
//! length.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;

use super::{Interval, new_histogram};

/// One stage's share of the run.
#[derive(Debug, Clone)]
pub struct StageTally {
    /// As the user writes it (`30s:1000c`).
    pub label: String,
    pub start_s: u64,
    pub end_s: u64,
    pub measured: bool,
    /// The latency of the stage's exchanges (corrected in an open loop), every one.
    pub latency: Histogram<u64>,
    pub exchanges: u64,
    /// Connections open in the stage's last second.
    pub connections_open: u64,
    /// The sum over the stage's seconds of the connections open in each: divided by
    /// `seconds`, the stage's mean concurrency.
    pub connection_seconds: u64,
    /// The stage's seconds tallied (fewer than its length when the run ended early).
    pub seconds: u64,
    /// Errors of every kind counted by the end of the stage (the run's so far).
    pub errors_by_end: u64,
}

impl StageTally {
    /// A stage from `start_s` to `end_s` (s since the run's start), nothing measured yet.
    pub fn new(label: String, start_s: u64, end_s: u64, measured: bool) -> StageTally {
        StageTally {
            label,
            start_s,
            end_s,
            measured,
            latency: new_histogram(),
            exchanges: 0,
            connections_open: 0,
            connection_seconds: 0,
            seconds: 0,
            errors_by_end: 0,
        }
    }

    /// Adds another process's or worker's share of the same stage.
    pub fn add(&mut self, other: &StageTally) {
        self.latency.add(&other.latency).expect("histograms share bounds");
        self.exchanges += other.exchanges;
        self.connections_open += other.connections_open;
        self.connection_seconds += other.connection_seconds;
        // The same seconds, each process's share of them.
        self.seconds = self.seconds.max(other.seconds);
        self.errors_by_end += other.errors_by_end;
    }
}

/// Adds the finished `second` (every worker's share) to its stage; `errors`: every error
/// counted so far. Seconds past the last stage (the drain) belong to none.
pub fn add_second(stages: &mut [StageTally], second: &Interval, errors: &BTreeMap<String, u64>) {
    let Some(stage) = stages.iter_mut().find(|s| s.start_s <= second.second && second.second < s.end_s)
    else {
        return;
    };
    stage.latency.add(&second.latency).expect("histograms share bounds");
    stage.exchanges += second.exchanges;
    stage.connections_open = second.connections_open;
    stage.connection_seconds += second.connections_open;
    stage.seconds += 1;
    stage.errors_by_end = errors.values().sum();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::record_us;

    #[test]
    fn each_second_goes_to_its_stage_whole() {
        let mut stages =
            vec![StageTally::new("2s:10c".into(), 0, 2, true), StageTally::new("1s:0c".into(), 2, 3, true)];
        let mut whole = new_histogram();
        for s in 0..4u64 {
            let mut second = Interval::new(s);
            second.exchanges = 10 + s;
            second.connections_open = 10 - s;
            for us in 1..=100 {
                record_us(&mut second.latency, us * (s + 1));
                if s < 3 {
                    record_us(&mut whole, us * (s + 1));
                }
            }
            add_second(&mut stages, &second, &[("lost".to_owned(), s)].into());
        }
        assert_eq!((stages[0].exchanges, stages[0].connections_open, stages[0].errors_by_end), (21, 9, 1));
        assert_eq!((stages[0].connection_seconds, stages[0].seconds), (19, 2), "10 then 9 open");
        let mut two = stages[0].clone();
        two.add(&stages[0]);
        assert_eq!(
            (two.connection_seconds, two.seconds),
            (38, 2),
            "two processes' shares of the same seconds"
        );
        assert_eq!((stages[1].exchanges, stages[1].connections_open, stages[1].errors_by_end), (12, 8, 2));
        let mut merged = stages[0].latency.clone();
        merged.add(&stages[1].latency).unwrap();
        assert_eq!(merged, whole, "the stages' histograms add up to the run's, second 3 (the drain) aside");
        assert_eq!(stages[1].latency.max(), 300);
    }
}
