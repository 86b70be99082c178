//! The ping scenario: WebSocket pings on an open-loop schedule, each pong matched to its
//! ping by the sequence number in its payload. Against the built-in server every ping is
//! answered, the result validates and merges, and the thresholds and the report name it;
//! against a server that answers no ping every ping is counted unanswered (an error); one
//! that skips every other ping has those pings superseded by the next pong, as RFC 6455
//! allows; a ping payload past a control frame's 125 bytes is a usage error.

use std::time::Duration;

use serde_json::Value;

use crate::bad_input::assert_usage_error;
use crate::harness::{
    arg, assert_matches_schema, errors, heavy, read_result, scratch, summary_of, uint, wsbench,
};
use crate::support::scripted_server::Script;

/// `wsbench run ping [URL] --connections 20 --rate 200/s … EXTRA --json JSON`.
fn ping_run(url: Option<&str>, extra: &[&str], json: &std::path::Path) -> (crate::harness::Finished, Value) {
    let mut args = vec!["run", "ping"];
    args.extend(url);
    args.extend(["--connections", "20", "--rate", "200/s", "--warmup", "500ms", "--duration", "2s"]);
    args.extend(extra);
    args.extend(["--json", arg(json)]);
    let run = wsbench(&args, Duration::from_secs(60));
    let result = read_result(json);
    (run, result)
}

#[test]
fn every_ping_to_the_builtin_server_is_answered_and_measured() {
    let _slot = heavy(1);
    let dir = scratch("ping-builtin");
    let json = dir.join("r.json");
    let (run, result) = ping_run(None, &["--threshold", "errors==0", "--threshold", "unanswered==0"], &json);
    run.assert_success();
    let context = || format!("{}\n{}", summary_of(&result), run.describe());
    let pings = uint(&result, "/ping/pings");
    assert!(pings >= 400, "2.5 s at 200/s\n{}", context());
    assert_eq!(uint(&result, "/ping/pongs"), pings, "{}", context());
    assert_eq!(uint(&result, "/ping/unanswered") + uint(&result, "/ping/superseded"), 0, "{}", context());
    assert!(errors(&result).is_empty(), "{}", context());
    // One latency per measured pong, from each ping's due time.
    assert!(uint(&result, "/summary/latency_us/count") >= 380, "{}", context());
    assert_eq!(uint(&result, "/summary/messages/received"), pings, "pongs count as messages\n{}", context());
    assert!(run.stdout.contains("ping round trips/s (after warm-up):"), "{}", run.describe());
    assert!(run.stdout.contains("answered by their pong, 0 unanswered"), "{}", run.describe());
    assert_matches_schema(&result);
    let merged_json = dir.join("merged.json");
    let merge = wsbench(&["merge", arg(&json), "-o", arg(&merged_json)], Duration::from_secs(20));
    merge.assert_success();
    assert_eq!(read_result(&merged_json)["ping"], result["ping"], "{}", merge.describe());
}

#[test]
fn pings_split_over_two_processes_merge_into_one_count() {
    let _slot = heavy(2);
    let json = scratch("ping-processes").join("r.json");
    let (run, result) = ping_run(None, &["--processes", "2"], &json);
    run.assert_success();
    let context = || format!("{}\n{}", summary_of(&result), run.describe());
    let pings = uint(&result, "/ping/pings");
    assert!(pings >= 400, "{}", context());
    assert_eq!(uint(&result, "/ping/pongs"), pings, "{}", context());
    assert_eq!(result["shards"].as_array().map(Vec::len), Some(2), "{}", context());
    assert_matches_schema(&result);
}

#[test]
fn a_server_that_answers_no_ping_has_every_ping_unanswered() {
    let server = Script::echo().ignore_every_nth_ping(1).start();
    let _slot = heavy(1);
    let json = scratch("ping-silent").join("r.json");
    let (run, result) = ping_run(Some(&server.url()), &["--threshold", "errors==0"], &json);
    assert_eq!(run.code, Some(99), "a failed threshold exits 99\n{}", run.describe());
    let context = || format!("{}\n{}", summary_of(&result), run.describe());
    let pings = uint(&result, "/ping/pings");
    assert!(pings >= 400, "{}", context());
    assert_eq!(uint(&result, "/ping/pongs"), 0, "{}", context());
    // Every ping was still awaited when the drain at the end ran out.
    assert_eq!(errors(&result).get("unanswered_at_end"), Some(&pings), "{}", context());
    assert_eq!(uint(&result, "/ping/unanswered"), pings, "{}", context());
    assert_eq!(uint(&result, "/summary/latency_us/count"), 0, "{}", context());
}

#[test]
fn pings_a_later_pong_passes_over_are_superseded_not_errors() {
    let server = Script::echo().ignore_every_nth_ping(2).start();
    let _slot = heavy(1);
    let json = scratch("ping-every-other").join("r.json");
    let (run, result) = ping_run(Some(&server.url()), &[], &json);
    let context = || format!("{}\n{}", summary_of(&result), run.describe());
    let (pings, pongs) = (uint(&result, "/ping/pings"), uint(&result, "/ping/pongs"));
    // A connection whose last ping is a skipped one ends with it unanswered (an error).
    match uint(&result, "/ping/unanswered") {
        0 => run.assert_success(),
        _ => run.assert_completed_with_failures(),
    }
    let superseded = uint(&result, "/ping/superseded");
    assert!(superseded > 0, "{}", context());
    // Each connection's last ping may be the skipped one: unanswered at the end.
    let unanswered = uint(&result, "/ping/unanswered");
    assert!(unanswered <= 20, "{}", context());
    assert_eq!(pongs + superseded + unanswered, pings, "{}", context());
    assert!(pongs.abs_diff(superseded) <= 20, "every other ping answered\n{}", context());
    assert!(errors(&result).keys().all(|kind| kind == "unanswered_at_end"), "{}", context());
    assert_eq!(errors(&result).get("unanswered_at_end").copied().unwrap_or(0), unanswered, "{}", context());
}

#[test]
fn a_ping_payload_past_a_control_frame_is_a_usage_error() {
    assert_usage_error(
        &["run", "ping", "--payload-bytes", "126", "--duration", "1s"],
        "--payload: a ping carries 8 to 125 bytes",
    );
}
