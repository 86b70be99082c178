//! The frame decoder: the one place that enforces RFC 6455's framing rules for both roles.
//!
//! It streams. A data frame's payload is delivered in [`Chunk`]s as bytes arrive, unmasked
//! in place in the caller's buffer, with text validated as UTF-8 on the way, so an invalid
//! byte fails the connection at once and a 100 MB frame never has to sit in the input
//! buffer whole. Control frames (≤125 bytes) are delivered only whole. The decoder keeps no
//! buffer of its own; after an error it must not be used again.

use std::ops::Range;

use crate::{
    FrameHeader, MAX_CONTROL_PAYLOAD, OpCode, ProtocolError, Utf8Validator, apply_mask, parse_close_payload,
    parse_header,
};

/// Which side of the connection is decoding: a server expects masked frames, a client
/// unmasked ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Server,
    Client,
}

/// A piece of a frame's payload, ready to use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// `Text` or `Binary` for data (also for continuation frames: the message's opcode),
    /// `Close`, `Ping` or `Pong` for control frames.
    pub opcode: OpCode,
    /// The unmasked payload bytes, as a range of the buffer given to `decode`.
    pub payload: Range<usize>,
    /// Bytes of the buffer this chunk used up (header and payload); drop them before the
    /// next call.
    pub consumed: usize,
    /// The first chunk of its message (always true for control frames).
    pub first: bool,
    /// The last chunk of its message (always true for control frames).
    pub last: bool,
    /// The message's first frame had RSV1 set under permessage-deflate: the payload is
    /// compressed, and a text message's UTF-8 is the caller's to check once inflated.
    pub compressed: bool,
}

#[derive(Debug, Clone)]
struct FrameInProgress {
    header: FrameHeader,
    remaining: u64,
    done: u64,
}

#[derive(Debug, Clone)]
struct MessageInProgress {
    opcode: OpCode,
    len: u64,
    delivered: bool,
    utf8: Option<Utf8Validator>,
    compressed: bool,
}

/// Decodes frames for one connection.
#[derive(Debug, Clone)]
pub struct Decoder {
    role: Role,
    max_message: u64,
    frame: Option<FrameInProgress>,
    message: Option<MessageInProgress>,
    /// permessage-deflate was negotiated: RSV1 may mark a data message's first frame.
    rsv1_allowed: bool,
}

impl Decoder {
    pub fn new(role: Role, max_message: u64) -> Self {
        Decoder { role, max_message, frame: None, message: None, rsv1_allowed: false }
    }

    /// permessage-deflate was negotiated (RFC 7692 §6): RSV1 is allowed on the first frame
    /// of a data message, and still refused on control frames and continuations.
    pub fn allow_rsv1(&mut self) {
        self.rsv1_allowed = true;
    }

    /// Whether a fragmented or partially received message is in progress.
    pub fn in_message(&self) -> bool {
        self.message.is_some()
    }

    /// Whether nothing is in progress (no partial frame, no unfinished message): the decoder
    /// is then equal to a new one with the same settings, so a caller keeping many idle
    /// connections may drop it and start a new one at the next input.
    pub fn at_rest(&self) -> bool {
        self.frame.is_none() && self.message.is_none()
    }

    /// The data frame in progress (after the chunk just decoded): the payload bytes still to
    /// come in it, and whether it is its message's last frame; `None` between frames. A
    /// caller reassembling a message learns from it, at the first chunk, how much room the
    /// frame needs, so the buffer is sized once instead of regrown as the bytes arrive.
    pub fn frame_remaining(&self) -> Option<(u64, bool)> {
        self.frame.as_ref().map(|frame| (frame.remaining, frame.header.fin))
    }

