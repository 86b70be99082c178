//! Abuse suite for `wsbench serve`: one test per attack a hostile client can make, each run
//! against a real server process (`wsbench serve --port 0`, small limits), plus regression
//! tests re-creating known CVEs of peer WebSocket libraries against wsbench's server and its
//! load client (`wsbench run echo` against a malicious server thread).
//!
//! The echo server is a benchmark target that may be exposed to untrusted peers; a single
//! abusive connection must not take it down or starve other connections. So every attack
//! test asserts four things: the offending connection is closed with the right close code or
//! HTTP status (the answer to the offence itself, not to a timer); a healthy connection opened before the attack still
//! echoes after it; the server's resident memory stays under [`RSS_CEILING_KIB`]; and the
//! server process is still alive (nothing panicked). Every socket read has a timeout.

mod support;

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use support::Server;
use wsbench_proto::handshake::accept_key;

/// Every blocking read or write in this suite gives up after this long.
const IO_TIMEOUT: Duration = Duration::from_secs(5);
/// The server's resident memory must stay below this through every attack.
const RSS_CEILING_KIB: u64 = 64 * 1024;
/// The limits the attacked server runs with.
const SERVER_ARGS: &[&str] = &["--handshake-timeout", "2s", "--max-message", "1MiB"];
const MAX_MESSAGE: usize = 1024 * 1024;

const UPGRADE: &str = "GET / HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";

const TEXT: u8 = 0x1;
const BINARY: u8 = 0x2;
const CONTINUATION: u8 = 0x0;
const CLOSE: u8 = 0x8;
const PING: u8 = 0x9;
const PONG: u8 = 0xA;

// ---------------------------------------------------------------------------------------
// A minimal raw client: frames are built by hand so the suite can send anything at all.
// ---------------------------------------------------------------------------------------

fn connect(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect_timeout(&addr, IO_TIMEOUT).expect("connect to the server");
    stream.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    stream.set_write_timeout(Some(IO_TIMEOUT)).unwrap();
    stream.set_nodelay(true).unwrap();
    stream
}

/// Reads an HTTP response head (through the blank line) one byte at a time, so no frame
/// bytes after it are swallowed.
fn read_http_head(stream: &mut TcpStream) -> io::Result<String> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte)? == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        head.push(byte[0]);
        assert!(head.len() < 64 * 1024, "response head too long");
    }
    Ok(String::from_utf8_lossy(&head).into_owned())
}

fn status_of(head: &str) -> u16 {
    head.get(9..12).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("bad status line: {head:?}"))
}

/// Connects and completes the opening handshake.
fn ws_connect(addr: SocketAddr) -> TcpStream {
    let mut stream = connect(addr);
    stream.write_all(UPGRADE.as_bytes()).unwrap();
    let head = read_http_head(&mut stream).expect("handshake response");
    assert_eq!(status_of(&head), 101, "handshake refused: {head}");
    stream
}

/// One frame with any header bits; `len` overrides the announced payload length.
fn frame_with(fin: bool, opcode: u8, payload: &[u8], mask: bool, len: Option<u64>) -> Vec<u8> {
    const KEY: [u8; 4] = [0x37, 0xFA, 0x21, 0x3D];
    let len = len.unwrap_or(payload.len() as u64);
    let mask_bit = if mask { 0x80 } else { 0 };
    let mut out = vec![if fin { 0x80 } else { 0 } | opcode];
    if len < 126 {
        out.push(mask_bit | len as u8);
    } else if len <= u64::from(u16::MAX) {
        out.push(mask_bit | 126);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(mask_bit | 127);
        out.extend_from_slice(&len.to_be_bytes());
    }
    if mask {
        out.extend_from_slice(&KEY);
        out.extend(payload.iter().enumerate().map(|(i, b)| b ^ KEY[i % 4]));
    } else {
        out.extend_from_slice(payload);
    }
    out
}

/// A masked client frame.
fn frame(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
    frame_with(fin, opcode, payload, true, None)
}

/// A frame read back: (fin, opcode, payload). Server frames must be unmasked.
fn read_frame(stream: &mut TcpStream) -> io::Result<(bool, u8, Vec<u8>)> {
    read_frame_limited(stream, 16 * 1024 * 1024)
}

