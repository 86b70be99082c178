//! A deliberately dumb, blocking WebSocket client over a std `TcpStream` that the conformance
//! cases drive byte by byte. It is independent of `wsbench-proto` so that it can judge it.
//!
//! Every read has a deadline (10 s by default), so no case can hang. Writes that fail because
//! the server already dropped the connection (EPIPE/ECONNRESET) are tolerated: cases keep
//! sending what Autobahn sends after an offending frame, and judge the server only by what it
//! answers. Frames received from the server are checked strictly (unmasked, RSV clear, known
//! opcode, well-formed control frames and fragmentation), whatever the case expects.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::raw_frame::{
    InFrame, OP_BINARY, OP_CLOSE, OP_CONT, OP_PING, OP_PONG, OP_TEXT, OutFrame, accept_key, base64,
    encode_all, parse_frame, preview, random_u64,
};

pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// Delay between writes in "frame-wise" and "octet-wise" chopped sends.
pub const FRAME_GAP: Duration = Duration::from_millis(10);
pub const OCTET_GAP: Duration = Duration::from_millis(1);

/// A complete message or control frame from the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    Text(Vec<u8>),
    Binary(Vec<u8>),
    Ping(Vec<u8>),
    Pong(Vec<u8>),
    /// Status code (absent for an empty close payload) and reason.
    Close(Option<u16>, Vec<u8>),
}

impl Message {
    fn describe(&self) -> String {
        match self {
            Message::Text(p) => format!("text message {}", preview(p)),
            Message::Binary(p) => format!("binary message {}", preview(p)),
            Message::Ping(p) => format!("ping {}", preview(p)),
            Message::Pong(p) => format!("pong {}", preview(p)),
            Message::Close(code, r) => format!("close frame code {code:?} reason {}", preview(r)),
        }
    }
}

/// What a read produced when it did not produce a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// The server closed the TCP connection (FIN).
    Eof,
    /// The server reset the TCP connection.
    Reset,
    /// Nothing arrived before the deadline.
    Timeout,
}

/// One client connection after a successful opening handshake.
#[derive(Debug)]
pub struct Client {
    stream: TcpStream,
    buf: Vec<u8>,
    timeout: Duration,
    write_broken: bool,
    /// A data message being reassembled: (opcode, payload so far).
    partial: Option<(u8, Vec<u8>)>,
    /// permessage-deflate was negotiated: RSV1 may be set on the server's frames.
    rsv1_allowed: bool,
}

impl Client {
    /// Connects to `addr` and performs the opening handshake, checking the 101 response and
    /// the `Sec-WebSocket-Accept` value.
    pub fn connect(addr: SocketAddr) -> Client {
        let stream = TcpStream::connect_timeout(&addr, DEFAULT_TIMEOUT)
            .unwrap_or_else(|e| panic!("connect to {addr}: {e}"));
        stream.set_nodelay(true).unwrap();
        stream.set_write_timeout(Some(Duration::from_secs(60))).unwrap();
        Client::connect_offering(addr, None).0
    }

    /// Connects with a `Sec-WebSocket-Extensions` offer (if any); returns the client and the
    /// server's `Sec-WebSocket-Extensions` answer. Once an extension is answered, RSV1 on
    /// the server's frames is allowed (the deflate cases check where it is set).
    pub fn connect_offering(addr: SocketAddr, offer: Option<&str>) -> (Client, Option<String>) {
        let stream = TcpStream::connect_timeout(&addr, DEFAULT_TIMEOUT)
            .unwrap_or_else(|e| panic!("connect to {addr}: {e}"));
        stream.set_nodelay(true).unwrap();
        stream.set_write_timeout(Some(Duration::from_secs(60))).unwrap();
        let mut client = Client {
            stream,
            buf: Vec::new(),
            timeout: DEFAULT_TIMEOUT,
            write_broken: false,
            partial: None,
            rsv1_allowed: false,
        };
        let answer = client.handshake(addr, offer);
        client.rsv1_allowed = answer.is_some();
        (client, answer)
    }

    /// Changes the default deadline of every later read.
    pub fn with_timeout(mut self, timeout: Duration) -> Client {
        self.timeout = timeout;
        self
    }

