//! Frame headers (RFC 6455 §5.2): parsing the 2–14 byte header and encoding it. Payloads
//! are never copied here; [`write_frame`] is the convenience that appends header and payload
//! to a caller's buffer.

use crate::{ProtocolError, apply_mask};

/// Longest possible header: 2 bytes, 8 bytes of extended length, 4 bytes of mask key.
pub const MAX_HEADER_LEN: usize = 14;

/// The frame opcodes RFC 6455 defines; the reserved ones are rejected at parse time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum OpCode {
    Continuation = 0x0,
    Text = 0x1,
    Binary = 0x2,
    Close = 0x8,
    Ping = 0x9,
    Pong = 0xA,
}

impl OpCode {
    pub fn from_u8(value: u8) -> Option<OpCode> {
        Some(match value {
            0x0 => OpCode::Continuation,
            0x1 => OpCode::Text,
            0x2 => OpCode::Binary,
            0x8 => OpCode::Close,
            0x9 => OpCode::Ping,
            0xA => OpCode::Pong,
            _ => return None,
        })
    }

    pub fn is_control(self) -> bool {
        (self as u8) & 0x8 != 0
    }
}

/// A parsed frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    pub fin: bool,
    /// The three reserved bits, as the low bits of this byte.
    pub rsv: u8,
    pub opcode: OpCode,
    pub mask: Option<[u8; 4]>,
    pub payload_len: u64,
    /// Bytes the header itself occupies (2 to 14).
    pub header_len: usize,
}

/// Parses a header from the start of `buf`; `Ok(None)` when `buf` holds less than a header.
pub fn parse_header(buf: &[u8]) -> Result<Option<FrameHeader>, ProtocolError> {
    let [b0, b1, ..] = *buf else { return Ok(None) };
    let opcode = OpCode::from_u8(b0 & 0x0F).ok_or(ProtocolError::ReservedOpcode(b0 & 0x0F))?;
    let masked = b1 & 0x80 != 0;
    let (payload_len, mut at) = match b1 & 0x7F {
        126 => {
            let Some(bytes) = buf.get(2..4) else { return Ok(None) };
            (u64::from(u16::from_be_bytes([bytes[0], bytes[1]])), 4)
        }
        127 => {
            let Some(bytes) = buf.get(2..10) else { return Ok(None) };
            let len = u64::from_be_bytes(bytes.try_into().expect("8 bytes"));
            if len >> 63 != 0 {
                return Err(ProtocolError::InvalidLength);
            }
            (len, 10)
        }
        len => (u64::from(len), 2),
    };
    let mask = if masked {
        let Some(key) = buf.get(at..at + 4) else { return Ok(None) };
        at += 4;
        Some(key.try_into().expect("4 bytes"))
    } else {
        None
    };
    Ok(Some(FrameHeader {
        fin: b0 & 0x80 != 0,
        rsv: (b0 >> 4) & 0x7,
        opcode,
        mask,
        payload_len,
        header_len: at,
    }))
}

/// Encodes a header into `out` with the shortest length encoding; returns its length.
pub fn encode_header(
    out: &mut [u8; MAX_HEADER_LEN],
    fin: bool,
    opcode: OpCode,
    mask: Option<[u8; 4]>,
    payload_len: u64,
) -> usize {
    out[0] = (u8::from(fin) << 7) | opcode as u8;
    let mask_bit = if mask.is_some() { 0x80 } else { 0 };
    let mut at = if payload_len < 126 {
        out[1] = mask_bit | payload_len as u8;
        2
    } else if payload_len <= u64::from(u16::MAX) {
        out[1] = mask_bit | 126;
        out[2..4].copy_from_slice(&(payload_len as u16).to_be_bytes());
        4
    } else {
        out[1] = mask_bit | 127;
        out[2..10].copy_from_slice(&payload_len.to_be_bytes());
        10
    };
    if let Some(key) = mask {
        out[at..at + 4].copy_from_slice(&key);
        at += 4;
    }
    at
}

/// Appends one whole frame to `out`, masking the payload copy when `mask` is given.
pub fn write_frame(out: &mut Vec<u8>, fin: bool, opcode: OpCode, mask: Option<[u8; 4]>, payload: &[u8]) {
    let mut header = [0u8; MAX_HEADER_LEN];
    let header_len = encode_header(&mut header, fin, opcode, mask, payload.len() as u64);
    out.reserve(header_len + payload.len());
    out.extend_from_slice(&header[..header_len]);
    let start = out.len();
    out.extend_from_slice(payload);
    if let Some(key) = mask {
        apply_mask(&mut out[start..], key, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_length_encoding_round_trips() {
        for len in [0u64, 1, 125, 126, 127, 65535, 65536, 1 << 32, (1 << 63) - 1] {
            for mask in [None, Some([1, 2, 3, 4])] {
                let mut out = [0u8; MAX_HEADER_LEN];
                let n = encode_header(&mut out, true, OpCode::Binary, mask, len);
                let header = parse_header(&out[..n]).unwrap().unwrap();
                assert_eq!(header.payload_len, len);
                assert_eq!(header.mask, mask);
                assert_eq!(header.header_len, n);
                for short in 0..n {
                    assert_eq!(parse_header(&out[..short]), Ok(None), "len {len} cut at {short}");
                }
            }
        }
    }

    #[test]
    fn shortest_length_encoding_is_used() {
        let mut out = [0u8; MAX_HEADER_LEN];
        assert_eq!(encode_header(&mut out, true, OpCode::Text, None, 125), 2);
        assert_eq!(encode_header(&mut out, true, OpCode::Text, None, 126), 4);
        assert_eq!(encode_header(&mut out, true, OpCode::Text, None, 65536), 10);
    }

    #[test]
    fn reserved_opcodes_are_rejected() {
        for op in [3u8, 4, 5, 6, 7, 0xB, 0xC, 0xD, 0xE, 0xF] {
            assert_eq!(parse_header(&[0x80 | op, 0]), Err(ProtocolError::ReservedOpcode(op)));
        }
    }

    #[test]
    fn length_with_top_bit_set_is_rejected() {
        let buf = [0x82, 127, 0x80, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(parse_header(&buf), Err(ProtocolError::InvalidLength));
    }

    #[test]
    fn write_frame_masks_the_payload() {
        let mut out = Vec::new();
        write_frame(&mut out, true, OpCode::Text, Some([0x37, 0xfa, 0x21, 0x3d]), b"Hello");
        // The masked "Hello" example of RFC 6455 §5.7.
        assert_eq!(out, [0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58]);
    }
}
