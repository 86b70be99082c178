//! What a server can make wsbench hold: `wsbench run` against servers that attack its memory
//! (`support/hostile_server.rs`: deflate bombs on every connection, a frame announcing 2^63−1
//! bytes, continuation frames without end), and `wsbench serve` against clients that send it
//! deflate bombs. Each side stays within its budget for messages still arriving
//! (`--max-message-memory`, plus 64 MiB for everything else: peak RSS read from the child's
//! `/proc/PID/status` VmHWM), closes the attacking connections with 1009, counts them as
//! `protocol_error_1009_message_too_big`, and a run still ends with its report and result. A
//! long compressed run gives every charge back (a leak would exhaust a small budget).
//!
//! Run: `cargo test -p wsbench --test hostile_memory`.

mod support;

#[allow(dead_code)]
#[path = "engine/harness.rs"]
mod harness;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;
use wsbench_proto::deflate::Deflater;

use harness::{arg, errors, heavy, read_result, scratch, summary_of, uint};
use support::Server;
use support::hostile_server::{Attack, HostileServer};

const TOO_BIG: &str = "protocol_error_1009_message_too_big";
/// What a process may hold besides its budget for messages still arriving.
const HEADROOM_KIB: u64 = 64 * 1024;

/// A finished `wsbench run` and the highest resident memory its process reached.
struct Watched {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    peak_kib: u64,
}

impl Watched {
    fn describe(&self) -> String {
        format!(
            "exit code {:?}, peak RSS {} KiB\n--- stdout ---\n{}--- stderr ---\n{}",
            self.code, self.peak_kib, self.stdout, self.stderr
        )
    }
}

/// `VmHWM` (peak resident memory) of process `pid`, in KiB; 0 once it is gone.
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Runs `wsbench ARGS…` to its end (at most 60 s), reading its peak RSS as it goes.
fn run_watched(args: &[&str]) -> Watched {
    let mut child = Command::new(support::wsbench_bin())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn wsbench run");
    let pipes = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let read = |mut pipe: Box<dyn Read + Send>| {
        thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let (stdout, stderr) = (read(Box::new(pipes.0)), read(Box::new(pipes.1)));
    let started = Instant::now();
    let mut peak_kib = 0;
    let status = loop {
        peak_kib = peak_kib.max(peak_rss_kib(child.id()));
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("wsbench {args:?} did not exit within 60 s");
        }
        thread::sleep(Duration::from_millis(10));
    };
    Watched { code: status.code(), stdout: stdout.join().unwrap(), stderr: stderr.join().unwrap(), peak_kib }
}

/// The run completed with failures (exit 3), wrote its result and report, and counted
/// `count` connections closed for a message too big, and nothing else but what follows from
/// it: no request was answered.
fn assert_closed_too_big(run: &Watched, json: &std::path::Path, count: u64) -> Value {
    assert_eq!(run.code, Some(3), "want exit 3\n{}", run.describe());
    assert!(json.exists(), "no result file\n{}", run.describe());
    let result = read_result(json);
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    assert_eq!(errors(&result).get(TOO_BIG).copied(), Some(count), "{context}");
    let others: Vec<_> = errors(&result).into_keys().filter(|kind| kind != TOO_BIG).collect();
    assert_eq!(others, ["no_request_answered"], "only messages too big\n{context}");
    assert_eq!(uint(&result, &format!("/counters/framing_errors_by_cause/{TOO_BIG}")), count, "{context}");
    assert_eq!(uint(&result, "/counters/protocol_errors"), count, "{context}");
    let line = run.stdout.lines().find(|l| l.starts_with("errors:")).unwrap_or_default();
    assert!(line.contains(&format!("{TOO_BIG} {count}")), "the errors line: {line:?}\n{context}");
    result
}

#[test]
fn deflate_bombs_on_30_connections_stay_within_the_process_budget() {
    let _slot = heavy(2);
    let server = HostileServer::start(Attack::DeflateBomb { mib: 2048 });
    let json = scratch("hostile-bomb-client").join("r.json");
    let url = server.url();
    let run = run_watched(&[
        "run",
        "echo",
        &url,
        "--compression",
        "deflate",
        "--connections",
        "30",
        "--warmup",
        "0s",
        "--duration",
        "3s",
        "--max-message-memory",
        "64MiB",
        "--quiet",
        "--json",
        arg(&json),
    ]);
    let result = assert_closed_too_big(&run, &json, 30);
    // wsbench closed every connection, for a message past its limit: the server closed none.
    let reason = format!(
        "no connection left (wsbench closed every one because the server sent past a limit of this run: {TOO_BIG} 30)"
    );
    assert_eq!(result["ended_early"]["reason"].as_str(), Some(reason.as_str()), "{}", run.describe());
    let header = run.stdout.lines().next().unwrap_or_default();
    assert!(header.contains(&format!("[ENDED EARLY: {reason}, ")), "{header}\n{}", run.describe());
    eprintln!("wsbench run peaked at {} KiB", run.peak_kib);
    let ceiling = 64 * 1024 + HEADROOM_KIB;
    assert!(run.peak_kib <= ceiling, "peak RSS {} KiB > {ceiling} KiB\n{}", run.peak_kib, run.describe());
}

