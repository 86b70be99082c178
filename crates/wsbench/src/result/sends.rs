//! An open loop's ledger: every send its schedule made due, and where each one ended. An
//! open loop asks for a rate whatever the server does; a server that stops reading makes
//! the client hold sends back, a slow one lets them time out, and the run's end finds some
//! still queued. Each of those is a different story, and none may vanish: the ledger puts
//! every due send in exactly one place (answered, refused, timed out after it was sent,
//! given up unsent, unanswered when its connection went or when the run ended, unsent at
//! the end), and achieved ÷ asked (answered ÷ due) says how much of the asked load the
//! server served. Closed loops send when answered and have no ledger.

use serde::{Deserialize, Serialize};

use crate::metrics::Counters;

/// Below this share of the sends due answered, the report warns: a healthy open loop
/// answers every send but the few in flight when the run is cut off (none after its drain).
pub const ACHIEVED_WARNING: f64 = 0.99;

/// Where an open loop's due sends ended: each in exactly one field after `due`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct SendLedger {
    /// Sends the schedule made due (messages).
    pub due: u64,
    /// Answered by a reply matched to them (warm-up, measured window and drain).
    pub answered: u64,
    /// Answered by an error reply.
    pub refused: u64,
    /// In flight (sent, or queued and not yet taken by the socket), and unanswered past
    /// `--reply-timeout`.
    pub timed_out: u64,
    /// Held back unsent (the connection could take no more) until `--reply-timeout` passed.
    pub given_up_unsent: u64,
    /// Sent, and unanswered when their connection went (closed or reset by the server).
    pub lost_with_connection: u64,
    /// Sent, and still unanswered when the run's drain ended.
    pub unanswered_at_end: u64,
    /// Queued or held back, never taken by the socket, when the run ended or the connection
    /// went.
    pub unsent: u64,
    /// `answered` ÷ `due`: how much of the load asked for the server served.
    pub achieved: f64,
}

impl SendLedger {
    /// The ledger of a run's counters (`measured`: the exchanges of its measured window);
    /// `None` for a run whose schedule made no send due (a closed loop).
    pub fn of(counters: &Counters, measured: u64) -> Option<SendLedger> {
        let due = counters.sends_due;
        if due == 0 {
            return None;
        }
        let answered = counters.warmup_messages + measured + counters.answered_after_window;
        Some(SendLedger {
            due,
            answered,
            refused: counters.requests_refused,
            timed_out: counters.reply_timeouts.saturating_sub(counters.reply_timeouts_unsent),
            given_up_unsent: counters.reply_timeouts_unsent,
            lost_with_connection: counters.messages_unanswered.saturating_sub(counters.unanswered_at_end),
            unanswered_at_end: counters.unanswered_at_end,
            unsent: counters.unsent_requests,
            achieved: answered as f64 / due as f64,
        })
    }

    /// The sends the ledger puts somewhere (equal to `due` when every one is accounted for).
    pub fn accounted(&self) -> u64 {
        self.answered
            + self.refused
            + self.timed_out
            + self.given_up_unsent
            + self.lost_with_connection
            + self.unanswered_at_end
            + self.unsent
    }

    /// The warning a report gives when the server answered less than [`ACHIEVED_WARNING`] of
    /// the sends due, naming where the rest went.
    pub fn warning(&self) -> Option<String> {
        if self.achieved >= ACHIEVED_WARNING {
            return None;
        }
        let group = crate::units::format::group;
        let mut rest: Vec<(u64, &str)> = vec![
            (self.given_up_unsent, "held back unsent until the reply timeout (the connections took no more)"),
            (self.unsent, "never sent (still queued or held back at the end)"),
            (self.timed_out, "sent and timed out"),
            (self.unanswered_at_end, "sent and unanswered at the end"),
            (self.lost_with_connection, "sent and lost with their connection"),
            (self.refused, "refused by the server"),
        ];
        rest.retain(|(count, _)| *count > 0);
        rest.sort_by_key(|(count, _)| std::cmp::Reverse(*count));
        let rest: Vec<String> =
            rest.iter().map(|(count, what)| format!("{} {what}", group(*count))).collect();
        Some(format!(
            "achieved ÷ asked is {:.2}: the server answered {} of the {} sends due; {}",
            self.achieved,
            group(self.answered),
            group(self.due),
            rest.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_loop_has_no_ledger() {
        let counters = Counters { messages_sent: 10, warmup_messages: 10, ..Counters::default() };
        assert_eq!(SendLedger::of(&counters, 0), None);
    }

    #[test]
    fn every_due_send_is_in_one_place_and_a_short_fall_is_warned_on_by_its_biggest_cause() {
        let counters = Counters {
            sends_due: 1_000,
            warmup_messages: 100,
            answered_after_window: 10,
            requests_refused: 5,
            reply_timeouts: 300,
            reply_timeouts_unsent: 200,
            messages_unanswered: 30,
            unanswered_at_end: 20,
            unsent_requests: 55,
            ..Counters::default()
        };
        let ledger = SendLedger::of(&counters, 500).unwrap();
        assert_eq!(
            (ledger.answered, ledger.timed_out, ledger.given_up_unsent, ledger.lost_with_connection),
            (610, 100, 200, 10)
        );
        assert_eq!(ledger.accounted(), ledger.due);
        assert!((ledger.achieved - 0.61).abs() < 1e-9);
        let warning = ledger.warning().unwrap();
        assert!(
            warning.starts_with(
                "achieved ÷ asked is 0.61: the server answered 610 of the 1,000 sends due; 200 held back"
            ),
            "{warning}"
        );
        let healthy = Counters { sends_due: 100, warmup_messages: 10, ..Counters::default() };
        assert_eq!(SendLedger::of(&healthy, 90).unwrap().warning(), None);
    }
}
