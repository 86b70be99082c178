//! The rule that a run which asked and was never answered failed, whatever else it counted:
//! a server that takes the connections and then says nothing must not pass a CI gate with
//! every request merely "unanswered". It judges the run's counts as a whole (every second
//! of the timeline, warm-up included), never a scenario by name: a run whose requests await
//! replies (the echo loop's, a flow's tracked sends, ping's pings) and that completed no
//! exchange at all (round trip, matched reply, pong, delivery) gets the error kind
//! [`NO_REQUEST_ANSWERED`], counted once; a run that awaited nothing (scalability, a flow
//! that only sends) is not judged by it.

use crate::metrics::Metrics;

/// The error kind of a run whose requests were none of them answered.
pub const NO_REQUEST_ANSWERED: &str = "no_request_answered";

/// Whether the run awaited replies and completed no exchange in all.
pub fn none_answered(metrics: &Metrics) -> bool {
    let counters = &metrics.counters;
    let awaited = counters.messages_unanswered.saturating_add(counters.reply_timeouts);
    awaited > 0 && metrics.timeline.iter().all(|second| second.exchanges == 0)
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
    Some(format!(
        "no request was answered: of {} requests, {} went {past} and {} were still awaited at the end",
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

    #[test]
    fn requests_awaited_and_no_exchange_in_any_second_is_none_answered() {
        assert!(none_answered(&metrics(5, 0, &[0, 0, 0])));
        assert!(none_answered(&metrics(0, 7, &[0, 0])));
        assert!(none_answered(&metrics(1, 1, &[])));
    }

    #[test]
    fn one_exchange_in_any_second_or_nothing_awaited_is_not() {
        assert!(!none_answered(&metrics(5, 3, &[0, 1, 0])), "a warm-up or late second counts too");
        assert!(!none_answered(&metrics(0, 0, &[0, 0])), "a run that awaited nothing (scalability)");
    }
}
