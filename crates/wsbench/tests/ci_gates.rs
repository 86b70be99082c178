//! What CI gates on, against real runs of the built-in server: `--threshold` exits 99 when
//! one fails (and says which, with the value measured), 0 when all hold, 2 when one cannot
//! be read; a `--processes` run judges its merged result, not its shards; a rate search
//! that finds no rate holding exits 3.

mod support;

use std::path::Path;
use std::process::{Command, Output};

use support::{describe, fresh_dir, result_schema_errors, text, wsbench_bin};
use wsbench::result::RunResult;

fn wsbench(args: &[&str]) -> Output {
    Command::new(wsbench_bin()).args(args).output().expect("run wsbench")
}

fn path(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn a_failed_threshold_exits_99_and_says_which_with_the_value() {
    let dir = fresh_dir("gates-fail");
    let json = dir.join("run.json");
    let output = wsbench(&[
        "run",
        "--duration",
        "3s",
        "--connections",
        "10",
        "--threshold",
        "p99<1us",
        "--threshold",
        "p99<10s",
        "--json",
        path(&json),
    ]);
    assert_eq!(output.status.code(), Some(99), "{}", describe(&output));
    let stdout = text(&output.stdout);
    let failed = stdout.lines().find(|l| l.contains("p99<1us")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        failed.starts_with("thresholds:") && failed.contains("✗ FAILED  p99<1us  (measured "),
        "{failed}"
    );
    assert!(stdout.lines().any(|l| l.contains("✓ passed  p99<10s  (measured ")), "{stdout}");
    let result = RunResult::read_json(&json).unwrap();
    let judged: Vec<(&str, bool)> =
        result.summary.thresholds.iter().map(|t| (t.expression.as_str(), t.passed)).collect();
    assert_eq!(judged, [("p99<1us", false), ("p99<10s", true)]);
    assert_eq!(result.summary.thresholds[0].value, Some(result.summary.latency_us.p99 as f64));
    assert!(result.run_id.as_deref().is_some_and(|id| !id.is_empty()));
    assert_eq!(result_schema_errors(&json), Vec::<String>::new());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn thresholds_that_hold_exit_0_or_3_only_for_counted_errors() {
    let output = wsbench(&["run", "--duration", "3s", "--connections", "10", "--threshold", "p99<10s"]);
    let stdout = text(&output.stdout);
    let expected = if stdout.contains("errors:       none") { 0 } else { 3 };
    assert_eq!(output.status.code(), Some(expected), "{}", describe(&output));
    assert!(stdout.contains("thresholds:   ✓ passed  p99<10s  (measured "), "{stdout}");
}

#[test]
fn a_threshold_without_a_unit_is_a_usage_error_asking_for_one() {
    let output = wsbench(&["run", "--duration", "3s", "--connections", "10", "--threshold", "p99<10"]);
    assert_eq!(output.status.code(), Some(2), "{}", describe(&output));
    let stderr = text(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("wsbench: --threshold: `p99<10`: `10` has no unit: add one, e.g. 10ms"),
        "{stderr}"
    );
}

#[test]
fn a_processes_run_judges_its_merged_result_and_not_its_shards() {
    let dir = fresh_dir("gates-processes");
    let json = dir.join("run.json");
    let scenario = dir.join("gates.toml");
    // From the scenario file, as a CI job would keep them.
    std::fs::write(&scenario, "threshold = [\"p99<1us\", \"errors==0\"]\n").unwrap();
    let output = wsbench(&[
        "run",
        "--scenario",
        path(&scenario),
        "--processes",
        "2",
        "--connections",
        "20",
        "--warmup",
        "0s",
        "--duration",
        "2s",
        "--json",
        path(&json),
    ]);
    assert_eq!(output.status.code(), Some(99), "{}", describe(&output));
    let merged = RunResult::read_json(&json).unwrap();
    let judged: Vec<&str> = merged.summary.thresholds.iter().map(|t| t.expression.as_str()).collect();
    assert_eq!(judged, ["p99<1us", "errors==0"]);
    assert_eq!(merged.summary.thresholds[0].value, Some(merged.summary.latency_us.p99 as f64));
    let run_id = merged.run_id.clone().expect("the merged result has the run's id");
    for i in 0..2 {
        let shard = RunResult::read_json(&dir.join(format!("run.shards/shard-{i}.json"))).unwrap();
        assert!(shard.summary.thresholds.is_empty(), "shard {i} judged itself");
        assert_eq!(shard.run_id.as_deref(), Some(run_id.as_str()), "shard {i} carries the run's id");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_rate_search_where_no_rate_holds_exits_3() {
    let output = wsbench(&[
        "run",
        "echo",
        "--find-max-rate",
        "--slo",
        "p99<1us",
        "--connections",
        "1",
        "--rate",
        "1000/s",
        "--warmup",
        "0s",
        "--duration",
        "100ms",
    ]);
    assert_eq!(output.status.code(), Some(3), "{}", describe(&output));
    assert!(text(&output.stdout).contains("p99"), "{}", describe(&output));
}