    /// Decodes the next chunk from the start of `buf`, unmasking its payload in place.
    /// `Ok(None)` means more bytes are needed and nothing was consumed.
    pub fn decode(&mut self, buf: &mut [u8]) -> Result<Option<Chunk>, ProtocolError> {
        let mut at = 0;
        if self.frame.is_none() {
            let Some(header) = parse_header(buf)? else { return Ok(None) };
            self.check(&header)?;
            if header.opcode.is_control() {
                return self.decode_control(header, buf);
            }
            at = header.header_len;
            self.begin_data_frame(header)?;
        }
        let frame = self.frame.as_mut().expect("a data frame is in progress");
        let message = self.message.as_mut().expect("a data frame belongs to a message");
        let available = (buf.len() - at).min(usize::try_from(frame.remaining).unwrap_or(usize::MAX));
        if at == 0 && available == 0 && frame.remaining > 0 {
            return Ok(None);
        }
        let payload = at..at + available;
        if let Some(key) = frame.header.mask {
            apply_mask(&mut buf[payload.clone()], key, frame.done as usize);
        }
        if let Some(utf8) = message.utf8.as_mut() {
            utf8.feed(&buf[payload.clone()]).map_err(|_| ProtocolError::InvalidUtf8)?;
        }
        frame.remaining -= available as u64;
        frame.done += available as u64;
        let first = !message.delivered;
        message.delivered = true;
        let opcode = message.opcode;
        let compressed = message.compressed;
        let last = frame.remaining == 0 && frame.header.fin;
        if frame.remaining == 0 {
            self.frame = None;
            if last {
                if let Some(utf8) = message.utf8.as_mut() {
                    utf8.finish().map_err(|_| ProtocolError::InvalidUtf8)?;
                }
                self.message = None;
            }
        }
        Ok(Some(Chunk { opcode, consumed: payload.end, payload, first, last, compressed }))
    }

    fn check(&self, header: &FrameHeader) -> Result<(), ProtocolError> {
        let first_data_frame = !header.opcode.is_control() && header.opcode != OpCode::Continuation;
        let allowed = if self.rsv1_allowed && first_data_frame { 0b100 } else { 0 };
        if header.rsv & !allowed != 0 {
            return Err(ProtocolError::ReservedBits(header.rsv));
        }
        match (self.role, header.mask.is_some()) {
            (Role::Server, false) => return Err(ProtocolError::UnmaskedClientFrame),
            (Role::Client, true) => return Err(ProtocolError::MaskedServerFrame),
            _ => {}
        }
        if header.opcode.is_control() {
            if !header.fin {
                return Err(ProtocolError::FragmentedControlFrame);
            }
            if header.payload_len > MAX_CONTROL_PAYLOAD {
                return Err(ProtocolError::ControlFrameTooLong(header.payload_len));
            }
        } else {
            match (header.opcode, self.message.is_some()) {
                (OpCode::Continuation, false) => return Err(ProtocolError::UnexpectedContinuation),
                (OpCode::Text | OpCode::Binary, true) => return Err(ProtocolError::ExpectedContinuation),
                _ => {}
            }
        }
        Ok(())
    }

    fn begin_data_frame(&mut self, header: FrameHeader) -> Result<(), ProtocolError> {
        let compressed = header.rsv & 0b100 != 0;
        let message = self.message.get_or_insert_with(|| MessageInProgress {
            opcode: header.opcode,
            len: 0,
            delivered: false,
            utf8: (header.opcode == OpCode::Text && !compressed).then(Utf8Validator::new),
            compressed,
        });
        message.len = message.len.saturating_add(header.payload_len);
        if message.len > self.max_message {
            return Err(ProtocolError::MessageTooBig { size: message.len, limit: self.max_message });
        }
        self.frame = Some(FrameInProgress { header, remaining: header.payload_len, done: 0 });
        Ok(())
    }

