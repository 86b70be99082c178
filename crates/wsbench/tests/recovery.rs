//! Recovery from disruptions (`--disrupt`) against real servers on port 0: the built-in
//! server restarted (and kept down a while), killed, closing every connection with 1012, the
//! connections cut client side, an operator's command; each policy's attempts counted
//! exactly; and the bounds: a server that never comes back, one that accepts and closes at
//! once, one that answers every upgrade with 503 forever: the run ends at its duration, every
//! attempt paced by the policy (and the server's Retry-After), memory bounded, exit 3.
//! Results are read as JSON, field by field, as a script would.

mod support;

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;
use support::raw_server::{RawServer, read_upgrade};
use support::scripted_server::Script;
use support::{describe, fresh_dir, refused, result_schema_errors, text, wsbench_bin};

/// `wsbench run ARGS… --json DIR/run.json`: its output and the result file as JSON.
fn run(dir: &Path, args: &[&str]) -> (Output, Value) {
    let json = dir.join("run.json");
    let output = Command::new(wsbench_bin())
        .arg("run")
        .args(args)
        .args(["--json", json.to_str().unwrap()])
        .output()
        .expect("run wsbench");
    let result = std::fs::read_to_string(&json).unwrap_or_else(|e| panic!("{e}\n{}", describe(&output)));
    assert_eq!(result_schema_errors(&json), Vec::<String>::new());
    (output, serde_json::from_str(&result).expect("the result is JSON"))
}

fn count(value: &Value) -> u64 {
    value.as_u64().unwrap_or_else(|| panic!("not a count: {value}"))
}

/// A run of `connections` against the built-in server, disrupted by `disrupt`, reopening by
/// `policy`: its exit, result and report.
fn recovery(name: &str, connections: &str, policy: &str, disrupt: &str, duration: &str) -> (Output, Value) {
    let dir = fresh_dir(name);
    let reconnect = format!("--reconnect={policy}");
    let args = [
        "--connections",
        connections,
        "--warmup",
        "0s",
        "--duration",
        duration,
        reconnect.as_str(),
        "--disrupt",
        disrupt,
    ];
    let out = run(&dir, &args);
    std::fs::remove_dir_all(&dir).unwrap();
    out
}

#[test]
fn a_restart_that_keeps_the_server_down_costs_immediate_far_more_attempts_than_a_back_off() {
    let mut attempts = Vec::new();
    for policy in ["immediate", "exponential:base=100ms,cap=1s,jitter=full"] {
        let (output, result) = recovery("recovery-restart", "200", policy, "restart@1s,down=2s", "8s");
        assert_eq!(output.status.code(), Some(0), "{policy}: {}", describe(&output));
        let recovery = &result["recovery"];
        let event = &recovery["disruptions"][0];
        assert_eq!(event["kind"], "restart");
        assert!(event["took_s"].as_f64().unwrap() >= 2.0, "down 2 s: {event}");
        assert!(event["start_s"].as_f64().unwrap() < event["took_s"].as_f64().unwrap());
        assert_eq!((count(&recovery["lost"]), count(&recovery["back"])), (200, 200), "{recovery}");
        assert_eq!(count(&recovery["not_back"]), 0);
        // Every attempt counted once: the reconnections are the attempts of those that came back.
        assert_eq!(count(&recovery["attempts"]), count(&result["counters"]["reconnections"]), "{recovery}");
        let back_all = recovery["back_after"]["all_s"].as_f64().unwrap();
        assert!(back_all >= 2.0, "nobody back while the server was down: {back_all}");
        assert!(count(&recovery["downtime_us"]["count"]) == 200);
        // The refusals while it was down are the recovery's, not the run's errors.
        assert!(count(&recovery["failures"]["connection_refused"]) > 0, "{recovery}");
        assert_eq!(count(&recovery["failures"]["closed_1001"]), 200, "SIGTERM closes each with 1001");
        assert_eq!(result["summary"]["errors"], serde_json::json!({}), "{policy}");
        let stdout = text(&output.stdout);
        assert!(stdout.contains("\nrecovery:     restart at "), "{stdout}");
        assert!(stdout.contains("200 lost, 200 back, 0 not back: first "), "{stdout}");
        attempts.push(count(&recovery["attempts"]));
    }
    // Each refused attempt of `immediate` is made again at once; the back-off waits.
    assert!(attempts[0] > 2 * attempts[1], "immediate {} vs back-off {}", attempts[0], attempts[1]);
}

