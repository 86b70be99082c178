//! A round trip is the reply to its request, and "sent" is what the socket took: `wsbench
//! run echo` against servers that send what nobody asked for or never read
//! (`support/unsolicited_server.rs`), and against `wsbench serve`, which answers every
//! request once.
//!
//! - A server that floods 64 KiB messages and never reads: every message is `unexpected`
//!   (an error, exit 3), none is a round trip, and the client's memory stays bounded, on
//!   io_uring and on epoll (the peak RSS of the wsbench child, from /proc).
//! - A server that pings without end and never reads: the pongs owed stop the client's
//!   reading once its outbox is full, so its memory stays bounded (io_uring and epoll).
//! - A server that never reads: `messages.sent` and `bytes.sent` are what the kernel took,
//!   far below what was queued; the rest is `messages.unsent`.
//! - A healthy server, with payloads that carry their request's number (8 and 64 bytes), one
//!   too short to (4 bytes), json-ts, and batches of 10 frames: no `unexpected`, no
//!   `payload_mismatch`.
//!
//! Run: `cargo test -p wsbench --test reply_matching`.

mod support;

#[allow(dead_code)]
#[path = "engine/harness.rs"]
mod harness;

use std::path::Path;
use std::thread;
use std::time::Duration;

use harness::{Finished, Wsbench, arg, errors, heavy, read_result, scratch, summary_of, uint};
use serde_json::Value;
use support::Server;
use support::unsolicited_server::{FLOOD_MESSAGE_BYTES, Unsolicited, UnsolicitedServer};

/// Peak resident memory a flooded client may reach (before these fixes one io_uring client
/// of 4 connections grew by hundreds of MiB a second under the flood).
const FLOODED_CLIENT_RSS_KIB: u64 = 192 * 1024;

/// Runs `wsbench ARGS… --json FILE` to its end; also returns the child's peak RSS (KiB),
/// read from /proc while it ran.
fn run_watching_memory(args: &[&str], json: &Path) -> (Finished, Value, u64) {
    let mut args = args.to_vec();
    args.extend_from_slice(&["--json", arg(json)]);
    let run = Wsbench::spawn(&args);
    let status = format!("/proc/{}/status", run.pid());
    let mut peak_kib = 0;
    // Until the child has exited (its status file then says so, or is gone).
    while let Ok(text) = std::fs::read_to_string(&status) {
        if text.lines().any(|line| line.starts_with("State:") && line.contains("zombie")) {
            break;
        }
        if let Some(kib) = text.lines().find_map(|line| line.strip_prefix("VmHWM:")) {
            peak_kib = peak_kib.max(kib.trim().trim_end_matches("kB").trim().parse().unwrap_or(0));
        }
        thread::sleep(Duration::from_millis(50));
    }
    let run = run.finish(Duration::from_secs(60));
    assert!(json.exists(), "no result file\n{}", run.describe());
    let result = read_result(json);
    (run, result, peak_kib)
}

fn flood_is_unexpected_and_bounded(io: &str) {
    let _slot = heavy(1);
    let server = UnsolicitedServer::start(Unsolicited::Flood);
    let json = scratch(&format!("reply-matching-flood-{io}")).join("r.json");
    let url = server.url();
    let args = [
        "run",
        "echo",
        &url,
        "--connections",
        "4",
        "--warmup",
        "0s",
        "--duration",
        "3s",
        "--payload",
        "bytes:20",
        "--io",
        io,
    ];
    let (run, result, peak_kib) = run_watching_memory(&args, &json);
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    run.assert_completed_with_failures();
    let unexpected = errors(&result).get("unexpected").copied().unwrap_or(0);
    assert!(unexpected > 0, "the flood is unexpected\n{context}");
    assert_eq!(uint(&result, "/counters/unexpected_messages"), unexpected, "{context}");
    assert!(unexpected <= server.flooded(), "no more unexpected than were flooded\n{context}");
    assert_eq!(uint(&result, "/summary/measured_echoes"), 0, "no round trip for the flood\n{context}");
    assert_eq!(uint(&result, "/summary/latency_us/count"), 0, "no latency sample for the flood\n{context}");
    assert!(!errors(&result).contains_key("payload_mismatch"), "unexpected, not a mismatch\n{context}");
    let errors_line = run.stdout.lines().find(|l| l.starts_with("errors:")).unwrap_or_default();
    assert!(
        errors_line.contains(&format!("unexpected {}", grouped(unexpected))),
        "{errors_line:?}\n{context}"
    );
    assert!(
        peak_kib > 0 && peak_kib < FLOODED_CLIENT_RSS_KIB,
        "client peak RSS {peak_kib} KiB under a {FLOOD_MESSAGE_BYTES}-byte flood, want < {FLOODED_CLIENT_RSS_KIB} KiB\n{context}"
    );
}

/// `n` as the report prints it: thousands separated by commas.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[test]
fn a_flood_of_unsolicited_messages_is_unexpected_never_a_round_trip_on_io_uring() {
    flood_is_unexpected_and_bounded("uring");
}

