//! The stream scenario against a server of the test's own (`support/stream_server.rs`) that
//! broadcasts a numbered event every 10 ms to every subscriber and skips one event for one
//! subscriber: that subscriber is the one named, missing exactly 1, every other missing
//! nothing, and `--threshold missing==0` fails the run with its exit code. Against a node
//! JSON-RPC server streaming Ethereum-style new heads (`tests/interop/eth_subscription_server.js`),
//! `--subscribe-method eth_subscribe --subscribe-params '["newHeads"]'` gets every head to
//! every subscriber, timed from the heads' own timestamps; a method the server lacks is its
//! error by code. Against a socket.io server emitting `tick` to a room every 10 ms
//! (`tests/interop/socketio_stream_server.js`), subscribers that emit `subscribe` get every
//! tick once. The result validates against the schema; bad stream settings are refused
//! before any load.

use std::time::Duration;

use serde_json::Value;

use crate::bad_input::assert_usage_error;
use crate::harness::{
    Finished, NodeEchoServer, arg, assert_matches_schema, errors, heavy, read_result, repo_root, scratch,
    summary_of, uint, wsbench,
};
use crate::support::peer_missing;
use crate::support::stream_server::StreamServer;

const SUBSCRIBERS: u64 = 8;
/// The subscriber the server skips an event for.
const SKIPPED: u64 = 5;

/// `wsbench run stream URL` with the server's subscription message, the id and timestamp
/// pointers, and `extra`.
fn stream_run(url: &str, extra: &[&str], json: &std::path::Path) -> (Finished, Value) {
    let _slot = heavy(1);
    let subscribers = SUBSCRIBERS.to_string();
    let mut args = vec![
        "run",
        "stream",
        url,
        "--subscribers",
        &subscribers,
        "--subscribe-message",
        r#"{"subscribe":"ticks","as":{conn}}"#,
        "--message-id",
        "/seq",
        "--message-time",
        "/ts",
        "--message-time-unit",
        "ms",
        "--warmup",
        "0s",
        "--duration",
        "3s",
        "--connect-timeout",
        "10s",
        "--quiet",
    ];
    args.extend(extra);
    args.extend(["--json", arg(json)]);
    let run = wsbench(&args, Duration::from_secs(90));
    let result = read_result(json);
    (run, result)
}

#[test]
fn the_one_subscriber_a_stream_skipped_an_event_for_is_named_missing_exactly_one() {
    let server = StreamServer::start(SUBSCRIBERS, SKIPPED);
    let json = scratch("stream-skip").join("r.json");
    let (run, result) = stream_run(&server.url(), &["--threshold", "missing==0"], &json);
    let context = || format!("{}\n{}", run.describe(), summary_of(&result));
    assert!(server.skipped().is_some(), "the server never skipped its event\n{}", context());
    assert_eq!(run.code, Some(99), "the threshold missing==0 fails the run\n{}", context());
    assert_matches_schema(&result);
    let stream = &result["stream"];
    assert_eq!(uint(&result, "/stream/missing"), 1, "{}", context());
    assert_eq!(uint(&result, "/stream/missing_subscriber_count"), 1, "{}", context());
    assert_eq!(
        stream["worst_missing"],
        serde_json::json!([{"connection": SKIPPED, "count": 1}]),
        "{}",
        context()
    );
    for key in ["duplicated", "late", "silent", "unreadable", "time_unreadable", "settled_early"] {
        assert_eq!(uint(&result, &format!("/stream/{key}")), 0, "{key}\n{}", context());
    }
    assert_eq!(uint(&result, "/stream/joined"), SUBSCRIBERS, "{}", context());
    let (ids, owed, delivered) =
        (uint(&result, "/stream/ids"), uint(&result, "/stream/owed"), uint(&result, "/stream/delivered"));
    // 3 s of an event every 10 ms: most of 300 ids, each owed by (nearly) every subscriber.
    assert!(ids > 100, "{}", context());
    assert!(owed > (ids - 2) * SUBSCRIBERS && owed <= ids * SUBSCRIBERS, "{}", context());
    assert_eq!(delivered, owed - 1, "every owed receipt came but the skipped one\n{}", context());
    assert_eq!(
        uint(&result, "/summary/latency_us/count"),
        delivered,
        "one latency per delivery\n{}",
        context()
    );
    // Each id's first receipt has no spread; every other subscriber's receipt has one.
    assert_eq!(uint(&result, "/stream/spread_us/count"), delivered - ids, "{}", context());
    assert_eq!(uint(&result, "/stream/source_latency_us/count"), delivered, "{}", context());
    assert_eq!(errors(&result).get("stream_missing"), Some(&1), "{}", context());
    assert!(
        run.stdout.contains(&format!("missing:      #{SKIPPED} ×1"))
            || run.stdout.contains(&format!("#{SKIPPED} ×1")),
        "the report names the subscriber\n{}",
        context()
    );
}

