//! A worker's lost connections and when each is to be reopened (`--reconnect`): every
//! connection down is an [`Outage`] from the instant it was lost until it is open again,
//! with its attempts so far; the next attempt falls due after the pause the policy gives for
//! it ([`ReconnectPolicy::delay`]), and no sooner than the server asked (a 503's
//! `Retry-After`, a close with 1013 "Try Again Later"). Time is passed in, never read here,
//! so the schedule is tested deterministically. Memory is one entry per connection down.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::time::{Duration, Instant};

use crate::config::ReconnectPolicy;

/// A close with 1013 "Try Again Later" holds the next attempt back this long at least.
pub const TRY_AGAIN_LATER: Duration = Duration::from_secs(1);
/// The longest a server's `Retry-After` holds an attempt back (a larger one is taken as this).
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(120);

/// One connection down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outage {
    /// When it was lost (or its first attempt failed).
    pub lost_at: Instant,
    /// Attempts to reopen it made or scheduled (the one in progress or due included).
    pub attempts: u32,
    /// The pause before the last attempt.
    previous: Duration,
    /// The next attempt may not start before this (the server said so).
    not_before: Option<Instant>,
}

/// The connections of a worker being reopened.
#[derive(Debug, Default)]
pub struct Reconnects {
    policy: Option<ReconnectPolicy>,
    due: BinaryHeap<Reverse<(Instant, u64)>>,
    outages: HashMap<u64, Outage>,
    /// Connections the policy gave up (their outage stays: they never came back).
    given_up: u64,
}

impl Reconnects {
    pub fn new(policy: Option<ReconnectPolicy>) -> Reconnects {
        Reconnects { policy, ..Reconnects::default() }
    }

    /// Whether lost connections are reopened at all.
    pub fn enabled(&self) -> bool {
        self.policy.is_some()
    }

    /// Connection `index` was lost, or its attempt failed, at `now`: its next attempt is
    /// scheduled by the policy. Returns false when the policy gives it up (or there is none).
    pub fn lost(&mut self, index: u64, now: Instant) -> bool {
        let Some(policy) = &self.policy else { return false };
        let outage = self.outages.entry(index).or_insert(Outage {
            lost_at: now,
            attempts: 0,
            previous: Duration::ZERO,
            not_before: None,
        });
        let Some(pause) = policy.delay(outage.attempts + 1, index, outage.previous) else {
            self.given_up += 1;
            return false;
        };
        outage.attempts += 1;
        outage.previous = pause;
        let due = (now + pause).max(outage.not_before.take().unwrap_or(now));
        self.due.push(Reverse((due, index)));
        true
    }

    /// The server asked connection `index` to come back no sooner than `at` (before its loss
    /// is counted with [`Reconnects::lost`]).
    pub fn not_before(&mut self, index: u64, at: Instant, now: Instant) {
        if self.policy.is_none() {
            return;
        }
        let outage = self.outages.entry(index).or_insert(Outage {
            lost_at: now,
            attempts: 0,
            previous: Duration::ZERO,
            not_before: None,
        });
        outage.not_before = Some(outage.not_before.map_or(at, |earlier| earlier.max(at)));
    }

    /// Connection `index` is open again: its outage, if it had one (the next loss starts
    /// the policy from its first pause again).
    pub fn reopened(&mut self, index: u64) -> Option<Outage> {
        self.outages.remove(&index)
    }

    /// The next connection to reopen, if it is due by `now`.
    pub fn pop_due(&mut self, now: Instant) -> Option<u64> {
        match self.due.peek() {
            Some(&Reverse((due, index))) if due <= now => {
                self.due.pop();
                Some(index)
            }
            _ => None,
        }
    }

    /// When the next reopening is due.
    pub fn next_due(&self) -> Option<Instant> {
        self.due.peek().map(|&Reverse((due, _))| due)
    }

    /// Connections down now (given up ones included).
    pub fn down(&self) -> usize {
        self.outages.len()
    }

    /// Connections the policy gave up so far.
    pub fn given_up(&self) -> u64 {
        self.given_up
    }

    /// Every connection still down, with its outage.
    pub fn outages(&self) -> impl Iterator<Item = (&u64, &Outage)> {
        self.outages.iter()
    }