#[test]
fn a_kill_a_close_with_1012_and_a_drop_each_lose_every_connection_and_get_them_back() {
    let cases = [
        ("kill@1s", None, "reset"),
        ("close@1s", Some("closed_1012"), ""),
        ("close@1s,code=1001", Some("closed_1001"), ""),
        ("drop@1s", None, ""),
    ];
    for (disrupt, closed, cut) in cases {
        let (output, result) = recovery("recovery-kinds", "50", "fixed:100ms", disrupt, "4s");
        assert_eq!(output.status.code(), Some(0), "{disrupt}: {}", describe(&output));
        let recovery = &result["recovery"];
        assert_eq!((count(&recovery["lost"]), count(&recovery["back"])), (50, 50), "{disrupt}: {recovery}");
        if let Some(closed) = closed {
            assert_eq!(count(&recovery["failures"][closed]), 50, "{disrupt}: {recovery}");
        }
        if !cut.is_empty() {
            assert!(count(&recovery["failures"][cut]) > 0, "{disrupt}: {recovery}");
        }
        if disrupt.starts_with("drop") {
            assert_eq!(count(&recovery["dropped"]), 50, "{recovery}");
        }
        assert_eq!(result["summary"]["errors"], serde_json::json!({}), "{disrupt}");
    }
}

#[test]
fn a_server_that_never_comes_back_ends_the_run_on_time_with_every_connection_not_reconnected() {
    let (output, result) = recovery("recovery-never", "100", "immediate", "restart@1s,down=10m", "3s");
    assert_eq!(output.status.code(), Some(3), "{}", describe(&output));
    assert!(result["elapsed_s"].as_f64().unwrap() < 10.0, "the run ended at its duration");
    let recovery = &result["recovery"];
    assert_eq!((count(&recovery["lost"]), count(&recovery["not_back"])), (100, 100), "{recovery}");
    assert_eq!(recovery["back_after"]["p50_s"], Value::Null);
    assert_eq!(count(&result["summary"]["errors"]["not_reconnected"]), 100);
    assert!(text(&output.stdout).contains("100 lost, 0 back, 100 not back: first never"));
}

/// A server whose every upgrade after the first `admit` is answered `503` with
/// `Retry-After: 1`; it counts the refusals.
fn refusing_server(admit: u64, refused: Arc<AtomicU64>) -> RawServer {
    let seen = Arc::new(AtomicU64::new(0));
    RawServer::start(move |mut stream, stop| {
        let Ok(Some((upgrade, _))) = read_upgrade(&mut stream) else { return };
        if seen.fetch_add(1, Ordering::SeqCst) < admit {
            let _ = stream.write_all(&wsbench_proto::handshake::server_response(&upgrade, None));
            // An echo server, until the drop.
            let mut buf = [0u8; 4096];
            while !stop.load(Ordering::SeqCst) && matches!(stream.read(&mut buf), Ok(n) if n > 0) {}
            return;
        }
        refused.fetch_add(1, Ordering::SeqCst);
        let _ = stream.write_all(
            b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 4\r\n\r\nbusy",
        );
    })
}

