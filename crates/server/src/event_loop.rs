//! One event loop: a mio poll over this thread's listeners and connections.
//!
//! All socket I/O happens here. Input is read into one thread-wide buffer and handed to the
//! connection's state machine; replies are collected in one thread-wide output buffer and
//! written at once, so a connection keeps buffers of its own only while the peer is slow.
//! Readiness is edge-triggered: reads go on until `WouldBlock`, and write interest is
//! registered only while output is pending. A peer that does not read its echoes makes the
//! loop stop reading from it (backpressure) instead of growing memory.

use std::fs::File;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token, Waker};
use rustls::ServerConfig;
use slab::Slab;
use wsbench_proto::{MessageMemory, Reservation};
use wsbench_transport::{HandshakeTally, Transport};

mod deadlines;
mod fanout;
mod read;

use deadlines::Deadlines;

use crate::ServeConfig;
use crate::conn::{Conn, Limits, Next, Phase, SHUTDOWN_CLOSE_CODE};
use crate::large_buffers;
use crate::pubsub::{Subscriber, Topics};

const WEBSOCKET_LISTENER: Token = Token(0);
const TCP_LISTENER: Token = Token(1);
const WAKER: Token = Token(2);
const FIRST_CONNECTION: usize = 3;

const READ_BUFFER_BYTES: usize = 64 * 1024;
/// Pending output above which the loop stops reading from that peer.
pub(crate) const BACKPRESSURE_BYTES: usize = 1024 * 1024;
/// How long a connection that we closed may take to close its side.
const CLOSING_TIMEOUT: Duration = Duration::from_secs(2);
/// How long shutdown waits for peers to answer the 1001 close.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(500);
/// How long the server has had no connection before it returns their memory.
const IDLE_RELEASE_AFTER: Duration = Duration::from_millis(200);
const REFUSAL_LOG_INTERVAL: Duration = Duration::from_secs(1);

/// State shared by every event loop of one server.
#[derive(Debug)]
pub struct Shared {
    pub stopping: AtomicBool,
    /// Raised by one each time every connection is to be closed with the configured close
    /// code, the server going on (SIGUSR2: a graceful restart's closes).
    pub close_all: std::sync::atomic::AtomicU64,
    pub connections: AtomicUsize,
    /// Text and binary messages echoed so far, one counter per event loop (each written by
    /// its loop alone, so counting needs no locked instruction).
    pub echoed: Mutex<Vec<Arc<AtomicU64>>>,
    pub wakers: Mutex<Vec<Arc<Waker>>>,
    /// Over TLS: the handshakes completed, full and resumed, with their CPU (each loop adds).
    pub handshakes: Option<Mutex<HandshakeTally>>,
    /// The process's budget for messages still arriving, drawn on by every connection.
    pub message_memory: Arc<MessageMemory>,
}

pub struct EventLoop {
    poll: Poll,
    events: Events,
    /// This poll's events: token, readable, writable, and whether the peer's FIN came with it.
    ready: Vec<(Token, bool, bool, bool)>,
    config: ServeConfig,
    limits: Limits,
    tls: Option<Arc<ServerConfig>>,
    websocket_listener: Option<TcpListener>,
    tcp_listener: Option<TcpListener>,
    shared: Arc<Shared>,
    /// This loop's count of echoed messages (see [`Shared::echoed`]).
    echoed: Arc<AtomicU64>,
    conns: Slab<Conn>,
    read_buf: Box<[u8]>,
    out: Vec<u8>,
    handshake_deadlines: Deadlines,
    closing_deadlines: Deadlines,
    /// When the last connection closed, plus [`IDLE_RELEASE_AFTER`].
    idle_release_at: Option<Instant>,
    next_serial: u32,
    /// An fd held back so that, at the open-file limit, one can be freed to accept and
    /// immediately close a connection instead of leaving it hanging in the backlog.
    reserve_fd: Option<File>,
    last_refusal_log: Option<Instant>,
    stop_deadline: Option<Instant>,
    /// The [`Shared::close_all`] this loop has acted on.
    closed_all: u64,
    /// `--pubsub`: every subscription (pub/sub runs on one thread), the frame being
    /// delivered, and the subscribers it goes to.
    topics: Topics,
    frame: Vec<u8>,
    deliver_to: Vec<Subscriber>,
    /// Subscribers with deliveries waiting for the end of the turn.
    corked: Vec<usize>,
}

