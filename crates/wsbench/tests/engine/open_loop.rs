//! Open loop (c10k, `--rate`): messages go out on schedule whatever the replies, latency
//! counts from the intended send time, and the uncorrected figure is kept beside it, so a
//! server stall shows up honestly (the coordinated-omission effect, as wrk2 describes it).

use std::time::Duration;

use crate::harness::{arg, errors, float, heavy, read_result, scratch, summary_of, uint, wsbench};
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
/// corrected p50 ~700 µs worse than the uncorrected one on an idle loopback. Judged against
/// the same run's round trips, which wake the server and then the client: whatever else loads
/// the machine, one wakeup for a due send is no later than a round trip's two.
#[test]
fn sends_at_50_per_second_go_out_on_time_to_within_a_round_trip() {
    let _slot = heavy(2);
    let json = scratch("open-loop-on-time").join("r.json");
    let args = ["run", "--connections", "5", "--rate", "50/s", "--warmup", "0s", "--duration", "3s"];
    let run = wsbench(&[&args[..], &["--json", arg(&json)]].concat(), Duration::from_secs(30));
    run.assert_success();
    let result = read_result(&json);
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    let lag = uint(&result, "/summary/send_lag_us/p50");
    let round_trip = uint(&result, "/summary/latency_uncorrected_us/p50");
    assert!(uint(&result, "/summary/latency_us/count") >= 100, "{context}");
    assert!(
        lag <= round_trip,
        "sends went out {lag} µs late at the median, later than a round trip takes ({round_trip} µs)\n{context}"
    );
}

/// `--send-window`: the sends due within the window after the first due one go out with it,
/// early, in one batch. They are not credited for it: their latency counts from when they
/// went out, so the corrected median is never below the uncorrected one (crediting them
/// would put it several milliseconds below); and the schedule holds: as many sends as the
/// rate asks, at most one early send per connection past the end.
#[test]
fn sends_within_the_window_go_out_early_and_are_not_credited() {
    let _slot = heavy(1);
    let json = scratch("send-window").join("r.json");
    let args = ["run", "--connections", "4", "--rate", "400/s", "--send-window", "10ms", "--warmup", "0s"];
    let run =
        wsbench(&[&args[..], &["--duration", "3s", "--json", arg(&json)]].concat(), Duration::from_secs(30));
    run.assert_success();
    let result = read_result(&json);
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    let corrected = uint(&result, "/summary/latency_us/p50");
    let uncorrected = uint(&result, "/summary/latency_uncorrected_us/p50");
    assert!(
        corrected >= uncorrected,
        "corrected p50 {corrected} µs below uncorrected {uncorrected} µs\n{context}"
    );
    let sent = uint(&result, "/summary/messages/sent");
    assert!((1080..=1204).contains(&sent), "{sent} sent; the schedule has 1,200\n{context}");
    assert_eq!(float(&result, "/config/send_window"), 0.01, "{context}");
    assert!(errors(&result).is_empty(), "{context}");
}

/// An open loop's reply is timed to when the kernel received it, on either backend. With a
/// 10 ms send window the worker sleeps about 5 ms between its batches and reads the replies
/// that came meanwhile only then; their latency is still the round trip's (timed when read,
/// the median was 7.5 ms here), far below the sleep.
#[test]
fn replies_read_after_the_worker_sleeps_are_timed_to_their_arrival_on_either_backend() {
    let _slot = heavy(1);
    for io in ["uring", "epoll"] {
        let json = scratch(&format!("arrival-{io}")).join("r.json");
        let args = ["run", "--connections", "4", "--rate", "400/s", "--send-window", "10ms", "--io", io];
        let run = wsbench(
            &[&args[..], &["--warmup", "0s", "--duration", "2s", "--json", arg(&json)]].concat(),
            Duration::from_secs(30),
        );
        run.assert_success();
        let result = read_result(&json);
        let context = format!("{io}: {}\n{}", summary_of(&result), run.describe());
        assert_eq!(
            uint(&result, "/summary/messages/received"),
            uint(&result, "/summary/messages/sent"),
            "{context}"
        );
        let p50 = uint(&result, "/summary/latency_uncorrected_us/p50");
        assert!(
            p50 < 2_500,
            "replies timed {p50} µs after their send at the median: when read, not when they arrived\n{context}"
        );
        assert!(errors(&result).is_empty(), "{context}");
    }
}

/// Messages the c10k schedule has until `until` (seconds from the start) when client i is
/// established at `established(i)`: its first send follows by i/N of the interval, then one
/// per interval.
fn scheduled(clients: u64, interval: f64, established: impl Fn(u64) -> f64, until: f64) -> u64 {
    (0..clients)
        .map(|i| {
            let first = established(i) + i as f64 / clients as f64 * interval;
            ((until - first) / interval).max(0.0).ceil() as u64
        })
        .sum()
}

