//! The run while it runs, through the real binary against its built-in server: the
//! `--metrics-addr` endpoint scraped twice during a run and read by the real Python
//! `prometheus_client` parser; the plain progress lines on a piped stderr, exact per second
//! (the seconds add up to the result's echoes), and one line a second for a run of many
//! processes; `--stream`'s JSON lines; the endpoint and the stream of a run of many
//! processes, summed over its shards; `--quiet`; and a taken or malformed address refused
//! before any load.
//!
//! The parser is installed by `scripts/install-test-peers.sh` (into `.venv`); without it
//! the scrape test is skipped with a message, unless `WSBENCH_REQUIRE_PEERS=1`.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use serde_json::Value;
use support::{Finished, fresh_dir, peer_missing, run_with_timeout, wsbench_bin};

/// Longer than any run here takes, however loaded the machine.
const RUN_TIMEOUT: Duration = Duration::from_secs(60);

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("repo root")
}

/// `.venv/bin/python` when it can import the parser.
fn prometheus_parser() -> Option<PathBuf> {
    let python = repo_root().join(".venv/bin/python");
    let import =
        Command::new(&python).args(["-c", "import prometheus_client.parser"]).stdin(Stdio::null()).output();
    match import {
        Ok(output) if output.status.success() => Some(python),
        Ok(output) => {
            peer_missing(&format!(
                "`import prometheus_client` failed: {}",
                String::from_utf8_lossy(&output.stderr)
            ));
            None
        }
        Err(e) => {
            peer_missing(&format!("cannot run {}: {e}", python.display()));
            None
        }
    }
}

/// A running `wsbench run`, its stderr read line by line.
struct Running {
    child: Child,
    lines: Receiver<String>,
    seen: Vec<String>,
}

impl Running {
    fn start(args: &[&str]) -> Running {
        let mut child = support::spawn_run(args);
        let stderr = child.stderr.take().expect("piped");
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        Running { child, lines, seen: Vec::new() }
    }

