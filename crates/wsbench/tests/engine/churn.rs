//! The churn scenario: connections opened at `--rate` per second, each doing
//! connect → upgrade → K echoes → close, against the built-in server (every scheduled cycle
//! completes, the server's descriptors come back to their count before the run, the result
//! validates and merges) and against a scripted server that leaves some closes unanswered
//! (exactly those are counted).

use std::time::Duration;

use serde_json::Value;

use crate::bad_input::assert_usage_error;
use crate::harness::{
    Finished, arg, assert_matches_schema, errors, heavy, read_result, scratch, summary_of, uint, wsbench,
};
use crate::support::scripted_server::Script;

/// 200 new connections per second for 2 s: 400 scheduled cycles of 3 echoes each.
const CYCLES: u64 = 400;
const K: u64 = 3;

#[test]
fn churn_against_the_builtin_server_completes_every_cycle_and_releases_every_fd() {
    let _slot = heavy(1);
    let dir = scratch("churn-builtin");
    let json = dir.join("r.json");
    let flags = "run churn --rate 200/s --duration 2s --messages-per-connection 3 \
                 --threshold errors==0 --threshold connect_p99<2s";
    let (run, result) = successful_run(flags, &json);
    let context = || format!("{}\n{}", summary_of(&result), run.describe());
    assert!(errors(&result).is_empty(), "errors against the built-in server\n{}", context());
    // Every scheduled connection ran its whole cycle: counting, not timing.
    assert_counts(
        &result,
        &[
            ("/counters/connections_attempted", CYCLES),
            ("/churn/cycles", CYCLES),
            ("/churn/closes_answered", CYCLES),
            ("/churn/closes_unanswered", 0),
            ("/counters/messages_received", CYCLES * K),
            ("/summary/connect_us/count", CYCLES),
        ],
        &context,
    );
    // The server's descriptors are exactly what they were before the load.
    let fds = &result["churn"]["server_drift"]["fds"];
    assert_eq!(fds["after"], fds["baseline"], "server fds did not return to baseline\n{}", context());
    assert!(fds["baseline"].as_u64().is_some_and(|n| n > 0), "no fd baseline\n{}", context());
    assert!(run.stdout.contains("400 cycles completed"), "{}", run.describe());
    assert!(run.stdout.contains("server fds:"), "{}", run.describe());
    assert!(run.stdout.contains("(back to baseline)"), "{}", run.describe());
    // Churn's own closes are its work done, not the server cutting the run short.
    assert!(result.get("ended_early").is_none(), "{}", context());
    assert!(!run.stdout.contains("ENDED EARLY"), "{}", run.describe());
    assert_matches_schema(&result);
    // The merge path recomputes the churn figures from the merged counters.
    let merged_json = dir.join("merged.json");
    let merge = wsbench(&["merge", arg(&json), "-o", arg(&merged_json)], Duration::from_secs(20));
    merge.assert_success();
    let merged: Value = read_result(&merged_json);
    assert_eq!(uint(&merged, "/churn/cycles"), CYCLES, "{}", merge.describe());
}

#[test]
fn churn_counts_exactly_the_closes_the_server_left_unanswered() {
    let _slot = heavy(1);
    let server = Script::echo().ignore_close_every_nth_connection(5).start();
    let dir = scratch("churn-unanswered");
    let json = dir.join("r.json");
    let url = server.url();
    let run = wsbench(
        &["run", "churn", &url, "--rate", "50/s", "--duration", "1s", "--no-probe", "--json", arg(&json)],
        Duration::from_secs(60),
    );
    run.assert_completed_with_failures();
    let result = read_result(&json);
    let context = || format!("{}\n{}", summary_of(&result), run.describe());
    assert_counts(
        &result,
        &[
            ("/counters/connections_attempted", 50),
            ("/churn/closes_unanswered", 10),
            ("/churn/closes_answered", 40),
            ("/churn/cycles", 40),
        ],
        &context,
    );
    assert_eq!(errors(&result).get("close_unanswered"), Some(&10), "{}", context());
}

#[test]
fn churn_flags_are_checked() {
    assert_usage_error(&["run", "churn", "--connections", "5"], "--connections");
    assert_usage_error(&["run", "churn", "--ramp", "5/s"], "--ramp");
    assert_usage_error(&["run", "echo", "--messages-per-connection", "3"], "--messages-per-connection");
    assert_usage_error(&["run", "churn", "--rate", "fast"], "fast");
}

/// Each `(JSON pointer, count)` of `result` is exactly that count.
fn assert_counts(result: &Value, expected: &[(&str, u64)], context: &dyn Fn() -> String) {
    for &(pointer, count) in expected {
        assert_eq!(uint(result, pointer), count, "{pointer}\n{}", context());
    }
}

#[test]
fn churn_over_two_processes_completes_every_cycle_and_reports_the_parents_drift() {
    let _slot = heavy(2);
    let json = scratch("churn-processes").join("r.json");
    let (run, result) = successful_run("run churn --rate 200/s --duration 1s --processes 2", &json);
    let context = || format!("{}\n{}", summary_of(&result), run.describe());
    assert_counts(&result, &[("/churn/cycles", 200), ("/churn/closes_answered", 200)], &context);
    let fds = &result["churn"]["server_drift"]["fds"];
    assert!(fds["baseline"].is_u64(), "no drift in the merged result\n{}", context());
    assert_eq!(fds["after"], fds["baseline"], "server fds did not return to baseline\n{}", context());
}

/// `wsbench FLAGS --json JSON`, which must succeed: the run and its result.
fn successful_run(flags: &str, json: &std::path::Path) -> (Finished, Value) {
    let mut args: Vec<&str> = flags.split_whitespace().collect();
    args.extend(["--json", arg(json)]);
    let run = wsbench(&args, Duration::from_secs(60));
    run.assert_success();
    let result = read_result(json);
    (run, result)
}
