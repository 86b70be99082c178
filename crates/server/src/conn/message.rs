//! Messages larger than one read: a binary message of one frame echoed as it arrives, and
//! every other message reassembled in one buffer before its echo.
//!
//! A binary frame that is a whole message needs no checking beyond its header (no UTF-8, no
//! inflation), so its echo's header (the same length, unmasked) goes out as soon as the frame
//! header is in, and each piece of payload follows as it is read, unmasked in place: the
//! server holds no buffer for the message however large it is, and the bytes are copied only
//! by the kernel, in and out, while they are still in the cache. The echo is on the wire
//! before the message has all arrived, so nothing else may be written to the connection
//! until the frame ends: this is done only on HTTP/1.1 WebSockets outside pub/sub mode (where
//! deliveries to a connection could land inside the frame), and a close the server starts in
//! the meantime cannot be sent (see [`ConnState::close_with`]).
//!
//! Text (whose UTF-8 may fail half-way, which must close the connection with 1007 instead of
//! an echo), fragmented and compressed messages are reassembled: sized from each frame header
//! and charged to the message budget before any allocation. Text and fragmented ones are laid
//! out as their own echo (room for its header at the front), so the finished buffer is written
//! as it is.

use wsbench_proto::{Chunk, Decoder, MAX_HEADER_LEN, OpCode, ProtocolError, encode_header, write_frame};

use super::{ConnState, Limits, Next, Phase, fail, push_command};
use crate::echo_count::count_echo;
use crate::large_buffers;
use crate::pubsub;

/// The least of a binary frame still to come for its echo to start before it is all in: a
/// frame that overshoots a read by a few bytes is cheaper echoed in one write than in two.
pub(crate) const MIN_STREAMED_REST: u64 = 16 * 1024;

/// The longest header of an unmasked frame (2 bytes and an 8-byte length): the room left at
/// the front of a fragmented message, whose length is known only at its last frame.
const LONGEST_ECHO_HEADER: usize = 10;

/// Where the rest of the frame in progress is to be read: see [`ConnState::payload_target`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadInto {
    /// The message's own buffer ([`ConnState::message_buffer`]), for a message reassembled.
    Message,
    /// The output, right after the echo's bytes so far: a binary frame echoed as it arrives.
    Echo,
}

impl ConnState {
    /// A piece of a data frame that does not complete its message arrived in `payload`:
    /// echoes it as it comes (a binary message of one frame, where allowed) or adds it to the
    /// message's buffer.
    pub(super) fn message_piece(
        &mut self,
        decoder: &Decoder,
        chunk: &Chunk,
        payload: &[u8],
        out: &mut Vec<u8>,
        pubsub_mode: bool,
    ) -> Result<(), ProtocolError> {
        if self.echo_streaming {
            out.extend_from_slice(payload);
            if chunk.last {
                self.echo_streaming = false;
                count_echo();
            }
            return Ok(());
        }
        if chunk.first
            && chunk.opcode == OpCode::Binary
            && self.may_stream_echoes
            && !pubsub_mode
            && let Some((rest, true)) = decoder.frame_remaining()
            && rest >= MIN_STREAMED_REST
        {
            let len = (payload.len() as u64).saturating_add(rest);
            let mut header = [0u8; MAX_HEADER_LEN];
            let header_len = encode_header(&mut header, true, OpCode::Binary, None, len);
            out.extend_from_slice(&header[..header_len]);
            out.extend_from_slice(payload);
            self.echo_streaming = true;
            return Ok(());
        }
        // Reassembled: the buffer is sized once per frame, at the frame's first piece, for as
        // much as the frame header announces (charged to the budget before it is allocated),
        // and never regrown within a frame. The message is laid out as its own echo: room for
        // the echo's header first (its exact length for a message of one frame, the longest
        // for a fragmented one, whose length is not known yet), so the finished buffer becomes
        // the output without another copy.
        let (rest, final_frame) = decoder.frame_remaining().unwrap_or((0, chunk.last));
        let room = payload.len().saturating_add(usize::try_from(rest).unwrap_or(usize::MAX));
        let header_room = match (chunk.first, final_frame) {
            (true, true) => encode_header(&mut [0u8; MAX_HEADER_LEN], true, chunk.opcode, None, room as u64),
            (true, false) => LONGEST_ECHO_HEADER,
            (false, _) => 0,
        };
        if self.message.capacity() == 0 {
            let needed = room.saturating_add(header_room);
            self.message = if final_frame {
                large_buffers::reuse(needed)
            } else {
                large_buffers::reuse_for_fragments(needed)
            };
        }
        if let Err(over) = self.reservation.make_room(&mut self.message, room.saturating_add(header_room)) {
            self.abandon_message();
            return Err(ProtocolError::OverBudget(over));
        }
        if header_room > 0 {
            large_buffers::advise_huge_pages(&mut self.message);
            self.message.extend_from_slice(&[0u8; LONGEST_ECHO_HEADER][..header_room]);
            self.echo_header = header_room as u8;
        }
        self.message.extend_from_slice(payload);
        if chunk.last {
            self.finish_message(chunk.opcode, out, pubsub_mode);
        }
        Ok(())
    }

