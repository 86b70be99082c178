//! What the workers of one pub/sub run share in this process: the receipts that fold into
//! each publish's spread, and the count of measured publishes per topic that tells a draining
//! worker which deliveries are still due.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::receipts::SharedReceipts;

/// The measured publishes of each topic so far, counted by the publishers of every worker of
/// the process.
#[derive(Debug)]
pub struct Published(Vec<AtomicU64>);

impl Published {
    pub fn new(topics: u64) -> Published {
        Published((0..topics).map(|_| AtomicU64::new(0)).collect())
    }

    pub fn add(&self, topic: u64, publishes: u64) {
        if let Some(count) = self.0.get(topic as usize) {
            count.fetch_add(publishes, Ordering::Relaxed);
        }
    }

    /// `publishes` counted by [`Published::add`] turned out never taken by the server.
    pub fn take_back(&self, topic: u64, publishes: u64) {
        if let Some(count) = self.0.get(topic as usize) {
            let _ = count
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| Some(n.saturating_sub(publishes)));
        }
    }

    pub fn of(&self, topic: u64) -> u64 {
        self.0.get(topic as usize).map_or(0, |count| count.load(Ordering::Relaxed))
    }
}

/// What the workers of one run share (made once per run by the scenario).
#[derive(Debug)]
pub struct WorkersShare {
    /// The receipts of every worker's subscribers, folded into each publish's spread.
    pub receipts: Arc<SharedReceipts>,
    /// The measured publishes per topic sent by every worker's publishers; `None` in a shard
    /// of `--processes`, whose subscribers hear publishers of other processes too.
    pub published: Option<Arc<Published>>,
}
