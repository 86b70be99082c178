//! The HTML report in a real browser: two real runs of the `wsbench` binary against its
//! built-in server (50 and 20 connections), `wsbench report a.json b.json --html`, then
//! `tests/browser/check-report.mjs` opens the page in headless Chromium and checks that every
//! chart is drawn, that nothing is logged as an error and that the page requests nothing but
//! itself. Golden files pin the page's bytes; only a browser shows that those bytes render.
//! A second page of sixteen results (one real run, fifteen copies given other numbers) is
//! checked for one colour per result and comparison bars drawn best first.
//!
//! The live page (`--dashboard`) is watched in the browser too, once alone and once after
//! fifty clients that never read have asked for its events.
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

/// The node script `name`, once Chromium, node and playwright-core are all there.
fn browser_check(name: &str) -> Result<PathBuf, String> {
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
    Ok(browser.join(name))
}

/// The check script `name`, or `None` (after saying why on stderr) when it cannot run and
/// peers are optional.
fn require_browser_script(name: &str) -> Option<PathBuf> {
    match browser_check(name) {
        Ok(script) => Some(script),
        Err(why) => {
            peer_missing(&format!("browser check not installed ({why})"));
            None
        }
    }
}

/// The report's check script (see [`require_browser_script`]).
fn require_browser() -> Option<PathBuf> {
    require_browser_script("check-report.mjs")
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

/// How many times a measured run is tried before the test gives up on measuring anything.
const MEASURE_ATTEMPTS: usize = 3;

/// `wsbench run --duration 2s --connections N --json JSON [extra…]` against the built-in
/// server, until its measured window had round trips: on a busy machine the whole window can
/// be one stall (a dropped packet's retransmission timeout, a starved process), and the run
/// then rightly fails with `no_request_answered`; the page needs a run that measured
/// something, so such a run is shown (its report says why it stalled) and made again, up to
/// [`MEASURE_ATTEMPTS`] times. Any other failure fails the test at once.
fn measured_run(connections: &str, json: &Path, extra: &[&std::ffi::OsStr]) -> Finished {
    let wsbench = env!("CARGO_BIN_EXE_wsbench");
    for attempt in 1..=MEASURE_ATTEMPTS {
        let mut command = Command::new(wsbench);
        command
            .args(["run", "--duration", "2s", "--connections", connections, "--json"])
            .arg(json)
            .args(extra);
        let shown = format!("{command:?}");
        let finished = run_with_timeout(&mut command, COMMAND_TIMEOUT);
        match finished.status {
            Some(status) if status.success() => return finished,
            Some(status)
                if status.code() == Some(3) && finished.stdout.contains("no request was answered") =>
            {
                eprintln!("attempt {attempt} measured nothing, trying again: {}", finished.describe(&shown));
            }
            None => panic!("timed out after {COMMAND_TIMEOUT:?}, killed: {}", finished.describe(&shown)),
            Some(status) => panic!("exited with {status}: {}", finished.describe(&shown)),
        }
    }
    panic!("{MEASURE_ATTEMPTS} runs of {connections} connections measured no round trip")
}

#[test]
fn html_report_of_real_runs_renders_in_chromium() {
    let Some(script) = require_browser() else { return };
    let dir = artifacts_dir();
    std::fs::create_dir_all(&dir).unwrap();
    for (file, connections) in [("a.json", "50"), ("b.json", "20")] {
        let json = dir.join(file);
        measured_run(connections, &json, &[]);
        assert!(json.exists(), "{} was not written", json.display());
    }
    let html = dir.join("report.html");
    let screenshot = dir.join("report.png");
    let _ = std::fs::remove_file(&screenshot);
    run(Command::new(env!("CARGO_BIN_EXE_wsbench"))
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
    measured_run("20", &real, &[]);
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

/// A sweep's page in the browser: a real sweep of the built-in server (three steps of one
/// second) with `--html`, then three sweeps overlaid on one page (`wsbench report --html`
/// of their files: the deterministic eleven-step fixture sweep, whose USL fit and knees
/// are known, under three names with their throughput scaled and re-analysed), each
/// checked by `tests/browser/check-sweep.mjs`: both curves drawn, one table and one colour
/// per sweep, the fitted curves, knees and predicted peaks drawn inside their charts.
#[test]
fn sweep_pages_render_in_chromium() {
    let Some(script) = require_browser_script("check-sweep.mjs") else { return };
    let dir = artifacts_dir().join("sweep");
    std::fs::create_dir_all(&dir).unwrap();
    let wsbench = env!("CARGO_BIN_EXE_wsbench");
    let (json, html) = (dir.join("real.json"), dir.join("real.html"));
    run(Command::new(wsbench)
        .args(["sweep", "--connections", "1,2,4", "--duration", "1s", "--warmup", "0s", "--quiet", "--json"])
        .arg(&json)
        .arg("--html")
        .arg(&html));
    let check = |page: &Path, png: &str, wanted: &[&str]| {
        let output = run(Command::new("node")
            .arg(&script)
            .arg(page)
            .arg(dir.join(png))
            .args(wanted)
            .current_dir(script.parent().unwrap()));
        println!("{}", output.stdout);
        assert!(output.stdout.contains("all checks passed"), "{}", output.stdout);
    };
    check(&html, "real.png", &["--sweeps", "1"]);

    let files: Vec<PathBuf> = [("server-a", 1.0), ("server-b", 0.6), ("server-c", 0.3)]
        .into_iter()
        .map(|(label, scale)| {
            let mut sweep = wsbench::fixture::sweep();
            sweep.label = label.to_owned();
            for step in &mut sweep.steps {
                step.throughput_per_sec *= scale;
            }
            sweep.analysis = wsbench::sweep::analyse(&sweep.steps, sweep.varied, sweep.closed_loop, None);
            sweep.thresholds.clear();
            let path = dir.join(format!("{label}.json"));
            wsbench::result::sweep::write_sweep_json(&sweep, &path).unwrap();
            path
        })
        .collect();
    let overlay = dir.join("overlay.html");
    run(Command::new(wsbench).arg("report").args(&files).arg("--html").arg(&overlay));
    check(&overlay, "overlay.png", &["--sweeps", "3", "--fits", "3", "--knees", "3", "--peaks", "3"]);
}

/// `node SCRIPT ARGS…` started with its stdout read line by line as it comes (to wait for
/// "browser ready"), and its stderr collected.
struct Watcher {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
    stderr: std::thread::JoinHandle<String>,
    seen: Vec<String>,
}

impl Watcher {
    fn start(script: &Path, args: &[&std::ffi::OsStr]) -> Watcher {
        use std::io::{BufRead, Read};
        let mut child = Command::new("node")
            .arg(script)
            .args(args)
            .current_dir(script.parent().unwrap())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn node");
        let (send, lines) = std::sync::mpsc::channel();
        let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        std::thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                let _ = send.send(line);
            }
        });
        let mut pipe = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        });
        Watcher { child, lines, stderr, seen: Vec::new() }
    }

    /// Every line it printed once it ended, shown; panics unless it said "all checks passed".
    fn passed(self) -> Vec<String> {
        let (lines, stderr) = self.finish();
        let shown = lines.join("\n");
        println!("{shown}");
        assert!(lines.iter().any(|l| l == "all checks passed"), "the page check failed:\n{shown}\n{stderr}");
        lines
    }

    /// Waits for the line `wanted`; false when the script ended or took too long.
    fn wait_for(&mut self, wanted: &str) -> bool {
        while let Ok(line) = self.lines.recv_timeout(COMMAND_TIMEOUT) {
            let found = line == wanted;
            self.seen.push(line);
            if found {
                return true;
            }
        }
        false
    }

    /// Every line it printed once it ended (killed after [`COMMAND_TIMEOUT`]), and stderr.
    fn finish(mut self) -> (Vec<String>, String) {
        let deadline = std::time::Instant::now() + COMMAND_TIMEOUT;
        while self.child.try_wait().unwrap().is_none() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.seen.extend(self.lines.try_iter());
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(5)) {
            self.seen.push(line);
        }
        (self.seen, self.stderr.join().unwrap())
    }
}

