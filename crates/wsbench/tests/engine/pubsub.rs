//! The pubsub scenario: against the built-in `wsbench serve --pubsub` every
//! measured publish reaches every subscriber of its topic exactly once (in one process and
//! split over two), the result validates and merges; against a Python `websockets` server
//! that drops one subscriber's deliveries and doubles another's, exactly those two are
//! found, as they are when the server forwards the payload alone or wraps it in an envelope
//! of its own; against a plain echo server the subscriptions fail with a clear cause.

use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use crate::bad_input::assert_usage_error;
use crate::harness::{
    Finished, NodeEchoServer, arg, assert_matches_schema, errors, heavy, read_result, repo_root, scratch,
    summary_of, uint, wsbench,
};
use crate::support::peer_missing;

const SHAPE: &str = "--subscribers 60 --topics 3 --publishers 3 --rate 150/s";

/// `wsbench run pubsub [URL] FLAGS EXTRA --json JSON`: the run and its result.
fn pubsub_run(url: Option<&str>, flags: &str, extra: &[&str], json: &std::path::Path) -> (Finished, Value) {
    let mut args = vec!["run", "pubsub"];
    args.extend(url);
    args.extend(flags.split_whitespace());
    args.extend(extra);
    args.extend(["--json", arg(json)]);
    let run = wsbench(&args, Duration::from_secs(60));
    let result = read_result(json);
    (run, result)
}

/// Every subscriber got every measured publish of its topic once: expected = published ×
/// subscribers per topic, nothing lost, doubled or unexpected.
/// `processes`: a process measures the spread among its own subscribers, so a publish has
/// one spread per process.
fn assert_complete_fan_out(
    result: &Value,
    (subscribers, topics, processes): (u64, u64, u64),
    context: &dyn Fn() -> String,
) {
    let published = uint(result, "/pubsub/published");
    assert!(published > 0, "nothing published\n{}", context());
    assert_eq!(uint(result, "/pubsub/subscribed"), subscribers, "{}", context());
    // Publisher j publishes to topic j mod T; every topic has the same number of
    // publishers here, so each topic's publishes reach subscribers / topics subscribers.
    let by_topic = &result["counters"]["pubsub"]["published"];
    let per_topic: Vec<u64> = (0..topics).map(|t| by_topic[t.to_string()].as_u64().unwrap_or(0)).collect();
    let expected: u64 = per_topic.iter().map(|count| count * (subscribers / topics)).sum();
    assert_eq!(uint(result, "/pubsub/expected_deliveries"), expected, "{}", context());
    assert_eq!(uint(result, "/pubsub/delivered"), expected, "{}", context());
    for key in ["lost", "duplicated", "unexpected", "subscribe_failures", "short_subscriber_count"] {
        assert_eq!(uint(result, &format!("/pubsub/{key}")), 0, "{key}\n{}", context());
    }
    assert_eq!(
        uint(result, "/summary/latency_us/count"),
        expected,
        "one latency per delivery\n{}",
        context()
    );
    let spreads = uint(result, "/pubsub/spread_us/count");
    assert_eq!(spreads, published * processes, "one spread per publish and process\n{}", context());
}

#[test]
fn pubsub_against_the_builtin_server_delivers_every_publish_to_every_subscriber_once() {
    let _slot = heavy(1);
    let dir = scratch("pubsub-builtin");
    let json = dir.join("r.json");
    let flags = format!(
        "{SHAPE} --duration 2s --warmup 1s --threshold errors==0 --threshold deliveries_per_sec>100 \
         --threshold lost==0 --threshold duplicated==0 --threshold out_of_order==0"
    );
    let (run, result) = pubsub_run(None, &flags, &[], &json);
    run.assert_success();
    let context = || format!("{}\n{}", summary_of(&result), run.describe());
    assert_complete_fan_out(&result, (60, 3, 1), &context);
    assert!(errors(&result).is_empty(), "{}", context());
    assert!(run.stdout.contains("deliveries/s (after warm-up):"), "{}", run.describe());
    assert!(run.stdout.contains("lost 0, duplicated 0, out of order 0"), "{}", run.describe());
    assert!(run.stdout.contains("✓ passed  out_of_order==0  (measured 0)"), "{}", run.describe());
    assert_matches_schema(&result);
    // The merge path recomputes the fan-out from the merged counters and histograms.
    let merged_json = dir.join("merged.json");
    let merge = wsbench(&["merge", arg(&json), "-o", arg(&merged_json)], Duration::from_secs(20));
    merge.assert_success();
    let merged = read_result(&merged_json);
    assert_eq!(merged["pubsub"], result["pubsub"], "{}", merge.describe());
}

