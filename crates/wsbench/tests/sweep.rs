//! `wsbench sweep` end to end with the real binary. Bad input is refused in one line
//! with exit code 2 before any load: the sweeps are pointed at a listener of the test's
//! own, which must never see a connection. A short real sweep of the built-in server
//! writes a file that validates against `schema/sweep.schema.json` (each step's result
//! against `schema/result.schema.json`), that `wsbench report` renders as the sweep
//! printed it, and whose failed threshold on the sweep's figures exits 99.

mod support;

use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use support::{fresh_dir, refused, run_with_timeout, wsbench_bin};

fn schema_errors(name: &str, instance: &Value) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schema").join(name);
    let schema: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("a valid JSON Schema");
    validator.iter_errors(instance).map(|e| format!("{}: {e}", e.instance_path)).collect()
}

#[test]
fn bad_sweeps_are_refused_in_one_line_before_any_load() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("ws://{}/", listener.local_addr().unwrap());
    let cases: &[(&[&str], &str)] = &[
        (&["--connections", "100"], "--connections: a sweep needs a series of loads"),
        (&["--connections", "1,8,4"], "`1,8,4` does not rise: 4 comes after 8"),
        (&["--connections", "100..10"], "a range rises from its lowest load to its highest"),
        (&["--connections", "1..4", "--steps", "12"], "12 steps do not fit: only 4 different loads"),
        (&["--connections", "1..100", "--steps", "1"], "a sweep has at least 2 steps"),
        (&["--connections", "1..1000", "--steps", "101"], "101 steps are more than the 100 a sweep may have"),
        (&["--connections", "1..10", "--rate", "10/s..100/s", "--steps", "3"], "a sweep varies one load"),
        (
            &["--connections", "10", "--rate", "10/s..1000/s", "--steps", "3", "--duration", "1s"],
            "too few for its percentiles",
        ),
        (&["--connections", "1..1000", "--steps", "10", "--duration", "20h"], "more than a run may (7 days)"),
        (
            &["--connections", "1..64", "--steps", "7", "--holdout", "2"],
            "--holdout: 2 of 7 steps leaves 5 to fit",
        ),
        (
            &["--rate", "1000/s..5000/s", "--connections", "10", "--threshold", "usl_peak>5"],
            "`usl_peak` needs the USL fit",
        ),
        (&["--connections", "1,2", "--threshold", "knee>5"], "unknown figure `knee`"),
        (&["--connections", "1,2", "--stages", "1s:1c"], "--stages: does not apply to sweep"),
        (&["--connections", "1,2", "--find-max-rate", "--slo", "p99<1ms"], "does not apply to sweep"),
        (&["--connections", "1,2", "--json", "/nonexistent/s.json"], "--json /nonexistent/s.json"),
        (&["--connections", "1,20000000"], "is too many"),
    ];
    for (args, expected) in cases {
        let mut all = vec!["sweep", url.as_str()];
        all.extend_from_slice(args);
        refused(&all, 2, expected);
    }
    // compare takes a series only when it sweeps.
    refused(&["compare", "--servers", "builtin", "--connections", "1,2"], 2, "a series needs --sweep");
    match listener.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("a refused sweep sent load: {other:?}"),
    }
}

#[test]
fn a_short_sweep_writes_its_file_reports_it_back_and_gates_on_its_figures() {
    let dir = fresh_dir("sweep-short");
    let json = dir.join("sweep.json");
    let mut command = Command::new(wsbench_bin());
    command
        .args(["sweep", "--connections", "1,2,4,8", "--duration", "1s", "--warmup", "1s", "--quiet"])
        .args(["--threshold", "knee_rate>1000000000", "--threshold", "max_rate>=0", "--json"])
        .arg(&json);
    let finished = run_with_timeout(&mut command, Duration::from_secs(180));
    let what = finished.describe("wsbench sweep");
    assert_eq!(finished.status.and_then(|s| s.code()), Some(99), "a failed threshold exits 99: {what}");
    let lines: Vec<&str> = finished.stdout.lines().collect();
    assert!(
        lines[0].starts_with("sweep of echo against builtin: 1 connection to 8 connections in 4 steps"),
        "{what}"
    );
    assert!(lines[1].starts_with("step  connections  round trips/s"), "{what}");
    for (row, connections) in lines[2..6].iter().zip(["1", "2", "4", "8"]) {
        assert_eq!(row.split_whitespace().nth(1), Some(connections), "{what}");
    }
    assert!(finished.stdout.contains("USL fit: too few steps: "), "4 steps are too few to fit: {what}");
    assert!(finished.stdout.contains("threshold knee_rate>1000000000: FAILED"), "{what}");

    let file: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let problems = schema_errors("sweep.schema.json", &file);
    assert!(problems.is_empty(), "the sweep file does not validate:\n{}", problems.join("\n"));
    assert_eq!(file["steps"].as_array().map(Vec::len), Some(4));
    for step in file["steps"].as_array().unwrap() {
        let problems = schema_errors("result.schema.json", &step["result"]);
        assert!(problems.is_empty(), "a step's result does not validate:\n{}", problems.join("\n"));
    }
    assert_eq!(file["analysis"]["usl"]["outcome"], "refused");
    for without in ["analysis", "steps", "planned", "varied"] {
        let mut cut = file.clone();
        cut.as_object_mut().unwrap().remove(without);
        assert!(!schema_errors("sweep.schema.json", &cut).is_empty(), "the schema accepts no `{without}`");
    }
    let mut numbers_in_a_refusal = file.clone();
    numbers_in_a_refusal["analysis"]["usl"]["sigma"] =
        serde_json::json!({ "value": 0.1, "low": 0.0, "high": 0.2 });
    assert!(
        !schema_errors("sweep.schema.json", &numbers_in_a_refusal).is_empty(),
        "a refused fit with numbers"
    );

    let report =
        run_with_timeout(Command::new(wsbench_bin()).arg("report").arg(&json), Duration::from_secs(30));
    assert_eq!(report.status.and_then(|s| s.code()), Some(0), "{}", report.describe("wsbench report"));
    assert_eq!(report.stdout, finished.stdout, "the report of the file is what the sweep printed");
    let _ = std::fs::remove_dir_all(&dir);
}
