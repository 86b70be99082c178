//! Flows against the real servers people run: the shipped presets pass against
//! rpc-websockets 10 and graphql-ws 6; a JSON-RPC error reply is an error by its code and no
//! success for its step; a reply that says the wrong thing fails its check; a message that
//! answers nothing is counted and its first line shown.

use std::time::Duration;

use wsbench_testpeers::{or_skip, start_graphql_ws, start_rpc_websockets};

use crate::harness::{errors, repo_root, summary_of, uint};
use crate::run;

/// `count` of flow step `step`'s latency.
fn step_count(result: &serde_json::Value, step: &str) -> u64 {
    uint(result, &format!("/flow/steps/{step}/latency_us/count"))
}

#[test]
fn the_jsonrpc_preset_passes_against_rpc_websockets() {
    let Some(server) = or_skip(start_rpc_websockets()) else { return };
    let url = server.url("/");
    let args = ["--scenario", "jsonrpc-flow", &url, "--duration", "2s", "--threshold", "errors==0"];
    let (finished, result) = run("flow-jsonrpc-preset", &args, Duration::from_secs(30));
    finished.assert_success();
    for step in ["first", "second"] {
        assert!(step_count(&result, step) > 20, "{step}: {}", summary_of(&result));
    }
}

#[test]
fn the_graphql_preset_passes_against_graphql_ws() {
    let Some(server) = or_skip(start_graphql_ws()) else { return };
    let url = server.url("/graphql");
    let args =
        ["--scenario", "graphql-subscription-flow", &url, "--duration", "2s", "--threshold", "errors==0"];
    let (finished, result) = run("flow-graphql-preset", &args, Duration::from_secs(30));
    finished.assert_success();
    // The protocol opened every connection (connection_init → connection_ack).
    assert_eq!(uint(&result, "/summary/connections/established"), 10, "{}", summary_of(&result));
    assert!(step_count(&result, "ticks") >= 30, "{}", summary_of(&result));
}

#[test]
fn a_graphql_error_in_a_flow_is_an_error_by_its_cause_and_no_success() {
    let Some(server) = or_skip(start_graphql_ws()) else { return };
    let file = repo_root().join("target/flow-graphql-error.toml");
    let steps = r#"scenario = "flow"
protocol = "graphql-ws"
connections = 2

[[flow.steps]]
repeat = "until-end"
steps = [
    { name = "nope", send = '{"id":"n{seq}","type":"subscribe","payload":{"query":"subscription { nope }"}}' },
    { expect = "nope", match-field = "id", until = '"type":\s*"complete"', timeout = "2s" },
    { sleep = "20ms" },
]
"#;
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, steps).unwrap();
    let url = server.url("/graphql");
    let args = ["--scenario", file.to_str().unwrap(), &url, "--duration", "1s"];
    let (finished, result) = run("flow-graphql-error", &args, Duration::from_secs(30));
    finished.assert_completed_with_failures();
    let errors = errors(&result);
    let refused = uint(&result, "/flow/steps/nope/refused");
    assert!(refused > 0, "{errors:?}\n{}", finished.describe());
    assert_eq!(errors.get("graphql_error"), Some(&refused), "{errors:?}");
    assert_eq!(
        errors.len(),
        1,
        "an error reply ends its subscription: nothing late, nothing unmatched: {errors:?}"
    );
    assert_eq!(uint(&result, "/flow/steps/nope/latency_us/count"), 0);
    let detail = result["counters"]["protocol_error_details"]["graphql_error"].as_str().unwrap_or_default();
    assert!(detail.contains("nope"), "{detail}");
}

