//! The HTML report in a real browser: two real runs of the `wsbench` binary against its
//! built-in server (50 and 20 connections), `wsbench report a.json b.json --html`, then
//! `tests/browser/check-report.mjs` opens the page in headless Chromium and checks that every
//! chart is drawn, that nothing is logged as an error and that the page requests nothing but
//! itself. Golden files pin the page's bytes; only a browser shows that those bytes render.
//! A second page of sixteen results (one real run, fifteen copies given other numbers) is
//! checked for one colour per result and comparison bars drawn best first.
//!
//! The check saves a full-page screenshot, and the run files and page next to it, in
//! `target/browser-artifacts/` for people (and CI artifacts) to look at.
//!
//! Chromium and the pinned `playwright-core` are installed by `scripts/install-test-peers.sh`.
//! When either is missing the test is skipped with a message, unless
//! `WSBENCH_REQUIRE_PEERS=1` (set by `scripts/test.sh`), in which case it fails.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use support::{Finished, peer_missing, run_with_timeout};

const CHROMIUM: &str = "/usr/bin/chromium";
/// Upper bound for one command (a 2 s run, or the browser check); the child is killed past it.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(120);

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("repo root")
}

/// `target/browser-artifacts`, wherever the target directory is.
fn artifacts_dir() -> PathBuf {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).parent().expect("target dir").to_owned();
    target.join("browser-artifacts")
}

/// The node script, once Chromium, node and playwright-core are all there.
fn browser_check() -> Result<PathBuf, String> {
    if !Path::new(CHROMIUM).exists() {
        return Err(format!("{CHROMIUM} does not exist"));
    }
    let browser = repo_root().join("tests/browser");
    let playwright = browser.join("node_modules/playwright-core/package.json");
    if !playwright.exists() {
        return Err(format!("{} does not exist", playwright.display()));
    }
    let version = Command::new("node")
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run `node`: {e}"))?;
    if !version.status.success() {
        return Err("`node --version` failed".to_owned());
    }
    Ok(browser.join("check-report.mjs"))
}

/// The check script, or `None` (after saying why on stderr) when it cannot run and peers
/// are optional.
fn require_browser() -> Option<PathBuf> {
    match browser_check() {
        Ok(script) => Some(script),
        Err(why) => {
            peer_missing(&format!("browser check not installed ({why})"));
            None
        }
    }
}

/// Runs `command` to completion (killing it after [`COMMAND_TIMEOUT`]) and panics, showing
/// its output, unless it succeeds.
fn run(command: &mut Command) -> Finished {
    let shown = format!("{command:?}");
    let finished = run_with_timeout(command, COMMAND_TIMEOUT);
    match finished.status {
        None => panic!("timed out after {COMMAND_TIMEOUT:?}, killed: {}", finished.describe(&shown)),
        Some(status) if !status.success() => panic!("exited with {status}: {}", finished.describe(&shown)),
        Some(_) => finished,
    }
}

#[test]
fn html_report_of_real_runs_renders_in_chromium() {
    let Some(script) = require_browser() else { return };
    let dir = artifacts_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let wsbench = env!("CARGO_BIN_EXE_wsbench");
    for (file, connections) in [("a.json", "50"), ("b.json", "20")] {
        let json = dir.join(file);
        run(Command::new(wsbench)
            .args(["run", "--duration", "2s", "--connections", connections, "--json"])
            .arg(&json));
        assert!(json.exists(), "{} was not written", json.display());
    }
    let html = dir.join("report.html");
    let screenshot = dir.join("report.png");
    let _ = std::fs::remove_file(&screenshot);
    run(Command::new(wsbench)
        .arg("report")
        .arg(dir.join("a.json"))
        .arg(dir.join("b.json"))
        .arg("--html")
        .arg(&html));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<title>wsbench report: a, b</title>"), "labels are the file stems");

    let output = run(Command::new("node")
        .arg(&script)
        .arg(&html)
        .arg(&screenshot)
        .current_dir(script.parent().unwrap()));
    let stdout = &output.stdout;
    println!("{stdout}");
    assert!(stdout.contains("all checks passed"), "the check exited 0 without finishing:\n{stdout}");
    let png = std::fs::read(&screenshot)
        .unwrap_or_else(|e| panic!("no screenshot at {}: {e}", screenshot.display()));
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 10_000,
        "{} is not a real PNG",
        screenshot.display()
    );
    println!("screenshot: {}", screenshot.display());
}

/// `source` copied as result `index` of sixteen: its headline numbers replaced by values in
/// a scrambled order (so sorting has work to do), every fifth one client-bound.
fn variant(source: &serde_json::Value, index: u64) -> serde_json::Value {
    let mut value = source.clone();
    let scrambled = (index * 7 % 16 + 1) as f64;
    value["summary"]["echoes_per_sec"] = serde_json::json!(scrambled * 1_000.0);
    value["summary"]["latency_us"]["p99"] = serde_json::json!((index * 5 % 16 + 1) * 100);
    value["server"]["rss_peak_bytes"] = serde_json::json!((index * 3 % 16 + 1) * 1_048_576);
    value["server"]["echoes_per_cpu_second"] = serde_json::json!((index * 11 % 16 + 1) as f64 * 500.0);
    if index.is_multiple_of(5) {
        value["client"]["bound"] = serde_json::json!(true);
        value["client"]["bound_reason"] = serde_json::json!("worker w0 used 95% of a core");
    }
    value
}

#[test]
fn html_report_of_sixteen_results_has_one_colour_each_and_ranked_bars() {
    let Some(script) = require_browser() else { return };
    let dir = artifacts_dir().join("sixteen");
    std::fs::create_dir_all(&dir).unwrap();
    let wsbench = env!("CARGO_BIN_EXE_wsbench");
    let real = dir.join("real.json");
    run(Command::new(wsbench).args(["run", "--duration", "2s", "--connections", "20", "--json"]).arg(&real));
    let source: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&real).unwrap()).unwrap();
    let files: Vec<PathBuf> = (0..16u64)
        .map(|index| {
            let path = dir.join(format!("server-{index:02}.json"));
            std::fs::write(&path, serde_json::to_string(&variant(&source, index)).unwrap()).unwrap();
            path
        })
        .collect();
    let html = dir.join("report.html");
    run(Command::new(wsbench).arg("report").args(&files).arg("--html").arg(&html));
    let page = std::fs::read_to_string(&html).unwrap();
    // 32 lines (p50 and p99 of 16 results) are drawn as one small panel per result.
    assert_eq!(page.matches("<g class=\"panel\">").count(), 16, "latency over time is not in panels");
    assert!(page.contains(&format!("Generated by <code>wsbench report {}", files[0].display())));
    let output = run(Command::new("node")
        .arg(&script)
        .arg(&html)
        .arg(dir.join("report.png"))
        .args(["--results", "16"])
        .current_dir(script.parent().unwrap()));
    println!("{}", output.stdout);
    assert!(
        output.stdout.contains("all checks passed"),
        "the check exited 0 without finishing:\n{}",
        output.stdout
    );
    assert!(output.stdout.contains("compare-echoes-per-sec descending (16 bars)"), "{}", output.stdout);
}
