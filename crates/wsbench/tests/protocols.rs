//! The message protocols against their real servers: the `wsbench run` binary speaking
//! Socket.IO, MQTT, STOMP, JSON-RPC, graphql-transport-ws, Centrifugo's protocol, Action
//! Cable's and Pusher's to socket.io, mosquitto, NATS, RabbitMQ, rpc-websockets, graphql-ws,
//! Centrifugo, Action Cable (puma) and sockudo, each started on a free port by
//! `wsbench-testpeers` and stopped after.
//! Every run is short and bounded; a server that is not installed skips its tests unless
//! `WSBENCH_REQUIRE_PEERS=1` (then it fails them).
//!
//! Run: `cargo test -p wsbench --test protocols` (after `scripts/install-test-peers.sh`).

mod support;

// Shared with the engine tests; not every helper is used here.
#[allow(dead_code)]
#[path = "engine/harness.rs"]
mod harness;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use harness::{Finished, Wsbench, arg, assert_matches_schema, heavy, read_result, scratch, uint};
use serde_json::Value;

/// How long each connection may take to open (upgrade, then the protocol's own opening:
/// CONNECT and its reply, the echo subscription's receipt) when a test names no
/// `--connect-timeout`. These servers share the two cores with the client and with the other
/// load slot's run, often against the same broker: RabbitMQ busy with a thousand-connection
/// run answered a STOMP SUBSCRIBE after more than the default 2 s. How fast a server opens
/// is not what these tests check.
const PATIENT_OPEN: &str = "10s";

/// One `wsbench run` of a protocol test, holding a load slot: the arguments given (with
/// `--connect-timeout` [`PATIENT_OPEN`] unless they name one), then `--json` into a fresh
/// folder named `test` and `--quiet`. Returns how it ended and its result (read once the run
/// wrote it, and checked against the result schema).
pub fn run(test: &str, args: &[&str], timeout: Duration) -> (Finished, Value) {
    run_with_env(test, args, &[], timeout)
}

/// [`run`] with these environment variables set (what `--password-env VAR` reads).
pub fn run_with_env(test: &str, args: &[&str], env: &[(&str, &str)], timeout: Duration) -> (Finished, Value) {
    let _slot = heavy(1);
    let json: PathBuf = scratch(test).join("r.json");
    let mut all: Vec<&str> = vec!["run"];
    all.extend_from_slice(args);
    if !args.contains(&"--connect-timeout") {
        all.extend_from_slice(&["--connect-timeout", PATIENT_OPEN]);
    }
    all.extend_from_slice(&["--json", arg(&json), "--quiet"]);
    let finished = harness::Wsbench::spawn_with_env(&all, env).finish(timeout);
    let result = match json.exists() {
        true => read_result(&json),
        false => panic!("no result file\n{}", finished.describe()),
    };
    assert_matches_schema(&result);
    (finished, result)
}

#[path = "protocols/actioncable.rs"]
mod actioncable;
#[path = "protocols/centrifugo.rs"]
mod centrifugo;
#[path = "protocols/fleet.rs"]
mod fleet;
#[path = "protocols/flows.rs"]
mod flows;
#[path = "protocols/graphql_ws.rs"]
mod graphql_ws;
#[path = "protocols/jsonrpc.rs"]
mod jsonrpc;
#[path = "protocols/mqtt.rs"]
mod mqtt;
#[path = "protocols/mqtt_credentials.rs"]
mod mqtt_credentials;
#[path = "protocols/mqtt_restart.rs"]
mod mqtt_restart;
#[path = "protocols/nats.rs"]
mod nats;
#[path = "protocols/pusher.rs"]
mod pusher;
#[path = "protocols/signalr.rs"]
mod signalr;
#[path = "protocols/socketio.rs"]
mod socketio;
#[path = "protocols/stomp.rs"]
mod stomp;
#[path = "protocols/stream.rs"]
mod stream;

/// A pub/sub run of 1,000 subscribers on 10 topics, one publisher each, succeeded and every
/// subscriber got each measured publish of its topic once (each topic's publishes reach 100
/// subscribers), nothing else: returns the deliveries expected.
pub fn assert_a_thousand_subscribers_got_every_publish_once(finished: &Finished, result: &Value) -> u64 {
    finished.assert_success();
    every_publish_reached_a_thousand_subscribers_once(finished, result)
}

