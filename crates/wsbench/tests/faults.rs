//! Fault handling: `wsbench run` against servers and networks that fail on purpose. Each test
//! drives a real fault and checks what a user relies on when things go wrong: the run ends on
//! time, every failure is counted by kind (in the text report, in `summary.errors` and in
//! `counters` of the JSON), the result file is written, and the exit status is 3 when
//! failures were counted, 0 when the run was clean (docs/exit-codes.md,
//! docs/failure-counters.md).
//!
//! The faults:
//! - a `wsbench serve` frozen with SIGSTOP for 2 s (frozen is not failed: latency shows it);
//! - tiny std servers in this file that answer the upgrade with 403 or 200 (and a body), with
//!   a wrong `Sec-WebSocket-Accept`, or never at all, that answer a TLS client hello with
//!   plain HTTP, or send garbage, a masked frame or an impossible 64-bit length after the
//!   upgrade;
//! - Toxiproxy (`scripts/install-toxiproxy.sh`) between wsbench and `wsbench serve`, resetting
//!   connections, adding latency, and cutting them after N bytes (mid-frame). Without
//!   toxiproxy those tests are skipped with a message, unless `WSBENCH_REQUIRE_PEERS=1`.
//!
//! Every run is ≤ 5 s and takes a load slot (`harness::heavy`).
//!
//! Run: `cargo test -p wsbench --test faults`.

mod support;

// Shared with the engine tests; not every helper is used here.
#[allow(dead_code)]
#[path = "engine/harness.rs"]
mod harness;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wsbench_proto::handshake::{DEFAULT_MAX_HEADER_BYTES, Request, parse_request, server_response};
use wsbench_proto::{OpCode, write_frame};

use harness::{Finished, Wsbench, arg, errors, float, heavy, read_result, scratch, summary_of, uint};
use support::Server;

/// Connections of every fault run: enough to count, few enough to count exactly.
const CONNECTIONS: u64 = 10;

// ---------------------------------------------------------------------------------------
// Checks shared by every test.

/// The run ended within `limit` and wrote its result file; returns the result.
fn finished_on_time(run: &Finished, json: &Path, limit: Duration) -> Value {
    assert!(run.elapsed < limit, "the run took {:.2?}, want < {limit:?}\n{}", run.elapsed, run.describe());
    assert!(json.exists(), "no result file\n{}", run.describe());
    let result = read_result(json);
    assert_eq!(result["interrupted"], Value::Bool(false), "{}\n{}", summary_of(&result), run.describe());
    result
}

/// `kind` was counted `count` times: in the report line, in `summary.errors`, and in the raw
/// counter `counter` of the JSON; and the run exited 3.
fn assert_counted(run: &Finished, result: &Value, kind: &str, counter: &str, count: u64) {
    let context = format!("{}\n{}", summary_of(result), run.describe());
    run.assert_completed_with_failures();
    assert_eq!(errors(result).get(kind).copied(), Some(count), "summary.errors.{kind}\n{context}");
    assert_eq!(uint(result, &format!("/counters/{counter}")), count, "counters.{counter}\n{context}");
    let line = run.stdout.lines().find(|l| l.starts_with("errors:")).unwrap_or_default();
    assert!(line.contains(&format!("{kind} {count}")), "the report's errors line: {line:?}\n{context}");
}

/// A clean run: exit 0, no error of any kind, and the report says so.
fn assert_clean(run: &Finished, result: &Value) {
    let context = format!("{}\n{}", summary_of(result), run.describe());
    run.assert_success();
    assert!(errors(result).is_empty(), "{context}");
    let line = run.stdout.lines().find(|l| l.starts_with("errors:")).unwrap_or_default();
    assert!(line.ends_with("none"), "the report's errors line: {line:?}\n{context}");
}

