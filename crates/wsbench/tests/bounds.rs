//! Every number a run takes has an upper bound, checked before any load: the real binary,
//! pointed at a listener of this test that counts the connections made to it, must end
//! at once with exit code 2 and one line naming the flag and its bound, and the listener
//! must have seen nothing. Regression tests for numbers that once ran away
//! (`--in-flight 99999999999` grew the client until the kernel killed it;
//! `--payload bytes:99999999999` and `--frames-per-send 99999999999` aborted on a failed
//! allocation with a backtrace). So must a source address that no interface of this
//! machine has (it used to send the load and fail every connection).

mod support;

use std::net::TcpListener;
use std::process::Command;
use std::time::{Duration, Instant};

use support::{refused, run_with_timeout, wsbench_bin};

/// A listener that counts the connections made to it.
struct Counting {
    listener: TcpListener,
}

impl Counting {
    fn new() -> Counting {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        Counting { listener }
    }

    fn url(&self) -> String {
        format!("ws://{}/", self.listener.local_addr().unwrap())
    }

    /// Connections made so far (each accepted, so it counts once).
    fn accepted(&self) -> usize {
        std::iter::from_fn(|| self.listener.accept().ok()).count()
    }
}

/// `wsbench run URL ARGS…` against a counting listener: exit 2, one line on stderr that
/// contains `expected`, no connection; returns the line and how long the process took.
fn refused_before_load(args: &[&str], expected: &str) -> (String, Duration) {
    let listener = Counting::new();
    let url = listener.url();
    let start = Instant::now();
    let finished = run_with_timeout(
        Command::new(wsbench_bin()).arg("run").arg(&url).args(args),
        Duration::from_secs(30),
    );
    let took = start.elapsed();
    let what = finished.describe(&format!("wsbench run {url} {}", args.join(" ")));
    assert_eq!(finished.status.and_then(|s| s.code()), Some(2), "{what}");
    assert_eq!(finished.stderr.lines().count(), 1, "{what}");
    assert!(finished.stderr.starts_with("wsbench: ") && finished.stderr.contains(expected), "{what}");
    assert_eq!(listener.accepted(), 0, "a connection was made: {what}");
    (finished.stderr, took)
}

#[test]
fn a_runaway_in_flight_is_refused_at_once_without_load() {
    let (_, took) = refused_before_load(
        &["--in-flight", "99999999999"],
        "--in-flight: 99,999,999,999 messages is too many: at most 65,536",
    );
    assert!(took < Duration::from_secs(1), "took {took:?}");
    // Within the bound, what the messages in flight would hold over the process is bounded too.
    refused_before_load(
        &["--connections", "2000", "--in-flight", "65536"],
        "--in-flight: 2,000 connections × 65,536 in flight × 128 B each would hold 15.6 GiB at once: at most 8 GiB",
    );
}

#[test]
fn a_runaway_payload_or_send_is_refused_at_once_without_load() {
    let (_, took) = refused_before_load(
        &["--payload", "bytes:99999999999"],
        "--payload: a payload of 93.1 GiB is too large: at most 1 GiB per message",
    );
    assert!(took < Duration::from_secs(1), "took {took:?}");
    let (_, took) = refused_before_load(
        &["--scenario", "throughput", "--frames-per-send", "99999999999"],
        "--frames-per-send: 99,999,999,999 frames is too many: at most 65,536",
    );
    assert!(took < Duration::from_secs(1), "took {took:?}");
    refused_before_load(
        &["--scenario", "throughput", "--payload-bytes", "99999999999"],
        "--payload-bytes: a payload of 93.1 GiB is too large",
    );
    refused_before_load(
        &["--scenario", "throughput", "--frames-per-send", "60000", "--payload-bytes", "1MiB"],
        "--frames-per-send: 60,000 frames of 1 MiB make one send of 58.6 GiB: at most 1 GiB per send",
    );
}