/// Two processes: each publishes to, and subscribes from, the other's connections too
/// (connection i goes to shard i mod 2), so the accounting works only on merged counters.
#[test]
fn pubsub_over_two_processes_accounts_every_delivery_across_them() {
    let _slot = heavy(2);
    let json = scratch("pubsub-processes").join("r.json");
    let flags = format!("{SHAPE} --duration 2s --warmup 1s --processes 2");
    let (run, result) = pubsub_run(None, &flags, &[], &json);
    run.assert_success();
    let context = || format!("{}\n{}", summary_of(&result), run.describe());
    assert_complete_fan_out(&result, (60, 3, 2), &context);
    assert_matches_schema(&result);
}

/// `tests/interop/lossy_pubsub_server.py ARGS`, or None when python websockets is missing.
fn lossy_server(args: &[&str]) -> Option<NodeEchoServer> {
    let python = repo_root().join(".venv/bin/python");
    if !python.exists() {
        peer_missing(&format!("peer python websockets not installed ({} does not exist)", python.display()));
        return None;
    }
    let mut command = Command::new(&python);
    command.arg(repo_root().join("tests/interop/lossy_pubsub_server.py")).args(args);
    Some(NodeEchoServer::spawn(command, "python lossy_pubsub_server.py"))
}

#[test]
fn a_server_that_drops_one_subscriber_doubles_another_and_reorders_a_third_is_caught_exactly() {
    let args = ["--drop-conn", "7", "--duplicate-conn", "11", "--reorder-conn", "5"];
    let Some(server) = lossy_server(&args) else { return };
    let _slot = heavy(1);
    let json = scratch("pubsub-lossy").join("r.json");
    let flags = format!("{SHAPE} --duration 2s --warmup 1s");
    let (run, result) = pubsub_run(Some(&server.url), &flags, &["--header", "X-Conn: {conn}"], &json);
    run.assert_completed_with_failures();
    let context = || format!("{}\n{}", summary_of(&result), run.describe());
    // Subscriber 7 listens to topic 7 mod 3 = 1 and got none of its publishes.
    let topic_1 = uint(&result, "/counters/pubsub/published/1");
    assert!(topic_1 > 0, "nothing published on t1\n{}", context());
    assert_eq!(
        result["pubsub"]["short_subscribers"],
        json!([{ "connection": 7, "topic": 1, "expected": topic_1, "received": 0 }]),
        "{}",
        context()
    );
    assert_eq!(uint(&result, "/pubsub/short_subscriber_count"), 1, "{}", context());
    assert_eq!(uint(&result, "/pubsub/lost"), topic_1, "{}", context());
    assert_eq!(result["pubsub"]["cut_off"], false, "the server went quiet: lost\n{}", context());
    // Subscriber 11 (topic 2) got each message twice: every measured publish of its topic
    // is one duplicate (the warm-up's are judged as their losses are: not at all); nobody
    // else has any.
    let topic_2 = uint(&result, "/counters/pubsub/published/2");
    let duplicated = uint(&result, "/pubsub/duplicated");
    assert_eq!(duplicated, topic_2, "{duplicated} duplicates for {topic_2} publishes\n{}", context());
    assert_eq!(uint(&result, "/counters/pubsub/received/11/1"), topic_2, "{}", context());
    assert_eq!(
        result["pubsub"]["duplicated_subscribers"],
        json!([{ "connection": 11, "count": duplicated }]),
        "{}",
        context()
    );
    // Subscriber 5 (topic 2) got its publishes in swapped pairs: out of order, none lost.
    let out_of_order = uint(&result, "/pubsub/out_of_order");
    assert!(out_of_order > 0, "{}", context());
    assert_eq!(
        result["pubsub"]["out_of_order_subscribers"],
        json!([{ "connection": 5, "count": out_of_order }]),
        "{}",
        context()
    );
    assert_eq!(uint(&result, "/counters/pubsub/received/5/1"), topic_2, "{}", context());
    assert_eq!(errors(&result).get("pubsub_out_of_order"), Some(&out_of_order), "{}", context());
    assert!(run.stdout.contains(&format!("out of order: #5 ×{out_of_order}")), "{}", run.describe());
    let slowest = result["pubsub"]["slowest_subscribers"].as_array().expect("the slowest are listed");
    assert!(!slowest.is_empty() && slowest.len() <= 20, "{}", context());
    assert_eq!(errors(&result).get("pubsub_lost"), Some(&topic_1), "{}", context());
    assert!(run.stdout.contains(&format!("short:        #7 (t1) 0 of {topic_1}")), "{}", run.describe());
    assert_matches_schema(&result);
}

