//! One HTTP/2 connection carrying up to `--streams-per-connection` WebSockets: its socket
//! (plain h2c with prior knowledge, or TLS with ALPN `h2`), the `h2` crate's client over an
//! in-memory pipe, and its streams. It connects, sends the preface, waits for the server's
//! SETTINGS (a PING's answer proves they came) and opens its WebSockets with extended
//! CONNECTs only when SETTINGS_ENABLE_CONNECT_PROTOCOL is on (RFC 8441 §3); more than the
//! server's SETTINGS_MAX_CONCURRENT_STREAMS are refused by cause. Every stream has a waker
//! that notes it as ready, so a turn reads only the streams `h2` woke. A stream's error
//! (RST_STREAM) ends its WebSocket alone; a connection error (GOAWAY, a broken socket)
//! ends those it carries, each counted by cause. Never blocks.

use std::future::Future;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use slab::Slab;
use wsbench_transport::Transport;
use wsbench_transport::http2::h2::client::{self, ResponseFuture, SendRequest};
use wsbench_transport::http2::h2::{self, Ping, PingPong, RecvStream, SendStream};
use wsbench_transport::http2::{Pipe, PipeIo, Ready, error_cause, poll_now, reason_name};

use super::request;
use crate::engine::dial::carrier::{Carrier, CarrierCx, StreamEvent};
use crate::engine::dial::http1;
use crate::engine::handshake_failure::{HandshakeFailure, Upgrade};

/// Receive windows: large enough that flow control does not pace an echo run, small
/// enough to bound what a connection may have in flight toward us.
const STREAM_WINDOW: u32 = 1 << 20;
const CONNECTION_WINDOW: u32 = 16 << 20;
/// Passes of one turn over the connection and its woken streams (each pass that moved
/// nothing ends the turn early).
const MAX_PASSES: usize = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// TCP connect in progress.
    Connecting,
    /// Connected (TLS may still negotiate); the preface and a PING are out, the server's
    /// SETTINGS not yet known.
    Settling,
    /// The server allows extended CONNECT: WebSockets open as they join.
    Ready,
    /// Lost (or refused): every WebSocket it carried has been told.
    Over,
}

/// One carried WebSocket.
#[derive(Debug)]
struct Stream {
    /// The worker's key of its connection.
    key: usize,
    /// Connection number of the run (its `{conn}`).
    index: u64,
    waker: Waker,
    response: Option<ResponseFuture>,
    send: Option<SendStream<Bytes>>,
    recv: Option<RecvStream>,
}

pub struct H2Carrier {
    transport: Transport,
    phase: Phase,
    pipe: Pipe,
    connection: Option<client::Connection<PipeIo, Bytes>>,
    sender: Option<SendRequest<Bytes>>,
    settings_probe: Option<PingPong>,
    streams: Slab<Stream>,
    /// Streams whose CONNECT waits for the server's SETTINGS.
    waiting: Vec<usize>,
    /// Streams with output pending, and those `h2` woke.
    dirty: Vec<usize>,
    ready: Ready,
    woken: Vec<usize>,
    /// Ended WebSockets whose last frames are still going out.
    closing: Vec<(SendStream<Bytes>, Option<RecvStream>)>,
    /// Bytes for the socket that it has not taken yet.
    out: Vec<u8>,
    out_sent: usize,
    room: usize,
    /// The server said GOAWAY or refused a stream: no more WebSockets join.
    closed_to_new: bool,
    scratch: Vec<u8>,
    /// Why it ended, once it has.
    failure: Option<String>,
    /// The server's GOAWAY, as a cause (`h2_goaway_<code>`), once it came: streams that end
    /// quietly after it (RST_STREAM NO_ERROR, END_STREAM) ended because of it.
    goaway: Option<String>,
}

impl std::fmt::Debug for H2Carrier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("H2Carrier").field("phase", &self.phase).field("streams", &self.streams.len()).finish()
    }
}

