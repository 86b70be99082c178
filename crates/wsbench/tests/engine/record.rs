//! `wsbench record`, the recording proxy, in front of real servers: a Python `websockets`
//! client's session with `tests/interop/subscription_server.py` recorded (its Authorization
//! and query token redacted), imported and replayed at 100 connections without an error; a
//! wss upstream (`wsbench serve --tls`) recorded until the message bound, forwarding going
//! on, and the file complete after SIGTERM; an upstream that is down answered 502 and
//! recorded; an upstream's 401 passed on as it is, and secrets kept with --record-secrets
//! (`tests/interop/auth_server.py`); a permessage-deflate offer not forwarded, so node `ws`
//! sends its 2,000-byte echo uncompressed; a client that never reads pushed back (the
//! proxy's memory bounded while 256 MiB are offered); connections past --max-connections
//! answered 503; bad flags and an --out that is not a regular file refused before anything
//! listens.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::bad_input::assert_usage_error;
use crate::flow::python_peer;
use crate::harness::{arg, errors, heavy, read_result, repo_root, scratch, summary_of, uint, wsbench};
use crate::support::recorder::{Recorder, events};

/// A real client's session: subscribe, then publish twice with the id the server handed out.
const CLIENT: &str = r#"
import json, sys
from websockets.sync.client import connect
with connect(sys.argv[1], additional_headers={"Authorization": "Bearer alice-secret"}) as ws:
    ws.send(json.dumps({"type": "subscribe", "topic": "news"}))
    sub = json.loads(ws.recv())["sub"]
    for n in (1, 2):
        ws.send(json.dumps({"type": "publish", "sub": sub, "n": n}))
        assert json.loads(ws.recv())["type"] == "ack"
print("done")
"#;

#[test]
fn a_session_recorded_through_the_proxy_imports_and_replays_at_100_connections() {
    let Some(peer) = python_peer("subscription_server.py", &[]) else { return };
    let dir = scratch("record-session");
    let out = dir.join("session.jsonl");
    let recorder = Recorder::start(&["--upstream", &peer.url, "--out", arg(&out)]);
    let client = Command::new(repo_root().join(".venv/bin/python"))
        .args(["-c", CLIENT, &format!("{}/?room=1&access_token=t0ken", recorder.url)])
        .output()
        .unwrap();
    assert!(client.status.success(), "{}", String::from_utf8_lossy(&client.stderr));
    let (code, printed) = recorder.stop(libc::SIGINT);
    assert_eq!(code, Some(0), "{printed}");
    assert!(printed.contains("recorded 1 connections, 6 messages"), "{printed}");
    let events = events(&out);
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(!text.contains("alice-secret") && !text.contains("t0ken"), "secrets redacted\n{text}");
    assert_eq!(events[0]["event"], "open", "{text}");
    assert_eq!(events[0]["path"], "/?room=1&access_token=<redacted>", "{text}");
    let messages: Vec<&Value> = events.iter().filter(|e| e["event"] == "message").collect();
    let dirs: Vec<&str> = messages.iter().map(|m| m["dir"].as_str().unwrap()).collect();
    assert_eq!(dirs, ["send", "receive", "send", "receive", "send", "receive"], "{text}");
    assert!(events.iter().any(|e| e["event"] == "close"), "the close handshake is recorded\n{text}");
    let flow = dir.join("flow.toml");
    let import = wsbench(&["import", arg(&out), "-o", arg(&flow)], Duration::from_secs(20));
    import.assert_success();
    assert!(import.stdout.contains("capture sub: /sub of message 2"), "{}", import.describe());
    let _slot = heavy(1);
    let json = dir.join("replay.json");
    let users = dir.join("users.csv");
    std::fs::write(&users, "authorization\nBearer alice\n").unwrap();
    let args =
        ["run", "--scenario", arg(&flow), &peer.url, "--connections", "100", "--connect-timeout", "20s"];
    let run = wsbench(
        &[&args[..], &["--duration", "2s", "--data", arg(&users), "--json", arg(&json)]].concat(),
        Duration::from_secs(60),
    );
    let result = read_result(&json);
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    assert_eq!(run.code, Some(0), "{context}");
    assert!(errors(&result).is_empty(), "{context}");
    assert_eq!(uint(&result, "/flow/steps/recv6/latency_us/count"), 100, "{context}");
}

