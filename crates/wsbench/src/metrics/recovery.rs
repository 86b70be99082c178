//! What a run's recoveries measured (`--disrupt`): for each connection lost after a
//! disruption, how long from the disruption until it was open again and how long it was
//! down itself (two lossless histograms), the attempts it took, and the failures of those
//! attempts by cause, which are the recovery's and not the run's errors (a restart the user
//! asked for refuses connections by design; a connection that never came back is an error).
//! Merges with `add` / `+=` like every metric.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;

use super::{new_histogram, record_us};

/// The run's recoveries, summed over workers and shards.
#[derive(Debug, Clone)]
pub struct RecoveryTally {
    /// µs from the disruption to each lost connection being open again.
    pub back_after: Histogram<u64>,
    /// µs from each connection's loss to its being open again.
    pub downtime: Histogram<u64>,
    /// Connections open again after a disruption.
    pub back: u64,
    /// Connections lost after a disruption and still down when the run ended.
    pub not_back: u64,
    /// Attempts to reopen the connections lost after a disruption (the last, successful,
    /// one included).
    pub attempts: u64,
    /// Connections cut by a `drop` disruption.
    pub dropped: u64,
    /// The failures while connections were down, by error kind (`connection_refused`,
    /// `handshake_http_status_503`, `closed_1001`, `reset`, …).
    pub failures: BTreeMap<String, u64>,
}

impl Default for RecoveryTally {
    fn default() -> RecoveryTally {
        RecoveryTally {
            back_after: new_histogram(),
            downtime: new_histogram(),
            back: 0,
            not_back: 0,
            attempts: 0,
            dropped: 0,
            failures: BTreeMap::new(),
        }
    }
}

impl RecoveryTally {
    /// A lost connection is open again, `back_after_us` after the disruption and
    /// `downtime_us` after its own loss, having taken `attempts` attempts.
    pub fn came_back(&mut self, back_after_us: u64, downtime_us: u64, attempts: u32) {
        record_us(&mut self.back_after, back_after_us);
        record_us(&mut self.downtime, downtime_us);
        self.back += 1;
        self.attempts += u64::from(attempts);
    }

    /// Connections lost after a disruption: back, and not.
    pub fn lost(&self) -> u64 {
        self.back + self.not_back
    }

    pub fn is_empty(&self) -> bool {
        self.lost() == 0 && self.dropped == 0 && self.failures.is_empty()
    }

    /// Adds `other` (another worker's, another shard's).
    pub fn add(&mut self, other: &RecoveryTally) {
        self.back_after.add(&other.back_after).expect("histograms share bounds");
        self.downtime.add(&other.downtime).expect("histograms share bounds");
        self.back += other.back;
        self.not_back += other.not_back;
        self.attempts += other.attempts;
        self.dropped += other.dropped;
        for (kind, count) in &other.failures {
            *self.failures.entry(kind.clone()).or_default() += count;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recoveries_merge_losslessly() {
        let mut a = RecoveryTally::default();
        a.came_back(1_000, 900, 1);
        a.failures.insert("connection_refused".into(), 3);
        let mut b = RecoveryTally::default();
        b.came_back(5_000, 4_000, 4);
        b.not_back = 2;
        b.failures.insert("connection_refused".into(), 7);
        a.add(&b);
        assert_eq!((a.back, a.not_back, a.lost(), a.attempts), (2, 2, 4, 5));
        assert_eq!(a.back_after.len(), 2);
        assert_eq!(a.back_after.max(), b.back_after.max());
        assert_eq!(a.failures.get("connection_refused"), Some(&10));
        assert!(!a.is_empty() && RecoveryTally::default().is_empty());
    }
}
