//! What a connection sends and how an echo is checked. Fixed payloads are encoded (and
//! masked) once per worker into a batch of `frames_per_send` frames that every connection
//! writes from; `json-ts` messages carry a timestamp, so they are encoded per message.
//! Every message names the request it is: json-ts by its `"seq"`, a fixed payload of 8
//! bytes or more by its first 8 bytes (the message's number, patched into each frame as
//! the batch is written: see [`crate::engine::batch`]); a shorter fixed payload, and the
//! lines of a file, carry none and are checked whole.
//!
//! The mask key is chosen at random once per worker, not per frame: the server's work is
//! the same, and pre-encoding is what lets the client outrun the server (as uWebSockets'
//! own load generator does).

use std::io::Write;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use rand::{Rng, RngCore};
use wsbench_proto::{OpCode, write_frame};

use crate::config::{MessageKind, Payload};
use crate::engine::batch::{Batch, NUMBER_BYTES, encode_number};

/// Echoes whose payload past its number is checked byte for byte: the first message of
/// each connection and every 64th (the number itself is checked on every echo).
pub const CHECK_EVERY: u64 = 64;

#[derive(Debug)]
pub enum Template {
    /// `{"ts":…,"seq":…}`, encoded per message.
    JsonTs { mask: [u8; 4], opcode: OpCode },
    /// The same payload in every message.
    Fixed {
        /// The payload as the echo must return it (its first 8 bytes aside, when numbered).
        payload: Vec<u8>,
        /// `frames_per_send` masked frames, ready to write.
        batch: Batch,
        /// The payload's first 8 bytes carry the message's number (it has 8 or more).
        numbered: bool,
        mask: [u8; 4],
        opcode: OpCode,
    },
    /// The lines of a file, message `seq` carrying line `seq % lines`.
    Lines { lines: Arc<Vec<Vec<u8>>>, mask: [u8; 4], opcode: OpCode },
}

impl Template {
    pub fn new(payload: &Payload, message: MessageKind, frames_per_send: u64) -> Template {
        let mut rng = rand::rng();
        let mask: [u8; 4] = rng.random();
        let opcode = match message {
            MessageKind::Text => OpCode::Text,
            MessageKind::Binary => OpCode::Binary,
        };
        match payload {
            Payload::JsonTs => Template::JsonTs { mask, opcode },
            Payload::Text(text) => Template::Lines { lines: text.lines.clone(), mask, opcode },
            Payload::Bytes(size) => {
                let mut bytes = vec![0u8; *size as usize];
                match message {
                    MessageKind::Binary => rng.fill_bytes(&mut bytes),
                    // Text frames must be UTF-8: printable ASCII.
                    MessageKind::Text => bytes.iter_mut().for_each(|b| *b = rng.random_range(b' '..=b'~')),
                }
                let numbered = bytes.len() >= NUMBER_BYTES;
                if numbered {
                    bytes[..NUMBER_BYTES].copy_from_slice(&encode_number(0));
                }
                let mut frame = Vec::with_capacity(bytes.len() + 14);
                write_frame(&mut frame, true, opcode, Some(mask), &bytes);
                let number_at = numbered.then_some(frame.len() - bytes.len());
                let batch = Batch::new(&frame, frames_per_send, bytes.len(), mask, number_at);
                Template::Fixed { payload: bytes, batch, numbered, mask, opcode }
            }
        }
    }

    /// The mask key and opcode every message of this template is sent with.
    pub fn mask_opcode(&self) -> ([u8; 4], OpCode) {
        match self {
            Template::JsonTs { mask, opcode }
            | Template::Fixed { mask, opcode, .. }
            | Template::Lines { mask, opcode, .. } => (*mask, *opcode),
        }
    }

    /// The payload of message `seq` (json-ts, and a numbered fixed payload, are written
    /// into `scratch`, which keeps its capacity from message to message).
    pub fn message<'a>(&'a self, seq: u64, scratch: &'a mut Vec<u8>) -> &'a [u8] {
        match self {
            Template::JsonTs { .. } => {
                json_text(seq, scratch);
                scratch
            }
            Template::Fixed { payload, numbered: true, .. } => {
                scratch.clear();
                scratch.extend_from_slice(payload);
                scratch[..NUMBER_BYTES].copy_from_slice(&encode_number(seq));
                scratch
            }
            Template::Fixed { payload, .. } => payload,
            Template::Lines { lines, .. } => &lines[(seq % lines.len() as u64) as usize],
        }
    }

