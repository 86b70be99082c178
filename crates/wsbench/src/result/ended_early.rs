//! Why a run ended before its measured window did: no connection was left. The reason says
//! who ended the connections, from the counters, never guessed: the server (its close frames,
//! its resets, its transport ending them), or wsbench itself, which fails a connection when
//! the server breaks RFC 6455 or sends past a limit of the run (each cause counted), or when
//! the message protocol's error is fatal; a mix is counted part by part. It must never blame
//! the server for closes wsbench made.

use serde::{Deserialize, Serialize};

use crate::metrics::Counters;

/// Why and when a run ended before its measured window did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EndedEarly {
    /// In words: `no connection could be opened`, or `no connection left (…)` saying who
    /// ended them: `the server closed or reset every one`, `wsbench closed every one because
    /// the server broke RFC 6455: protocol_error_1002_masked_server_frame 10`, or each part
    /// counted.
    pub reason: String,
    /// The measured window the run was to have, s (`measured_s` is what it had).
    pub planned_measured_s: f64,
}

impl EndedEarly {
    /// A run that was to measure `planned_s`, with `counters` saying how its connections
    /// ended.
    pub fn new(planned_s: f64, counters: &Counters) -> EndedEarly {
        let reason = match counters.connections_established {
            0 => "no connection could be opened".to_owned(),
            _ => match who_ended(counters) {
                Some(who) => format!("no connection left ({who})"),
                None => "no connection left".to_owned(),
            },
        };
        EndedEarly { reason, planned_measured_s: planned_s }
    }
}

/// Who ended the connections, each part with its count, or "every one" when one party
/// ended them all; `None` when the counters name nobody (a file written before they did).
fn who_ended(counters: &Counters) -> Option<String> {
    let by_server = counters.disconnections() + counters.transport_errors_by_cause.values().sum::<u64>();
    let failed: u64 = counters.framing_errors_by_cause.values().sum();
    let mut parts = Vec::new();
    if by_server > 0 {
        parts.push((by_server, "the server closed or reset".to_owned(), String::new()));
    }
    if failed > 0 {
        let causes: Vec<String> =
            counters.framing_errors_by_cause.iter().map(|(cause, n)| format!("{cause} {n}")).collect();
        let rule = failure_kind(counters.framing_errors_by_cause.keys());
        let why = format!(" because the server {rule}: {}", causes.join(", "));
        parts.push((failed, "wsbench closed".to_owned(), why));
    }
    if counters.closed_on_protocol_error > 0 {
        let why = " after a fatal error of the message protocol".to_owned();
        parts.push((counters.closed_on_protocol_error, "wsbench closed".to_owned(), why));
    }
    match parts.as_slice() {
        [] => None,
        [(_, who, why)] => Some(format!("{who} every one{why}")),
        _ => Some(parts.iter().map(|(n, who, why)| format!("{who} {n}{why}")).collect::<Vec<_>>().join("; ")),
    }
}

/// What the server did that made wsbench fail connections, by the close codes of the
/// `causes` (`protocol_error_CODE_RULE`): 1009 is a message past a limit of the run
/// (`--max-message`, `--max-message-memory`), every other code a rule of RFC 6455 broken.
fn failure_kind<'a>(causes: impl Iterator<Item = &'a String>) -> &'static str {
    let (mut limit, mut rule) = (false, false);
    for cause in causes {
        match cause.starts_with("protocol_error_1009_") {
            true => limit = true,
            false => rule = true,
        }
    }
    match (rule, limit) {
        (true, true) => "broke RFC 6455 or sent past a limit of this run",
        (false, true) => "sent past a limit of this run",
        _ => "broke RFC 6455",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn established(n: u64) -> Counters {
        Counters { connections_established: n, ..Counters::default() }
    }

    #[test]
    fn a_run_that_opened_nothing_says_so() {
        assert_eq!(EndedEarly::new(5.0, &established(0)).reason, "no connection could be opened");
    }

    #[test]
    fn connections_the_server_closed_or_reset_are_the_servers() {
        let mut counters = established(10);
        counters.closed_by_server.insert(1001, 4);
        counters.resets = 6;
        let early = EndedEarly::new(30.0, &counters);
        assert_eq!(early.reason, "no connection left (the server closed or reset every one)");
        assert_eq!(early.planned_measured_s, 30.0);
    }

    #[test]
    fn connections_wsbench_failed_for_a_message_too_big_name_the_limit_not_the_server_closing() {
        let mut counters = established(30);
        counters.framing_errors_by_cause.insert("protocol_error_1009_message_too_big".into(), 30);
        assert_eq!(
            EndedEarly::new(3.0, &counters).reason,
            "no connection left (wsbench closed every one because the server sent past a limit of \
             this run: protocol_error_1009_message_too_big 30)"
        );
    }

    #[test]
    fn connections_wsbench_failed_for_broken_rules_name_each_cause() {
        let mut counters = established(10);
        counters.framing_errors_by_cause.insert("protocol_error_1002_masked_server_frame".into(), 6);
        counters.framing_errors_by_cause.insert("protocol_error_1007_invalid_utf8".into(), 4);
        assert_eq!(
            EndedEarly::new(3.0, &counters).reason,
            "no connection left (wsbench closed every one because the server broke RFC 6455: \
             protocol_error_1002_masked_server_frame 6, protocol_error_1007_invalid_utf8 4)"
        );
    }

    #[test]
    fn a_mix_counts_each_part() {
        let mut counters = established(10);
        counters.closed_by_server.insert(1001, 3);
        counters.transport_errors_by_cause.insert("h2_rst_2".into(), 1);
        counters.framing_errors_by_cause.insert("protocol_error_1002_masked_server_frame".into(), 2);
        counters.framing_errors_by_cause.insert("protocol_error_1009_message_too_big".into(), 2);
        counters.closed_on_protocol_error = 2;
        assert_eq!(
            EndedEarly::new(3.0, &counters).reason,
            "no connection left (the server closed or reset 4; wsbench closed 4 because the server \
             broke RFC 6455 or sent past a limit of this run: protocol_error_1002_masked_server_frame \
             2, protocol_error_1009_message_too_big 2; wsbench closed 2 after a fatal error of the \
             message protocol)"
        );
    }

    #[test]
    fn counters_that_name_nobody_blame_nobody() {
        assert_eq!(EndedEarly::new(3.0, &established(2)).reason, "no connection left");
    }
}