    /// The message being reassembled is given up (the connection is failing): its buffer is
    /// freed and its charge goes back to the budget.
    fn abandon_message(&mut self) {
        self.message = Vec::new();
        self.echo_header = 0;
        self.reservation.release();
    }

    /// The frame in progress is a binary message echoed as it arrives: a close frame now would
    /// land inside its echo.
    pub fn echo_streaming(&self) -> bool {
        self.echo_streaming
    }

    /// The message in `message` is complete: echoes it (or queues it as a pub/sub command).
    /// Its echo's header goes into the room left for it when it fits exactly (always for a
    /// message of one frame; for a fragmented one, when it is 64 KiB or more), and the buffer
    /// becomes the echo; otherwise the payload is copied into a new frame.
    fn finish_message(&mut self, opcode: OpCode, out: &mut Vec<u8>, pubsub_mode: bool) {
        let header_room = usize::from(std::mem::take(&mut self.echo_header));
        let mut message = std::mem::take(&mut self.message);
        self.reservation.release();
        let body = &message[header_room..];
        if pubsub_mode && opcode == OpCode::Text && pubsub::parse(body).is_some() {
            push_command(&mut self.inbox, body);
            return;
        }
        let mut header = [0u8; MAX_HEADER_LEN];
        let header_len = encode_header(&mut header, true, opcode, None, body.len() as u64);
        if header_len != header_room {
            write_frame(out, true, opcode, None, body);
            large_buffers::give_back(message);
        } else {
            message[..header_len].copy_from_slice(&header[..header_len]);
            if out.is_empty() {
                *out = message;
            } else {
                out.extend_from_slice(&message);
            }
        }
        count_echo();
    }

    /// While a frame's payload is still arriving and has somewhere to go that is not the read
    /// buffer: where (its message's buffer, or the output after the echo so far) and how many
    /// bytes the frame still needs (for the message's buffer, at most the room it has left).
    /// The caller appends what it reads there (the output with [`PayloadInto::Echo`], the
    /// buffer from [`ConnState::message_buffer`] otherwise) and hands it over with
    /// [`ConnState::payload_arrived`]; the bytes then go through no other buffer.
    pub fn payload_target(&self) -> Option<(PayloadInto, usize)> {
        let (rest, _) = self.decoder.as_ref()?.frame_remaining()?;
        let rest = usize::try_from(rest).unwrap_or(usize::MAX);
        if self.phase != Phase::WebSocket || rest == 0 {
            return None;
        }
        if self.echo_streaming {
            return Some((PayloadInto::Echo, rest));
        }
        if self.message.is_empty() {
            return None;
        }
        let wanted = (self.message.capacity() - self.message.len()).min(rest);
        (wanted > 0).then_some((PayloadInto::Message, wanted))
    }

    /// The buffer a message is reassembled in, for [`PayloadInto::Message`].
    pub fn message_buffer(&mut self) -> &mut Vec<u8> {
        &mut self.message
    }

