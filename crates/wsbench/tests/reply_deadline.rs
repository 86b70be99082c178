//! The reply deadline, against servers that complete the upgrade and then never answer: a
//! request unanswered past `--reply-timeout` is the error `reply_timeout` (so `errors==0`
//! fails, exit 99; without thresholds the run exits 3), an open loop against a server that
//! stops reading accrues it too with its memory bounded, and a run that completed no request
//! at all fails and says so even when it ended before any deadline passed. A healthy run has
//! no `reply_timeout`.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use support::scripted_server::Script;
use support::silent_server::{Silence, SilentServer};
use support::{describe, fresh_dir, result_schema_errors, shared_server, text, wsbench_bin};
use wsbench::result::RunResult;

/// `wsbench run ARGS… --json DIR/run.json`: its output and the result it wrote.
fn run(dir: &Path, args: &[&str]) -> (Output, RunResult, PathBuf) {
    let json = dir.join("run.json");
    let output = Command::new(wsbench_bin())
        .args(["run"])
        .args(args)
        .args(["--json", json.to_str().unwrap()])
        .output()
        .expect("run wsbench");
    let result = RunResult::read_json(&json).unwrap_or_else(|e| panic!("{e}\n{}", describe(&output)));
    (output, result, json)
}

/// Runs wsbench with `args` and samples its peak resident memory (`VmHWM`) until it exits.
fn run_sampling_peak_rss(args: &[&str]) -> (Output, u64) {
    let mut child = Command::new(wsbench_bin())
        .arg("run")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start wsbench");
    let status_path = format!("/proc/{}/status", child.id());
    let mut peak_kib = 0;
    while child.try_wait().expect("wait for wsbench").is_none() {
        if let Ok(status) = std::fs::read_to_string(&status_path)
            && let Some(line) = status.lines().find(|line| line.starts_with("VmHWM:"))
        {
            let kib: u64 = line.split_whitespace().nth(1).and_then(|n| n.parse().ok()).unwrap_or(0);
            peak_kib = peak_kib.max(kib);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    (child.wait_with_output().expect("wsbench output"), peak_kib * 1024)
}

const SHORT_DEADLINE: [&str; 8] =
    ["--connections", "2", "--warmup", "0s", "--duration", "3s", "--reply-timeout", "1s"];

#[test]
fn a_server_that_never_replies_fails_an_errors_threshold_with_reply_timeouts() {
    let server = SilentServer::start(Silence::ReadsAndDrops);
    let dir = fresh_dir("deadline-threshold");
    let url = server.url();
    let mut args = vec![url.as_str()];
    args.extend(SHORT_DEADLINE);
    args.extend(["--threshold", "errors==0"]);
    let (output, result, json) = run(&dir, &args);
    assert_eq!(output.status.code(), Some(99), "{}", describe(&output));
    // Each connection's one request in flight times out, and the next one goes out.
    assert!(result.counters.reply_timeouts >= 2, "{:?}", result.counters);
    assert_eq!(result.summary.errors.get("reply_timeout"), Some(&result.counters.reply_timeouts));
    assert_eq!(result.summary.errors.get("no_request_answered"), Some(&1));
    assert_eq!(result.summary.measured_exchanges, 0);
    assert_eq!(result.config["reply_timeout"], 1.0);
    let stdout = text(&output.stdout);
    assert!(stdout.contains("✗ FAILED  errors==0"), "{stdout}");
    assert_eq!(result_schema_errors(&json), Vec::<String>::new());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn without_thresholds_a_run_with_no_reply_exits_3_and_says_why() {
    let server = SilentServer::start(Silence::ReadsAndDrops);
    let dir = fresh_dir("deadline-exit-3");
    let url = server.url();
    let mut args = vec![url.as_str()];
    args.extend(SHORT_DEADLINE);
    let (output, result, _) = run(&dir, &args);
    assert_eq!(output.status.code(), Some(3), "{}", describe(&output));
    assert!(result.summary.errors.contains_key("reply_timeout"), "{:?}", result.summary.errors);
    let stdout = text(&output.stdout);
    let why = stdout.lines().next().unwrap_or_default();
    assert!(why.contains("[FAILED: no request was answered: "), "{stdout}");
    assert!(stdout.contains("reply_timeout "), "{stdout}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_run_that_ends_before_the_deadline_with_no_reply_still_fails() {
    let server = SilentServer::start(Silence::ReadsAndDrops);
    let dir = fresh_dir("deadline-none-answered");
    let url = server.url();
    let args =
        [url.as_str(), "--connections", "2", "--warmup", "0s", "--duration", "2s", "--reply-timeout", "1h"];
    let (output, result, _) = run(&dir, &args);
    assert_eq!(output.status.code(), Some(3), "{}", describe(&output));
    assert_eq!(result.counters.reply_timeouts, 0, "nothing was due that long ago");
    assert_eq!(result.summary.messages.unanswered, 2, "in flight at the end");
    // Still awaited when the drain ran out: an error of their own, beside the run's failure.
    let errors: Vec<(&str, u64)> = result.summary.errors.iter().map(|(k, n)| (k.as_str(), *n)).collect();
    assert_eq!(errors, [("no_request_answered", 1), ("unanswered_at_end", 2)]);
    assert!(
        text(&output.stdout).contains("no request was answered: of 2 requests, 0 went past"),
        "{}",
        describe(&output)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_message_protocol_whose_requests_are_ignored_times_out_too() {
    let server = SilentServer::start(Silence::ReadsAndDrops);
    let dir = fresh_dir("deadline-jsonrpc");
    let url = server.url();
    let mut args = vec![url.as_str(), "--protocol", "jsonrpc"];
    args.extend(SHORT_DEADLINE);
    args.extend(["--threshold", "errors==0"]);
    let (output, result, _) = run(&dir, &args);
    assert_eq!(output.status.code(), Some(99), "{}", describe(&output));
    assert!(result.counters.reply_timeouts >= 2, "{:?}", result.counters);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_open_loop_against_a_server_that_stops_reading_accrues_reply_timeouts_in_bounded_memory() {
    let server = SilentServer::start(Silence::StopsReading);
    let url = server.url();
    let args = [
        url.as_str(),
        "--connections",
        "1",
        "--rate",
        "20000/s",
        "--warmup",
        "0s",
        "--duration",
        "6s",
        "--reply-timeout",
        "1s",
        "--payload",
        "bytes:512",
    ];
    let (output, peak_rss) = run_sampling_peak_rss(&args);
    assert_eq!(output.status.code(), Some(3), "{}", describe(&output));
    let stdout = text(&output.stdout);
    assert!(stdout.contains("reply_timeout "), "{stdout}");
    assert!(stdout.contains("no request was answered"), "{stdout}");
    // 20,000 sends a second of 512 bytes would be 60 MiB in six seconds if the outbox kept
    // them: what is held back waits at most a second and is given up.
    assert!(peak_rss < 48 << 20, "peak RSS {} MiB\n{stdout}", peak_rss >> 20);
}

#[test]
fn a_healthy_run_has_no_reply_timeout() {
    let addr = shared_server(&[]);
    let dir = fresh_dir("deadline-healthy");
    let url = format!("ws://{addr}");
    let args =
        [url.as_str(), "--connections", "4", "--warmup", "0s", "--duration", "2s", "--reply-timeout", "1s"];
    let (output, result, _) = run(&dir, &args);
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert_eq!(result.counters.reply_timeouts, 0);
    assert!(result.summary.errors.is_empty(), "{:?}", result.summary.errors);
    assert!(result.summary.measured_exchanges > 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn churn_connections_whose_requests_time_out_are_closed_and_counted() {
    let server = SilentServer::start(Silence::ReadsAndDrops);
    let dir = fresh_dir("deadline-churn");
    let url = server.url();
    let args = ["churn", url.as_str(), "--rate", "10/s", "--duration", "2s", "--reply-timeout", "1s"];
    let (output, result, _) = run(&dir, &args);
    assert_eq!(output.status.code(), Some(3), "{}", describe(&output));
    // Each connection's one message is given up and the connection closes, rather than
    // staying open with nothing to wait for.
    assert!(result.counters.reply_timeouts > 0, "{:?}", result.counters);
    assert_eq!(
        result.counters.reply_timeouts + result.summary.messages.unanswered,
        result.summary.messages.sent
    );
    assert!(result.counters.closes_unanswered > 0, "{:?}", result.counters);
    assert_eq!(result.summary.errors.get("no_request_answered"), Some(&1));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_flow_whose_awaited_sends_get_no_reply_fails_though_no_expect_timed_out() {
    let server = SilentServer::start(Silence::ReadsAndDrops);
    let dir = fresh_dir("deadline-flow");
    let scenario = dir.join("flow.toml");
    std::fs::write(
        &scenario,
        r#"scenario = "flow"
connections = 2

[[flow.steps]]
repeat = "until-end"
steps = [
    { name = "call", send = '{"id":"{conn}-{seq}"}' },
    { expect = "call", match-field = "id", timeout = "1h" },
]
"#,
    )
    .unwrap();
    let url = server.url();
    let args = ["--scenario", scenario.to_str().unwrap(), url.as_str(), "--warmup", "0s", "--duration", "2s"];
    let (output, result, _) = run(&dir, &args);
    assert_eq!(output.status.code(), Some(3), "{}", describe(&output));
    assert_eq!(result.summary.messages.unanswered, 2, "each connection's call, awaited at the end");
    let errors: Vec<(&str, u64)> = result.summary.errors.iter().map(|(k, n)| (k.as_str(), *n)).collect();
    assert_eq!(errors, [("no_request_answered", 1), ("unanswered_at_end", 2)]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn echoes_that_come_after_their_request_was_given_up_are_neither_round_trips_nor_mismatches() {
    // Every echo comes 1.5 s after its request: a request is given up at the first check
    // past the 1 s deadline (checks are a second apart, so some are answered first), and its
    // echo, when it comes, answers nothing still awaited.
    let server = Script::echo().delay_each_echo(Duration::from_millis(1500)).start();
    let dir = fresh_dir("deadline-late-echoes");
    let url = server.url();
    let mut args = vec![url.as_str()];
    args.extend(SHORT_DEADLINE);
    args.extend(["--payload", "json-ts"]);
    let (output, result, _) = run(&dir, &args);
    assert!(result.counters.reply_timeouts > 0, "{}", describe(&output));
    assert!(server.echoes() > 0, "the server did echo, late");
    assert_eq!(result.counters.payload_mismatches, 0, "{}", describe(&output));
    std::fs::remove_dir_all(&dir).unwrap();
}
