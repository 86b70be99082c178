//! `wsbench run` against the scripted server (`support/scripted_server.rs`), which delays,
//! closes or corrupts on purpose: the engine must measure and count exactly that.

use std::time::Duration;

use crate::harness::{arg, errors, float, heavy, read_result, scratch, summary_of, uint, wsbench};
use crate::support::scripted_server::Script;

/// Runs `wsbench run echo URL ARGS…` for 3 s; the result and its context for messages.
fn echo_run(test: &str, url: &str, args: &[&str]) -> (serde_json::Value, String) {
    let json = scratch(test).join("r.json");
    let run = wsbench(
        &[&["run", "echo", url, "--duration", "3s", "--json", arg(&json)], args].concat(),
        Duration::from_secs(30),
    );
    run.assert_success();
    let result = read_result(&json);
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    assert!(errors(&result).is_empty(), "{context}");
    (result, context)
}

/// The delay is measured, nothing more and nothing less. The server records how long it
/// actually held each echo (a 20 ms sleep overshoots, the more so on a loaded machine).
/// "Nothing more" is judged against a baseline measured just before on the same machine,
/// whatever else loads it: the same 20 connections at the same 500 messages/s (open loop, one
/// in flight) to an undelayed scripted server, whose actual round trips (uncorrected latency)
/// are what this machine adds to a round trip right now. Paced alike, the delayed run's
/// replies come as the baseline's did, not in the bursts a closed loop makes of them.
#[test]
fn delayed_echo_of_20ms_measures_the_delay_plus_at_most_the_round_trip_overhead() {
    // Latencies are asserted: take the whole machine.
    let _slot = heavy(2);
    let paced = ["--connections", "20", "--rate", "500/s", "--in-flight", "1"];
    let undelayed = Script::echo().start();
    let (baseline, baseline_context) = echo_run("delayed-echo-baseline", &undelayed.url(), &paced);
    let overhead = uint(&baseline, "/summary/latency_uncorrected_us/p99");
    assert!(uint(&baseline, "/summary/latency_uncorrected_us/count") > 1000, "{baseline_context}");

    let server = Script::echo().delay_each_echo(Duration::from_millis(20)).start();
    let (result, context) = echo_run("delayed-echo-paced", &server.url(), &paced);
    let held = server.held_p50_us().expect("the server delayed no echo");
    let context =
        format!("{context}\nround trip overhead (baseline p99): {overhead} µs; server held p50 {held} µs");
    let min = uint(&result, "/summary/latency_uncorrected_us/min");
    assert!(min >= 20_000, "a round trip faster than the server's 20 ms delay: min {min} µs\n{context}");
    let p50 = uint(&result, "/summary/latency_uncorrected_us/p50");
    let most = held + overhead;
    assert!(p50 <= most, "p50 {p50} µs: more than the server's delay plus the overhead\n{context}");

    // Closed loop, one in flight: each connection waits out its round trip, then sends again
    // after a client turn, on average no longer than the worst round-trip overhead of the
    // baseline: 20 ÷ (mean latency + that) round trips/s at the least, and never more than
    // 20 ÷ 20 ms.
    let server = Script::echo().delay_each_echo(Duration::from_millis(20)).start();
    let (result, context) = echo_run("delayed-echo", &server.url(), &["--connections", "20"]);
    let min = uint(&result, "/summary/latency_us/min");
    assert!(min >= 20_000, "a round trip faster than the server's 20 ms delay: min {min} µs\n{context}");
    let rate = result["summary"]["echoes_per_sec"].as_f64().unwrap_or_default();
    let mean = float(&result, "/summary/latency_us/mean");
    let worst_overhead = uint(&baseline, "/summary/latency_uncorrected_us/max");
    let slowest = 20.0 / ((mean + worst_overhead as f64) / 1e6);
    assert!((slowest..=1000.0).contains(&rate), "{rate} round trips/s, want {slowest:.0}–1000\n{context}");
}

#[test]
fn server_closing_every_10th_connection_shows_in_the_counters() {
    let _slot = heavy(1);
    let server = Script::echo().close_every_nth_connection(10, 1001).start();
    let json = scratch("close-every-10th").join("r.json");
    let run = wsbench(
        &["run", "echo", &server.url(), "--connections", "100", "--duration", "2s", "--json", arg(&json)],
        Duration::from_secs(30),
    );
    run.assert_completed_with_failures();
    let result = read_result(&json);
    let context = format!(
        "{}\nserver sent {} close frames\n{}",
        summary_of(&result),
        server.closes_sent(),
        run.describe()
    );
    assert_eq!(server.closes_sent(), 10, "the scripted server closes 10 of 100\n{context}");
    assert_eq!(uint(&result, "/summary/connections/established"), 100, "{context}");
    assert_eq!(errors(&result).get("closed_1001").copied(), Some(10), "{context}");
    assert_eq!(uint(&result, "/summary/disconnections"), 10, "{context}");
    let other: Vec<_> = errors(&result).into_iter().filter(|(kind, _)| kind != "closed_1001").collect();
    assert!(other.is_empty(), "errors besides the 10 closes: {other:?}\n{context}");
    assert!(run.stdout.contains("closed_1001 10"), "the report shows the closes\n{}", run.describe());
}