    /// Bytes of the frame in progress were appended where [`ConnState::payload_target`] said
    /// (`into`), from `from` on: they are unmasked and checked in place, and a message they
    /// complete is echoed into `out`.
    pub fn payload_arrived(
        &mut self,
        from: usize,
        into: PayloadInto,
        out: &mut Vec<u8>,
        limits: Limits,
    ) -> Next {
        let mut decoder = self.decoder(limits.max_message);
        let buf = match into {
            PayloadInto::Message => &mut self.message,
            PayloadInto::Echo => &mut *out,
        };
        let arrived = buf.len() - from;
        let chunk = match decoder.decode(&mut buf[from..]) {
            Ok(Some(chunk)) => chunk,
            Ok(None) => {
                self.decoder = Some(Box::new(decoder));
                return Next::Continue;
            }
            Err(error) => {
                self.abandon_message();
                if std::mem::take(&mut self.echo_streaming) {
                    // Inside the echo's frame no close frame can be sent: end the connection.
                    return Next::CloseAfterFlush;
                }
                return fail(error.close_code(), &error.to_string(), 0, out).1;
            }
        };
        debug_assert_eq!(chunk.consumed, arrived, "payload_target bounds the read by the frame");
        if chunk.last {
            match into {
                PayloadInto::Message => self.finish_message(chunk.opcode, out, limits.pubsub),
                PayloadInto::Echo => {
                    self.echo_streaming = false;
                    count_echo();
                }
            }
        }
        if !decoder.at_rest() {
            self.decoder = Some(Box::new(decoder));
        }
        Next::Continue
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{limits, masked};
    use super::*;
    use wsbench_proto::Reservation;

    /// Feeds `wire` to `state` as the event loop does: the first `first` bytes through
    /// `process`, then the rest of the frame in pieces of `piece` bytes straight where
    /// `payload_target` says, then whatever follows the frame through `process` again.
    fn feed(state: &mut ConnState, wire: &[u8], first: usize, piece: usize, out: &mut Vec<u8>) -> Next {
        let (mut at, mut next) = state.process(&mut wire[..first].to_vec(), out, limits());
        while next == Next::Continue
            && let Some((into, wanted)) = state.payload_target()
        {
            let take = wanted.min(piece).min(wire.len() - at);
            let buf = match into {
                PayloadInto::Message => state.message_buffer(),
                PayloadInto::Echo => &mut *out,
            };
            let from = buf.len();
            buf.extend_from_slice(&wire[at..at + take]);
            at += take;
            next = state.payload_arrived(from, into, out, limits());
        }
        if next == Next::Continue && at < wire.len() {
            let (used, after) = state.process(&mut wire[at..].to_vec(), out, limits());
            assert_eq!(at + used, wire.len(), "everything after the frame is used");
            next = after;
        }
        next
    }

    /// An HTTP/1.1 WebSocket's binary message of one frame is echoed as it arrives: the
    /// echo's header and the first piece at once, every later piece unmasked where it was
    /// read, no buffer held for the message, and what follows echoed after it.
    #[test]
    fn a_binary_frame_is_echoed_as_it_arrives_without_a_message_buffer() {
        let payload: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        let mut wire = masked(true, OpCode::Binary, &payload);
        wire.extend_from_slice(&masked(true, OpCode::Text, b"after"));
        let mut state = ConnState::websocket(None);
        state.may_stream_echoes = true;
        let mut out = Vec::new();
        let (used, _) = state.process(&mut wire[..1000].to_vec(), &mut out, limits());
        assert_eq!(used, 1000);
        assert_eq!(out.len(), 10 + 1000 - 14, "the echo's header and the first piece are out");
        assert!(state.echo_streaming());
        assert_eq!(state.message.capacity(), 0, "no buffer for the message");
        assert_eq!(feed(&mut state, &wire[1000..], 0, 7_001, &mut out), Next::Continue);
        let mut expected = Vec::new();
        write_frame(&mut expected, true, OpCode::Binary, None, &payload);
        write_frame(&mut expected, true, OpCode::Text, None, b"after");
        assert!(out == expected, "the echo, unmasked, then the message after it");
        assert!(!state.echo_streaming());
        assert!(state.decoder.is_none(), "at rest after the frame");
    }

    /// Binary frames are reassembled where echoing them early is not allowed (HTTP/2 streams,
    /// pub/sub mode), and fragmented binary messages always: the echo is one frame either way.
    #[test]
    fn binary_messages_are_reassembled_where_they_may_not_stream() {
        let payload: Vec<u8> = (0..100_000u32).map(|i| (i % 253) as u8).collect();
        let mut expected = Vec::new();
        write_frame(&mut expected, true, OpCode::Binary, None, &payload);
        let mut fragmented = masked(false, OpCode::Binary, &payload[..60_000]);
        fragmented.extend_from_slice(&masked(true, OpCode::Continuation, &payload[60_000..]));
        for (may_stream, pubsub, wire) in [
            (false, false, masked(true, OpCode::Binary, &payload)),
            (true, true, masked(true, OpCode::Binary, &payload)),
            (true, false, fragmented),
        ] {
            let mut state = ConnState::websocket(None);
            state.may_stream_echoes = may_stream;
            let mut out = Vec::new();
            let limits = Limits { pubsub, ..limits() };
            let (used, _) = state.process(&mut wire[..5_000].to_vec(), &mut out, limits);
            assert!(out.is_empty() && !state.echo_streaming(), "nothing echoed before the message is whole");
            let (_, _) = state.process(&mut wire[used..].to_vec(), &mut out, limits);
            assert!(out == expected, "may_stream {may_stream}, pubsub {pubsub}: one frame, whole");
        }
    }

    /// A fragmented message is laid out as its own echo too: room for the longest header is
    /// left at its front, and once its length is known the header goes there when it fills
    /// that room exactly (64 KiB or more), so the buffer becomes the echo; a shorter message
    /// is copied into its frame.
    #[test]
    fn a_fragmented_message_becomes_its_echo_when_its_header_fills_the_room_left() {
        for (len, in_place) in [(100_000usize, true), (65_536, true), (65_535, false), (3_000, false)] {
            for opcode in [OpCode::Binary, OpCode::Text] {
                let payload: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
                let third = len / 3;
                let mut wire = masked(false, opcode, &payload[..third]);
                wire.extend(masked(false, OpCode::Continuation, &payload[third..2 * third]));
                wire.extend(masked(true, OpCode::Continuation, &payload[2 * third..]));
                let mut state = ConnState::websocket(None);
                state.may_stream_echoes = true;
                let mut out = Vec::new();
                let last_piece = wire.len() - 100;
                let (used, _) = state.process(&mut wire[..last_piece].to_vec(), &mut out, limits());
                assert!(
                    out.is_empty() && !state.echo_streaming(),
                    "nothing echoed before the message is whole"
                );
                let buffer = state.message.as_ptr();
                state.process(&mut wire[used..].to_vec(), &mut out, limits());
                let mut expected = Vec::new();
                write_frame(&mut expected, true, opcode, None, &payload);
                assert!(out == expected, "{opcode:?} of {len} bytes: one frame, whole");
                assert_eq!(
                    out.as_ptr() == buffer,
                    in_place,
                    "{opcode:?} of {len} bytes: the buffer is the echo"
                );
            }
        }
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
    /// reads it) is unmasked and checked there: a text message is echoed once complete (also
    /// where binary ones would stream), and invalid UTF-8 fails the connection with 1007 as
    /// soon as it arrives.
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
            state.may_stream_echoes = true;
            let mut out = Vec::new();
            let next = feed(&mut state, &wire, 5000, 30_000, &mut out);
            match expected_close {
                None => {
                    let mut echo = Vec::new();
                    write_frame(&mut echo, true, OpCode::Text, None, &payload);
                    assert!(out == echo, "the echo is the text, unmasked");
                }
                Some(code) => {
                    assert_eq!(next, Next::CloseAfterFlush);
                    assert_eq!(out[0], 0x88, "only a close frame");
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
}
