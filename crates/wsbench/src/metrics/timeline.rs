//! The run second by second, in two shapes. An [`Interval`] is one second while it is
//! recorded: its whole latency histogram, exact. It lives only as long as the second: a
//! worker keeps the one it records, the live board the few not yet shown, and once every
//! worker has finished a second it is written where it goes (`--hlog`, `--stream`, the live
//! view) and kept as a [`TimelineSecond`]: counts and two percentiles, a few dozen bytes
//! whatever the rate. So a run of days holds one histogram per worker, never one per second;
//! the whole-run histograms stay lossless in [`super::Metrics`].

use hdrhistogram::Histogram;

use super::new_histogram;

/// One wall-clock second while it is recorded, with every latency of it.
#[derive(Debug, Clone)]
pub struct Interval {
    /// Seconds since the run started.
    pub second: u64,
    /// Exchanges (round trips, deliveries, matched replies: what the scenario counts)
    /// completed in this second, warm-up included.
    pub exchanges: u64,
    pub connections_open: u64,
    /// Requests were outstanding, awaiting replies, when the second began (on any worker):
    /// with no exchange in it, the second is a stall.
    pub awaiting: bool,
    /// Attempts to reopen lost connections started in this second (`--reconnect`).
    pub reconnects: u64,
    pub latency: Histogram<u64>,
}

impl Interval {
    /// Second `second`, nothing recorded yet.
    pub fn new(second: u64) -> Interval {
        Interval {
            second,
            exchanges: 0,
            connections_open: 0,
            awaiting: false,
            reconnects: 0,
            latency: new_histogram(),
        }
    }

    /// Adds `other` (the same second, another worker's share) into this one.
    pub fn add(&mut self, other: &Interval) {
        self.exchanges += other.exchanges;
        self.connections_open += other.connections_open;
        self.awaiting |= other.awaiting;
        self.reconnects += other.reconnects;
        self.latency.add(&other.latency).expect("histograms share bounds");
    }

    /// Latency at `quantile` in µs; 0 when the second completed no exchange.
    pub fn quantile_us(&self, quantile: f64) -> u64 {
        if self.latency.is_empty() { 0 } else { self.latency.value_at_quantile(quantile) }
    }
}

/// One second as the run's timeline keeps it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TimelineSecond {
    /// Seconds since the run started.
    pub second: u64,
    /// Exchanges completed in this second, warm-up included.
    pub exchanges: u64,
    pub connections_open: u64,
    /// Requests were outstanding when the second began ([`Interval::awaiting`]).
    pub awaiting: bool,
    /// Attempts to reopen lost connections started in this second.
    pub reconnects: u64,
    /// Latency of this second's exchanges, µs (0 when there were none).
    pub p50_us: u64,
    pub p99_us: u64,
}

impl TimelineSecond {
    /// What the timeline keeps of a finished second.
    pub fn of(interval: &Interval) -> TimelineSecond {
        TimelineSecond {
            second: interval.second,
            exchanges: interval.exchanges,
            connections_open: interval.connections_open,
            awaiting: interval.awaiting,
            reconnects: interval.reconnects,
            p50_us: interval.quantile_us(0.5),
            p99_us: interval.quantile_us(0.99),
        }
    }

    /// Whether nothing was answered in this second while requests awaited replies.
    pub fn stalled(&self) -> bool {
        self.awaiting && self.exchanges == 0
    }

    /// Adds the same second of another process (a shard): counts sum; each percentile is
    /// the higher of the two, an upper bound of the merged one (fewer than 1 % of either
    /// part's exchanges lie above its p99, so fewer than 1 % of both lie above the higher).
    /// The run's whole latency merges exactly; only the per-second figures are bounds.
    pub fn add(&mut self, other: &TimelineSecond) {
        self.exchanges += other.exchanges;
        self.connections_open += other.connections_open;
        self.awaiting |= other.awaiting;
        self.reconnects += other.reconnects;
        self.p50_us = self.p50_us.max(other.p50_us);
        self.p99_us = self.p99_us.max(other.p99_us);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::record_us;

    #[test]
    fn a_finished_second_keeps_its_counts_and_exact_percentiles() {
        let mut interval = Interval::new(7);
        for us in 1..=100 {
            record_us(&mut interval.latency, us * 10);
        }
        interval.exchanges = 100;
        interval.connections_open = 3;
        let kept = TimelineSecond::of(&interval);
        assert_eq!((kept.second, kept.exchanges, kept.connections_open), (7, 100, 3));
        assert_eq!((kept.p50_us, kept.p99_us), (500, 990));
        assert_eq!(TimelineSecond::of(&Interval::new(0)).p99_us, 0, "no exchange, no latency");
    }

    #[test]
    fn merged_percentiles_are_an_upper_bound_of_the_exact_ones() {
        let (mut a, mut b, mut both) = (Interval::new(0), Interval::new(0), Interval::new(0));
        for us in 1..=1000u64 {
            let (part, value) = if us % 3 == 0 { (&mut a, us * 7) } else { (&mut b, us) };
            record_us(&mut part.latency, value);
            record_us(&mut both.latency, value);
        }
        let mut merged = TimelineSecond::of(&a);
        merged.add(&TimelineSecond::of(&b));
        let exact = TimelineSecond::of(&both);
        assert!(merged.p50_us >= exact.p50_us && merged.p99_us >= exact.p99_us, "{merged:?} {exact:?}");
    }
}