#[test]
fn a_wss_upstream_is_recorded_to_the_message_bound_and_forwarding_goes_on() {
    let server = crate::support::Server::spawn(&["--tls"]);
    let upstream = format!("wss://localhost:{}/", server.addr_for("wss").port());
    let dir = scratch("record-wss");
    let out = dir.join("wss.jsonl");
    let recorder =
        Recorder::start(&["--upstream", &upstream, "--insecure", "--out", arg(&out), "--max-messages", "10"]);
    let _slot = heavy(1);
    let json = dir.join("through.json");
    let run = wsbench(
        &[
            "run",
            &format!("{}/", recorder.url),
            "--connections",
            "2",
            "--duration",
            "1s",
            "--json",
            arg(&json),
        ],
        Duration::from_secs(60),
    );
    let result = read_result(&json);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert!(
        uint(&result, "/summary/messages/received") > 10,
        "forwarding went on past the bound\n{}",
        summary_of(&result)
    );
    let (code, printed) = recorder.stop(libc::SIGTERM);
    assert_eq!(code, Some(0), "{printed}");
    assert_eq!(printed.matches("recording stopped, still forwarding").count(), 1, "said once\n{printed}");
    let events = events(&out);
    assert_eq!(events.iter().filter(|e| e["event"] == "message").count(), 10);
    assert_eq!(events.iter().filter(|e| e["event"] == "open").count(), 2);
    assert!(
        events
            .iter()
            .all(|e| e["event"] != "open" || e["url"].as_str().unwrap().starts_with("wss://localhost:"))
    );
    assert_eq!(events.last().unwrap()["event"], "recording_stopped");
}

#[test]
fn an_upstream_that_is_down_answers_502_and_is_recorded() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let dir = scratch("record-down");
    let out = dir.join("down.jsonl");
    let recorder = Recorder::start(&["--upstream", &format!("ws://{closed}/app"), "--out", arg(&out)]);
    let mut client = TcpStream::connect(recorder.url.trim_start_matches("ws://")).unwrap();
    client
        .write_all(b"GET /chat HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        .unwrap();
    client.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut answer = String::new();
    client.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 502 Bad Gateway\r\n"), "{answer}");
    assert!(answer.contains("cannot connect to"), "{answer}");
    let (code, printed) = recorder.stop(libc::SIGHUP);
    assert_eq!(code, Some(0), "{printed}");
    assert!(printed.contains("1 connections could not reach the upstream (answered 502)"), "{printed}");
    let events = events(&out);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["event"], "upstream_failed");
    assert_eq!(events[0]["url"], format!("ws://{closed}/app/chat"));
}

#[test]
fn bad_bounds_and_an_out_that_is_not_a_regular_file_are_refused_before_listening() {
    let dir = scratch("record-refused");
    let out = dir.join("s.jsonl");
    let base = ["record", "--listen", "127.0.0.1:0", "--upstream", "ws://127.0.0.1:9/"];
    assert_usage_error(
        &[&base[..], &["--out", "/dev/null"]].concat(),
        "--out: /dev/null is not a regular file",
    );
    assert_usage_error(&[&base[..], &["--out", arg(&dir)]].concat(), "--out");
    for (flag, value) in [
        ("--max-connections", "0"),
        ("--max-messages", "100001"),
        ("--max-message", "2MiB"),
        ("--max-bytes", "1GiB"),
    ] {
        assert_usage_error(&[&base[..], &["--out", arg(&out), flag, value]].concat(), flag);
    }
    assert_usage_error(&["record", "--upstream", "http://x/", "--out", arg(&out)], "ws://");
    // 1,000 connections at once need more open files than a hard limit of 1,000.
    let limited = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -n 1000 && exec {} \"$@\"", env!("CARGO_BIN_EXE_wsbench")))
        .args([
            "sh",
            "record",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            "ws://127.0.0.1:9/",
            "--out",
            arg(&out),
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&limited.stderr);
    assert_eq!(limited.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--max-connections: 1,000 connections at once need 3,032 open files"),
        "{stderr}"
    );
    assert!(!out.exists(), "nothing was written");
}

