//! `--io uring` and `--io epoll` against real servers (`wsbench serve` on port 0, and the
//! scripted server for closes): the same scenario gives the same accounting on both, every
//! echo checked, and each worker records the backend it ran on. A wss:// target runs on
//! epoll whatever `--io` says (TLS stays on the epoll path).

use std::time::Duration;

use serde_json::Value;

use crate::harness::{arg, errors, heavy, read_result, scratch, summary_of, uint, wsbench};
use crate::support::Server;
use crate::support::scripted_server::Script;

/// The backend every worker of a result ran on.
fn worker_io(result: &Value) -> Vec<String> {
    let workers = result["client"]["workers"].as_array().cloned().unwrap_or_default();
    workers.iter().map(|w| w["io"].as_str().unwrap_or("").to_owned()).collect()
}

/// Runs `args` (after `run`) on `io`; the result.
fn run_on(io: &str, test: &str, args: &[&str]) -> (Value, String) {
    let json = scratch(&format!("io-{test}-{io}")).join("r.json");
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--io", io, "--json", arg(&json)]);
    let run = wsbench(&all, Duration::from_secs(40));
    let result = read_result(&json);
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    (result, context)
}

/// Every message sent is answered or counted unanswered; nothing went wrong.
fn assert_clean_echo(result: &Value, context: &str) {
    let (sent, received, unanswered) = (
        uint(result, "/summary/messages/sent"),
        uint(result, "/summary/messages/received"),
        uint(result, "/summary/messages/unanswered"),
    );
    assert!(received > 1000, "only {received} echoes\n{context}");
    assert_eq!(sent, received + unanswered, "{context}");
    assert!(errors(result).is_empty(), "{context}");
    assert_eq!(uint(result, "/summary/connections/established"), 100, "{context}");
}

#[test]
fn echo_runs_the_same_on_uring_and_epoll_against_wsbench_serve() {
    let _slot = heavy(1);
    let server = Server::spawn(&[]);
    let url = format!("ws://{}/", server.addr);
    for io in ["uring", "epoll"] {
        // json-ts: every echo's sequence number is checked, so a byte out of order fails.
        let args = [
            "echo",
            url.as_str(),
            "--connections",
            "100",
            "--in-flight",
            "4",
            "--payload",
            "json-ts",
            "--duration",
            "2s",
            "--warmup",
            "500ms",
        ];
        let (result, context) = run_on(io, "echo", &args);
        assert_clean_echo(&result, &context);
        assert_eq!(result["config"]["io"], io, "{context}");
        assert!(worker_io(&result).iter().all(|w| w == io), "{:?}\n{context}", worker_io(&result));
        assert!(result["client"]["cpu_us_per_round_trip"].as_f64().is_some_and(|us| us > 0.0), "{context}");
    }
}

#[test]
fn uring_sends_batches_larger_than_a_receive_buffer_intact() {
    let _slot = heavy(1);
    let server = Server::spawn(&[]);
    let url = format!("ws://{}/", server.addr);
    // 10 frames of 100 kB per send: each send and each echo spans many 16 KiB buffers.
    let args = [
        "throughput",
        url.as_str(),
        "--connections",
        "100",
        "--payload-bytes",
        "100000",
        "--frames-per-send",
        "10",
        "--duration",
        "2s",
    ];
    let (result, context) = run_on("uring", "large", &args);
    let (sent, received, unanswered) = (
        uint(&result, "/summary/messages/sent"),
        uint(&result, "/summary/messages/received"),
        uint(&result, "/summary/messages/unanswered"),
    );
    assert!(received >= 100, "{context}");
    assert_eq!(sent, received + unanswered, "{context}");
    assert!(errors(&result).is_empty(), "a 100 kB echo came back altered or broken\n{context}");
    assert!(worker_io(&result).iter().all(|w| w == "uring"), "{context}");
}

#[test]
fn uring_counts_server_closes_and_reconnects_like_epoll() {
    let _slot = heavy(1);
    let server = Script::echo().close_every_nth_connection(10, 1001).start();
    let url = server.url();
    let args = ["echo", url.as_str(), "--connections", "100", "--duration", "2s"];
    let (result, context) = run_on("uring", "closes", &args);
    assert_eq!(server.closes_sent(), 10, "{context}");
    assert_eq!(errors(&result).get("closed_1001").copied(), Some(10), "{context}");
    assert_eq!(uint(&result, "/summary/disconnections"), 10, "{context}");
    assert!(uint(&result, "/summary/messages/received") > 0, "{context}");
    assert!(worker_io(&result).iter().all(|w| w == "uring"), "{context}");
}

#[test]
fn a_wss_target_runs_on_epoll_whatever_io_says() {
    let _slot = heavy(1);
    let server = Server::spawn(&["--tls"]);
    let url = format!("wss://{}/", server.addr_for("wss"));
    let args = ["echo", url.as_str(), "--insecure", "--connections", "10", "--duration", "1s"];
    let (result, context) = run_on("uring", "wss", &args);
    assert!(uint(&result, "/summary/messages/received") > 0, "{context}");
    assert!(errors(&result).is_empty(), "{context}");
    assert!(worker_io(&result).iter().all(|w| w == "epoll"), "{:?}\n{context}", worker_io(&result));
}
