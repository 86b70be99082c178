//! A scripted WebSocket echo server for engine tests: real sockets on port 0, one std thread
//! per connection (small stacks), and misbehaviour chosen by the test:
//!
//! - [`Script::delay_each_echo`]: every echo is written after sleeping that long;
//! - [`Script::capacity`]: each connection serves at most that many echoes per second, as a
//!   queue with a fixed service time on absolute deadlines: echo k is due one service time
//!   after echo k-1 was due or after its message arrived, whichever is later. A message that
//!   was already waiting when the server looked counts as queued, so the overshoot of a sleep
//!   delays one echo but never lowers the capacity;
//! - [`Script::close_every_nth_connection`]: the n-th, 2n-th … accepted connections get a
//!   close frame with the given code after their first echo, then the TCP connection ends;
//! - [`Script::stall`]: during a window (measured from the server's start) no connection
//!   reads or answers; afterwards everything queued is answered;
//! - [`Script::corrupt_echo`]: every echo has one byte changed (for json-ts messages, a digit
//!   of the sequence number, so the text stays valid UTF-8: the echo then answers no request;
//!   otherwise its last byte, past the request's number that a payload of 8 bytes or more
//!   carries: the echo answers its request, altered);
//! - [`Script::answer_extensions`]: the 101 carries this `Sec-WebSocket-Extensions` value
//!   (without implementing it: for tests of how a client judges the answer).
//!
//! - [`Script::choose_subprotocol`]: every upgrade is answered with that subprotocol.
//! - [`Script::ignore_close_every_nth_connection`]: the n-th, 2n-th … accepted connections
//!   never answer the client's close frame (they read on until the client goes).
//! - [`Script::ignore_every_nth_ping`]: the n-th, 2n-th … pings of each connection get no
//!   pong (1: none does).
//!
//! With no behaviour it is a plain echo server. Dropping the [`ScriptedServer`] stops it: the
//! listener closes and every open connection is shut down.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use wsbench_proto::handshake::{DEFAULT_MAX_HEADER_BYTES, Request, parse_request, server_response};
use wsbench_proto::{Decoder, OpCode, Role, write_frame};

/// Largest message the scripted server accepts.
const MAX_MESSAGE: u64 = 64 * 1024 * 1024;
/// Stack of each connection thread: the echo loop needs little.
const CONNECTION_STACK: usize = 64 * 1024;
/// After sending a close frame: how long to wait for the client's close and EOF.
const CLOSE_LINGER: Duration = Duration::from_secs(2);
/// How many delayed echoes' actual hold times are kept.
const MAX_RECORDED_DELAYS: usize = 1 << 20;

/// What the server does; build with the methods below, then [`Script::start`].
#[derive(Debug, Clone, Default)]
pub struct Script {
    delay: Option<Duration>,
    service_time: Option<Duration>,
    close_every: Option<(u64, u16)>,
    stall: Option<(Duration, Duration)>,
    corrupt: bool,
    subprotocol: Option<&'static str>,
    extensions: Option<String>,
    ignore_close_every: Option<u64>,
    ignore_ping_every: Option<u64>,
}

impl Script {
    /// A plain echo server.
    pub fn echo() -> Script {
        Script::default()
    }

    /// Answer every upgrade with `Sec-WebSocket-Extensions: value`.
    pub fn answer_extensions(mut self, value: &str) -> Script {
        self.extensions = Some(value.to_owned());
        self
    }

    /// Sleep `delay` before writing each echo (per connection).
    pub fn delay_each_echo(mut self, delay: Duration) -> Script {
        self.delay = Some(delay);
        self
    }

    /// Each connection serves at most `per_sec` echoes per second: a queue with a fixed
    /// service time of `1 / per_sec`, scheduled on absolute deadlines.
    pub fn capacity(mut self, per_sec: u32) -> Script {
        assert!(per_sec > 0, "the capacity must be at least 1/s");
        self.service_time = Some(Duration::from_secs(1) / per_sec);
        self
    }

