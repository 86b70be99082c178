//! A server that goes away under a long run, with the real binary and a real `wsbench serve`
//! that this test starts, kills and starts again by the pid it started (never by name):
//!
//! - killed for good: the run ends early, on its own, and the result and the report say so
//!   ("no connection left"), rather than a rate over a shorter window passing for a whole one;
//! - restarted three times under `--reconnect`: the connections come back, paced (each
//!   connection's pauses double while the server is down: no storm of connects) and
//!   counted; pub/sub subscribers subscribe again, and the publishes that fell due while
//!   their publisher was cut off are counted as never sent, not as published.
//!
//! The same soak over 10 minutes is `bench/soak.sh` (figures in bench/RESULTS.md).

mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{fresh_dir, spawn_run, wsbench_bin};

/// A `wsbench serve` this test started (killed on drop, by its pid).
struct Serve {
    child: Child,
    port: u16,
}

impl Serve {
    /// Starts `wsbench serve --port PORT EXTRA…` (0: any free port) and waits until it listens.
    fn start(port: u16, extra: &[&str]) -> Serve {
        let mut child = Command::new(wsbench_bin())
            .args(["serve", "--port", &port.to_string()])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn wsbench serve");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = lines.next().expect("a listening line").unwrap();
        std::thread::spawn(move || lines.for_each(drop));
        let url = first.strip_prefix("listening on ").unwrap().split_whitespace().next().unwrap();
        let port = url.rsplit(':').next().unwrap().trim_end_matches('/').parse().unwrap();
        Serve { child, port }
    }

    fn url(&self) -> String {
        format!("ws://127.0.0.1:{}/", self.port)
    }

