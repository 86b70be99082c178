//! Integration tests of the load engine: the real `wsbench run` binary against its built-in
//! server, a scripted server that misbehaves on purpose (`support/scripted_server.rs`), a
//! `wsbench serve` killed mid-run, the node `ws` echo server, and a Python `websockets` server
//! guarded by auth, subprotocol and mutual TLS (`endpoint.rs`), `wsbench record` in front of
//! real servers (`record.rs`); plus bad input, the open file limit and Ctrl-C. Every run is short (2–5 s) and bounded: a run that overstays is
//! killed and the test fails.
//!
//! Load-generating tests take a slot (`harness::heavy`) so that at most two of them share
//! the machine's CPUs; the one whose latencies are asserted takes both.
//!
//! Run: `cargo test -p wsbench --test engine` (the node test needs
//! `scripts/install-test-peers.sh`; it is skipped without it unless `WSBENCH_REQUIRE_PEERS=1`).

mod support;

#[path = "engine/harness.rs"]
mod harness;

#[path = "engine/bad_input.rs"]
mod bad_input;
#[path = "engine/builtin.rs"]
mod builtin;
#[path = "engine/churn.rs"]
mod churn;
#[path = "engine/compression.rs"]
mod compression;
#[path = "engine/endpoint.rs"]
mod endpoint;
#[path = "engine/flow.rs"]
mod flow;
#[path = "engine/flow_captures.rs"]
mod flow_captures;
#[path = "engine/http2.rs"]
mod http2;
#[path = "engine/http3.rs"]
mod http3;
#[path = "engine/http3_peers.rs"]
mod http3_peers;
#[path = "engine/import.rs"]
mod import;
#[path = "engine/io_backends.rs"]
mod io_backends;
#[path = "engine/open_loop.rs"]
mod open_loop;
#[path = "engine/peers.rs"]
mod peers;
#[path = "engine/ping.rs"]
mod ping;
#[path = "engine/pubsub.rs"]
mod pubsub;
#[path = "engine/record.rs"]
mod record;
#[path = "engine/scripted.rs"]
mod scripted;
#[path = "engine/stream.rs"]
mod stream;
#[path = "engine/tls_resume.rs"]
mod tls_resume;