/// The value in the result file that the page's figure `key` shows: `server.` and
/// `client.` figures from those sections, the rest from the summary.
fn result_figure<'a>(result: &'a serde_json::Value, key: &str) -> &'a serde_json::Value {
    let mut at = match key.split('.').next() {
        Some("server" | "client") => result,
        _ => &result["summary"],
    };
    for part in key.split('.') {
        at = &at[part];
    }
    at
}

#[test]
fn the_live_page_connects_grows_during_a_run_and_ends_with_the_result_files_figures_in_chromium() {
    let Some(script) = require_browser_script("check-dashboard.mjs") else { return };
    let dir = artifacts_dir().join("dashboard");
    std::fs::create_dir_all(&dir).unwrap();
    let (json, html) = (dir.join("r.json"), dir.join("r.html"));
    let (mid_run, end) = (dir.join("dashboard-mid-run.png"), dir.join("dashboard-end.png"));
    for old in [&json, &html, &mid_run, &end] {
        let _ = std::fs::remove_file(old);
    }
    // A port free now: the browser is ready before wsbench listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}/");
    let mut watcher = Watcher::start(&script, &[url.as_ref(), mid_run.as_os_str(), end.as_os_str()]);
    assert!(watcher.wait_for("browser ready"), "the browser did not start: {:?}", watcher.finish());
    let dashboard = format!("127.0.0.1:{port}");
    let run = run(Command::new(env!("CARGO_BIN_EXE_wsbench"))
        .args(["run", "--duration", "6s", "--connections", "20", "--dashboard", &dashboard, "--json"])
        .arg(&json)
        .arg("--html")
        .arg(&html));
    assert!(run.stderr.contains(&format!("wsbench: live page at {url}")), "{}", run.stderr);
    let lines = watcher.passed();
    assert_page_shows_the_result(&lines, &json);
    let link = lines.iter().find_map(|l| l.strip_prefix("html link: ")).unwrap();
    assert_eq!(link, format!("HTML report: {}", html.display()), "the page links the --html report");
    for png in [&mid_run, &end] {
        let bytes = std::fs::read(png).unwrap_or_else(|e| panic!("no screenshot at {}: {e}", png.display()));
        assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n") && bytes.len() > 10_000, "{}", png.display());
    }
}