    /// The `n`-th, `2n`-th … accepted connections get a close frame with `code` after their
    /// first echo, then the TCP connection is closed.
    pub fn close_every_nth_connection(mut self, n: u64, code: u16) -> Script {
        assert!(n > 0, "n must be at least 1");
        self.close_every = Some((n, code));
        self
    }

    /// From `after` (since the server started) for `duration`, no connection reads or
    /// answers; then everything queued is answered.
    pub fn stall(mut self, after: Duration, duration: Duration) -> Script {
        self.stall = Some((after, duration));
        self
    }

    /// Every echo comes back with one byte changed.
    pub fn corrupt_echo(mut self) -> Script {
        self.corrupt = true;
        self
    }

    /// Answer every upgrade with this subprotocol, whatever the client offered.
    pub fn choose_subprotocol(mut self, name: &'static str) -> Script {
        self.subprotocol = Some(name);
        self
    }

    /// The n-th, 2n-th … accepted connections (1-based) leave the client's close unanswered.
    pub fn ignore_close_every_nth_connection(mut self, n: u64) -> Script {
        assert!(n > 0, "every 0th connection");
        self.ignore_close_every = Some(n);
        self
    }

    /// Binds 127.0.0.1:0 and starts accepting.
    pub fn ignore_every_nth_ping(mut self, n: u64) -> Script {
        assert!(n > 0);
        self.ignore_ping_every = Some(n);
        self
    }

    pub fn start(self) -> ScriptedServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the scripted server");
        let addr = listener.local_addr().expect("scripted server address");
        let shared = Arc::new(Shared {
            script: self,
            started: Instant::now(),
            stop: AtomicBool::new(false),
            accepted: AtomicU64::new(0),
            echoes: AtomicU64::new(0),
            closes_sent: AtomicU64::new(0),
            held_us: Mutex::new(Vec::new()),
            streams: Mutex::new(Vec::new()),
        });
        let accept_shared = shared.clone();
        let acceptor = thread::Builder::new()
            .name("scripted-accept".into())
            .spawn(move || accept_loop(listener, accept_shared))
            .expect("spawn the accept thread");
        ScriptedServer { addr, shared, acceptor: Some(acceptor) }
    }
}

struct Shared {
    script: Script,
    started: Instant,
    stop: AtomicBool,
    accepted: AtomicU64,
    echoes: AtomicU64,
    closes_sent: AtomicU64,
    /// How long each delayed echo was actually held (µs): the sleep plus its overshoot,
    /// at most [`MAX_RECORDED_DELAYS`] of them.
    held_us: Mutex<Vec<u64>>,
    /// A clone of every accepted stream, to shut them all down on drop.
    streams: Mutex<Vec<TcpStream>>,
}

impl Shared {
    fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Sleeps through the stall window if `now` is inside it.
    fn wait_out_stall(&self) {
        let Some((after, duration)) = self.script.stall else { return };
        let (from, until) = (self.started + after, self.started + after + duration);
        let now = Instant::now();
        if now >= from && now < until {
            while !self.stopping() && Instant::now() < until {
                thread::sleep(until.saturating_duration_since(Instant::now()).min(Duration::from_millis(20)));
            }
        }
    }
}

/// A running scripted server; stopped on drop.
pub struct ScriptedServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for ScriptedServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedServer")
            .field("addr", &self.addr)
            .field("script", &self.shared.script)
            .finish()
    }
}