/// `wsbench run echo URL --connections 10 --warmup 0s ARGS… --json FILE`, not yet waited for.
fn spawn_run(url: &str, json: &Path, extra: &[&str]) -> Wsbench {
    let connections = CONNECTIONS.to_string();
    let mut args = vec!["run", "echo", url, "--connections", &connections, "--warmup", "0s"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--json", arg(json)]);
    Wsbench::spawn(&args)
}

// ---------------------------------------------------------------------------------------
// A frozen server.

fn signal(pid: u32, signal: libc::c_int) {
    // SAFETY: signalling a child process this test started.
    let rc = unsafe { libc::kill(pid as libc::pid_t, signal) };
    assert_eq!(rc, 0, "kill({pid}, {signal}) failed: {}", std::io::Error::last_os_error());
}

#[test]
fn server_frozen_for_2s_shows_in_max_latency_not_as_errors() {
    let _slot = heavy(1);
    let server = Server::spawn(&[]);
    let json = scratch("faults-frozen").join("r.json");
    let run = spawn_run(&server.urls[0], &json, &["--duration", "4s"]);
    thread::sleep(Duration::from_millis(1000));
    signal(server.pid(), libc::SIGSTOP);
    thread::sleep(Duration::from_secs(2));
    signal(server.pid(), libc::SIGCONT);
    let run = run.finish(Duration::from_secs(20));
    let result = finished_on_time(&run, &json, Duration::from_secs(9));
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    assert_clean(&run, &result);
    assert_eq!(uint(&result, "/summary/connections/established"), CONNECTIONS, "{context}");
    let max = uint(&result, "/summary/latency_us/max");
    assert!(max >= 1_500_000, "max latency {max} µs, want ≥ 1.5 s (the 2 s freeze)\n{context}");
    assert!(uint(&result, "/summary/latency_us/p50") < 100_000, "only the freeze is slow\n{context}");
}

// ---------------------------------------------------------------------------------------
// Misbehaving servers: a std listener, one thread per connection.

/// What a [`BadServer`] does with each connection.
#[derive(Debug, Clone)]
enum Misbehaviour {
    /// Answers the upgrade request with this HTTP response instead of 101.
    Refuse(&'static [u8]),
    /// Completes the upgrade, then sends these bytes at once (in the same write).
    AfterUpgrade(Vec<u8>),
    /// Completes the upgrade, then sends the connection's turn of these: the first
    /// connection accepted the first bytes, the next the second, and round again.
    AfterUpgradeByTurns(Vec<Vec<u8>>),
    /// Accepts, reads the request, and never says anything.
    Silent,
    /// Answers whatever the client sends first (even a TLS client hello) with these bytes,
    /// then closes.
    AnswerAnything(&'static [u8]),
}

impl Misbehaviour {
    /// What the `n`th connection accepted gets.
    fn for_connection(&self, n: usize) -> Misbehaviour {
        match self {
            Misbehaviour::AfterUpgradeByTurns(turns) => {
                Misbehaviour::AfterUpgrade(turns[n % turns.len()].clone())
            }
            other => other.clone(),
        }
    }
}

/// A server that fails on purpose; stopped (every connection shut down) on drop.
struct BadServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    streams: Arc<Mutex<Vec<TcpStream>>>,
    acceptor: Option<JoinHandle<()>>,
}

impl BadServer {
    fn start(misbehaviour: Misbehaviour) -> BadServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the bad server");
        let addr = listener.local_addr().expect("bad server address");
        let stop = Arc::new(AtomicBool::new(false));
        let streams = Arc::new(Mutex::new(Vec::new()));
        let (accept_stop, accept_streams) = (stop.clone(), streams.clone());
        let acceptor = thread::spawn(move || {
            let mut accepted = 0;
            for stream in listener.incoming() {
                if accept_stop.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(stream) = stream else { continue };
                if let Ok(clone) = stream.try_clone() {
                    accept_streams.lock().unwrap_or_else(|e| e.into_inner()).push(clone);
                }
                let misbehaviour = misbehaviour.for_connection(accepted);
                accepted += 1;
                thread::spawn(move || {
                    let _ = misbehave(stream, &misbehaviour);
                });
            }
        });
        BadServer { addr, stop, streams, acceptor: Some(acceptor) }
    }

    fn url(&self) -> String {
        format!("ws://{}", self.addr)
    }
}

impl Drop for BadServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the blocking accept() with a connection of our own.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
        for stream in std::mem::take(&mut *self.streams.lock().unwrap_or_else(|e| e.into_inner())) {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }
}

fn misbehave(mut stream: TcpStream, misbehaviour: &Misbehaviour) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(15)))?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    if let Misbehaviour::AnswerAnything(answer) = misbehaviour {
        if stream.read(&mut chunk)? == 0 {
            return Ok(());
        }
        stream.write_all(answer)?;
        return stream.shutdown(Shutdown::Write);
    }
    let upgrade = loop {
        if let Some((request, _)) =
            parse_request(&buf, DEFAULT_MAX_HEADER_BYTES).map_err(std::io::Error::other)?
        {
            break request;
        }
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    match (misbehaviour, upgrade) {
        (Misbehaviour::Refuse(response), _) => {
            stream.write_all(response)?;
            return stream.shutdown(Shutdown::Write);
        }
        (Misbehaviour::AfterUpgrade(bytes), Request::Upgrade(upgrade)) => {
            // The client's first subprotocol, when it offers one (the message protocol's).
            let mut out = server_response(&upgrade, upgrade.protocols.first().map(String::as_str));
            out.extend_from_slice(bytes);
            stream.write_all(&out)?;
        }
        (Misbehaviour::AfterUpgrade(_), Request::Http { .. }) => return Ok(()),
        (
            Misbehaviour::Silent | Misbehaviour::AnswerAnything(_) | Misbehaviour::AfterUpgradeByTurns(_),
            _,
        ) => {}
    }
    // Keep the connection open (and read what comes) until the client ends it: the fault
    // must be the only thing the client sees.
    while stream.read(&mut chunk)? > 0 {}
    Ok(())
}