    /// Whether `reply` carries what message `seq` sent, whole.
    pub fn carries(&self, seq: u64, reply: &[u8]) -> bool {
        match self {
            Template::JsonTs { .. } => json_seq(reply) == Some(seq),
            Template::Fixed { payload, numbered: true, .. } => {
                reply.len() == payload.len()
                    && reply[..NUMBER_BYTES] == encode_number(seq)
                    && reply[NUMBER_BYTES..] == payload[NUMBER_BYTES..]
            }
            Template::Fixed { payload, .. } => reply == payload,
            Template::Lines { lines, .. } => reply == lines[(seq % lines.len() as u64) as usize],
        }
    }
}

/// Writes the json-ts message `seq` (with the current time) into `text`.
fn json_text(seq: u64, text: &mut Vec<u8>) {
    let micros = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros()).unwrap_or(0);
    text.clear();
    let _ = write!(text, "{{\"ts\":{micros},\"seq\":{seq}}}");
}

/// The `seq` of an echoed json-ts message, if it has one.
pub fn json_seq(message: &[u8]) -> Option<u64> {
    let at = message.windows(6).position(|w| w == b"\"seq\":")? + 6;
    let digits = &message[at..];
    let end = digits.iter().position(|b| !b.is_ascii_digit()).unwrap_or(digits.len());
    std::str::from_utf8(&digits[..end]).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use wsbench_proto::{Decoder, Role, apply_mask};

    #[test]
    fn json_messages_carry_their_sequence_number() {
        let mut out = Vec::new();
        let template = Template::new(&Payload::JsonTs, MessageKind::Text, 1);
        let (mask, opcode) = template.mask_opcode();
        write_frame(&mut out, true, opcode, Some(mask), template.message(42, &mut Vec::new()));
        let mut decoder = Decoder::new(Role::Server, 1 << 20);
        let chunk = decoder.decode(&mut out).unwrap().unwrap();
        let text = std::str::from_utf8(&out[chunk.payload.clone()]).unwrap();
        assert!(text.starts_with("{\"ts\":"), "{text}");
        assert_eq!(json_seq(text.as_bytes()), Some(42));
        assert_eq!(json_seq(b"{\"ts\":1}"), None);
    }

    #[test]
    fn fixed_batches_hold_frames_per_send_masked_frames_each_numbered() {
        let template = Template::new(&Payload::Bytes(20), MessageKind::Binary, 10);
        let Template::Fixed { payload, batch, .. } = &template else { panic!("fixed payload expected") };
        assert_eq!(batch.len(), 10 * 26);
        let bytes = batch.with_numbered(30, 1, 0, |head, tail| [head, tail].concat());
        for (index, frame) in bytes.chunks(26).enumerate() {
            let key: [u8; 4] = frame[2..6].try_into().unwrap();
            let mut sent = frame[6..26].to_vec();
            apply_mask(&mut sent, key, 0);
            assert_eq!(sent[8..], payload[8..]);
            assert_eq!(
                crate::engine::batch::decode_number(sent[..8].try_into().unwrap()),
                Some(30 + index as u64)
            );
            assert!(template.carries(30 + index as u64, &sent));
            assert!(!template.carries(31 + index as u64, &sent));
        }
        // The same message, written one at a time (compressed, or through a protocol).
        let mut scratch = Vec::new();
        assert_eq!(template.message(33, &mut scratch), &bytes_unmasked(&bytes[3 * 26..4 * 26])[..]);
    }

    /// A frame's payload, unmasked.
    fn bytes_unmasked(frame: &[u8]) -> Vec<u8> {
        let key: [u8; 4] = frame[2..6].try_into().unwrap();
        let mut payload = frame[6..].to_vec();
        apply_mask(&mut payload, key, 0);
        payload
    }

    #[test]
    fn payloads_shorter_than_a_number_are_sent_as_they_are() {
        let template = Template::new(&Payload::Bytes(4), MessageKind::Binary, 1);
        let Template::Fixed { payload, numbered, .. } = &template else { panic!("fixed payload expected") };
        assert!(!numbered);
        assert_eq!(template.message(5, &mut Vec::new()), &payload[..]);
        assert!(template.carries(5, payload));
    }

    #[test]
    fn text_payloads_are_printable_ascii() {
        let template = Template::new(&Payload::Bytes(1000), MessageKind::Text, 1);
        let message = template.message(u64::MAX, &mut Vec::new()).to_vec();
        assert!(message.iter().all(|b| (b' '..=b'~').contains(b)), "numbers stay printable too");
    }
}