impl ScriptedServer {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `ws://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("ws://{}", self.addr)
    }

    /// TCP connections accepted so far.
    pub fn accepted(&self) -> u64 {
        self.shared.accepted.load(Ordering::SeqCst)
    }

    /// Echoes written so far.
    /// The median time a delayed echo was actually held (µs): the delay plus the sleep's
    /// overshoot on this machine under this load; `None` before the first delayed echo.
    pub fn held_p50_us(&self) -> Option<u64> {
        let mut held = self.shared.held_us.lock().unwrap_or_else(|e| e.into_inner()).clone();
        held.sort_unstable();
        held.get(held.len() / 2).copied()
    }

    pub fn echoes(&self) -> u64 {
        self.shared.echoes.load(Ordering::SeqCst)
    }

    /// Close frames sent by the `close_every_nth_connection` behaviour.
    pub fn closes_sent(&self) -> u64 {
        self.shared.closes_sent.load(Ordering::SeqCst)
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wake the blocking accept() with a connection of our own.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
        let streams = std::mem::take(&mut *self.shared.streams.lock().unwrap_or_else(|e| e.into_inner()));
        for stream in streams {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }
}

fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    for stream in listener.incoming() {
        if shared.stopping() {
            return;
        }
        let Ok(stream) = stream else {
            // Out of file descriptors or similar: back off instead of spinning.
            thread::sleep(Duration::from_millis(10));
            continue;
        };
        let number = shared.accepted.fetch_add(1, Ordering::SeqCst) + 1;
        if let Ok(clone) = stream.try_clone() {
            shared.streams.lock().unwrap_or_else(|e| e.into_inner()).push(clone);
        }
        let conn_shared = shared.clone();
        let spawned = thread::Builder::new()
            .name(format!("scripted-{number}"))
            .stack_size(CONNECTION_STACK)
            .spawn(move || {
                let _ = serve_connection(stream, number, &conn_shared);
            });
        if spawned.is_err() {
            eprintln!("scripted server: cannot spawn a thread for connection {number}");
        }
    }
}

fn serve_connection(mut stream: TcpStream, number: u64, shared: &Shared) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let mut buf: Vec<u8> = Vec::with_capacity(16 * 1024);
    let mut chunk = vec![0u8; 64 * 1024];

    // Opening handshake.
    let request = loop {
        if let Some((request, used)) =
            parse_request(&buf, DEFAULT_MAX_HEADER_BYTES).map_err(io::Error::other)?
        {
            buf.drain(..used);
            break request;
        }
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let Request::Upgrade(upgrade) = request else {
        stream.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")?;
        return Ok(());
    };
    let mut response = server_response(&upgrade, shared.script.subprotocol);
    if let Some(value) = &shared.script.extensions {
        wsbench_proto::handshake::add_header(&mut response, "Sec-WebSocket-Extensions", value);
    }
    stream.write_all(&response)?;

    let close_code = shared.script.close_every.and_then(|(n, code)| number.is_multiple_of(n).then_some(code));
    let ignore_close = shared.script.ignore_close_every.is_some_and(|n| number.is_multiple_of(n));
    let mut decoder = Decoder::new(Role::Server, MAX_MESSAGE);
    let mut message: Vec<u8> = Vec::new();
    let mut message_opcode = OpCode::Binary;
    let mut out: Vec<u8> = Vec::new();
    let mut pings: u64 = 0;
    // With a capacity: when the previous echo's service ended (its absolute deadline), and
    // when the bytes in `buf` arrived (`None`: they were already waiting, i.e. queued).
    let mut served_until: Option<Instant> = None;
    let mut arrived: Option<Instant> = None;
    loop {
        // Decode every complete chunk in `buf`.
        let mut used = 0;
        while let Some(piece) = decoder.decode(&mut buf[used..]).map_err(io::Error::other)? {
            let payload = used + piece.payload.start..used + piece.payload.end;
            used += piece.consumed;
            match piece.opcode {
                OpCode::Text | OpCode::Binary => {
                    if piece.first {
                        message.clear();
                        message_opcode = piece.opcode;
                    }
                    message.extend_from_slice(&buf[payload]);
                    if !piece.last {
                        continue;
                    }
                    shared.wait_out_stall();
                    if let Some(delay) = shared.script.delay {
                        let slept = Instant::now();
                        thread::sleep(delay);
                        let held = slept.elapsed().as_micros() as u64;
                        let mut held_us = shared.held_us.lock().unwrap_or_else(|e| e.into_inner());
                        if held_us.len() < MAX_RECORDED_DELAYS {
                            held_us.push(held);
                        }
                    }
                    if let Some(service) = shared.script.service_time {
                        let start = match (served_until, arrived) {
                            (Some(until), Some(at)) => until.max(at),
                            (Some(until), None) => until,
                            (None, at) => at.unwrap_or_else(Instant::now),
                        };
                        let due = start + service;
                        thread::sleep(due.saturating_duration_since(Instant::now()));
                        served_until = Some(due);
                    }
                    if shared.script.corrupt {
                        corrupt(&mut message);
                    }
                    out.clear();
                    write_frame(&mut out, true, message_opcode, None, &message);
                    stream.write_all(&out)?;
                    shared.echoes.fetch_add(1, Ordering::Relaxed);
                    if let Some(code) = close_code {
                        out.clear();
                        write_frame(&mut out, true, OpCode::Close, None, &code.to_be_bytes());
                        stream.write_all(&out)?;
                        shared.closes_sent.fetch_add(1, Ordering::SeqCst);
                        return linger_until_closed(stream);
                    }
                }
                OpCode::Ping => {
                    pings += 1;
                    if shared.script.ignore_ping_every.is_none_or(|n| !pings.is_multiple_of(n)) {
                        out.clear();
                        write_frame(&mut out, true, OpCode::Pong, None, &buf[payload]);
                        stream.write_all(&out)?;
                    }
                }
                OpCode::Close if ignore_close => {}
                OpCode::Close => {
                    // Answer with the client's code (or none), then end the connection.
                    let body = buf[payload].get(..2).map(<[u8]>::to_vec).unwrap_or_default();
                    out.clear();
                    write_frame(&mut out, true, OpCode::Close, None, &body);
                    let _ = stream.write_all(&out);
                    return linger_until_closed(stream);
                }
                OpCode::Pong | OpCode::Continuation => {}
            }
        }
        buf.drain(..used);
        if shared.stopping() {
            return Ok(());
        }
        shared.wait_out_stall();
        let n = if shared.script.service_time.is_some() {
            let (n, waited) = read_noting_wait(&mut stream, &mut chunk)?;
            arrived = waited.then(Instant::now);
            n
        } else {
            stream.read(&mut chunk)?
        };
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Reads what is waiting, or blocks for the next bytes; says whether it had to wait (the
/// bytes arrived just now) or found them already there (they were queued).
fn read_noting_wait(stream: &mut TcpStream, chunk: &mut [u8]) -> io::Result<(usize, bool)> {
    stream.set_nonblocking(true)?;
    let waiting = stream.read(chunk);
    stream.set_nonblocking(false)?;
    match waiting {
        Ok(n) => Ok((n, false)),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok((stream.read(chunk)?, true)),
        Err(e) => Err(e),
    }
}

/// After our close frame: stop writing and read (and discard) until the client closes, so
/// the client sees the close frame rather than a reset.
fn linger_until_closed(mut stream: TcpStream) -> io::Result<()> {
    stream.shutdown(Shutdown::Write)?;
    stream.set_read_timeout(Some(CLOSE_LINGER))?;
    let mut sink = [0u8; 4096];
    while let Ok(n) = stream.read(&mut sink) {
        if n == 0 {
            break;
        }
    }
    Ok(())
}

/// Changes one byte of an echo. In a json-ts message (`{"ts":…,"seq":N}`) the first digit
/// of the sequence number changes, so the text stays UTF-8 but answers no request; otherwise
/// the last byte has its lowest bit flipped (ASCII stays ASCII; the number a payload carries
/// in its first 8 bytes stays whole).
fn corrupt(message: &mut [u8]) {
    let seq_digit = message.windows(6).position(|w| w == b"\"seq\":").map(|at| at + 6);
    match seq_digit {
        Some(at) if message.get(at).is_some_and(u8::is_ascii_digit) => message[at] ^= 1,
        _ => {
            if let Some(last) = message.last_mut() {
                *last ^= 1;
            }
        }
    }
}