/// Runs 10 connections for (at most) 3 s against `misbehaviour`; the run must end early,
/// since no connection survives.
fn run_against(name: &str, misbehaviour: Misbehaviour, extra: &[&str]) -> (Finished, Value) {
    let _slot = heavy(1);
    let server = BadServer::start(misbehaviour);
    let json = scratch(name).join("r.json");
    let mut args = vec!["--duration", "3s"];
    args.extend_from_slice(extra);
    let run = spawn_run(&server.url(), &json, &args).finish(Duration::from_secs(20));
    let result = finished_on_time(&run, &json, Duration::from_secs(6));
    (run, result)
}

/// Every connection failed its handshake with `cause` (`summary.errors.handshake_CAUSE`, the
/// raw `counters.handshake_failures_by_cause.CAUSE`, the report), the total counter agrees,
/// and nothing else failed.
fn assert_handshake_failed(run: &Finished, result: &Value, cause: &str) {
    let counter = format!("handshake_failures_by_cause/{cause}");
    assert_counted(run, result, &format!("handshake_{cause}"), &counter, CONNECTIONS);
    let context = format!("{}\n{}", summary_of(result), run.describe());
    assert_eq!(uint(result, "/counters/handshake_failures"), CONNECTIONS, "the total\n{context}");
    assert_eq!(uint(result, "/summary/connections/established"), 0, "{context}");
    assert_eq!(uint(result, "/summary/connections/failed"), CONNECTIONS, "{context}");
    assert_eq!(errors(result).len(), 1, "only handshake failures of one cause\n{context}");
}

/// The server refused the upgrade with `status`: counted by status, and the first line of
/// the body it sent shown once on the report's errors line and kept in the result.
fn assert_refused_with(name: &str, response: &'static [u8], status: u16, said: &str) {
    let (run, result) = run_against(name, Misbehaviour::Refuse(response), &[]);
    let cause = format!("http_status_{status}");
    assert_handshake_failed(&run, &result, &cause);
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    let kept = &result["counters"]["handshake_responses"][&cause];
    assert_eq!(kept.as_str(), Some(said), "counters.handshake_responses.{cause}\n{context}");
    let line = run.stdout.lines().find(|l| l.starts_with("errors:")).unwrap_or_default();
    let shown = format!("handshake_{cause} {CONNECTIONS} (\"{said}\")");
    assert!(line.contains(&shown), "the report's errors line {line:?} lacks {shown:?}\n{context}");
    assert_eq!(run.stdout.matches(said).count(), 1, "what the server said, shown once\n{context}");
}

#[test]
fn upgrade_answered_with_403_is_counted_by_status_with_what_the_server_said() {
    let response = b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: 31\r\nConnection: close\r\n\r\nmissing token: log in first\r\nx\n";
    assert_refused_with("faults-403", response, 403, "missing token: log in first");
}

#[test]
fn upgrade_answered_with_200_is_counted_by_status_with_what_the_server_said() {
    let response = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 31\r\n\r\n<html><body>Welcome</body>\n</x>";
    assert_refused_with("faults-200", response, 200, "<html><body>Welcome</body>");
}

#[test]
fn upgrade_answered_with_a_wrong_accept_is_a_bad_accept() {
    let response = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n";
    let (run, result) = run_against("faults-bad-accept", Misbehaviour::Refuse(response), &[]);
    assert_handshake_failed(&run, &result, "bad_accept");
}

#[test]
fn an_answer_that_is_not_http_is_not_websocket() {
    let (run, result) =
        run_against("faults-ssh", Misbehaviour::AnswerAnything(b"SSH-2.0-OpenSSH_9.6\r\n"), &[]);
    assert_handshake_failed(&run, &result, "not_websocket");
}

/// A `101` followed by 1 MB of headers is an answer too large to read, not an answer that
/// is not WebSocket: `handshake_response_too_large`, its detail naming the bound.
#[test]
fn an_upgrade_answer_with_a_megabyte_of_headers_is_a_response_too_large_naming_the_bound() {
    let mut response =
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nX-Filler: "
            .to_vec();
    response.resize(response.len() + (1 << 20), b'a');
    response.extend_from_slice(b"\r\n\r\n");
    let (run, result) = run_against("faults-huge-head", Misbehaviour::Refuse(response.leak()), &[]);
    assert_handshake_failed(&run, &result, "response_too_large");
    let detail = result["counters"]["handshake_responses"]["response_too_large"].as_str().unwrap_or_default();
    assert!(
        detail.contains(&format!("{DEFAULT_MAX_HEADER_BYTES} bytes")),
        "the bound named: {detail:?}\n{}",
        run.describe()
    );
}

#[test]
fn a_server_that_closes_without_answering_is_handshake_closed() {
    let (run, result) = run_against("faults-closed", Misbehaviour::Refuse(b""), &[]);
    assert_handshake_failed(&run, &result, "closed");
}

