//! An engine worker: one thread, pinned to one client CPU, owning its share of the
//! connections and its own [`Metrics`] (no locks on the hot path). It opens connections on
//! the ramp's schedule, keeps each one's messages in flight, records every round trip, and
//! at the end drains what is in flight and closes cleanly.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use mio::{Events, Interest, Poll, Token};
use rand::RngCore;
use rustls::ClientConnection;
use rustls_pki_types::ServerName;
use slab::Slab;
use socket2::{Domain, Protocol, Socket, Type};
use wsbench_proto::handshake::{client_key, client_request, parse_response};
use wsbench_proto::{CloseCode, Decoder, OpCode, Role, parse_close_payload, write_frame};
use wsbench_transport::Transport;

use super::conn::{ClientConn, State};
use super::payload::{CHECK_EVERY, Template, json_seq};
use super::{Control, EngineSpec};
use crate::config::Scenario;
use crate::metrics::{Metrics, record_us};

const READ_BUFFER_BYTES: usize = 256 * 1024;
/// Connects in progress per worker: beyond this the listen backlog overflows and SYNs are
/// dropped, which shows up as 1 s and 3 s connect times.
const MAX_CONNECTING: usize = 512;
/// Longest a worker sleeps without checking the run's phase.
const TICK: Duration = Duration::from_millis(20);
/// At the end of the run: how long to wait for echoes still in flight, then for the
/// server's close frames.
const DRAIN: Duration = Duration::from_secs(1);
const CLOSE_WAIT: Duration = Duration::from_millis(300);
/// `--reconnect`: pause before reopening a lost connection (and between failed attempts).
const RECONNECT_DELAY: Duration = Duration::from_millis(100);
/// Longest echo of a json-ts message worth reading (the messages are under 64 bytes).
const MAX_JSON_ECHO: usize = 256;
/// Echoes counted locally before the shared progress counter is updated.
const PROGRESS_BATCH: u64 = 256;

/// What one worker does: which connections (global indices) it opens.
#[derive(Debug, Clone)]
pub struct WorkerPlan {
    pub id: usize,
    pub cpu: Option<usize>,
    pub connections: Vec<u64>,
}

/// What a worker hands back.
#[derive(Debug)]
pub struct WorkerOutput {
    pub metrics: Metrics,
    /// Round trips received inside the measured window.
    pub measured_echoes: u64,
    /// CPU seconds this worker's thread used (read by the thread itself before exiting).
    pub cpu_seconds: f64,
}

pub struct Worker {
    spec: Arc<EngineSpec>,
    control: Arc<Control>,
    plan: WorkerPlan,
    poll: Poll,
    events: Events,
    /// This poll's events: token, readable, writable, and whether the peer's FIN came with it.
    ready: Vec<(Token, bool, bool, bool)>,
    conns: Slab<ClientConn>,
    template: Template,
    read_buf: Box<[u8]>,
    metrics: Metrics,
    measured_echoes: u64,
    next_connection: usize,
    connecting: usize,
    connect_deadlines: VecDeque<(Instant, usize, Instant)>,
    reported_connected: bool,
    /// Open loop: the next scheduled send of each connection (due, key, connection start as
    /// its identity, since keys are reused).
    timers: BinaryHeap<Reverse<(Instant, usize, Instant)>>,
    traffic_started: bool,
    /// `--reconnect`: connections to reopen (when, connection number).
    reconnects: VecDeque<(Instant, u64)>,
    draining_since: Option<Instant>,
    closing_since: Option<Instant>,
    open: u64,
}

impl Worker {
    pub fn new(spec: Arc<EngineSpec>, control: Arc<Control>, plan: WorkerPlan) -> io::Result<Worker> {
        let template = Template::new(spec.config.payload, spec.config.message, spec.config.frames_per_send);
        Ok(Worker {
            poll: Poll::new()?,
            events: Events::with_capacity(1024),
            ready: Vec::with_capacity(1024),
            conns: Slab::with_capacity(plan.connections.len()),
            template,
            read_buf: vec![0u8; READ_BUFFER_BYTES].into_boxed_slice(),
            metrics: Metrics::default(),
            measured_echoes: 0,
            next_connection: 0,
            connecting: 0,
            connect_deadlines: VecDeque::new(),
            reported_connected: false,
            timers: BinaryHeap::new(),
            traffic_started: false,
            reconnects: VecDeque::new(),
            draining_since: None,
            closing_since: None,
            open: 0,
            spec,
            control,
            plan,
        })
    }

