//! `--dashboard` over its event stream, as a page reads it (the page itself in a browser is
//! tested in `browser.rs`): the parent of a `--processes` run sends the seconds it sums over
//! its shards and ends with the merged result's figures; a comparison sends every run, one
//! after another, with its progress lines, and ends with its table; a taken port is a usage
//! error before any load; a page left open holds up no exit; and fifty clients that ask for
//! the events and never read lock no reader out, nor hold up the exit.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{fresh_dir, refused, wsbench_bin};

/// Upper bound for a command to end (it is killed past it).
const TIMEOUT: Duration = Duration::from_secs(120);

/// `wsbench ARGS… --dashboard 127.0.0.1:0`, started, and the address its page announced.
fn start(args: &[&str]) -> (Child, String) {
    let mut child = Command::new(wsbench_bin())
        .args(args)
        .args(["--dashboard", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while stderr.read_line(&mut line).unwrap() > 0 {
        if let Some(url) = line.trim().strip_prefix("wsbench: live page at http://") {
            let addr = url.trim_end_matches('/').to_owned();
            // The rest of stderr is drained so the run never blocks on it.
            std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
            return (child, addr);
        }
        line.clear();
    }
    let _ = child.kill();
    let status = child.wait();
    panic!("no live page announced; stderr ended ({status:?})");
}

/// Reads the page's event stream until its `end` event: every event as (name, data).
fn events(addr: &str) -> Vec<(String, Value)> {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(TIMEOUT)).unwrap();
    stream.write_all(b"GET /events HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut reader = BufReader::new(stream);
    let (mut events, mut name, mut line) = (Vec::new(), String::new(), String::new());
    while reader.read_line(&mut line).unwrap() > 0 {
        if let Some(event) = line.trim_end().strip_prefix("event: ") {
            name = event.to_owned();
        } else if let Some(data) = line.trim_end().strip_prefix("data: ") {
            events.push((name.clone(), serde_json::from_str(data).unwrap()));
            if name == "end" {
                return events;
            }
        }
        line.clear();
    }
    panic!("the stream ended without an end event: {events:?}");
}

/// Waits for `child` to exit (killing it past [`TIMEOUT`]); its exit code and stdout.
fn finish(mut child: Child) -> (Option<i32>, String) {
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > TIMEOUT {
            let _ = child.kill();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut stdout = String::new();
    child.stdout.take().unwrap().read_to_string(&mut stdout).unwrap();
    (child.wait().unwrap().code(), stdout)
}

fn seconds(events: &[(String, Value)]) -> Vec<&Value> {
    events.iter().filter(|(name, _)| name == "second").map(|(_, data)| data).collect()
}

#[test]
fn the_parent_of_many_processes_sends_its_summed_seconds_and_the_merged_results_figures() {
    let dir = fresh_dir("dashboard-processes");
    let json = dir.join("r.json");
    let json_arg = json.to_str().unwrap();
    let args = ["run", "--processes", "2", "--connections", "8", "--duration", "3s", "--json", json_arg];
    let (child, addr) = start(&args);
    let events = events(&addr);
    let (code, stdout) = finish(child);
    assert_eq!(code, Some(0), "{stdout}");
    let seconds = seconds(&events);
    assert!(seconds.len() >= 3, "{events:?}");
    assert!(seconds.iter().all(|s| s["shards"]["running"].as_u64().is_some()), "not summed: {seconds:?}");
    // The parent's own CPU is not the client's.
    assert!(seconds.iter().all(|s| s.get("client").is_none()), "{seconds:?}");
    let result: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let figures = &events.last().unwrap().1["figures"];
    assert_eq!(figures["echoes_per_sec"], result["summary"]["echoes_per_sec"]);
    assert_eq!(figures["latency_us"]["p99"], result["summary"]["latency_us"]["p99"]);
    assert_eq!(
        figures["connections"],
        serde_json::json!({
            "established": result["summary"]["connections"]["established"],
            "failed": result["summary"]["connections"]["failed"],
        })
    );
    assert_eq!(events.last().unwrap().1["report"].as_str(), Some(stdout.as_str()), "the report as printed");
}

#[test]
fn a_comparison_sends_each_run_after_the_other_with_its_progress_and_ends_with_its_table() {
    let args = ["compare", "--servers", "builtin", "--repeat", "3", "--connections", "4", "--duration", "1s"];
    let (child, addr) = start(&args);
    let events = events(&addr);
    let (code, stdout) = finish(child);
    assert_eq!(code, Some(0), "{stdout}");
    let steps: std::collections::BTreeSet<u64> =
        seconds(&events).iter().map(|s| s["step"].as_u64().unwrap()).collect();
    assert!(steps.len() >= 2, "the runs are not told apart: {steps:?}");
    let notes: Vec<&str> = events
        .iter()
        .filter(|(name, _)| name == "note")
        .filter_map(|(_, data)| data["text"].as_str())
        .collect();
    assert!(notes.iter().any(|note| note.contains("builtin")), "{notes:?}");
    let end = &events.last().unwrap().1;
    assert_eq!(end["report"].as_str(), Some(stdout.as_str()), "the table as printed");
    assert!(end.get("figures").is_none(), "a comparison is no one result: {end}");
}

#[test]
fn a_taken_port_is_a_usage_error_before_any_load() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let dir = fresh_dir("dashboard-taken");
    let json = dir.join("r.json");
    let line = refused(
        &["run", "--duration", "1s", "--dashboard", &addr, "--json", json.to_str().unwrap()],
        2,
        &format!("--dashboard {addr}: cannot listen there"),
    );
    assert!(line.contains("give another address"), "{line}");
    assert!(!json.exists(), "a run was made");
    refused(&["run", "--dashboard", "localhost"], 2, "`localhost` is not an address and port");
}

#[test]
fn a_page_left_open_holds_up_no_exit() {
    let (child, addr) = start(&["run", "--connections", "2", "--duration", "1s", "--quiet"]);
    // Two pages open and never read: the run still ends.
    let _pages: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut page = TcpStream::connect(&addr).unwrap();
            page.write_all(b"GET /events HTTP/1.1\r\n\r\n").unwrap();
            page
        })
        .collect();
    let (code, stdout) = finish(child);
    assert_eq!(code, Some(0), "{stdout}");
    assert!(std::net::TcpListener::bind(&addr).is_ok(), "the page's port is still taken after exit");
}

#[test]
fn fifty_pages_that_never_read_lock_no_reader_out_and_hold_up_no_exit() {
    let started = Instant::now();
    let (child, addr) = start(&["run", "--connections", "2", "--duration", "4s", "--quiet"]);
    // More than the pages served at once, each asking for the events and never reading.
    let _hogs = support::pages_that_never_read(&addr, 50);
    // A page that reads gets the stream: its seconds as they come, and the end.
    let events = events(&addr);
    assert!(!seconds(&events).is_empty(), "no second reached the reading page: {events:?}");
    assert_eq!(events.last().map(|(name, _)| name.as_str()), Some("end"), "{events:?}");
    let (code, stdout) = finish(child);
    assert_eq!(code, Some(0), "{stdout}");
    // The run's 4 s and its set-up, with room for a busy machine; never the fifty pages'
    // timeouts one after another, nor a wait for them to read.
    let took = started.elapsed();
    assert!(took < Duration::from_secs(30), "the run took {took:?} with fifty pages that never read");
}
