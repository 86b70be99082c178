//! The rule that a run which asked and was never answered failed, whatever else it counted:
//! a server that takes the connections and then says nothing must not pass a CI gate with
//! every request merely "unanswered". It judges the run's counts, never a scenario by name:
//! a run whose requests await replies (the echo loop's, a flow's tracked sends, ping's
//! pings) and that completed no exchange at all (round trip, matched reply, pong, delivery),
//! or none in the measured window it had (a server that answered the warm-up and then
//! hung), gets the error kind [`NO_REQUEST_ANSWERED`], counted once; a run that awaited
//! nothing (scalability, a flow that only sends) is not judged by it.

use crate::metrics::Metrics;

/// The error kind of a run whose requests were none of them answered.
pub const NO_REQUEST_ANSWERED: &str = "no_request_answered";

/// The measured window of a run: how long it was, and the exchanges completed in it.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    pub seconds: f64,
    pub exchanges: u64,
}

/// Whether the run awaited replies and completed no exchange in all, or none in its
/// measured window (when it had one).
pub fn none_answered(metrics: &Metrics, window: Window) -> bool {
    let counters = &metrics.counters;
    let awaited = counters.messages_unanswered.saturating_add(counters.reply_timeouts);
    let none_at_all = metrics.timeline.iter().all(|second| second.exchanges == 0);
    let none_measured = window.seconds > 0.0 && window.exchanges == 0;
    awaited > 0 && (none_at_all || none_measured)
}

/// Why a result has [`NO_REQUEST_ANSWERED`], in one line (None if it has not).
pub fn reason(result: &super::RunResult) -> Option<String> {
    result.summary.errors.get(NO_REQUEST_ANSWERED)?;
    let counters = &result.counters;
    let (timed_out, unanswered) = (counters.reply_timeouts, counters.messages_unanswered);
    let group = crate::units::format::group;
    let deadline = result.config.get("reply_timeout").and_then(|secs| secs.as_f64());
    let past = match deadline {
        Some(secs) => format!("past the {} reply timeout", crate::units::format::seconds(secs)),
        None => "past the reply timeout".to_owned(),
    };
    let answered: u64 = result.timeline.iter().map(|second| second.exchanges).sum();
    let when = match answered {
        0 => String::new(),
        _ => format!(
            " in the {} measured window ({} outside it)",
            crate::units::format::seconds(result.measured_s),
            group(answered)
        ),
    };
    Some(format!(
        "no request was answered{when}: of {} requests, {} went {past} and {} were still awaited at the end",
        group(timed_out.saturating_add(unanswered)),
        group(timed_out),
        group(unanswered)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::TimelineSecond;

    fn metrics(unanswered: u64, timed_out: u64, exchanges: &[u64]) -> Metrics {
        let mut metrics = Metrics::default();
        metrics.counters.messages_unanswered = unanswered;
        metrics.counters.reply_timeouts = timed_out;
        metrics.timeline = exchanges
            .iter()
            .enumerate()
            .map(|(second, &exchanges)| TimelineSecond {
                second: second as u64,
                exchanges,
                ..Default::default()
            })
            .collect();
        metrics
    }

    const NO_WINDOW: Window = Window { seconds: 0.0, exchanges: 0 };

    #[test]
    fn requests_awaited_and_no_exchange_in_any_second_is_none_answered() {
        assert!(none_answered(&metrics(5, 0, &[0, 0, 0]), NO_WINDOW));
        assert!(none_answered(&metrics(0, 7, &[0, 0]), NO_WINDOW));
        assert!(none_answered(&metrics(1, 1, &[]), NO_WINDOW));
    }

    #[test]
    fn exchanges_outside_a_measured_window_that_completed_none_do_not_save_it() {
        let warmed_up_then_hung = metrics(5, 3, &[0, 1, 0]);
        assert!(none_answered(&warmed_up_then_hung, Window { seconds: 2.0, exchanges: 0 }));
        assert!(!none_answered(&warmed_up_then_hung, Window { seconds: 2.0, exchanges: 1 }));
        assert!(
            !none_answered(&warmed_up_then_hung, NO_WINDOW),
            "an interrupted run without a window is judged by its exchanges"
        );
    }

    #[test]
    fn nothing_awaited_is_not_none_answered() {
        let scalability = metrics(0, 0, &[0, 0]);
        assert!(!none_answered(&scalability, Window { seconds: 2.0, exchanges: 0 }));
    }
}