impl H2Carrier {
    /// A carrier connecting (its socket from connection `index`'s source address) that
    /// takes up to `room` WebSockets.
    pub fn new(transport: Transport, room: usize) -> H2Carrier {
        H2Carrier {
            transport,
            phase: Phase::Connecting,
            pipe: Pipe::new(),
            connection: None,
            sender: None,
            settings_probe: None,
            streams: Slab::new(),
            waiting: Vec::new(),
            dirty: Vec::new(),
            ready: Ready::default(),
            woken: Vec::new(),
            closing: Vec::new(),
            out: Vec::new(),
            out_sent: 0,
            room,
            closed_to_new: false,
            scratch: Vec::new(),
            failure: None,
            goaway: None,
        }
    }

    /// TCP is up: the `h2` client writes its preface and SETTINGS, and a PING whose answer
    /// proves the server's SETTINGS came.
    fn start(&mut self, cx: &mut CarrierCx<'_>, events: &mut Vec<StreamEvent>) {
        cx.counters.tcp_connections += 1;
        let mut builder = client::Builder::new();
        builder.initial_window_size(STREAM_WINDOW).initial_connection_window_size(CONNECTION_WINDOW);
        let mut handshake = Box::pin(builder.handshake::<_, Bytes>(self.pipe.io()));
        match poll_now(&mut handshake) {
            Poll::Ready(Ok((sender, mut connection))) => {
                self.settings_probe = connection.ping_pong();
                if let Some(probe) = self.settings_probe.as_mut() {
                    let _ = probe.send_ping(Ping::opaque());
                }
                self.sender = Some(sender);
                self.connection = Some(connection);
                self.phase = Phase::Settling;
            }
            Poll::Ready(Err(error)) => self.lose(&error_cause(&error), events),
            Poll::Pending => self.lose("h2_handshake", events),
        }
    }

    /// Reads what the socket has into the pipe; false when the connection is over.
    fn read_socket(&mut self, cx: &mut CarrierCx<'_>, events: &mut Vec<StreamEvent>) -> bool {
        loop {
            match self.pipe.read_from(&mut self.transport) {
                Ok(0) => return true,
                Ok(n) => cx.counters.bytes_received += n as u64,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == std::io::ErrorKind::InvalidData && self.transport.is_handshaking() => {
                    self.refuse_all(HandshakeFailure::of_tls(&e), events);
                    return false;
                }
                Err(_) => {
                    self.pipe.end_input();
                    return true;
                }
            }
        }
    }

