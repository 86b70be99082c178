//! The message protocols against their real servers: the `wsbench run` binary speaking
//! Socket.IO, MQTT, STOMP, JSON-RPC, graphql-transport-ws and Centrifugo's protocol to
//! socket.io, mosquitto, NATS, RabbitMQ, rpc-websockets, graphql-ws and Centrifugo, each
//! started on a free port by `wsbench-testpeers` and stopped after. Every run is short and bounded; a server that is
//! not installed skips its tests unless `WSBENCH_REQUIRE_PEERS=1` (then it fails them).
//!
//! Run: `cargo test -p wsbench --test protocols` (after `scripts/install-test-peers.sh`).

mod support;

// Shared with the engine tests; not every helper is used here.
#[allow(dead_code)]
#[path = "engine/harness.rs"]
mod harness;

use std::path::PathBuf;
use std::time::Duration;

use harness::{Finished, arg, assert_matches_schema, heavy, read_result, scratch, uint};
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

#[path = "protocols/centrifugo.rs"]
mod centrifugo;
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
    let context = || format!("{}\n{}", result["pubsub"], finished.describe());
    finished.assert_success();
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