#[test]
fn wss_against_a_plain_server_is_a_tls_failure_not_tls() {
    let _slot = heavy(1);
    let server = BadServer::start(Misbehaviour::AnswerAnything(
        b"HTTP/1.1 400 Bad Request\r\nContent-Length: 11\r\nConnection: close\r\n\r\nbad request",
    ));
    let json = scratch("faults-not-tls").join("r.json");
    let url = format!("wss://{}", server.addr);
    let run = spawn_run(&url, &json, &["--duration", "3s", "--insecure"]).finish(Duration::from_secs(20));
    let result = finished_on_time(&run, &json, Duration::from_secs(6));
    assert_handshake_failed(&run, &result, "tls_not_tls");
}

/// After the upgrade the server sends `bytes`: each connection is established, then counted
/// as a protocol error of `cause` (the close code sent and the rule that broke), with the
/// total agreeing, what broke shown on the errors line, and nothing else.
fn assert_protocol_error_after_upgrade(name: &str, bytes: Vec<u8>, cause: &str) {
    let (run, result) = run_against(name, Misbehaviour::AfterUpgrade(bytes), &[]);
    assert_counted(&run, &result, cause, &format!("framing_errors_by_cause/{cause}"), CONNECTIONS);
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    assert_eq!(uint(&result, "/counters/protocol_errors"), CONNECTIONS, "the total\n{context}");
    assert_eq!(uint(&result, "/summary/connections/established"), CONNECTIONS, "{context}");
    assert_eq!(errors(&result).len(), 1, "only protocol errors of one cause\n{context}");
    let detail = result["counters"]["protocol_error_details"][cause].as_str().unwrap_or_default();
    assert!(!detail.is_empty(), "what broke is kept\n{context}");
    let line = run.stdout.lines().find(|l| l.starts_with("errors:")).unwrap_or_default();
    assert!(line.contains(detail), "the errors line {line:?} shows what broke ({detail:?})\n{context}");
    let blamed = format!("wsbench closed every one because the server broke RFC 6455: {cause} {CONNECTIONS}");
    assert_ended_early_because(&run, &result, &blamed);
}

/// The run ended early for want of connections, and its result and report header say it
/// was because `who` (what ended the connections, as the reason puts it).
fn assert_ended_early_because(run: &Finished, result: &Value, who: &str) {
    let context = format!("{}\n{}", summary_of(result), run.describe());
    let reason = format!("no connection left ({who})");
    assert_eq!(result["ended_early"]["reason"].as_str(), Some(reason.as_str()), "{context}");
    let header = run.stdout.lines().next().unwrap_or_default();
    assert!(
        header.contains(&format!("[ENDED EARLY: {reason}, ")),
        "the report's header: {header:?}\n{context}"
    );
}

/// An MQTT "broker" that accepts the session and the echo topic's subscription, then sends
/// DISCONNECT: the session's error is fatal, and wsbench, not the server, closes each
/// connection.
#[test]
fn connections_closed_after_a_fatal_message_protocol_error_are_blamed_on_that_error() {
    let mut bytes = Vec::new();
    let connack_suback_disconnect: [&[u8]; 3] =
        [&[0x20, 0x02, 0x00, 0x00], &[0x90, 0x03, 0x00, 0x01, 0x00], &[0xE0, 0x00]];
    for packet in connack_suback_disconnect {
        write_frame(&mut bytes, true, OpCode::Binary, None, packet);
    }
    let (run, result) =
        run_against("faults-blame-mqtt", Misbehaviour::AfterUpgrade(bytes), &["--protocol", "mqtt"]);
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    assert_eq!(uint(&result, "/summary/connections/established"), CONNECTIONS, "{context}");
    assert_eq!(uint(&result, "/counters/closed_on_protocol_error"), CONNECTIONS, "{context}");
    let disconnects: u64 =
        errors(&result).iter().filter(|(kind, _)| kind.starts_with("mqtt_disconnect_")).map(|(_, n)| n).sum();
    assert_eq!(disconnects, CONNECTIONS, "{context}");
    assert_ended_early_because(
        &run,
        &result,
        "wsbench closed every one after a fatal error of the message protocol",
    );
}

#[test]
fn connections_wsbench_failed_and_the_server_closed_are_each_blamed_for_their_share() {
    let mut masked = Vec::new();
    write_frame(&mut masked, true, OpCode::Binary, Some([1, 2, 3, 4]), b"server frames are never masked");
    let mut going_away = Vec::new();
    write_frame(&mut going_away, true, OpCode::Close, None, &1001u16.to_be_bytes());
    let (run, result) =
        run_against("faults-blame-mix", Misbehaviour::AfterUpgradeByTurns(vec![masked, going_away]), &[]);
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    let half = CONNECTIONS / 2;
    assert_eq!(errors(&result).get("closed_1001").copied(), Some(half), "{context}");
    assert_eq!(
        errors(&result).get("protocol_error_1002_masked_server_frame").copied(),
        Some(half),
        "{context}"
    );
    let who = format!(
        "the server closed or reset {half}; wsbench closed {half} because the server broke RFC 6455: \
         protocol_error_1002_masked_server_frame {half}"
    );
    assert_ended_early_because(&run, &result, &who);
}

