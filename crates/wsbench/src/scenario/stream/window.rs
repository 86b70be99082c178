//! The ids a stream's subscribers received, matched across every subscriber of the run in a
//! sliding window of bounded size, so that memory never grows with the run's duration.
//!
//! An id enters the window at its first receipt by any subscriber (that receipt's time is
//! the id's first receipt, and whether it fell in the measured window decides whether the id
//! is measured); each later receipt sets the subscriber's bit (a second one is a duplicate)
//! and records its spread from the first. [`SETTLE`] after its first receipt the id settles:
//! every subscriber that owed it and has no bit misses it. A subscriber owes the ids first
//! received, by anyone, while it was joined: from the first receipt of the first id it got on
//! its current connection until that connection ended (a subscriber whose connection was
//! reopened is judged by its current connection alone). A settled id is remembered (as its hash, the last
//! [`MAX_SETTLED_REMEMBERED`]) so that a receipt after it settled is counted late, not taken
//! for a new id.
//!
//! Bounds: at most [`MAX_WINDOW_IDS`] ids, and at most [`MAX_WINDOW_BITS`] subscriber bits
//! (ids × subscribers), are open at once; a new id past either settles the oldest early
//! (counted, `settled_early`). The workers of a run share one window behind a lock.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::metrics::{new_histogram, record_us};

/// How long after an id's first receipt its other receipts may come before it settles.
pub const SETTLE: Duration = Duration::from_secs(5);
/// Ids open at once, at most.
pub const MAX_WINDOW_IDS: usize = 65_536;
/// Subscriber bits (open ids × subscribers) at once, at most: 32 MiB.
pub const MAX_WINDOW_BITS: u64 = 1 << 28;
/// Settled ids remembered, to tell a late receipt from a new id.
pub const MAX_SETTLED_REMEMBERED: usize = 262_144;
/// How many of the worst subscribers a result names (all are counted).
pub const WORST_KEPT: usize = 20;

/// An id not yet settled.
#[derive(Debug)]
struct Open {
    first: Instant,
    measured: bool,
    /// One bit per subscriber: received.
    got: Vec<u64>,
}

/// One subscriber's connection as the window judges it, and its tallies (measured ids).
#[derive(Debug, Clone, Copy, Default)]
struct Subscriber {
    /// Its first receipt on its current connection; `None` before any.
    joined: Option<Instant>,
    /// When that connection ended.
    left: Option<Instant>,
    missing: u64,
    duplicated: u64,
}

/// What a receipt was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Receipt {
    /// The id's first receipt by any subscriber.
    First,
    /// A later subscriber's first receipt of the id, `spread_us` after the first.
    Later { spread_us: u64 },
    /// The subscriber had it already.
    Duplicate,
    /// The id had settled already.
    Late,
}

/// A subscriber with a count (missing or duplicated ids).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubscriberCount {
    /// Its connection index (`{conn}` in `--header`).
    pub connection: u64,
    pub count: u64,
}

/// What the window counted over the measured ids.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    /// Subscribers that received anything, and those that received nothing.
    pub joined: u64,
    pub silent: u64,
    /// Measured ids, settled.
    pub ids: u64,
    /// Receipts owed: each measured id, once per subscriber that owed it.
    pub owed: u64,
    /// Receipts of measured ids, once per subscriber.
    pub delivered: u64,
    pub missing: u64,
    pub duplicated: u64,
    pub late: u64,
    /// Ids settled before [`SETTLE`] because the window was full.
    pub settled_early: u64,
    /// Subscribers that missed ids, and the worst [`WORST_KEPT`] (most missing first).
    pub missing_subscriber_count: u64,
    pub worst_missing: Vec<SubscriberCount>,
    pub duplicated_subscriber_count: u64,
    pub worst_duplicated: Vec<SubscriberCount>,
}

/// The run's window (behind the lock the workers share).
#[derive(Debug)]
pub struct Window {
    subscribers: Vec<Subscriber>,
    open: HashMap<u64, Open>,
    /// Open ids in the order they entered.
    order: VecDeque<u64>,
    /// Settled ids remembered, and whether each was measured; oldest first in `settled_order`.
    settled: HashMap<u64, bool>,
    settled_order: VecDeque<u64>,
    /// Ids open at once, at most.
    capacity: usize,
    pub tally: Tally,
    /// Each later subscriber's receipt of a measured id, from its first receipt (µs).
    pub spread: Histogram<u64>,
    /// Server timestamp → receipt, per measured receipt (µs), with `--message-time`.
    pub source_latency: Histogram<u64>,
}

