//! A real browser session, recorded and replayed at scale. Headless Chromium opens a
//! graphql-ws application's page (`tests/peers/graphql_app_server.js`: the official client
//! asks `hello`, then subscribes to five quotes) twice (`tests/browser/record-session.mjs`):
//! once with its WebSocket through `wsbench record`, which writes the JSONL recording, and
//! once straight to the server while the DevTools protocol's WebSocket events of the same
//! browser are written as the HAR DevTools exports. Each recording is imported (`wsbench
//! import`) and the flow replayed at 1,000 connections: no error, and the server's own
//! counts (connections accepted, messages received and sent, read from its `/counts`) equal
//! to wsbench's (connections established, messages sent and received).
//!
//! Chromium, node, playwright-core and the graphql-ws peer are installed by
//! `scripts/install-test-peers.sh`; when one is missing the test is skipped with a message,
//! unless `WSBENCH_REQUIRE_PEERS=1`, which fails it.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use support::recorder::Recorder;
use support::{fresh_dir, peer_missing, run_with_timeout, wsbench_bin};

const CHROMIUM: &str = "/usr/bin/chromium";
/// Connections each recording is replayed at.
const CONNECTIONS: u64 = 1_000;
/// Messages the recorded client sent (connection_init and two subscribes) and received
/// (connection_ack, hello's next and complete, five quotes and complete).
const SENT_PER_CONNECTION: u64 = 3;
const RECEIVED_PER_CONNECTION: u64 = 9;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("repo root")
}

/// The browser script, once Chromium, node and playwright-core are all there.
fn browser_script() -> Option<PathBuf> {
    let playwright = repo_root().join("tests/browser/node_modules/playwright-core/package.json");
    let node = Command::new("node").arg("--version").stdin(Stdio::null()).output();
    let missing = if !Path::new(CHROMIUM).exists() {
        format!("{CHROMIUM} does not exist")
    } else if !playwright.exists() {
        format!("{} does not exist", playwright.display())
    } else if !node.is_ok_and(|out| out.status.success()) {
        "cannot run `node --version`".to_owned()
    } else {
        return Some(repo_root().join("tests/browser/record-session.mjs"));
    };
    peer_missing(&format!("browser recording not installed ({missing})"));
    None
}

/// The application's own counts (`GET /counts`).
fn server_counts(port: u16) -> Value {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    stream.write_all(b"GET /counts HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let body = answer.split_once("\r\n\r\n").map(|(_, body)| body).unwrap_or_default();
    serde_json::from_str(body).unwrap_or_else(|e| panic!("/counts: {e}: {answer}"))
}

fn number(value: &Value, pointer: &str) -> u64 {
    value.pointer(pointer).and_then(Value::as_u64).unwrap_or_else(|| panic!("{pointer} in {value}"))
}

/// Imports `recording` and replays it at [`CONNECTIONS`] against the application on
/// `port`: the run's result, the server's counts over the run, and what was printed.
fn import_and_replay(dir: &Path, recording: &Path, port: u16) -> (Value, [u64; 3], String) {
    let name = recording.extension().unwrap().to_string_lossy().into_owned();
    let flow = dir.join(format!("{name}.toml"));
    let import = run_with_timeout(
        Command::new(wsbench_bin()).arg("import").arg(recording).arg("-o").arg(&flow),
        Duration::from_secs(30),
    );
    assert_eq!(import.status.and_then(|s| s.code()), Some(0), "{}", import.describe("wsbench import"));
    let json = dir.join(format!("{name}-replay.json"));
    let before = server_counts(port);
    let url = format!("ws://127.0.0.1:{port}/graphql");
    let connections = CONNECTIONS.to_string();
    let args = ["run", "--scenario", flow.to_str().unwrap(), &url, "--connections", &connections];
    let extra = ["--duration", "10s", "--connect-timeout", "30s", "--json", json.to_str().unwrap()];
    let run = run_with_timeout(Command::new(wsbench_bin()).args(args).args(extra), Duration::from_secs(180));
    let after = server_counts(port);
    let context = format!("{}\n{}", import.stdout, run.describe(&format!("wsbench {}", args.join(" "))));
    assert_eq!(run.status.and_then(|s| s.code()), Some(0), "{context}");
    let result: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let delta = ["/connections", "/received", "/sent"].map(|key| number(&after, key) - number(&before, key));
    (result, delta, context)
}

#[test]
fn a_browser_session_recorded_by_the_proxy_and_as_a_har_replays_at_1000_connections_as_the_server_counts() {
    let Some(script) = browser_script() else { return };
    let Some(app) = wsbench_testpeers::or_skip(wsbench_testpeers::start_graphql_app()) else { return };
    let port = app.port();
    let dir = fresh_dir("recorded-browser");
    let (jsonl, har) = (dir.join("session.jsonl"), dir.join("session.har"));
    let upstream = format!("ws://127.0.0.1:{port}");
    let recorder = Recorder::start(&["--upstream", &upstream, "--out", jsonl.to_str().unwrap()]);
    let page = |ws: &str| format!("http://127.0.0.1:{port}/?ws={ws}/graphql");
    let browser = run_with_timeout(
        Command::new("node").arg(&script).args([page(&recorder.url), page(&upstream)]).arg(&har),
        Duration::from_secs(120),
    );
    let described = browser.describe("node tests/browser/record-session.mjs");
    assert_eq!(browser.status.and_then(|s| s.code()), Some(0), "{described}");
    let shown: Value =
        serde_json::from_str(browser.stdout.trim()).unwrap_or_else(|e| panic!("{e}: {described}"));
    for page in ["/proxied", "/direct"] {
        assert_eq!(number(&shown, &format!("{page}/quotes")), 5, "{described}");
    }
    let recorded = SENT_PER_CONNECTION + RECEIVED_PER_CONNECTION;
    assert_eq!(number(&shown, "/har/messages"), recorded, "{described}");
    let (code, printed) = recorder.stop(libc::SIGINT);
    assert_eq!(code, Some(0), "{printed}");
    assert!(printed.contains(&format!("recorded 1 connections, {recorded} messages")), "{printed}");
    for recording in [&jsonl, &har] {
        let (result, [connections, received, sent], context) = import_and_replay(&dir, recording, port);
        assert_eq!(result.pointer("/summary/errors"), Some(&serde_json::json!({})), "{context}");
        assert_eq!(number(&result, "/summary/connections/established"), CONNECTIONS, "{context}");
        let (ours_sent, ours_received) =
            (number(&result, "/summary/messages/sent"), number(&result, "/summary/messages/received"));
        assert_eq!(
            (ours_sent, ours_received),
            (CONNECTIONS * SENT_PER_CONNECTION, CONNECTIONS * RECEIVED_PER_CONNECTION),
            "{context}"
        );
        assert_eq!(
            (connections, received, sent),
            (CONNECTIONS, ours_sent, ours_received),
            "the server's counts\n{context}"
        );
        eprintln!(
            "{}: {connections} connections; wsbench sent {ours_sent}, received {ours_received}; the server received {received}, sent {sent}; errors none",
            recording.display()
        );
    }
}