#[test]
fn a_server_answering_503_forever_is_retried_no_sooner_than_it_asks_and_each_refusal_counted() {
    let refused = Arc::new(AtomicU64::new(0));
    let server = refusing_server(5, refused.clone());
    let dir = fresh_dir("recovery-503");
    let url = format!("ws://{}", server.addr());
    let args =
        [url.as_str(), "--connections", "5", "--warmup", "0s", "--duration", "4s", "--reconnect=immediate"];
    let mut args = args.to_vec();
    args.extend(["--disrupt", "drop@500ms", "--payload", "bytes:16"]);
    let (output, result) = run(&dir, &args);
    assert_eq!(output.status.code(), Some(3), "{}", describe(&output));
    // `immediate` alone would try thousands of times in 3.5 s; Retry-After: 1 holds each
    // connection to about one attempt a second.
    let refusals = refused.load(Ordering::SeqCst);
    assert!((5..=30).contains(&refusals), "{refusals} refusals");
    let recovery = &result["recovery"];
    assert_eq!(count(&recovery["failures"]["handshake_http_status_503"]), refusals, "{recovery}");
    assert_eq!(count(&recovery["not_back"]), 5);
    assert_eq!(count(&result["summary"]["errors"]["not_reconnected"]), 5);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_flapping_server_is_reconnected_by_the_policy_in_bounded_memory_and_the_run_ends_on_time() {
    // Every connection is closed with 1011 right after its first echo.
    let server = Script::echo().close_every_nth_connection(1, 1011).start();
    let dir = fresh_dir("recovery-flapping");
    let url = server.url();
    let args = [
        url.as_str(),
        "--connections",
        "20",
        "--warmup",
        "0s",
        "--duration",
        "3s",
        "--reconnect=fixed:50ms",
        "--disrupt",
        "drop@500ms",
    ];
    let (output, result) = run(&dir, &args);
    assert!(matches!(output.status.code(), Some(0 | 3)), "{}", describe(&output));
    assert!(result["elapsed_s"].as_f64().unwrap() < 10.0);
    // At most one attempt each 50 ms per connection: 20 × 3 s / 50 ms.
    let reconnections = count(&result["counters"]["reconnections"]);
    assert!((20..=1_300).contains(&reconnections), "{reconnections}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_command_disruption_runs_the_operators_command_and_its_failure_is_said() {
    let server = Script::echo().start();
    let url = server.url();
    for (command, failed) in [("sleep 0.2", None), ("exit 7", Some("exit"))] {
        let dir = fresh_dir("recovery-command");
        let args = [
            url.as_str(),
            "--connections",
            "10",
            "--warmup",
            "0s",
            // Room for a shell to start and end a 0.2 s command on a busy machine: a command
            // still running when the run ends is a failure of its own ("the run ended before").
            "--duration",
            "5s",
            "--reconnect",
            "--disrupt",
            "command@500ms",
            "--disrupt-command",
            command,
        ];
        let (output, result) = run(&dir, &args);
        assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
        let event = &result["recovery"]["disruptions"][0];
        assert_eq!(event["kind"], "command");
        match failed {
            None => assert!(event["took_s"].as_f64().is_some_and(|took| took >= 0.2), "{event}"),
            Some(word) => assert!(event["failed"].as_str().is_some_and(|why| why.contains(word)), "{event}"),
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn disruptions_that_cannot_run_are_usage_errors_before_any_load() {
    refused(
        &["run", "ws://127.0.0.1:9", "--reconnect", "--disrupt", "restart@1s"],
        2,
        "wsbench can restart only a server it started",
    );
    refused(&["run", "--disrupt", "drop@1s"], 2, "needs --reconnect");
    refused(&["run", "--reconnect=sometimes"], 2, "`sometimes` is not a reconnect policy");
    refused(
        &["run", "--reconnect", "--disrupt", "drop@1h", "--duration", "2s"],
        2,
        "is not within the load's",
    );
    refused(&["run", "--reconnect", "--disrupt", "command@1s"], 2, "needs --disrupt-command");
}

/// `--disrupt command` restarting a fleet member, node `ws`, from a shell script of the
/// test's own: the script stops the server by the pid it wrote and starts it again on the
/// same port. Every connection is lost once and comes back. (On a busy machine node has
/// taken more than 5 s to act on SIGTERM, so the script kills it after 2 s, and the run
/// leaves room for that.)
#[test]
fn a_command_restarting_node_ws_gets_every_connection_back() {
    let server_dir = wsbench_testpeers::repo_root().join("servers/node-ws");
    if !server_dir.join("node_modules/ws/package.json").exists() {
        assert!(
            !wsbench_testpeers::peers_required(),
            "node ws is not installed: scripts/install-test-peers.sh"
        );
        eprintln!("skipped: node ws is not installed (scripts/install-test-peers.sh)");
        return;
    }
    let dir = fresh_dir("recovery-node-ws");
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let pid = dir.join("node-ws.pid");
    let start = format!(
        "cd '{}' && setsid node server.js {port} >>'{}' 2>&1 & echo $! >'{}'",
        server_dir.display(),
        dir.join("node-ws.log").display(),
        pid.display()
    );
    let script = dir.join("restart.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\n# Restarts the test's node ws: stopped by its pid (killed if SIGTERM has not\n\
             # ended it in 2 s), started again on its port.\n\
             pid=$(cat '{}'); kill \"$pid\"; waited=0\n\
             while grep -qs '^State:[^Z]*$' /proc/$pid/status; do\n\
             waited=$((waited + 1)); [ $waited -eq 40 ] && kill -KILL \"$pid\"; sleep 0.05; done\n{start}\n",
            pid.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    assert!(Command::new("sh").arg("-c").arg(&start).status().unwrap().success());
    // Stops the server the test (or its script) started last, by its pid, however the test ends.
    struct StopByPidFile(std::path::PathBuf);
    impl Drop for StopByPidFile {
        fn drop(&mut self) {
            let _ =
                Command::new("sh").arg("-c").arg(format!("kill \"$(cat '{}')\"", self.0.display())).status();
        }
    }
    let _stop = StopByPidFile(pid.clone());
    let url = format!("ws://127.0.0.1:{port}/");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(std::time::Instant::now() < deadline, "node ws did not listen on {port}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let args = [
        url.as_str(),
        "--connections",
        "200",
        "--warmup",
        "0s",
        "--duration",
        "8s",
        "--reconnect=exponential:base=100ms,cap=1s,jitter=full",
        "--disrupt",
        "command@1s",
        "--disrupt-command",
        script.to_str().unwrap(),
    ];
    let (output, result) = run(&dir, &args);
    let recovery = &result["recovery"];
    assert_eq!(recovery["disruptions"][0]["kind"], "command", "{recovery}");
    assert!(recovery["disruptions"][0]["failed"].is_null(), "{recovery}");
    assert_eq!(
        (count(&recovery["lost"]), count(&recovery["not_back"])),
        (200, 0),
        "{recovery}\n{}",
        describe(&output)
    );
    assert!(text(&output.stdout).contains("recovery:"), "{}", describe(&output));
}
