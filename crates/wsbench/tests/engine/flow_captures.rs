//! Flow captures against a real server that hands out ids: `tests/interop/subscription_server.py`
//! (Python websockets) answers a `subscribe` with a fresh random `sub` id, and accepts a
//! `publish` only when it carries that id. A flow that captures the id (`capture = { sub =
//! "/sub" }`) and sends it back (`{var.sub}`) runs without an error; the same flow with the
//! recorded id written in place of the capture fails by step; a capture that finds nothing
//! is `flow_capture_missing` by step (nothing is sent in its place); an uncaptured variable
//! and too many variables are one-line usage errors naming the bound.

use std::time::Duration;

use serde_json::Value;

use crate::bad_input::assert_usage_error;
use crate::flow::python_peer;
use crate::harness::{
    NodeEchoServer, arg, assert_matches_schema, errors, heavy, read_result, scratch, summary_of, uint,
    wsbench,
};

/// `tests/interop/subscription_server.py`, or None when python websockets is not installed.
fn subscription_peer() -> Option<NodeEchoServer> {
    python_peer("subscription_server.py", &[])
}

/// The flow: subscribe, keep the id the server hands out (`capture`, when given), then publish
/// with `sub` = `sub_value` until the end, each ack checked to carry it.
/// Written into a fresh scratch directory `name`, where the run writes its result too.
fn flow_file(name: &str, capture: &str, sub_value: &str) -> String {
    let file = scratch(name).join("flow.toml");
    let text = format!(
        r#"scenario = "flow"
connections = 20

[[flow.steps]]
name = "subscribe"
send = '{{"type":"subscribe","topic":"t{{conn}}"}}'

[[flow.steps]]
name = "subscribed"
expect-regex = '"type": "subscribed"'
{capture}

[[flow.steps]]
repeat = "until-end"
steps = [
    {{ name = "publish", send = '{{"type":"publish","sub":"{sub_value}","n":{{seq}}}}' }},
    {{ expect = "publish", match-field = "n", check-json = {{ "/type" = "ack", "/sub" = "{sub_value}" }}, timeout = "2s" }},
    {{ sleep = "5ms" }},
]
"#
    );
    std::fs::write(&file, text).unwrap();
    file.to_str().unwrap().to_owned()
}

/// Runs `file` for 1 s against `url`: its exit code, the result, and a description.
fn run_flow(file: &str, url: &str) -> (Option<i32>, Value, String) {
    let _slot = heavy(1);
    let json = std::path::Path::new(file).with_file_name("r.json");
    let args = ["run", "--scenario", file, url, "--duration", "1s", "--json", arg(&json)];
    let run = wsbench(&args, Duration::from_secs(30));
    let result = read_result(&json);
    assert_matches_schema(&result);
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    (run.code, result, context)
}

#[test]
fn a_captured_subscription_id_is_carried_by_later_messages() {
    let Some(peer) = subscription_peer() else { return };
    let file = flow_file("flow-capture", "capture = { sub = \"/sub\" }", "{var.sub}");
    let (code, result, context) = run_flow(&file, &peer.url);
    assert_eq!(code, Some(0), "{context}");
    assert!(errors(&result).is_empty(), "{context}");
    assert_eq!(uint(&result, "/flow/steps/subscribed/latency_us/count"), 20, "{context}");
    assert!(uint(&result, "/flow/steps/publish/latency_us/count") > 20, "{context}");
}

#[test]
fn without_the_capture_the_recorded_id_fails_by_step() {
    let Some(peer) = subscription_peer() else { return };
    // The id one recorded session was handed, written in as a recording would have it.
    let file = flow_file("flow-no-capture", "", "5f0e9c3a71d2b846");
    let (code, result, context) = run_flow(&file, &peer.url);
    assert_ne!(code, Some(0), "{context}");
    let wrong = uint(&result, "/flow/steps/publish/mismatched");
    assert!(wrong > 20, "every publish is refused by the server\n{context}");
    assert_eq!(errors(&result).get("flow_mismatch"), Some(&wrong), "{context}");
    assert_eq!(uint(&result, "/flow/steps/publish/latency_us/count"), 0, "{context}");
}

#[test]
fn a_capture_that_finds_nothing_is_an_error_by_step_and_nothing_is_sent() {
    let Some(peer) = subscription_peer() else { return };
    let file = flow_file("flow-capture-missing", "capture = { sub = \"/subscription\" }", "{var.sub}");
    let (code, result, context) = run_flow(&file, &peer.url);
    assert_ne!(code, Some(0), "{context}");
    assert_eq!(uint(&result, "/flow/steps/subscribed/capture_missing"), 20, "{context}");
    assert_eq!(uint(&result, "/flow/steps/subscribed/latency_us/count"), 0, "{context}");
    let unsent = uint(&result, "/flow/steps/publish/capture_missing");
    assert!(unsent >= 20, "{context}");
    assert_eq!(errors(&result).get("flow_capture_missing"), Some(&(20 + unsent)), "{context}");
    // Only the 20 subscribes went out: no publish with an empty or placeholder id.
    assert_eq!(uint(&result, "/counters/messages_sent"), 20, "{context}");
}

#[test]
fn uncaptured_and_too_many_variables_are_usage_errors_naming_the_bound() {
    let dir = scratch("flow-capture-bad");
    let too_many: Vec<String> = (0..17).map(|n| format!("v{n} = \"/v\"")).collect();
    let cases = [
        (
            "[[flow.steps]]\nsend = '{\"sub\":\"{var.sub}\"}'\n".to_owned(),
            "`{var.sub}` is captured by no step",
        ),
        (
            format!("[[flow.steps]]\nexpect-regex = 'x'\ncapture = {{ {} }}\n", too_many.join(", ")),
            "17 variables: at most 16 per connection",
        ),
        (
            "[[flow.steps]]\nname = \"s\"\nsend = 'x'\ncapture = { a = \"/a\" }\n".to_owned(),
            "step 1 `s`: capture/capture-regex does not apply to this step",
        ),
    ];
    for (index, (steps, mentions)) in cases.into_iter().enumerate() {
        let file = dir.join(format!("bad-{index}.toml"));
        std::fs::write(&file, format!("scenario = \"flow\"\n{steps}")).unwrap();
        assert_usage_error(&["run", "--scenario", arg(&file)], mentions);
    }
}