#[test]
fn garbage_after_the_upgrade_is_a_protocol_error() {
    // 't' = 0x74: reserved bits set and reserved opcode 4 (the header parser meets the opcode first).
    assert_protocol_error_after_upgrade(
        "faults-garbage",
        b"this is not a websocket frame\r\n".to_vec(),
        "protocol_error_1002_reserved_opcode",
    );
}

#[test]
fn masked_server_frame_is_a_protocol_error() {
    let mut frame = Vec::new();
    write_frame(&mut frame, true, OpCode::Binary, Some([1, 2, 3, 4]), b"server frames are never masked");
    assert_protocol_error_after_upgrade("faults-masked", frame, "protocol_error_1002_masked_server_frame");
}

#[test]
fn frame_length_with_the_top_bit_set_is_a_protocol_error() {
    // A binary frame whose 64-bit length has its most significant bit set (RFC 6455 5.2).
    let frame = vec![0x82, 0x7F, 0x80, 0, 0, 0, 0, 0, 0, 0x10];
    assert_protocol_error_after_upgrade(
        "faults-oversized-length",
        frame,
        "protocol_error_1002_invalid_length",
    );
}

#[test]
fn invalid_utf8_in_a_text_message_is_a_protocol_error_1007() {
    let mut frame = Vec::new();
    write_frame(&mut frame, true, OpCode::Text, None, b"not \xff\xfe UTF-8");
    assert_protocol_error_after_upgrade("faults-utf8", frame, "protocol_error_1007_invalid_utf8");
}

#[test]
fn over_long_control_frame_is_a_protocol_error() {
    let mut frame = Vec::new();
    write_frame(&mut frame, true, OpCode::Ping, None, &[b'p'; 126]);
    assert_protocol_error_after_upgrade(
        "faults-long-ping",
        frame,
        "protocol_error_1002_control_frame_too_long",
    );
}

#[test]
fn wss_to_a_self_signed_server_without_insecure_is_a_tls_unknown_ca() {
    let _slot = heavy(1);
    let server = Server::spawn(&["--tls"]);
    let json = scratch("faults-unknown-ca").join("r.json");
    let url = server.urls.iter().find(|u| u.starts_with("wss://")).expect("a wss:// listener");
    let run = spawn_run(url, &json, &["--duration", "3s"]).finish(Duration::from_secs(20));
    let result = finished_on_time(&run, &json, Duration::from_secs(6));
    assert_handshake_failed(&run, &result, "tls_unknown_ca");
    let hint = result["counters"]["handshake_responses"]["tls_unknown_ca"].as_str().unwrap_or_default();
    assert!(
        hint.contains("--cacert") && hint.contains("--insecure"),
        "the hint: {hint:?}\n{}",
        run.describe()
    );
}

/// A self-signed certificate marked as a CA (as `openssl req -x509` makes it) is an unknown CA
/// too, with the same hint, not a `tls_certificate_unknown`.
#[test]
fn wss_to_a_self_signed_ca_certificate_without_insecure_is_a_tls_unknown_ca() {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    let _slot = heavy(1);
    let dir = scratch("faults-self-signed-ca");
    let mut params = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let key = KeyPair::generate().unwrap();
    let certificate = params.self_signed(&key).unwrap();
    let (cert_path, key_path) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert_path, certificate.pem()).unwrap();
    std::fs::write(&key_path, key.serialize_pem()).unwrap();
    let server = Server::spawn(&["--cert", arg(&cert_path), "--key", arg(&key_path)]);
    let json = dir.join("r.json");
    let url = server.urls.iter().find(|u| u.starts_with("wss://")).expect("a wss:// listener");
    let run = spawn_run(url, &json, &["--duration", "3s"]).finish(Duration::from_secs(20));
    let result = finished_on_time(&run, &json, Duration::from_secs(6));
    assert_handshake_failed(&run, &result, "tls_unknown_ca");
    let line = run.stdout.lines().find(|l| l.starts_with("errors:")).unwrap_or_default();
    assert!(line.contains("--insecure"), "the errors line gives the hint: {line:?}\n{}", run.describe());
}

#[test]
fn server_that_never_answers_the_upgrade_is_a_handshake_timeout() {
    let (run, result) = run_against("faults-silent", Misbehaviour::Silent, &["--connect-timeout", "1s"]);
    assert_handshake_failed(&run, &result, "timeout");
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    assert_eq!(uint(&result, "/counters/connect_timeouts"), 0, "TCP did connect\n{context}");
    assert!(run.elapsed >= Duration::from_secs(1), "timed out before 1 s\n{context}");
    assert!(float(&result, "/elapsed_s") < 3.0, "waited past the timeout\n{context}");
}

