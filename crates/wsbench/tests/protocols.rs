//! The message protocols against their real servers: the `wsbench run` binary speaking
//! Socket.IO, MQTT, STOMP, JSON-RPC and graphql-transport-ws to socket.io, mosquitto, NATS,
//! RabbitMQ, rpc-websockets and graphql-ws, each started on a free port by
//! `wsbench-testpeers` and stopped after. Every run is short and bounded; a server that is
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

use harness::{Finished, arg, assert_matches_schema, heavy, read_result, scratch, wsbench};
use serde_json::Value;

/// One `wsbench run` of a protocol test, holding a load slot: the arguments given, then
/// `--json` into a fresh folder named `test` and `--quiet`. Returns how it ended and its
/// result (read once the run wrote it, and checked against the result schema).
pub fn run(test: &str, args: &[&str], timeout: Duration) -> (Finished, Value) {
    let _slot = heavy(1);
    let json: PathBuf = scratch(test).join("r.json");
    let mut all: Vec<&str> = vec!["run"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--json", arg(&json), "--quiet"]);
    let finished = wsbench(&all, timeout);
    let result = match json.exists() {
        true => read_result(&json),
        false => panic!("no result file\n{}", finished.describe()),
    };
    assert_matches_schema(&result);
    (finished, result)
}

#[path = "protocols/flows.rs"]
mod flows;
#[path = "protocols/graphql_ws.rs"]
mod graphql_ws;
#[path = "protocols/jsonrpc.rs"]
mod jsonrpc;
#[path = "protocols/mqtt.rs"]
mod mqtt;
#[path = "protocols/socketio.rs"]
mod socketio;
#[path = "protocols/stomp.rs"]
mod stomp;
