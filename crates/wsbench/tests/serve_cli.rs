//! Command-line tests of `wsbench serve`: the real binary, driven over std `TcpStream`s with
//! hand-written frames, checking the contract a benchmark target must honour — the
//! `listening on` line, plain HTTP and bad upgrades, the raw TCP echo port, protocol-error
//! close codes, limits (`--max-message`, `--max-connections`, `--handshake-timeout`),
//! `--threads`, TLS, and a clean shutdown on SIGTERM/SIGINT.
//!
//! No third-party peer is needed (see `interop.rs` for those). Every socket has a read and
//! write timeout, so a misbehaving server fails a test instead of hanging it.

mod support;

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use support::{Server, shared_server};

/// Read/write timeout on every test socket.
const IO_TIMEOUT: Duration = Duration::from_secs(5);

/// The RFC 6455 §1.3 example key and its accept value.
const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";
const ACCEPT: &str = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";

const OP_CONT: u8 = 0x0;
const OP_TEXT: u8 = 0x1;
const OP_BINARY: u8 = 0x2;
const OP_CLOSE: u8 = 0x8;
const OP_PING: u8 = 0x9;
const OP_PONG: u8 = 0xA;

// ---------------------------------------------------------------------------------------------
// Tiny HTTP / WebSocket client.

fn connect(addr: SocketAddr) -> TcpStream {
    let stream =
        TcpStream::connect_timeout(&addr, IO_TIMEOUT).unwrap_or_else(|e| panic!("connect to {addr}: {e}"));
    stream.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    stream.set_write_timeout(Some(IO_TIMEOUT)).unwrap();
    stream.set_nodelay(true).unwrap();
    stream
}

#[derive(Debug)]
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// Reads one HTTP/1.1 response head byte by byte (so nothing after it is consumed), then a
/// body of `Content-Length` bytes, or up to EOF for a `Connection: close` response without
/// a length.
fn read_response(s: &mut impl Read) -> io::Result<Response> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if s.read(&mut byte)? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "connection closed inside the response head after {:?}",
                    String::from_utf8_lossy(&head)
                ),
            ));
        }
        head.push(byte[0]);
        assert!(head.len() < 16 * 1024, "response head over 16 KiB");
    }
    let head = String::from_utf8(head).expect("response head is UTF-8");
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap();
    let mut parts = status_line.splitn(3, ' ');
    assert_eq!(parts.next(), Some("HTTP/1.1"), "bad status line {status_line:?}");
    let status = parts
        .next()
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
    let headers: Vec<(String, String)> = lines
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (k, v) = l.split_once(':').unwrap_or_else(|| panic!("bad header {l:?}"));
            (k.trim().to_owned(), v.trim().to_owned())
        })
        .collect();
    let mut response = Response { status, headers, body: Vec::new() };
    if let Some(len) = response.header("content-length") {
        let len: usize = len.parse().expect("numeric Content-Length");
        response.body = vec![0; len];
        s.read_exact(&mut response.body)?;
    } else if response.header("connection").is_some_and(|v| v.eq_ignore_ascii_case("close")) {
        // No Content-Length: the body runs to the end of the connection.
        s.read_to_end(&mut response.body)?;
    }
    Ok(response)
}

