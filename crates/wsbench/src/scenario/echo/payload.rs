//! What a connection sends and how an echo is checked. Fixed payloads are encoded (and
//! masked) once per worker into a batch of `frames_per_send` frames that every connection
//! writes from; `json-ts` messages carry a timestamp, so they are encoded per message.
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

/// Echoes checked byte for byte: the first message of each connection and every 64th.
pub const CHECK_EVERY: u64 = 64;

#[derive(Debug)]
pub enum Template {
    /// `{"ts":…,"seq":…}`, encoded per message.
    JsonTs { mask: [u8; 4], opcode: OpCode },
    /// The same payload in every message.
    Fixed {
        /// The payload as the echo must return it.
        payload: Vec<u8>,
        /// `frames_per_send` masked frames, ready to write.
        batch: Vec<u8>,
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
                let mut batch = Vec::with_capacity((bytes.len() + 14) * frames_per_send as usize);
                for _ in 0..frames_per_send {
                    write_frame(&mut batch, true, opcode, Some(mask), &bytes);
                }
                Template::Fixed { payload: bytes, batch, mask, opcode }
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

    /// The payload of message `seq` (json-ts is written into `scratch`).
    pub fn message<'a>(&'a self, seq: u64, scratch: &'a mut [u8; 64]) -> &'a [u8] {
        match self {
            Template::JsonTs { .. } => {
                let len = json_text(seq, scratch);
                &scratch[..len]
            }
            Template::Fixed { payload, .. } => payload,
            Template::Lines { lines, .. } => &lines[(seq % lines.len() as u64) as usize],
        }
    }
}

/// Writes the json-ts message `seq` (with the current time) into `text`; returns its length.
fn json_text(seq: u64, text: &mut [u8; 64]) -> usize {
    let micros = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros()).unwrap_or(0);
    let mut cursor = std::io::Cursor::new(&mut text[..]);
    write!(cursor, "{{\"ts\":{micros},\"seq\":{seq}}}").expect("64 bytes hold the message");
    cursor.position() as usize
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
        write_frame(&mut out, true, opcode, Some(mask), template.message(42, &mut [0; 64]));
        let mut decoder = Decoder::new(Role::Server, 1 << 20);
        let chunk = decoder.decode(&mut out).unwrap().unwrap();
        let text = std::str::from_utf8(&out[chunk.payload.clone()]).unwrap();
        assert!(text.starts_with("{\"ts\":"), "{text}");
        assert_eq!(json_seq(text.as_bytes()), Some(42));
        assert_eq!(json_seq(b"{\"ts\":1}"), None);
    }

    #[test]
    fn fixed_batches_hold_frames_per_send_masked_frames() {
        let Template::Fixed { payload, batch, .. } =
            Template::new(&Payload::Bytes(20), MessageKind::Binary, 10)
        else {
            panic!("fixed payload expected")
        };
        assert_eq!(batch.len(), 10 * 26);
        let key: [u8; 4] = batch[2..6].try_into().unwrap();
        let mut first = batch[6..26].to_vec();
        apply_mask(&mut first, key, 0);
        assert_eq!(first, payload);
    }

    #[test]
    fn text_payloads_are_printable_ascii() {
        let Template::Fixed { payload, .. } = Template::new(&Payload::Bytes(1000), MessageKind::Text, 1)
        else {
            panic!("fixed payload expected")
        };
        assert!(payload.iter().all(|b| (b' '..=b'~').contains(b)));
    }
}
