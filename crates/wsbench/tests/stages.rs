//! `run --stages` end to end, against `wsbench serve` and a fleet server (node.js `ws`): a
//! three-stage rate run sends what its plan says, stage by stage; a ramp up, hold and ramp
//! down of connections opens them all and closes every one cleanly (close 1000 answered);
//! each stage has its row in the result (valid against the schema), the terminal report and
//! the HTML page; Little's law is given per stage, never for the whole run; a threshold on
//! one stage fails the run with 99; bad stages (a target without its unit, an empty stage)
//! are usage errors. Stages last a few seconds and the assertions are on what was sent, opened and
//! closed, never on how fast.

mod support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use support::{fresh_dir, refused, result_schema_errors, run_with_timeout, shared_server, wsbench_bin};

const LIMIT: Duration = Duration::from_secs(120);
/// A URL nothing listens on: runs refused before load never reach it.
const NOWHERE: &str = "ws://127.0.0.1:9/";

/// `wsbench run TARGET ARGS… --json DIR/NAME.json --quiet`: exit code, stdout, the result.
fn staged_run(target: &str, args: &[&str], dir: &Path, name: &str) -> (Option<i32>, String, Value, PathBuf) {
    let json = dir.join(format!("{name}.json"));
    let finished = run_with_timeout(
        Command::new(wsbench_bin()).arg("run").arg(target).args(args).arg("--json").arg(&json).arg("--quiet"),
        LIMIT,
    );
    let what = finished.describe(&format!("run {target} {}", args.join(" ")));
    let result: Value =
        serde_json::from_slice(&std::fs::read(&json).unwrap_or_else(|e| panic!("{what}: {e}")))
            .unwrap_or_else(|e| panic!("{what}: {e}"));
    let errors = result_schema_errors(&json);
    assert!(errors.is_empty(), "{name} does not validate:\n{}", errors.join("\n"));
    (finished.status.and_then(|s| s.code()), finished.stdout, result, json)
}

fn stages(result: &Value) -> &Vec<Value> {
    result["stages"].as_array().unwrap_or_else(|| panic!("no stages in {result}"))
}

/// The HTML page of `json`, as `wsbench report --html` writes it.
fn html_page(json: &Path) -> String {
    let page = json.with_extension("html");
    let finished = run_with_timeout(
        Command::new(wsbench_bin()).arg("report").arg(json).arg("--html").arg(&page),
        Duration::from_secs(30),
    );
    assert_eq!(finished.status.and_then(|s| s.code()), Some(0), "{}", finished.describe("report --html"));
    std::fs::read_to_string(page).unwrap()
}

/// A three-stage open-loop run: each stage's sends are its rate × its length (none past the
/// plan), each stage's completed round trips grow with its rate, every row is printed.
fn three_rate_stages(target: &str, dir: &Path) {
    let plan = "2s:50/s,2s:250/s,2s:1000/s";
    let (code, stdout, result, json) =
        staged_run(target, &["--stages", plan, "--connections", "10"], dir, "rate");
    assert_eq!(code, Some(0), "{stdout}");
    let stages = stages(&result);
    assert_eq!(stages.len(), 3);
    let sent = result["counters"]["messages_sent"].as_u64().unwrap();
    // The plan holds 2 × (50 + 250 + 1,000) sends and none more; those due before the
    // connections were open (late on a busy machine) are not made up for.
    assert!((1000..=2600).contains(&sent), "sent {sent} of the plan's 2,600: {result}");
    let exchanges: Vec<u64> = stages.iter().map(|s| s["exchanges"].as_u64().unwrap()).collect();
    assert!(exchanges[0] < exchanges[1] && exchanges[1] < exchanges[2], "{exchanges:?}");
    assert!(exchanges[2] <= 2000 + 10, "stage 3 completed more than it sent: {exchanges:?}");
    for (i, (stage, label)) in stages.iter().zip(["2s:50/s", "2s:250/s", "2s:1000/s"]).enumerate() {
        assert_eq!(stage["name"], format!("stage{}", i + 1));
        assert_eq!(stage["stage"], label);
        assert_eq!(
            (stage["start_s"].as_u64(), stage["end_s"].as_u64()),
            (Some(2 * i as u64), Some(2 * i as u64 + 2))
        );
        assert_eq!(stage["latency_us"]["count"].as_u64(), stage["exchanges"].as_u64(), "{stage}");
        assert!(
            stdout.lines().any(|line| line.trim_start().starts_with(&format!("stage{}  {label}", i + 1))),
            "{stdout}"
        );
    }
    let page = html_page(&json);
    assert!(page.contains("<section id=\"stages\">"), "no stages section");
    assert_eq!(page.matches("<td>stage").count(), 3, "one row per stage");
}

