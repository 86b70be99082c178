//! One client connection's protocol state machine: HTTP request → (101 and WebSocket echo |
//! 200 for plain GETs | 400 for bad upgrades), the HTTP/2 preface → WebSockets as streams
//! (`conn/http2.rs`, a part of this state machine: its streams are WebSockets of this
//! same state machine, and an HTTP/2 connection is one of its phases), or raw TCP echo. It turns input bytes into
//! output bytes and never touches the socket, so the event loop owns all I/O and buffering.
//! Messages larger than one read are `conn/message.rs`'s.
//!
//! Idle connections hold no buffers: `input` keeps only an incomplete header or control
//! frame, `message` only a message still arriving in pieces, and both are freed when done.

use wsbench_proto::handshake::{Request, add_header, parse_request, server_response};
use wsbench_proto::{CloseCode, Decoder, OpCode, Reservation, Role, write_frame};

use wsbench_transport::Transport;

use crate::compression::Compression;
use crate::echo_count::count_echo;
use crate::pubsub;
use http2::H2Conn;
use wsbench_transport::http2::PREFACE;

mod http2;
mod message;
pub(crate) use message::MIN_STREAMED_REST;

pub use message::PayloadInto;

/// Where a connection is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Waiting for the first request (the handshake timeout runs).
    Handshake,
    /// Served plain HTTP requests; more may follow on the same connection.
    Http,
    WebSocket,
    /// HTTP/2 (its first bytes were the preface): WebSockets as streams.
    Http2,
    /// The raw TCP echo port.
    Raw,
    /// Our side is done; discard input until the peer closes or the close timeout fires.
    Closing,
}

/// The limits a connection enforces.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_message: u64,
    pub max_header_bytes: usize,
    /// Accept permessage-deflate offers (`wsbench serve --no-deflate` turns it off).
    pub deflate: bool,
    /// Text messages that are pub/sub commands go to [`ConnState::inbox`] instead of being
    /// echoed (`wsbench serve --pubsub`).
    pub pubsub: bool,
}

/// What the event loop should do after `process`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    Continue,
    /// Send what is in the output, then end the connection.
    CloseAfterFlush,
}

const HTTP_OK: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\nConnection: keep-alive\r\n\r\nok\n";
const HTTP_METHOD_NOT_ALLOWED: &[u8] = b"HTTP/1.1 405 Method Not Allowed\r\nAllow: GET\r\nContent-Type: text/plain\r\nContent-Length: 26\r\nConnection: close\r\n\r\nonly GET is served here.\r\n";

/// A connection: its socket and I/O bookkeeping (owned by the event loop) around the
/// protocol state machine [`ConnState`].
#[derive(Debug)]
pub struct Conn {
    pub transport: Transport,
    /// Distinguishes this connection from a later one reusing its slab slot (timers).
    pub serial: u32,
    /// Unprocessed input (an incomplete request header or frame header).
    pub input: Vec<u8>,
    /// Output the socket did not take yet, and how much of it has been written since.
    pub output: Vec<u8>,
    pub output_sent: usize,
    /// Write interest is registered (output is pending).
    pub write_interest: bool,
    /// Our side of the stream has been shut down (in `Closing`).
    pub write_shut: bool,
    /// Reading stops while the peer is not reading what we send.
    pub reading_paused: bool,
    /// pub/sub: deliveries wait in `output` until the end of the event-loop turn, when all
    /// of this turn's go out in one write (uWebSockets calls this corking).
    pub corked: bool,
    /// The protocol state: everything `process` needs, and nothing of the socket.
    pub state: ConnState,
}

impl Conn {
    pub fn new(transport: Transport, phase: Phase, serial: u32) -> Conn {
        Conn {
            transport,
            serial,
            input: Vec::new(),
            output: Vec::new(),
            output_sent: 0,
            write_interest: false,
            write_shut: false,
            reading_paused: false,
            corked: false,
            state: ConnState::new(phase),
        }
    }

    /// See [`ConnState::process`].
    pub fn process(&mut self, data: &mut [u8], out: &mut Vec<u8>, limits: Limits) -> (usize, Next) {
        self.state.process(data, out, limits)
    }