#[test]
fn json_ts_echoes_with_a_changed_seq_answer_nothing() {
    let _slot = heavy(1);
    let server = Script::echo().corrupt_echo().start();
    let json = scratch("corrupt-echo").join("r.json");
    let run = wsbench(
        &[
            "run",
            "echo",
            &server.url(),
            "--payload",
            "json-ts",
            "--connections",
            "20",
            "--duration",
            "2s",
            "--json",
            arg(&json),
        ],
        Duration::from_secs(30),
    );
    run.assert_completed_with_failures();
    let result = read_result(&json);
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    let received = uint(&result, "/summary/messages/received");
    let unexpected = errors(&result).get("unexpected").copied().unwrap_or(0);
    assert!(received > 0, "{context}");
    // json-ts echoes are all matched by their sequence number, not sampled: a changed one
    // answers no request, and is no round trip.
    assert_eq!(unexpected, received, "every corrupted echo counts\n{context}");
    assert_eq!(uint(&result, "/summary/measured_echoes"), 0, "{context}");
}

#[test]
fn corrupted_binary_echoes_are_caught_by_sampling() {
    let _slot = heavy(1);
    let server = Script::echo().corrupt_echo().start();
    let json = scratch("corrupt-binary").join("r.json");
    let run = wsbench(
        &[
            "run",
            "echo",
            &server.url(),
            "--payload",
            "bytes:64",
            "--connections",
            "10",
            "--duration",
            "2s",
            "--json",
            arg(&json),
        ],
        Duration::from_secs(30),
    );
    run.assert_completed_with_failures();
    let result = read_result(&json);
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    let mismatches = errors(&result).get("payload_mismatch").copied().unwrap_or(0);
    // At least each connection's first echo is checked byte for byte.
    assert!(mismatches >= 10, "{mismatches} mismatches for 10 connections' corrupted echoes\n{context}");
}

/// Large messages (1 MiB: received 64 KiB at a time on the ring, sent from the payload's shared
/// bytes) are echoed whole and checked as small ones are, on both I/O backends: a healthy echo
/// is no mismatch, and a byte changed at the end of each echo is caught at least on each
/// connection's first.
#[test]
fn large_echoes_are_checked_whole_on_io_uring_and_on_epoll() {
    let _slot = heavy(1);
    for io in ["uring", "epoll"] {
        for corrupt in [false, true] {
            let script = if corrupt { Script::echo().corrupt_echo() } else { Script::echo() };
            let server = script.start();
            let json = scratch(&format!("large-echo-{io}-{corrupt}")).join("r.json");
            let args = ["run", "throughput", &server.url(), "--payload-bytes", "1048576", "--binary"];
            let tail = ["--frames-per-send", "1", "--connections", "2", "--duration", "2s", "--io", io];
            let run = wsbench(&[&args[..], &tail, &["--json", arg(&json)]].concat(), Duration::from_secs(60));
            let result = read_result(&json);
            let context = format!("{io}, corrupt: {corrupt}\n{}\n{}", summary_of(&result), run.describe());
            let mismatches = errors(&result).get("payload_mismatch").copied().unwrap_or(0);
            assert!(uint(&result, "/counters/messages_received") >= 2, "{context}");
            match corrupt {
                false => {
                    run.assert_success();
                    assert!(errors(&result).is_empty(), "{context}");
                }
                true => {
                    run.assert_completed_with_failures();
                    assert!(mismatches >= 2, "{mismatches} mismatches for 2 connections\n{context}");
                }
            }
        }
    }
}

#[test]
fn server_stall_shows_in_max_latency_not_as_errors() {
    let _slot = heavy(1);
    // The stall falls inside the measured window (after the default 1 s warm-up).
    let server = Script::echo().stall(Duration::from_millis(1500), Duration::from_millis(500)).start();
    let json = scratch("stall").join("r.json");
    let run = wsbench(
        &["run", "echo", &server.url(), "--connections", "10", "--duration", "2s", "--json", arg(&json)],
        Duration::from_secs(30),
    );
    run.assert_success();
    let result = read_result(&json);
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    let max = uint(&result, "/summary/latency_us/max");
    assert!((400_000..=1_000_000).contains(&max), "max {max} µs, want ≈ the 500 ms stall\n{context}");
    assert!(uint(&result, "/summary/latency_us/p50") < 100_000, "only the stall is slow\n{context}");
    assert!(errors(&result).is_empty(), "a stall is not an error\n{context}");
    assert_eq!(uint(&result, "/summary/messages/unanswered"), 0, "{context}");
}