#[test]
fn c10k_messages_follow_the_schedule() {
    let _slot = heavy(1);
    let json = scratch("c10k-schedule").join("r.json");
    let (clients, arrival, seconds) = (400u64, 0.001, 5.0);
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
    // The schedule, bent only by how late this run itself was (its own clock, whatever else
    // loads the machine): client i is established no earlier than it is due (i × arrival)
    // and no later than the end of the connect phase; only sends due before the end (5 s)
    // go out, and the last of those may miss the run's stop by the worker's worst lateness.
    let worst_lag = uint(&result, "/summary/send_lag_us/max") as f64 / 1e6;
    let connected = float(&result, "/summary/connect_phase_s");
    let fewest = scheduled(clients, 1.0, |_| connected, seconds - worst_lag);
    let on_time = scheduled(clients, 1.0, |i| i as f64 * arrival, seconds);
    let sent = uint(&result, "/summary/messages/sent");
    assert!(
        (fewest..=on_time).contains(&sent),
        "{sent} messages sent, the schedule has {fewest}–{on_time}\n{context}"
    );
    let (received, unanswered) =
        (uint(&result, "/summary/messages/received"), uint(&result, "/summary/messages/unanswered"));
    assert_eq!(received + unanswered, sent, "{context}");
    assert_eq!(uint(&result, "/summary/connections/established"), clients, "{context}");
    assert!(errors(&result).is_empty(), "{context}");
    for field in ["arithmetic_mean", "geometric_mean", "harmonic_mean", "skewness", "kurtosis", "variance"] {
        assert!(result["summary"]["latency_distribution"].get(field).is_some(), "{field} missing\n{context}");
    }
    assert!(run.stdout.contains("statistics (µs"), "the seed's statistics block is printed\n{context}");
}

/// The search against a server that serves at most 50 echoes/s per connection: 20 ms of
/// service per echo on an absolute schedule (a sleep that overshoots delays one echo, not
/// the capacity). What no load can change is checked here: the first step, above the
/// capacity, breaks on the objective (the server's queue grows without end, and a stalled
/// client only adds latency), and the search never reports a rate above the capacity. How
/// close below it the search gets depends on the client keeping its schedule, so that ratio
/// is a benchmark (`cargo bench -p wsbench --bench find_rate`). The objective is the median,
/// and a late send can only make a step look worse (latency counts from when it was due),
/// so the send-lag limit is set past any stall.
#[test]
fn find_max_rate_breaks_above_a_known_capacity_and_never_reports_more() {
    search_against_a_known_capacity(1);
}

/// The same search with each step measured by two client processes, one connection each:
/// the steps are judged on the shards' merged result.
#[test]
fn find_max_rate_over_two_processes_judges_their_merged_steps() {
    search_against_a_known_capacity(2);
}

/// `--find-max-rate` over `connections` connections (one process each) against a server of
/// 50 echoes/s per connection, starting at 80/s per connection.
fn search_against_a_known_capacity(connections: u32) {
    let _slot = heavy(2);
    let server = Script::echo().capacity(50).start();
    let json = scratch(&format!("find-max-rate-{connections}")).join("search.json");
    let url = server.url();
    let (count, first_rate) = (connections.to_string(), format!("{}/s", 80 * connections));
    let run = wsbench(
        &[
            "run",
            "echo",
            &url,
            "--connections",
            &count,
            "--processes",
            &count,
            "--find-max-rate",
            "--slo",
            "p50<100ms",
            "--max-send-lag",
            "1s",
            "--rate",
            &first_rate,
            "--warmup",
            "500ms",
            "--duration",
            "3s",
            "--json",
            arg(&json),
        ],
        Duration::from_secs(240),
    );
    run.assert_success();
    let search: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let steps = search["steps"].as_array().expect("the steps");
    assert!(steps.len() >= 4, "each step is reported\n{}", run.describe());
    assert_eq!(steps[0]["offered_per_sec"], f64::from(80 * connections), "{}", run.describe());
    let why = steps[0]["broken_by"].as_str().unwrap_or("held");
    assert!(why.contains("p50"), "80/s a connection against 50/s: {why}\n{}", run.describe());
    let capacity = 52.5 * f64::from(connections);
    for step in steps.iter().filter(|s| s["offered_per_sec"].as_f64().is_some_and(|r| r > capacity)) {
        assert_eq!(step["held"], false, "a step above the capacity held: {step}\n{}", run.describe());
    }
    let found = search["max_rate_per_sec"].as_f64().unwrap_or_default();
    assert!(found <= capacity, "found {found}/s, the server's limit is {capacity}/s\n{}", run.describe());
    assert!(run.stdout.contains("max rate:"), "{}", run.describe());
}
