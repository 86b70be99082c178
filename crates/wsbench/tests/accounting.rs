//! Every due send and every second of a run accounted for, against real servers on port 0:
//! a server that answers and then hangs (without closing) shows its stall in the report, the
//! result and the live stream, and what the drain left awaited is the error
//! `unanswered_at_end`, so `errors==0` fails; an open loop against a server that stops
//! reading puts each of its due sends in exactly one counter whatever the reply timeout, and
//! says how much of the load asked for was served (achieved ÷ asked); a healthy open loop
//! answers every send due; and a burst that overflows a listen queue is reported with the
//! kernel's drops and the retransmission timeouts they cost.
//!
//! The results are read as JSON, field by field, as a script reading the file would.

mod support;

use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::Value;
use support::scripted_server::Script;
use support::silent_server::{Silence, SilentServer};
use support::{describe, fresh_dir, result_schema_errors, shared_server, text, wsbench_bin};

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

#[test]
fn a_server_that_hangs_mid_run_shows_its_stall_and_fails_errors_with_what_the_drain_left_unanswered() {
    // It echoes for 2 s, then reads nothing and answers nothing, and keeps every connection.
    let server = Script::echo().stall(Duration::from_secs(2), Duration::from_secs(3600)).start();
    let dir = fresh_dir("accounting-hang");
    let url = server.url();
    let stream = dir.join("live.jsonl");
    let args = [
        url.as_str(),
        "--connections",
        "20",
        "--warmup",
        "0s",
        "--duration",
        "3s",
        "--threshold",
        "errors==0",
        "--threshold",
        "stalls==0",
        "--stream",
        stream.to_str().unwrap(),
    ];
    let (output, result) = run(&dir, &args);
    assert_eq!(output.status.code(), Some(99), "{}", describe(&output));
    // Each connection's one request in flight when the server hung was still awaited when
    // the drain (the reply timeout, 10 s, capped at 5 s) ran out.
    assert_eq!(count(&result["summary"]["errors"]["unanswered_at_end"]), 20, "{}", result["summary"]);
    assert_eq!(count(&result["counters"]["unanswered_at_end"]), 20);
    let drain = result["drain_s"].as_f64().unwrap();
    assert!((4.9..10.0).contains(&drain), "the drain waited its whole 5 s: {drain}");
    let stalls = &result["summary"]["stalls"];
    assert!(count(&stalls["count"]) >= 1, "{stalls}");
    assert!(count(&stalls["longest"]["seconds"]) >= 2, "the window's last second and the drain: {stalls}");
    let stalled: Vec<&Value> = result["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|second| second["awaiting"] == true && second["echoes"] == 0)
        .collect();
    assert_eq!(stalled.len() as u64, count(&stalls["seconds"]), "{}", result["timeline"]);
    let thresholds = result["summary"]["thresholds"].as_array().unwrap();
    assert!(thresholds.iter().all(|t| t["passed"] == false), "{thresholds:?}");
    let stdout = text(&output.stdout);
    assert!(stdout.contains("\nstalls:       "), "{stdout}");
    assert!(stdout.contains("unanswered_at_end 20"), "{stdout}");
    assert!(stdout.contains("(20 were still awaited when the "), "{stdout}");
    // The live stream said so second by second.
    let lines = std::fs::read_to_string(&stream).unwrap();
    let longest_live = lines
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap()["stall_s"].as_u64().unwrap())
        .max()
        .unwrap();
    assert!(longest_live >= 2, "{lines}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An open loop of 2 connections at 20,000 messages/s of 512 bytes (more in 4 s than the
/// sockets' buffers hold) against a server that never reads after the upgrade, with
/// `--reply-timeout` `timeout`.
fn open_loop_against_a_server_that_never_reads(timeout: &str) -> (Output, Value) {
    let server = SilentServer::start(Silence::StopsReading);
    let dir = fresh_dir(&format!("accounting-never-reads-{timeout}"));
    let url = server.url();
    let args = [
        url.as_str(),
        "--connections",
        "2",
        "--rate",
        "20000/s",
        "--warmup",
        "0s",
        "--duration",
        "4s",
        "--reply-timeout",
        timeout,
        "--payload",
        "bytes:512",
    ];
    let out = run(&dir, &args);
    std::fs::remove_dir_all(&dir).unwrap();
    out
}

#[test]
fn every_send_an_open_loop_made_due_ends_in_exactly_one_counter_whatever_the_reply_timeout() {
    for timeout in ["1s", "60s"] {
        let (output, result) = open_loop_against_a_server_that_never_reads(timeout);
        assert_eq!(output.status.code(), Some(3), "{}", describe(&output));
        let sends = &result["summary"]["sends"];
        let due = count(&sends["due"]);
        // 20,000/s for the 4 s window, less the schedule's start and end.
        assert!(due > 40_000, "{sends}");
        let parts = [
            "answered",
            "refused",
            "timed_out",
            "given_up_unsent",
            "lost_with_connection",
            "unanswered_at_end",
            "unsent",
        ];
        let accounted: u64 = parts.iter().map(|part| count(&sends[part])).sum();
        assert_eq!(accounted, due, "--reply-timeout {timeout}: {sends}");
        assert_eq!(count(&sends["answered"]), 0);
        assert_eq!(sends["achieved"], 0.0);
        // The socket's side: what it took is sent; the rest it never took, or was never
        // queued for it.
        let messages = &result["summary"]["messages"];
        let (sent, unsent) = (count(&messages["sent"]), count(&messages["unsent"]));
        assert_eq!(sent + unsent + count(&sends["given_up_unsent"]), due, "{messages} {sends}");
        assert!(sent < due / 2, "the buffers held a fraction of it: {messages}");
        match timeout {
            // Given up a second after they were due: held back or in flight.
            "1s" => {
                assert!(count(&sends["given_up_unsent"]) > 0 && count(&sends["timed_out"]) > 0, "{sends}")
            }
            // Nothing was due long enough to be given up: all of it awaited at the end.
            _ => {
                assert_eq!(count(&sends["timed_out"]) + count(&sends["given_up_unsent"]), 0, "{sends}");
                assert_eq!(count(&sends["unanswered_at_end"]), sent, "{sends}");
            }
        }
        let stdout = text(&output.stdout);
        assert!(stdout.contains("\nsends:        "), "{stdout}");
        assert!(
            stdout.contains("WARNING: achieved ÷ asked is 0.00: the server answered 0 of the "),
            "{stdout}"
        );
    }
}

#[test]
fn a_healthy_open_loop_answers_every_send_it_made_due() {
    let addr = shared_server(&[]);
    let dir = fresh_dir("accounting-healthy");
    let url = format!("ws://{addr}");
    let args =
        [url.as_str(), "--connections", "10", "--rate", "2000/s", "--warmup", "1s", "--duration", "2s"];
    let (output, result) = run(&dir, &args);
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let sends = &result["summary"]["sends"];
    assert!(count(&sends["due"]) > 3_000, "{sends}");
    assert_eq!(count(&sends["answered"]), count(&sends["due"]), "{sends}");
    assert_eq!(sends["achieved"], 1.0);
    assert_eq!(count(&result["summary"]["stalls"]["count"]), 0);
    assert!(!text(&output.stdout).contains("achieved ÷ asked is"), "{}", describe(&output));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_closed_loop_has_no_ledger_of_sends_due() {
    let addr = shared_server(&[]);
    let dir = fresh_dir("accounting-closed");
    let url = format!("ws://{addr}");
    let (output, result) =
        run(&dir, &[url.as_str(), "--connections", "4", "--warmup", "0s", "--duration", "1s"]);
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert_eq!(result["summary"].get("sends"), None);
    assert_eq!(count(&result["counters"]["unanswered_at_end"]), 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_burst_that_overflows_a_listen_queue_is_reported_with_the_drops_and_the_timeouts_they_cost() {
    // A listener whose accept queue holds one connection and which never accepts: the rest
    // of a burst of connections has its SYNs dropped, and each connect waits out a SYN
    // retransmission timeout (1 s) before its 2 s connect timeout.
    let listener = listener_with_backlog(1);
    let dir = fresh_dir("accounting-listen-overflow");
    let url = format!("ws://{}", listener.local_addr().unwrap());
    let args = [
        url.as_str(),
        "--connections",
        "100",
        "--warmup",
        "0s",
        "--duration",
        "1s",
        "--connect-timeout",
        "2s",
    ];
    let (output, result) = run(&dir, &args);
    assert_eq!(output.status.code(), Some(3), "{}", describe(&output));
    let network = &result["client"]["machine_network"];
    assert!(count(&network["listen_overflows"]) > 0, "{network}");
    assert!(count(&network["syn_retransmits"]) > 0, "{network}");
    assert!(count(&network["rto_timeouts"]) > 0, "{network}");
    let warning = network["warning"].as_str().unwrap_or_default();
    assert!(warning.contains(" connections at a full listen queue and TCP waited out "), "{warning}");
    let stdout = text(&output.stdout);
    assert!(stdout.contains("WARNING: on this machine during the run the kernel dropped "), "{stdout}");
    drop(listener);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A TCP listener on 127.0.0.1:0 whose accept queue holds `backlog` connections.
fn listener_with_backlog(backlog: i32) -> TcpListener {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None).expect("socket");
    socket.bind(&"127.0.0.1:0".parse::<std::net::SocketAddr>().unwrap().into()).expect("bind");
    socket.listen(backlog).expect("listen");
    socket.into()
}