    /// The attempts the outages of `indexes` have made so far: those scheduled, less those
    /// still waiting for their time.
    pub fn attempts_made(&self, indexes: &[u64]) -> u64 {
        let waiting: std::collections::HashSet<u64> =
            self.due.iter().map(|Reverse((_, index))| *index).collect();
        let made = |index: &u64| {
            let scheduled = self.outages.get(index).map_or(0, |outage| u64::from(outage.attempts));
            scheduled.saturating_sub(u64::from(waiting.contains(index)))
        };
        indexes.iter().map(made).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn reconnects(policy: &str) -> Reconnects {
        Reconnects::new(Some(ReconnectPolicy::parse(policy).unwrap()))
    }

    /// Attempts to reopen connection `index` while the server is down for `down` (each one
    /// refused at once).
    fn attempts_while_down(reconnects: &mut Reconnects, index: u64, start: Instant, down: Duration) -> u32 {
        let mut attempts = 0;
        let mut now = start;
        reconnects.lost(index, now);
        while let Some(due) = reconnects.next_due() {
            now = due;
            if now >= start + down {
                break;
            }
            assert_eq!(reconnects.pop_due(now), Some(index));
            attempts += 1;
            reconnects.lost(index, now);
        }
        attempts
    }

    #[test]
    fn a_server_that_is_down_is_retried_ever_less_often_and_each_connection_apart() {
        let start = Instant::now();
        let mut pacer = reconnects("wsbench");
        // A fixed 100 ms would make 100 attempts per connection in 10 s; doubling (0.1, 0.2,
        // … 3.2 s, then 5 s apart, each up to as long again) makes 4 to 7.
        let attempts = attempts_while_down(&mut pacer, 7, start, Duration::from_secs(10));
        assert!((4..=7).contains(&attempts), "{attempts} attempts");
        // Back up: the next loss starts from the shortest pause again.
        let outage = pacer.reopened(7).unwrap();
        assert_eq!(outage.lost_at, start);
        assert_eq!(outage.attempts, attempts + 1);
        let mut pacer = reconnects("wsbench");
        for index in 0..1000 {
            pacer.lost(index, start);
        }
        let dues: Vec<Duration> = pacer.due.iter().map(|Reverse((due, _))| *due - start).collect();
        let in_first_ten_ms = dues.iter().filter(|d| **d < 110 * MS).count();
        assert!(in_first_ten_ms < 150, "{in_first_ten_ms} of 1,000 in the same 10 ms");
        assert!(dues.iter().all(|d| *d >= 100 * MS && *d < 200 * MS));
    }

    #[test]
    fn immediate_makes_as_many_attempts_as_the_server_refuses_and_the_back_off_far_fewer() {
        let start = Instant::now();
        let mut immediate = reconnects("immediate");
        // Each refused attempt is scheduled at once: the caller's loop is the only pace.
        immediate.lost(1, start);
        assert_eq!(immediate.next_due(), Some(start));
        let mut backoff = reconnects("exponential:base=100ms,cap=2s,jitter=full");
        let attempts = attempts_while_down(&mut backoff, 1, start, Duration::from_secs(3));
        assert!((1..=12).contains(&attempts), "{attempts}");
    }

    #[test]
    fn the_server_holding_a_connection_back_is_honoured_and_a_policy_that_gives_up_is_counted() {
        let start = Instant::now();
        let mut pacer = reconnects("immediate");
        pacer.not_before(4, start + Duration::from_secs(3), start);
        pacer.lost(4, start);
        assert_eq!(pacer.next_due(), Some(start + Duration::from_secs(3)));
        // Only the next attempt is held back.
        assert_eq!(pacer.pop_due(start + Duration::from_secs(3)), Some(4));
        pacer.lost(4, start + Duration::from_secs(3));
        assert_eq!(pacer.next_due(), Some(start + Duration::from_secs(3)));

        let mut signalr = reconnects("signalr");
        let mut now = start;
        for _ in 0..4 {
            assert!(signalr.lost(9, now));
            now = signalr.next_due().unwrap();
            assert_eq!(signalr.pop_due(now), Some(9));
        }
        assert!(!signalr.lost(9, now), "the fifth loss is given up");
        assert_eq!((signalr.given_up(), signalr.down(), signalr.next_due()), (1, 1, None));
        assert!(!Reconnects::new(None).lost(1, start), "no policy, no reconnection");
    }
}
