//! One QUIC connection carrying up to `--streams-per-connection` WebSockets over HTTP/3:
//! its UDP socket (connected to the server, so only its datagrams come), a QUIC endpoint
//! with the one connection, and its streams. It connects (TLS 1.3 with ALPN `h3`), waits
//! for the server's SETTINGS and opens its WebSockets as extended CONNECTs only when
//! SETTINGS_ENABLE_CONNECT_PROTOCOL is on (RFC 9220 §3); a server without it refuses each
//! by cause (`h3_no_connect_protocol`). A stream's reset ends its WebSocket alone; the
//! connection's end ends those it carries, each counted by cause (`h3_…`, QUIC's transport
//! error codes, `quic_timed_out`). QUIC's timers run through [`Carrier::on_timer`]. Never
//! blocks. Dropped, it closes its QUIC connection (H3_NO_ERROR) if that is still open.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::time::Instant;

use bytes::Bytes;
use mio::net::UdpSocket;
use slab::Slab;
use wsbench_transport::quic::{self, ClientConfig, Endpoint, Event, PacketStats, StreamId};

use super::request;
use crate::engine::dial::carrier::{Carrier, CarrierCx, StreamEvent};
use crate::engine::handshake_failure::{HandshakeFailure, Upgrade};

/// Bytes a stream may have queued for QUIC before its WebSocket's output waits.
const PENDING_LIMIT: usize = 1 << 20;

/// Where the QUIC connection is: before the server's SETTINGS (`Settling`), allowing
/// extended CONNECT (`Ready`: each WebSocket that joins opens a request stream), or ended,
/// each WebSocket told (`Over`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Settling,
    Ready,
    Over,
}

/// A carried WebSocket: the worker's key, its connection number in the run, its request
/// stream once opened, and whether the server accepted it.
#[derive(Debug)]
struct Stream {
    key: usize,
    index: u64,
    id: Option<StreamId>,
    answered: bool,
}

#[derive(Debug)]
pub struct H3Carrier {
    socket: UdpSocket,
    server: SocketAddr,
    endpoint: Endpoint,
    handle: Option<quic::ConnectionHandle>,
    phase: Phase,
    streams: Slab<Stream>,
    by_id: HashMap<StreamId, usize>,
    room: usize,
    /// Streams with output pending.
    dirty: Vec<usize>,
    /// How the server refused, once it did (for the check before load).
    refusal: Option<String>,
    datagram: Vec<u8>,
    scratch: Vec<u8>,
    /// The connection's packet figures when last added to the run's counters.
    counted: PacketStats,
}

impl H3Carrier {
    /// A carrier connecting to `server` (its name `server_name` checked in TLS) for up to
    /// `room` WebSockets.
    pub fn new(
        server: SocketAddr,
        server_name: &str,
        config: ClientConfig,
        room: usize,
    ) -> io::Result<H3Carrier> {
        let local: SocketAddr = match server {
            SocketAddr::V4(_) => "0.0.0.0:0".parse().map_err(io::Error::other)?,
            SocketAddr::V6(_) => "[::]:0".parse().map_err(io::Error::other)?,
        };
        let socket = UdpSocket::bind(local)?;
        socket.connect(server)?;
        let mut endpoint = Endpoint::client();
        let handle =
            endpoint.connect(Instant::now(), config, server, server_name).map_err(io::Error::other)?;
        let mut carrier = H3Carrier {
            socket,
            server,
            endpoint,
            handle: Some(handle),
            phase: Phase::Settling,
            streams: Slab::new(),
            by_id: HashMap::new(),
            room,
            dirty: Vec::new(),
            refusal: None,
            datagram: vec![0; quic::MAX_DATAGRAM],
            scratch: Vec::new(),
            counted: PacketStats::default(),
        };
        // The client's Initial goes now: nothing else would wake the carrier to send it.
        carrier.transmit();
        Ok(carrier)
    }

    /// `Some(Ok)` once the server allowed extended CONNECT, `Some(Err(cause))` once it
    /// refused or the connection failed, `None` while unknown.
    pub fn verdict(&self) -> Option<Result<(), String>> {
        match (self.phase, &self.refusal) {
            (Phase::Ready, _) => Some(Ok(())),
            (Phase::Over, Some(cause)) => Some(Err(cause.clone())),
            (Phase::Over, None) => Some(Err("quic_closed".into())),
            (Phase::Settling, _) => None,
        }
    }

    /// Reads every datagram waiting (their bytes counted as received); a socket error (ICMP
    /// unreachable) ends the connection.
    fn receive(&mut self, cx: &mut CarrierCx<'_>, events: &mut Vec<StreamEvent>) {
        loop {
            match self.socket.recv(&mut self.datagram) {
                Ok(n) => {
                    cx.counters.bytes_received += n as u64;
                    self.endpoint.receive(Instant::now(), self.server, &self.datagram[..n]);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                    return self.end_all("quic_port_unreachable", events);
                }
                Err(_) => return,
            }
        }
    }

