//! The flow scenario against the JSON-RPC and graphql-transport-ws peer
//! `tests/interop/jsonrpc_server.py` (Python websockets), driven by the scenario files in
//! `scenarios/`. The JSON-RPC peer answers pipelined requests out of order, so only matching
//! replies by `id` gets every one right. Bad steps are one-line usage errors naming the step.
//! (The presets against rpc-websockets and graphql-ws themselves: `tests/protocols/flows.rs`.)

use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::bad_input::assert_usage_error;
use crate::harness::{
    NodeEchoServer, arg, assert_matches_schema, errors, heavy, read_result, repo_root, scratch, summary_of,
    uint, wsbench,
};
use crate::support::peer_missing;

/// `tests/interop/jsonrpc_server.py`, or None (after saying why) when python websockets is
/// not installed and peers are optional.
fn jsonrpc_peer() -> Option<NodeEchoServer> {
    python_peer("jsonrpc_server.py", &[])
}

/// `tests/interop/SCRIPT ARGS` (a Python websockets peer), or None (after saying why) when
/// python websockets is not installed and peers are optional.
pub fn python_peer(script: &str, args: &[&str]) -> Option<NodeEchoServer> {
    let python = repo_root().join(".venv/bin/python");
    if !python.exists() {
        peer_missing(&format!("peer python websockets not installed ({} does not exist)", python.display()));
        return None;
    }
    let mut command = Command::new(&python);
    command.arg(repo_root().join("tests/interop").join(script)).args(args);
    Some(NodeEchoServer::spawn(command, &format!("python {script}")))
}

/// Runs `scenarios/NAME` for 1 s against `url`; the result and a description.
fn flow_run(name: &str, url: &str) -> (Value, String) {
    let _slot = heavy(1);
    let json = scratch(name).join("r.json");
    let scenario = repo_root().join("scenarios").join(name);
    let args = ["run", "--scenario", arg(&scenario), url, "--duration", "1s", "--json", arg(&json)];
    let run = wsbench(&args, Duration::from_secs(30));
    run.assert_success();
    let result = read_result(&json);
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    assert_matches_schema(&result);
    (result, context)
}

/// The latency count of flow step `step`.
fn step_count(result: &Value, step: &str) -> u64 {
    uint(result, &format!("/flow/steps/{step}/latency_us/count"))
}

#[test]
fn jsonrpc_flow_matches_every_reply_by_id() {
    let Some(peer) = jsonrpc_peer() else { return };
    let (result, context) = flow_run("jsonrpc-flow.toml", &peer.url);
    assert!(errors(&result).is_empty(), "unmatched or late replies\n{context}");
    for step in ["first", "second"] {
        assert!(step_count(&result, step) > 0, "no latency for step {step}\n{context}");
        assert_eq!(uint(&result, &format!("/flow/steps/{step}/unmatched")), 0, "{context}");
        assert_eq!(uint(&result, &format!("/flow/steps/{step}/late")), 0, "{context}");
        let histogram = &result["histograms"]["flow_steps"][step];
        assert!(histogram.as_str().is_some_and(|h| !h.is_empty()), "no histogram for {step}\n{context}");
    }
    // Every reply received in the run was matched to its request; only the two requests
    // each of the 20 connections may have in flight when the run ends are answered after it.
    let matched = step_count(&result, "first") + step_count(&result, "second");
    let received = uint(&result, "/counters/messages_received");
    assert!(
        (matched..=matched + 2 * 20).contains(&received),
        "{received} received, {matched} matched\n{context}"
    );
    // The matched steps are the run's exchanges: its latency over all steps and its rate.
    assert_eq!(uint(&result, "/summary/latency_us/count"), matched, "{context}");
    assert_eq!(uint(&result, "/summary/measured_echoes"), matched, "{context}");
}

#[test]
fn graphql_subscription_flow_gets_ack_nexts_and_completes() {
    let Some(peer) = jsonrpc_peer() else { return };
    let (result, context) = flow_run("graphql-subscription-flow.toml", &peer.url);
    // No error: every subscription had its `next`s, each a `next`, and then its `complete`
    // (one without would be late).
    assert!(errors(&result).is_empty(), "unmatched, late or wrong messages\n{context}");
    assert_eq!(
        uint(&result, "/summary/connections/established"),
        10,
        "each opened by its protocol\n{context}"
    );
    assert!(step_count(&result, "ticks") >= 3 * 10, "no subscription's nexts\n{context}");
}

#[test]
fn bad_flow_steps_are_one_line_usage_errors_naming_the_step() {
    let dir = scratch("flow-bad");
    let cases = [
        ("[[flow.steps]]\nname = \"call\"\nexpect = \"nope\"\nmatch-field = \"id\"\n", "step 1 `call`"),
        (
            "[[flow.steps]]\nsend = \"x\"\n[[flow.steps]]\nname = \"r\"\nexpect-regex = \"(\"\n",
            "step 2 `r`: bad regex",
        ),
        ("[[flow.steps]]\nsleep = \"soon\"\n", "step 1"),
        (
            "[[flow.steps]]\nname = \"c\"\nsend = \"x\"\n[[flow.steps]]\nexpect = \"c\"\nmatch-field = \"id\"\n\
             [[flow.steps]]\nexpect = \"c\"\nmatch-field = \"id\"\n",
            "step 3: send `c` is already expected by step 2",
        ),
    ];
    for (index, (steps, mentions)) in cases.into_iter().enumerate() {
        let file = dir.join(format!("bad-{index}.toml"));
        std::fs::write(&file, format!("scenario = \"flow\"\n{steps}")).unwrap();
        assert_usage_error(&["run", "--scenario", arg(&file)], mentions);
    }
    assert_usage_error(&["run", "flow"], "--scenario FILE");
}