    /// See [`ConnState::close_with`].
    pub fn close_with(&mut self, code: u16, out: &mut Vec<u8>) {
        self.state.close_with(code, out);
    }
}

/// One connection's protocol state, apart from its socket, so it can be driven without one
/// (the `server_conn` fuzz target does, through [`crate::fuzzing`]).
#[derive(Debug)]
pub struct ConnState {
    pub phase: Phase,
    /// The frame decoder while a frame or message is in progress. A decoder at rest is equal
    /// to a new one, so it is dropped then: an idle connection holds none, and the next input
    /// starts a new one on the stack (see [`ConnState::decoder`]).
    decoder: Option<Box<Decoder>>,
    /// A message arriving in several pieces, reassembled before it is echoed, after room for
    /// its echo's header of `echo_header` bytes.
    message: Vec<u8>,
    echo_header: u8,
    /// A binary message of one frame may be echoed as it arrives (HTTP/1.1 WebSockets; see
    /// `conn/message.rs`), and one is: its echo's header is out and its payload follows.
    may_stream_echoes: bool,
    echo_streaming: bool,
    /// permessage-deflate, when negotiated.
    compression: Option<Box<Compression>>,
    /// What `message` and the message being inflated are charged to the process's budget
    /// for messages still arriving (none: unbudgeted, e.g. an HTTP/2 stream).
    pub reservation: Reservation,
    /// Pub/sub commands received and not yet handled by the event loop: each message's
    /// length (4 bytes, native order) then its payload. Empty except in `--pubsub` mode.
    pub inbox: Vec<u8>,
    /// The HTTP/2 connection, in [`Phase::Http2`].
    h2: Option<Box<H2Conn>>,
}

impl ConnState {
    pub fn new(phase: Phase) -> ConnState {
        ConnState {
            phase,
            decoder: None,
            message: Vec::new(),
            echo_header: 0,
            may_stream_echoes: false,
            echo_streaming: false,
            compression: None,
            reservation: Reservation::default(),
            inbox: Vec::new(),
            h2: None,
        }
    }

    /// The HTTP/2 connection, in [`Phase::Http2`].
    pub fn h2(&self) -> Option<&H2Conn> {
        self.h2.as_deref()
    }

    pub fn h2_mut(&mut self) -> Option<&mut H2Conn> {
        self.h2.as_deref_mut()
    }

    /// A WebSocket whose opening handshake happened elsewhere (an HTTP/2 stream's CONNECT).
    pub fn websocket(compression: Option<Box<Compression>>) -> ConnState {
        ConnState { compression, ..ConnState::new(Phase::WebSocket) }
    }

    /// The decoder kept from the last input, or a new one: role server, the message limit,
    /// and RSV1 allowed when permessage-deflate was negotiated.
    fn decoder(&mut self, max_message: u64) -> Decoder {
        match self.decoder.take() {
            Some(decoder) => *decoder,
            None => {
                let mut decoder = Decoder::new(Role::Server, max_message);
                if self.compression.is_some() {
                    decoder.allow_rsv1();
                }
                decoder
            }
        }
    }

    /// Consumes bytes from the start of `data`, appending replies to `out`. Returns how many
    /// bytes were used; the rest must be offered again with more input.
    pub fn process(&mut self, data: &mut [u8], out: &mut Vec<u8>, limits: Limits) -> (usize, Next) {
        match self.phase {
            Phase::Handshake if data.len() < PREFACE.len() && PREFACE.starts_with(data) => {
                (0, Next::Continue)
            }
            Phase::Handshake if data.starts_with(PREFACE) => {
                self.phase = Phase::Http2;
                self.process(data, out, limits)
            }
            Phase::Http2 => {
                let budget = self.reservation.budget();
                let h2 = self.h2.get_or_insert_with(|| Box::new(H2Conn::with_budget(budget)));
                (data.len(), h2.process(data, out, limits))
            }
            Phase::Handshake | Phase::Http => self.process_http(data, out, limits),
            Phase::WebSocket => self.process_frames(data, out, limits),
            Phase::Raw => {
                out.extend_from_slice(data);
                (data.len(), Next::Continue)
            }
            Phase::Closing => (data.len(), Next::Continue),
        }
    }