#[test]
fn a_flood_of_unsolicited_messages_is_unexpected_never_a_round_trip_on_epoll() {
    flood_is_unexpected_and_bounded("epoll");
}

/// A server that pings without end and never reads: the pongs the client owes stay on its
/// side; past its outbox bound a connection reads no more, so its memory stays bounded.
fn ping_flood_is_bounded(io: &str) {
    let _slot = heavy(1);
    let server = UnsolicitedServer::start(Unsolicited::PingFlood);
    let json = scratch(&format!("reply-matching-ping-flood-{io}")).join("r.json");
    let url = server.url();
    let args = ["run", "echo", &url, "--connections", "4", "--warmup", "0s", "--duration", "3s", "--io", io];
    let (run, result, peak_kib) = run_watching_memory(&args, &json);
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    assert!(matches!(run.code, Some(0 | 3)), "the run completes\n{context}");
    assert!(
        peak_kib > 0 && peak_kib < FLOODED_CLIENT_RSS_KIB,
        "client peak RSS {peak_kib} KiB under a ping flood, want < {FLOODED_CLIENT_RSS_KIB} KiB\n{context}"
    );
}

#[test]
fn a_server_that_pings_and_never_reads_cannot_grow_the_client_on_io_uring() {
    ping_flood_is_bounded("uring");
}

#[test]
fn a_server_that_pings_and_never_reads_cannot_grow_the_client_on_epoll() {
    ping_flood_is_bounded("epoll");
}

#[test]
fn sent_is_what_a_server_that_never_reads_took_and_the_rest_is_unsent() {
    let _slot = heavy(1);
    let server = UnsolicitedServer::start(Unsolicited::NeverRead);
    let json = scratch("reply-matching-never-read").join("r.json");
    let url = server.url();
    // 2 connections × 1,000 messages of 64 KiB queued at once: 125 MiB, far beyond what the
    // socket buffers of both ends hold.
    let args = [
        "run",
        "echo",
        &url,
        "--connections",
        "2",
        "--warmup",
        "0s",
        "--duration",
        "2s",
        "--payload",
        "bytes:65536",
        "--in-flight",
        "1000",
    ];
    let (run, result, _) = run_watching_memory(&args, &json);
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    assert!(matches!(run.code, Some(0 | 3)), "the run completes\n{context}");
    let (sent, unsent) = (uint(&result, "/summary/messages/sent"), uint(&result, "/summary/messages/unsent"));
    assert_eq!(sent + unsent, 2_000, "every message queued is sent or unsent\n{context}");
    assert!(unsent > 1_500, "most never left the client\n{context}");
    let bytes_sent = uint(&result, "/summary/bytes/sent");
    assert!(bytes_sent < 64 << 20, "bytes sent {bytes_sent}: what the kernel took, not 125 MiB\n{context}");
    assert_eq!(bytes_sent, sent * (65_536 + 14), "bytes sent are those of the messages sent\n{context}");
    assert_eq!(uint(&result, "/summary/measured_echoes"), 0, "{context}");
    let line = run.stdout.lines().find(|l| l.starts_with("messages:")).unwrap_or_default();
    assert!(
        line.contains(" unsent (queued, never taken by the socket)"),
        "the report says so: {line:?}\n{context}"
    );
}

#[test]
fn a_healthy_server_answers_every_request_once_whatever_the_payload() {
    let _slot = heavy(1);
    let server = Server::spawn(&[]);
    let cases: [&[&str]; 6] = [
        &["echo", "--payload", "bytes:8"],
        &["echo", "--payload", "bytes:64", "--io", "epoll"],
        &["echo", "--payload", "bytes:4"],
        &["echo", "--payload", "json-ts"],
        &["throughput", "--payload", "bytes:64", "--frames-per-send", "10", "--in-flight", "20"],
        &[
            "throughput",
            "--payload",
            "bytes:64",
            "--frames-per-send",
            "10",
            "--in-flight",
            "20",
            "--io",
            "epoll",
        ],
    ];
    for (index, case) in cases.iter().enumerate() {
        let json = scratch(&format!("reply-matching-healthy-{index}")).join("r.json");
        let mut args = vec!["run", case[0], &server.urls[0]];
        args.extend_from_slice(&case[1..]);
        args.extend_from_slice(&["--connections", "4", "--warmup", "0s", "--duration", "1s"]);
        let (run, result, _) = run_watching_memory(&args, &json);
        let context = format!("{case:?}\n{}\n{}", summary_of(&result), run.describe());
        assert_eq!(run.code, Some(0), "{context}");
        assert!(errors(&result).is_empty(), "{context}");
        assert_eq!(uint(&result, "/counters/unexpected_messages"), 0, "{context}");
        assert_eq!(uint(&result, "/counters/payload_mismatches"), 0, "{context}");
        assert!(uint(&result, "/summary/measured_echoes") > 0, "{context}");
        assert_eq!(
            uint(&result, "/summary/messages/sent"),
            uint(&result, "/summary/messages/received") + uint(&result, "/summary/messages/unanswered"),
            "every message written was answered or is still unanswered\n{context}"
        );
    }
}