    /// Sends every datagram the connection has.
    fn transmit(&mut self) {
        let now = Instant::now();
        while self.endpoint.transmit(now, &mut self.scratch).is_some() {
            if self.socket.send(&self.scratch).is_err() {
                // A full socket buffer drops the datagram: QUIC's loss recovery resends it.
                break;
            }
        }
    }

    /// Adds the packets sent and lost since the last look to the run's counters (so the
    /// run's totals are the connection's, whichever worker or shard holds it).
    fn count_packets(&mut self, cx: &mut CarrierCx<'_>) {
        let Some(session) = self.handle.and_then(|h| self.endpoint.session(h)) else { return };
        let now = session.packet_stats();
        cx.counters.quic_packets_sent += now.sent.saturating_sub(self.counted.sent);
        cx.counters.quic_packets_lost += now.lost.saturating_sub(self.counted.lost);
        self.counted = now;
    }

    /// Acts on what the connection said.
    fn on_events(&mut self, cx: &mut CarrierCx<'_>, events: &mut Vec<StreamEvent>) {
        let Some(handle) = self.handle else { return };
        while let Some(event) = self.endpoint.session(handle).and_then(|s| s.next_event()) {
            match event {
                Event::Ready(settings) if settings.enable_connect_protocol => {
                    self.phase = Phase::Ready;
                    cx.counters.quic_connections += 1;
                    self.open_streams(cx, events);
                }
                Event::Ready(_) => {
                    self.refusal = Some("h3_no_connect_protocol".into());
                    self.end_all("h3_no_connect_protocol", events);
                }
                Event::Response(id, status, fields) => self.answered(cx, id, status, &fields, events),
                Event::Data(id, data) => {
                    if let Some(stream) = self.by_id.get(&id).and_then(|s| self.streams.get(*s)) {
                        events.push(StreamEvent::Data(stream.key, Bytes::from(data)));
                    }
                }
                Event::Finished(id) => self.stream_over(id, None, events),
                Event::Reset(id, code) => self.stream_over(id, Some(reset_cause(code)), events),
                Event::Closed(cause) => {
                    self.refusal.get_or_insert_with(|| cause.name());
                    self.end_all(&cause.name(), events);
                }
                Event::Request(..) => {}
            }
        }
        self.endpoint.touched(Instant::now(), handle);
    }

    /// Opens the WebSockets that joined and have no stream yet (while the server allows
    /// more streams; the rest open as it does).
    fn open_streams(&mut self, cx: &mut CarrierCx<'_>, events: &mut Vec<StreamEvent>) {
        let Some(handle) = self.handle else { return };
        if self.phase != Phase::Ready {
            return;
        }
        let waiting: Vec<usize> =
            self.streams.iter().filter(|(_, s)| s.id.is_none()).map(|(k, _)| k).collect();
        for slot in waiting {
            let Some(session) = self.endpoint.session(handle) else { return };
            let headers = request::extended_connect(cx.job, self.streams[slot].index);
            let Some(id) = session.open_request(&headers) else { return };
            self.streams[slot].id = Some(id);
            self.by_id.insert(id, slot);
            events.push(StreamEvent::Upgrading(self.streams[slot].key));
        }
    }

    /// The server answered stream `id`'s CONNECT.
    fn answered(
        &mut self,
        cx: &mut CarrierCx<'_>,
        id: StreamId,
        status: u16,
        fields: &[wsbench_transport::http3::qpack::Field],
        events: &mut Vec<StreamEvent>,
    ) {
        let Some(&slot) = self.by_id.get(&id) else { return };
        let key = self.streams[slot].key;
        let Some(conn) = cx.conns.get_mut(key) else { return };
        match request::check_answer(cx.job, conn, status, fields, cx.counters) {
            Ok(()) => {
                self.streams[slot].answered = true;
                events.push(StreamEvent::Answered(key, Upgrade::Accepted(0)));
                if !self.dirty.contains(&slot) {
                    self.dirty.push(slot);
                }
            }
            Err(failure) => {
                self.forget(slot);
                events.push(StreamEvent::Answered(key, Upgrade::Refused(failure)));
            }
        }
    }

    /// Stream `id` is over: ended by the server (`None`) or reset (its cause).
    fn stream_over(&mut self, id: StreamId, cause: Option<String>, events: &mut Vec<StreamEvent>) {
        let Some(&slot) = self.by_id.get(&id) else { return };
        let key = self.streams[slot].key;
        self.forget(slot);
        events.push(StreamEvent::Ended(key, cause));
    }