#[test]
fn a_frame_announcing_2_pow_63_bytes_is_closed_with_1009_on_its_header() {
    let _slot = heavy(1);
    let server = HostileServer::start(Attack::EndlessFrame);
    let json = scratch("hostile-endless-frame").join("r.json");
    let url = server.url();
    // bytes:N echoes are checked as they stream, unbuffered: the length still counts.
    let run = run_watched(&[
        "run",
        "echo",
        &url,
        "--connections",
        "4",
        "--payload",
        "bytes:64",
        "--warmup",
        "0s",
        "--duration",
        "3s",
        "--quiet",
        "--json",
        arg(&json),
    ]);
    let result = assert_closed_too_big(&run, &json, 4);
    // Closed on the header: nothing like the 4 GiB the server would send was read.
    let received = uint(&result, "/counters/bytes_received");
    assert!(received < 64 << 20, "read {received} bytes of the endless frame\n{}", run.describe());
}

#[test]
fn endless_continuation_frames_are_closed_with_1009_at_max_message() {
    let _slot = heavy(1);
    let server = HostileServer::start(Attack::EndlessContinuations);
    let json = scratch("hostile-endless-continuations").join("r.json");
    let url = server.url();
    let run = run_watched(&[
        "run",
        "echo",
        &url,
        "--connections",
        "4",
        "--max-message",
        "1MiB",
        "--warmup",
        "0s",
        "--duration",
        "3s",
        "--quiet",
        "--json",
        arg(&json),
    ]);
    let result = assert_closed_too_big(&run, &json, 4);
    let detail = result["counters"]["protocol_error_details"][TOO_BIG].as_str().unwrap_or_default();
    assert!(detail.contains("--max-message"), "the detail names the limit: {detail:?}\n{}", run.describe());
}

/// One client sending a compressed message of `mib` MiB of zeros (a few KiB per MiB on the
/// wire) to `addr`; returns the close code the server answered with (0: none).
fn send_deflate_bomb(addr: SocketAddr, mib: u64, unit: &[u8]) -> u16 {
    let Ok(mut stream) = TcpStream::connect(addr) else { return 0 };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let request = format!(
        "GET / HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\
         Sec-WebSocket-Extensions: permessage-deflate\r\n\r\n"
    );
    if stream.write_all(request.as_bytes()).is_err() {
        return 0;
    }
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return 0,
        }
    }
    assert!(head.starts_with(b"HTTP/1.1 101"), "{}", String::from_utf8_lossy(&head));
    // FIN, RSV1, binary; masked with a zero key, so the payload goes as it is.
    let mut header = vec![0xC2, 0xFF];
    header.extend_from_slice(&(mib * unit.len() as u64).to_be_bytes());
    header.extend_from_slice(&[0, 0, 0, 0]);
    let _ = stream.write_all(&header);
    for _ in 0..mib {
        if stream.write_all(unit).is_err() {
            break;
        }
    }
    let mut reply = [0u8; 4];
    match stream.read_exact(&mut reply) {
        Ok(()) if reply[0] == 0x88 => u16::from_be_bytes([reply[2], reply[3]]),
        _ => 0,
    }
}

#[test]
fn deflate_bombs_from_30_clients_are_closed_by_serve_within_its_budget() {
    let _slot = heavy(2);
    let mut server = Server::spawn(&["--max-message-memory", "64MiB"]);
    let mut unit = Vec::new();
    Deflater::new(15, true).compress(&vec![0u8; 1 << 20], &mut unit).unwrap();
    unit.extend_from_slice(&[0x00, 0x00, 0xff, 0xff]);
    let addr = server.addr;
    let clients: Vec<_> = (0..30)
        .map(|_| {
            let unit = unit.clone();
            thread::spawn(move || send_deflate_bomb(addr, 2048, &unit))
        })
        .collect();
    let codes: Vec<u16> = clients.into_iter().map(|client| client.join().unwrap()).collect();
    assert!(server.child.try_wait().unwrap().is_none(), "wsbench serve died");
    let peak = peak_rss_kib(server.pid());
    eprintln!("wsbench serve peaked at {peak} KiB");
    assert_eq!(codes, vec![1009; 30], "every bomb is closed with 1009");
    let ceiling = 64 * 1024 + HEADROOM_KIB;
    assert!(peak <= ceiling, "wsbench serve peaked at {peak} KiB > {ceiling} KiB");
}

#[test]
fn a_long_compressed_run_gives_its_message_memory_back() {
    let _slot = heavy(2);
    // Both sides with a budget of a few dozen 30 kB messages, and connections coming and
    // going (churn): a charge kept after its message, or after its connection, would
    // exhaust it within the first 40 echoes or connections of the 300 this run makes.
    let server = Server::spawn(&["--max-message-memory", "1MiB"]);
    let json = scratch("hostile-budget-returned").join("r.json");
    let url = format!("ws://{}/", server.addr);
    let run = run_watched(&[
        "run",
        "churn",
        &url,
        "--rate",
        "100/s",
        "--messages-per-connection",
        "2",
        "--compression",
        "deflate",
        "--payload",
        "bytes:30000",
        "--duration",
        "3s",
        "--max-message-memory",
        "1MiB",
        "--quiet",
        "--json",
        arg(&json),
    ]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let result = read_result(&json);
    assert!(errors(&result).is_empty(), "{}\n{}", summary_of(&result), run.describe());
    let echoes = uint(&result, "/counters/messages_received");
    assert!(echoes >= 200, "only {echoes} echoes: too few to show a leak\n{}", run.describe());
}