    pub fn run(mut self) -> WorkerOutput {
        loop {
            let now = Instant::now();
            let second = self.micros_since_start(now) / 1_000_000;
            let open = self.open;
            if second > 0 && self.metrics.intervals.len() as u64 == second {
                // A new second begins: publish the last one's p99 for the progress line.
                let p99 = self.metrics.interval(second - 1).latency.value_at_quantile(0.99);
                self.control.last_p99_us.store(p99, Ordering::Relaxed);
            }
            let interval = self.metrics.interval(second);
            interval.connections_open = interval.connections_open.max(open);
            self.open_due_connections(now);
            self.expire_connects(now);
            if !self.traffic_started && self.control.traffic() {
                self.traffic_started = true;
                let keys: Vec<usize> =
                    self.conns.iter().filter(|(_, c)| c.state == State::Open).map(|(k, _)| k).collect();
                for key in keys {
                    self.start_traffic(key, now);
                    self.flush(key);
                }
            }
            self.fire_timers(now);
            if self.finish_phase(now) {
                break;
            }
            let timeout = self.next_wakeup(now);
            if let Err(e) = self.poll.poll(&mut self.events, Some(timeout))
                && e.kind() != io::ErrorKind::Interrupted
            {
                eprintln!("wsbench: worker {} poll failed: {e}", self.plan.id);
                break;
            }
            self.ready.clear();
            for event in &self.events {
                let readable = event.is_readable() || event.is_read_closed() || event.is_error();
                let writable = event.is_writable() || event.is_error();
                self.ready.push((event.token(), readable, writable, event.is_read_closed()));
            }
            for i in 0..self.ready.len() {
                let (Token(key), readable, writable, read_closed) = self.ready[i];
                self.on_event(key, readable, writable, read_closed);
            }
        }
        for (_, conn) in self.conns.iter() {
            self.metrics.counters.messages_unanswered += conn.in_flight.len() as u64;
        }
        self.conns.clear();
        if self.spec.config.message_interval.is_none() {
            self.metrics.latency_uncorrected = self.metrics.latency.clone();
        }
        WorkerOutput {
            metrics: self.metrics,
            measured_echoes: self.measured_echoes,
            cpu_seconds: crate::client_cpu::thread_cpu_seconds_self(),
        }
    }