    /// Kills this server (SIGKILL to the pid started above) and waits for it.
    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The `--stream` lines written so far.
fn stream_lines(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines().filter_map(|line| serde_json::from_str(line).ok()).collect()
}

/// Waits until the stream has a measured second after `after` satisfying `wanted`; returns
/// its number.
fn wait_for_second(stream: &Path, after: i64, wanted: impl Fn(&Value) -> bool) -> i64 {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let found = stream_lines(stream).into_iter().find(|line| {
            line["phase"] == "measured" && line["second"].as_i64().unwrap() > after && wanted(line)
        });
        if let Some(line) = found {
            return line["second"].as_i64().unwrap();
        }
        assert!(Instant::now() < deadline, "no such second after {after}: {:?}", stream_lines(stream).last());
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits for `child` and reads its output; fails if it is still running after `limit`.
fn finish(mut child: Child, limit: Duration) -> (Option<i32>, String, String) {
    let (stdout, stderr) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let out = std::thread::spawn(move || std::io::read_to_string(stdout).unwrap_or_default());
    let err = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("the run did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let code = child.wait().unwrap().code();
    (code, out.join().unwrap(), err.join().unwrap())
}

fn result(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("r.json")).unwrap()).unwrap()
}

/// Starts `wsbench run URL ARGS…` with its stream and result in `dir`.
fn run(url: &str, dir: &Path, args: &[&str]) -> Child {
    let stream = dir.join("live.jsonl");
    let json = dir.join("r.json");
    let mut all = vec![url, "--quiet", "--warmup", "0s", "--stream", stream.to_str().unwrap()];
    all.extend(["--json", json.to_str().unwrap()]);
    all.extend(args);
    spawn_run(&all)
}

fn server_dies_mid_run(test: &str, serve: &[&str], load: &[&str]) -> (Option<i32>, String, Value) {
    let dir = fresh_dir(test);
    let mut server = Serve::start(0, serve);
    let child = run(&server.url(), &dir, load);
    wait_for_second(&dir.join("live.jsonl"), -1, |line| line["round_trips"].as_u64() > Some(0));
    server.kill();
    let (code, stdout, stderr) = finish(child, Duration::from_secs(60));
    assert!(!stdout.is_empty(), "{stderr}");
    (code, stdout, result(&dir))
}

#[test]
fn an_echo_run_whose_server_dies_ends_early_and_says_so() {
    let (code, stdout, result) = server_dies_mid_run(
        "dies-echo",
        &[],
        &["--connections", "20", "--rate", "200/s", "--duration", "30s"],
    );
    assert_eq!(code, Some(3), "{stdout}");
    assert_eq!(result["ended_early"]["reason"], "no connection left (the server closed or reset every one)");
    assert_eq!(result["ended_early"]["planned_measured_s"], 30.0);
    assert!(result["measured_s"].as_f64().unwrap() < 30.0);
    assert!(!result["interrupted"].as_bool().unwrap());
    let header = stdout.lines().next().unwrap();
    assert!(
        header.contains("[ENDED EARLY: no connection left (the server closed or reset every one), "),
        "{header}"
    );
    assert!(header.contains("into the 30.0 s measured window; its rates are over that]"), "{header}");
}

#[test]
fn a_pubsub_run_whose_server_dies_ends_early_and_says_so() {
    let load = ["--scenario", "pubsub", "--subscribers", "10", "--rate", "100/s", "--duration", "30s"];
    let (code, stdout, result) = server_dies_mid_run("dies-pubsub", &["--pubsub"], &load);
    assert_eq!(code, Some(3), "{stdout}");
    assert_eq!(result["ended_early"]["reason"], "no connection left (the server closed or reset every one)");
    assert!(stdout.lines().next().unwrap().contains("[ENDED EARLY: no connection left"), "{stdout}");
}

/// Restarts the server three times while the run goes on, each time once every connection
/// is back and measuring (`connections` open), down for `down`; returns the stream's path.
fn restart_three_times(dir: &Path, server: &mut Serve, serve: &[&str], connections: u64, down: Duration) {
    let stream = dir.join("live.jsonl");
    let all_back = |line: &Value| {
        line["connections_open"].as_u64() == Some(connections) && line["round_trips"].as_u64() > Some(0)
    };
    let mut last = wait_for_second(&stream, -1, all_back);
    for _ in 0..3 {
        let port = server.port;
        server.kill();
        std::thread::sleep(down);
        *server = Serve::start(port, serve);
        // Back: every connection open again and exchanging, in a second after the restart.
        last = wait_for_second(&stream, last + down.as_secs() as i64, all_back);
    }
}

#[test]
fn a_restarting_server_gets_its_echo_connections_back_paced_and_counted() {
    let dir = fresh_dir("restarts-echo");
    let mut server = Serve::start(0, &[]);
    let connections = 50;
    let child = run(
        &server.url(),
        &dir,
        &["--connections", "50", "--rate", "500/s", "--duration", "60s", "--reconnect"],
    );
    let down = Duration::from_secs(3);
    restart_three_times(&dir, &mut server, &[], connections, down);
    let (code, stdout, stderr) = finish(child, Duration::from_secs(120));
    assert_eq!(code, Some(3), "failures were counted: {stdout}{stderr}");
    let result = result(&dir);
    assert!(result.get("ended_early").is_none(), "with --reconnect the run goes on: {stdout}");
    let counters = &result["counters"];
    let reconnections = counters["reconnections"].as_u64().unwrap();
    // Each restart cost every connection at least one attempt; while the server was down
    // 3 s, each tried at most 6 times (pauses 0.1-0.2, 0.2-0.4, … s), not every 100 ms (30).
    assert!(reconnections >= 3 * connections, "{reconnections} reconnections");
    assert!(reconnections <= 3 * connections * 7, "{reconnections} reconnections: a storm");
    assert_eq!(
        result["summary"]["connections"]["attempted"].as_u64().unwrap(),
        connections + reconnections,
        "every attempt is counted"
    );
    assert!(
        counters["resets"].as_u64().unwrap() + counters["closed_by_server"].as_object().unwrap().len() as u64
            > 0
    );
    let errors = &result["summary"]["errors"];
    assert!(
        errors["connection_refused"].as_u64().unwrap_or(0) > 0,
        "attempts while down were refused: {errors}"
    );
    // Back to full strength by the end: the last measured seconds had every connection.
    let stream = stream_lines(&dir.join("live.jsonl"));
    let last_full = stream.iter().rev().filter(|l| l["phase"] == "measured").nth(1).unwrap();
    assert_eq!(last_full["connections_open"].as_u64(), Some(connections), "{last_full}");
    assert!(stdout.contains("reconnections)"), "{stdout}");
}

#[test]
fn a_restarting_server_gets_its_subscriptions_made_again_and_the_publishes_never_sent_counted() {
    let dir = fresh_dir("restarts-pubsub");
    let mut server = Serve::start(0, &["--pubsub"]);
    let (subscribers, publishers) = (20, 2);
    // One topic (the default): each subscriber is owed every publish.
    let child = run(
        &server.url(),
        &dir,
        &[
            "--scenario",
            "pubsub",
            "--subscribers",
            "20",
            "--publishers",
            "2",
            "--rate",
            "100/s",
            "--duration",
            "60s",
            "--reconnect",
        ],
    );
    restart_three_times(&dir, &mut server, &["--pubsub"], subscribers + publishers, Duration::from_secs(3));
    let (code, stdout, stderr) = finish(child, Duration::from_secs(120));
    assert_eq!(code, Some(3), "{stdout}{stderr}");
    let pubsub = &result(&dir)["pubsub"];
    let resubscribed = pubsub["resubscribed"].as_u64().unwrap();
    assert!(resubscribed >= 3 * subscribers, "{resubscribed} subscriptions made again: {pubsub}");
    // Publishes due while the publishers were cut off were never sent: counted as such,
    // and no subscriber is expected to have them (the server never had them).
    let not_sent = pubsub["not_sent"].as_u64().unwrap();
    assert!(not_sent > 0, "{pubsub}");
    assert_eq!(
        pubsub["expected_deliveries"].as_u64().unwrap(),
        pubsub["published"].as_u64().unwrap() * pubsub["subscribed"].as_u64().unwrap(),
        "{pubsub}"
    );
    assert_eq!(
        pubsub["expected_deliveries"].as_u64().unwrap() - pubsub["delivered"].as_u64().unwrap(),
        pubsub["lost"].as_u64().unwrap()
    );
    let line = stdout.lines().find(|l| l.starts_with("reconnects:")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        line.contains("subscriptions made again;")
            && line.contains("fell due while their publisher was disconnected (never sent"),
        "{line}"
    );
}
