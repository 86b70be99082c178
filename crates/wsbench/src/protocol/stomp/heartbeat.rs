//! STOMP heart-beats as CONNECT and CONNECTED agree on them, and when each side's is due.
//! The client must send something at least every agreed interval: it looks every half
//! interval whether it sent anything since it last looked, and sends an end of line when it
//! did not (RabbitMQ's own sender works the same way), so no gap exceeds the interval. The
//! server may stay silent twice its agreed interval; longer, and it is gone. Pure: the
//! session hands in the times.

use std::time::{Duration, Instant};

/// The heart-beats of one connection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct HeartBeats {
    /// Half the client's interval, and when the client next looks whether it sent anything.
    send_check: Option<(Duration, Instant)>,
    /// Something went out since the client last looked.
    sent_since_check: bool,
    /// How long the server may stay silent, and when it last said anything.
    silence: Option<(Duration, Instant)>,
}

/// What is due when the session's timer comes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Due {
    Nothing,
    /// The client sends a heart-beat.
    Beat,
    /// The server was silent too long (how long it was allowed).
    Missed(Duration),
}

impl HeartBeats {
    /// The heart-beats CONNECT `asked` for (cx, cy, ms) and CONNECTED `offered` (sx, sy),
    /// as STOMP 1.2 negotiates them: the client sends every max(cx, sy) unless either is 0,
    /// and hears the server every max(sx, cy) unless either is 0.
    pub fn agreed(asked: (u32, u32), offered: (u32, u32), now: Instant) -> HeartBeats {
        let interval = |ours: u32, theirs: u32| {
            (ours != 0 && theirs != 0).then(|| Duration::from_millis(u64::from(ours.max(theirs))))
        };
        HeartBeats {
            send_check: interval(asked.0, offered.1).map(|every| (every / 2, now + every / 2)),
            sent_since_check: false,
            silence: interval(offered.0, asked.1).map(|every| (every * 2, now)),
        }
    }

    /// The client sent a frame or a heart-beat.
    pub fn sent(&mut self) {
        self.sent_since_check = true;
    }

    /// The server sent something.
    pub fn heard(&mut self, now: Instant) {
        if let Some((_, last)) = self.silence.as_mut() {
            *last = now;
        }
    }

    /// When the next heart-beat is to be sent or had.
    pub fn next(&self) -> Option<Instant> {
        let check = self.send_check.map(|(_, at)| at);
        let deadline = self.silence.map(|(allowed, last)| last + allowed);
        match (check, deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The timer came at `now`: what is due (a miss stops every later timer).
    pub fn due(&mut self, now: Instant) -> Due {
        if let Some((allowed, last)) = self.silence
            && now >= last + allowed
        {
            *self = HeartBeats::default();
            return Due::Missed(allowed);
        }
        let Some((half, at)) = self.send_check.as_mut() else { return Due::Nothing };
        if now < *at {
            return Due::Nothing;
        }
        *at = now + *half;
        match std::mem::take(&mut self.sent_since_check) {
            true => Due::Nothing,
            false => Due::Beat,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn the_larger_of_each_pair_wins_and_a_zero_turns_a_direction_off() {
        let now = Instant::now();
        let beats = HeartBeats::agreed((1000, 2000), (3000, 500), now);
        assert_eq!(beats.send_check, Some((500 * MS, now + 500 * MS)));
        assert_eq!(beats.silence, Some((6000 * MS, now)));
        let none = HeartBeats::agreed((1000, 1000), (0, 0), now);
        assert_eq!((none.send_check, none.silence, none.next()), (None, None, None));
        let only_ours = HeartBeats::agreed((1000, 0), (1000, 1000), now);
        assert_eq!((only_ours.silence, only_ours.next()), (None, Some(now + 500 * MS)));
    }

    #[test]
    fn a_beat_goes_out_only_after_half_an_interval_with_nothing_sent() {
        let start = Instant::now();
        let mut beats = HeartBeats::agreed((1000, 0), (0, 1000), start);
        assert_eq!(beats.due(start + 100 * MS), Due::Nothing, "not yet due");
        beats.sent();
        assert_eq!(beats.due(start + 500 * MS), Due::Nothing, "a frame went out");
        assert_eq!(beats.next(), Some(start + 1000 * MS));
        assert_eq!(beats.due(start + 1000 * MS), Due::Beat);
        assert_eq!(beats.next(), Some(start + 1500 * MS));
    }

    #[test]
    fn a_server_silent_for_twice_its_interval_is_missed_once() {
        let start = Instant::now();
        let mut beats = HeartBeats::agreed((0, 1000), (1000, 0), start);
        assert_eq!(beats.next(), Some(start + 2000 * MS));
        beats.heard(start + 1500 * MS);
        assert_eq!(beats.due(start + 2000 * MS), Due::Nothing);
        assert_eq!(beats.next(), Some(start + 3500 * MS));
        assert_eq!(beats.due(start + 3500 * MS), Due::Missed(2000 * MS));
        assert_eq!(beats.next(), None, "nothing more is due once the server is gone");
    }
}