    /// Writes pending bytes to the socket; false when it broke.
    fn write_socket(&mut self) -> bool {
        loop {
            if self.out_sent == self.out.len() {
                self.out.clear();
                self.out_sent = 0;
                self.pipe.take_output(&mut self.out);
                if self.out.is_empty() {
                    return self.transport.flush().is_ok();
                }
            }
            match self.transport.write(&self.out[self.out_sent..]) {
                Ok(0) => return false,
                Ok(n) => self.out_sent += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
    }

    /// The turn's work: the connection polled, the server's SETTINGS checked, waiting
    /// CONNECTs sent, woken streams read, pending output handed to `h2` and written out.
    fn pump(&mut self, cx: &mut CarrierCx<'_>, events: &mut Vec<StreamEvent>) {
        for _ in 0..MAX_PASSES {
            if self.phase == Phase::Over {
                return;
            }
            if !self.poll_connection(events) {
                return;
            }
            self.note_goaway();
            if self.phase == Phase::Settling {
                self.settle(cx, events);
            }
            if self.phase == Phase::Ready && !self.waiting.is_empty() {
                self.send_requests(cx, events);
            }
            let moved = self.read_streams(cx, events) | self.send_pending(cx);
            self.finish_closing();
            if !self.poll_connection(events) {
                return;
            }
            let had_output = self.pipe.has_output();
            if !self.write_socket() {
                self.lose("h2_io", events);
                return;
            }
            if !moved && !had_output && self.pipe.input_taken() && self.ready.is_empty() {
                return;
            }
        }
    }

    /// Polls the `h2` connection (it reads the pipe and writes frames); false when it ended.
    fn poll_connection(&mut self, events: &mut Vec<StreamEvent>) -> bool {
        let Some(connection) = self.connection.as_mut() else { return false };
        match poll_now(connection) {
            Poll::Pending => true,
            Poll::Ready(Ok(())) => {
                self.lose("h2_connection_closed", events);
                false
            }
            Poll::Ready(Err(error)) => {
                self.lose(&error_cause(&error), events);
                false
            }
        }
    }

    /// Notes the server's GOAWAY (`h2` refuses new streams from then on, with its code).
    fn note_goaway(&mut self) {
        if self.goaway.is_some() {
            return;
        }
        let Some(sender) = self.sender.as_mut() else { return };
        if let Poll::Ready(Err(error)) = sender.poll_ready(&mut Context::from_waker(Waker::noop()))
            && error.is_go_away()
        {
            self.goaway = Some(error_cause(&error));
            self.closed_to_new = true;
        }
    }

    /// Why a stream ended, given what `h2` said (`None`: it ended quietly): after a GOAWAY a
    /// quiet end is the GOAWAY's doing.
    fn cause_of_end(&self, said: Option<String>) -> Option<String> {
        match said.as_deref() {
            None | Some("h2_rst_no_error") if self.goaway.is_some() => self.goaway.clone(),
            _ => said,
        }
    }

    /// Once the server's SETTINGS are known: ready when it allows extended CONNECT; else
    /// every WebSocket is refused (`h2_no_connect_protocol`) and nothing is sent.
    fn settle(&mut self, cx: &mut CarrierCx<'_>, events: &mut Vec<StreamEvent>) {
        let Some(sender) = self.sender.as_ref() else { return };
        if self.transport.is_handshaking() {
            return;
        }
        if cx.job.tls.is_some() && self.transport.alpn_protocol() != Some(b"h2") {
            return self.refuse_all(HandshakeFailure::of("alpn_not_h2"), events);
        }
        if sender.is_extended_connect_protocol_enabled() {
            self.phase = Phase::Ready;
            return;
        }
        let ponged = self.settings_probe.as_mut().is_some_and(|probe| {
            matches!(probe.poll_pong(&mut Context::from_waker(Waker::noop())), Poll::Ready(Ok(_)))
        });
        if ponged {
            self.refuse_all(HandshakeFailure::of("h2_no_connect_protocol"), events);
        }
    }

    /// Sends the CONNECTs of the waiting WebSockets, as many as the server allows at once.
    fn send_requests(&mut self, cx: &mut CarrierCx<'_>, events: &mut Vec<StreamEvent>) {
        let Some(sender) = self.sender.as_mut() else { return };
        let open = self.streams.len() - self.waiting.len();
        let mut allowed = sender.current_max_send_streams().saturating_sub(open);
        for slot in std::mem::take(&mut self.waiting) {
            let stream = &mut self.streams[slot];
            if allowed == 0 || self.closed_to_new {
                let cause = if self.closed_to_new { "h2_goaway" } else { "h2_over_max_concurrent_streams" };
                events.push(StreamEvent::Refused(stream.key, HandshakeFailure::of(cause)));
                self.streams.remove(slot);
                continue;
            }
            match sender.send_request(request::extended_connect(cx.job, stream.index), false) {
                Ok((response, send)) => {
                    allowed -= 1;
                    stream.response = Some(response);
                    stream.send = Some(send);
                    events.push(StreamEvent::Upgrading(stream.key));
                    self.woken.push(slot);
                }
                Err(error) => {
                    self.closed_to_new = true;
                    events.push(StreamEvent::Refused(stream.key, HandshakeFailure::of(&error_cause(&error))));
                    self.streams.remove(slot);
                }
            }
        }
    }

    /// Reads the streams `h2` woke: answers to CONNECTs, data, ends and resets. Whether
    /// anything came.
    fn read_streams(&mut self, cx: &mut CarrierCx<'_>, events: &mut Vec<StreamEvent>) -> bool {
        self.ready.take(&mut self.woken);
        let mut moved = false;
        while let Some(slot) = self.woken.pop() {
            let Some(stream) = self.streams.get_mut(slot) else { continue };
            let waker = stream.waker.clone();
            let mut context = Context::from_waker(&waker);
            if let Some(response) = stream.response.as_mut() {
                match std::pin::Pin::new(response).poll(&mut context) {
                    Poll::Pending => continue,
                    Poll::Ready(result) => {
                        moved = true;
                        stream.response = None;
                        match self.answered(cx, slot, result) {
                            Some(event) => events.push(event),
                            None => continue,
                        }
                    }
                }
            }
            let Some(stream) = self.streams.get_mut(slot) else { continue };
            let Some(recv) = stream.recv.as_mut() else { continue };
            loop {
                match recv.poll_data(&mut context) {
                    Poll::Pending => break,
                    Poll::Ready(Some(Ok(data))) => {
                        moved = true;
                        let _ = recv.flow_control().release_capacity(data.len());
                        events.push(StreamEvent::Data(stream.key, data));
                    }
                    Poll::Ready(end) => {
                        moved = true;
                        let cause = match end {
                            Some(Err(error)) => Some(error_cause(&error)),
                            // END_STREAM, perhaps with RST_STREAM right after it (node ends a
                            // stream it resets): the reset is the cause when it came too.
                            _ => stream.send.as_mut().and_then(|send| match send.poll_reset(&mut context) {
                                Poll::Ready(Ok(reason)) => Some(format!("h2_rst_{}", reason_name(reason))),
                                _ => None,
                            }),
                        };
                        let key = stream.key;
                        self.note_goaway();
                        events.push(StreamEvent::Ended(key, self.cause_of_end(cause)));
                        self.streams.remove(slot);
                        break;
                    }
                }
            }
        }
        moved
    }

    /// The server's answer to stream `slot`'s CONNECT, as the event for its WebSocket;
    /// `None` when the stream failed and was reported.
    fn answered(
        &mut self,
        cx: &mut CarrierCx<'_>,
        slot: usize,
        result: Result<http::Response<RecvStream>, h2::Error>,
    ) -> Option<StreamEvent> {
        let key = self.streams[slot].key;
        let response = match result {
            Ok(response) => response,
            Err(error) => {
                self.streams.remove(slot);
                if error.reason() == Some(h2::Reason::REFUSED_STREAM) {
                    self.closed_to_new = true;
                }
                return Some(StreamEvent::Refused(key, HandshakeFailure::of(&error_cause(&error))));
            }
        };
        let tls = self.transport.negotiated_tls();
        let conn = cx.conns.get_mut(key)?;
        if let Err(failure) = request::check_answer(cx.job, conn, &response, tls, cx.counters) {
            self.streams.remove(slot);
            return Some(StreamEvent::Answered(key, Upgrade::Refused(failure)));
        }
        self.streams[slot].recv = Some(response.into_body());
        Some(StreamEvent::Answered(key, Upgrade::Accepted(0)))
    }

    /// Hands what the WebSockets marked as written have pending to their streams.
    fn send_pending(&mut self, cx: &mut CarrierCx<'_>) -> bool {
        let mut moved = false;
        let mut still = Vec::new();
        for slot in std::mem::take(&mut self.dirty) {
            let Some(stream) = self.streams.get_mut(slot) else { continue };
            let (Some(send), Some(conn)) = (stream.send.as_mut(), cx.conns.get_mut(stream.key)) else {
                continue;
            };
            if stream.recv.is_none() {
                // Not answered yet: what it wrote waits for the answer.
                still.push(slot);
                continue;
            }
            self.scratch.clear();
            conn.take_pending(cx.batch, &mut self.scratch);
            // Handed to the stream is as written as a WebSocket of its own socket gets.
            conn.ledger.send_done();
            if conn.has_pending() {
                // Batches beyond one send's bytes: the next round takes them.
                still.push(slot);
            }
            if !self.scratch.is_empty() {
                moved = true;
                let _ = send.send_data(Bytes::copy_from_slice(&self.scratch), false);
            }
        }
        self.dirty = still;
        moved
    }

    /// Drops ended WebSockets' streams once the server has ended its side too (or reset
    /// them): dropped earlier, `h2` would cancel them before their last frames went out.
    fn finish_closing(&mut self) {
        let mut context = Context::from_waker(Waker::noop());
        self.closing.retain_mut(|(send, recv)| {
            if !matches!(send.poll_reset(&mut context), Poll::Pending) {
                return false;
            }
            let Some(recv) = recv.as_mut() else { return false };
            loop {
                match recv.poll_data(&mut context) {
                    Poll::Ready(Some(Ok(data))) => {
                        let _ = recv.flow_control().release_capacity(data.len());
                    }
                    Poll::Ready(_) => return false,
                    Poll::Pending => return !recv.is_end_stream(),
                }
            }
        });
    }

    /// The connection is over: every WebSocket it carries ends with `cause`.
    fn lose(&mut self, cause: &str, events: &mut Vec<StreamEvent>) {
        let cause = self.goaway.clone().unwrap_or_else(|| cause.to_owned());
        let cause = cause.as_str();
        for stream in self.streams.drain() {
            events.push(StreamEvent::Ended(stream.key, Some(cause.to_owned())));
        }
        self.failure = Some(cause.to_owned());
        self.end();
    }

    /// The connection failed before its WebSockets could open: each refused by `failure`.
    fn refuse_all(&mut self, failure: HandshakeFailure, events: &mut Vec<StreamEvent>) {
        for stream in self.streams.drain() {
            events.push(StreamEvent::Refused(stream.key, failure.clone()));
        }
        self.failure = Some(failure.cause);
        self.end();
    }

    fn end(&mut self) {
        self.phase = Phase::Over;
        self.waiting.clear();
        self.dirty.clear();
        self.closing.clear();
        self.connection = None;
        self.sender = None;
        self.settings_probe = None;
    }
}

impl H2Carrier {
    /// For a check before the run: `Some(Ok)` once the server allows extended CONNECT,
    /// `Some(Err(cause))` once it is known that it does not (or the connection failed).
    pub(super) fn verdict(&self) -> Option<Result<(), String>> {
        match self.phase {
            Phase::Ready => Some(Ok(())),
            Phase::Over => Some(Err(self.failure.clone().unwrap_or_default())),
            Phase::Connecting | Phase::Settling => None,
        }
    }
}

impl Carrier for H2Carrier {
    fn socket(&mut self) -> &mut dyn mio::event::Source {
        self.transport.socket()
    }

    fn on_ready(&mut self, cx: &mut CarrierCx<'_>, events: &mut Vec<StreamEvent>) {
        if self.phase == Phase::Connecting {
            match http1::connected(self.transport.socket()) {
                Ok(true) => self.start(cx, events),
                Ok(false) => return,
                Err(error) => {
                    for stream in self.streams.drain() {
                        let error = match error.raw_os_error() {
                            Some(code) => std::io::Error::from_raw_os_error(code),
                            None => std::io::Error::new(error.kind(), error.to_string()),
                        };
                        events.push(StreamEvent::ConnectFailed(stream.key, error));
                    }
                    self.failure = Some(format!("connect: {error}"));
                    return self.end();
                }
            }
        }
        if self.phase == Phase::Over || !self.read_socket(cx, events) {
            return;
        }
        self.pump(cx, events);
    }

    fn flush(&mut self, cx: &mut CarrierCx<'_>, events: &mut Vec<StreamEvent>) {
        if matches!(self.phase, Phase::Settling | Phase::Ready) {
            self.pump(cx, events);
        }
    }

    fn attach(&mut self, key: usize, index: u64) -> usize {
        let slot = self.streams.vacant_key();
        let waker = self.ready.waker(slot);
        self.streams.insert(Stream { key, index, waker, response: None, send: None, recv: None });
        self.waiting.push(slot);
        slot
    }

    fn wrote(&mut self, stream: usize) {
        if !self.dirty.contains(&stream) {
            self.dirty.push(stream);
        }
    }

    fn detach(&mut self, stream: usize, last: &[u8]) {
        self.waiting.retain(|&slot| slot != stream);
        self.dirty.retain(|&slot| slot != stream);
        let Some(stream) = self.streams.try_remove(stream) else { return };
        if let Some(mut send) = stream.send {
            // Our side ends (END_STREAM, RFC 8441 §5's orderly end) after its last frames.
            let _ = send.send_data(Bytes::copy_from_slice(last), true);
            self.closing.push((send, stream.recv));
        }
    }

    fn has_room(&self) -> bool {
        !self.closed_to_new && self.phase != Phase::Over && self.streams.len() < self.room
    }

    fn is_over(&self) -> bool {
        self.phase == Phase::Over
    }

    fn has_work_left(&self) -> bool {
        matches!(self.phase, Phase::Settling | Phase::Ready)
            && (!self.pipe.input_taken() || !self.ready.is_empty() || !self.woken.is_empty())
    }
}