/// An upgrade request for `/`, as a client without options sends it.
const PLAIN_UPGRADE: &str = "GET / HTTP/1.1\r\nHost: proxy\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
    Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";

/// One whole frame as a client sends it (masked).
fn masked(opcode: wsbench_proto::OpCode, payload: &[u8]) -> Vec<u8> {
    let mut frame = Vec::new();
    wsbench_proto::write_frame(&mut frame, true, opcode, Some([7, 1, 7, 1]), payload);
    frame
}

/// Sends a masked text frame `hello` on `stream` and reads the 7 bytes of its echo.
fn echo_hello(stream: &mut TcpStream) -> [u8; 7] {
    stream.write_all(&masked(wsbench_proto::OpCode::Text, b"hello")).unwrap();
    let mut echo = [0u8; 7];
    stream.read_exact(&mut echo).unwrap();
    echo
}

/// Sends `request` (an upgrade) to `url`'s address; the answer's head and the stream.
fn upgrade(url: &str, request: &str) -> (String, TcpStream) {
    let mut stream = TcpStream::connect(url.trim_start_matches("ws://")).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap() == 1 {
        head.push(byte[0]);
    }
    (String::from_utf8_lossy(&head).into_owned(), stream)
}

#[test]
fn the_upstream_answer_is_passed_on_and_secrets_kept_when_asked() {
    let dir = scratch("record-answer");
    let seen = dir.join("authorization.txt");
    let args = [
        "--bearer",
        "s3cret",
        "--subprotocol",
        "chat",
        "--record-header",
        "Authorization",
        "--record",
        arg(&seen),
    ];
    let Some(peer) = python_peer("auth_server.py", &args) else { return };
    let out = dir.join("answer.jsonl");
    let recorder = Recorder::start(&["--upstream", &peer.url, "--out", arg(&out), "--record-secrets"]);
    let request = |authorization: &str| {
        format!(
            "GET /room?token=t0ken HTTP/1.1\r\nHost: proxy\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: chat\r\n\
             Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n{authorization}\r\n"
        )
    };
    let (refused, _) = upgrade(&recorder.url, &request(""));
    assert!(refused.starts_with("HTTP/1.1 401"), "the upstream's own answer\n{refused}");
    let (head, mut stream) = upgrade(&recorder.url, &request("Authorization: Bearer s3cret\r\n"));
    assert!(head.starts_with("HTTP/1.1 101") && head.contains("Sec-WebSocket-Protocol: chat"), "{head}");
    assert_eq!(echo_hello(&mut stream), *b"\x81\x05hello");
    drop(stream);
    std::thread::sleep(Duration::from_millis(300));
    let (code, printed) = recorder.stop(libc::SIGINT);
    assert_eq!(code, Some(0), "{printed}");
    let events = events(&out);
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(events.iter().any(|e| e["event"] == "upstream_refused" && e["status"] == 401), "{text}");
    let open = events.iter().find(|e| e["event"] == "open").unwrap_or_else(|| panic!("{text}"));
    assert_eq!(open["subprotocol"], "chat", "{text}");
    assert_eq!(open["path"], "/room?token=t0ken", "kept with --record-secrets\n{text}");
    assert!(open["headers"].to_string().contains("Bearer s3cret"), "kept with --record-secrets\n{text}");
    let data: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e["event"] == "message")
        .map(|e| (e["dir"].as_str().unwrap(), e["data"].as_str().unwrap()))
        .collect();
    assert_eq!(data, [("send", "hello"), ("receive", "hello")], "{text}");
    assert_eq!(std::fs::read_to_string(&seen).unwrap().lines().last(), Some("Bearer s3cret"));
}