/// The figures the page check printed at the end (`figures: {...}`), each equal to the
/// result file's at `json`.
fn assert_page_shows_the_result(lines: &[String], json: &Path) {
    let result: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    let figures = lines.iter().find_map(|l| l.strip_prefix("figures: ")).expect("the page's figures");
    let figures: serde_json::Map<String, serde_json::Value> = serde_json::from_str(figures).unwrap();
    for key in
        ["echoes_per_sec", "latency_us.p50", "latency_us.p99", "latency_us.p999", "connections.established"]
    {
        assert!(figures.contains_key(key), "the page shows no {key}: {figures:?}");
    }
    for (key, shown) in &figures {
        let file = result_figure(&result, key);
        assert_eq!(
            shown.as_f64(),
            file.as_f64(),
            "{key}: the page shows {shown}, the result file has {file}"
        );
    }
}

/// Fifty clients that ask for the events and never read hold every place a page has before
/// the browser comes: the browser still gets the page, watches it grow and sees it end.
#[test]
fn the_live_page_reaches_chromium_past_fifty_pages_that_never_read() {
    let Some(script) = require_browser_script("check-dashboard.mjs") else { return };
    let dir = artifacts_dir().join("dashboard-past-fifty");
    std::fs::create_dir_all(&dir).unwrap();
    let (json, mid_run, end) = (dir.join("r.json"), dir.join("mid-run.png"), dir.join("end.png"));
    for old in [&json, &mid_run, &end] {
        let _ = std::fs::remove_file(old);
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let (url, dashboard) = (format!("http://127.0.0.1:{port}/"), format!("127.0.0.1:{port}"));
    let args = ["run", "--duration", "15s", "--connections", "20", "--dashboard", &dashboard, "--json"];
    let mut command = Command::new(env!("CARGO_BIN_EXE_wsbench"));
    command.args(args).arg(&json);
    let wsbench = std::thread::spawn(move || run(&mut command));
    let hogs = support::pages_that_never_read(&dashboard, 50);
    let mut watcher = Watcher::start(&script, &[url.as_ref(), mid_run.as_os_str(), end.as_os_str()]);
    assert!(watcher.wait_for("browser ready"), "the browser did not start: {:?}", watcher.finish());
    wsbench.join().expect("the run");
    assert_page_shows_the_result(&watcher.passed(), &json);
    drop(hogs);
}

#[test]
fn run_html_writes_the_report_page_that_renders_in_chromium() {
    let Some(script) = require_browser() else { return };
    let dir = artifacts_dir().join("run-html");
    std::fs::create_dir_all(&dir).unwrap();
    let html = dir.join("r.html");
    let _ = std::fs::remove_file(&html);
    let run = measured_run("20", &dir.join("r.json"), &["--html".as_ref(), html.as_os_str()]);
    assert!(run.stderr.contains(&format!("wsbench: wrote {}", html.display())), "{}", run.stderr);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<title>wsbench report: r</title>"), "labelled by the file's stem");
    let charts = "rate-over-time,latency-over-time,latency-spectrum,connect-time,server-rss,server-cpu";
    let output = run_check(&script, &html, &dir.join("run-html.png"), charts);
    assert!(output.stdout.contains("all checks passed"), "{}", output.stdout);
}

fn run_check(script: &Path, html: &Path, png: &Path, charts: &str) -> Finished {
    let output = run(Command::new("node")
        .arg(script)
        .arg(html)
        .arg(png)
        .args(["--charts", charts])
        .current_dir(script.parent().unwrap()));
    println!("{}", output.stdout);
    output
}