#[test]
fn attempts_cut_off_by_ctrl_c_are_unfinished_not_failures_without_a_cause() {
    let _slot = heavy(1);
    let server = BadServer::start(Misbehaviour::Silent);
    let json = scratch("faults-cut-off").join("r.json");
    let child = spawn_run(&server.url(), &json, &["--duration", "30s", "--connect-timeout", "20s"]);
    // Every upgrade is sent and none can be answered: interrupt while all are opening.
    thread::sleep(Duration::from_millis(1500));
    child.signal_group(libc::SIGINT);
    let run = child.finish(Duration::from_secs(10));
    assert_eq!(run.code, Some(130), "an interrupted run exits with 130\n{}", run.describe());
    let result = read_result(&json);
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    assert_eq!(result["interrupted"], Value::Bool(true), "{context}");
    assert_eq!(uint(&result, "/summary/connections/attempted"), CONNECTIONS, "{context}");
    assert_eq!(uint(&result, "/summary/connections/unfinished"), CONNECTIONS, "{context}");
    assert_eq!(uint(&result, "/counters/connects_unfinished"), CONNECTIONS, "{context}");
    // Before, these counted as failed, with no cause among the errors to say why.
    assert_eq!(uint(&result, "/summary/connections/failed"), 0, "{context}");
    assert!(errors(&result).is_empty(), "cut off by the end is no error\n{context}");
    let line = run.stdout.lines().find(|l| l.starts_with("connections:")).unwrap_or_default();
    let said = format!("0 failed, {CONNECTIONS} still opening when the run ended");
    assert!(line.contains(&said), "the report's connections line {line:?} lacks {said:?}\n{context}");
}

// ---------------------------------------------------------------------------------------
// Toxiproxy.

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("repo root")
}

/// The `toxiproxy-server` to run: `<repo>/.tools/` first, then `$PATH`.
fn toxiproxy_server() -> Result<PathBuf, String> {
    let local = repo_root().join(".tools/toxiproxy-server");
    let candidates = [local.clone(), PathBuf::from("toxiproxy-server")];
    for program in candidates {
        let ran = Command::new(&program).arg("-version").stdin(Stdio::null()).output();
        if ran.is_ok_and(|out| out.status.success()) {
            return Ok(program);
        }
    }
    Err(format!("neither {} nor toxiproxy-server on PATH runs", local.display()))
}

/// A running `toxiproxy-server` on a free port of 127.0.0.1, driven over its HTTP API;
/// killed on drop.
struct Toxiproxy {
    child: Child,
    api: SocketAddr,
}

impl Toxiproxy {
    /// The server, or None (after saying why) when it is not installed and peers are optional.
    fn start(log: &Path) -> Option<Toxiproxy> {
        let program = match toxiproxy_server() {
            Ok(program) => program,
            Err(why) => {
                support::peer_missing(&format!("toxiproxy not installed ({why})"));
                return None;
            }
        };
        // A free port: bound, read, released (toxiproxy cannot be told to take port 0).
        let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
        let api = SocketAddr::from(([127, 0, 0, 1], port));
        let log_file = std::fs::File::create(log).expect("create the toxiproxy log");
        let mut command = Command::new(&program);
        command
            .args(["-host", "127.0.0.1", "-port", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().expect("log file"))
            .stderr(log_file);
        // SAFETY: prctl is async-signal-safe; the proxy dies with this test's thread.
        unsafe {
            command.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let child = command.spawn().unwrap_or_else(|e| panic!("spawn {}: {e}", program.display()));
        let proxy = Toxiproxy { child, api };
        let deadline = Instant::now() + Duration::from_secs(10);
        while proxy.try_request("GET", "/version", None).is_err() {
            assert!(
                Instant::now() < deadline,
                "toxiproxy-server did not answer on {api}; see {}",
                log.display()
            );
            thread::sleep(Duration::from_millis(50));
        }
        Some(proxy)
    }

    /// One HTTP/1.1 request (`Connection: close`); the status and the body as JSON (Null
    /// when the body is empty or not JSON).
    fn try_request(&self, method: &str, path: &str, body: Option<&Value>) -> std::io::Result<(u16, Value)> {
        let mut stream = TcpStream::connect_timeout(&self.api, Duration::from_secs(2))?;
        stream.set_read_timeout(Some(Duration::from_secs(5)))?;
        let body = body.map(Value::to_string).unwrap_or_default();
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.api,
            body.len()
        )?;
        let mut response = Vec::new();
        stream.read_to_end(&mut response)?;
        let text = String::from_utf8_lossy(&response);
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::InvalidData, format!("not an HTTP response: {text:?}"))
        })?;
        let body = if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
            dechunk(body)
        } else {
            body.to_owned()
        };
        Ok((status, serde_json::from_str(&body).unwrap_or(Value::Null)))
    }

    /// A request that must succeed (2xx).
    fn request(&self, method: &str, path: &str, body: &Value) -> Value {
        let (status, answer) = self
            .try_request(method, path, Some(body))
            .unwrap_or_else(|e| panic!("toxiproxy {method} {path}: {e}"));
        assert!((200..300).contains(&status), "toxiproxy {method} {path} {body}: HTTP {status} {answer}");
        answer
    }

    /// Creates proxy `name` from a free port of 127.0.0.1 to `upstream`; returns its URL.
    fn proxy(&self, name: &str, upstream: SocketAddr) -> String {
        let created = self.request(
            "POST",
            "/proxies",
            &json!({"name": name, "listen": "127.0.0.1:0", "upstream": upstream.to_string(), "enabled": true}),
        );
        let listen = created["listen"].as_str().unwrap_or_else(|| panic!("no listen address in {created}"));
        assert!(!listen.ends_with(":0"), "toxiproxy did not say which port it took: {created}");
        format!("ws://{listen}")
    }

    /// Adds a toxic of `kind` to every connection of `proxy`, on `stream` (`upstream`:
    /// client → server, `downstream`: server → client).
    fn toxic(&self, proxy: &str, kind: &str, stream: &str, attributes: Value) {
        let name = format!("{kind}_{stream}");
        self.request(
            "POST",
            &format!("/proxies/{proxy}/toxics"),
            &json!({"name": name, "type": kind, "stream": stream, "toxicity": 1.0, "attributes": attributes}),
        );
    }
}

