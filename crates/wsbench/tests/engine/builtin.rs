//! `wsbench run` against the built-in server it starts itself: the echo run and its result
//! file and report, the throughput and scalability scenarios, a 16 MiB message, and Ctrl-C.

use std::path::PathBuf;
use std::sync::OnceLock;
use std::thread;
use std::time::Duration;

use serde_json::Value;

use crate::harness::{
    Finished, Wsbench, arg, assert_matches_schema, errors, float, heavy, read_result, scratch, summary_of,
    uint, wsbench,
};

/// `wsbench run --duration 2s --connections 50 --json r.json`, run once and shared by the
/// tests that look at it from different sides.
#[derive(Debug)]
struct BuiltinRun {
    run: Finished,
    json: PathBuf,
    result: Value,
}

fn builtin_run() -> &'static BuiltinRun {
    static RUN: OnceLock<BuiltinRun> = OnceLock::new();
    RUN.get_or_init(|| {
        let _slot = heavy(1);
        let dir = scratch("builtin-echo");
        let json = dir.join("r.json");
        let run = wsbench(
            &["run", "--duration", "2s", "--connections", "50", "--json", arg(&json)],
            Duration::from_secs(30),
        );
        run.assert_success();
        assert!(json.exists(), "no result file written\n{}", run.describe());
        let result = read_result(&json);
        BuiltinRun { run, json, result }
    })
}

#[test]
fn run_without_arguments_reports_round_trips_latency_and_server_figures() {
    let BuiltinRun { run, result, .. } = builtin_run();
    let context = || format!("{}\n{}", summary_of(result), run.describe());
    assert!(float(result, "/summary/echoes_per_sec") > 0.0, "no round trips/s\n{}", context());
    assert!(uint(result, "/summary/latency_us/p50") > 0, "latency p50 is 0\n{}", context());
    assert_eq!(uint(result, "/summary/connections/established"), 50, "{}", context());
    assert!(errors(result).is_empty(), "errors against the built-in server\n{}", context());
    assert_eq!(result["target"]["builtin"], Value::Bool(true), "{}", context());
    assert_eq!(result["server"]["found_by"], "spawned", "{}", context());
    assert!(result["server"]["rss_peak_bytes"].is_u64(), "server.rss_peak_bytes missing\n{}", context());
    assert!(result["server"]["cpu_seconds"].is_number(), "server.cpu_seconds missing\n{}", context());
    assert!(
        run.stdout.contains("round trips/s (after warm-up): "),
        "no headline on stdout\n{}",
        run.describe()
    );
}

#[test]
fn result_file_validates_against_the_schema() {
    assert_matches_schema(&builtin_run().result);
}

#[test]
fn report_prints_the_same_figures_as_the_run() {
    let BuiltinRun { run, json, .. } = builtin_run();
    let report = wsbench(&["report", arg(json)], Duration::from_secs(10));
    report.assert_success();
    let headline = run
        .stdout
        .lines()
        .find(|line| line.starts_with("round trips/s"))
        .unwrap_or_else(|| panic!("no `round trips/s` line in the run's output\n{}", run.describe()));
    assert!(
        report.stdout.lines().any(|line| line == headline),
        "the report lacks the run's headline {headline:?}\n{}",
        report.describe()
    );
    // Both render the same result: the whole text must agree.
    assert_eq!(report.stdout, run.stdout, "`wsbench report` differs from what `wsbench run` printed");
}

#[test]
fn throughput_scenario_counts_frames_per_send() {
    let _slot = heavy(1);
    let json = scratch("throughput").join("r.json");
    let run = wsbench(
        &[
            "run",
            "throughput",
            "--connections",
            "10",
            "--frames-per-send",
            "10",
            "--duration",
            "2s",
            "--json",
            arg(&json),
        ],
        Duration::from_secs(30),
    );
    run.assert_success();
    let result = read_result(&json);
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    let (sent, received, unanswered) = (
        uint(&result, "/summary/messages/sent"),
        uint(&result, "/summary/messages/received"),
        uint(&result, "/summary/messages/unanswered"),
    );
    assert!(received > 0, "no echoes\n{context}");
    assert_eq!(sent % 10, 0, "messages are sent 10 frames at a time\n{context}");
    assert_eq!(sent, received + unanswered, "every message sent is either answered or unanswered\n{context}");
    assert!(errors(&result).is_empty(), "errors against the built-in server\n{context}");
    assert_eq!(result["config"]["frames_per_send"], 10, "{context}");
    assert_eq!(uint(&result, "/summary/littles_law/in_flight"), 10, "{context}");
}

#[test]
fn scalability_scenario_holds_connections() {
    let _slot = heavy(1);
    let json = scratch("scalability").join("r.json");
    let run = wsbench(
        &["run", "scalability", "--connections", "500", "--hold", "1s", "--json", arg(&json)],
        Duration::from_secs(30),
    );
    run.assert_success();
    let result = read_result(&json);
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    assert_eq!(uint(&result, "/summary/connections/established"), 500, "{context}");
    assert_eq!(uint(&result, "/summary/connections/failed"), 0, "{context}");
    assert_eq!(uint(&result, "/summary/messages/sent"), 0, "scalability sends nothing\n{context}");
    assert!(errors(&result).is_empty(), "{context}");
    let open_peak = result["timeline"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["connections_open"].as_u64())
        .max();
    assert_eq!(open_peak, Some(500), "the timeline shows all 500 held open\n{context}");
}

#[test]
fn huge_message_echoes_intact() {
    let _slot = heavy(1);
    let json = scratch("huge").join("r.json");
    let run = wsbench(
        &[
            "run",
            "throughput",
            "--connections",
            "1",
            "--payload-bytes",
            "16MiB",
            "--frames-per-send",
            "1",
            "--duration",
            "2s",
            "--json",
            arg(&json),
        ],
        Duration::from_secs(40),
    );
    run.assert_success();
    let result = read_result(&json);
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    assert!(uint(&result, "/summary/messages/received") >= 1, "no 16 MiB echo came back\n{context}");
    assert!(!errors(&result).contains_key("payload_mismatch"), "a 16 MiB echo came back altered\n{context}");
    assert!(errors(&result).is_empty(), "{context}");
    assert!(uint(&result, "/summary/bytes/received") >= 16 * 1024 * 1024, "{context}");
}

#[test]
fn ctrl_c_writes_an_interrupted_result() {
    let _slot = heavy(1);
    let json = scratch("ctrl-c").join("r.json");
    let child = Wsbench::spawn(&["run", "--duration", "30s", "--connections", "20", "--json", arg(&json)]);
    thread::sleep(Duration::from_secs(2));
    // A terminal's Ctrl-C reaches the whole foreground process group: wsbench and the
    // built-in server it started.
    child.signal_group(libc::SIGINT);
    let run = child.finish(Duration::from_secs(2 + 5));
    assert_eq!(run.code, Some(130), "an interrupted run exits with 130\n{}", run.describe());
    assert!(
        run.elapsed < Duration::from_secs(7),
        "took {:.2?} after Ctrl-C at 2 s\n{}",
        run.elapsed,
        run.describe()
    );
    assert!(json.exists(), "no result file after Ctrl-C\n{}", run.describe());
    let result = read_result(&json);
    assert_eq!(result["interrupted"], Value::Bool(true), "{}\n{}", summary_of(&result), run.describe());
    assert!(float(&result, "/elapsed_s") < 10.0, "{}", summary_of(&result));
    assert_matches_schema(&result);
    assert!(
        run.stdout.contains("INTERRUPTED"),
        "the report says the run was interrupted\n{}",
        run.describe()
    );
}