impl std::fmt::Debug for EventLoop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventLoop").field("connections", &self.conns.len()).finish_non_exhaustive()
    }
}

impl EventLoop {
    pub fn new(
        config: ServeConfig,
        tls: Option<Arc<ServerConfig>>,
        mut websocket_listener: TcpListener,
        mut tcp_listener: Option<TcpListener>,
        shared: Arc<Shared>,
    ) -> io::Result<EventLoop> {
        let poll = Poll::new()?;
        poll.registry().register(&mut websocket_listener, WEBSOCKET_LISTENER, Interest::READABLE)?;
        if let Some(listener) = tcp_listener.as_mut() {
            poll.registry().register(listener, TCP_LISTENER, Interest::READABLE)?;
        }
        let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
        shared.wakers.lock().unwrap_or_else(|e| e.into_inner()).push(waker);
        let echoed = Arc::new(AtomicU64::new(0));
        shared.echoed.lock().unwrap_or_else(|e| e.into_inner()).push(echoed.clone());
        Ok(EventLoop {
            poll,
            events: Events::with_capacity(1024),
            ready: Vec::with_capacity(1024),
            limits: Limits {
                max_message: config.max_message,
                max_header_bytes: config.max_header_bytes,
                deflate: config.deflate && !config.pubsub,
                pubsub: config.pubsub,
            },
            config,
            tls,
            websocket_listener: Some(websocket_listener),
            tcp_listener,
            shared,
            echoed,
            conns: Slab::new(),
            // Written once here, so their pages are in the RSS before the first connection:
            // a probe's baseline then includes the loop's fixed buffers.
            read_buf: vec![1u8; READ_BUFFER_BYTES].into_boxed_slice(),
            out: touched_buffer(READ_BUFFER_BYTES),
            handshake_deadlines: Deadlines::new(Instant::now()),
            closing_deadlines: Deadlines::new(Instant::now()),
            idle_release_at: None,
            next_serial: 0,
            reserve_fd: File::open("/dev/null").ok(),
            last_refusal_log: None,
            stop_deadline: None,
            closed_all: 0,
            topics: Topics::default(),
            frame: Vec::new(),
            deliver_to: Vec::new(),
            corked: Vec::new(),
        })
    }

    pub fn run(&mut self) -> io::Result<()> {
        loop {
            let timeout = self.next_timeout();
            match self.poll.poll(&mut self.events, timeout) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            self.ready.clear();
            for event in &self.events {
                let readable = event.is_readable() || event.is_read_closed() || event.is_error();
                self.ready.push((event.token(), readable, event.is_writable(), event.is_read_closed()));
            }
            for i in 0..self.ready.len() {
                let (token, readable, writable, peer_closed) = self.ready[i];
                match token {
                    WEBSOCKET_LISTENER => self.accept(false),
                    TCP_LISTENER => self.accept(true),
                    WAKER => {}
                    Token(n) => {
                        self.on_connection_event(n - FIRST_CONNECTION, readable, writable, peer_closed)
                    }
                }
            }
            self.uncork();
            crate::tls::add_handshakes(&self.shared.handshakes);
            let now = Instant::now();
            self.expire_deadlines(now);
            if self.idle_release_at.is_some_and(|at| now >= at) {
                self.idle_release_at = None;
                if self.conns.is_empty() {
                    self.release_idle_memory();
                }
            }
            if self.shared.stopping.load(Ordering::Relaxed) && self.stop_deadline.is_none() {
                self.begin_stop(now);
            }
            let close_all = self.shared.close_all.load(Ordering::Relaxed);
            if close_all != self.closed_all {
                self.closed_all = close_all;
                self.close_every_connection(self.config.close_code);
            }
            if let Some(deadline) = self.stop_deadline
                && (self.conns.is_empty() || now >= deadline)
            {
                return Ok(());
            }
        }
    }

