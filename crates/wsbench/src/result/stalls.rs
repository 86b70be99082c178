//! Stalls: whole seconds in which requests awaited replies and none came. A server that
//! answers for a while and then hangs (without closing), a TCP retransmission timeout after
//! a dropped packet, a client that stopped running: each leaves seconds the rate and the
//! percentiles hide (a second without exchanges records no latency at all), so they are
//! counted here from the run's timeline, which every result carries and merges, and shown
//! beside the errors. A stall is a run of consecutive stalled seconds
//! ([`crate::metrics::TimelineSecond::stalled`]); its length is in whole seconds, the
//! timeline's resolution.

use serde::{Deserialize, Serialize};

use crate::metrics::TimelineSecond;

/// The most stalls kept one by one (the rest are counted, and the longest is always kept).
pub const STALLS_KEPT: usize = 32;

/// The run's stalls, from its timeline.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stalls {
    /// Stalls: runs of consecutive seconds with requests awaited and no exchange.
    pub count: u64,
    /// Seconds stalled in all.
    pub seconds: u64,
    /// The longest stall (the first of equal ones), absent when there was none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub longest: Option<Stall>,
    /// The first [`STALLS_KEPT`] stalls, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub first: Vec<Stall>,
}

/// One stall: from which second of the run, for how many.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stall {
    /// Seconds since the run started when the stall began.
    pub from_s: u64,
    pub seconds: u64,
}

impl Stalls {
    /// The stalls of a timeline (seconds in order; a gap between entries completed nothing
    /// and awaited nothing it could show).
    pub fn of(timeline: &[TimelineSecond]) -> Stalls {
        let mut stalls = Stalls::default();
        let mut current: Option<Stall> = None;
        let mut next_second = None;
        for second in timeline {
            let continues = next_second == Some(second.second);
            next_second = Some(second.second + 1);
            match (second.stalled(), current.as_mut()) {
                (true, Some(stall)) if continues => stall.seconds += 1,
                (true, _) => {
                    stalls.close(current.take());
                    current = Some(Stall { from_s: second.second, seconds: 1 });
                }
                (false, _) => stalls.close(current.take()),
            }
        }
        stalls.close(current);
        stalls
    }

    fn close(&mut self, stall: Option<Stall>) {
        let Some(stall) = stall else { return };
        self.count += 1;
        self.seconds += stall.seconds;
        if self.longest.is_none_or(|longest| stall.seconds > longest.seconds) {
            self.longest = Some(stall);
        }
        if self.first.len() < STALLS_KEPT {
            self.first.push(stall);
        }
    }

    /// The longest stall's length in seconds (0 without one).
    pub fn longest_s(&self) -> u64 {
        self.longest.map_or(0, |stall| stall.seconds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A timeline from `(exchanges, awaiting)` per second from 0.
    fn timeline(seconds: &[(u64, bool)]) -> Vec<TimelineSecond> {
        seconds
            .iter()
            .enumerate()
            .map(|(second, &(exchanges, awaiting))| TimelineSecond {
                second: second as u64,
                exchanges,
                awaiting,
                ..TimelineSecond::default()
            })
            .collect()
    }

    #[test]
    fn consecutive_seconds_awaiting_with_no_exchange_are_one_stall() {
        let stalls = Stalls::of(&timeline(&[
            (0, false), // nothing sent yet: idle, not stalled
            (5, true),
            (0, true),
            (0, true),
            (0, true),
            (9, true),
            (0, true),
            (7, false),
        ]));
        assert_eq!(stalls.count, 2);
        assert_eq!(stalls.seconds, 4);
        assert_eq!(stalls.longest, Some(Stall { from_s: 2, seconds: 3 }));
        assert_eq!(stalls.first, [Stall { from_s: 2, seconds: 3 }, Stall { from_s: 6, seconds: 1 }]);
        assert_eq!(stalls.longest_s(), 3);
    }

    #[test]
    fn a_healthy_or_idle_timeline_has_no_stall() {
        let stalls = Stalls::of(&timeline(&[(3, true), (4, true), (0, false), (0, false)]));
        assert_eq!(stalls, Stalls::default());
        assert_eq!(stalls.longest_s(), 0);
        assert_eq!(Stalls::of(&[]), Stalls::default());
    }

    #[test]
    fn a_gap_in_the_timeline_ends_a_stall_and_past_the_kept_ones_they_are_still_counted() {
        let mut seconds = timeline(&[(0, true), (0, true)]);
        seconds[1].second = 5;
        let stalls = Stalls::of(&seconds);
        assert_eq!(stalls.count, 2, "{stalls:?}");
        let many: Vec<(u64, bool)> = (0..200).map(|i| (i % 2, true)).collect();
        let stalls = Stalls::of(&timeline(&many));
        assert_eq!(stalls.count, 100);
        assert_eq!(stalls.first.len(), STALLS_KEPT);
        assert_eq!(stalls.longest, Some(Stall { from_s: 0, seconds: 1 }));
    }
}
