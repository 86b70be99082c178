//! Scale-out against real processes on loopback: shards of one run merged losslessly
//! (`run --shard I/N --start-at T`, `wsbench merge`), one run split over client processes
//! (`run --processes N`, with a shard that dies and with Ctrl-C), and the built-in server as
//! several processes sharing its port (`serve --processes N`), as the probe sees it; and
//! the `scale-40k` preset, which needs all of that at once.

mod support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::ValueEnum;
use support::{Server, wsbench_bin};
use wsbench::fixture;
use wsbench::report::ReportFormat;
use wsbench::result::RunResult;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wsbench-scale-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64
}

fn wsbench(args: &[&str]) -> Output {
    Command::new(wsbench_bin()).args(args).output().expect("run wsbench")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn read(path: &Path) -> RunResult {
    RunResult::read_json(path).unwrap_or_else(|e| panic!("{e}"))
}

fn latency_count(result: &RunResult) -> u64 {
    wsbench::scenario::decode_metrics(result).unwrap().latency.len()
}

/// A merged result is a result like any other: it validates and renders in every format.
fn assert_is_a_good_result_file(path: &Path) {
    let errors = support::result_schema_errors(path);
    assert!(errors.is_empty(), "{} does not validate:\n{}", path.display(), errors.join("\n"));
    for format in ReportFormat::value_variants() {
        let name = format.to_possible_value().unwrap().get_name().to_owned();
        let output = wsbench(&["report", path.to_str().unwrap(), "--format", &name]);
        assert!(output.status.success(), "report --format {name}: {}", stderr(&output));
        assert!(!output.stdout.is_empty(), "report --format {name} printed nothing");
    }
}

#[test]
fn merge_of_shards_equals_the_sum() {
    let server = Server::spawn(&[]);
    let url = format!("ws://{}/", server.addr);
    let dir = temp_dir("merge");
    let start_at = (now_ms() + 1_500).to_string();
    let files: Vec<PathBuf> = (0..2).map(|i| dir.join(format!("shard-{i}.json"))).collect();
    let shards: Vec<_> = (0..2)
        .map(|i| {
            let shard = format!("{i}/2");
            Command::new(wsbench_bin())
                .args(["run", &url, "--connections", "200", "--duration", "1s", "--warmup", "0s"])
                .args(["--shard", &shard, "--start-at", &start_at, "--json", files[i].to_str().unwrap()])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for shard in shards {
        let output = shard.wait_with_output().unwrap();
        assert!(output.status.success(), "{}", stderr(&output));
    }
    let merged_path = dir.join("merged.json");
    let output = wsbench(&[
        "merge",
        files[0].to_str().unwrap(),
        files[1].to_str().unwrap(),
        "-o",
        merged_path.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(String::from_utf8_lossy(&output.stdout).contains("shards:"));

    let (a, b, merged) = (read(&files[0]), read(&files[1]), read(&merged_path));
    let (ca, cb, cm) = (&a.summary.connections, &b.summary.connections, &merged.summary.connections);
    assert_eq!((ca.established, cb.established), (100, 100), "each shard opens its half");
    assert_eq!(cm.attempted, ca.attempted + cb.attempted);
    assert_eq!(cm.established, ca.established + cb.established);
    assert_eq!(cm.established, 200);
    let sum = |f: fn(&RunResult) -> u64| f(&a) + f(&b);
    assert_eq!(merged.counters.messages_sent, sum(|r| r.counters.messages_sent));
    assert_eq!(merged.counters.messages_received, sum(|r| r.counters.messages_received));
    assert_eq!(merged.counters.bytes_received, sum(|r| r.counters.bytes_received));
    assert_eq!(latency_count(&merged), latency_count(&a) + latency_count(&b));
    assert_eq!(merged.summary.latency_us.count, latency_count(&merged));
    assert_eq!(
        merged.summary.measured_exchanges,
        a.summary.measured_exchanges + b.summary.measured_exchanges
    );
    assert_eq!(merged.summary.exchanges_per_sec, a.summary.exchanges_per_sec + b.summary.exchanges_per_sec);
    // They started together: a shard's start is the later of --start-at and the moment it
    // was ready, and 1.5 s is ample to get ready, so both start exactly at --start-at,
    // whenever the machine woke them.
    let start_at: u64 = start_at.parse().unwrap();
    assert_eq!((a.started_at_unix_ms, b.started_at_unix_ms), (start_at, start_at), "--start-at {start_at}");
    assert_eq!(merged.started_at_unix_ms, a.started_at_unix_ms.min(b.started_at_unix_ms));
    // Both probed the same server by its port: it is kept once.
    assert_eq!(merged.server.pids, [server.pid()]);
    assert_eq!(merged.shards.len(), 2);
    assert_eq!(merged.shards[1].shard.as_deref(), Some("1/2"));
    // Started together by hand (`--start-at`), the shards share one run id, and so does the merge.
    assert!(a.run_id.is_some() && a.run_id == b.run_id && merged.run_id == a.run_id, "{:?}", a.run_id);
    assert_is_a_good_result_file(&merged_path);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn merge_refuses_different_scenarios() {
    let dir = temp_dir("refuse");
    let small = dir.join("small.json");
    let big = dir.join("big.json");
    RunResult::from_outcome(&fixture::closed_loop()).write_json(&small).unwrap();
    let mut outcome = fixture::closed_loop();
    outcome.config["connections"] = serde_json::json!(2_000);
    RunResult::from_outcome(&outcome).write_json(&big).unwrap();
    let merged = dir.join("merged.json");
    let output =
        wsbench(&["merge", small.to_str().unwrap(), big.to_str().unwrap(), "-o", merged.to_str().unwrap()]);
    // Not the shards of one run: bad usage, like the other refusals of merge.
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    assert_eq!(message.lines().count(), 1, "{message}");
    assert!(message.contains("`connections` is 1000"), "{message}");
    assert!(
        message.contains(small.to_str().unwrap()) && message.contains(big.to_str().unwrap()),
        "{message}"
    );
    assert!(!merged.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// The shards of `--processes` get their settings on a pipe: a `--bearer` token is in no file
/// beside the results (CI jobs upload those folders), not even for the length of the run.
#[test]
fn a_bearer_token_handed_to_the_shards_is_left_in_no_file() {
    let dir = temp_dir("secrets");
    let json = dir.join("p.json");
    let token = "s3cret-token-do-not-leak";
    let output = wsbench(&[
        "run",
        "--connections",
        "20",
        "--duration",
        "1s",
        "--processes",
        "2",
        "--bearer",
        token,
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let files = files_under(&dir);
    assert!(files.iter().any(|f| f.ends_with("p.shards/shard-1.json")), "{files:?}");
    assert!(!files.iter().any(|f| f.extension().is_some_and(|e| e == "toml")), "no settings file: {files:?}");
    for file in &files {
        let text = String::from_utf8_lossy(&std::fs::read(file).unwrap()).into_owned();
        assert!(!text.contains(token), "{} holds the token", file.display());
    }
    let shard = read(&dir.join("p.shards/shard-0.json"));
    assert_eq!(shard.config["handshake"]["headers"][0], "Authorization: <redacted>");
}

#[test]
fn processes_2_runs_two_shards_and_merges() {
    let dir = temp_dir("processes");
    let json = dir.join("run.json");
    let output = wsbench(&[
        "run",
        "--connections",
        "200",
        "--duration",
        "2s",
        "--processes",
        "2",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let merged = read(&json);
    assert_eq!(merged.summary.connections.attempted, 200);
    assert_eq!(merged.summary.connections.established, 200);
    assert_eq!(merged.config["processes"], 2);
    assert!(merged.target.builtin);
    assert!(!merged.interrupted);
    // The parent probed the server for the whole run; the shards did not.
    assert!(merged.server.probed, "{:?}", merged.server);
    assert_eq!(merged.server.found_by.as_deref(), Some("spawned"));
    assert!(merged.server.samples.len() >= 8, "{} samples", merged.server.samples.len());
    assert_eq!(merged.shards.len(), 2);
    let shard_files: Vec<RunResult> =
        (0..2).map(|i| read(&dir.join(format!("run.shards/shard-{i}.json")))).collect();
    for (i, shard) in shard_files.iter().enumerate() {
        assert_eq!(shard.summary.connections.established, 100);
        assert_eq!(shard.config["shard"]["index"], i);
        assert!(!shard.server.probed);
        assert_eq!(merged.shards[i].shard.as_deref(), Some(format!("{i}/2").as_str()));
    }
    assert_eq!(latency_count(&merged), shard_files.iter().map(latency_count).sum::<u64>());
    assert_eq!(
        merged.summary.exchanges_per_sec,
        shard_files.iter().map(|s| s.summary.exchanges_per_sec).sum::<f64>()
    );
    assert!(merged.summary.exchanges_per_sec > 0.0);
    assert_client_cpu_is_split_and_per_round_trip(&merged, &shard_files);
    assert_is_a_good_result_file(&json);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The `scale-40k` preset as it is: 40,000 connections over 4 client and 4 server
/// processes and 4 source addresses, every one of them echoing in the measured window.
#[test]
fn the_scale_40k_preset_echoes_on_every_connection_and_none_fails() {
    let dir = temp_dir("scale-40k");
    let json = dir.join("run.json");
    let output = wsbench(&["run", "--scenario", "scale-40k", "--quiet", "--json", json.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    let result: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let counters = &result["counters"];
    let count = |key: &str| counters[key].as_u64().unwrap_or_else(|| panic!("{key} in {counters}"));
    assert_eq!(count("connections_attempted"), 40_000);
    assert_eq!(count("connections_established"), 40_000, "{counters}");
    assert_eq!(result["summary"]["connections"]["failed"], 0, "{counters}");
    // Every connection had at least one round trip measured, and none was left hanging.
    assert_eq!(count("connections_in_window"), 40_000, "{counters}");
    assert_eq!(count("messages_unanswered"), 0, "{counters}");
    assert_eq!(count("messages_received"), count("messages_sent"));
    assert_eq!(result["shards"].as_array().map(Vec::len), Some(4));
    assert_eq!(result["config"]["server_processes"], 4);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every worker of every shard has its user and system CPU; the merged client's CPU per
/// round trip is all of them over every echo, and sits beside the server's.
fn assert_client_cpu_is_split_and_per_round_trip(merged: &RunResult, shards: &[RunResult]) {
    let workers: Vec<_> = shards.iter().flat_map(|s| s.client.workers.iter()).collect();
    assert_eq!(merged.client.workers.len(), workers.len());
    for worker in &merged.client.workers {
        assert!(worker.user_seconds > 0.0 && worker.system_seconds > 0.0, "{worker:?}");
        let sum = worker.user_seconds + worker.system_seconds;
        assert!((worker.cpu_seconds - sum).abs() < 1e-6, "{worker:?}");
    }
    let cpu: f64 = workers.iter().map(|w| w.cpu_seconds).sum();
    assert!((merged.client.cpu_seconds - cpu).abs() < 1e-6, "{:?}", merged.client);
    let received = merged.counters.messages_received;
    assert_eq!(received, shards.iter().map(|s| s.counters.messages_received).sum::<u64>());
    let per_round_trip = merged.client.cpu_us_per_round_trip.expect("client CPU per round trip");
    assert!((per_round_trip - cpu * 1e6 / received as f64).abs() < 1e-6, "{per_round_trip}");
    let server_cpu = merged.server.cpu_seconds.unwrap();
    let server_per_round_trip = merged.server.cpu_us_per_round_trip.expect("server CPU per round trip");
    assert!((server_per_round_trip - server_cpu * 1e6 / received as f64).abs() < 1e-6);
}

/// `/proc/PID/stat` field 4, while the process exists.
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 1..].split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn serve_processes_2_listens_once_and_sums_in_the_probe() {
    let mut supervisor = Command::new(wsbench_bin())
        .args(["serve", "--port", "0", "--processes", "2"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let stdout = supervisor.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let line = rx.recv_timeout(Duration::from_secs(20)).expect("a `listening on` line");
    let port: u16 = line.rsplit(':').next().unwrap().parse().unwrap_or_else(|_| panic!("{line}"));
    assert!(line.starts_with("listening on ws://127.0.0.1:"), "{line}");
    assert!(rx.recv_timeout(Duration::from_millis(500)).is_err(), "only one `listening on` line");

    // Exactly the two server processes listen; the supervisor does not.
    let pids = wsbench::probe::pids_listening_on(std::net::SocketAddr::from(([127, 0, 0, 1], port))).unwrap();
    assert_eq!(pids.len(), 2, "{pids:?}");
    assert!(!pids.contains(&supervisor.id()));
    assert!(pids.iter().all(|&pid| parent_of(pid) == Some(supervisor.id())));
    let both = wsbench::probe::sample(&pids, 0).unwrap();
    let each: Vec<_> = pids.iter().map(|&pid| wsbench::probe::sample(&[pid], 0).unwrap()).collect();
    assert_eq!(both.threads, each.iter().map(|s| s.threads).sum::<u64>());

    // A run against it finds both by the port and sums them.
    let dir = temp_dir("serve-processes");
    let json = dir.join("run.json");
    let url = format!("ws://127.0.0.1:{port}/");
    let output =
        wsbench(&["run", &url, "--connections", "200", "--duration", "1s", "--json", json.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    let result = read(&json);
    assert_eq!(result.summary.connections.established, 200);
    assert_eq!(result.server.pids, pids);
    assert!(result.server.threads_peak.unwrap() >= both.threads);

    // SIGTERM: forwarded, every process exits, the supervisor with 0, promptly.
    unsafe {
        libc::kill(supervisor.id() as libc::pid_t, libc::SIGTERM);
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    let status = loop {
        if let Some(status) = supervisor.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the supervisor did not exit within 2 s of SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status}");
    assert!(
        wsbench::probe::pids_listening_on(std::net::SocketAddr::from(([127, 0, 0, 1], port)))
            .unwrap()
            .is_empty()
    );

    // The built-in server of a run, as two processes: the probe sums all three.
    let output = wsbench(&[
        "run",
        "--server-processes",
        "2",
        "--connections",
        "100",
        "--duration",
        "1s",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let result = read(&json);
    assert_eq!(result.server.found_by.as_deref(), Some("spawned"));
    assert_eq!(result.server.pids.len(), 3, "{:?}", result.server.pids);
    // Each server process runs at least its event loop, its signal thread and main; the
    // supervisor at least main.
    let server_threads = 2 * 3 + 1;
    assert!(result.server.threads_peak.unwrap() >= server_threads, "{:?}", result.server.threads_peak);
    assert_eq!(result.summary.connections.established, 100);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The shards of the run `parent`: its children started as `run --settings-from-stdin`, in
/// the order they were started (pids are handed out in increasing order, short of a wrap at
/// pid_max).
fn shards_of(parent: u32) -> Vec<u32> {
    let mut pids: Vec<u32> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
            let shard = args.get(1..3) == Some(&[&b"run"[..], &b"--settings-from-stdin"[..]][..]);
            (shard && parent_of(pid)? == parent).then_some(pid)
        })
        .collect();
    pids.sort_unstable();
    pids
}

#[test]
fn dead_shard_is_reported_by_name_and_others_merged() {
    let dir = temp_dir("dead-shard");
    let json = dir.join("run.json");
    // Runs 2 shards and, once they are sending, signals shard 1 from outside, as a crash or
    // the OOM killer would.
    let run = |signal: libc::c_int| {
        let parent = Command::new(wsbench_bin())
            .args(["run", "--connections", "200", "--duration", "4s", "--processes", "2"])
            .args(["--json", json.to_str().unwrap()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let started = Instant::now();
        let pid = loop {
            if let [_, shard_1] = shards_of(parent.id())[..] {
                break shard_1;
            }
            assert!(started.elapsed() < Duration::from_secs(10), "shard 1 never started");
            std::thread::sleep(Duration::from_millis(20));
        };
        // The shards start together 1.5 s after the parent; signal one second into the load.
        std::thread::sleep(Duration::from_millis(2500).saturating_sub(started.elapsed()));
        // SAFETY: signalling the shard process found above.
        unsafe { libc::kill(pid as libc::pid_t, signal) };
        parent.wait_with_output().unwrap()
    };

    // Shard 1 is told to stop (SIGTERM, not from its parent): it writes its partial result
    // and exits with the interrupted status, which its parent did not ask for.
    let output = run(libc::SIGTERM);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{message}");
    assert!(message.contains("shard 1/2 (pid "), "{message}");
    assert!(message.contains("died: exit status 130; its partial result is merged"), "{message}");
    let merged = read(&json);
    assert!(merged.interrupted);
    assert_eq!(merged.shards.len(), 2);
    assert_eq!(merged.shards[0].died, None);
    assert_eq!(merged.shards[1].died.as_deref(), Some("exit status 130"));
    let shards: Vec<RunResult> =
        (0..2).map(|i| read(&dir.join(format!("run.shards/shard-{i}.json")))).collect();
    assert!(shards[1].interrupted && !shards[0].interrupted);
    assert_eq!(
        merged.summary.connections.attempted,
        shards.iter().map(|s| s.summary.connections.attempted).sum::<u64>()
    );
    assert_eq!(latency_count(&merged), shards.iter().map(latency_count).sum::<u64>());
    assert!(String::from_utf8_lossy(&output.stdout).contains("shard 1/2 died (exit status 130)"));

    // Shard 1 is killed outright: no result; shard 0 alone is the merged result.
    let output = run(libc::SIGKILL);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{message}");
    assert!(message.contains("died: signal 9; it left no result"), "{message}");
    let merged = read(&json);
    assert!(merged.interrupted);
    assert_eq!(merged.shards.len(), 1);
    assert_eq!(merged.shards[0].shard.as_deref(), Some("0/2"));
    assert_eq!(merged.summary.connections.established, 100);
    assert!(!dir.join("run.shards/shard-1.json").exists(), "a stale shard file must not be merged");
    assert_is_a_good_result_file(&json);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ctrl_c_stops_every_shard_and_still_writes_the_merged_result() {
    let dir = temp_dir("ctrl-c");
    let json = dir.join("run.json");
    let parent = Command::new(wsbench_bin())
        .args(["run", "--connections", "100", "--duration", "60s", "--processes", "2"])
        .args(["--json", json.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(4));
    unsafe {
        libc::kill(parent.id() as libc::pid_t, libc::SIGINT);
    }
    let started = Instant::now();
    let output = parent.wait_with_output().unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(output.status.code(), Some(130), "{}", stderr(&output));
    assert!(!stderr(&output).contains("died"), "{}", stderr(&output));
    let merged = read(&json);
    assert!(merged.interrupted);
    assert_eq!(merged.shards.len(), 2);
    assert!(merged.shards.iter().all(|s| s.interrupted && s.died.is_none()));
    assert_eq!(merged.summary.connections.established, 100);
    assert!(merged.summary.measured_exchanges > 0);
    std::fs::remove_dir_all(&dir).unwrap();
}