/// A server that forwards the publish's payload alone (written again with other spacing), or
/// wraps it in an envelope with an `id` of its own: every delivery is still known by the
/// marker inside it, so a dropped subscriber and a doubled one are found as exactly as when
/// it forwards the publish as it came, and nothing is unexpected.
#[test]
fn a_server_that_forwards_the_payload_alone_or_wrapped_is_judged_as_exactly() {
    for shape in ["payload", "wrapped"] {
        let args = ["--drop-conn", "7", "--duplicate-conn", "11", "--shape", shape];
        let Some(server) = lossy_server(&args) else { return };
        let _slot = heavy(1);
        let json = scratch(&format!("pubsub-shape-{shape}")).join("r.json");
        let flags = format!("{SHAPE} --duration 2s --warmup 1s");
        let (run, result) = pubsub_run(Some(&server.url), &flags, &["--header", "X-Conn: {conn}"], &json);
        run.assert_completed_with_failures();
        let context = || format!("{shape}\n{}\n{}", summary_of(&result), run.describe());
        let topic_1 = uint(&result, "/counters/pubsub/published/1");
        let topic_2 = uint(&result, "/counters/pubsub/published/2");
        assert!(topic_1 > 0 && topic_2 > 0, "{}", context());
        assert_eq!(uint(&result, "/pubsub/lost"), topic_1, "subscriber 7 (t1) got nothing\n{}", context());
        assert_eq!(uint(&result, "/pubsub/duplicated"), topic_2, "subscriber 11 (t2) twice\n{}", context());
        assert_eq!(
            result["pubsub"]["duplicated_subscribers"],
            json!([{ "connection": 11, "count": topic_2 }]),
            "{}",
            context()
        );
        assert_eq!(uint(&result, "/pubsub/unexpected"), 0, "{}", context());
        let expected = uint(&result, "/pubsub/expected_deliveries");
        assert_eq!(uint(&result, "/pubsub/delivered"), expected - topic_1, "{}", context());
        let causes: Vec<String> = errors(&result).into_keys().collect();
        assert_eq!(causes, ["pubsub_duplicate", "pubsub_lost"], "{}", context());
    }
}

/// A server that delivers 200 a second while 900 a second are due falls behind; when the
/// run stops it is still delivering, and what is missing is undelivered, not called lost.
#[test]
fn a_server_that_falls_behind_leaves_deliveries_undelivered_not_lost() {
    let Some(server) = lossy_server(&["--deliveries-per-sec", "200"]) else { return };
    let _slot = heavy(1);
    let json = scratch("pubsub-slow").join("r.json");
    let flags = "--subscribers 6 --topics 1 --publishers 1 --rate 150/s --duration 2s --warmup 0s";
    let (run, result) = pubsub_run(Some(&server.url), flags, &[], &json);
    run.assert_completed_with_failures();
    let context = || format!("{}\n{}", summary_of(&result), run.describe());
    assert_eq!(result["pubsub"]["cut_off"], true, "{}", context());
    let missing = uint(&result, "/pubsub/lost");
    assert!(missing > 0, "{}", context());
    assert_eq!(errors(&result).get("pubsub_undelivered"), Some(&missing), "{}", context());
    assert_eq!(errors(&result).get("pubsub_lost"), None, "{}", context());
    assert!(
        run.stdout.contains("the server was still delivering when the run stopped"),
        "{}",
        run.describe()
    );
}

#[test]
fn an_echo_server_fails_every_subscription_with_a_clear_cause() {
    let Some(server) = NodeEchoServer::start() else { return };
    let _slot = heavy(1);
    let json = scratch("pubsub-echo").join("r.json");
    let flags = "--subscribers 4 --topics 1 --publishers 1 --duration 1s --warmup 0s";
    let (run, result) = pubsub_run(Some(&server.url), flags, &[], &json);
    run.assert_completed_with_failures();
    assert_eq!(uint(&result, "/pubsub/subscribe_failures"), 4, "{}", run.describe());
    assert!(
        run.stdout.contains("does the server speak the pub/sub of docs/protocols.md?"),
        "{}",
        run.describe()
    );
}

#[test]
fn pubsub_flags_are_checked() {
    assert_usage_error(&["run", "pubsub", "--connections", "5"], "--connections");
    assert_usage_error(&["run", "pubsub", "--topics", "4", "--publishers", "2"], "--publishers");
    assert_usage_error(
        &["run", "echo", "--subscribers", "5"],
        "--subscribers: applies to the pubsub scenario or the stream scenario only",
    );
    assert_usage_error(&["run", "pubsub", "--server-processes", "2"], "--server-processes");
}
