//! What a run of hours must not do, checked on runs of seconds with the real binary: grow
//! the client's memory with each second it runs (the slope of its RSS), keep the seconds'
//! histograms instead of writing them as it goes (`--hlog`), or lose track of connections
//! while the client itself is stalled. The hour-long figures are in bench/RESULTS.md
//! (`bench/memory.sh`); these tests measure memory and counts, never speed.

mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

use support::{Server, fresh_dir, spawn_run};

/// The client's resident memory now, KiB.
fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Least-squares slope of `(x, y)`.
fn slope(points: &[(f64, f64)]) -> f64 {
    let n = points.len() as f64;
    let (sx, sy) = points.iter().fold((0.0, 0.0), |(sx, sy), (x, y)| (sx + x, sy + y));
    let (sxx, sxy) = points.iter().fold((0.0, 0.0), |(sxx, sxy), (x, y)| (sxx + x * x, sxy + x * y));
    (n * sxy - sx * sy) / (n * sxx - sx * sx)
}

/// `wsbench run` of an open-loop echo of `connections` at `rate` for `duration` (no
/// warm-up), quiet, its result in `dir/r.json`, with `extra` flags; against `url`, or the
/// built-in server.
fn open_loop(
    url: Option<&str>,
    connections: &str,
    rate: &str,
    duration: &str,
    dir: &Path,
    extra: &[&str],
) -> Child {
    let json = dir.join("r.json");
    let mut args =
        vec!["--connections", connections, "--rate", rate, "--warmup", "0s", "--duration", duration];
    args.extend(["--quiet", "--json", json.to_str().unwrap()]);
    args.extend(url);
    args.extend(extra);
    spawn_run(&args)
}

/// The result file `open_loop` wrote into `dir`.
fn result_in(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("r.json")).unwrap()).unwrap()
}

/// Waits for `child`, draining its output; fails if it is not done by `limit`.
fn finish(mut child: Child, limit: Duration, what: &str) -> (std::process::ExitStatus, String, String) {
    let stderr = child.stderr.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let err = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
    let out = std::thread::spawn(move || std::io::read_to_string(stdout).unwrap_or_default());
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: not done after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    (status, out.join().unwrap(), err.join().unwrap())
}

