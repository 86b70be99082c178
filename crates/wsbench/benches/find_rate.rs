//! The rate search (`wsbench run --find-max-rate`) against a server of known capacity, as a
//! benchmark rather than a test: whether it finds within 10 % of what the server sustains
//! depends on the machine keeping the client's schedule, which a loaded machine does not (a
//! stall of the client breaks a step below the capacity). The engine test keeps what no load
//! can change: a step above the capacity always breaks and the search never reports more.
//!
//! One connection to the scripted server of the engine tests at 50 echoes/s (20 ms of
//! service per echo on an absolute schedule). The peer, measured in the same run: a
//! saturating closed loop (8 in flight) against the same server, whose echoes/s is what the
//! server sustains here. Then the search, and the ratio found ÷ sustained against the goal
//! ≥ 0.9: PASS or MISS only when both runs succeeded and no run or step said its client
//! could not keep up; otherwise the reason. A failed run exits 1.
//!
//! Run: `cargo bench -p wsbench --bench find_rate`.

#[allow(dead_code)]
#[path = "../tests/support/scripted_server.rs"]
mod scripted_server;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use serde_json::Value;

use scripted_server::Script;

/// The goal: the search finds at least this share of what the server sustains.
const GOAL: f64 = 0.9;

/// Runs `wsbench ARGS… --json FILE`; the file, or why the run failed.
fn wsbench(args: &[&str], json: &Path) -> Result<Value, String> {
    let output = Command::new(env!("CARGO_BIN_EXE_wsbench"))
        .args(args)
        .arg("--json")
        .arg(json)
        .output()
        .map_err(|e| format!("cannot start wsbench: {e}"))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(format!("`wsbench {}` failed ({}): {}", args.join(" "), output.status, stderr.trim()));
    }
    let text = std::fs::read_to_string(json).map_err(|e| format!("{}: {e}", json.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", json.display()))
}

fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wsbench-find-rate-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create a scratch folder");
    dir
}

fn main() -> ExitCode {
    let server = Script::echo().capacity(50).start();
    let url = server.url();
    let dir = scratch();
    let base = ["run", "echo", url.as_str(), "--connections", "1", "--warmup", "500ms", "--duration", "3s"];
    let saturating = wsbench(&[&base[..], &["--in-flight", "8"]].concat(), &dir.join("sustained.json"));
    let flags = ["--find-max-rate", "--slo", "p50<100ms", "--max-send-lag", "1s", "--rate", "20/s"];
    let search = wsbench(&[&base[..], &flags[..]].concat(), &dir.join("search.json"));
    let _ = std::fs::remove_dir_all(&dir);
    let (saturating, search) = match (saturating, search) {
        (Ok(saturating), Ok(search)) => (saturating, search),
        (Err(why), _) | (_, Err(why)) => {
            println!("find-max-rate vs 50/s: FAILED: {why}");
            return ExitCode::FAILURE;
        }
    };
    let sustained = saturating["summary"]["echoes_per_sec"].as_f64().unwrap_or_default();
    let found = search["max_rate_per_sec"].as_f64().unwrap_or_default();
    let steps = search["steps"].as_array().cloned().unwrap_or_default();
    for step in &steps {
        println!(
            "  step {:>6.1}/s offered, {:>6.1}/s achieved: {}",
            step["offered_per_sec"].as_f64().unwrap_or_default(),
            step["achieved_per_sec"].as_f64().unwrap_or_default(),
            step["broken_by"].as_str().map_or("held".to_owned(), |why| format!("broke: {why}"))
        );
    }
    let bound_steps =
        steps.iter().filter(|s| s["broken_by"].as_str().is_some_and(|b| b.contains("client-bound")));
    let ratio = if sustained > 0.0 { found / sustained } else { 0.0 };
    let verdict = if saturating["client"]["bound"].as_bool() != Some(false) {
        "not judged: the saturating run's client was CPU-bound (it measured the client)".to_owned()
    } else if bound_steps.count() > 0 {
        "not judged: a step of the search broke because its client could not keep up".to_owned()
    } else if ratio >= GOAL {
        "PASS".to_owned()
    } else {
        "MISS".to_owned()
    };
    println!(
        "find-max-rate: found {found:.1}/s; the server sustained {sustained:.1}/s saturated in the same run: \
         {ratio:.3}× (goal ≥ {GOAL}×): {verdict}"
    );
    ExitCode::SUCCESS
}
