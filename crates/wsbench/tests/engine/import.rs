//! `wsbench import` and `--scenario FILE.har`: a recorded session (a HAR in Chromium's
//! export format) against `tests/interop/subscription_server.py`, which hands out a random
//! subscription id that later messages must carry. The import captures the id by itself and
//! the flow replays at 200 connections without an error; the same flow with the capture
//! taken out fails by step. Hostile recordings (a 2 GiB sparse file, deeply nested JSON,
//! 10^6 messages) are refused in one line naming the file, the place and the bound, exit 2.

use std::time::Duration;

use serde_json::Value;

use crate::bad_input::assert_usage_error;
use crate::flow::python_peer;
use crate::harness::{
    arg, assert_matches_schema, errors, heavy, read_result, scratch, summary_of, uint, wsbench,
};

/// The recorded id, as the server handed it out in the recorded session.
const RECORDED_SUB: &str = "5f0e9c3a71d2b846";

/// A HAR as Chromium exports it: a page, and one WebSocket that subscribes, is handed an id,
/// and publishes twice with it.
fn session_har() -> String {
    let message = |kind: &str, time: f64, data: &str| serde_json::json!({ "type": kind, "time": time, "opcode": 1, "data": data });
    let sub = RECORDED_SUB;
    let messages = vec![
        message("send", 1_700_000_000.0, r#"{"type":"subscribe","topic":"news"}"#),
        message(
            "receive",
            1_700_000_000.01,
            &format!(r#"{{"type": "subscribed", "topic": "news", "sub": "{sub}"}}"#),
        ),
        message("send", 1_700_000_000.06, &format!(r#"{{"type":"publish","sub":"{sub}","n":1}}"#)),
        message("receive", 1_700_000_000.07, &format!(r#"{{"type": "ack", "sub": "{sub}", "n": 1}}"#)),
        message("send", 1_700_000_000.12, &format!(r#"{{"type":"publish","sub":"{sub}","n":2}}"#)),
        message("receive", 1_700_000_000.13, &format!(r#"{{"type": "ack", "sub": "{sub}", "n": 2}}"#)),
    ];
    let har = serde_json::json!({ "log": { "version": "1.2", "entries": [
        { "_resourceType": "document", "request": { "url": "http://127.0.0.1/", "headers": [] } },
        { "_resourceType": "websocket",
          "request": { "url": "ws://127.0.0.1:9000/", "headers": [
              { "name": "Authorization", "value": "Bearer alice-secret" },
              { "name": "Origin", "value": "http://127.0.0.1" } ] },
          "_webSocketMessages": messages },
    ] } });
    serde_json::to_string_pretty(&har).unwrap()
}

/// Runs `scenario` once per connection at `connections` against `url`, a row of
/// `users.csv` each: the exit code, the result and a description.
fn replay(
    dir: &std::path::Path,
    scenario: &str,
    url: &str,
    connections: &str,
) -> (Option<i32>, Value, String) {
    let _slot = heavy(1);
    let users = dir.join("users.csv");
    std::fs::write(&users, "authorization\nBearer alice\nBearer bob\n").unwrap();
    let json =
        dir.join(format!("{}.json", std::path::Path::new(scenario).file_stem().unwrap().to_string_lossy()));
    let args = [
        "run",
        "--scenario",
        scenario,
        url,
        "--connections",
        connections,
        "--connect-timeout",
        "20s",
        "--duration",
        "2s",
        "--data",
        arg(&users),
        "--json",
        arg(&json),
    ];
    let run = wsbench(&args, Duration::from_secs(60));
    let result = read_result(&json);
    assert_matches_schema(&result);
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    (run.code, result, context)
}

#[test]
fn a_recorded_session_imports_into_a_flow_that_replays_through_its_capture() {
    let Some(peer) = python_peer("subscription_server.py", &[]) else { return };
    let dir = scratch("import-session");
    let har = dir.join("session.har");
    std::fs::write(&har, session_har()).unwrap();
    let flow = dir.join("flow.toml");
    let import = wsbench(&["import", arg(&har), "-o", arg(&flow), "--speed", "2"], Duration::from_secs(20));
    import.assert_success();
    for inferred in [
        "capture sub: /sub of message 2",
        "matched by \"type\" = \"ack\"",
        "placeholder {data.authorization} for header Authorization",
    ] {
        assert!(import.stdout.contains(inferred), "{inferred}\n{}", import.describe());
    }
    let text = std::fs::read_to_string(&flow).unwrap();
    let steps: String = text.lines().filter(|line| !line.starts_with('#')).collect();
    assert!(!text.contains("alice-secret") && !steps.contains(RECORDED_SUB), "{text}");
    assert!(text.contains("sleep = \"25ms\""), "the recorded 50 ms pause, halved\n{text}");
    for scenario in [arg(&flow), arg(&har)] {
        let (code, result, context) = replay(&dir, scenario, &peer.url, "200");
        assert_eq!(code, Some(0), "{context}");
        assert!(errors(&result).is_empty(), "{context}");
        for step in ["recv2", "recv4", "recv6"] {
            assert_eq!(
                uint(&result, &format!("/flow/steps/{step}/latency_us/count")),
                200,
                "{step}\n{context}"
            );
        }
    }
    // The same flow with the capture taken out sends the recorded id: the server refuses it.
    let uncaptured = dir.join("uncaptured.toml");
    let edited =
        text.replace("[flow.steps.capture]\nsub = \"/sub\"\n", "").replace("{var.sub}", RECORDED_SUB);
    assert_ne!(edited, text);
    std::fs::write(&uncaptured, edited).unwrap();
    let (code, result, context) = replay(&dir, arg(&uncaptured), &peer.url, "50");
    assert_ne!(code, Some(0), "{context}");
    assert_eq!(uint(&result, "/flow/steps/recv4/unmatched"), 50, "every publish refused\n{context}");
    assert_eq!(uint(&result, "/flow/steps/recv4/latency_us/count"), 0, "{context}");
}

#[test]
fn the_recorded_authorization_is_filled_per_connection_from_data() {
    let dir = scratch("import-authorization");
    let record = dir.join("authorization.txt");
    let args = ["--bearer", "s3cret-token", "--record-header", "Authorization", "--record", arg(&record)];
    let Some(peer) = python_peer("auth_server.py", &args) else { return };
    let message =
        serde_json::json!({ "type": "send", "time": 5.0, "opcode": 1, "data": "{\"type\":\"hello\"}" });
    let echoed =
        serde_json::json!({ "type": "receive", "time": 5.01, "opcode": 1, "data": "{\"type\":\"hello\"}" });
    let har = serde_json::json!({ "log": { "entries": [{ "_resourceType": "websocket",
        "request": { "url": "ws://127.0.0.1:9000/", "headers": [{ "name": "Authorization", "value": "Bearer recorded" }] },
        "_webSocketMessages": [message, echoed] }] } });
    let file = dir.join("echo.har");
    std::fs::write(&file, har.to_string()).unwrap();
    let _slot = heavy(1);
    for (token, connects) in [("Bearer s3cret-token", true), ("Bearer recorded", false)] {
        let users = dir.join("users.csv");
        std::fs::write(&users, format!("authorization\n{token}\n")).unwrap();
        let json = dir.join("r.json");
        let args = ["run", "--scenario", arg(&file), &peer.url, "--connections", "10", "--duration", "1s"];
        let run = wsbench(
            &[&args[..], &["--data", arg(&users), "--json", arg(&json)]].concat(),
            Duration::from_secs(30),
        );
        let result = read_result(&json);
        let context = format!("{token}\n{}\n{}", summary_of(&result), run.describe());
        assert_eq!(run.code == Some(0), connects, "{context}");
        let established = uint(&result, "/summary/connections/established");
        assert_eq!(established, if connects { 10 } else { 0 }, "the server checks the token\n{context}");
    }
    let recorded = std::fs::read_to_string(&record).unwrap();
    assert_eq!(recorded.lines().filter(|line| *line == "Bearer s3cret-token").count(), 10, "{recorded}");
    assert!(!recorded.contains("{data."), "{recorded}");
}

#[test]
fn hostile_recordings_are_refused_naming_the_file_the_place_and_the_bound() {
    let dir = scratch("import-hostile");
    let sparse = dir.join("huge.har");
    std::fs::File::create(&sparse).unwrap().set_len(2 << 30).unwrap();
    assert_usage_error(&["import", arg(&sparse)], "huge.har");
    assert_usage_error(&["import", arg(&sparse)], "256 MiB");
    assert_usage_error(&["run", "--scenario", arg(&sparse)], "256 MiB");
    let nested = dir.join("nested.har");
    std::fs::write(
        &nested,
        format!("{{\"log\":{{\"entries\":[],\"x\":{}{}}}}}", "[".repeat(100_000), "]".repeat(100_000)),
    )
    .unwrap();
    assert_usage_error(&["import", arg(&nested)], "nested.har: no WebSocket messages in it");
    let many = dir.join("many.jsonl");
    let line = "{\"conn\":0,\"event\":\"message\",\"dir\":\"send\",\"time\":0,\"data\":\"x\"}\n";
    std::fs::write(&many, line.repeat(1_000_000)).unwrap();
    assert_usage_error(&["import", arg(&many)], "many.jsonl: line 100001: more than 100,000 messages");
    let empty = dir.join("empty.har");
    std::fs::write(&empty, "{\"log\":{\"entries\":[]}}").unwrap();
    assert_usage_error(&["import", arg(&empty)], "no WebSocket messages");
    assert_usage_error(&["import", arg(&nested), "--speed", "0"], "--speed");
}