#[test]
fn a_permessage_deflate_offer_is_not_forwarded_so_frames_travel_and_are_recorded_plain() {
    // node `ws` with perMessageDeflate compresses what it sends from 1 KiB on when agreed.
    let Some(node) = crate::harness::NodeEchoServer::start_with(&["--deflate"]) else { return };
    let dir = scratch("record-deflate");
    let out = dir.join("deflate.jsonl");
    let recorder = Recorder::start(&["--upstream", &node.url, "--out", arg(&out)]);
    let offer = "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n\r\n";
    let (head, mut stream) =
        upgrade(&recorder.url, &PLAIN_UPGRADE.replace("\r\n\r\n", &format!("\r\n{offer}")));
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    assert!(
        !head.to_ascii_lowercase().contains("sec-websocket-extensions"),
        "no extension negotiated\n{head}"
    );
    let text = "a".repeat(2000);
    stream.write_all(&masked(wsbench_proto::OpCode::Text, text.as_bytes())).unwrap();
    let mut echo = vec![0u8; 4 + text.len()];
    stream.read_exact(&mut echo).unwrap();
    assert_eq!(echo[..4], [0x81, 126, 0x07, 0xd0], "the echo uncompressed (no RSV1), 2,000 bytes");
    drop(stream);
    std::thread::sleep(Duration::from_millis(300));
    let (code, printed) = recorder.stop(libc::SIGINT);
    assert_eq!(code, Some(0), "{printed}");
    let received: Vec<Value> = events(&out).into_iter().filter(|e| e["dir"] == "receive").collect();
    assert_eq!(received[0]["data"], text.as_str(), "recorded as sent");
}

/// A process's peak resident memory (`VmHWM`), bytes.
fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
}

#[test]
fn a_client_that_never_reads_is_pushed_back_and_the_proxy_memory_stays_bounded() {
    const PUSHED: usize = 256;
    let server = crate::support::Server::spawn(&[]);
    let dir = scratch("record-slow-reader");
    let out = dir.join("slow.jsonl");
    let recorder = Recorder::start(&["--upstream", &format!("ws://{}", server.addr), "--out", arg(&out)]);
    let (head, mut stream) = upgrade(&recorder.url, PLAIN_UPGRADE);
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    // 1 MiB binary messages, echoed by the server, never read: without push-back the proxy
    // would hold every echo.
    let frame = masked(wsbench_proto::OpCode::Binary, &[7u8; 1 << 20]);
    stream.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
    let pushed = (0..PUSHED).take_while(|_| stream.write_all(&frame).is_ok()).count();
    let peak = peak_rss(recorder.pid());
    drop(stream);
    let (code, printed) = recorder.stop(libc::SIGINT);
    assert_eq!(code, Some(0), "{printed}");
    eprintln!("pushed {pushed} MiB unread; the proxy's peak RSS {} MiB", peak >> 20);
    assert!(pushed >= 8, "the first messages went through ({pushed} MiB)");
    assert!(peak < 64 << 20, "the proxy held {} MiB after {pushed} MiB pushed", peak >> 20);
}

#[test]
fn connections_past_max_connections_are_answered_503_and_said_once() {
    let server = crate::support::Server::spawn(&[]);
    let dir = scratch("record-full");
    let out = dir.join("full.jsonl");
    let upstream = format!("ws://{}", server.addr);
    let recorder = Recorder::start(&["--upstream", &upstream, "--out", arg(&out), "--max-connections", "1"]);
    let (head, mut held) = upgrade(&recorder.url, PLAIN_UPGRADE);
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    for _ in 0..2 {
        let (refused, _) = upgrade(&recorder.url, PLAIN_UPGRADE);
        assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    }
    assert_eq!(echo_hello(&mut held), *b"\x81\x05hello", "the first connection is still forwarded");
    let (code, printed) = recorder.stop(libc::SIGINT);
    assert_eq!(code, Some(0), "{printed}");
    assert_eq!(printed.matches("connections at once (--max-connections)").count(), 1, "{printed}");
}