#[test]
fn every_other_number_of_a_run_has_its_bound() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["--connections", "10000001"],
            "--connections: 10,000,001 connections is too many: at most 10,000,000",
        ),
        (
            &["--rate", "20000000/s"],
            "--rate: 20,000,000 per second is too fast: at most 10,000,000 per second",
        ),
        (&["--ramp", "20000000/s"], "--ramp: 20,000,000 per second is too fast"),
        (&["--scenario", "c10k", "--arrival", "10ns"], "--arrival: 100,000,000 per second is too fast"),
        (
            &["--connections", "2000", "--processes", "1001"],
            "--processes: 1,001 processes is too many: at most 1,000",
        ),
        (&["--start-at", "99999999999999"], "--start-at: 99999999999999 is more than 24 hours from now"),
        (&["--server-pid", "4194305"], "--server-pid: 4194305: no such process on this machine"),
        (&["--duration", "169h"], "--duration: must be at most 7 days (168h)"),
        (
            &["--scenario", "churn", "--messages-per-connection", "1000001"],
            "--messages-per-connection: 1,000,001 messages is too many",
        ),
        (
            &["--scenario", "churn", "--rate", "100000/s", "--duration", "200s"],
            "--rate: --rate × --duration make 20,000,000 connections: at most 10,000,000",
        ),
        (
            &["--scenario", "pubsub", "--topics", "1000001", "--publishers", "1000001"],
            "--topics: 1,000,001 topics is too many",
        ),
        (
            &["--scenario", "pubsub", "--subscribers", "100000", "--publishers", "1000"],
            "--publishers: each subscriber tracks every publisher of its topic: 100,000 subscribers × 1,000",
        ),
    ];
    for (args, expected) in cases {
        refused_before_load(args, expected);
    }
    // The built-in server's processes: no URL, so nothing to count; refused all the same.
    refused(
        &["run", "--server-processes", "257"],
        2,
        "--server-processes: 257 processes is too many: at most 256",
    );
}

#[test]
fn a_source_address_of_no_interface_is_refused_before_any_load() {
    // 192.0.2.0/24 is for documentation (RFC 5737): no machine has it.
    refused_before_load(
        &["--source-addrs", "192.0.2.1", "--connections", "2"],
        "--source-addrs: 192.0.2.1: no interface of this machine has it; give addresses of this machine",
    );
    refused_before_load(
        &["--source-addrs", "127.0.0.2,192.0.2.7", "--connections", "2"],
        "--source-addrs: 192.0.2.7: no interface",
    );
}

#[test]
fn message_limits_are_bounded_before_any_load() {
    refused_before_load(
        &["--max-message", "2GiB"],
        "--max-message: 2,147,483,648 bytes is too many: at most 1,073,741,824",
    );
    refused_before_load(&["--max-message", "0"], "--max-message: `0`: give a size above zero");
    refused_before_load(
        &["--max-message-memory", "65GiB"],
        "--max-message-memory: 69,793,218,560 bytes is too many",
    );
    refused_before_load(&["--max-message-memory", "lots"], "--max-message-memory");
}

#[test]
fn the_other_commands_numbers_have_bounds_too() {
    for (args, expected) in [
        (
            &["compare", "--repeat", "1001"][..],
            "invalid value '1001' for '--repeat <REPEAT>': give an odd count from 1 to 999",
        ),
        (&["rtt", "--repeats", "10001"][..], "'--repeats <REPEATS>': 10001 is not in 1..=10000"),
        (&["rtt", "--iterations", "100000001"][..], "100000001 is not in 1..=100000000"),
        (&["rtt", "--payload-bytes", "17MiB"][..], "--payload-bytes"),
        (&["serve", "--max-message", "2GiB"][..], "`2GiB`: give a size above zero and at most 1GiB"),
        (
            &["serve", "--max-message-memory", "65GiB"][..],
            "`65GiB`: give a size above zero and at most 64GiB",
        ),
        (&["serve", "--max-connections", "10000001"][..], "10000001 is not in 1..=10000000"),
        (
            &["serve", "--handshake-timeout", "200h"][..],
            "`200h`: give a duration above zero and at most 7 days",
        ),
        (&["serve", "--threads", "1025"][..], "1025 is not in 1..=1024"),
    ] {
        refused(args, 2, expected);
    }
}