    fn handshake(&mut self, addr: SocketAddr, offer: Option<&str>) -> Option<String> {
        let key = base64(&[random_u64().to_le_bytes(), random_u64().to_le_bytes()].concat());
        let extensions = offer.map(|o| format!("Sec-WebSocket-Extensions: {o}\r\n")).unwrap_or_default();
        let request = format!(
            "GET / HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n{extensions}\r\n"
        );
        self.stream.write_all(request.as_bytes()).expect("send handshake");
        let deadline = Instant::now() + self.timeout;
        let head_end = loop {
            if let Some(pos) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break pos + 4;
            }
            assert!(self.buf.len() < 16384, "handshake response too long");
            if let Some(end) = self.fill(deadline) {
                panic!("no handshake response: {end:?}; got {}", preview(&self.buf));
            }
        };
        let head = String::from_utf8(self.buf[..head_end].to_vec()).expect("ASCII response");
        self.buf.drain(..head_end);
        let status = head.split("\r\n").next().unwrap_or_default();
        assert!(status.starts_with("HTTP/1.1 101"), "bad handshake status: {head}");
        let header = |name: &str| {
            head.split("\r\n").skip(1).find_map(|l| {
                let (n, v) = l.split_once(':')?;
                n.trim().eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
            })
        };
        let upgrade = header("upgrade").unwrap_or_default();
        assert!(upgrade.eq_ignore_ascii_case("websocket"), "Upgrade header: {head}");
        let connection = header("connection").unwrap_or_default().to_ascii_lowercase();
        assert!(connection.contains("upgrade"), "Connection header: {head}");
        assert_eq!(
            header("sec-websocket-accept").as_deref(),
            Some(accept_key(&key).as_str()),
            "Sec-WebSocket-Accept in {head}"
        );
        header("sec-websocket-extensions")
    }

    // ---------------------------------------------------------------- sending

    /// Writes raw bytes; tolerates the server having dropped the connection.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        if self.write_broken {
            return;
        }
        if let Err(e) = self.stream.write_all(bytes) {
            match e.kind() {
                ErrorKind::BrokenPipe | ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted => {
                    self.write_broken = true
                }
                _ => panic!("write failed: {e}"),
            }
        }
    }

    /// Writes `bytes` in writes of at most `chop` bytes with `delay` between them.
    pub fn send_chopped(&mut self, bytes: &[u8], chop: usize, delay: Duration) {
        for (i, piece) in bytes.chunks(chop).enumerate() {
            if i > 0 && !delay.is_zero() {
                thread::sleep(delay);
            }
            self.send_raw(piece);
        }
    }

    pub fn send(&mut self, frame: &OutFrame) {
        self.send_raw(&frame.encode());
    }

    /// Sends all frames in one write ("all in one chop").
    pub fn send_all(&mut self, frames: &[OutFrame]) {
        self.send_raw(&encode_all(frames));
    }

    /// Sends each frame in its own write, [`FRAME_GAP`] apart ("frame-wise chops").
    pub fn send_framewise(&mut self, frames: &[OutFrame]) {
        for (i, f) in frames.iter().enumerate() {
            if i > 0 {
                thread::sleep(FRAME_GAP);
            }
            self.send(f);
        }
    }

    /// Sends all frames one octet per write, [`OCTET_GAP`] apart ("octet-wise chops").
    pub fn send_octetwise(&mut self, frames: &[OutFrame]) {
        self.send_chopped(&encode_all(frames), 1, OCTET_GAP);
    }

    pub fn send_text(&mut self, payload: &[u8]) {
        self.send(&OutFrame::text(payload));
    }

    pub fn send_ping(&mut self, payload: &[u8]) {
        self.send(&OutFrame::ping(payload));
    }

    pub fn send_close(&mut self, code: Option<u16>, reason: &[u8]) {
        self.send(&OutFrame::close(code, reason));
    }

    /// Writes `bytes` from a second thread on a clone of the socket, so that a large send
    /// cannot deadlock against the server's replies. The writer stops quietly at the first
    /// write error (the server may fail the connection mid-send); cases judge the server by
    /// what it answers. Join the handle after reading.
    pub fn send_in_background(&self, bytes: Vec<u8>, chop: usize) -> JoinHandle<()> {
        let mut stream = self.stream.try_clone().expect("clone socket");
        thread::spawn(move || {
            for piece in bytes.chunks(chop.max(1)) {
                if stream.write_all(piece).is_err() {
                    return;
                }
            }
        })
    }

    // ---------------------------------------------------------------- receiving

    /// Reads more bytes into the buffer; `Some(end)` if none could be read by `deadline`.
    fn fill(&mut self, deadline: Instant) -> Option<End> {
        let now = Instant::now();
        if now >= deadline {
            return Some(End::Timeout);
        }
        self.stream.set_read_timeout(Some(deadline - now)).unwrap();
        let start = self.buf.len();
        self.buf.resize(start + 256 * 1024, 0);
        loop {
            let res = self.stream.read(&mut self.buf[start..]);
            self.buf.truncate(start + *res.as_ref().unwrap_or(&0));
            match res {
                Ok(0) => return Some(End::Eof),
                Ok(_) => return None,
                Err(e) => match e.kind() {
                    ErrorKind::Interrupted => self.buf.resize(start + 256 * 1024, 0),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut => return Some(End::Timeout),
                    ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted => {
                        return Some(End::Reset);
                    }
                    _ => panic!("read failed: {e}"),
                },
            }
        }
    }

    /// The next frame from the server, checked for basic well-formedness.
    pub fn next_frame(&mut self, deadline: Instant) -> Result<InFrame, End> {
        loop {
            if let Some((frame, used)) = parse_frame(&self.buf) {
                self.buf.drain(..used);
                assert!(!frame.masked, "server sent a masked frame (RFC 6455 §5.1)");
                let allowed =
                    if self.rsv1_allowed && matches!(frame.opcode, OP_TEXT | OP_BINARY) { 4 } else { 0 };
                assert_eq!(frame.rsv & !allowed, 0, "server frame has RSV bits set without extension");
                return Ok(frame);
            }
            if let Some(end) = self.fill(deadline) {
                return Err(end);
            }
        }
    }

    /// The next complete message or control frame (fragmented messages are reassembled).
    pub fn next_message_until(&mut self, deadline: Instant) -> Result<Message, End> {
        loop {
            let f = self.next_frame(deadline)?;
            match f.opcode {
                OP_TEXT | OP_BINARY => {
                    assert!(self.partial.is_none(), "server started a message mid-message");
                    if f.fin {
                        return Ok(data_message(f.opcode, f.payload));
                    }
                    self.partial = Some((f.opcode, f.payload));
                }
                OP_CONT => {
                    let (op, mut acc) = self
                        .partial
                        .take()
                        .expect("server sent a continuation frame with no message started");
                    acc.extend_from_slice(&f.payload);
                    if f.fin {
                        return Ok(data_message(op, acc));
                    }
                    self.partial = Some((op, acc));
                }
                OP_CLOSE | OP_PING | OP_PONG => {
                    assert!(f.fin, "server sent a fragmented control frame");
                    assert!(f.payload.len() <= 125, "server control frame > 125 bytes");
                    return Ok(control_message(f.opcode, f.payload));
                }
                op => panic!("server sent reserved opcode {op:#x}"),
            }
        }
    }

    pub fn next_message(&mut self) -> Result<Message, End> {
        self.next_message_until(Instant::now() + self.timeout)
    }

    /// Asserts the next thing received is exactly `expected`.
    pub fn expect_message(&mut self, expected: Message) {
        match self.next_message() {
            Ok(got) if got == expected => {}
            Ok(got) => panic!(
                "expected {}, got {}{}",
                expected.describe(),
                got.describe(),
                first_difference(&expected, &got)
            ),
            Err(end) => panic!("expected {}, got {end:?}", expected.describe()),
        }
    }

    pub fn expect_text(&mut self, payload: &[u8]) {
        self.expect_message(Message::Text(payload.to_vec()));
    }

    pub fn expect_binary(&mut self, payload: &[u8]) {
        self.expect_message(Message::Binary(payload.to_vec()));
    }

    pub fn expect_pong(&mut self, payload: &[u8]) {
        self.expect_message(Message::Pong(payload.to_vec()));
    }

    /// Asserts the next thing received is a close frame with `code` (`None`: empty payload)
    /// and returns its reason, which must be valid UTF-8.
    pub fn expect_close(&mut self, code: Option<u16>) -> Vec<u8> {
        match self.next_message() {
            Ok(Message::Close(got, reason)) => {
                assert_eq!(got, code, "close code (reason {})", preview(&reason));
                reason
            }
            Ok(other) => panic!("expected close {code:?}, got {}", other.describe()),
            Err(end) => panic!("expected close {code:?}, got {end:?}"),
        }
    }

    /// Like [`Client::expect_close`], but the close must arrive within `within` (fail-fast
    /// checks: the verdict must come before the client sends anything more).
    pub fn expect_close_within(&mut self, code: u16, within: Duration) {
        match self.next_message_until(Instant::now() + within) {
            Ok(Message::Close(got, reason)) => {
                assert_eq!(got, Some(code), "close code (reason {})", preview(&reason));
            }
            Ok(other) => panic!("expected close {code} within {within:?}, got {}", other.describe()),
            Err(end) => panic!("expected close {code} within {within:?}, got {end:?}"),
        }
    }

    /// Asserts the server fails the connection with any of `codes`; returns the code seen.
    pub fn expect_fail_with_one_of(&mut self, codes: &[u16]) -> u16 {
        let code = match self.next_message() {
            Ok(Message::Close(Some(code), _)) if codes.contains(&code) => code,
            Ok(other) => panic!("expected close with one of {codes:?}, got {}", other.describe()),
            Err(end) => panic!("expected close with one of {codes:?}, got {end:?}"),
        };
        self.send_close(Some(code), b"");
        self.expect_closed_tcp();
        code
    }

    /// Asserts the server closes (or resets) the TCP connection without sending anything more.
    pub fn expect_closed_tcp(&mut self) {
        let deadline = Instant::now() + self.timeout;
        match self.next_frame(deadline) {
            Err(End::Eof | End::Reset) => {}
            Err(End::Timeout) => panic!("server did not close the TCP connection in time"),
            Ok(f) => panic!("expected TCP close, got frame opcode {:#x} {}", f.opcode, preview(&f.payload)),
        }
    }

    /// Asserts the server fails the connection with close `code`, answers that close as a
    /// polite client would, and asserts the TCP connection is then closed.
    pub fn expect_fail(&mut self, code: u16) {
        self.expect_close(Some(code));
        self.send_close(Some(code), b"");
        self.expect_closed_tcp();
    }

    /// The client-initiated closing handshake: close 1000, expect close 1000, then TCP close.
    pub fn close_normally(&mut self) {
        self.send_close(Some(1000), b"");
        self.expect_close(Some(1000));
        self.expect_closed_tcp();
    }

    /// Asserts that nothing at all (no frame, no TCP close) arrives within `wait`.
    pub fn expect_nothing_for(&mut self, wait: Duration) {
        let deadline = Instant::now() + wait;
        match self.next_frame(deadline) {
            Err(End::Timeout) => {}
            Err(end) => panic!("expected silence for {wait:?}, got {end:?}"),
            Ok(f) => panic!(
                "expected silence for {wait:?}, got frame opcode {:#x} {}",
                f.opcode,
                preview(&f.payload)
            ),
        }
    }
}