impl Drop for Toxiproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The body of a `Transfer-Encoding: chunked` response.
fn dechunk(mut text: &str) -> String {
    let mut body = String::new();
    while let Some((size, rest)) = text.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else { break };
        if size == 0 || rest.len() < size {
            break;
        }
        body.push_str(&rest[..size]);
        text = rest[size..].trim_start_matches("\r\n");
    }
    body
}

/// A `wsbench serve` behind a fresh toxiproxy, or None when toxiproxy is not installed.
fn proxied_server(test: &str) -> Option<(Server, Toxiproxy, String, PathBuf)> {
    let dir = scratch(test);
    let toxiproxy = Toxiproxy::start(&dir.join("toxiproxy.log"))?;
    let server = Server::spawn(&[]);
    let url = toxiproxy.proxy("ws", server.addr);
    Some((server, toxiproxy, url, dir.join("r.json")))
}

#[test]
fn toxiproxy_reset_peer_mid_run_counts_resets() {
    let Some((_server, toxiproxy, url, json)) = proxied_server("faults-reset-peer") else { return };
    let _slot = heavy(1);
    let run = spawn_run(&url, &json, &["--duration", "4s"]);
    // reset_peer drops what it forwards from its first chunk on: added before the upgrade,
    // it would fail handshakes instead. Added once the connections are open, every one of
    // them is reset 200 ms after its next echo.
    thread::sleep(Duration::from_millis(1000));
    toxiproxy.toxic("ws", "reset_peer", "downstream", json!({"timeout": 200}));
    let run = run.finish(Duration::from_secs(20));
    // Every connection is gone ~1.2 s in: the run ends then, not at the end of its 4 s
    // window (a run that reaches it has measured exactly 4 s, on its own clock).
    let result = finished_on_time(&run, &json, Duration::from_secs(9));
    let measured = float(&result, "/measured_s");
    assert!(measured < 4.0, "the run measured {measured} s: it waited out its window\n{}", run.describe());
    assert_counted(&run, &result, "reset", "resets", CONNECTIONS);
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    assert_eq!(uint(&result, "/summary/connections/established"), CONNECTIONS, "{context}");
    assert_eq!(uint(&result, "/summary/disconnections"), CONNECTIONS, "{context}");
    assert_eq!(errors(&result).len(), 1, "only resets\n{context}");
    assert!(uint(&result, "/summary/messages/received") > 0, "{context}");
}

#[test]
fn toxiproxy_latency_of_50ms_each_way_gives_p50_of_100ms_and_no_errors() {
    let Some((_server, toxiproxy, url, json)) = proxied_server("faults-latency") else { return };
    let _slot = heavy(1);
    for stream in ["upstream", "downstream"] {
        toxiproxy.toxic("ws", "latency", stream, json!({"latency": 50, "jitter": 0}));
    }
    let run = spawn_run(&url, &json, &["--duration", "2s"]).finish(Duration::from_secs(20));
    let result = finished_on_time(&run, &json, Duration::from_secs(6));
    assert_clean(&run, &result);
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    assert_eq!(uint(&result, "/summary/connections/established"), CONNECTIONS, "{context}");
    let p50 = uint(&result, "/summary/latency_us/p50");
    assert!((100_000..1_000_000).contains(&p50), "p50 {p50} µs, want ≥ 100 ms (50 ms each way)\n{context}");
    assert!(uint(&result, "/summary/latency_us/min") >= 100_000, "faster than the proxy's delay\n{context}");
    assert!(uint(&result, "/summary/connect_us/p50") >= 100_000, "the upgrade crosses it too\n{context}");
}

