//! What a run leaves behind when it is stopped the way CI and terminals stop it, and where
//! its files go: `timeout -s INT|TERM|HUP` (which signals wsbench and then its whole process
//! group, two signals close together) always leaves the result file and the report, for a
//! single run and for a `--processes` run; a stop while `--wait-for-target` waits opens no
//! connection; a signal more than 2 s after the first ends wsbench at once; `--json` given a
//! symlink, a FIFO or `/dev/null` writes through it without replacing it; and a URL's
//! `user:password` goes out as Basic auth, never into a file.
//!
//! Every test here spawns real `wsbench` processes (and GNU `timeout`); they run one at a
//! time, so that a busy machine slows them down together rather than starving one.

mod support;

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use support::recording_proxy::RecordingProxy;
use support::scripted_server::Script;
use support::{Finished, fresh_dir, run_with_timeout, wsbench_bin};

/// One test at a time: each starts load-generating processes.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// GNU timeout's status when it timed out and stopped its command.
const TIMEOUT_TIMED_OUT: i32 = 124;

/// `timeout [--preserve-status] -s SIGNAL SECONDS wsbench run ARGS… --json JSON`.
fn under_timeout(signal: &str, seconds: u32, preserve_status: bool, args: &[&str], json: &Path) -> Finished {
    let mut command = Command::new("timeout");
    if preserve_status {
        command.arg("--preserve-status");
    }
    command
        .args(["-s", signal, &seconds.to_string(), wsbench_bin(), "run"])
        .args(args)
        .arg("--json")
        .arg(json);
    run_with_timeout(&mut command, Duration::from_secs(90))
}

/// The run stopped by `signal` left its interrupted result and printed its report.
fn assert_kept(
    finished: &Finished,
    preserve_status: bool,
    json: &Path,
    what: &str,
) -> wsbench::result::RunResult {
    let what = finished.describe(what);
    let expected = if preserve_status { 130 } else { TIMEOUT_TIMED_OUT };
    assert_eq!(finished.status.and_then(|s| s.code()), Some(expected), "{what}");
    assert!(finished.stdout.contains("[INTERRUPTED: partial results]"), "no report: {what}");
    let result = wsbench::result::RunResult::read_json(json).unwrap_or_else(|e| panic!("{e}: {what}"));
    assert!(result.interrupted, "{what}");
    assert!(!finished.stderr.contains("exiting at once"), "{what}");
    result
}