impl Window {
    pub fn new(subscribers: u64) -> Window {
        let bits_per_id = subscribers.max(1).div_ceil(64) * 64;
        let capacity = (MAX_WINDOW_BITS / bits_per_id).clamp(1, MAX_WINDOW_IDS as u64) as usize;
        Window {
            subscribers: vec![Subscriber::default(); subscribers as usize],
            open: HashMap::new(),
            order: VecDeque::new(),
            settled: HashMap::new(),
            settled_order: VecDeque::new(),
            capacity,
            tally: Tally::default(),
            spread: new_histogram(),
            source_latency: new_histogram(),
        }
    }

    /// Subscriber `subscriber` received `id` at `now`; `in_window`: `now` is in the measured
    /// window (it decides for an id received first); `source_us`: the latency from the
    /// server's timestamp. Returns what the receipt was and whether its id is measured.
    pub fn receive(
        &mut self,
        subscriber: u64,
        id: u64,
        now: Instant,
        in_window: bool,
        source_us: Option<u64>,
    ) -> (Receipt, bool) {
        let words = self.subscribers.len().div_ceil(64);
        let Some(this) = self.subscribers.get_mut(subscriber as usize) else { return (Receipt::Late, false) };
        if this.joined.is_none() || this.left.is_some() {
            // It joins as of its first id's first receipt: it owes that id and every later one.
            let joined = self.open.get(&id).map_or(now, |open| open.first);
            *this = Subscriber { joined: Some(joined), left: None, ..*this };
        }
        let (word, bit) = ((subscriber / 64) as usize, 1u64 << (subscriber % 64));
        let (receipt, measured) = match self.open.get_mut(&id) {
            Some(open) if open.got[word] & bit != 0 => {
                this.duplicated += u64::from(open.measured);
                self.tally.duplicated += u64::from(open.measured);
                return (Receipt::Duplicate, open.measured);
            }
            Some(open) => {
                open.got[word] |= bit;
                let spread_us = now.saturating_duration_since(open.first).as_micros() as u64;
                if open.measured {
                    record_us(&mut self.spread, spread_us);
                }
                (Receipt::Later { spread_us }, open.measured)
            }
            None => {
                if let Some(&measured) = self.settled.get(&id) {
                    self.tally.late += u64::from(measured);
                    return (Receipt::Late, measured);
                }
                if self.open.len() >= self.capacity {
                    self.settle_oldest();
                    self.tally.settled_early += 1;
                }
                let mut got = vec![0; words];
                got[word] |= bit;
                self.open.insert(id, Open { first: now, measured: in_window, got });
                self.order.push_back(id);
                (Receipt::First, in_window)
            }
        };
        if measured {
            self.tally.delivered += 1;
            if let Some(source_us) = source_us {
                record_us(&mut self.source_latency, source_us);
            }
        }
        (receipt, measured)
    }

    /// Subscriber `subscriber`'s connection ended at `at`: it owes no id first received later.
    pub fn left(&mut self, subscriber: u64, at: Instant) {
        if let Some(this) = self.subscribers.get_mut(subscriber as usize)
            && this.joined.is_some()
        {
            this.left.get_or_insert(at);
        }
    }

    /// Settles the ids first received [`SETTLE`] or more before `now`.
    pub fn settle_due(&mut self, now: Instant) {
        while let Some(&id) = self.order.front() {
            match self.open.get(&id) {
                Some(open) if now.saturating_duration_since(open.first) < SETTLE => break,
                _ => self.settle_oldest(),
            }
        }
    }

    /// The run's end: every id settles, and the subscribers are counted.
    pub fn settle_all(&mut self) {
        while !self.order.is_empty() {
            self.settle_oldest();
        }
        let joined = self.subscribers.iter().filter(|s| s.joined.is_some()).count() as u64;
        self.tally.joined = joined;
        self.tally.silent = self.subscribers.len() as u64 - joined;
        let worst = |count: fn(&Subscriber) -> u64| -> (u64, Vec<SubscriberCount>) {
            let mut named: Vec<SubscriberCount> = (self.subscribers.iter().enumerate())
                .filter(|(_, s)| count(s) > 0)
                .map(|(at, s)| SubscriberCount { connection: at as u64, count: count(s) })
                .collect();
            let all = named.len() as u64;
            keep_worst(&mut named);
            (all, named)
        };
        (self.tally.missing_subscriber_count, self.tally.worst_missing) = worst(|s| s.missing);
        (self.tally.duplicated_subscriber_count, self.tally.worst_duplicated) = worst(|s| s.duplicated);
    }

    /// Settles the oldest open id: each subscriber that owed it and lacks it misses it.
    fn settle_oldest(&mut self) {
        let Some(id) = self.order.pop_front() else { return };
        let Some(open) = self.open.remove(&id) else { return };
        if open.measured {
            self.tally.ids += 1;
            for (at, this) in self.subscribers.iter_mut().enumerate() {
                let owed = this.joined.is_some_and(|joined| joined <= open.first)
                    && this.left.is_none_or(|left| left >= open.first);
                if !owed {
                    continue;
                }
                self.tally.owed += 1;
                if open.got[at / 64] & (1 << (at % 64)) == 0 {
                    this.missing += 1;
                    self.tally.missing += 1;
                }
            }
        }
        if self.settled_order.len() >= MAX_SETTLED_REMEMBERED
            && let Some(oldest) = self.settled_order.pop_front()
        {
            self.settled.remove(&oldest);
        }
        self.settled.insert(id, open.measured);
        self.settled_order.push_back(id);
    }