    fn next_timeout(&self) -> Option<Duration> {
        let fronts = [
            self.handshake_deadlines.next(),
            self.closing_deadlines.next(),
            self.stop_deadline,
            self.idle_release_at,
        ];
        let earliest = fronts.into_iter().flatten().min()?;
        Some(earliest.saturating_duration_since(Instant::now()) + Duration::from_millis(1))
    }

    fn accept(&mut self, raw: bool) {
        loop {
            let listener = if raw { self.tcp_listener.as_ref() } else { self.websocket_listener.as_ref() };
            let Some(listener) = listener else { return };
            match listener.accept() {
                Ok((stream, _)) => self.admit(stream, raw),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) => {
                    if !self.refuse_at_file_limit(raw) {
                        return;
                    }
                }
                Err(e)
                    if matches!(e.kind(), io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted) => {}
                Err(e) => {
                    eprintln!("wsbench serve: accept failed: {e}");
                    return;
                }
            }
        }
    }

    /// At the open-file limit: frees the reserve fd to accept one pending connection and
    /// close it at once. Returns false when nothing could be done, including when nothing
    /// was pending: Linux reports EMFILE before it looks at the backlog, so an accept loop
    /// that went on after an empty accept here would spin forever.
    fn refuse_at_file_limit(&mut self, raw: bool) -> bool {
        self.log_refusal("open-file limit reached: refusing new connections (raise `ulimit -n` or use more server processes)");
        if self.reserve_fd.take().is_none() {
            return false;
        }
        let listener = if raw { self.tcp_listener.as_ref() } else { self.websocket_listener.as_ref() };
        let refused = listener.is_some_and(|listener| listener.accept().is_ok());
        self.reserve_fd = File::open("/dev/null").ok();
        refused
    }

    fn log_refusal(&mut self, what: &str) {
        let now = Instant::now();
        if self.last_refusal_log.is_none_or(|at| now.duration_since(at) >= REFUSAL_LOG_INTERVAL) {
            self.last_refusal_log = Some(now);
            let open = self.shared.connections.load(Ordering::Relaxed);
            eprintln!("wsbench serve: {what} ({open} connections open)");
        }
    }

    fn admit(&mut self, stream: TcpStream, raw: bool) {
        if self.shared.connections.load(Ordering::Relaxed) >= self.config.max_connections {
            self.log_refusal("--max-connections reached: refusing new connections");
            return;
        }
        let _ = stream.set_nodelay(true);
        let transport = match (&self.tls, raw) {
            (Some(config), false) => match crate::tls::accepted(stream, config) {
                Some(transport) => transport,
                None => return,
            },
            _ => Transport::Plain(stream),
        };
        let entry = self.conns.vacant_entry();
        let key = entry.key();
        let serial = self.next_serial;
        self.next_serial = self.next_serial.wrapping_add(1);
        let phase = if raw { Phase::Raw } else { Phase::Handshake };
        let conn = entry.insert(Conn::new(transport, phase, serial));
        conn.state.reservation = Reservation::new(self.shared.message_memory.clone());
        let token = Token(key + FIRST_CONNECTION);
        if self.poll.registry().register(conn.transport.socket(), token, Interest::READABLE).is_err() {
            self.conns.remove(key);
            return;
        }
        self.shared.connections.fetch_add(1, Ordering::Relaxed);
        if !raw {
            let at = Instant::now() + self.config.handshake_timeout;
            self.handshake_deadlines.push(at, key, serial);
        }
    }

    /// `peer_closed`: the peer's FIN is already in, and no later event will say so.
    fn on_connection_event(&mut self, key: usize, readable: bool, writable: bool, peer_closed: bool) {
        if !self.conns.contains(key) {
            return;
        }
        if writable && !self.flush(key) {
            return;
        }
        if readable {
            self.read(key, peer_closed);
        }
    }

    /// Reads until the socket is drained, processing and answering as it goes. With
    /// `until_would_block` it does not trust a short read to mean "drained": needed when the
    /// peer's FIN already arrived (no further event will come) or after a pause in reading.
    fn read(&mut self, key: usize, until_would_block: bool) {
        loop {
            let Some((n, asked, next)) = self.read_once(key) else { return };
            let conn = &mut self.conns[key];
            if !conn.state.inbox.is_empty() {
                self.handle_pubsub(key);
            } else if conn.state.h2().is_some_and(|h2| h2.has_commands()) {
                self.handle_pubsub_streams(key);
            }
            let conn = &mut self.conns[key];
            if conn.state.phase == Phase::Handshake
                && self.out.is_empty()
                && conn.input.len() > self.limits.max_header_bytes
            {
                return self.close(key);
            }
            if !self.send(key) {
                return;
            }
            if next == Next::CloseAfterFlush {
                return self.begin_closing(key);
            }
            let conn = &mut self.conns[key];
            // A frame echoed as it arrives is read no faster than the peer takes its echo.
            if conn.output.len() > BACKPRESSURE_BYTES
                || (conn.state.echo_streaming() && !conn.output.is_empty())
            {
                conn.reading_paused = true;
                return;
            }
            if !until_would_block && n < asked && conn.transport.short_read_drains() {
                return;
            }
        }
    }

    /// Writes the thread's output buffer for `key`, keeping what the socket refuses.
    /// Returns false when the connection was closed because of a write error.
    fn send(&mut self, key: usize) -> bool {
        // Counted before the echoes go out: a peer that has its echo sees it counted.
        let echoed = crate::echo_count::take_echoed();
        if echoed > 0 {
            self.echoed.store(self.echoed.load(Ordering::Relaxed) + echoed, Ordering::Relaxed);
        }
        let conn = &mut self.conns[key];
        if !self.out.is_empty() {
            if conn.output.is_empty() {
                match write_some(&mut conn.transport, &self.out) {
                    Ok(written) if written < self.out.len() => {
                        if self.out.len() - written > BACKPRESSURE_BYTES {
                            // A large echo: the rest goes out from this buffer, handed over
                            // instead of copied.
                            conn.output =
                                std::mem::replace(&mut self.out, Vec::with_capacity(READ_BUFFER_BYTES));
                            conn.output_sent = written;
                        } else {
                            conn.output.extend_from_slice(&self.out[written..]);
                        }
                    }
                    Ok(_) => {}
                    Err(_) => {
                        self.out.clear();
                        self.close(key);
                        return false;
                    }
                }
            } else {
                conn.output.extend_from_slice(&self.out);
            }
            self.out.clear();
            if self.out.capacity() > BACKPRESSURE_BYTES {
                large_buffers::give_back(std::mem::replace(
                    &mut self.out,
                    Vec::with_capacity(READ_BUFFER_BYTES),
                ));
            }
        }
        self.flush(key)
    }

    /// Writes pending output; updates write interest; resumes reading once drained.
    /// Returns false when the connection was closed.
    fn flush(&mut self, key: usize) -> bool {
        let conn = &mut self.conns[key];
        let mut drained = match conn.transport.flush() {
            Ok(done) => done,
            Err(_) => {
                self.close(key);
                return false;
            }
        };
        while drained && conn.output_sent < conn.output.len() {
            match write_some(&mut conn.transport, &conn.output[conn.output_sent..]) {
                Ok(0) => drained = false,
                Ok(n) => conn.output_sent += n,
                Err(_) => {
                    self.close(key);
                    return false;
                }
            }
        }
        if drained && !conn.output.is_empty() {
            // A small buffer is kept for the next deliveries; a large echo's is given back.
            if conn.output.capacity() > READ_BUFFER_BYTES {
                large_buffers::give_back(std::mem::take(&mut conn.output));
            } else {
                conn.output.clear();
            }
            conn.output_sent = 0;
            drained = conn.transport.flush().unwrap_or(false);
        }
        let want_write = !drained;
        if want_write != conn.write_interest {
            conn.write_interest = want_write;
            let interest =
                if want_write { Interest::READABLE | Interest::WRITABLE } else { Interest::READABLE };
            let token = Token(key + FIRST_CONNECTION);
            if self.poll.registry().reregister(conn.transport.socket(), token, interest).is_err() {
                self.close(key);
                return false;
            }
        }
        if drained {
            if conn.state.phase == Phase::Closing && !conn.write_shut {
                conn.write_shut = true;
                conn.transport.shutdown_write();
            }
            if conn.reading_paused {
                conn.reading_paused = false;
                self.read(key, true);
                return self.conns.contains(key);
            }
        }
        true
    }

    /// Our side is finished: flush, half-close, and wait (bounded) for the peer to close.
    fn begin_closing(&mut self, key: usize) {
        let conn = &mut self.conns[key];
        conn.state.phase = Phase::Closing;
        conn.reading_paused = false;
        let serial = conn.serial;
        self.closing_deadlines.push(Instant::now() + CLOSING_TIMEOUT, key, serial);
        self.flush(key);
    }

    fn close(&mut self, key: usize) {
        if let Some(mut conn) = self.conns.try_remove(key) {
            let _ = self.poll.registry().deregister(conn.transport.socket());
            self.shared.connections.fetch_sub(1, Ordering::Relaxed);
            if self.conns.is_empty() {
                self.idle_release_at = Some(Instant::now() + IDLE_RELEASE_AFTER);
            }
        }
    }

    /// Idle for [`IDLE_RELEASE_AFTER`]: gives the memory the connections used back to the
    /// system (the connection table's capacity, and the allocator's free pages), so the
    /// server's RSS returns to what it was before them; a server that keeps growing while
    /// idle leaks.
    fn release_idle_memory(&mut self) {
        self.conns.shrink_to_fit();
        self.handshake_deadlines.shrink_to_fit();
        self.closing_deadlines.shrink_to_fit();
        self.deliver_to.shrink_to_fit();
        if self.out.capacity() > READ_BUFFER_BYTES {
            self.out = touched_buffer(READ_BUFFER_BYTES);
        }
        large_buffers::release_spare();
        #[cfg(target_env = "gnu")]
        // SAFETY: malloc_trim only returns free heap memory to the system.
        unsafe {
            libc::malloc_trim(0);
        }
    }

    fn expire_deadlines(&mut self, now: Instant) {
        while let Some((key, serial)) = self.handshake_deadlines.pop_due(now) {
            if self.conns.get(key).is_some_and(|c| c.serial == serial && c.state.phase == Phase::Handshake) {
                self.close(key);
            }
        }
        while let Some((key, serial)) = self.closing_deadlines.pop_due(now) {
            if self.conns.get(key).is_some_and(|c| c.serial == serial && c.state.phase == Phase::Closing) {
                self.close(key);
            }
        }
    }

    /// Shutdown: stop accepting, send 1001 to every WebSocket, drop the rest.
    fn begin_stop(&mut self, now: Instant) {
        self.stop_deadline = Some(now + SHUTDOWN_GRACE);
        self.websocket_listener = None;
        self.tcp_listener = None;
        self.close_every_connection(SHUTDOWN_CLOSE_CODE);
    }

    /// Closes every WebSocket with `code` (watched as any close) and drops the rest.
    fn close_every_connection(&mut self, code: u16) {
        let keys: Vec<usize> = self.conns.iter().map(|(key, _)| key).collect();
        for key in keys {
            let conn = &mut self.conns[key];
            match conn.state.phase {
                Phase::WebSocket | Phase::Http2 => {
                    conn.close_with(code, &mut self.out);
                    if self.send(key) {
                        self.begin_closing(key);
                    }
                }
                Phase::Closing => {}
                _ => self.close(key),
            }
        }
    }
}

/// Writes as much of `data` as the socket takes now; `WouldBlock` counts as 0.
fn write_some(transport: &mut Transport, data: &[u8]) -> io::Result<usize> {
    let mut written = 0;
    while written < data.len() {
        match transport.write(&data[written..]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => written += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(written)
}

/// An empty buffer with `capacity` bytes whose pages have been written once.
fn touched_buffer(capacity: usize) -> Vec<u8> {
    let mut buffer = vec![1u8; capacity];
    buffer.clear();
    buffer
}