    fn micros_since_start(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.control.start).as_micros() as u64
    }

    fn next_wakeup(&self, now: Instant) -> Duration {
        let mut wake = TICK;
        if let Some(due) = self.next_connect_due()
            && self.connecting < MAX_CONNECTING
        {
            wake = wake.min(due.saturating_duration_since(now));
        }
        if let Some((deadline, _, _)) = self.connect_deadlines.front() {
            wake = wake.min(deadline.saturating_duration_since(now));
        }
        if let Some((due, _)) = self.reconnects.front() {
            wake = wake.min(due.saturating_duration_since(now));
        }
        if let Some(Reverse((due, _, _))) = self.timers.peek() {
            wake = wake.min(due.saturating_duration_since(now));
        }
        wake
    }

    fn next_connect_due(&self) -> Option<Instant> {
        let index = *self.plan.connections.get(self.next_connection)?;
        if self.control.stopping() {
            return None;
        }
        Some(match self.spec.config.ramp_per_sec {
            Some(rate) => self.control.start + Duration::from_secs_f64(index as f64 / rate),
            None => self.control.start,
        })
    }

    fn open_due_connections(&mut self, now: Instant) {
        while self.connecting < MAX_CONNECTING {
            match self.next_connect_due() {
                Some(due) if due <= now => {}
                _ => break,
            }
            let index = self.plan.connections[self.next_connection];
            self.next_connection += 1;
            self.metrics.counters.connections_attempted += 1;
            if let Err(error) = self.connect(index, now) {
                self.count_connect_error(&error);
                self.reconnect_later(index);
            }
        }
        while self.connecting < MAX_CONNECTING && !self.control.stopping() {
            match self.reconnects.front() {
                Some(&(due, index)) if due <= now => {
                    self.reconnects.pop_front();
                    self.metrics.counters.reconnections += 1;
                    self.metrics.counters.connections_attempted += 1;
                    if let Err(error) = self.connect(index, now) {
                        self.count_connect_error(&error);
                        self.reconnect_later(index);
                    }
                }
                _ => break,
            }
        }
        if !self.reported_connected
            && self.next_connection == self.plan.connections.len()
            && self.connecting == 0
        {
            self.reported_connected = true;
            self.control.workers_connected.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn connect(&mut self, index: u64, now: Instant) -> io::Result<()> {
        let target = &self.spec.target;
        let socket = Socket::new(Domain::for_address(target.addr), Type::STREAM, Some(Protocol::TCP))?;
        socket.set_nonblocking(true)?;
        socket.set_tcp_nodelay(true)?;
        if !self.spec.source_addrs.is_empty() {
            let source = self.spec.source_addrs[index as usize % self.spec.source_addrs.len()];
            bind_address_no_port(&socket)?;
            socket.bind(&SocketAddr::new(source, 0).into())?;
        }
        match socket.connect(&target.addr.into()) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
            Err(e) => return Err(e),
        }
        let stream = mio::net::TcpStream::from_std(socket.into());
        let transport = match &self.spec.tls {
            Some(config) => {
                let name = ServerName::try_from(target.host.clone())
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
                let session = ClientConnection::new(config.clone(), name).map_err(io::Error::other)?;
                Transport::tls(stream, session)
            }
            None => Transport::Plain(stream),
        };
        let mut nonce = [0u8; 16];
        rand::rng().fill_bytes(&mut nonce);
        let decoder = Decoder::new(Role::Client, u64::MAX >> 1);
        let mut conn = ClientConn::new(transport, index, client_key(nonce), decoder, now);
        let entry = self.conns.vacant_entry();
        let key = entry.key();
        self.poll.registry().register(
            conn.transport.socket(),
            Token(key),
            Interest::READABLE | Interest::WRITABLE,
        )?;
        conn.output.extend_from_slice(&client_request(&target.host_header(), &target.path, &conn.key, &[]));
        entry.insert(conn);
        self.connecting += 1;
        self.connect_deadlines.push_back((now + self.spec.config.connect_timeout, key, now));
        Ok(())
    }

    fn count_connect_error(&mut self, error: &io::Error) {
        let counters = &mut self.metrics.counters;
        match error.raw_os_error() {
            Some(libc::ECONNREFUSED) => counters.connections_refused += 1,
            Some(libc::ETIMEDOUT) => counters.connect_timeouts += 1,
            _ => counters.connect_errors += 1,
        }
    }

    fn expire_connects(&mut self, now: Instant) {
        while let Some(&(deadline, key, started)) = self.connect_deadlines.front() {
            if deadline > now {
                break;
            }
            self.connect_deadlines.pop_front();
            let still_connecting = self.conns.get(key).is_some_and(|c| {
                c.started == started && matches!(c.state, State::Connecting | State::Upgrading)
            });
            if still_connecting {
                self.metrics.counters.connect_timeouts += 1;
                self.drop_conn(key);
            }
        }
    }

    /// Handles the end of the run. Returns true when the worker is done.
    fn finish_phase(&mut self, now: Instant) -> bool {
        if !self.control.stopping() {
            return false;
        }
        let draining_since = *self.draining_since.get_or_insert(now);
        let in_flight: usize = self.conns.iter().map(|(_, c)| c.in_flight.len()).sum();
        let drain = if self.control.interrupted.load(Ordering::Relaxed) { DRAIN / 5 } else { DRAIN };
        if self.closing_since.is_none() && (in_flight == 0 || now >= draining_since + drain) {
            self.closing_since = Some(now);
            let keys: Vec<usize> = self.conns.iter().map(|(k, _)| k).collect();
            for key in keys {
                self.start_close(key);
            }
        }
        match self.closing_since {
            Some(since) => self.conns.is_empty() || now >= since + CLOSE_WAIT,
            None => false,
        }
    }

    /// End of run: count what is unanswered and send close 1000.
    fn start_close(&mut self, key: usize) {
        let conn = &mut self.conns[key];
        if conn.state != State::Open {
            if matches!(conn.state, State::Connecting | State::Upgrading) {
                self.drop_conn(key);
            }
            return;
        }
        self.metrics.counters.messages_unanswered += conn.in_flight.len() as u64;
        conn.in_flight.clear();
        conn.state = State::Closing;
        write_frame(&mut conn.output, true, OpCode::Close, Some([0; 4]), &CloseCode::NORMAL.to_be_bytes());
        self.flush(key);
    }

    /// `read_closed`: the peer's FIN is already in, and no later event will say so.
    fn on_event(&mut self, key: usize, readable: bool, writable: bool, read_closed: bool) {
        let Some(conn) = self.conns.get_mut(key) else { return };
        if conn.state == State::Connecting {
            if !(readable || writable) {
                return;
            }
            match conn.transport.socket().take_error() {
                Ok(None) => {}
                Ok(Some(error)) | Err(error) => {
                    self.count_connect_error(&error);
                    return self.drop_conn(key);
                }
            }
            match conn.transport.socket().peer_addr() {
                Ok(_) => conn.state = State::Upgrading,
                Err(e) if e.kind() == io::ErrorKind::NotConnected => return,
                Err(error) => {
                    self.count_connect_error(&error);
                    return self.drop_conn(key);
                }
            }
        }
        if writable && !self.flush(key) {
            return;
        }
        if readable || self.conns.get(key).is_some_and(|c| c.state == State::Upgrading) {
            self.read(key, read_closed);
        }
    }

    /// Writes pending output; keeps write interest only while something is pending.
    /// Returns false when the connection was dropped.
    fn flush(&mut self, key: usize) -> bool {
        let batch: &[u8] = match &self.template {
            Template::Fixed { batch, .. } => batch,
            Template::JsonTs { .. } => &[],
        };
        let conn = &mut self.conns[key];
        let done = match conn.flush(batch) {
            Ok(done) => done,
            Err(_) => {
                self.on_broken(key);
                return false;
            }
        };
        let want_write = !done || conn.state == State::Connecting;
        if want_write != conn.write_interest {
            conn.write_interest = want_write;
            let interest =
                if want_write { Interest::READABLE | Interest::WRITABLE } else { Interest::READABLE };
            if self.poll.registry().reregister(conn.transport.socket(), Token(key), interest).is_err() {
                self.on_broken(key);
                return false;
            }
        }
        true
    }

    fn read(&mut self, key: usize, read_closed: bool) {
        // The read buffer is lent out for the call so `process` can borrow the worker.
        let mut buf = std::mem::take(&mut self.read_buf);
        self.read_into(key, &mut buf, read_closed);
        self.read_buf = buf;
    }

    fn read_into(&mut self, key: usize, buf: &mut [u8], read_closed: bool) {
        loop {
            let Some(conn) = self.conns.get_mut(key) else { return };
            let n = match conn.transport.read(buf) {
                Ok(0) => return self.on_broken(key),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::InvalidData && conn.transport.is_handshaking() => {
                    self.metrics.counters.handshake_failures += 1;
                    return self.drop_conn(key);
                }
                Err(_) => return self.on_broken(key),
            };
            self.metrics.counters.bytes_received += n as u64;
            let now = Instant::now();
            let mut input = std::mem::take(&mut conn.input);
            if input.is_empty() {
                let used = self.process(key, now, &mut buf[..n]);
                input.extend_from_slice(&buf[used..n]);
            } else {
                input.extend_from_slice(&buf[..n]);
                let used = self.process(key, now, &mut input);
                input.drain(..used);
            }
            let Some(conn) = self.conns.get_mut(key) else { return };
            conn.input = input;
            // A short read drains the socket, unless the FIN came with the data (a server
            // that sends its last bytes and closes): then read on, to the end of the stream.
            let drained = !read_closed && n < buf.len() && conn.transport.short_read_drains();
            if !self.flush(key) || drained {
                return;
            }
        }
    }

    /// Handles the handshake response and frames at the start of `data`; returns the bytes
    /// used. The connection may be gone afterwards (then everything counts as used).
    fn process(&mut self, key: usize, now: Instant, data: &mut [u8]) -> usize {
        let mut used = 0;
        let conn = &mut self.conns[key];
        if conn.state == State::Upgrading {
            match parse_response(data, &conn.key) {
                Ok(None) => return 0,
                Ok(Some((_, n))) => {
                    used = n;
                    self.on_open(key, now);
                }
                Err(_) => {
                    self.metrics.counters.handshake_failures += 1;
                    self.drop_conn(key);
                    return data.len();
                }
            }
        }
        loop {
            let Some(conn) = self.conns.get_mut(key) else { return data.len() };
            let chunk = match conn.decoder.decode(&mut data[used..]) {
                Ok(Some(chunk)) => chunk,
                Ok(None) => return used,
                Err(error) => {
                    self.metrics.counters.protocol_errors += 1;
                    self.metrics.counters.messages_unanswered += conn.in_flight.len() as u64;
                    conn.in_flight.clear();
                    let code = error.close_code().to_be_bytes();
                    write_frame(&mut conn.output, true, OpCode::Close, Some([0; 4]), &code);
                    let _ = conn.flush(&[]);
                    self.drop_conn(key);
                    return data.len();
                }
            };
            let payload = used + chunk.payload.start..used + chunk.payload.end;
            used += chunk.consumed;
            match chunk.opcode {
                OpCode::Text | OpCode::Binary => {
                    self.on_data(key, chunk.first, chunk.last, &data[payload], now)
                }
                OpCode::Ping => {
                    write_frame(&mut conn.output, true, OpCode::Pong, Some([0; 4]), &data[payload]);
                }
                OpCode::Close => {
                    if conn.state == State::Open {
                        let code =
                            parse_close_payload(&data[payload]).ok().flatten().map_or(0, |(code, _)| code);
                        *self.metrics.counters.closed_by_server.entry(code).or_default() += 1;
                        self.metrics.counters.messages_unanswered += conn.in_flight.len() as u64;
                        conn.in_flight.clear();
                        let reply = if code == 0 { Vec::new() } else { code.to_be_bytes().to_vec() };
                        write_frame(&mut conn.output, true, OpCode::Close, Some([0; 4]), &reply);
                        let _ = conn.flush(&[]);
                    }
                    self.drop_conn(key);
                    return data.len();
                }
                OpCode::Pong | OpCode::Continuation => {}
            }
        }
    }

    fn on_open(&mut self, key: usize, now: Instant) {
        let conn = &mut self.conns[key];
        conn.state = State::Open;
        self.connecting -= 1;
        self.open += 1;
        self.control.open_connections.fetch_add(1, Ordering::Relaxed);
        self.metrics.counters.connections_established += 1;
        record_us(&mut self.metrics.connect, now.duration_since(conn.started).as_micros() as u64);
        if self.control.traffic() {
            self.start_traffic(key, now);
        }
    }

    /// Begins a connection's messages: the closed loop's first batches, or the open loop's
    /// schedule, spread so that the connections' sends interleave evenly.
    fn start_traffic(&mut self, key: usize, now: Instant) {
        let config = &self.spec.config;
        match config.message_interval {
            None => self.fill_in_flight(key, now),
            Some(interval) if config.scenario != Scenario::Scalability => {
                let conn = &self.conns[key];
                let phase =
                    interval.mul_f64((conn.index % config.connections) as f64 / config.connections as f64);
                self.timers.push(Reverse((now + phase, key, conn.started)));
            }
            Some(_) => {}
        }
    }

    /// Open loop: sends every batch that has fallen due, on schedule whatever the replies.
    fn fire_timers(&mut self, now: Instant) {
        let Some(interval) = self.spec.config.message_interval else { return };
        while let Some(&Reverse((due, key, started))) = self.timers.peek() {
            if due > now {
                break;
            }
            self.timers.pop();
            if !self.control.sending_allowed(self.micros_since_start(due)) {
                continue;
            }
            let Some(conn) = self.conns.get_mut(key) else { continue };
            if conn.started != started || conn.state != State::Open {
                continue;
            }
            if self.has_room(key) {
                self.send_batch(key, due, now);
                self.flush(key);
            } else {
                self.conns[key].backlog.push_back(due);
            }
            if self.conns.contains(key) {
                self.timers.push(Reverse((due + interval, key, started)));
            }
        }
    }

    /// Whether one more batch fits under `--in-flight`.
    fn has_room(&self, key: usize) -> bool {
        let config = &self.spec.config;
        (self.conns[key].in_flight.len() as u64).saturating_add(config.frames_per_send) <= config.in_flight
    }

    /// Closed loop: sends batches until the connection has `in_flight` messages outstanding.
    fn fill_in_flight(&mut self, key: usize, now: Instant) {
        if self.spec.config.scenario == Scenario::Scalability
            || !self.control.sending_allowed(self.micros_since_start(now))
        {
            return;
        }
        while self.conns[key].state == State::Open && self.has_room(key) {
            self.send_batch(key, now, now);
        }
    }

    /// Queues one batch (`frames_per_send` messages) that was due at `intended`.
    fn send_batch(&mut self, key: usize, intended: Instant, now: Instant) {
        let frames = self.spec.config.frames_per_send;
        let conn = &mut self.conns[key];
        let bytes = match &self.template {
            Template::Fixed { batch, .. } => {
                conn.batches_pending += 1;
                batch.len()
            }
            Template::JsonTs { mask, opcode } => {
                let before = conn.output.len();
                for _ in 0..frames {
                    Template::encode_json(*mask, *opcode, conn.next_seq, &mut conn.output);
                    conn.next_seq += 1;
                }
                conn.output.len() - before
            }
        };
        conn.in_flight.extend(std::iter::repeat_n((intended, now), frames as usize));
        self.metrics.counters.messages_sent += frames;
        self.metrics.counters.bytes_sent += bytes as u64;
        if self.spec.config.message_interval.is_some() {
            let (measure_start, end) = self.control.window();
            let due_us = self.micros_since_start(intended);
            if due_us >= measure_start && due_us <= end {
                record_us(&mut self.metrics.send_lag, now.duration_since(intended).as_micros() as u64);
            }
        }
    }

    /// A piece of an echoed message arrived: check it, and on its last piece count the
    /// round trip.
    fn on_data(&mut self, key: usize, first: bool, last: bool, payload: &[u8], now: Instant) {
        let conn = &mut self.conns[key];
        if conn.state == State::Closing {
            // Echoes that crossed our close at the end of the run: already counted as
            // unanswered, and not round trips of the run.
            return;
        }
        let mismatch = match &self.template {
            Template::Fixed { payload: expected, .. } => {
                if first {
                    conn.check_offset = conn.echoes.is_multiple_of(CHECK_EVERY).then_some(0);
                    conn.check_failed = false;
                }
                if let Some(offset) = conn.check_offset {
                    conn.check_failed |= expected.get(offset..offset + payload.len()) != Some(payload);
                    conn.check_offset = Some(offset + payload.len());
                }
                last && (conn.check_failed || conn.check_offset.is_some_and(|end| end != expected.len()))
            }
            Template::JsonTs { .. } => {
                if first {
                    conn.check_failed = false;
                }
                // An echo longer than any json-ts message is wrong already; buffering it would
                // let a hostile server grow the client without bound (cf. CVE-2020-27813).
                if conn.message.len() + payload.len() > MAX_JSON_ECHO {
                    conn.check_failed = true;
                    conn.message = Vec::new();
                } else if !(conn.check_failed || first && last) {
                    conn.message.extend_from_slice(payload);
                }
                if !last {
                    return self.finish_data(key, false, now);
                }
                let message = if first { payload } else { &conn.message[..] };
                let mismatch = conn.check_failed || json_seq(message) != Some(conn.echoes);
                if !first {
                    conn.message = Vec::new();
                }
                mismatch
            }
        };
        if mismatch {
            self.metrics.counters.payload_mismatches += 1;
        }
        self.finish_data(key, last, now);
    }

    fn finish_data(&mut self, key: usize, last: bool, now: Instant) {
        if !last {
            return;
        }
        let conn = &mut self.conns[key];
        let Some((intended, sent)) = conn.in_flight.pop_front() else {
            // An echo of nothing we sent.
            self.metrics.counters.payload_mismatches += 1;
            return;
        };
        conn.echoes += 1;
        // Latency counts from when the message was due (coordinated omission corrected);
        // the uncorrected figure from when it actually went out is kept beside it.
        let latency = now.duration_since(intended).as_micros() as u64;
        let latency_uncorrected = now.duration_since(sent).as_micros() as u64;
        let now_us = self.micros_since_start(now);
        self.metrics.counters.messages_received += 1;
        let interval = self.metrics.interval(now_us / 1_000_000);
        interval.echoes += 1;
        record_us(&mut interval.latency, latency);
        let (measure_start, end) = self.control.window();
        if now_us >= measure_start && now_us <= end {
            record_us(&mut self.metrics.latency, latency);
            // A closed loop sends when it means to: the two figures are one, copied at the end.
            if self.spec.config.message_interval.is_some() {
                record_us(&mut self.metrics.latency_uncorrected, latency_uncorrected);
            }
            self.measured_echoes += 1;
        } else if now_us < measure_start {
            self.metrics.counters.warmup_messages += 1;
        }
        if self.metrics.counters.messages_received.is_multiple_of(PROGRESS_BATCH) {
            self.control.echoes.fetch_add(PROGRESS_BATCH, Ordering::Relaxed);
        }
        if self.spec.config.message_interval.is_none() {
            return self.fill_in_flight(key, now);
        }
        while self.has_room(key)
            && let Some(due) = self.conns[key].backlog.pop_front()
        {
            self.send_batch(key, due, now);
        }
    }

    /// The connection ended without a close frame from the server.
    fn on_broken(&mut self, key: usize) {
        let Some(conn) = self.conns.get(key) else { return };
        match conn.state {
            State::Connecting => self.metrics.counters.connect_errors += 1,
            State::Upgrading => self.metrics.counters.handshake_failures += 1,
            State::Open => {
                self.metrics.counters.resets += 1;
                self.metrics.counters.messages_unanswered += conn.in_flight.len() as u64;
            }
            State::Closing => {}
        }
        self.drop_conn(key);
    }

    /// With `--reconnect`, schedules connection `index` to be opened again.
    fn reconnect_later(&mut self, index: u64) {
        if self.spec.config.reconnect && !self.control.stopping() {
            self.reconnects.push_back((Instant::now() + RECONNECT_DELAY, index));
        }
    }

    fn drop_conn(&mut self, key: usize) {
        if let Some(mut conn) = self.conns.try_remove(key) {
            let _ = self.poll.registry().deregister(conn.transport.socket());
            if conn.state != State::Closing {
                // Lost, not closed by us at the end of the run.
                self.reconnect_later(conn.index);
            }
            match conn.state {
                State::Connecting | State::Upgrading => self.connecting -= 1,
                State::Open | State::Closing => {
                    self.open -= 1;
                    self.control.open_connections.fetch_sub(1, Ordering::Relaxed);
                }
            }
        }
    }
}

/// `IP_BIND_ADDRESS_NO_PORT`: bind the source address now but pick the port at connect
/// time, so ports are shared across destinations instead of exhausted at bind.
fn bind_address_no_port(socket: &Socket) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let one: libc::c_int = 1;
    // SAFETY: a valid fd and a pointer to a live c_int of the size given.
    let result = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_BIND_ADDRESS_NO_PORT,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if result == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}
