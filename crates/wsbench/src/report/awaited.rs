//! What a run asked for and did not get, as report lines: its stalls (seconds with replies
//! awaited and none coming), an open loop's ledger of sends due (achieved ÷ asked, and where
//! the rest went), and what the drain at the end left unanswered. Each renderer that prints
//! the run's errors prints these beside them, so a run that looks healthy by its rate and
//! percentiles cannot hide a hang or a schedule the server never served.

use crate::result::RunResult;
use crate::units::format::{group, seconds};

/// The `stalls:` and `sends:` lines, when the run had stalls or an open loop.
pub fn awaited_lines(result: &RunResult) -> Vec<(&'static str, String)> {
    let mut lines = Vec::new();
    if let Some(text) = stalls_text(result) {
        lines.push(("stalls:", text));
    }
    if let Some(ledger) = &result.summary.sends {
        let mut parts = vec![format!("{} answered", group(ledger.answered))];
        let rest = [
            (ledger.refused, "refused"),
            (ledger.timed_out, "timed out"),
            (ledger.given_up_unsent, "held back and given up"),
            (ledger.lost_with_connection, "lost with their connection"),
            (ledger.unanswered_at_end, "unanswered at the end"),
            (ledger.unsent, "unsent at the end"),
        ];
        parts.extend(rest.iter().filter(|(n, _)| *n > 0).map(|(n, what)| format!("{} {what}", group(*n))));
        let text = format!(
            "{} due, achieved ÷ asked {:.2}: {}",
            group(ledger.due),
            ledger.achieved,
            parts.join(", ")
        );
        lines.push(("sends:", text));
    }
    lines
}

/// `2 (5 s in all; longest 3 s, from 4 s into the run)`, when the run stalled.
pub fn stalls_text(result: &RunResult) -> Option<String> {
    let stalls = &result.summary.stalls;
    let longest = stalls.longest?;
    let when = match stalls.count {
        1 => format!("{}, from {} into the run", whole(longest.seconds), whole(longest.from_s)),
        _ => format!(
            "{} in all; longest {}, from {} into the run",
            whole(stalls.seconds),
            whole(longest.seconds),
            whole(longest.from_s)
        ),
    };
    Some(format!("{} ({when}): whole seconds with replies awaited and none received", group(stalls.count)))
}

/// What follows "N unanswered" on the messages line: how many the drain left awaited, and
/// how long it waited.
pub fn unanswered_note(result: &RunResult) -> String {
    match result.counters.unanswered_at_end {
        0 => String::new(),
        n => format!(
            " ({} {} still awaited when the {} drain at the end ran out)",
            group(n),
            if n == 1 { "was" } else { "were" },
            seconds(result.drain_s)
        ),
    }
}

/// A whole number of seconds: `3 s`.
fn whole(seconds: u64) -> String {
    format!("{} s", group(seconds))
}

/// The warnings these figures give: achieved ÷ asked below
/// [`crate::result::ACHIEVED_WARNING`].
pub fn warnings(result: &RunResult) -> Vec<String> {
    result.summary.sends.iter().filter_map(|ledger| ledger.warning()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;
    use crate::result::{SendLedger, Stall, Stalls};

    #[test]
    fn a_healthy_closed_loop_adds_nothing() {
        let result = RunResult::from_outcome(&fixture::closed_loop());
        assert!(awaited_lines(&result).is_empty());
        assert_eq!(unanswered_note(&result), "");
        assert!(warnings(&result).is_empty());
    }

    #[test]
    fn stalls_the_ledger_and_the_drain_are_each_one_line() {
        let mut result = RunResult::from_outcome(&fixture::closed_loop());
        result.summary.stalls = Stalls {
            count: 2,
            seconds: 5,
            longest: Some(Stall { from_s: 4, seconds: 3 }),
            first: vec![Stall { from_s: 4, seconds: 3 }, Stall { from_s: 9, seconds: 2 }],
        };
        result.summary.sends = Some(SendLedger {
            due: 160_000,
            answered: 0,
            unanswered_at_end: 10_328,
            given_up_unsent: 97_849,
            unsent: 51_823,
            ..SendLedger::default()
        });
        result.counters.unanswered_at_end = 20;
        result.drain_s = 5.0;
        let lines = awaited_lines(&result);
        assert_eq!(
            lines[0],
            (
                "stalls:",
                "2 (5 s in all; longest 3 s, from 4 s into the run): whole seconds with replies awaited and none received"
                    .to_owned()
            )
        );
        assert_eq!(
            lines[1].1,
            "160,000 due, achieved ÷ asked 0.00: 0 answered, 97,849 held back and given up, 10,328 unanswered at the end, 51,823 unsent at the end"
        );
        assert_eq!(
            unanswered_note(&result),
            " (20 were still awaited when the 5.00 s drain at the end ran out)"
        );
        assert_eq!(warnings(&result).len(), 1);
    }
}