    fn decode_control(
        &mut self,
        header: FrameHeader,
        buf: &mut [u8],
    ) -> Result<Option<Chunk>, ProtocolError> {
        let end = header.header_len + header.payload_len as usize;
        if buf.len() < end {
            return Ok(None);
        }
        let payload = header.header_len..end;
        if let Some(key) = header.mask {
            apply_mask(&mut buf[payload.clone()], key, 0);
        }
        if header.opcode == OpCode::Close {
            parse_close_payload(&buf[payload.clone()])?;
        }
        Ok(Some(Chunk {
            opcode: header.opcode,
            payload,
            consumed: end,
            first: true,
            last: true,
            compressed: false,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::write_frame;

    const KEY: Option<[u8; 4]> = Some([0xA1, 0xB2, 0xC3, 0xD4]);

    /// Feeds `wire` to a server-role decoder in pieces of `step` bytes, the way a socket
    /// would deliver them, and returns each message (opcode, payload).
    fn decode_all(wire: &[u8], step: usize) -> Result<Vec<(OpCode, Vec<u8>)>, ProtocolError> {
        let mut decoder = Decoder::new(Role::Server, 1 << 20);
        let mut pending: Vec<u8> = Vec::new();
        let mut messages = Vec::new();
        let mut current = Vec::new();
        for piece in wire.chunks(step.max(1)) {
            pending.extend_from_slice(piece);
            while let Some(chunk) = decoder.decode(&mut pending)? {
                if chunk.opcode.is_control() {
                    messages.push((chunk.opcode, pending[chunk.payload.clone()].to_vec()));
                } else {
                    current.extend_from_slice(&pending[chunk.payload.clone()]);
                    if chunk.last {
                        messages.push((chunk.opcode, std::mem::take(&mut current)));
                    }
                }
                pending.drain(..chunk.consumed);
            }
        }
        Ok(messages)
    }

    #[test]
    fn fragmented_text_with_interleaved_ping_decodes_at_every_step_size() {
        let mut wire = Vec::new();
        write_frame(&mut wire, false, OpCode::Text, KEY, "κό".as_bytes());
        write_frame(&mut wire, true, OpCode::Ping, KEY, b"ping");
        write_frame(&mut wire, true, OpCode::Continuation, KEY, "σμε".as_bytes());
        write_frame(&mut wire, true, OpCode::Binary, KEY, &[0u8; 300]);
        for step in 1..wire.len() {
            let messages = decode_all(&wire, step).unwrap();
            assert_eq!(
                messages,
                vec![
                    (OpCode::Ping, b"ping".to_vec()),
                    (OpCode::Text, "κόσμε".as_bytes().to_vec()),
                    (OpCode::Binary, vec![0u8; 300]),
                ],
                "step {step}"
            );
        }
    }

    #[test]
    fn empty_frames_are_delivered() {
        let mut wire = Vec::new();
        write_frame(&mut wire, true, OpCode::Text, KEY, b"");
        assert_eq!(decode_all(&wire, 100).unwrap(), vec![(OpCode::Text, vec![])]);
    }

    #[test]
    fn framing_violations_fail_with_their_close_code() {
        let cases: Vec<(Vec<u8>, ProtocolError, u16)> = vec![
            (vec![0xC1, 0x80, 0, 0, 0, 0], ProtocolError::ReservedBits(4), 1002),
            (vec![0x81, 0x00], ProtocolError::UnmaskedClientFrame, 1002),
            (vec![0x09, 0x80, 0, 0, 0, 0], ProtocolError::FragmentedControlFrame, 1002),
            (vec![0x89, 0xFE, 0, 126, 0, 0, 0, 0], ProtocolError::ControlFrameTooLong(126), 1002),
            (vec![0x80, 0x80, 0, 0, 0, 0], ProtocolError::UnexpectedContinuation, 1002),
            (vec![0x88, 0x81, 0, 0, 0, 0, 3], ProtocolError::CloseTooShort, 1002),
            (vec![0x81, 0x81, 0, 0, 0, 0, 0xFF], ProtocolError::InvalidUtf8, 1007),
        ];
        for (wire, error, code) in cases {
            assert_eq!(decode_all(&wire, wire.len()), Err(error.clone()), "{wire:x?}");
            assert_eq!(error.close_code(), code);
        }
    }

    #[test]
    fn new_message_inside_a_fragmented_one_is_rejected() {
        let mut wire = Vec::new();
        write_frame(&mut wire, false, OpCode::Text, KEY, b"a");
        write_frame(&mut wire, true, OpCode::Text, KEY, b"b");
        assert_eq!(decode_all(&wire, 64), Err(ProtocolError::ExpectedContinuation));
    }

    #[test]
    fn frame_remaining_tells_the_rest_of_the_frame_in_progress_and_whether_it_ends_the_message() {
        let mut wire = Vec::new();
        write_frame(&mut wire, false, OpCode::Binary, KEY, &[7u8; 300]);
        write_frame(&mut wire, true, OpCode::Continuation, KEY, &[8u8; 200]);
        let mut decoder = Decoder::new(Role::Server, 1 << 20);
        assert_eq!(decoder.frame_remaining(), None);
        let chunk = decoder.decode(&mut wire[..108]).unwrap().unwrap();
        assert_eq!(chunk.payload.len(), 100);
        assert_eq!(decoder.frame_remaining(), Some((200, false)));
        decoder.decode(&mut wire[108..308]).unwrap().unwrap();
        assert_eq!(decoder.frame_remaining(), None, "between frames");
        decoder.decode(&mut wire[308..404]).unwrap().unwrap();
        assert_eq!(decoder.frame_remaining(), Some((112, true)));
    }

    #[test]
    fn oversized_message_fails_on_its_header_alone() {
        let mut decoder = Decoder::new(Role::Server, 1000);
        let mut wire = vec![0x82, 0xFE, 0x03, 0xE9, 1, 2, 3, 4];
        assert_eq!(decoder.decode(&mut wire), Err(ProtocolError::MessageTooBig { size: 1001, limit: 1000 }));
    }

    #[test]
    fn invalid_utf8_fails_before_the_frame_is_complete() {
        let mut wire = Vec::new();
        write_frame(&mut wire, true, OpCode::Text, KEY, b"\xce\xba\xf4\x90\x80\x80 and more text");
        let mut decoder = Decoder::new(Role::Server, 1 << 20);
        // Header plus the first four payload bytes: 0xF4 0x90 can never start a valid char.
        let mut partial = wire[..10].to_vec();
        assert_eq!(decoder.decode(&mut partial), Err(ProtocolError::InvalidUtf8));
    }

    #[test]
    fn client_role_rejects_masked_frames_and_accepts_unmasked() {
        let mut decoder = Decoder::new(Role::Client, 100);
        let mut unmasked = vec![0x81, 0x02, b'h', b'i'];
        let chunk = decoder.decode(&mut unmasked).unwrap().unwrap();
        assert_eq!(&unmasked[chunk.payload], b"hi");
        let mut masked = Vec::new();
        write_frame(&mut masked, true, OpCode::Text, KEY, b"hi");
        assert_eq!(decoder.decode(&mut masked), Err(ProtocolError::MaskedServerFrame));
    }

    #[test]
    fn rsv1_is_allowed_only_on_the_first_frame_of_a_negotiated_data_message() {
        let rsv1 = |wire: &mut Vec<u8>| wire[0] |= 0x40;
        let mut first = Vec::new();
        write_frame(&mut first, false, OpCode::Text, KEY, b"\xff");
        rsv1(&mut first);
        // Not negotiated: a protocol error.
        let mut plain = Decoder::new(Role::Server, 100);
        assert_eq!(plain.decode(&mut first.clone()), Err(ProtocolError::ReservedBits(4)));
        let mut decoder = Decoder::new(Role::Server, 100);
        decoder.allow_rsv1();
        let chunk = decoder.decode(&mut first).unwrap().unwrap();
        // Compressed text is not UTF-8-checked here (0xFF would fail otherwise).
        assert!(chunk.compressed && chunk.first && !chunk.last);
        let mut continuation = Vec::new();
        write_frame(&mut continuation, true, OpCode::Continuation, KEY, b"x");
        let chunk = decoder.decode(&mut continuation.clone()).unwrap().unwrap();
        assert!(chunk.compressed && chunk.last);
        for (opcode, fin) in [(OpCode::Ping, true), (OpCode::Binary, false)] {
            let mut decoder = Decoder::new(Role::Server, 100);
            decoder.allow_rsv1();
            let mut wire = Vec::new();
            write_frame(&mut wire, fin, opcode, KEY, b"a");
            write_frame(&mut wire, true, OpCode::Continuation, KEY, b"b");
            if opcode.is_control() {
                rsv1(&mut wire);
                assert_eq!(decoder.decode(&mut wire), Err(ProtocolError::ReservedBits(4)));
            } else {
                let first_len = 7;
                wire[first_len] |= 0x40;
                let chunk = decoder.decode(&mut wire).unwrap().unwrap();
                assert!(!chunk.compressed);
                assert_eq!(decoder.decode(&mut wire[first_len..]), Err(ProtocolError::ReservedBits(4)));
            }
        }
        // RSV2 and RSV3 stay refused.
        let mut decoder = Decoder::new(Role::Server, 100);
        decoder.allow_rsv1();
        assert_eq!(decoder.decode(&mut [0xA1, 0x80, 0, 0, 0, 0]), Err(ProtocolError::ReservedBits(2)));
    }
}