    /// Queues a close frame with `code` (used at shutdown: 1001). Nothing while a binary
    /// frame is echoed as it arrives: a close frame would land inside the echo, so the
    /// connection just ends (its peer sees the frame cut short).
    pub fn close_with(&mut self, code: u16, out: &mut Vec<u8>) {
        match self.phase {
            Phase::WebSocket if self.echo_streaming => {}
            Phase::WebSocket => write_frame(out, true, OpCode::Close, None, &code.to_be_bytes()),
            Phase::Http2 => {
                if let Some(h2) = self.h2.as_mut() {
                    h2.close_with(code, out);
                }
            }
            _ => {}
        }
    }

    fn process_http(&mut self, data: &mut [u8], out: &mut Vec<u8>, limits: Limits) -> (usize, Next) {
        let mut used = 0;
        loop {
            match parse_request(&data[used..], limits.max_header_bytes) {
                Ok(None) => return (used, Next::Continue),
                Ok(Some((Request::Upgrade(request), n))) => {
                    used += n;
                    let mut response =
                        server_response(&request, request.protocols.first().map(String::as_str));
                    if limits.deflate
                        && let Some((compression, answer)) =
                            Compression::negotiate(&request, limits.max_message)
                    {
                        add_header(&mut response, "Sec-WebSocket-Extensions", &answer);
                        self.compression = Some(compression);
                    }
                    out.extend_from_slice(&response);
                    self.phase = Phase::WebSocket;
                    self.may_stream_echoes = true;
                    let (more, next) = self.process_frames(&mut data[used..], out, limits);
                    return (used + more, next);
                }
                Ok(Some((Request::Http { method, .. }, n))) => {
                    used += n;
                    if method != "GET" && method != "HEAD" {
                        out.extend_from_slice(HTTP_METHOD_NOT_ALLOWED);
                        return (data.len(), Next::CloseAfterFlush);
                    }
                    out.extend_from_slice(HTTP_OK);
                    self.phase = Phase::Http;
                }
                Err(error) => {
                    out.extend_from_slice(&error.http_response());
                    return (data.len(), Next::CloseAfterFlush);
                }
            }
        }
    }

    fn process_frames(&mut self, data: &mut [u8], out: &mut Vec<u8>, limits: Limits) -> (usize, Next) {
        let mut decoder = self.decoder(limits.max_message);
        let (used, next) = self.process_frames_with(&mut decoder, data, out, limits.pubsub);
        if !decoder.at_rest() && next == Next::Continue {
            self.decoder = Some(Box::new(decoder));
        }
        (used, next)
    }

    fn process_frames_with(
        &mut self,
        decoder: &mut Decoder,
        data: &mut [u8],
        out: &mut Vec<u8>,
        pubsub_mode: bool,
    ) -> (usize, Next) {
        let mut used = 0;
        loop {
            let chunk = match decoder.decode(&mut data[used..]) {
                Ok(Some(chunk)) => chunk,
                Ok(None) => return (used, Next::Continue),
                Err(error) => return fail(error.close_code(), &error.to_string(), data.len(), out),
            };
            let payload = &data[used + chunk.payload.start..used + chunk.payload.end];
            if chunk.compressed
                && let Some(compression) = self.compression.as_mut()
            {
                if let Err((code, reason)) =
                    compression.on_chunk(chunk.opcode, payload, chunk.last, out, &mut self.reservation)
                {
                    return fail(code, &reason, data.len(), out);
                }
                used += chunk.consumed;
                continue;
            }
            match chunk.opcode {
                OpCode::Text
                    if pubsub_mode && chunk.first && chunk.last && pubsub::parse(payload).is_some() =>
                {
                    push_command(&mut self.inbox, payload);
                }
                OpCode::Text | OpCode::Binary if chunk.first && chunk.last => {
                    write_frame(out, true, chunk.opcode, None, payload);
                    count_echo();
                }
                OpCode::Text | OpCode::Binary => {
                    if let Err(error) = self.message_piece(decoder, &chunk, payload, out, pubsub_mode) {
                        return fail(error.close_code(), &error.to_string(), data.len(), out);
                    }
                }
                OpCode::Ping => write_frame(out, true, OpCode::Pong, None, payload),
                OpCode::Pong | OpCode::Continuation => {}
                OpCode::Close => {
                    // Echo the code (the decoder validated it); an empty close gets an empty one.
                    let code = if payload.len() >= 2 { &payload[..2] } else { &[][..] };
                    write_frame(out, true, OpCode::Close, None, code);
                    return (data.len(), Next::CloseAfterFlush);
                }
            }
            used += chunk.consumed;
        }
    }
}