#[test]
fn error_replies_wrong_replies_and_strays_are_errors_with_the_servers_words() {
    let Some(server) = or_skip(start_rpc_websockets()) else { return };
    let file = repo_root().join("target/flow-errors.toml");
    // `missing` calls a method the server lacks; `wrong` expects its result to say what it
    // does not; `stray` is answered under an id no expect waits for.
    let steps = r#"scenario = "flow"
protocol = "jsonrpc"
connections = 2

[[flow.steps]]
repeat = "until-end"
steps = [
    { name = "missing", send = '{"jsonrpc":"2.0","id":"m{seq}","method":"no_such","params":[]}' },
    { expect = "missing", match-field = "id", timeout = "2s" },
    { name = "wrong", send = '{"jsonrpc":"2.0","id":"w{seq}","method":"echo","params":["{conn}"]}' },
    { expect = "wrong", match-field = "id", check-json = { "/result/0" = "not {conn}" }, timeout = "2s" },
    { name = "stray", send = '{"jsonrpc":"2.0","id":"elsewhere","method":"echo","params":["hi"]}' },
    { sleep = "20ms" },
]
"#;
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, steps).unwrap();
    let url = server.url("/");
    let args = ["--scenario", file.to_str().unwrap(), &url, "--duration", "1s"];
    let (finished, result) = run("flow-errors", &args, Duration::from_secs(30));
    finished.assert_completed_with_failures();
    let errors = errors(&result);
    let context = format!("{errors:?}\n{}", finished.describe());
    let refused = uint(&result, "/flow/steps/missing/refused");
    assert!(refused > 0, "{context}");
    assert_eq!(errors.get("jsonrpc_error_-32601"), Some(&refused), "{context}");
    assert_eq!(uint(&result, "/flow/steps/missing/latency_us/count"), 0, "an error reply is no success");
    let wrong = uint(&result, "/flow/steps/wrong/mismatched");
    assert!(wrong > 0 && errors.get("flow_mismatch") == Some(&wrong), "{context}");
    assert_eq!(uint(&result, "/flow/steps/wrong/latency_us/count"), 0, "a wrong reply is no success");
    assert!(errors.get("flow_unmatched").is_some_and(|&n| n > 0), "{context}");
    let sample = result["flow"]["steps"]["stray"]["unmatched_sample"].as_str().unwrap_or_default();
    assert!(sample.contains(r#""id":"elsewhere""#), "the stray reply is shown: {sample:?}\n{context}");
    assert!(finished.stdout.contains("unmatched:"), "{context}");
    assert!(finished.stdout.contains("(\"Method not found\")"), "{context}");
}

#[test]
fn count_with_until_ends_at_whichever_comes_first() {
    let Some(server) = or_skip(start_graphql_ws()) else { return };
    let file = repo_root().join("target/flow-graphql-count-until.toml");
    // `long` yields 5 results and `short` 2, each then its complete: `long` ends at its
    // count (2), its 3 later results and complete ignored as its own; `short` ends at its
    // complete before its count (4), not late.
    let steps = r#"scenario = "flow"
protocol = "graphql-ws"
connections = 2

[[flow.steps]]
repeat = 5
steps = [
    { name = "long", send = '{"id":"l{seq}","type":"subscribe","payload":{"query":"subscription { ticks(count: 5) }"}}' },
    { expect = "long", match-field = "id", count = 2, until = '"type":\s*"complete"', check-regex = '"type":\s*"next"', timeout = "5s" },
    { name = "short", send = '{"id":"s{seq}","type":"subscribe","payload":{"query":"subscription { ticks(count: 2) }"}}' },
    { expect = "short", match-field = "id", count = 4, until = '"type":\s*"complete"', check-regex = '"type":\s*"next"', timeout = "5s" },
]
"#;
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, steps).unwrap();
    let url = server.url("/graphql");
    let args = ["--scenario", file.to_str().unwrap(), &url, "--duration", "2s", "--threshold", "errors==0"];
    let (finished, result) = run("flow-graphql-count-until", &args, Duration::from_secs(60));
    finished.assert_success();
    // 2 connections × 5 rounds × 2 results each.
    assert_eq!(step_count(&result, "long"), 20, "{}", summary_of(&result));
    assert_eq!(step_count(&result, "short"), 20, "{}", summary_of(&result));
    for step in ["long", "short"] {
        for key in ["late", "unmatched", "mismatched", "refused"] {
            let counted = uint(&result, &format!("/flow/steps/{step}/{key}"));
            assert_eq!(counted, 0, "{step} {key}\n{}", finished.describe());
        }
    }
}