fn read_frame_limited(stream: &mut TcpStream, max: u64) -> io::Result<(bool, u8, Vec<u8>)> {
    let mut head = [0u8; 2];
    stream.read_exact(&mut head)?;
    let masked = head[1] & 0x80 != 0;
    let len = match head[1] & 0x7F {
        126 => {
            let mut ext = [0u8; 2];
            stream.read_exact(&mut ext)?;
            u64::from(u16::from_be_bytes(ext))
        }
        127 => {
            let mut ext = [0u8; 8];
            stream.read_exact(&mut ext)?;
            u64::from_be_bytes(ext)
        }
        n => u64::from(n),
    };
    let mut key = [0u8; 4];
    if masked {
        stream.read_exact(&mut key)?;
    }
    if len > max {
        return Err(io::Error::other(format!("peer announced a {len}-byte frame")));
    }
    let mut payload = vec![0u8; len as usize];
    stream.read_exact(&mut payload)?;
    if masked {
        payload.iter_mut().enumerate().for_each(|(i, b)| *b ^= key[i % 4]);
    }
    Ok((head[0] & 0x80 != 0, head[0] & 0x0F, payload))
}

/// Reads frames until a close frame (skipping pongs and echoes still in flight) and asserts
/// its code; then asserts the server ends the TCP connection. The server keeps no timer on
/// an open connection, and its close codes say why it closed: a close with `code`, arriving
/// before the read timeout while the attacker sends nothing more, is the server's answer to
/// the offending bytes themselves, not to bytes it waited for or to a timer, however long
/// a loaded machine took to deliver it.
fn expect_close(stream: &mut TcpStream, code: u16) {
    loop {
        let (fin, opcode, payload) = read_frame(stream).expect("a close frame");
        if opcode != CLOSE {
            continue;
        }
        assert!(fin, "close frames are not fragmented");
        assert!(payload.len() >= 2, "close frame without a code");
        let got = u16::from_be_bytes([payload[0], payload[1]]);
        assert_eq!(got, code, "close reason: {:?}", String::from_utf8_lossy(&payload[2..]));
        break;
    }
    assert_server_hangs_up(stream);
}

/// CPU seconds (user + system) the process has used so far: what a parser's cost shows in,
/// whatever else loads the machine.
fn cpu_seconds(pid: u32) -> f64 {
    wsbench::probe::sample(&[pid], 0).expect("sample the server's CPU time").cpu_seconds
}

/// The server ends the connection (EOF or reset) within the read timeout; any bytes still
/// arriving are discarded.
fn assert_server_hangs_up(stream: &mut TcpStream) {
    let mut sink = [0u8; 4096];
    loop {
        match stream.read(&mut sink) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e)
                if matches!(e.kind(), io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionAborted) =>
            {
                return;
            }
            Err(e) => panic!("the server did not end the connection: {e}"),
        }
    }
}

/// Sends one text message and checks it comes back unchanged.
fn assert_echoes(stream: &mut TcpStream, text: &str) {
    stream.write_all(&frame(true, TEXT, text.as_bytes())).expect("send to the healthy connection");
    let (fin, opcode, payload) = read_frame(stream).expect("echo on the healthy connection");
    assert!(fin && opcode == TEXT && payload == text.as_bytes(), "bad echo: {opcode} {payload:?}");
}

/// Resident memory of a process, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read /proc/PID/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/PID/status")
}

/// The checks every attack ends with: alive, memory bounded, the healthy client served.
fn assert_server_healthy(child: &mut Child, healthy: &mut TcpStream, attack: &str) {
    assert!(child.try_wait().unwrap().is_none(), "the server exited during the {attack} attack");
    let rss = rss_kib(child.id());
    assert!(rss < RSS_CEILING_KIB, "server RSS {rss} KiB after the {attack} attack");
    assert_echoes(healthy, &format!("still here after {attack}"));
    // A new connection is served too.
    let mut fresh = ws_connect(healthy.peer_addr().unwrap());
    assert_echoes(&mut fresh, "fresh");
}

/// Starts a server with the suite's limits and a healthy connection to it.
fn attacked_server() -> (Server, TcpStream) {
    let server = Server::spawn(SERVER_ARGS);
    let mut healthy = ws_connect(server.addr);
    assert_echoes(&mut healthy, "before");
    (server, healthy)
}

/// Writes `data` from a thread (so the test can read replies meanwhile), ignoring errors: the
/// server may close the connection before it has taken everything.
fn write_in_background(stream: &TcpStream, data: Vec<u8>) -> JoinHandle<()> {
    let mut writer = stream.try_clone().unwrap();
    thread::spawn(move || {
        let _ = writer.write_all(&data);
    })
}

fn read_status(stream: &mut TcpStream) -> u16 {
    status_of(&read_http_head(stream).expect("an HTTP response"))
}

// ---------------------------------------------------------------------------------------
// Attacks on the opening handshake.
// ---------------------------------------------------------------------------------------

