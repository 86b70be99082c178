//! `wsbench diff` on recorded result files of real runs (`tests/diff_fixtures/`): ten trials
//! of 5 vs 5 runs of the same `wsbench serve` find no difference on every figure in at least
//! nine, and five trials of 5 vs 5 runs where one side's server holds each echo 200 µs find the
//! latency worse every time. The fixtures are re-recorded (never in a normal test run) with
//! `WSBENCH_RECORD_DIFF_FIXTURES=1 cargo test -p wsbench --test diff record -- --ignored`.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use support::scripted_server::Script;

/// Where the recorded result files live: `same/trialNN/` and `delay/trialNN/`, each with
/// `base-K.json` and `new-K.json`.
fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/diff_fixtures")
}

/// Trials of runs of the same server.
const SAME_TRIALS: usize = 10;
/// Trials where the new side's server delays each echo.
const DELAY_TRIALS: usize = 5;
/// Runs a side in every trial.
const REPEATS: usize = 5;
/// The delay the new side's server adds to each echo in the `delay` trials.
const ECHO_DELAY: Duration = Duration::from_micros(200);

/// One short closed-loop run against `url`, its result written to `json`.
fn record_run(url: &str, json: &Path, probe: bool) {
    let mut args = vec!["run", "echo", url, "--connections", "4", "--warmup", "500ms", "--duration", "1s"];
    args.extend(["--quiet", "--json", json.to_str().unwrap()]);
    if !probe {
        args.push("--no-probe");
    }
    let finished =
        support::run_with_timeout(Command::new(support::wsbench_bin()).args(&args), Duration::from_secs(60));
    let what = finished.describe(&format!("wsbench {}", args.join(" ")));
    assert_eq!(finished.status.and_then(|s| s.code()), Some(0), "{what}");
}

/// The runs of one trial, base and new interleaved so that a change of the machine's load
/// during the trial falls on both sides alike.
fn record_trial(dir: &Path, base_url: &str, new_url: &str, probe: bool) {
    std::fs::create_dir_all(dir).unwrap();
    for k in 1..=REPEATS {
        record_run(base_url, &dir.join(format!("base-{k}.json")), probe);
        record_run(new_url, &dir.join(format!("new-{k}.json")), probe);
    }
}

/// Re-records every fixture: the `same` trials against one `wsbench serve --threads 1` per
/// trial (probed: server CPU and memory are figures too), the `delay` trials against the
/// scripted echo server without and with [`ECHO_DELAY`] (not probed: the server is this
/// test process).
#[test]
#[ignore = "records the fixtures; run with WSBENCH_RECORD_DIFF_FIXTURES=1"]
fn record_fixtures() {
    if std::env::var("WSBENCH_RECORD_DIFF_FIXTURES").as_deref() != Ok("1") {
        return;
    }
    for trial in 1..=SAME_TRIALS {
        let server = support::Server::spawn(&["--threads", "1"]);
        let url = format!("ws://{}/", server.addr);
        record_trial(&fixtures().join(format!("same/trial{trial:02}")), &url, &url, true);
    }
    for trial in 1..=DELAY_TRIALS {
        let plain = Script::echo().start();
        let delayed = Script::echo().delay_each_echo(ECHO_DELAY).start();
        record_trial(&fixtures().join(format!("delay/trial{trial:02}")), &plain.url(), &delayed.url(), false);
    }
}