/// Queues a pub/sub command for the event loop (see [`ConnState::inbox`]).
fn push_command(inbox: &mut Vec<u8>, payload: &[u8]) {
    inbox.extend_from_slice(&(payload.len() as u32).to_ne_bytes());
    inbox.extend_from_slice(payload);
}

/// Fails the connection: a close frame with `code` and (the start of) `reason`.
fn fail(code: u16, reason: &str, len: usize, out: &mut Vec<u8>) -> (usize, Next) {
    let mut payload = code.to_be_bytes().to_vec();
    payload.extend_from_slice(&reason.as_bytes()[..reason.len().min(120)]);
    write_frame(out, true, OpCode::Close, None, &payload);
    (len, Next::CloseAfterFlush)
}

/// The close code sent to every WebSocket connection when the server stops.
pub const SHUTDOWN_CLOSE_CODE: u16 = CloseCode::GOING_AWAY;

#[cfg(test)]
mod tests {
    use super::*;

    /// The memory goal is well under 1 KB of user space per idle connection; the slab
    /// entry is most of it (idle connections hold no buffers), so keep it small.
    pub(super) fn limits() -> Limits {
        Limits { max_message: 1 << 20, max_header_bytes: 8192, deflate: false, pubsub: false }
    }

    pub(super) fn masked(fin: bool, opcode: OpCode, payload: &[u8]) -> Vec<u8> {
        let mut frame = Vec::new();
        write_frame(&mut frame, fin, opcode, Some([0x37, 0xfa, 0x21, 0x3d]), payload);
        frame
    }

    /// Idle connections hold no decoder; one in the middle of a frame or of a fragmented
    /// message keeps it until the end, and the echo comes out whole.
    #[test]
    fn a_decoder_is_kept_only_while_a_frame_or_message_is_in_progress() {
        let mut state = ConnState::websocket(None);
        let mut out = Vec::new();
        let whole = masked(true, OpCode::Binary, b"hello");
        // Only part of the header: nothing is consumed and nothing is in progress.
        assert_eq!(state.process(&mut whole.clone()[..1], &mut out, limits()), (0, Next::Continue));
        assert!(state.decoder.is_none());
        // The header and two payload bytes: the frame is in progress.
        let (used, _) = state.process(&mut whole.clone()[..8], &mut out, limits());
        assert_eq!(used, 8);
        assert!(state.decoder.is_some(), "a frame in progress keeps its decoder");
        let (used, _) = state.process(&mut whole.clone()[8..], &mut out, limits());
        assert_eq!(used, whole.len() - 8);
        assert!(state.decoder.is_none(), "a decoder at rest is dropped");
        // A fragmented message: kept between its frames.
        let mut first = masked(false, OpCode::Text, b"he");
        let mut last = masked(true, OpCode::Continuation, b"llo");
        state.process(&mut first, &mut out, limits());
        assert!(state.decoder.is_some(), "an unfinished message keeps its decoder");
        state.process(&mut last, &mut out, limits());
        assert!(state.decoder.is_none());
        let mut expected = Vec::new();
        write_frame(&mut expected, true, OpCode::Binary, None, b"hello");
        write_frame(&mut expected, true, OpCode::Text, None, b"hello");
        assert_eq!(out, expected);
    }

    #[test]
    fn idle_connection_state_stays_small() {
        assert!(std::mem::size_of::<Conn>() <= 192, "Conn is {} bytes", std::mem::size_of::<Conn>());
    }
}