#[test]
fn slowloris_handshake_is_cut_off_by_the_handshake_timeout() {
    let (mut server, mut healthy) = attacked_server();
    let mut slow = connect(server.addr);
    slow.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let request = b"GET / HTTP/1.1\r\nHost: localhost\r\nX-Slow: ";
    let started = Instant::now();
    let mut sent = 0;
    let closed_after = loop {
        assert!(started.elapsed() < Duration::from_secs(6), "slowloris connection still open after 6 s");
        let byte = request.get(sent).copied().unwrap_or(b'a');
        if slow.write_all(&[byte]).is_err() {
            break started.elapsed();
        }
        sent += 1;
        // The read doubles as the 200 ms pause between bytes.
        let mut buf = [0u8; 64];
        match slow.read(&mut buf) {
            Ok(0) => break started.elapsed(),
            Ok(n) => panic!("the server answered an unfinished request: {:?}", &buf[..n]),
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {}
            Err(_) => break started.elapsed(),
        }
    };
    assert!(
        (Duration::from_millis(1500)..Duration::from_secs(4)).contains(&closed_after),
        "closed after {closed_after:?}, expected the 2 s handshake timeout"
    );
    assert_server_healthy(&mut server.child, &mut healthy, "slowloris");
}

#[test]
fn one_megabyte_request_header_gets_431() {
    let (mut server, mut healthy) = attacked_server();
    let mut attacker = connect(server.addr);
    let mut request = b"GET / HTTP/1.1\r\nHost: localhost\r\nX-Big: ".to_vec();
    request.resize(request.len() + 1024 * 1024, b'a');
    request.extend_from_slice(b"\r\n\r\n");
    let writer = write_in_background(&attacker, request);
    assert_eq!(read_status(&mut attacker), 431);
    assert_server_hangs_up(&mut attacker);
    writer.join().unwrap();
    assert_server_healthy(&mut server.child, &mut healthy, "1 MB header");
}

#[test]
fn ten_thousand_headers_get_431() {
    let (mut server, mut healthy) = attacked_server();
    let mut attacker = connect(server.addr);
    let mut request = UPGRADE.strip_suffix("\r\n").unwrap().to_owned();
    for i in 0..10_000 {
        request.push_str(&format!("X-H{i}: v\r\n"));
    }
    request.push_str("\r\n");
    let writer = write_in_background(&attacker, request.into_bytes());
    let status = read_status(&mut attacker);
    assert!(status == 431 || status == 400, "10,000 headers answered with {status}");
    assert_server_hangs_up(&mut attacker);
    writer.join().unwrap();
    assert_server_healthy(&mut server.child, &mut healthy, "10,000 headers");
}

// ---------------------------------------------------------------------------------------
// Attacks with frames.
// ---------------------------------------------------------------------------------------

#[test]
fn frame_announcing_2_pow_63_bytes_gets_1009_before_any_payload() {
    let (mut server, mut healthy) = attacked_server();
    let mut attacker = ws_connect(server.addr);
    // Only the header: the close must come without waiting for payload.
    attacker.write_all(&frame_with(true, BINARY, &[], true, Some(i64::MAX as u64))).unwrap();
    expect_close(&mut attacker, 1009);
    assert_server_healthy(&mut server.child, &mut healthy, "2^63-1 length");
}

#[test]
fn message_just_over_max_message_gets_1009() {
    let (mut server, mut healthy) = attacked_server();
    let mut attacker = ws_connect(server.addr);
    let writer = write_in_background(&attacker, frame(true, BINARY, &vec![7u8; MAX_MESSAGE + 1]));
    expect_close(&mut attacker, 1009);
    writer.join().unwrap();
    // A message exactly at the limit is still echoed.
    let mut at_limit = ws_connect(server.addr);
    let writer = write_in_background(&at_limit, frame(true, BINARY, &vec![7u8; MAX_MESSAGE]));
    let (fin, opcode, payload) = read_frame(&mut at_limit).expect("echo of a message at the limit");
    assert!(fin && opcode == BINARY && payload.len() == MAX_MESSAGE && payload.iter().all(|&b| b == 7));
    writer.join().unwrap();
    assert_server_healthy(&mut server.child, &mut healthy, "max-message + 1");
}