/// The node server streaming new heads, or None (after saying why) without node `ws`.
fn eth_subscription_server() -> Option<NodeEchoServer> {
    let interop = repo_root().join("tests/interop");
    if !interop.join("node_modules/ws/package.json").exists() {
        peer_missing("peer node ws not installed (tests/interop/node_modules/ws)");
        return None;
    }
    let mut command = std::process::Command::new("node");
    command.arg(interop.join("eth_subscription_server.js"));
    Some(NodeEchoServer::spawn(command, "node eth_subscription_server.js"))
}

/// `wsbench run stream URL --protocol jsonrpc` subscribing with `method`.
fn new_heads_run(url: &str, method: &str, json: &std::path::Path) -> (Finished, Value) {
    let _slot = heavy(1);
    let args = [
        "run",
        "stream",
        url,
        "--protocol",
        "jsonrpc",
        "--subscribe-method",
        method,
        "--subscribe-params",
        r#"["newHeads"]"#,
        "--subscribers",
        "20",
        "--message-id",
        "/params/result/number",
        "--message-time",
        "/params/result/timestamp",
        "--message-time-unit",
        "s",
        "--warmup",
        "1s",
        "--duration",
        "2s",
        "--connect-timeout",
        "10s",
        "--threshold",
        "missing==0",
        "--quiet",
        "--json",
        arg(json),
    ];
    let run = wsbench(&args, Duration::from_secs(90));
    let result = read_result(json);
    (run, result)
}

#[test]
fn every_subscriber_gets_every_new_head_of_a_json_rpc_node_once() {
    let Some(server) = eth_subscription_server() else { return };
    let json = scratch("stream-new-heads").join("r.json");
    let (run, result) = new_heads_run(&server.url, "eth_subscribe", &json);
    let context = || format!("{}\n{}", run.describe(), summary_of(&result));
    assert_eq!(run.code, Some(0), "{}", context());
    assert_matches_schema(&result);
    // 2 measured seconds of a head every 20 ms: about 100 ids (fewer when the machine is busy).
    let delivered = assert_each_of_20_subscribers_got_every_id(&result, &context);
    // The heads are stamped in whole seconds: a latency from each, under a second and a bit.
    assert_eq!(uint(&result, "/stream/source_latency_us/count"), delivered, "{}", context());
    assert!(uint(&result, "/stream/source_latency_us/max") < 2_000_000, "{}", context());
    assert!(errors(&result).is_empty(), "{}", context());
}

#[test]
fn a_subscribe_method_the_node_lacks_is_its_error_and_every_subscriber_is_silent() {
    let Some(server) = eth_subscription_server() else { return };
    let json = scratch("stream-no-method").join("r.json");
    let (run, result) = new_heads_run(&server.url, "eth_subscribeToHeads", &json);
    let context = || format!("{}\n{}", run.describe(), summary_of(&result));
    assert_eq!(run.code, Some(3), "the server's errors fail the run\n{}", context());
    assert_eq!(errors(&result).get("jsonrpc_error_-32601"), Some(&20), "{}", context());
    assert_eq!((uint(&result, "/stream/silent"), uint(&result, "/stream/ids")), (20, 0), "{}", context());
}