#[test]
fn toxiproxy_limit_data_cuts_connections_mid_frame_and_counts_resets() {
    let Some((_server, toxiproxy, url, json)) = proxied_server("faults-limit-data") else { return };
    let _slot = heavy(1);
    // Each connection's server → client stream is cut after 5000 bytes: the 101 response
    // (~130 bytes), four 1004-byte echoes (4-byte header + 1000), and part of the fifth.
    const LIMIT: u64 = 5000;
    toxiproxy.toxic("ws", "limit_data", "downstream", json!({"bytes": LIMIT}));
    let run = spawn_run(&url, &json, &["--duration", "3s", "--payload", "bytes:1000"])
        .finish(Duration::from_secs(20));
    let result = finished_on_time(&run, &json, Duration::from_secs(5));
    assert_counted(&run, &result, "reset", "resets", CONNECTIONS);
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    assert_eq!(uint(&result, "/summary/connections/established"), CONNECTIONS, "{context}");
    assert_eq!(errors(&result).len(), 1, "only resets\n{context}");
    assert_eq!(
        uint(&result, "/summary/messages/received"),
        4 * CONNECTIONS,
        "four whole echoes each\n{context}"
    );
    assert_eq!(uint(&result, "/counters/bytes_received"), LIMIT * CONNECTIONS, "cut at the limit\n{context}");
}

// ---------------------------------------------------------------------------------------
// A server restarted in the middle of a run: lost for good by default, reopened and
// counted with `--reconnect`.

/// `wsbench serve` on a fixed port (a restart must come back where the clients look).
fn serve_on(port: u16) -> Child {
    let mut command = Command::new(support::wsbench_bin());
    command.args(["serve", "--port", &port.to_string()]).stdout(Stdio::null()).stderr(Stdio::null());
    // SAFETY: prctl is async-signal-safe; the server dies with the test.
    unsafe {
        command.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let child = command.spawn().expect("spawn wsbench serve");
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the restarted server did not listen on {port}");
        thread::sleep(Duration::from_millis(20));
    }
    child
}

fn restarted_run(test: &str, extra: &[&str]) -> (Finished, Value) {
    let mut first = Server::spawn(&[]);
    let port = first.addr.port();
    let json = scratch(test).join("r.json");
    let mut args = vec!["--duration", "4s"];
    args.extend_from_slice(extra);
    let run = spawn_run(&first.urls[0], &json, &args);
    thread::sleep(Duration::from_secs(1));
    let _ = first.child.kill();
    let _ = first.child.wait();
    thread::sleep(Duration::from_millis(500));
    let mut second = serve_on(port);
    let run = run.finish(Duration::from_secs(20));
    let _ = second.kill();
    let _ = second.wait();
    let result = finished_on_time(&run, &json, Duration::from_secs(10));
    (run, result)
}

#[test]
fn server_restarted_without_reconnect_loses_every_connection() {
    let _slot = heavy(1);
    let (run, result) = restarted_run("faults-restart", &[]);
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    run.assert_completed_with_failures();
    assert_eq!(uint(&result, "/counters/reconnections"), 0, "--reconnect is off by default\n{context}");
    assert_eq!(uint(&result, "/summary/connections/established"), CONNECTIONS, "{context}");
    assert_eq!(errors(&result).get("reset").copied(), Some(CONNECTIONS), "{context}");
    assert!(run.elapsed < Duration::from_secs(3), "with every connection lost the run ends early\n{context}");
}

#[test]
fn server_restarted_with_reconnect_is_reconnected_and_counted() {
    let _slot = heavy(1);
    let (run, result) = restarted_run("faults-restart-reconnect", &["--reconnect"]);
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    run.assert_completed_with_failures();
    let reconnections = uint(&result, "/counters/reconnections");
    assert!(reconnections >= CONNECTIONS, "each lost connection is reopened: {reconnections}\n{context}");
    assert!(uint(&result, "/summary/connections/established") >= 2 * CONNECTIONS, "{context}");
    assert_eq!(
        errors(&result).get("reset").copied(),
        Some(CONNECTIONS),
        "the loss is still counted\n{context}"
    );
    let after_restart: u64 = result["timeline"]
        .as_array()
        .expect("timeline")
        .iter()
        .filter(|point| point["second"].as_u64().unwrap_or(0) >= 2)
        .map(|point| point["echoes"].as_u64().unwrap_or(0))
        .sum();
    assert!(after_restart > 0, "echoes resume after the restart\n{context}");
    assert!(run.stdout.contains("reconnections"), "the report says so\n{context}");
}