/// For two payloads of the same kind, where they first differ (long echoes look alike).
fn first_difference(a: &Message, b: &Message) -> String {
    let (x, y) = match (a, b) {
        (Message::Text(x), Message::Text(y)) | (Message::Binary(x), Message::Binary(y)) => (x, y),
        _ => return String::new(),
    };
    match x.iter().zip(y.iter()).position(|(p, q)| p != q) {
        Some(i) => format!(" (first difference at byte {i})"),
        None => format!(" (same first {} bytes)", x.len().min(y.len())),
    }
}

fn data_message(opcode: u8, payload: Vec<u8>) -> Message {
    if opcode == OP_TEXT {
        assert!(
            std::str::from_utf8(&payload).is_ok(),
            "server sent invalid UTF-8 in a text message: {}",
            preview(&payload)
        );
        Message::Text(payload)
    } else {
        Message::Binary(payload)
    }
}

fn control_message(opcode: u8, payload: Vec<u8>) -> Message {
    match opcode {
        OP_PING => Message::Ping(payload),
        OP_PONG => Message::Pong(payload),
        _ => match payload.len() {
            0 => Message::Close(None, payload),
            1 => panic!("server sent a 1-byte close payload"),
            _ => {
                let code = u16::from_be_bytes([payload[0], payload[1]]);
                let reason = payload[2..].to_vec();
                assert!(
                    std::str::from_utf8(&reason).is_ok(),
                    "server close reason is not UTF-8: {}",
                    preview(&reason)
                );
                Message::Close(Some(code), reason)
            }
        },
    }
}
