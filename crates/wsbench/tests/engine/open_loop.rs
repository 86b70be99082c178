//! Open loop (c10k, `--rate`): messages go out on schedule whatever the replies, latency
//! counts from the intended send time, and the uncorrected figure is kept beside it, so a
//! server stall shows up honestly (the coordinated-omission effect, as wrk2 describes it).

use std::time::Duration;

use crate::harness::{arg, errors, heavy, read_result, scratch, summary_of, uint, wsbench};
use crate::support::scripted_server::Script;

/// A server that stops answering for 1 s in the middle of a 1000 messages/s run.
fn stalled_run(test: &str, cap: Option<&str>) -> (serde_json::Value, String) {
    let server = Script::echo().stall(Duration::from_millis(1500), Duration::from_secs(1)).start();
    let json = scratch(test).join("r.json");
    let mut args =
        vec!["run", "echo", "--connections", "10", "--rate", "1000/s", "--warmup", "0s", "--duration", "4s"];
    if let Some(cap) = cap {
        args.extend(["--in-flight", cap]);
    }
    let url = server.url();
    args.push(&url);
    args.extend(["--json", arg(&json)]);
    let run = wsbench(&args, Duration::from_secs(30));
    run.assert_success();
    let result = read_result(&json);
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    assert!(run.stdout.contains("uncorrected"), "the report shows both figures\n{context}");
    (result, context)
}

#[test]
fn server_stall_with_in_flight_1_shows_only_in_corrected_latency() {
    let _slot = heavy(2);
    let (result, context) = stalled_run("stall-capped", Some("1"));
    let corrected = uint(&result, "/summary/latency_us/p99");
    let uncorrected = uint(&result, "/summary/latency_uncorrected_us/p99");
    assert!(corrected >= 500_000, "corrected p99 {corrected} µs must show the 1 s stall\n{context}");
    assert!(
        uncorrected * 5 < corrected,
        "uncorrected p99 {uncorrected} µs should hide the stall (coordinated omission)\n{context}"
    );
    assert!(errors(&result).is_empty(), "{context}");
}

#[test]
fn server_stall_without_a_cap_shows_in_both_figures() {
    let _slot = heavy(2);
    let (result, context) = stalled_run("stall-uncapped", None);
    let corrected = uint(&result, "/summary/latency_us/p99");
    let uncorrected = uint(&result, "/summary/latency_uncorrected_us/p99");
    assert!(corrected >= 500_000, "corrected p99 {corrected} µs\n{context}");
    assert!(
        uncorrected >= 500_000,
        "messages sent on schedule wait through the stall: {uncorrected} µs\n{context}"
    );
}

/// At a low rate the worker sleeps between sends and must wake when each is due: waking up
/// to a millisecond late (`epoll_wait` counts milliseconds) showed as send lag and made the
/// corrected p50 ~700 µs worse than the uncorrected one on an idle loopback.
#[test]
fn sends_at_50_per_second_go_out_on_time_to_well_under_a_millisecond() {
    let _slot = heavy(2);
    let json = scratch("open-loop-on-time").join("r.json");
    let args = ["run", "--connections", "5", "--rate", "50/s", "--warmup", "0s", "--duration", "3s"];
    let run = wsbench(&[&args[..], &["--json", arg(&json)]].concat(), Duration::from_secs(30));
    run.assert_success();
    let result = read_result(&json);
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    let corrected = uint(&result, "/summary/latency_us/p50");
    let uncorrected = uint(&result, "/summary/latency_uncorrected_us/p50");
    assert!(uint(&result, "/summary/latency_us/count") >= 100, "{context}");
    assert!(
        corrected <= uncorrected + 100,
        "corrected p50 {corrected} µs vs uncorrected {uncorrected} µs: sends went out late \
         (send lag p50 {} µs)\n{context}",
        uint(&result, "/summary/send_lag_us/p50")
    );
}

#[test]
fn c10k_messages_follow_the_schedule() {
    let _slot = heavy(1);
    let json = scratch("c10k-schedule").join("r.json");
    let (clients, arrival_ms, seconds) = (400u64, 1u64, 5u64);
    let run = wsbench(
        &[
            "run",
            "c10k",
            "--clients",
            "400",
            "--arrival",
            "1ms",
            "--interval",
            "1s",
            "--duration",
            "5s",
            "--json",
            arg(&json),
        ],
        Duration::from_secs(30),
    );
    run.assert_success();
    let result = read_result(&json);
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    // Client i connects at i × arrival and first sends after a phase of i/N of the interval,
    // then once a second until the end.
    let expected: u64 = (0..clients)
        .map(|i| {
            let first = i as f64 * arrival_ms as f64 / 1e3 + i as f64 / clients as f64;
            ((seconds as f64 - first).max(0.0)).ceil() as u64
        })
        .sum();
    let received = uint(&result, "/summary/messages/received");
    let off = (received as f64 - expected as f64).abs() / expected as f64;
    assert!(off <= 0.02, "{received} messages, the schedule has {expected}\n{context}");
    assert_eq!(uint(&result, "/summary/connections/established"), clients, "{context}");
    assert!(errors(&result).is_empty(), "{context}");
    for field in ["arithmetic_mean", "geometric_mean", "harmonic_mean", "skewness", "kurtosis", "variance"] {
        assert!(result["summary"]["latency_distribution"].get(field).is_some(), "{field} missing\n{context}");
    }
    assert!(run.stdout.contains("statistics (µs"), "the seed's statistics block is printed\n{context}");
}

#[test]
fn find_max_rate_finds_a_known_capacity_within_10_percent() {
    let _slot = heavy(2);
    // One connection to a server that serves at most 500 echoes/s (2 ms of service per echo
    // on an absolute schedule: a sleep that overshoots delays one echo, not the capacity).
    let server = Script::echo().capacity(500).start();
    let json = scratch("find-max-rate").join("search.json");
    let url = server.url();
    let run = wsbench(
        &[
            "run",
            "echo",
            &url,
            "--connections",
            "1",
            "--find-max-rate",
            "--slo",
            "p99<20ms",
            // Send lag below the objective does not make a step dishonest.
            "--max-send-lag",
            "20ms",
            "--rate",
            "100/s",
            "--warmup",
            "500ms",
            "--duration",
            "2s",
            "--json",
            arg(&json),
        ],
        Duration::from_secs(120),
    );
    run.assert_success();
    let search: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let found = search["max_rate_per_sec"].as_f64().unwrap_or_default();
    assert!(
        (450.0..=525.0).contains(&found),
        "found {found}/s, the server's limit is 500/s\n{}",
        run.describe()
    );
    assert!(
        search["steps"].as_array().is_some_and(|s| s.len() >= 4),
        "each step is reported\n{}",
        run.describe()
    );
    assert!(run.stdout.contains("max rate:"), "{}", run.describe());
}