/// The socket.io server streaming ticks, or None (after saying why) without socket.io.
fn socketio_stream_server() -> Option<NodeEchoServer> {
    let modules = repo_root().join("tests/peers/node_modules");
    if !modules.join("socket.io/package.json").exists() {
        peer_missing("peer socket.io not installed (tests/peers/node_modules/socket.io)");
        return None;
    }
    let mut command = std::process::Command::new("node");
    command.arg(repo_root().join("tests/interop/socketio_stream_server.js")).env("NODE_PATH", modules);
    Some(NodeEchoServer::spawn(command, "node socketio_stream_server.js"))
}

#[test]
fn every_subscriber_of_a_socket_io_room_gets_every_tick_once() {
    let Some(server) = socketio_stream_server() else { return };
    let json = scratch("stream-socketio").join("r.json");
    let _slot = heavy(1);
    let args = [
        "run",
        "stream",
        &server.url,
        "--protocol",
        "socketio",
        "--subscribe-emit",
        r#"["subscribe","ticks"]"#,
        "--stream-event",
        "tick",
        "--subscribers",
        "20",
        "--message-id",
        "/0/seq",
        "--message-time",
        "/0/ts",
        "--warmup",
        "1s",
        "--duration",
        "2s",
        "--connect-timeout",
        "10s",
        "--threshold",
        "missing==0",
        "--quiet",
        "--json",
        arg(&json),
    ];
    let run = wsbench(&args, Duration::from_secs(90));
    let result = read_result(&json);
    let context = || format!("{}\n{}", run.describe(), summary_of(&result));
    assert_eq!(run.code, Some(0), "{}", context());
    assert_matches_schema(&result);
    // 2 measured seconds of a tick every 10 ms: about 200 ids (fewer when the machine is busy).
    let delivered = assert_each_of_20_subscribers_got_every_id(&result, &context);
    assert_eq!(uint(&result, "/stream/source_latency_us/count"), delivered, "{}", context());
}

#[test]
fn stream_settings_are_checked_before_any_load() {
    assert_usage_error(&["run", "stream", "ws://127.0.0.1:9/"], "--message-id");
    assert_usage_error(&["run", "stream", "--message-id", "/n"], "the built-in server only echoes");
    assert_usage_error(
        &["run", "stream", "ws://127.0.0.1:9/", "--message-id", "(a)(b)"],
        "exactly one group",
    );
    assert_usage_error(
        &["run", "stream", "ws://127.0.0.1:9/", "--message-id", "/n", "--processes", "2"],
        "--processes: a stream runs in one process",
    );
    assert_usage_error(
        &["run", "stream", "ws://127.0.0.1:9/", "--message-id", "/n", "--rate", "10/s"],
        "--rate",
    );
    assert_usage_error(
        &["run", "stream", "ws://127.0.0.1:9/", "--message-id", "/n", "--message-time-unit", "min"],
        "--message-time-unit",
    );
    assert_usage_error(
        &["run", "stream", "ws://127.0.0.1:9/", "--message-id", "/n", "--subscribe-method", "x"],
        "--subscribe-method: applies to --protocol jsonrpc only",
    );
}

/// Each of the run's 20 subscribers got every id once (of more than 10: a sample worth
/// judging, however slowly a busy machine runs the server): nothing missing, doubled, late or
/// unreadable. Returns the deliveries.
fn assert_each_of_20_subscribers_got_every_id(result: &Value, context: &dyn Fn() -> String) -> u64 {
    let (ids, owed, delivered) =
        (uint(result, "/stream/ids"), uint(result, "/stream/owed"), uint(result, "/stream/delivered"));
    assert!(ids > 10, "{}", context());
    assert_eq!((owed, delivered), (ids * 20, ids * 20), "{}", context());
    for key in ["missing", "duplicated", "late", "silent", "unreadable", "time_unreadable"] {
        assert_eq!(uint(result, &format!("/stream/{key}")), 0, "{key}\n{}", context());
    }
    delivered
}