/// 100,000 one-byte fragments of one 100,000-byte message are echoed as that message.
///
/// No fragment-count limit: the server keeps only the reassembled payload (bounded by
/// --max-message), never per-fragment state, and each fragment costs constant work, so a
/// flood of tiny fragments costs the attacker as much bandwidth as it costs the server CPU
/// (the same as a ping flood). A count limit would only break legitimate streaming senders.
#[test]
fn hundred_thousand_one_byte_fragments_are_echoed() {
    const FRAGMENTS: usize = 100_000;
    let (mut server, mut healthy) = attacked_server();
    let mut attacker = ws_connect(server.addr);
    let message: Vec<u8> = (0..FRAGMENTS).map(|i| (i % 251) as u8).collect();
    let mut wire = Vec::with_capacity(FRAGMENTS * 7);
    for (i, byte) in message.iter().enumerate() {
        let opcode = if i == 0 { BINARY } else { CONTINUATION };
        wire.extend_from_slice(&frame(i == FRAGMENTS - 1, opcode, &[*byte]));
    }
    let writer = write_in_background(&attacker, wire);
    let (fin, opcode, payload) = read_frame(&mut attacker).expect("the reassembled echo");
    writer.join().unwrap();
    assert!(fin && opcode == BINARY, "echo is one binary frame");
    assert!(payload == message, "echo differs from the fragmented message");
    assert_echoes(&mut attacker, "after fragments");
    assert_server_healthy(&mut server.child, &mut healthy, "one-byte fragments");
}

#[test]
fn ping_flood_is_answered_with_bounded_memory() {
    const PINGS: u32 = 10_000;
    let (mut server, mut healthy) = attacked_server();
    let mut attacker = ws_connect(server.addr);
    let mut wire = Vec::new();
    for i in 0..PINGS {
        wire.extend_from_slice(&frame(true, PING, &i.to_be_bytes()));
    }
    // One write of all 10,000 pings.
    let writer = write_in_background(&attacker, wire);
    for i in 0..PINGS {
        let (fin, opcode, payload) = read_frame(&mut attacker).expect("a pong");
        assert!(fin && opcode == PONG, "frame {i} is not a pong: {opcode}");
        assert_eq!(payload, i.to_be_bytes(), "pong {i} carries the wrong payload");
    }
    writer.join().unwrap();
    assert_echoes(&mut attacker, "after the ping flood");
    assert_server_healthy(&mut server.child, &mut healthy, "ping flood");
}

#[test]
fn unmasked_client_frame_gets_1002() {
    let (mut server, mut healthy) = attacked_server();
    let mut attacker = ws_connect(server.addr);
    attacker.write_all(&frame_with(true, TEXT, b"not masked", false, None)).unwrap();
    expect_close(&mut attacker, 1002);
    assert_server_healthy(&mut server.child, &mut healthy, "unmasked frame");
}

#[test]
fn invalid_utf8_text_gets_1007() {
    let (mut server, mut healthy) = attacked_server();
    let mut attacker = ws_connect(server.addr);
    attacker.write_all(&frame(true, TEXT, b"ok so far \xC3\x28")).unwrap();
    expect_close(&mut attacker, 1007);
    // Also when the bad byte arrives in a later fragment.
    let mut fragmented = ws_connect(server.addr);
    fragmented.write_all(&frame(false, TEXT, b"fine \xE2\x82")).unwrap();
    fragmented.write_all(&frame(true, CONTINUATION, b"\xFF")).unwrap();
    expect_close(&mut fragmented, 1007);
    assert_server_healthy(&mut server.child, &mut healthy, "invalid UTF-8 text");
}

#[test]
fn invalid_utf8_close_reason_gets_1007() {
    let (mut server, mut healthy) = attacked_server();
    let mut attacker = ws_connect(server.addr);
    let mut payload = 1000u16.to_be_bytes().to_vec();
    payload.extend_from_slice(b"bye \xF0\x28\x8C\x28");
    attacker.write_all(&frame(true, CLOSE, &payload)).unwrap();
    expect_close(&mut attacker, 1007);
    assert_server_healthy(&mut server.child, &mut healthy, "invalid UTF-8 close reason");
}

// ---------------------------------------------------------------------------------------
// Attacks on connections themselves.
// ---------------------------------------------------------------------------------------

/// A `wsbench serve` with a lowered open-file limit and its stderr captured (the refusal
/// line is asserted), killed on drop.
struct LimitedServer {
    child: Child,
    addr: SocketAddr,
    stderr: Arc<Mutex<String>>,
}