    /// Ids open now (for tests of the bound).
    #[cfg(test)]
    fn open_ids(&self) -> usize {
        self.open.len()
    }
}

/// Keeps the [`WORST_KEPT`] highest counts, highest first (lowest connection on ties).
pub fn keep_worst(named: &mut Vec<SubscriberCount>) {
    named.sort_by(|a, b| (b.count, a.connection).cmp(&(a.count, b.connection)));
    named.truncate(WORST_KEPT);
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_subscriber_that_lacks_an_id_it_owed_misses_it_and_is_named() {
        let start = Instant::now();
        let mut window = Window::new(3);
        // Ids 1..=5 every 10 ms to all three subscribers, but subscriber 2 never gets id 3.
        for id in 1..=5u64 {
            let at = start + MS * (id as u32 * 10);
            for subscriber in 0..3 {
                if (subscriber, id) != (2, 3) {
                    let later = at + subscriber as u32 * MS;
                    window.receive(subscriber, id, later, true, Some(7));
                }
            }
        }
        // Subscriber 1 gets id 4 twice.
        assert_eq!(window.receive(1, 4, start + 60 * MS, true, None), (Receipt::Duplicate, true));
        window.settle_all();
        let tally = &window.tally;
        assert_eq!((tally.ids, tally.owed, tally.delivered), (5, 15, 14));
        assert_eq!((tally.missing, tally.duplicated, tally.late), (1, 1, 0));
        assert_eq!(tally.worst_missing, [SubscriberCount { connection: 2, count: 1 }]);
        assert_eq!(tally.worst_duplicated, [SubscriberCount { connection: 1, count: 1 }]);
        assert_eq!((tally.joined, tally.silent), (3, 0));
        // Two later receipts per id (one for id 3): 1 ms and 2 ms after the first.
        assert_eq!(window.spread.len(), 9);
        assert_eq!(window.spread.max(), 2_000);
        assert_eq!(window.source_latency.len(), 14);
    }

    #[test]
    fn only_ids_first_received_while_a_subscriber_was_joined_are_owed() {
        let start = Instant::now();
        let mut window = Window::new(2);
        window.receive(0, 1, start, true, None);
        // Subscriber 1 joins with id 2; id 1 came before it.
        window.receive(0, 2, start + 10 * MS, true, None);
        window.receive(1, 2, start + 11 * MS, true, None);
        // Its connection ends; id 3 comes after.
        window.left(1, start + 15 * MS);
        window.receive(0, 3, start + 20 * MS, true, None);
        // Warm-up ids are not measured: not owed, not missing.
        window.receive(0, 4, start + 30 * MS, false, None);
        window.settle_all();
        assert_eq!((window.tally.ids, window.tally.owed, window.tally.missing), (3, 4, 0));
        assert_eq!(window.tally.delivered, 4);
    }

    #[test]
    fn a_receipt_after_its_id_settled_is_late_not_new() {
        let start = Instant::now();
        let mut window = Window::new(2);
        window.receive(0, 9, start, true, None);
        window.receive(1, 8, start, true, None);
        window.settle_due(start + SETTLE);
        assert_eq!(window.open_ids(), 0);
        assert_eq!(window.receive(1, 9, start + SETTLE + MS, true, None), (Receipt::Late, true));
        window.settle_all();
        assert_eq!((window.tally.missing, window.tally.late, window.tally.ids), (2, 1, 2));
    }

    #[test]
    fn the_window_stays_bounded_however_long_the_run() {
        let start = Instant::now();
        let subscribers = 1_000_000;
        let mut window = Window::new(subscribers);
        let capacity = (MAX_WINDOW_BITS / subscribers.div_ceil(64) / 64) as usize;
        // A thousand ids a second for an hour would be 3.6 million; the window holds a few.
        for id in 0..(capacity as u64 * 3) {
            window.receive(id % subscribers, id, start + MS * id as u32, true, None);
            assert!(window.open_ids() <= capacity);
        }
        assert_eq!(window.tally.settled_early, capacity as u64 * 2);
        let mut small = Window::new(2);
        for id in 0..(MAX_SETTLED_REMEMBERED as u64 + 10) {
            small.receive(0, id, start, true, None);
            small.settle_due(start + SETTLE);
        }
        assert_eq!(small.settled.len(), MAX_SETTLED_REMEMBERED);
        assert_eq!(small.settled_order.len(), MAX_SETTLED_REMEMBERED);
    }
}
