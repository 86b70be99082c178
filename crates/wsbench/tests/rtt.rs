//! Command-line tests of `wsbench rtt`: the real binary against its own built-in servers
//! and against an explicitly started `wsbench serve`, with few repeats and iterations so the
//! whole file runs in seconds. They check the table's shape, the JSON fields, and that bad
//! flags and unreachable targets end in a one-line error with the right exit code instead
//! of a panic or a hang.

mod support;

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use support::{Server, wsbench_bin};

const SMALL: [&str; 4] = ["--repeats", "3", "--iterations", "200"];

fn rtt(args: &[&str]) -> Output {
    Command::new(wsbench_bin()).arg("rtt").args(args).output().expect("run wsbench rtt")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The table's rows: the lines after the second rule.
fn rows(table: &str) -> Vec<Vec<String>> {
    table
        .lines()
        .skip_while(|l| !l.starts_with("Benchmark"))
        .skip(2)
        .map(|l| l.split_whitespace().map(str::to_owned).collect())
        .collect()
}

fn temp_path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wsbench-rtt-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("rtt.json")
}

#[test]
fn rtt_prints_eight_rows_with_ratios_to_tcp() {
    let output = rtt(&SMALL);
    let table = stdout(&output);
    assert!(output.status.success(), "{table}\n{}", stderr(&output));
    assert!(table.starts_with("Run on ("), "{table}");
    let rows = rows(&table);
    let names: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(names, ["tcp", "http", "https", "ws", "wss", "ws-h2", "wss-h2", "wss-h3"], "{table}");
    assert_eq!(rows[0].last().unwrap(), "1.00x", "{table}");
    for row in &rows {
        let ratio = row.last().unwrap().strip_suffix('x').unwrap_or_else(|| panic!("no ratio in {row:?}"));
        let ratio: f64 = ratio.parse().unwrap();
        assert!(ratio > 0.0, "{table}");
        // name, then 7 times "N us", then the ratio.
        assert_eq!(row.len(), 1 + 7 * 2 + 1, "{row:?}");
    }
}

#[test]
fn rtt_json_has_the_documented_fields() {
    let path = temp_path("json");
    let output = rtt(&[
        "--repeats",
        "2",
        "--iterations",
        "50",
        "--payload-bytes",
        "64",
        "--json",
        path.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = std::fs::read_to_string(&path).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    // Protocols come in table order, the tcp baseline first.
    let at: Vec<usize> = ["tcp", "http", "https", "ws", "wss", "ws-h2", "wss-h2", "wss-h3"]
        .iter()
        .map(|p| text.find(&format!("\"{p}\": {{")).unwrap())
        .collect();
    assert!(at.is_sorted(), "{text}");
    assert_eq!(value["kind"], "wsbench-rtt");
    assert!(value["machine"]["cpu_model"].is_string());
    assert_eq!(value["config"]["repeats"], 2);
    assert_eq!(value["config"]["iterations"], 50);
    assert_eq!(value["config"]["payload_bytes"], 64);
    assert_eq!(value["config"]["builtin_servers"], true);
    let protocols = value["protocols"].as_object().unwrap();
    assert_eq!(protocols.keys().count(), 8);
    for name in ["tcp", "http", "https", "ws", "wss", "ws-h2", "wss-h2", "wss-h3"] {
        let p = &protocols[name];
        for field in
            ["mean_us", "median_us", "stddev_us", "p50_us", "p99_us", "max_us", "cpu_us", "ratio_to_tcp"]
        {
            assert!(p[field].is_number(), "{name}.{field} in {p}");
        }
        assert!(p["mean_us"].as_f64().unwrap() > 0.0, "{name}: {p}");
        assert!(p["p50_us"].as_f64().unwrap() <= p["max_us"].as_f64().unwrap(), "{name}: {p}");
        assert_eq!(p["iterations"], 50, "{name}");
        assert_eq!(p["repeats"], 2, "{name}");
        assert_eq!(p["repeat_wall_us"].as_array().unwrap().len(), 2, "{name}");
    }
    assert_eq!(protocols["tcp"]["ratio_to_tcp"], 1.0);
    // Written atomically: no temporary file is left beside it.
    let leftovers: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().flatten().collect();
    assert_eq!(leftovers.len(), 1, "{leftovers:?}");
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

#[test]
fn rtt_against_explicit_targets() {
    let server = Server::spawn(&["--tcp-port", "0"]);
    let ws = server.addr_for("ws");
    let tcp = server.addr_for("tcp");
    let output = rtt(&[
        "--target",
        &format!("tcp={tcp}"),
        "--target",
        &format!("ws={ws}"),
        "--target",
        &format!("http={ws}"),
        "--repeats",
        "2",
        "--iterations",
        "100",
    ]);
    let table = stdout(&output);
    assert!(output.status.success(), "{table}\n{}", stderr(&output));
    let names: Vec<String> = rows(&table).iter().map(|r| r[0].clone()).collect();
    assert_eq!(names, ["tcp", "http", "ws"], "{table}");
    assert!(table.contains(&format!("tcp={tcp}")), "the targets are named: {table}");
}

#[test]
fn rtt_against_an_explicit_http3_target() {
    let server = Server::spawn(&["--h3"]);
    let h3 = server.addr_for("h3");
    let output =
        rtt(&["--target", &format!("wss-h3={h3}"), "--insecure", "--repeats", "2", "--iterations", "100"]);
    let table = stdout(&output);
    assert!(output.status.success(), "{table}\n{}", stderr(&output));
    let names: Vec<String> = rows(&table).iter().map(|r| r[0].clone()).collect();
    assert_eq!(names, ["wss-h3"], "{table}");
    assert!(table.contains(&format!("wss-h3={h3}")), "the target is named: {table}");
}

#[test]
fn an_http3_target_without_extended_connect_fails_at_once_with_its_cause() {
    let server = Server::spawn(&["--h3", "--h3-refuse-websockets"]);
    let h3 = server.addr_for("h3");
    let output = rtt(&["--target", &format!("wss-h3={h3}"), "--insecure"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let message = stderr(&output);
    assert_eq!(message.lines().count(), 1, "{message}");
    assert!(message.contains(&format!("wss-h3 target {h3}: the WebSocket upgrade failed")), "{message}");
    assert!(message.contains("no SETTINGS_ENABLE_CONNECT_PROTOCOL"), "{message}");
}

#[test]
fn unknown_protocol_is_a_usage_error() {
    let output = rtt(&["--protocols", "tcp,quic"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    assert_eq!(message.lines().count(), 1, "{message}");
    assert!(
        message.contains("unknown protocol `quic`: use tcp, http, https, ws, wss, ws-h2, wss-h2 or wss-h3"),
        "{message}"
    );
    assert!(output.stdout.is_empty());
}

#[test]
fn a_protocol_without_a_target_is_a_usage_error() {
    let output = rtt(&["--target", "tcp=127.0.0.1:9", "--protocols", "tcp,wss"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("wss has no target: add --target wss=HOST:PORT"), "{}", stderr(&output));
}

#[test]
fn a_refusing_target_fails_at_once_with_exit_1() {
    // A port that was just free: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let started = Instant::now();
    let output = rtt(&["--target", &format!("ws=127.0.0.1:{port}")]);
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let message = stderr(&output);
    assert_eq!(message.lines().count(), 1, "{message}");
    assert!(message.contains(&format!("ws target 127.0.0.1:{port}: connecting failed")), "{message}");
    assert!(message.contains("is a server listening there?"), "{message}");
}