impl LimitedServer {
    fn spawn(nofile: u64) -> LimitedServer {
        let mut cmd = Command::new(support::wsbench_bin());
        cmd.args(["serve", "--port", "0"]).args(SERVER_ARGS);
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        // SAFETY: prctl and setrlimit are async-signal-safe system calls.
        unsafe {
            cmd.pre_exec(move || {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                let limit = libc::rlimit { rlim_cur: nofile, rlim_max: nofile };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = cmd.spawn().expect("spawn wsbench serve");
        let mut stdout = child.stdout.take().unwrap();
        let mut stderr_pipe = child.stderr.take().unwrap();
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = stderr.clone();
        thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stderr_pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let (tx, rx) = std::sync::mpsc::channel();
        thread::spawn(move || {
            let mut line = Vec::new();
            let mut byte = [0u8; 1];
            while stdout.read(&mut byte).is_ok_and(|n| n == 1) {
                if byte[0] == b'\n' {
                    let _ = tx.send(String::from_utf8_lossy(&line).into_owned());
                    line.clear();
                } else {
                    line.push(byte[0]);
                }
            }
        });
        let first = rx.recv_timeout(Duration::from_secs(20)).expect("a `listening on` line");
        let url =
            first.strip_prefix("listening on ws://").expect("listening line").split(' ').next().unwrap();
        LimitedServer { child, addr: url.parse().unwrap(), stderr }
    }
}

impl Drop for LimitedServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn connection_flood_past_the_open_file_limit_is_refused_and_logged() {
    const FLOOD: usize = 400;
    let mut server = LimitedServer::spawn(300);
    let mut healthy: Vec<TcpStream> = (0..3).map(|_| ws_connect(server.addr)).collect();
    let mut flood = Vec::with_capacity(FLOOD);
    for _ in 0..FLOOD {
        let stream = connect(server.addr);
        // Refused connections may already be reset; only the reply below counts.
        let _ = (&stream).write_all(UPGRADE.as_bytes());
        flood.push(stream);
    }
    let (mut upgraded, mut refused) = (0, 0);
    for stream in &mut flood {
        match read_http_head(stream) {
            Ok(head) if status_of(&head) == 101 => upgraded += 1,
            Ok(head) => panic!("unexpected answer to a flood connection: {head}"),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::UnexpectedEof
                        | io::ErrorKind::ConnectionReset
                        | io::ErrorKind::ConnectionAborted
                ) =>
            {
                refused += 1
            }
            Err(e) => panic!("a flood connection was neither served nor refused: {e}"),
        }
    }
    assert!(refused > 0, "all {FLOOD} connections were accepted under a 300-file limit");
    assert!(upgraded >= 250, "only {upgraded} of {FLOOD} connections were served under a 300-file limit");
    let log = server.stderr.lock().unwrap().clone();
    assert!(log.contains("open-file limit reached"), "no refusal line in the server's log: {log:?}");
    for (i, stream) in healthy.iter_mut().enumerate() {
        assert_echoes(stream, &format!("healthy {i} during the flood"));
    }
    assert!(server.child.try_wait().unwrap().is_none(), "the server exited during the flood");
    let rss = rss_kib(server.child.id());
    assert!(rss < RSS_CEILING_KIB, "server RSS {rss} KiB during the flood");
    // Once the flood goes away, new connections are served again.
    drop(flood);
    let deadline = Instant::now() + IO_TIMEOUT;
    loop {
        let mut stream = connect(server.addr);
        let _ = (&stream).write_all(UPGRADE.as_bytes());
        if read_http_head(&mut stream).is_ok_and(|head| status_of(&head) == 101) {
            assert_echoes(&mut stream, "after the flood");
            break;
        }
        assert!(Instant::now() < deadline, "no new connection served after the flood ended");
        thread::sleep(Duration::from_millis(50));
    }
    assert_server_healthy(&mut server.child, &mut healthy[0], "connection flood");
}

#[test]
fn half_closed_client_gets_its_connection_closed() {
    let (mut server, mut healthy) = attacked_server();
    let mut half_open = ws_connect(server.addr);
    half_open.shutdown(Shutdown::Write).unwrap();
    let started = Instant::now();
    assert_server_hangs_up(&mut half_open);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "half-closed connection kept {:?}",
        started.elapsed()
    );
    assert_server_healthy(&mut server.child, &mut healthy, "half-close");
}

#[test]
fn vanished_clients_do_not_stop_the_server() {
    let (mut server, mut healthy) = attacked_server();
    // Reset without FIN (SO_LINGER 0 makes close send RST).
    let reset = ws_connect(server.addr);
    socket2::SockRef::from(&reset).set_linger(Some(Duration::ZERO)).unwrap();
    drop(reset);
    // Gone silent mid-message: neither FIN nor the rest of the frame ever comes.
    let mut silent = ws_connect(server.addr);
    silent.write_all(&frame(false, BINARY, b"half a message")).unwrap();
    // Gone while the server still has echoes for it: it never reads, so the server must
    // stop reading from it (backpressure) instead of buffering without bound.
    let stuffed = ws_connect(server.addr);
    stuffed.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
    let chunk = frame(true, BINARY, &vec![1u8; 512 * 1024]);
    let mut written = 0usize;
    while written < 64 * 1024 * 1024 && (&stuffed).write_all(&chunk).is_ok() {
        written += chunk.len();
    }
    assert!(written < 64 * 1024 * 1024, "the server kept reading from a peer that reads nothing");
    assert_server_healthy(&mut server.child, &mut healthy, "vanished clients");
    drop((silent, stuffed));
}

// ---------------------------------------------------------------------------------------
// Regressions of peer libraries' CVEs, against wsbench's server.
// ---------------------------------------------------------------------------------------

/// RUSTSEC-2023-0065 (tungstenite): header parsing that restarts on every read made a long,
/// slowly sent header quadratic in CPU. wsbench re-parses the pending header on each read
/// too, but never past --max-header-bytes (8 KiB), so a 1 MB header line sent in 1 KB
/// pieces must be answered with 431 for a few milliseconds of the server's CPU: measured as
/// CPU time, which a loaded machine does not stretch as it stretches the wall clock.
#[test]
fn rustsec_2023_0065_long_header_line_is_refused_quickly() {
    /// The server's CPU for one refusal: a 1 MB line re-parsed on each of 1,024 reads would
    /// take seconds of it; stopping at 8 KiB takes about a millisecond.
    const REFUSAL_CPU: f64 = 0.1;
    let (mut server, mut healthy) = attacked_server();
    let pid = server.child.id();
    let mut attacker = connect(server.addr);
    let mut writer = attacker.try_clone().unwrap();
    let before = cpu_seconds(pid);
    let sender = thread::spawn(move || {
        let _ = writer.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\nX-Long: ");
        let piece = [b'a'; 1024];
        for _ in 0..1024 {
            if writer.write_all(&piece).is_err() {
                return;
            }
        }
    });
    assert_eq!(read_status(&mut attacker), 431);
    assert_server_hangs_up(&mut attacker);
    sender.join().unwrap();
    let used = cpu_seconds(pid) - before;
    assert!(used < REFUSAL_CPU, "the server used {used} s of CPU to refuse a long header line");
    // Many short header lines, sent one write each, are refused as cheaply.
    let mut attacker = connect(server.addr);
    let mut writer = attacker.try_clone().unwrap();
    let before = cpu_seconds(pid);
    let sender = thread::spawn(move || {
        let _ = writer.write_all(b"GET / HTTP/1.1\r\n");
        for i in 0..2000 {
            if writer.write_all(format!("X-{i}: {}\r\n", "b".repeat(40)).as_bytes()).is_err() {
                return;
            }
        }
    });
    assert_eq!(read_status(&mut attacker), 431);
    assert_server_hangs_up(&mut attacker);
    sender.join().unwrap();
    let used = cpu_seconds(pid) - before;
    assert!(used < REFUSAL_CPU, "the server used {used} s of CPU to refuse 2,000 header lines");
    assert_server_healthy(&mut server.child, &mut healthy, "RUSTSEC-2023-0065");
}

/// CVE-2024-37890 (ws): a request with more headers than the server's header array crashed
/// the server. wsbench's parser takes at most 64 header fields: 64 complete a handshake, 65
/// get 431 and the server carries on.
#[test]
fn cve_2024_37890_more_headers_than_the_limit_get_431() {
    let (mut server, mut healthy) = attacked_server();
    let request = |fields: usize| {
        // UPGRADE has 5 header fields.
        let mut request = UPGRADE.strip_suffix("\r\n").unwrap().to_owned();
        for i in 5..fields {
            request.push_str(&format!("X-Filler-{i}: x\r\n"));
        }
        request.push_str("\r\n");
        request
    };
    let mut at_limit = connect(server.addr);
    at_limit.write_all(request(64).as_bytes()).unwrap();
    assert_eq!(read_status(&mut at_limit), 101, "64 header fields are accepted");
    assert_echoes(&mut at_limit, "64 headers");
    let mut over = connect(server.addr);
    over.write_all(request(65).as_bytes()).unwrap();
    assert_eq!(read_status(&mut over), 431, "65 header fields are refused");
    assert_server_hangs_up(&mut over);
    assert_server_healthy(&mut server.child, &mut healthy, "CVE-2024-37890");
}

/// CVE-2020-27813 (gorilla/websocket): fragment lengths were added up unchecked, so
/// fragments each under the read limit (or lengths overflowing when added) bypassed it.
/// wsbench adds every fragment's announced length to the message's before reading its
/// payload, so the fragment that crosses --max-message gets 1009 at once.
#[test]
fn cve_2020_27813_fragment_lengths_adding_past_the_limit_get_1009() {
    let (mut server, mut healthy) = attacked_server();
    // Two fragments of 600 KiB each: each under the 1 MiB limit, together over it.
    let mut attacker = ws_connect(server.addr);
    attacker.write_all(&frame(false, BINARY, &vec![3u8; 600 * 1024])).unwrap();
    attacker.write_all(&frame_with(true, CONTINUATION, &[], true, Some(600 * 1024))).unwrap();
    expect_close(&mut attacker, 1009);
    // A continuation announcing 2^63-1 after a small first fragment: the sum must not wrap.
    let mut attacker = ws_connect(server.addr);
    attacker.write_all(&frame(false, TEXT, b"0123456789")).unwrap();
    attacker.write_all(&frame_with(false, CONTINUATION, &[], true, Some(i64::MAX as u64))).unwrap();
    expect_close(&mut attacker, 1009);
    // Many small fragments adding up past the limit.
    let mut attacker = ws_connect(server.addr);
    let mut wire = frame(false, BINARY, &vec![0u8; 64 * 1024]);
    for _ in 0..17 {
        wire.extend_from_slice(&frame(false, CONTINUATION, &vec![0u8; 64 * 1024]));
    }
    let writer = write_in_background(&attacker, wire);
    expect_close(&mut attacker, 1009);
    writer.join().unwrap();
    assert_server_healthy(&mut server.child, &mut healthy, "CVE-2020-27813");
}

// ---------------------------------------------------------------------------------------
// The same CVEs against wsbench's load client: `wsbench run echo` against a malicious server.
// ---------------------------------------------------------------------------------------

/// What the malicious server does with each client connection after reading its request
/// (whose `Sec-WebSocket-Key` it is given).
type Behaviour = fn(&mut TcpStream, &str);

/// A one-thread-per-connection malicious WebSocket server on port 0.
struct MaliciousServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl MaliciousServer {
    fn start(behaviour: Behaviour) -> MaliciousServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let accept = thread::spawn(move || {
            while !stopping.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((mut stream, _)) => {
                        thread::spawn(move || {
                            stream.set_nonblocking(false).unwrap();
                            stream.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
                            stream.set_write_timeout(Some(IO_TIMEOUT)).unwrap();
                            let Ok(request) = read_http_head(&mut stream) else { return };
                            let key = request
                                .lines()
                                .find_map(|l| {
                                    l.strip_prefix("Sec-WebSocket-Key:")
                                        .or(l.strip_prefix("sec-websocket-key:"))
                                })
                                .map(|k| k.trim().to_owned())
                                .unwrap_or_default();
                            behaviour(&mut stream, &key);
                        });
                    }
                    Err(_) => thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        MaliciousServer { addr, stop, accept: Some(accept) }
    }
}

impl Drop for MaliciousServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

/// The load client's resident memory must stay below this against a malicious server.
const CLIENT_RSS_CEILING_KIB: u64 = 64 * 1024;

/// Runs `wsbench run echo` (one connection, `extra` arguments, 1 s unless they say otherwise)
/// against `addr`; asserts it exits within 30 s without panicking and that its memory stayed
/// under [`CLIENT_RSS_CEILING_KIB`]; returns its stderr.
fn run_client_against(addr: SocketAddr, extra: &[&str]) -> String {
    let duration = if extra.contains(&"--duration") { &[][..] } else { &["--duration", "1s"][..] };
    let mut child = Command::new(support::wsbench_bin())
        .args(["run", "echo", &format!("ws://{addr}/"), "--connections", "1", "--warmup", "0s"])
        .args(duration)
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn wsbench run");
    let mut stderr_pipe = child.stderr.take().unwrap();
    let stderr = thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr_pipe.read_to_string(&mut text);
        text
    });
    let started = Instant::now();
    let mut peak_rss = 0;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if let Ok(status) = std::fs::read_to_string(format!("/proc/{}/status", child.id()))
            && let Some(rss) = status.lines().find_map(|l| l.strip_prefix("VmRSS:"))
        {
            peak_rss = peak_rss.max(rss.trim().trim_end_matches("kB").trim().parse().unwrap_or(0));
        }
        if started.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("wsbench run did not exit within 30 s");
        }
        thread::sleep(Duration::from_millis(20));
    };
    let stderr = stderr.join().unwrap();
    assert!(!stderr.contains("panicked"), "wsbench run panicked: {stderr}");
    assert_ne!(status.code(), Some(101), "wsbench run panicked: {stderr}");
    assert!(status.code().is_some(), "wsbench run was killed by a signal: {status:?}\n{stderr}");
    assert!(peak_rss < CLIENT_RSS_CEILING_KIB, "wsbench run reached {peak_rss} KiB RSS\n{stderr}");
    stderr
}