/// Ramp up to 20 connections, hold, ramp down to none: all 20 opened, each closed by the
/// stages with close 1000 and the server's answer counted; the last stage ends with none
/// open and the server's memory at its end in the result.
fn ramp_up_hold_down(target: &str, dir: &Path, probed: bool) {
    let (code, stdout, result, json) = staged_run(target, &["--stages", "2s:20c,2s:20c,2s:0c"], dir, "conns");
    assert_eq!(code, Some(0), "{stdout}");
    let counters = &result["counters"];
    assert_eq!(counters["connections_established"], 20, "{counters}");
    assert_eq!(counters["closes_answered"], 20, "every connection closed cleanly: {counters}");
    assert_eq!(counters["closes_unanswered"], 0, "{counters}");
    assert_eq!(result["summary"]["errors"], serde_json::json!({}), "{}", result["summary"]);
    let stages = stages(&result);
    assert_eq!(stages[1]["connections_open"], 20, "{}", stages[1]);
    assert!(stages.iter().all(|s| s["exchanges"].as_u64() > Some(0)), "each stage completed round trips");
    assert!(stages[0]["connections_open"].as_u64() > Some(0));
    if probed {
        assert!(stages[2]["server_rss_bytes"].as_u64() > Some(0), "the server's memory after the ramp-down");
    }
    assert!(stdout.contains("stage3  2s:0c"), "{stdout}");
    assert_eq!(html_page(&json).matches("<td>stage").count(), 3);
    littles_law_per_stage(&stdout, &result);
}

/// A staged closed loop's concurrency changes from stage to stage: Little's law is given per
/// stage, and never for the run as a whole (the run used to predict from the peak's 20
/// connections, ramps included). The ramps (stage 1 opens connection k at k/10 s, stage 3
/// closes them likewise) predict nothing, their counts changing; the held stage predicts
/// from its 20 when every second of it saw them all.
fn littles_law_per_stage(stdout: &str, result: &Value) {
    let law = &result["summary"]["littles_law"];
    assert!(
        law["predicted_mean_latency_us"].is_null() && law["ratio"].is_null(),
        "no run-wide prediction: {law}"
    );
    assert!(!stdout.contains("Little's law: "), "no run-wide line:\n{stdout}");
    let block = stdout
        .split("Little's law per stage")
        .nth(1)
        .unwrap_or_else(|| panic!("no per-stage block:\n{stdout}"));
    for (i, stage) in stages(result).iter().enumerate() {
        let mean =
            stage["connections_mean"].as_f64().unwrap_or_else(|| panic!("no connections_mean: {stage}"));
        assert!(mean > 0.0 && mean <= 20.0, "{stage}");
        let name = stage["name"].as_str().unwrap();
        let line = block
            .lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("{name}:\n{block}"));
        let steady = mean == stage["connections_open"].as_f64().unwrap();
        assert!(i == 1 || !steady, "a ramp's count changes: {stage}");
        match steady {
            true => assert!(
                line.contains("20 × 1 ÷ ") && line.contains("predicted") && line.contains("measured"),
                "{line}"
            ),
            false => {
                assert!(line.contains("no prediction (the connections open changed over the stage"), "{line}")
            }
        }
    }
}

#[test]
fn rate_and_connection_stages_against_wsbench_serve() {
    let addr = shared_server(&[]);
    let target = format!("ws://{addr}");
    let dir = fresh_dir("stages-serve");
    three_rate_stages(&target, &dir);
    ramp_up_hold_down(&target, &dir, true);
    std::fs::remove_dir_all(dir).unwrap();
}

/// The fleet's node.js `ws` server, started on a free port; stopped on drop.
struct NodeWs(Child, String);