#[test]
fn timeout_int_and_term_always_leave_the_result_and_the_report() {
    let _turn = one_at_a_time();
    let dir = fresh_dir("signals-timeout");
    for signal in ["INT", "TERM"] {
        for attempt in 0..5 {
            let json = dir.join(format!("{signal}-{attempt}.json"));
            // Every other attempt, timeout passes on wsbench's own status.
            let preserve_status = attempt % 2 == 1;
            let args = ["--connections", "10", "--duration", "30s"];
            let finished = under_timeout(signal, 3, preserve_status, &args, &json);
            let what = format!("timeout -s {signal} 3 wsbench run, attempt {attempt}");
            assert_kept(&finished, preserve_status, &json, &what);
            assert!(finished.stderr.contains(&format!("wsbench: SIG{signal}: stopping")), "{what}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn sighup_stops_a_run_and_a_processes_run_with_their_results() {
    let _turn = one_at_a_time();
    let dir = fresh_dir("signals-hup");
    let json = dir.join("run.json");
    let finished = under_timeout("HUP", 3, true, &["--connections", "10", "--duration", "30s"], &json);
    assert_kept(&finished, true, &json, "timeout -s HUP 3 wsbench run");

    // The shards run in process groups of their own: the parent forwards the stop.
    let json = dir.join("sharded.json");
    let args = ["--connections", "20", "--duration", "30s", "--processes", "2"];
    let finished = under_timeout("HUP", 5, true, &args, &json);
    let merged = assert_kept(&finished, true, &json, "timeout -s HUP 5 wsbench run --processes 2");
    let what = finished.describe("--processes 2 under SIGHUP");
    assert!(!finished.stderr.contains("died"), "{what}");
    assert_eq!(merged.shards.len(), 2, "{what}");
    assert!(merged.shards.iter().all(|s| s.interrupted && s.died.is_none()), "{what}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A FIFO made at `path`.
fn mkfifo(path: &Path) {
    let c_path = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0, "mkfifo {}", path.display());
}

fn signal(child: &std::process::Child, signal: libc::c_int) {
    // SAFETY: signalling the child this test started (not yet reaped).
    unsafe { libc::kill(child.id() as libc::pid_t, signal) };
}

#[test]
fn only_a_signal_after_the_two_second_window_ends_wsbench_at_once() {
    let _turn = one_at_a_time();
    let dir = fresh_dir("signals-window");
    // Nobody reads this FIFO: the stopped run blocks writing its result there, as a run
    // stuck on a slow disk would, until a later signal ends it.
    let fifo = dir.join("nobody-reads.fifo");
    mkfifo(&fifo);
    let mut child =
        support::spawn_run(&["--connections", "2", "--duration", "30s", "--json", fifo.to_str().unwrap()]);
    std::thread::sleep(Duration::from_secs(2));
    signal(&child, libc::SIGINT);
    std::thread::sleep(Duration::from_millis(100));
    // The same request (as timeout's signal to the group): not an exit.
    signal(&child, libc::SIGTERM);
    std::thread::sleep(Duration::from_secs(3));
    assert!(child.try_wait().unwrap().is_none(), "a signal within 2 s of the first ended wsbench");
    signal(&child, libc::SIGTERM);
    let started = std::time::Instant::now();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(started.elapsed() < Duration::from_secs(10), "{stderr}");
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("wsbench: SIGINT: stopping"), "{stderr}");
    assert!(
        stderr.contains("wsbench: SIGTERM after the first stop request (SIGINT): exiting at once"),
        "{stderr}"
    );
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_stop_while_waiting_for_the_target_opens_no_connection() {
    let _turn = one_at_a_time();
    let dir = fresh_dir("signals-wait");
    let json = dir.join("r.json");
    // A port nobody listens on: the wait goes on until the signal.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("ws://127.0.0.1:{port}/");
    let mut command = Command::new("timeout");
    command
        .args(["-s", "TERM", "--preserve-status", "2", wsbench_bin(), "run", &url])
        .args(["--wait-for-target", "60s", "--duration", "5s", "--json"])
        .arg(&json);
    let finished = run_with_timeout(&mut command, Duration::from_secs(30));
    let what = finished.describe("SIGTERM during --wait-for-target");
    assert_eq!(finished.status.and_then(|s| s.code()), Some(130), "{what}");
    let expected = format!(
        "wsbench: interrupted (SIGTERM) while waiting for {url} to accept a connection (--wait-for-target): \
         no load was sent"
    );
    assert!(finished.stderr.lines().any(|line| line == expected), "{what}");
    assert!(!json.exists(), "nothing was measured, so no result is written: {what}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A short run writing its result to `json`.
fn short_run(json: &Path) -> Finished {
    let mut command = Command::new(wsbench_bin());
    command.args(["run", "--connections", "2", "--warmup", "0s", "--duration", "1s", "--json"]).arg(json);
    run_with_timeout(&mut command, Duration::from_secs(60))
}

#[test]
fn json_through_a_symlink_a_fifo_and_dev_null_keeps_them_what_they_are() {
    let _turn = one_at_a_time();
    let dir = fresh_dir("signals-outputs");

    // A symlink: its target is written, the link stays.
    let target = dir.join("real.json");
    let link = dir.join("link.json");
    std::os::unix::fs::symlink("real.json", &link).unwrap();
    let finished = short_run(&link);
    assert_eq!(finished.status.and_then(|s| s.code()), Some(0), "{}", finished.describe("--json LINK"));
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link was replaced");
    wsbench::result::RunResult::read_json(&target).unwrap();
    // `report --html` through a link too.
    let html_link = dir.join("report.html");
    std::os::unix::fs::symlink("real.html", &html_link).unwrap();
    let mut command = Command::new(wsbench_bin());
    command.arg("report").arg(&target).arg("--html").arg(&html_link);
    let finished = run_with_timeout(&mut command, Duration::from_secs(30));
    assert_eq!(
        finished.status.and_then(|s| s.code()),
        Some(0),
        "{}",
        finished.describe("report --html LINK")
    );
    assert!(std::fs::symlink_metadata(&html_link).unwrap().file_type().is_symlink());
    assert!(std::fs::read_to_string(dir.join("real.html")).unwrap().contains("<html"));

    // A FIFO: a reader receives the JSON, and it is still a FIFO afterwards.
    let fifo = dir.join("r.fifo");
    mkfifo(&fifo);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    let finished = short_run(&fifo);
    assert_eq!(finished.status.and_then(|s| s.code()), Some(0), "{}", finished.describe("--json FIFO"));
    let received = reader.join().unwrap();
    let read_back = wsbench::result::RunResult::from_json_bytes(&fifo, received.as_bytes());
    assert!(read_back.is_ok(), "the reader got a result: {received}");
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(), "the FIFO was replaced");

    // /dev/null: written, and still a character device (as root, a rename would replace it).
    let null = PathBuf::from("/dev/null");
    let finished = short_run(&null);
    assert_eq!(finished.status.and_then(|s| s.code()), Some(0), "{}", finished.describe("--json /dev/null"));
    assert!(std::fs::symlink_metadata(&null).unwrap().file_type().is_char_device());
    assert!(!Path::new("/dev/null.shards").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn url_credentials_go_out_as_basic_auth_and_the_path_percent_encoded() {
    let _turn = one_at_a_time();
    let dir = fresh_dir("signals-credentials");
    let json = dir.join("r.json");
    let server = Script::echo().start();
    let proxy = RecordingProxy::start(server.addr());
    let port = proxy.addr().port();
    let url = format!("ws://user:p%40ss@127.0.0.1:{port}/a b");
    let mut command = Command::new(wsbench_bin());
    command
        .args(["run", &url, "--connections", "1", "--warmup", "0s", "--duration", "1s", "--json"])
        .arg(&json);
    let finished = run_with_timeout(&mut command, Duration::from_secs(60));
    let what = finished.describe("wsbench run ws://user:p%40ss@…/a b");
    assert_eq!(finished.status.and_then(|s| s.code()), Some(0), "{what}");
    let heads = proxy.heads();
    assert!(!heads.is_empty(), "{what}");
    for head in &heads {
        let mut lines = head.split("\r\n");
        assert_eq!(lines.next(), Some("GET /a%20b HTTP/1.1"), "{head}");
        let headers: Vec<&str> = lines.collect();
        // base64("user:p@ss"): the password percent-decoded.
        assert!(headers.contains(&"Authorization: Basic dXNlcjpwQHNz"), "{head}");
        assert!(headers.contains(&format!("Host: 127.0.0.1:{port}").as_str()), "{head}");
        assert!(!head.contains("p%40ss@") && !head.contains("user:"), "{head}");
    }
    let written = std::fs::read_to_string(&json).unwrap();
    for secret in ["p%40ss", "p@ss", "dXNlcjpwQHNz"] {
        assert!(!written.contains(secret), "the result file holds {secret}");
        assert!(!finished.stdout.contains(secret) && !finished.stderr.contains(secret), "{what}");
    }
    let result = wsbench::result::RunResult::read_json(&json).unwrap();
    assert_eq!(result.target.url, format!("ws://user:<redacted>@127.0.0.1:{port}/a b"));
    assert!(result.summary.errors.is_empty(), "{what}");
    std::fs::remove_dir_all(&dir).unwrap();
}