/// How long the client took to hang up after `start`; panics past the read timeout.
fn client_hangup_after(stream: &mut TcpStream, start: Instant) -> Duration {
    let mut sink = [0u8; 4096];
    loop {
        match stream.read(&mut sink) {
            Ok(0) => return start.elapsed(),
            Ok(_) => {}
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                panic!("the client kept the connection open for {:?}", start.elapsed())
            }
            Err(_) => return start.elapsed(),
        }
    }
}

/// Records, across connections, how long the client took to drop a malicious handshake.
static HANGUPS: Mutex<Vec<Duration>> = Mutex::new(Vec::new());

/// A client whose own timers are far away (a 20 s handshake timeout, a 20 s run that ends as
/// soon as its one connection is gone): if it hangs up before the malicious server's read
/// timeout, only its header limit can have made it, however loaded the machine.
const FAR_TIMERS: &[&str] = &["--connect-timeout", "20s", "--duration", "20s"];

/// Every hang-up came, and before the read timeout: the header limit ended each connection.
fn assert_hung_up_at_the_header_limit(hangups: &[Duration]) {
    assert!(!hangups.is_empty(), "no hang-up: the client never connected, or outlasted the read timeout");
    assert!(hangups.iter().all(|d| *d < IO_TIMEOUT), "client hang-up times: {hangups:?}");
}