impl Drop for NodeWs {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn node_ws() -> Option<NodeWs> {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../servers/node-ws");
    if !folder.join("node_modules/ws/package.json").exists() {
        support::peer_missing("servers/node-ws is not installed (wsbench fleet install node-ws)");
        return None;
    }
    let mut child = Command::new("node")
        .arg("server.js")
        .arg("0")
        .current_dir(&folder)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut line = String::new();
    BufReader::new(child.stdout.take()?).read_line(&mut line).ok()?;
    let url = line.trim().strip_prefix("listening on ")?.to_owned();
    Some(NodeWs(child, url))
}

#[test]
fn rate_and_connection_stages_against_the_fleets_node_ws() {
    let Some(server) = node_ws() else { return };
    let dir = fresh_dir("stages-node-ws");
    three_rate_stages(&server.1, &dir);
    ramp_up_hold_down(&server.1, &dir, true);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_failed_stage_threshold_exits_99_and_a_met_one_passes() {
    let addr = shared_server(&[]);
    let dir = fresh_dir("stages-threshold");
    let args =
        ["--stages", "1s:10c,1s:10c", "--threshold", "stage1.errors==0", "--threshold", "stage2.p99<1us"];
    let (code, stdout, result, _) = staged_run(&format!("ws://{addr}"), &args, &dir, "threshold");
    assert_eq!(code, Some(99), "{stdout}");
    let judged = result["summary"]["thresholds"].as_array().unwrap();
    assert_eq!(judged[0]["passed"], true, "{judged:?}");
    assert_eq!(judged[1]["passed"], false, "{judged:?}");
    assert_eq!(judged[1]["value"].as_f64(), result["stages"][1]["latency_us"]["p99"].as_f64());
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn stages_that_cannot_run_are_usage_errors_naming_the_conflict() {
    refused(
        &["run", "--stages", "10s:10c", "--connections", "5"],
        2,
        "--connections: does not combine with --stages",
    );
    refused(
        &["run", "--stages", "10s:10/s", "--find-max-rate", "--slo", "p99<10ms"],
        2,
        "--find-max-rate: does not combine",
    );
    refused(&["run", "--stages", "1s:1c", "--threshold", "stage2.p99<1ms"], 2, "the run has 1 stages");
    refused(&["run", "--threshold", "stage1.p99<1ms"], 2, "names a stage: give --stages");
    refused(&["run", "--stages", "10s:10c,10s:0c,10s:5c"], 2, "stage3: connections rise again after falling");
    refused(&["run", "--stages", "1500ms:10c"], 2, "a stage lasts whole seconds");
    // A bare number could be connections or a rate (it was taken as 10/s with the default
    // 1,000 connections), and an empty stage could be anything: both refused before load.
    refused(
        &["run", NOWHERE, "--stages", "1s:10"],
        2,
        "stage1: `10` has no unit: write 10c for 10 connections or 10/s",
    );
    refused(&["run", NOWHERE, "--stages", "1s:10c,,1s:0c"], 2, "stage2 of `1s:10c,,1s:0c` is empty");
    refused(&["run", "--scenario", "churn", "--stages", "5s:10c"], 2, "connection stages do not apply");
}

/// A staged run's `--stream` lines name the stage each second falls in (as the result
/// names them), so the live view, the stream and the dashboard say where the plan is.
#[test]
fn a_staged_runs_stream_lines_carry_their_stage() {
    let addr = shared_server(&[]);
    let dir = fresh_dir("stages-stream");
    let stream = dir.join("live.jsonl");
    let args = ["--stages", "2s:50/s,2s:100/s", "--connections", "2", "--stream", stream.to_str().unwrap()];
    let (code, stdout, _, _) = staged_run(&format!("ws://{addr}"), &args, &dir, "streamed");
    assert_eq!(code, Some(0), "{stdout}");
    let text = std::fs::read_to_string(&stream).unwrap();
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let mut seen = Vec::new();
    for line in &lines {
        let second = line["second"].as_u64().unwrap();
        if second < 4 {
            assert_eq!(line["stage"], format!("stage{}", second / 2 + 1), "{line}");
            seen.push(second);
        }
    }
    assert_eq!(seen, [0, 1, 2, 3], "every second of the plan streamed once:\n{text}");
    std::fs::remove_dir_all(dir).unwrap();
}
