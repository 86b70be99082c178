//! Tests of text.rs.
use super::*;
use crate::fixture;

fn report(outcome: crate::samples::RunOutcome, color: bool) -> String {
    render_text_with(&RunResult::from_outcome(&outcome), color)
}

#[test]
fn plain_report_has_no_escape_codes() {
    for (_, outcome) in fixture::all() {
        assert!(!report(outcome, false).contains('\x1b'));
    }
}

#[test]
fn color_report_highlights_warning_errors_and_interruption() {
    let text = report(fixture::open_loop_troubled(), true);
    assert!(text.contains("\x1b[1;33mWARNING: worker w0 used 97% of a core"), "{text}");
    assert!(text.contains("\x1b[1;31m[INTERRUPTED: partial results]\x1b[0m"), "{text}");
    assert!(text.contains("errors:       \x1b[1;31mclosed_1001 4"), "{text}");
    assert_eq!(
        text.replace("\x1b[1;33m", "")
            .replace("\x1b[1;31m", "")
            .replace("\x1b[1m", "")
            .replace("\x1b[0m", ""),
        { report(fixture::open_loop_troubled(), false) }
    );
}

#[test]
fn errors_show_what_the_server_said() {
    let mut result = RunResult::from_outcome(&fixture::open_loop_troubled());
    result.counters.close_reasons.insert(1001, "Going away".into());
    result.summary.errors.insert("graphql_error".into(), 2);
    let detail = format!("Cannot query field \"nope\"{}", " on type".repeat(20));
    result.counters.protocol_error_details.insert("graphql_error".into(), detail);
    let text = render_text_with(&result, false);
    assert!(text.contains(r#"closed_1001 4 ("Going away")"#), "{text}");
    let shown = r#"graphql_error 2 ("Cannot query field \"nope\" on type on type"#;
    assert!(text.contains(shown), "{text}");
    assert!(text.contains("…\")"), "long words are shortened: {text}");
}

#[test]
fn thresholds_show_one_line_each_with_the_value_measured() {
    let mut result = RunResult::from_outcome(&fixture::closed_loop());
    result.summary.latency_us.p99 = 1_500;
    let thresholds: Vec<crate::config::Threshold> =
        ["p99<1ms", "errors==0", "echoes_per_sec>1"].iter().map(|t| t.parse().unwrap()).collect();
    result.summary.thresholds = crate::thresholds::judge(&thresholds, &result);
    let text = render_text(&result);
    assert!(text.contains("thresholds:   ✗ FAILED  p99<1ms  (measured 1.50 ms)\n"), "{text}");
    assert!(text.contains("\n              ✓ passed  errors==0  (measured 0)\n"), "{text}");
    assert!(text.contains("✓ passed  echoes_per_sec>1  (measured "), "{text}");
    assert!(!report(fixture::closed_loop(), false).contains("thresholds:"));
}

#[test]
fn uncorrected_latency_shown_only_when_it_differs() {
    assert!(!report(fixture::closed_loop(), false).contains("uncorrected"));
    assert!(report(fixture::open_loop_troubled(), false).contains("\nuncorrected   "));
}

#[test]
fn client_bound_warning_only_when_bound() {
    assert!(!report(fixture::closed_loop(), false).contains("WARNING"));
    let text = report(fixture::open_loop_troubled(), false);
    assert!(text.contains("\nWARNING: worker w0 used 97% of a core"), "{text}");
}

#[test]
fn many_server_processes_and_shards_are_summed_up_not_listed() {
    let mut result = RunResult::from_outcome(&fixture::closed_loop());
    result.server.pids = (100..161).collect();
    let shard = |index: u64| crate::result::ShardSummary {
        file: format!("shard-{index}.json"),
        host: format!("pod-{index}"),
        shard: Some(format!("{index}/60")),
        started_at_unix_ms: 0,
        interrupted: false,
        died: None,
        connections_established: 10,
        exchanges_per_sec: 1_000.0 + index as f64,
        server: result.server.clone(),
        client: result.client.clone(),
    };
    result.shards = (0..60).map(shard).collect();
    let text = render_text_with(&result, false);
    assert!(text.contains("(61 processes, pid 100 … 160, spawned)"), "{text}");
    assert!(text.contains("shards:       60 merged (on pod-0, pod-1, "), "{text}");
    assert!(text.contains(", … (60 hosts)), round trips/s 1,000 to 1,059 per shard\n"), "{text}");
    result.server.pids = vec![7, 8];
    result.shards.truncate(2);
    let text = render_text_with(&result, false);
    assert!(text.contains("(pid 7, 8, spawned)"), "{text}");
    assert!(text.contains("merged (on pod-0, pod-1), round trips/s 1,000 + 1,001\n"), "{text}");
}

#[test]
fn long_warnings_wrap_under_their_label() {
    let lines = wrap("WARNING: aaa bbb ccc ddd", 12, "  ");
    assert_eq!(lines, ["WARNING: aaa", "  bbb ccc", "  ddd"]);
}

#[test]
fn the_transport_line_gives_quic_packets_lost_of_sent_only_over_quic() {
    let mut result = RunResult::from_outcome(&fixture::closed_loop());
    let transport = &mut result.summary.transport;
    transport.name = "http3".into();
    transport.streams_per_connection = 100;
    transport.quic_connections = 10;
    transport.quic_packets_sent = 28_067;
    transport.quic_packets_lost = 1_085;
    let text = render_text_with(&result, false);
    assert!(
        text.contains("10 QUIC connections carried them; QUIC packets: 1,085 lost of 28,067 sent (3.9 %)\n"),
        "{text}"
    );
    let transport = &mut result.summary.transport;
    transport.name = "http2".into();
    transport.quic_connections = 0;
    transport.tcp_connections = 10;
    let text = render_text_with(&result, false);
    assert!(text.contains("10 TCP connections carried them\n"), "{text}");
    assert!(!text.contains("QUIC packets"), "{text}");
}