/// Before it was fixed, the client grew by one full latency histogram per worker and
/// second (185 KiB/s): a week-long run could not fit. Now a second costs a few dozen bytes.
#[test]
fn client_memory_does_not_grow_with_the_seconds_of_a_run() {
    let server = Server::spawn(&[]);
    let url = format!("ws://{}/", server.addr);
    let dir = fresh_dir("memory-slope");
    let child = open_loop(Some(&url), "100", "2000/s", "40s", &dir, &[]);
    let pid = child.id();
    let start = Instant::now();
    let mut samples = Vec::new();
    while let Some(kib) = rss_kib(pid) {
        let t = start.elapsed().as_secs_f64();
        // From 10 s (every connection open, the allocator warm) to 38 s (before the end).
        if (10.0..38.0).contains(&t) {
            samples.push((t, kib as f64));
        }
        if t > 38.0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let (status, _, stderr) = finish(child, Duration::from_secs(120), "the 40 s run");
    assert!(status.success(), "{stderr}");
    assert!(samples.len() >= 20, "{} samples: {samples:?}", samples.len());
    let kib_per_sec = slope(&samples);
    assert!(kib_per_sec <= 20.0, "the client grew {kib_per_sec:.1} KiB/s: {samples:?}");
    let result = result_in(&dir);
    assert!(result["timeline"].as_array().unwrap().len() >= 40);
    assert!(result["histograms"].get("intervals").is_none(), "no histogram per second in the file");
}

/// Data lines of the interval log at `path` (not its headers).
fn hlog_lines(path: &Path) -> Vec<String> {
    let Ok(file) = std::fs::File::open(path) else { return Vec::new() };
    BufReader::new(file)
        .lines()
        .map_while(Result::ok)
        .filter(|line| !line.starts_with('#') && !line.starts_with('"') && line.contains(','))
        .collect()
}

#[test]
fn the_interval_log_is_written_while_the_run_goes_on() {
    let server = Server::spawn(&[]);
    let url = format!("ws://{}/", server.addr);
    let dir = fresh_dir("hlog-as-it-goes");
    let hlog = dir.join("run.hlog");
    let child = open_loop(Some(&url), "10", "200/s", "6s", &dir, &["--hlog", hlog.to_str().unwrap()]);
    let pid = child.id();
    let mut seen_while_running = 0;
    while rss_kib(pid).is_some() && seen_while_running < 2 {
        seen_while_running = hlog_lines(&hlog).len();
        std::thread::sleep(Duration::from_millis(100));
    }
    let (status, _, stderr) = finish(child, Duration::from_secs(60), "the 6 s run");
    assert!(status.success(), "{stderr}");
    assert!(seen_while_running >= 2, "the log had {seen_while_running} seconds before the run ended");
    let result = result_in(&dir);
    let seconds = result["timeline"].as_array().unwrap().len();
    assert_eq!(hlog_lines(&hlog).len(), seconds, "one line per second of the timeline");
}

#[test]
fn the_shards_interval_logs_merge_into_one() {
    let dir = fresh_dir("hlog-shards");
    let hlog = dir.join("run.hlog");
    let child =
        open_loop(None, "20", "200/s", "3s", &dir, &["--processes", "2", "--hlog", hlog.to_str().unwrap()]);
    let (status, _, stderr) = finish(child, Duration::from_secs(90), "the sharded run");
    assert!(status.success(), "{stderr}");
    let result = result_in(&dir);
    let timeline_total: u64 =
        result["timeline"].as_array().unwrap().iter().map(|p| p["echoes"].as_u64().unwrap()).sum();
    // Every echo of every shard is in the merged log: the counts of its histograms add up.
    let mut logged = 0;
    for line in hlog_lines(&hlog) {
        let encoded = line.split(',').nth(3).unwrap();
        logged += wsbench::result::decode_histogram("line", encoded).unwrap().len();
    }
    assert_eq!(logged, timeline_total);
    for shard in 0..2 {
        assert!(dir.join(format!("r.shards/shard-{shard}.hlog")).exists(), "shard {shard}'s own log is kept");
    }
}

/// A client stopped for two seconds (SIGSTOP, or a starved CPU) completes nothing in them,
/// but its connections stay open: the seconds say so, rather than "0 connections up".
#[test]
fn seconds_in_which_the_client_was_stalled_keep_their_connections() {
    let server = Server::spawn(&[]);
    let url = format!("ws://{}/", server.addr);
    let dir = fresh_dir("stalled-client");
    let stream = dir.join("live.jsonl");
    let child = open_loop(Some(&url), "20", "200/s", "8s", &dir, &["--stream", stream.to_str().unwrap()]);
    let pid = child.id() as i32;
    // Once a measured second with every connection open is out, stop the client 2.5 s.
    let measured_open =
        |line: &serde_json::Value| line["phase"] == "measured" && line["connections_open"] == 20;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let text = std::fs::read_to_string(&stream).unwrap_or_default();
        let lines: Vec<serde_json::Value> =
            text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
        if lines.iter().any(measured_open) {
            break;
        }
        assert!(Instant::now() < deadline, "no measured second with 20 connections open: {text}");
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: signals to the child this test started, by its pid.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    std::thread::sleep(Duration::from_millis(2500));
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGCONT) };
    let (status, _, stderr) = finish(child, Duration::from_secs(60), "the stalled run");
    assert!(status.success(), "{stderr}");
    let text = std::fs::read_to_string(&stream).unwrap();
    let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let first = lines.iter().position(measured_open).unwrap();
    let last = lines.iter().rposition(|line| line["phase"] == "measured").unwrap();
    let stalled: Vec<u64> = lines[first..last]
        .iter()
        .filter(|l| l["round_trips"] == 0)
        .map(|l| l["second"].as_u64().unwrap())
        .collect();
    assert!(!stalled.is_empty(), "the stop shows as seconds without round trips:\n{text}");
    for line in &lines[first..last] {
        assert_eq!(line["connections_open"], 20, "second {}:\n{text}", line["second"]);
    }
    let result = result_in(&dir);
    for second in stalled {
        assert_eq!(result["timeline"][second as usize]["connections_open"], 20, "timeline second {second}");
    }
}