    fn forget(&mut self, slot: usize) {
        if let Some(stream) = self.streams.try_remove(slot)
            && let Some(id) = stream.id
        {
            self.by_id.remove(&id);
        }
        self.dirty.retain(|s| *s != slot);
    }

    /// The connection is over: every WebSocket it carries ends by `cause` (before its
    /// answer, a failed handshake).
    fn end_all(&mut self, cause: &str, events: &mut Vec<StreamEvent>) {
        self.phase = Phase::Over;
        for stream in self.streams.drain() {
            if stream.answered {
                events.push(StreamEvent::Ended(stream.key, Some(cause.to_owned())));
            } else {
                events.push(StreamEvent::Refused(stream.key, HandshakeFailure::of(cause)));
            }
        }
        self.by_id.clear();
        self.dirty.clear();
    }

    /// Hands what the marked WebSockets have pending to their streams as DATA frames.
    fn send_pending(&mut self, cx: &mut CarrierCx<'_>) {
        let Some(handle) = self.handle else { return };
        let mut still = Vec::new();
        for slot in std::mem::take(&mut self.dirty) {
            let Some(stream) = self.streams.get(slot) else { continue };
            let (Some(id), true, Some(conn)) = (stream.id, stream.answered, cx.conns.get_mut(stream.key))
            else {
                // Not answered yet: what it wrote waits for the answer.
                still.push(slot);
                continue;
            };
            let Some(session) = self.endpoint.session(handle) else { return };
            // QUIC's flow control holds the rest back: the next round takes it.
            if session.pending(id) > PENDING_LIMIT {
                still.push(slot);
                continue;
            }
            self.scratch.clear();
            conn.take_pending(cx.batch, &mut self.scratch);
            conn.ledger.send_done();
            if conn.has_pending() {
                still.push(slot);
            }
            if !self.scratch.is_empty() {
                session.send_data(id, &self.scratch);
            }
        }
        self.dirty = still;
        self.endpoint.touched(Instant::now(), handle);
    }
}

impl Carrier for H3Carrier {
    fn socket(&mut self) -> &mut dyn mio::event::Source {
        &mut self.socket
    }

    fn next_timer(&mut self) -> Option<Instant> {
        if self.phase == Phase::Over {
            return None;
        }
        self.endpoint.next_timeout()
    }

    fn on_timer(&mut self, cx: &mut CarrierCx<'_>, events: &mut Vec<StreamEvent>) {
        self.endpoint.on_timeout(Instant::now());
        self.on_events(cx, events);
        self.transmit();
        self.count_packets(cx);
    }

    fn on_ready(&mut self, cx: &mut CarrierCx<'_>, events: &mut Vec<StreamEvent>) {
        self.receive(cx, events);
        self.on_events(cx, events);
        self.open_streams(cx, events);
        self.send_pending(cx);
        self.transmit();
        self.count_packets(cx);
    }

    fn flush(&mut self, cx: &mut CarrierCx<'_>, events: &mut Vec<StreamEvent>) {
        self.open_streams(cx, events);
        self.send_pending(cx);
        self.on_events(cx, events);
        self.transmit();
        self.count_packets(cx);
    }

    fn attach(&mut self, key: usize, index: u64) -> usize {
        self.streams.insert(Stream { key, index, id: None, answered: false })
    }

    fn wrote(&mut self, stream: usize) {
        if !self.dirty.contains(&stream) {
            self.dirty.push(stream);
        }
    }

    fn detach(&mut self, stream: usize, last: &[u8]) {
        let Some(id) = self.streams.get(stream).and_then(|s| s.id) else {
            self.forget(stream);
            return;
        };
        if let Some(session) = self.handle.and_then(|h| self.endpoint.session(h)) {
            if !last.is_empty() {
                session.send_data(id, last);
            }
            session.finish(id);
        }
        self.forget(stream);
    }

    fn has_room(&self) -> bool {
        self.phase != Phase::Over && self.streams.len() < self.room
    }

    fn is_over(&self) -> bool {
        self.phase == Phase::Over
    }

    fn has_work_left(&self) -> bool {
        false
    }
}

/// A carrier let go (the run over, the check done, the connection ended) closes its QUIC
/// connection with H3_NO_ERROR rather than vanishing: the server frees it at once instead
/// of at its idle timeout.
impl Drop for H3Carrier {
    fn drop(&mut self) {
        self.endpoint.close_all(Instant::now());
        self.transmit();
    }
}

/// The cause of a stream reset by the server, by its HTTP/3 code.
fn reset_cause(code: u64) -> String {
    match wsbench_transport::http3::Code::from_value(code) {
        Some(code) => format!("{}_reset", code.name()),
        None => format!("h3_reset_{code:#x}"),
    }
}
