//! The spread of each measured publish (its first subscriber's receipt → its last one's)
//! over every worker of a run, without keeping every publish until the run ends. A
//! publish's subscribers may sit on several workers, so no worker alone can fold its
//! spread; keeping every publish's receipts until the workers merge at the end grew with
//! the run (hundreds of publishes a second, for days). Instead each worker hands its
//! receipts of publishes older than [`SETTLE`] to the run's [`SharedReceipts`] once a
//! second; there, receipts older than twice that, which every worker has handed in by
//! then, are folded into the spread histogram and forgotten. Memory is then the publishes
//! of the last few seconds. A worker stalled longer than [`SETTLE`] may hand in a part of a
//! publish already folded: its spread is then measured without that part.

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use hdrhistogram::Histogram;

use super::section::Spread;
use crate::metrics::{new_histogram, record_us};

/// How old a publish's last receipt must be before its worker hands it in: deliveries of
/// one publish arrive within this, the drain the run allows them at its end (`DRAIN` of
/// the workload, which is the same 5 s).
pub const SETTLE: Duration = Duration::from_secs(5);

/// The receipts every worker of a run has handed in, and the spreads folded from them.
#[derive(Debug)]
pub struct SharedReceipts {
    inner: Mutex<Folded>,
}

#[derive(Debug)]
struct Folded {
    receipts: Spread,
    spread: Histogram<u64>,
}

impl Default for SharedReceipts {
    fn default() -> SharedReceipts {
        SharedReceipts { inner: Mutex::new(Folded { receipts: Spread::new(), spread: new_histogram() }) }
    }
}

impl SharedReceipts {
    fn lock(&self) -> MutexGuard<'_, Folded> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Once a second: moves a worker's receipts last received before `now_us − SETTLE`
    /// out of `local` into the shared ones, and folds the shared receipts older than twice
    /// that into the spread.
    pub fn hand_in(&self, local: &mut Spread, now_us: u64) {
        let settle_us = SETTLE.as_micros() as u64;
        let done = now_us.saturating_sub(settle_us);
        let mut shared = self.lock();
        local.retain(|&key, &mut (first, last)| {
            if last >= done {
                return true;
            }
            add(&mut shared.receipts, key, (first, last));
            false
        });
        let folded = now_us.saturating_sub(2 * settle_us);
        let Folded { receipts, spread } = &mut *shared;
        receipts.retain(|_, &mut (first, last)| {
            if last >= folded {
                return true;
            }
            record_us(spread, last - first);
            false
        });
    }

    /// At a worker's end: hands in all of `local` and takes everything gathered so far
    /// (the receipts not yet folded, and the spreads folded), for the worker's section.
    /// Whatever later workers hand in, they take in turn: the sections together hold every
    /// receipt once, and their merge folds the rest.
    pub fn take_all(&self, local: Spread) -> (Spread, Histogram<u64>) {
        let mut shared = self.lock();
        for (key, receipt) in local {
            add(&mut shared.receipts, key, receipt);
        }
        let receipts = std::mem::take(&mut shared.receipts);
        let spread = std::mem::replace(&mut shared.spread, new_histogram());
        (receipts, spread)
    }
}

/// Adds one worker's first and last receipt of a publish.
fn add(receipts: &mut Spread, key: (u64, u64), (first, last): (u64, u64)) {
    let entry = receipts.entry(key).or_insert((first, last));
    entry.0 = entry.0.min(first);
    entry.1 = entry.1.max(last);
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000;

    #[test]
    fn publishes_spread_over_workers_fold_once_every_part_is_in() {
        let shared = SharedReceipts::default();
        let base = 100 * S;
        // Publish (0, 1) reached worker A at base..base+10 and worker B at base+30.
        let mut a = Spread::from([((0, 1), (base, base + 10)), ((0, 2), (base + 9 * S, base + 9 * S))]);
        let mut b = Spread::from([((0, 1), (base + 30, base + 30))]);
        shared.hand_in(&mut a, base + 6 * S);
        assert_eq!(a.len(), 1, "the recent publish stays with its worker");
        shared.hand_in(&mut b, base + 6 * S);
        assert!(b.is_empty());
        // Twice the settling time later, the publish is folded, both parts in.
        shared.hand_in(&mut Spread::new(), base + 11 * S);
        let (left, spread) = shared.take_all(a);
        assert_eq!(spread.len(), 1);
        assert_eq!(spread.max(), 30);
        assert_eq!(left.len(), 1, "the recent publish goes to the section unfolded");
    }

    #[test]
    fn what_is_handed_in_stays_bounded_however_long_the_run() {
        let shared = SharedReceipts::default();
        let mut local = Spread::new();
        // 200 publishes a second for an hour, handed in every second.
        for second in 0..3_600u64 {
            for n in 0..200 {
                let at = second * S + n * 5_000;
                local.insert((n % 10, second * 20 + n / 10), (at, at + 100));
            }
            shared.hand_in(&mut local, (second + 1) * S);
            assert!(local.len() <= 200 * 7, "{} kept by the worker", local.len());
            assert!(shared.lock().receipts.len() <= 200 * 7, "{} shared", shared.lock().receipts.len());
        }
        let (left, spread) = shared.take_all(local);
        assert_eq!(spread.len() + left.len() as u64, 3_600 * 200);
    }
}