fn upgrade_request(key: &str) -> String {
    format!(
        "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
}

/// Performs the opening handshake on `s` and checks the 101 response.
fn handshake(s: &mut (impl Read + Write)) {
    s.write_all(upgrade_request(KEY).as_bytes()).unwrap();
    let response = read_response(s).expect("read upgrade response");
    assert_eq!(response.status, 101, "upgrade refused: {response:?}");
    assert_eq!(response.header("sec-websocket-accept"), Some(ACCEPT), "{response:?}");
    assert!(response.header("upgrade").is_some_and(|v| v.eq_ignore_ascii_case("websocket")), "{response:?}");
}

fn ws_connect(addr: SocketAddr) -> TcpStream {
    let mut s = connect(addr);
    handshake(&mut s);
    s
}

/// Encodes one client frame; `masked: false` produces an (illegal) unmasked client frame.
fn frame(fin: bool, opcode: u8, payload: &[u8], masked: bool) -> Vec<u8> {
    let mut out = vec![if fin { 0x80 } else { 0 } | opcode];
    let mask_bit = if masked { 0x80 } else { 0 };
    match payload.len() {
        n if n < 126 => out.push(mask_bit | n as u8),
        n if n <= 0xFFFF => {
            out.push(mask_bit | 126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(mask_bit | 127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    if masked {
        let key = [0x37, 0xfa, 0x21, 0x3d];
        out.extend_from_slice(&key);
        out.extend(payload.iter().enumerate().map(|(i, b)| b ^ key[i % 4]));
    } else {
        out.extend_from_slice(payload);
    }
    out
}

fn send(s: &mut impl Write, fin: bool, opcode: u8, payload: &[u8]) {
    s.write_all(&frame(fin, opcode, payload, true)).expect("write frame");
}

#[derive(Debug)]
struct Frame {
    fin: bool,
    opcode: u8,
    payload: Vec<u8>,
}

/// Reads one server frame, checking that it is unmasked and has no RSV bits.
fn read_frame(s: &mut impl Read) -> io::Result<Frame> {
    let mut h = [0u8; 2];
    s.read_exact(&mut h)?;
    assert_eq!(h[0] & 0x70, 0, "server frame has RSV bits set: {h:02x?}");
    assert_eq!(h[1] & 0x80, 0, "server frame is masked: {h:02x?}");
    let len = match h[1] & 0x7f {
        126 => {
            let mut b = [0u8; 2];
            s.read_exact(&mut b)?;
            u16::from_be_bytes(b) as usize
        }
        127 => {
            let mut b = [0u8; 8];
            s.read_exact(&mut b)?;
            usize::try_from(u64::from_be_bytes(b)).unwrap()
        }
        n => n as usize,
    };
    let mut payload = vec![0; len];
    s.read_exact(&mut payload)?;
    Ok(Frame { fin: h[0] & 0x80 != 0, opcode: h[0] & 0x0f, payload })
}

/// Reads the next message (reassembling continuation frames) or control frame.
fn read_message(s: &mut impl Read) -> (u8, Vec<u8>) {
    let first = read_frame(s).expect("read frame from server");
    if first.opcode >= 0x8 || first.fin {
        return (first.opcode, first.payload);
    }
    let mut payload = first.payload;
    loop {
        let next = read_frame(s).expect("read continuation frame from server");
        assert_eq!(next.opcode, OP_CONT, "expected a continuation frame, got {next:?}");
        payload.extend_from_slice(&next.payload);
        if next.fin {
            return (first.opcode, payload);
        }
    }
}

fn echo(s: &mut (impl Read + Write), opcode: u8, payload: &[u8]) {
    send(s, true, opcode, payload);
    let (op, got) = read_message(s);
    assert_eq!(op, opcode, "echo came back with another opcode");
    assert!(got == payload, "echo of {} bytes differs", payload.len());
}

/// Expects a close frame with `code` as the next frame.
fn expect_close(s: &mut (impl Read + Write), code: u16) {
    let (op, payload) = read_message(s);
    assert_eq!(
        op,
        OP_CLOSE,
        "expected close {code}, got opcode {op:#x} payload {:?}",
        String::from_utf8_lossy(&payload)
    );
    assert!(payload.len() >= 2, "close frame without a code");
    let got = u16::from_be_bytes([payload[0], payload[1]]);
    let reason = String::from_utf8_lossy(&payload[2..]);
    assert_eq!(got, code, "close code (reason {reason:?})");
}

/// Answers the server's close and checks that it then closes the TCP connection.
fn finish_close(s: &mut TcpStream) {
    // The server may already have closed its side; a failed write is fine.
    let _ = s.write_all(&frame(true, OP_CLOSE, &1000u16.to_be_bytes(), true));
    expect_eof(s, "after the closing handshake");
}

/// Asserts that the peer closes the connection (EOF or reset) before the read timeout.
fn expect_eof(s: &mut impl Read, when: &str) {
    let mut buf = [0u8; 4096];
    match s.read(&mut buf) {
        Ok(0) => {}
        Ok(n) => {
            panic!("{when}: expected the connection to close, got {n} more bytes {:02x?}", &buf[..n.min(32)])
        }
        Err(e) if matches!(e.kind(), io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionAborted) => {}
        Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
            panic!("{when}: connection still open after {IO_TIMEOUT:?}, expected it closed")
        }
        Err(e) => panic!("{when}: read failed: {e}"),
    }
}

fn wait_exit(server: &mut Server, within: Duration) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            return status;
        }
        assert!(start.elapsed() < within, "server still running {within:?} after the signal");
        thread::sleep(Duration::from_millis(10));
    }
}

fn signal(server: &Server, sig: libc::c_int) {
    // SAFETY: plain kill(2) on our own child's pid.
    let rc = unsafe { libc::kill(server.pid() as libc::pid_t, sig) };
    assert_eq!(rc, 0, "kill({}, {sig})", server.pid());
}

/// Expects the 1001 close frame that a shutdown sends; if the connection ends without one,
/// says how the server exited (e.g. killed by the signal because no handler was installed).
fn expect_shutdown_close(server: &mut Server, s: &mut TcpStream, sig: &str) {
    match read_frame(s) {
        Ok(f) if f.opcode == OP_CLOSE && f.payload.len() >= 2 => {
            let code = u16::from_be_bytes([f.payload[0], f.payload[1]]);
            assert_eq!(
                code,
                1001,
                "close code after {sig} (reason {:?})",
                String::from_utf8_lossy(&f.payload[2..])
            );
        }
        Ok(f) => panic!("expected close 1001 after {sig}, got {f:?}"),
        Err(e) => {
            thread::sleep(Duration::from_millis(200));
            panic!(
                "no close frame after {sig} ({e}); server exit status: {}",
                server.child.try_wait().unwrap().map_or("still running".to_owned(), |st| st.to_string())
            )
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The listening line.

#[test]
fn prints_listening_line_with_port_0() {
    let server = Server::spawn(&[]);
    assert_eq!(server.urls.len(), 1, "urls: {:?}", server.urls);
    assert!(server.urls[0].starts_with("ws://127.0.0.1:"), "{:?}", server.urls);
    assert_ne!(server.addr.port(), 0, "printed port 0 instead of the bound port");
    // The printed port is the one actually listening.
    let mut s = ws_connect(server.addr);
    echo(&mut s, OP_TEXT, b"hello");
}

#[test]
fn tcp_port_0_prints_a_second_tcp_url() {
    let server = Server::spawn(&["--tcp-port", "0"]);
    assert_eq!(server.urls.len(), 2, "urls: {:?}", server.urls);
    assert!(server.urls[0].starts_with("ws://"), "{:?}", server.urls);
    assert!(server.urls[1].starts_with("tcp://127.0.0.1:"), "{:?}", server.urls);
    let tcp = server.addr_for("tcp");
    assert_ne!(tcp.port(), 0);
    assert_ne!(tcp.port(), server.addr.port());
}

// ---------------------------------------------------------------------------------------------
// Plain HTTP and the opening handshake.

#[test]
fn http_get_returns_200_keep_alive() {
    let addr = shared_server(&[]);
    let mut s = connect(addr);
    for i in 0..3 {
        s.write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
        let response =
            read_response(&mut s).unwrap_or_else(|e| panic!("request {i} on the same connection: {e}"));
        assert_eq!(response.status, 200, "request {i}: {response:?}");
        assert!(response.header("content-length").is_some(), "request {i}: no Content-Length: {response:?}");
        assert!(!response.body.is_empty(), "request {i}: empty body");
    }
}

#[test]
fn http_get_pipelined_requests_all_answered() {
    let addr = shared_server(&[]);
    let mut s = connect(addr);
    s.write_all(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    for i in 0..2 {
        let response = read_response(&mut s).unwrap_or_else(|e| panic!("response {i}: {e}"));
        assert_eq!(response.status, 200, "response {i}: {response:?}");
    }
}

fn assert_bad_upgrade(request: &str, what: &str) {
    let addr = shared_server(&[]);
    let mut s = connect(addr);
    s.write_all(request.as_bytes()).unwrap();
    let response = read_response(&mut s).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(response.status, 400, "{what}: {response:?}");
    assert!(!response.body.is_empty(), "{what}: 400 without a reason in the body");
    println!("{what}: 400 {:?}", String::from_utf8_lossy(&response.body));
    expect_eof(&mut s, &format!("{what}: after the 400"));
}

#[test]
fn bad_upgrade_gets_400_with_reason() {
    assert_bad_upgrade(
        "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Version: 13\r\n\r\n",
        "missing Sec-WebSocket-Key",
    );
    assert_bad_upgrade(
        &format!(
            "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: {KEY}\r\nSec-WebSocket-Version: 12\r\n\r\n"
        ),
        "Sec-WebSocket-Version 12",
    );
}

#[test]
fn handshake_accepts_header_case_and_connection_list() {
    let addr = shared_server(&[]);
    let mut s = connect(addr);
    let request = format!(
        "GET /chat?x=1 HTTP/1.1\r\nhost: 127.0.0.1\r\nupgrade: WebSocket\r\n\
         connection: keep-alive, Upgrade\r\nsec-websocket-key: {KEY}\r\n\
         sec-websocket-version: 13\r\n\r\n"
    );
    s.write_all(request.as_bytes()).unwrap();
    let response = read_response(&mut s).unwrap();
    assert_eq!(response.status, 101, "{response:?}");
    assert_eq!(response.header("sec-websocket-accept"), Some(ACCEPT));
    echo(&mut s, OP_TEXT, b"ok");
}

// ---------------------------------------------------------------------------------------------
// Echo and control frames.

#[test]
fn echoes_text_binary_and_fragmented_messages() {
    let addr = shared_server(&[]);
    let mut s = ws_connect(addr);
    echo(&mut s, OP_TEXT, "héllo 🦀".as_bytes());
    echo(&mut s, OP_BINARY, &[0, 1, 2, 255]);
    echo(&mut s, OP_TEXT, b"");
    let medium: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    echo(&mut s, OP_BINARY, &medium[..300]); // 16-bit extended length
    echo(&mut s, OP_BINARY, &medium); // 64-bit extended length

    // Three fragments, with a ping interleaved, come back as one message after the pong.
    send(&mut s, false, OP_TEXT, b"frag");
    send(&mut s, false, OP_CONT, b"men");
    send(&mut s, true, OP_PING, b"mid");
    send(&mut s, true, OP_CONT, b"ted");
    let (op, payload) = read_message(&mut s);
    assert_eq!((op, payload.as_slice()), (OP_PONG, &b"mid"[..]));
    let (op, payload) = read_message(&mut s);
    assert_eq!((op, payload.as_slice()), (OP_TEXT, &b"fragmented"[..]));
}

#[test]
fn ping_gets_pong_with_same_payload() {
    let addr = shared_server(&[]);
    let mut s = ws_connect(addr);
    send(&mut s, true, OP_PING, b"are you there?");
    let (op, payload) = read_message(&mut s);
    assert_eq!(op, OP_PONG);
    assert_eq!(payload, b"are you there?");
    send(&mut s, true, OP_PING, b"");
    let (op, payload) = read_message(&mut s);
    assert_eq!((op, payload.len()), (OP_PONG, 0));
}

#[test]
fn close_is_echoed_with_same_code() {
    let addr = shared_server(&[]);
    for code in [1000u16, 1001, 4000] {
        let mut s = ws_connect(addr);
        let mut payload = code.to_be_bytes().to_vec();
        payload.extend_from_slice(b"bye");
        send(&mut s, true, OP_CLOSE, &payload);
        expect_close(&mut s, code);
        expect_eof(&mut s, "after the server's close reply");
    }
}

// ---------------------------------------------------------------------------------------------
// Protocol errors.

#[test]
fn unmasked_client_frame_gets_close_1002() {
    let addr = shared_server(&[]);
    let mut s = ws_connect(addr);
    s.write_all(&frame(true, OP_TEXT, b"hi", false)).unwrap();
    expect_close(&mut s, 1002);
    finish_close(&mut s);
}

#[test]
fn reserved_opcode_gets_close_1002() {
    let addr = shared_server(&[]);
    let mut s = ws_connect(addr);
    send(&mut s, true, 0x3, b"?");
    expect_close(&mut s, 1002);
    finish_close(&mut s);
}

#[test]
fn invalid_utf8_text_gets_close_1007() {
    let addr = shared_server(&[]);
    let mut s = ws_connect(addr);
    send(&mut s, true, OP_TEXT, &[b'o', b'k', 0xff, 0xfe]);
    expect_close(&mut s, 1007);
    finish_close(&mut s);
}

#[test]
fn message_over_max_message_gets_close_1009() {
    let addr = shared_server(&["--max-message", "1024"]);
    let mut s = ws_connect(addr);
    echo(&mut s, OP_BINARY, &[7u8; 1000]);
    send(&mut s, true, OP_BINARY, &[7u8; 2000]);
    expect_close(&mut s, 1009);
    finish_close(&mut s);
}

#[test]
fn fragmented_message_over_max_message_gets_close_1009() {
    let addr = shared_server(&["--max-message", "1024"]);
    let mut s = ws_connect(addr);
    // Each fragment is under the limit; the reassembled message is not.
    send(&mut s, false, OP_BINARY, &[1u8; 600]);
    send(&mut s, true, OP_CONT, &[2u8; 600]);
    expect_close(&mut s, 1009);
    finish_close(&mut s);
}

// ---------------------------------------------------------------------------------------------
// Raw TCP echo.

#[test]
fn raw_tcp_port_echoes_bytes() {
    let server = Server::spawn(&["--tcp-port", "0"]);
    let mut s = connect(server.addr_for("tcp"));
    s.write_all(b"hello, raw tcp\n").unwrap();
    let mut got = [0u8; 15];
    s.read_exact(&mut got).unwrap();
    assert_eq!(&got, b"hello, raw tcp\n");

    // A larger burst, written from another thread so neither side's buffers can deadlock.
    let big: Vec<u8> = (0..1_000_000u32).map(|i| (i * 31 % 251) as u8).collect();
    let mut writer = s.try_clone().unwrap();
    let to_send = big.clone();
    let w = thread::spawn(move || writer.write_all(&to_send));
    let mut echoed = vec![0u8; big.len()];
    s.read_exact(&mut echoed).unwrap();
    w.join().unwrap().unwrap();
    assert!(echoed == big, "raw TCP echo of 1 MB differs");
}

// ---------------------------------------------------------------------------------------------
// Shutdown.

#[test]
fn sigterm_closes_connections_with_1001_and_exits_0_within_2s() {
    let mut server = Server::spawn(&[]);
    let mut conns: Vec<TcpStream> = (0..3).map(|_| ws_connect(server.addr)).collect();
    for s in &mut conns {
        echo(s, OP_TEXT, b"before shutdown");
    }
    let start = Instant::now();
    signal(&server, libc::SIGTERM);
    for (i, s) in conns.iter_mut().enumerate() {
        expect_shutdown_close(&mut server, s, "SIGTERM");
        // Two clients answer the close; the last one never does, which must not delay exit.
        if i < 2 {
            let _ = s.write_all(&frame(true, OP_CLOSE, &1001u16.to_be_bytes(), true));
        }
    }
    let status = wait_exit(&mut server, Duration::from_secs(2));
    println!("exited {status} {:?} after SIGTERM", start.elapsed());
    assert_eq!(status.code(), Some(0), "exit status after SIGTERM: {status}");
    for s in &mut conns {
        expect_eof(s, "after the server exited");
    }
}

#[test]
fn sigint_exits_0() {
    let mut server = Server::spawn(&[]);
    let mut s = ws_connect(server.addr);
    echo(&mut s, OP_TEXT, b"before shutdown");
    let start = Instant::now();
    signal(&server, libc::SIGINT);
    expect_shutdown_close(&mut server, &mut s, "SIGINT");
    let status = wait_exit(&mut server, Duration::from_secs(2));
    println!("exited {status} {:?} after SIGINT", start.elapsed());
    assert_eq!(status.code(), Some(0), "exit status after SIGINT: {status}");
}

/// The counts a benchmark sets beside a client's own: SIGUSR1 prints them without stopping
/// the server; only whole text and binary messages count (not pings or closes).
#[test]
fn sigusr1_prints_the_echoed_messages_and_open_connections() {
    let mut server = Server::spawn(&[]);
    let mut a = ws_connect(server.addr);
    let mut b = ws_connect(server.addr);
    for _ in 0..3 {
        echo(&mut a, OP_TEXT, b"twenty bytes of text");
    }
    echo(&mut b, OP_BINARY, &[7; 20]);
    send(&mut b, false, OP_TEXT, b"in two ");
    send(&mut b, true, OP_CONT, b"pieces");
    assert_eq!(read_message(&mut b), (OP_TEXT, b"in two pieces".to_vec()));
    send(&mut b, true, OP_PING, b"not counted");
    assert_eq!(read_message(&mut b).0, OP_PONG);
    let counts = |server: &mut Server| {
        signal(server, libc::SIGUSR1);
        server.lines.recv_timeout(IO_TIMEOUT).expect("a line after SIGUSR1")
    };
    assert_eq!(counts(&mut server), "echoed 5 messages, 2 connections open");
    echo(&mut a, OP_BINARY, b"after the first look");
    assert_eq!(counts(&mut server), "echoed 6 messages, 2 connections open");
    signal(&server, libc::SIGTERM);
    let last = server.lines.recv_timeout(IO_TIMEOUT).expect("a line when it stops");
    assert!(last.starts_with("echoed 6 messages, "), "last line: {last}");
    assert_eq!(wait_exit(&mut server, Duration::from_secs(2)).code(), Some(0));
}

#[test]
fn sigterm_with_no_connections_exits_0() {
    let mut server = Server::spawn(&["--tcp-port", "0"]);
    signal(&server, libc::SIGTERM);
    let status = wait_exit(&mut server, Duration::from_secs(2));
    assert_eq!(status.code(), Some(0), "exit status after SIGTERM: {status}");
}

// ---------------------------------------------------------------------------------------------
// Limits and threads.

#[test]
fn handshake_timeout_closes_silent_connection() {
    let addr = shared_server(&["--handshake-timeout", "1s"]);
    let start = Instant::now();
    let mut silent = connect(addr);
    let mut partial = connect(addr);
    partial.write_all(b"GET / HTTP/1.1\r\nUpgrade: websocket\r\n").unwrap();
    expect_eof(&mut silent, "silent connection");
    let silent_after = start.elapsed();
    expect_eof(&mut partial, "connection with a half-sent request");
    println!("silent closed after {silent_after:?}, partial after {:?}", start.elapsed());
    assert!(
        silent_after >= Duration::from_millis(800),
        "closed after {silent_after:?}, before the 1 s handshake timeout"
    );
}

#[test]
fn completed_handshake_is_not_subject_to_handshake_timeout() {
    let addr = shared_server(&["--handshake-timeout", "1s"]);
    let mut s = ws_connect(addr);
    thread::sleep(Duration::from_millis(1800));
    echo(&mut s, OP_TEXT, b"still here");
}

#[test]
fn threads_4_serves_many_connections() {
    let server = Server::spawn(&["--threads", "4"]);
    let addr = server.addr;
    // 4 client threads each hold 50 connections open at once, then echo once on each.
    let clients: Vec<_> = (0..4)
        .map(|t| {
            thread::spawn(move || {
                let mut conns: Vec<TcpStream> = (0..50).map(|_| ws_connect(addr)).collect();
                for (i, s) in conns.iter_mut().enumerate() {
                    echo(s, OP_TEXT, format!("thread {t} connection {i}").as_bytes());
                }
                conns.len()
            })
        })
        .collect();
    let total: usize = clients.into_iter().map(|c| c.join().unwrap()).sum();
    assert_eq!(total, 200);
}

/// Whether a new connection is refused: closed, reset, or answered with a non-101 status.
fn refused(addr: SocketAddr) -> Result<String, String> {
    let mut s = match TcpStream::connect_timeout(&addr, IO_TIMEOUT) {
        Ok(s) => s,
        Err(e) => return Ok(format!("connect failed: {e}")),
    };
    s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    s.set_write_timeout(Some(IO_TIMEOUT)).unwrap();
    if let Err(e) = s.write_all(upgrade_request(KEY).as_bytes()) {
        return Ok(format!("write failed: {e}"));
    }
    match read_response(&mut s) {
        Ok(r) if r.status == 101 => Err("upgraded (101)".to_owned()),
        Ok(r) => Ok(format!("status {}", r.status)),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::TimedOut => {
            Err(format!("no answer within {IO_TIMEOUT:?}"))
        }
        Err(e) => Ok(format!("closed: {e}")),
    }
}

#[test]
fn max_connections_refuses_extra() {
    let server = Server::spawn(&["--max-connections", "10"]);
    let mut conns: Vec<TcpStream> = (0..10).map(|_| ws_connect(server.addr)).collect();
    for s in &mut conns {
        echo(s, OP_TEXT, b"within the limit");
    }
    match refused(server.addr) {
        Ok(how) => println!("11th connection refused: {how}"),
        Err(what) => panic!("11th connection with --max-connections 10 was not refused: {what}"),
    }
    // The open ones keep working.
    echo(&mut conns[0], OP_TEXT, b"still served");

    // Closing one frees its slot.
    let mut first = conns.remove(0);
    send(&mut first, true, OP_CLOSE, &1000u16.to_be_bytes());
    expect_close(&mut first, 1000);
    expect_eof(&mut first, "after closing");
    drop(first);
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let mut s = connect(server.addr);
        s.write_all(upgrade_request(KEY).as_bytes()).unwrap();
        match read_response(&mut s) {
            Ok(r) if r.status == 101 => {
                echo(&mut s, OP_TEXT, b"took the freed slot");
                break;
            }
            other => {
                assert!(Instant::now() < deadline, "slot not freed 3 s after a connection closed: {other:?}")
            }
        }
        thread::sleep(Duration::from_millis(100));
    }
}

// ---------------------------------------------------------------------------------------------
// TLS.

/// Accepts any server certificate: `serve --tls` makes a fresh self-signed one each run.
#[derive(Debug)]
struct AcceptAnyCert(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AcceptAnyCert {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

fn tls_connect(addr: SocketAddr) -> rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AcceptAnyCert(provider)))
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    rustls::StreamOwned::new(conn, connect(addr))
}

#[test]
fn tls_serves_https_get() {
    let server = Server::spawn(&["--tls"]);
    assert!(server.urls[0].starts_with("wss://127.0.0.1:"), "`serve --tls` printed {:?}", server.urls);
    let mut s = tls_connect(server.addr);
    for i in 0..2 {
        s.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .unwrap_or_else(|e| panic!("TLS request {i}: {e}"));
        let response = read_response(&mut s).unwrap_or_else(|e| panic!("TLS response {i}: {e}"));
        assert_eq!(response.status, 200, "https request {i}: {response:?}");
    }
}

#[test]
fn tls_upgrades_and_echoes() {
    let server = Server::spawn(&["--tls"]);
    let mut s = tls_connect(server.addr);
    handshake(&mut s);
    echo(&mut s, OP_TEXT, "över TLS".as_bytes());
    let big: Vec<u8> = (0..200_000u32).map(|i| i as u8).collect();
    echo(&mut s, OP_BINARY, &big);
    send(&mut s, true, OP_CLOSE, &1000u16.to_be_bytes());
    expect_close(&mut s, 1000);
}

/// Regression: the upgrade, a message and the client's FIN arriving in one burst. The FIN
/// raises no further readiness event, so the server must not stop at the short read that
/// returned the message: it must echo, see the end of stream, and close its side.
#[test]
fn data_and_fin_in_one_burst_are_answered_and_closed() {
    let server = Server::spawn(&[]);
    let mut s = connect(server.addr);
    let mut burst = upgrade_request("dGhlIHNhbXBsZSBub25jZQ==").into_bytes();
    burst.extend(frame(true, 0x1, b"last words", true));
    s.write_all(&burst).unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    let response = read_response(&mut s).unwrap();
    assert_eq!(response.status, 101);
    assert_eq!(read_message(&mut s), (0x1, b"last words".to_vec()));
    expect_eof(&mut s, "after the client's FIN");
}