/// RUSTSEC-2023-0065 on the client side: a 1 MB response header line sent in pieces. The
/// client must give up at its header limit (8 KiB), not wait for the end of the headers.
#[test]
fn rustsec_2023_0065_client_drops_a_long_response_header_quickly() {
    fn long_header(stream: &mut TcpStream, _key: &str) {
        let start = Instant::now();
        let _ = stream.write_all(b"HTTP/1.1 101 Switching Protocols\r\nX-Long: ");
        for _ in 0..1024 {
            if stream.write_all(&[b'a'; 1024]).is_err() {
                break;
            }
        }
        let took = client_hangup_after(stream, start);
        LONG_HEADER_HANGUPS.lock().unwrap().push(took);
    }
    static LONG_HEADER_HANGUPS: Mutex<Vec<Duration>> = Mutex::new(Vec::new());
    let server = MaliciousServer::start(long_header);
    run_client_against(server.addr, FAR_TIMERS);
    drop(server);
    assert_hung_up_at_the_header_limit(&LONG_HEADER_HANGUPS.lock().unwrap());
}

/// CVE-2024-37890 on the client side: a 101 answer with 10,000 header fields must make the
/// client drop the connection (too many headers), not crash it.
#[test]
fn cve_2024_37890_client_drops_a_response_with_too_many_headers() {
    fn many_headers(stream: &mut TcpStream, key: &str) {
        let mut response = format!(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n",
            accept_key(key.as_bytes())
        );
        for i in 0..10_000 {
            response.push_str(&format!("X-{i}: v\r\n"));
        }
        response.push_str("\r\n");
        let start = Instant::now();
        let _ = stream.write_all(response.as_bytes());
        let took = client_hangup_after(stream, start);
        HANGUPS.lock().unwrap().push(took);
    }
    let server = MaliciousServer::start(many_headers);
    run_client_against(server.addr, FAR_TIMERS);
    drop(server);
    assert_hung_up_at_the_header_limit(&HANGUPS.lock().unwrap());
}