/// [`assert_a_thousand_subscribers_got_every_publish_once`] for a server that does not keep
/// a publisher's order towards a subscriber: the run may also count publishes that came out
/// of order (then it exits 3 for that alone); none is lost, duplicated or unexpected.
pub fn assert_a_thousand_subscribers_got_every_publish_once_in_any_order(
    finished: &Finished,
    result: &Value,
) -> u64 {
    let errors = harness::errors(result);
    let reordered = errors.get("pubsub_out_of_order").copied().unwrap_or(0);
    assert_eq!(uint(result, "/pubsub/out_of_order"), reordered, "{}", finished.describe());
    match reordered {
        0 => finished.assert_success(),
        _ => {
            finished.assert_completed_with_failures();
            assert_eq!(errors.len(), 1, "out of order alone: {errors:?}\n{}", finished.describe());
        }
    }
    every_publish_reached_a_thousand_subscribers_once(finished, result)
}

fn every_publish_reached_a_thousand_subscribers_once(finished: &Finished, result: &Value) -> u64 {
    let context = || format!("{}\n{}", result["pubsub"], finished.describe());
    assert_eq!(uint(result, "/pubsub/subscribed"), 1000, "{}", context());
    let by_topic = &result["counters"]["pubsub"]["published"];
    let published: Vec<u64> = (0..10).map(|t| by_topic[t.to_string()].as_u64().unwrap_or(0)).collect();
    assert!(published.iter().all(|&count| count > 0), "a topic had no publish: {published:?}\n{}", context());
    let expected: u64 = published.iter().map(|count| count * 100).sum();
    assert_eq!(uint(result, "/pubsub/expected_deliveries"), expected, "{}", context());
    assert_eq!(uint(result, "/pubsub/delivered"), expected, "{}", context());
    for key in ["lost", "duplicated", "unexpected", "subscribe_failures", "short_subscriber_count"] {
        assert_eq!(uint(result, &format!("/pubsub/{key}")), 0, "{key}\n{}", context());
    }
    expected
}

/// Waits for the run's `--stream` file to show a measured second.
pub fn wait_for_measured_second(stream: &Path, wsbench: &Wsbench) {
    let deadline = Instant::now() + Duration::from_secs(90);
    while Instant::now() < deadline {
        if let Ok(file) = std::fs::File::open(stream) {
            let measured = BufReader::new(file)
                .lines()
                .map_while(Result::ok)
                .any(|line| line.contains(r#""phase":"measured""#));
            if measured {
                return;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("no measured second in {} within 90 s (wsbench pid {})", stream.display(), wsbench.pid());
}

/// A pub/sub run of 30 subscribers on 3 topics (subscriber i on topic i mod 3) and 3
/// publishers at `rate`, with `options` (the protocol and its own), in which `fault` is
/// done by the server once a measured second has passed: how it ended and its result.
pub fn pubsub_with_a_fault(
    test: &str,
    url: &str,
    rate: &str,
    options: &[&str],
    fault: impl FnOnce(),
) -> (Finished, Value) {
    let _slot = heavy(1);
    let dir = scratch(test);
    let (json, stream) = (dir.join("r.json"), dir.join("stream.jsonl"));
    let shape = ["--subscribers", "30", "--topics", "3", "--publishers", "3", "--rate", rate];
    let load =
        ["--warmup", "1s", "--duration", "4s", "--stream", arg(&stream), "--json", arg(&json), "--quiet"];
    let wsbench = Wsbench::spawn(&[&["run", "pubsub", url], &shape[..], options, &load].concat());
    wait_for_measured_second(&stream, &wsbench);
    fault();
    let finished = wsbench.finish(Duration::from_secs(120));
    let result = read_result(&json);
    (finished, result)
}

/// The run exited 3, and its short subscribers are `count` subscribers of topic 1, each with
/// deliveries before the fault and none after (fewer than the topic's publishes); `lost` is
/// exactly what they missed, and nothing was duplicated, unexpected or refused. Returns
/// what they missed.
pub fn assert_short_by_what_they_missed(finished: &Finished, result: &Value, count: usize) -> u64 {
    let context = || format!("{}\n{}", result["pubsub"], finished.describe());
    finished.assert_completed_with_failures();
    let expected = uint(result, "/counters/pubsub/published/1");
    let short = result["pubsub"]["short_subscribers"].as_array().cloned().unwrap_or_default();
    assert_eq!(short.len(), count, "the subscribers the server cut off alone are short\n{}", context());
    let mut missed = 0;
    for subscriber in &short {
        assert_eq!(subscriber["topic"], 1, "{}", context());
        assert_eq!(subscriber["expected"], expected, "{}", context());
        let received = subscriber["received"].as_u64().unwrap_or(u64::MAX);
        assert!(received > 0 && received < expected, "deliveries before, none after\n{}", context());
        missed += expected - received;
    }
    assert_eq!(uint(result, "/pubsub/lost"), missed, "lost is what they missed\n{}", context());
    for key in ["duplicated", "unexpected", "subscribe_failures"] {
        assert_eq!(uint(result, &format!("/pubsub/{key}")), 0, "{key}\n{}", context());
    }
    missed
}
