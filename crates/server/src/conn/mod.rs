//! One client connection's protocol state machine: HTTP request → (101 and WebSocket echo |
//! 200 for plain GETs | 400 for bad upgrades), the HTTP/2 preface → WebSockets as streams
//! (`conn/http2.rs`, a part of this state machine: its streams are WebSockets of this
//! same state machine, and an HTTP/2 connection is one of its phases), or raw TCP echo. It turns input bytes into
//! output bytes and never touches the socket, so the event loop owns all I/O and buffering.
//!
//! Idle connections hold no buffers: `input` keeps only an incomplete header or control
//! frame, `message` only a message still arriving in pieces, and both are freed when done.

use wsbench_proto::handshake::{Request, add_header, parse_request, server_response};
use wsbench_proto::{
    Chunk, CloseCode, Decoder, MAX_HEADER_LEN, OpCode, ProtocolError, Reservation, Role, encode_header,
    write_frame,
};

use wsbench_transport::Transport;

use crate::compression::Compression;
use crate::echo_count::count_echo;
use crate::large_buffers;
use crate::pubsub;
use http2::H2Conn;
use wsbench_transport::http2::PREFACE;

mod http2;

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
    /// A message arriving in several pieces, reassembled before it is echoed; a message of
    /// one frame starts with its echo's header, of `echo_header` bytes.
    message: Vec<u8>,
    echo_header: u8,
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

    /// Queues a close frame with `code` (used at shutdown: 1001).
    pub fn close_with(&mut self, code: u16, out: &mut Vec<u8>) {
        match self.phase {
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
                    if let Err(error) = self.reassemble(decoder, &chunk, payload, out, pubsub_mode) {
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
    /// Adds a piece of a message that arrives in several to the message's buffer, which is
    /// sized once, at its first piece, for as much as the frame header announces (charged to
    /// the budget before it is allocated), and never regrown within a frame. A message of one
    /// frame is laid out as its own echo: the echo's header first, then the payload, so the
    /// finished buffer becomes the output (or is appended to it) without another copy.
    fn reassemble(
        &mut self,
        decoder: &Decoder,
        chunk: &Chunk,
        payload: &[u8],
        out: &mut Vec<u8>,
        pubsub_mode: bool,
    ) -> Result<(), ProtocolError> {
        let (rest, final_frame) = decoder.frame_remaining().unwrap_or((0, chunk.last));
        let room = payload.len().saturating_add(usize::try_from(rest).unwrap_or(usize::MAX));
        let mut header = [0u8; MAX_HEADER_LEN];
        let header_len = if chunk.first && final_frame {
            encode_header(&mut header, true, chunk.opcode, None, room as u64)
        } else {
            0
        };
        if let Err(over) = self.reservation.make_room(&mut self.message, room.saturating_add(header_len)) {
            self.message = Vec::new();
            self.echo_header = 0;
            self.reservation.release();
            return Err(ProtocolError::OverBudget(over));
        }
        if header_len > 0 {
            large_buffers::advise_huge_pages(&mut self.message);
            self.message.extend_from_slice(&header[..header_len]);
            self.echo_header = header_len as u8;
        }
        self.message.extend_from_slice(payload);
        if chunk.last {
            self.finish_message(chunk.opcode, out, pubsub_mode);
        }
        Ok(())
    }

    /// The message in `message` is complete: echoes it (or queues it as a pub/sub command).
    fn finish_message(&mut self, opcode: OpCode, out: &mut Vec<u8>, pubsub_mode: bool) {
        let header_len = usize::from(std::mem::take(&mut self.echo_header));
        let message = std::mem::take(&mut self.message);
        self.reservation.release();
        let body = &message[header_len..];
        if pubsub_mode && opcode == OpCode::Text && pubsub::parse(body).is_some() {
            push_command(&mut self.inbox, body);
            return;
        }
        if header_len == 0 {
            write_frame(out, true, opcode, None, body);
        } else if out.is_empty() {
            *out = message;
        } else {
            out.extend_from_slice(&message);
        }
        count_echo();
    }

    /// While a frame is being reassembled (its buffer sized for it and started): the buffer,
    /// whose spare capacity the rest of the frame can be read straight into, and how many
    /// bytes of it the frame still needs. The caller appends what it reads to the buffer and
    /// hands it over with [`ConnState::payload_arrived`]; the bytes then go through no other
    /// buffer on their way to the echo.
    pub fn payload_buffer(&mut self) -> Option<(&mut Vec<u8>, usize)> {
        let (rest, _) = self.decoder.as_ref()?.frame_remaining()?;
        if self.phase != Phase::WebSocket || self.message.is_empty() || rest == 0 {
            return None;
        }
        let room = self.message.capacity() - self.message.len();
        let wanted = room.min(usize::try_from(rest).unwrap_or(usize::MAX));
        (wanted > 0).then_some((&mut self.message, wanted))
    }

    /// Bytes of the frame in progress were appended to the buffer from
    /// [`ConnState::payload_buffer`], from `from` on: they are unmasked and checked in place,
    /// and a message they complete is echoed into `out`.
    pub fn payload_arrived(&mut self, from: usize, out: &mut Vec<u8>, limits: Limits) -> Next {
        let mut decoder = self.decoder(limits.max_message);
        let chunk = match decoder.decode(&mut self.message[from..]) {
            Ok(Some(chunk)) => chunk,
            Ok(None) => {
                self.decoder = Some(Box::new(decoder));
                return Next::Continue;
            }
            Err(error) => {
                self.message = Vec::new();
                self.echo_header = 0;
                self.reservation.release();
                return fail(error.close_code(), &error.to_string(), 0, out).1;
            }
        };
        debug_assert_eq!(
            chunk.consumed,
            self.message.len() - from,
            "payload_buffer bounds the read by the frame"
        );
        if chunk.last {
            self.finish_message(chunk.opcode, out, limits.pubsub);
        }
        if !decoder.at_rest() {
            self.decoder = Some(Box::new(decoder));
        }
        Next::Continue
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
    fn limits() -> Limits {
        Limits { max_message: 1 << 20, max_header_bytes: 8192, deflate: false, pubsub: false }
    }

    fn masked(fin: bool, opcode: OpCode, payload: &[u8]) -> Vec<u8> {
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

    /// A message of one frame arriving in pieces is sized once, at its first piece, laid out
    /// as its own echo, and echoed in order with what comes before and after it.
    #[test]
    fn a_frame_arriving_in_pieces_is_sized_once_and_echoed_in_order() {
        let mut state = ConnState::websocket(None);
        let payload: Vec<u8> = (0..70_000u32).map(|i| i as u8).collect();
        let wire = masked(true, OpCode::Binary, &payload);
        let mut out = Vec::new();
        let (used, _) = state.process(&mut wire.clone()[..1000], &mut out, limits());
        assert_eq!(used, 1000);
        let capacity = state.message.capacity();
        assert!(capacity >= 4 + payload.len() && capacity < 2 * payload.len(), "capacity {capacity}");
        let (more, _) = state.process(&mut wire.clone()[1000..50_000], &mut out, limits());
        assert_eq!(state.message.capacity(), capacity, "the buffer is not regrown within the frame");
        let mut rest = wire[1000 + more..].to_vec();
        rest.extend_from_slice(&masked(true, OpCode::Text, b"after"));
        state.process(&mut rest, &mut out, limits());
        let mut expected = Vec::new();
        write_frame(&mut expected, true, OpCode::Binary, None, &payload);
        write_frame(&mut expected, true, OpCode::Text, None, b"after");
        assert!(out == expected, "the echo and the message after it, in order");
        assert_eq!(state.message.capacity(), 0, "the buffer went with the echo");
    }

    /// The rest of a frame written straight into the message's buffer (as the event loop
    /// reads it) is unmasked and checked there: a text message is echoed once complete, and
    /// invalid UTF-8 fails the connection with 1007 as soon as it arrives.
    #[test]
    fn payload_read_into_the_message_buffer_is_unmasked_and_checked_in_place() {
        for (text, expected_close) in
            [("κόσμε ".repeat(20_000), None), ("ab\u{0}".repeat(40_000), Some(1007))]
        {
            let mut payload = text.into_bytes();
            if expected_close.is_some() {
                payload[90_000] = 0xFF;
            }
            let wire = masked(true, OpCode::Text, &payload);
            let mut state = ConnState::websocket(None);
            let mut out = Vec::new();
            let (used, _) = state.process(&mut wire.clone()[..5000], &mut out, limits());
            let mut at = used;
            let mut next = Next::Continue;
            while at < wire.len() && next == Next::Continue {
                let (buf, asked) = state.payload_buffer().expect("a frame in progress has its buffer");
                let take = asked.min(30_000).min(wire.len() - at);
                let from = buf.len();
                buf.extend_from_slice(&wire[at..at + take]);
                at += take;
                next = state.payload_arrived(from, &mut out, limits());
            }
            match expected_close {
                None => {
                    let mut echo = Vec::new();
                    write_frame(&mut echo, true, OpCode::Text, None, &payload);
                    assert!(out == echo, "the echo is the text, unmasked");
                }
                Some(code) => {
                    assert_eq!(next, Next::CloseAfterFlush);
                    assert!(at < wire.len(), "failed before the frame ended");
                    assert_eq!(out[0], 0x88);
                    assert_eq!(u16::from_be_bytes([out[2], out[3]]), code);
                }
            }
        }
    }

    /// A frame header announcing more than the process's budget for messages still arriving
    /// (and less than `--max-message`) is closed with 1009 at its first piece: the buffer is
    /// sized from the header, so it is charged before anything is allocated.
    #[test]
    fn a_frame_announcing_more_than_the_budget_is_closed_before_its_buffer_is_allocated() {
        let budget = wsbench_proto::MessageMemory::new(50_000);
        let mut state = ConnState::websocket(None);
        state.reservation = Reservation::new(budget.clone());
        let wire = masked(true, OpCode::Binary, &vec![5u8; 60_000]);
        let mut out = Vec::new();
        let (_, next) = state.process(&mut wire.clone()[..2000], &mut out, limits());
        assert_eq!(next, Next::CloseAfterFlush);
        assert_eq!(u16::from_be_bytes([out[2], out[3]]), 1009);
        assert_eq!(state.message.capacity(), 0, "nothing was allocated for it");
        assert_eq!(budget.held(), 0);
    }

    #[test]
    fn idle_connection_state_stays_small() {
        assert!(std::mem::size_of::<Conn>() <= 192, "Conn is {} bytes", std::mem::size_of::<Conn>());
    }
}