    /// The next stderr line that satisfies `wanted`.
    fn wait_for(&mut self, wanted: impl Fn(&str) -> bool) -> String {
        loop {
            let line = self.lines.recv_timeout(RUN_TIMEOUT).unwrap_or_else(|_| {
                let _ = self.child.kill();
                panic!("no such line on stderr; saw:\n{}", self.seen.join("\n"))
            });
            self.seen.push(line.clone());
            if wanted(&line) {
                return line;
            }
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `GET /metrics` over a plain socket: the status line and the body.
fn scrape(addr: SocketAddr) -> (String, String) {
    let mut stream = TcpStream::connect(addr).expect("connect to the metrics endpoint");
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    stream.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read the response");
    let (head, body) = response.split_once("\r\n\r\n").expect("a head and a body");
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .expect("Content-Length")
        .parse()
        .unwrap();
    assert_eq!(length, body.len(), "{head}");
    (head.lines().next().unwrap().to_owned(), body.to_owned())
}

/// The page parsed by `prometheus_client`: family name → {type, samples: [[name, labels, value]]}.
fn parse_with_prometheus_client(python: &Path, page: &str) -> Value {
    let mut child = Command::new(python)
        .arg(repo_root().join("tests/live/parse_metrics.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the parser");
    child.stdin.take().unwrap().write_all(page.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "the parser refused the page:\n{}\n{page}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// The value of the only sample named `name` of `family`.
fn sample(families: &Value, family: &str, name: &str) -> f64 {
    let samples = families[family]["samples"].as_array().unwrap_or_else(|| panic!("no family {family}"));
    samples.iter().find(|s| s[0] == name).unwrap_or_else(|| panic!("no sample {name}"))[2].as_f64().unwrap()
}

#[test]
fn the_metrics_endpoint_is_scraped_twice_during_a_run_and_its_counter_grows() {
    scrape_twice_during_a_run(&[]);
}

/// The parent of a `--processes` run serves the seconds it sums over its shards: the same
/// page, with both shards' connections open.
#[test]
fn the_metrics_endpoint_of_many_processes_serves_all_their_shards() {
    scrape_twice_during_a_run(&["--processes", "2"]);
}

/// A run of 4 connections with `extra` arguments and `--metrics-addr 127.0.0.1:0`, scraped
/// during its first and third measured seconds: the pages parse, the received counter grows,
/// all 4 connections are open, the server is sampled, the phase is `measured`.
///
/// The connections get 30 s to open instead of the default 2 s: on a machine busy with other
/// work (a whole `cargo test` beside another job, load 4–8 on 2 CPUs), a `--processes` run's
/// shards, debug builds started as processes of their own, opened none of their connections
/// within 2 s (`connections 0 up, 4 failed`). What is tested is the endpoint, not how fast
/// a loaded machine connects; every assertion still needs all 4 connections open.
fn scrape_twice_during_a_run(extra: &[&str]) {
    let Some(python) = prometheus_parser() else { return };
    let load = [
        "--duration",
        "4s",
        "--connections",
        "4",
        "--connect-timeout",
        "30s",
        "--metrics-addr",
        "127.0.0.1:0",
    ];
    let mut run = Running::start(&[&load[..], extra].concat());
    let announced = run.wait_for(|l| l.starts_with("wsbench: metrics at http://"));
    let addr: SocketAddr = announced
        .trim_start_matches("wsbench: metrics at http://")
        .trim_end_matches("/metrics")
        .parse()
        .unwrap();
    // First scrape after the first measured second, the second two seconds later: both
    // while the run goes on (the measured window is 4 s).
    run.wait_for(|l| l.contains(" measured "));
    let (status, first) = scrape(addr);
    assert_eq!(status, "HTTP/1.1 200 OK");
    run.wait_for(|l| l.contains(" measured "));
    run.wait_for(|l| l.contains(" measured "));
    let (_, second) = scrape(addr);
    let first = parse_with_prometheus_client(&python, &first);
    let second = parse_with_prometheus_client(&python, &second);
    let received =
        |families: &Value| sample(families, "wsbench_messages_received", "wsbench_messages_received_total");
    assert_eq!(first["wsbench_messages_received"]["type"], "counter");
    assert!(received(&first) > 0.0, "{first}");
    assert!(received(&second) > received(&first), "the counter did not grow: {first}\n{second}");
    assert_eq!(sample(&second, "wsbench_connections_open", "wsbench_connections_open"), 4.0);
    assert!(sample(&second, "wsbench_server_rss_bytes", "wsbench_server_rss_bytes") > 0.0);
    for families in [&first, &second] {
        // The page has the second whose line was seen: both scrapes are in the measured window.
        let phases = families["wsbench_phase"]["samples"].as_array().unwrap();
        let now: Vec<&Value> =
            phases.iter().filter(|s| s[2].as_f64() == Some(1.0)).map(|s| &s[1]["phase"]).collect();
        assert_eq!(now, ["measured"], "{phases:?}");
        assert_histogram_well_formed(families);
    }
    let status = run.child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
}

/// Buckets in increasing `le` order, cumulative, ending at `+Inf` = `_count`, with a sum.
fn assert_histogram_well_formed(families: &Value) {
    let histogram = &families["wsbench_round_trip_seconds"];
    assert_eq!(histogram["type"], "histogram", "{families}");
    let samples = histogram["samples"].as_array().unwrap();
    let buckets: Vec<(f64, f64)> = samples
        .iter()
        .filter(|s| s[0] == "wsbench_round_trip_seconds_bucket")
        .map(|s| (s[1]["le"].as_str().unwrap().parse::<f64>().unwrap(), s[2].as_f64().unwrap()))
        .collect();
    assert!(buckets.len() > 5, "{histogram}");
    assert!(buckets.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1), "not cumulative: {buckets:?}");
    let (last_le, last_count) = *buckets.last().unwrap();
    assert!(last_le.is_infinite());
    let count = sample(families, "wsbench_round_trip_seconds", "wsbench_round_trip_seconds_count");
    assert_eq!(last_count, count);
    assert!(count > 0.0);
    let sum = sample(families, "wsbench_round_trip_seconds", "wsbench_round_trip_seconds_sum");
    assert!(sum > 0.0 && sum < count * 30.0, "sum {sum} of {count}");
}

/// `wsbench run ARGS --json DIR/r.json` with both outputs piped; the result file.
fn run_piped(dir: &Path, args: &[&str]) -> (Finished, Value) {
    let json = dir.join("r.json");
    let finished = run_with_timeout(
        Command::new(wsbench_bin()).arg("run").args(args).arg("--json").arg(&json),
        RUN_TIMEOUT,
    );
    assert_eq!(finished.status.and_then(|s| s.code()), Some(0), "{}", finished.describe("wsbench run"));
    let result = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (finished, result)
}

/// The round trips of a plain progress line: `wsbench:    3 s measured  100 round trips/s …`.
fn round_trips_of(line: &str) -> Option<u64> {
    let before = line.strip_prefix("wsbench: ")?.split(" round trips/s").next()?;
    before.split_whitespace().last()?.replace(',', "").parse().ok()
}

#[test]
fn piped_progress_shows_a_line_per_second_with_exact_counts_at_a_low_rate() {
    let dir = fresh_dir("live-progress");
    // 100 messages/s: batches of 256 would have shown 0 for every second.
    let (finished, result) = run_piped(&dir, &["--duration", "4s", "--connections", "5", "--rate", "100/s"]);
    let lines: Vec<&str> = finished.stderr.lines().filter(|l| l.contains(" round trips/s ")).collect();
    let counts: Vec<u64> = lines.iter().map(|l| round_trips_of(l).unwrap_or_else(|| panic!("{l}"))).collect();
    let measured: Vec<u64> =
        lines.iter().zip(&counts).filter(|(l, _)| l.contains(" measured ")).map(|(_, &c)| c).collect();
    assert!(measured.len() >= 3, "{}", finished.stderr);
    assert!(measured.iter().all(|&c| (50..=150).contains(&c)), "{measured:?}\n{}", finished.stderr);
    // Exact: every round trip of the run is in exactly one second's line.
    assert_eq!(counts.iter().sum::<u64>(), result["counters"]["messages_received"].as_u64().unwrap());
    assert!(!finished.stdout.contains(" round trips/s  p50"), "progress goes to stderr only");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The second of a plain progress line (`wsbench:    3 s measured …` → 3).
fn second_of(line: &str) -> Option<u64> {
    line.strip_prefix("wsbench: ")?.split_whitespace().next()?.parse().ok()
}

/// A million connections take ~55 client processes here: their progress must stay one line
/// a second that sums them all up (before, each shard's line was forwarded: N a second).
#[test]
fn many_processes_show_one_progress_line_a_second_naming_the_shard_count() {
    let dir = fresh_dir("live-many-processes");
    let args = [
        "--processes",
        "12",
        "--server-processes",
        "3",
        "--connections",
        "24",
        "--warmup",
        "1s",
        "--duration",
        "3s",
    ];
    let (finished, result) = run_piped(&dir, &args);
    let lines: Vec<&str> = finished.stderr.lines().filter(|l| l.contains(" round trips/s ")).collect();
    let seconds: Vec<u64> = lines.iter().map(|l| second_of(l).unwrap_or_else(|| panic!("{l}"))).collect();
    assert!(
        seconds.windows(2).all(|pair| pair[0] < pair[1]),
        "one line per second, in order:\n{}",
        finished.stderr
    );
    let elapsed_s = result["elapsed_s"].as_f64().unwrap();
    assert!(
        seconds.len() >= 4 && seconds.len() as f64 <= elapsed_s + 1.0,
        "{elapsed_s} s:\n{}",
        finished.stderr
    );
    assert!(lines.iter().all(|l| l.contains(" 12 shards")), "{}", finished.stderr);
    let measured: Vec<&&str> = lines.iter().filter(|l| l.contains(" measured ")).collect();
    assert!(measured.iter().any(|l| l.contains("connections 24 up, 0 failed")), "{}", finished.stderr);
    assert!(!finished.stderr.contains("[shard "), "no shard's own line:\n{}", finished.stderr);
    assert_eq!(result["counters"]["connections_established"], 24);
    // No second is counted twice: the lines add up to at most the run's round trips.
    let total: u64 = lines.iter().map(|l| round_trips_of(l).unwrap()).sum();
    assert!(total <= result["counters"]["messages_received"].as_u64().unwrap(), "{}", finished.stderr);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The phase word of a plain progress line (`measured`, `warm-up`, …).
fn phase_of(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("wsbench: ")?.trim_start();
    rest.split_whitespace().nth(2)
}

#[test]
fn a_flow_and_a_churn_warm_up_show_as_warm_up() {
    let dir = fresh_dir("live-warmup");
    let flow = dir.join("flow.toml");
    std::fs::write(
        &flow,
        "scenario = \"flow\"\n[[flow.steps]]\nname = \"hi\"\nsend = \"hello {seq}\"\n\
         [[flow.steps]]\nexpect-regex = \"hello\"\n[[flow.steps]]\nsleep = \"10ms\"\n",
    )
    .unwrap();
    let runs: [&[&str]; 2] = [
        &["--scenario", flow.to_str().unwrap(), "--connections", "5", "--warmup", "2s", "--duration", "2s"],
        &["churn", "--rate", "20/s", "--warmup", "2s", "--duration", "2s"],
    ];
    for args in runs {
        let (finished, _) = run_piped(&dir, args);
        let phases: Vec<&str> = finished.stderr.lines().filter_map(phase_of).collect();
        assert!(phases.contains(&"warm-up"), "{args:?}: {phases:?}\n{}", finished.stderr);
        assert!(!phases.contains(&"ramp"), "no ramp in {args:?}: {phases:?}\n{}", finished.stderr);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_scenario_name_given_as_scenario_runs_it() {
    let dir = fresh_dir("live-scenario-name");
    let args = ["--scenario", "pubsub", "--subscribers", "10", "--duration", "1s", "--warmup", "0s"];
    let (finished, result) = run_piped(&dir, &args);
    assert_eq!(result["scenario"], "pubsub", "{}", finished.describe("wsbench run"));
    assert_eq!(result["pubsub"]["subscribed"], 10, "{}", finished.describe("wsbench run"));
    assert!(finished.stderr.contains(" deliveries/s "), "{}", finished.stderr);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_stream_has_one_json_line_per_second_and_its_last_line_is_on_disk_at_exit() {
    let dir = fresh_dir("live-stream");
    let stream = dir.join("live.jsonl");
    let (_, result) = run_piped(
        &dir,
        &["--duration", "3s", "--connections", "3", "--quiet", "--stream", stream.to_str().unwrap()],
    );
    let (lines, total) = assert_stream_of(&stream, &result);
    assert_eq!(
        total,
        result["counters"]["messages_received"].as_u64().unwrap(),
        "every round trip is in one second"
    );
    assert!(lines.iter().all(|l| l.get("shards").is_none()), "one process has no shards: {lines:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The parent of a `--processes` run streams one line a second summed over its shards.
#[test]
fn the_stream_of_many_processes_has_one_line_a_second_for_all_their_shards() {
    let dir = fresh_dir("live-stream-processes");
    let stream = dir.join("live.jsonl");
    let args = ["--processes", "2", "--duration", "3s", "--connections", "4", "--quiet", "--stream"];
    let (_, result) = run_piped(&dir, &[&args[..], &[stream.to_str().unwrap()]].concat());
    let (lines, total) = assert_stream_of(&stream, &result);
    // A shard's second that came more than 2 s late is not shown (or streamed) again.
    assert!(total <= result["counters"]["messages_received"].as_u64().unwrap(), "{lines:?}");
    let measured: Vec<&Value> = lines.iter().filter(|l| l["phase"] == "measured").collect();
    assert!(measured.iter().all(|l| l["connections_open"] == 4), "both shards' connections: {lines:?}");
    let each_shard = serde_json::json!({"min": 2, "max": 2});
    assert!(
        measured.iter().all(|l| l["shards"]["running"] == 2 && l["shards"]["connections_open"] == each_shard),
        "how the shards compare: {measured:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The `--stream` file of a run whose result is `result`: one JSON line per second from
/// 0, in order, a warm-up second and 3 measured ones at least, the last line's counters the
/// run's. Its lines, and the round trips they add up to.
fn assert_stream_of(stream: &Path, result: &Value) -> (Vec<Value>, u64) {
    let text = std::fs::read_to_string(stream).unwrap();
    assert!(text.ends_with('\n'));
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
    let seconds: Vec<u64> = lines.iter().map(|l| l["second"].as_u64().unwrap()).collect();
    assert_eq!(seconds, (0..seconds.len() as u64).collect::<Vec<_>>(), "one line per second, in order");
    assert!(seconds.len() >= 4, "warm-up and 3 measured seconds at least: {seconds:?}");
    assert!(lines.iter().filter(|l| l["phase"] == "measured").count() >= 3, "{text}");
    let received = result["counters"]["messages_received"].as_u64().unwrap();
    let total: u64 = lines.iter().map(|l| l["round_trips"].as_u64().unwrap()).sum();
    assert!(total > 0, "{text}");
    let last = lines.last().unwrap();
    assert_eq!(last["counters"]["messages_received"].as_u64().unwrap(), received, "the last line is the end");
    (lines, total)
}

#[test]
fn quiet_prints_no_progress() {
    let dir = fresh_dir("live-quiet");
    let (finished, _) = run_piped(&dir, &["--duration", "2s", "--connections", "2", "--quiet"]);
    assert_eq!(finished.stderr, "", "--quiet printed on stderr");
    assert!(!finished.stdout.contains("round trips/s  p50"), "{}", finished.stdout);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_taken_or_malformed_address_or_an_unwritable_stream_is_refused_before_any_load() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let cases: [(&[&str], String); 3] = [
        (&["--metrics-addr", &addr], format!("wsbench: --metrics-addr {addr}: cannot listen there")),
        (
            &["--metrics-addr", "localhost:9464"],
            "wsbench: --metrics-addr: `localhost:9464` is not an address and port".to_owned(),
        ),
        (
            &["--stream", "/nonexistent-wsbench/live.jsonl"],
            "wsbench: --stream /nonexistent-wsbench/live.jsonl: ".to_owned(),
        ),
    ];
    for (args, expected) in cases {
        let finished = run_with_timeout(
            Command::new(wsbench_bin()).args(["run", "--duration", "2s"]).args(args),
            Duration::from_secs(20),
        );
        let what = finished.describe(&args.join(" "));
        assert_eq!(finished.status.and_then(|s| s.code()), Some(2), "{what}");
        assert_eq!(finished.stderr.lines().count(), 1, "{what}");
        assert!(finished.stderr.starts_with(&expected), "{what}");
        assert!(finished.stdout.is_empty(), "{what}");
    }
}

/// `wsbench run 2>&1 | head -1`: the reader goes away after one line. The progress lines
/// stop; the run goes on to its end and its exit code (before, printing the next line
/// panicked: exit 101).
#[test]
fn a_closed_stderr_ends_the_progress_lines_not_the_run() {
    let mut child = support::spawn_run(&["--connections", "5", "--warmup", "0s", "--duration", "3s"]);
    let mut stderr = BufReader::new(child.stderr.take().expect("piped"));
    let mut first = String::new();
    stderr.read_line(&mut first).unwrap();
    assert!(first.starts_with("wsbench: "), "{first}");
    drop(stderr);
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stdout));
    assert!(String::from_utf8_lossy(&output.stdout).contains("round trips/s (after warm-up): "));
}