/// The malicious server of the client-side CVE-2020-27813 tests: after a valid handshake it
/// answers the first message with a fragment announcing 2^63-1 bytes and streams 128 MiB of
/// it, then waits for the client to hang up.
fn endless_fragment(stream: &mut TcpStream, key: &str) {
    let response = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n\r\n",
        accept_key(key.as_bytes())
    );
    if stream.write_all(response.as_bytes()).is_err() {
        return;
    }
    // Wait for the client's first message, then answer with a fragment that never ends.
    if read_frame_limited(stream, 1024 * 1024).is_err() {
        return;
    }
    let _ = stream.write_all(&frame_with(false, BINARY, &[], false, Some(i64::MAX as u64)));
    let piece = vec![0u8; 64 * 1024];
    for _ in 0..2048 {
        if stream.write_all(&piece).is_err() {
            return;
        }
    }
    let mut sink = [0u8; 4096];
    while stream.read(&mut sink).is_ok_and(|n| n > 0) {}
}

/// CVE-2020-27813 on the client side: a fragment announcing 2^63-1 bytes, then 128 MiB of
/// it. With a `bytes:N` payload the load client checks echoes as they stream in instead of
/// buffering them, so it never allocates anything near the announced (or the received)
/// size: its RSS stays under 64 MiB and it exits normally.
#[test]
fn cve_2020_27813_client_never_allocates_an_announced_length() {
    let server = MaliciousServer::start(endless_fragment);
    run_client_against(server.addr, &["--payload", "bytes:64"]);
}

/// The same attack with the default `json-ts` payload: the client stops buffering an echo
/// once it is longer than any json-ts message (a mismatch), so its memory stays bounded.
#[test]
fn cve_2020_27813_client_json_ts_echo_is_not_buffered_without_limit() {
    let server = MaliciousServer::start(endless_fragment);
    run_client_against(server.addr, &[]);
}
