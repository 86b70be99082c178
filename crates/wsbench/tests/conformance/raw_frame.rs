//! Frame building blocks for the conformance suite's raw client, written from RFC 6455 alone
//! (no `wsbench-proto`), so the suite is an independent oracle for the codec under test.
//!
//! [`OutFrame`] can express anything a misbehaving client might send: any FIN/RSV/opcode
//! combination, masked or not, and an explicit 7/16/64-bit length encoding (even a lying one).
//! Also here: the opening-handshake helpers (SHA-1 and base64, inline) and a small PRNG for
//! masking keys and `Sec-WebSocket-Key` values.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

pub const OP_CONT: u8 = 0x0;
pub const OP_TEXT: u8 = 0x1;
pub const OP_BINARY: u8 = 0x2;
pub const OP_CLOSE: u8 = 0x8;
pub const OP_PING: u8 = 0x9;
pub const OP_PONG: u8 = 0xA;

/// How the payload length is written on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LenEncoding {
    /// The shortest form, as RFC 6455 §5.2 requires of senders.
    Minimal,
    /// The length in the 7-bit field (only valid for lengths up to 125).
    Bits7,
    /// Length marker 126 followed by a 16-bit length.
    Bits16,
    /// Length marker 127 followed by a 64-bit length.
    Bits64,
}

/// A frame as the client puts it on the wire.
#[derive(Clone, Debug)]
pub struct OutFrame {
    pub fin: bool,
    /// The three reserved bits, RSV1 = 4, RSV2 = 2, RSV3 = 1.
    pub rsv: u8,
    pub opcode: u8,
    pub masked: bool,
    pub len_encoding: LenEncoding,
    /// Length to announce instead of the real payload length (to send a lying header).
    pub declared_len: Option<u64>,
    pub payload: Vec<u8>,
}

impl OutFrame {
    /// A final, masked frame with the minimal length encoding.
    pub fn new(opcode: u8, payload: impl Into<Vec<u8>>) -> OutFrame {
        OutFrame {
            fin: true,
            rsv: 0,
            opcode,
            masked: true,
            len_encoding: LenEncoding::Minimal,
            declared_len: None,
            payload: payload.into(),
        }
    }

    pub fn text(payload: impl Into<Vec<u8>>) -> OutFrame {
        OutFrame::new(OP_TEXT, payload)
    }

    pub fn binary(payload: impl Into<Vec<u8>>) -> OutFrame {
        OutFrame::new(OP_BINARY, payload)
    }

    pub fn cont(payload: impl Into<Vec<u8>>) -> OutFrame {
        OutFrame::new(OP_CONT, payload)
    }

    pub fn ping(payload: impl Into<Vec<u8>>) -> OutFrame {
        OutFrame::new(OP_PING, payload)
    }

    pub fn pong(payload: impl Into<Vec<u8>>) -> OutFrame {
        OutFrame::new(OP_PONG, payload)
    }

    /// A close frame carrying `code` (if any) followed by `reason`.
    pub fn close(code: Option<u16>, reason: &[u8]) -> OutFrame {
        let mut payload = Vec::new();
        if let Some(code) = code {
            payload.extend_from_slice(&code.to_be_bytes());
        }
        payload.extend_from_slice(reason);
        OutFrame::new(OP_CLOSE, payload)
    }

    pub fn fin(mut self, fin: bool) -> OutFrame {
        self.fin = fin;
        self
    }

    pub fn rsv(mut self, rsv: u8) -> OutFrame {
        assert!(rsv < 8, "rsv is a 3-bit field");
        self.rsv = rsv;
        self
    }

    /// Sends the frame without a mask (forbidden for clients, RFC 6455 §5.1).
    pub fn unmasked(mut self) -> OutFrame {
        self.masked = false;
        self
    }

    pub fn len_encoding(mut self, enc: LenEncoding) -> OutFrame {
        self.len_encoding = enc;
        self
    }

    pub fn declared_len(mut self, len: u64) -> OutFrame {
        self.declared_len = Some(len);
        self
    }

    /// Length of the encoded header (everything before the payload).
    pub fn header_len(&self) -> usize {
        self.encode_header(0).len()
    }

    fn encode_header(&self, mask: u32) -> Vec<u8> {
        let len = self.declared_len.unwrap_or(self.payload.len() as u64);
        let mut out = Vec::with_capacity(14);
        out.push(((self.fin as u8) << 7) | (self.rsv << 4) | (self.opcode & 0x0F));
        let mask_bit = if self.masked { 0x80 } else { 0 };
        let enc = match self.len_encoding {
            LenEncoding::Minimal if len <= 125 => LenEncoding::Bits7,
            LenEncoding::Minimal if len <= 0xFFFF => LenEncoding::Bits16,
            LenEncoding::Minimal => LenEncoding::Bits64,
            other => other,
        };
        match enc {
            LenEncoding::Bits7 => {
                assert!(len <= 125, "length {len} does not fit the 7-bit field");
                out.push(mask_bit | len as u8);
            }
            LenEncoding::Bits16 => {
                let len = u16::try_from(len).expect("length fits 16 bits");
                out.push(mask_bit | 126);
                out.extend_from_slice(&len.to_be_bytes());
            }
            LenEncoding::Bits64 | LenEncoding::Minimal => {
                out.push(mask_bit | 127);
                out.extend_from_slice(&len.to_be_bytes());
            }
        }
        if self.masked {
            out.extend_from_slice(&mask.to_be_bytes());
        }
        out
    }

    /// The frame's wire bytes, masked with a fresh random non-zero key when `masked`.
    pub fn encode(&self) -> Vec<u8> {
        let mask = random_mask();
        let mut out = self.encode_header(mask);
        let start = out.len();
        out.extend_from_slice(&self.payload);
        if self.masked {
            apply_mask(&mut out[start..], mask.to_be_bytes());
        }
        out
    }
}

/// Encodes every frame back to back into one buffer.
pub fn encode_all(frames: &[OutFrame]) -> Vec<u8> {
    frames.iter().flat_map(OutFrame::encode).collect()
}

/// XORs `data` with the 4-byte `key` (RFC 6455 §5.3), a word at a time so that 16 MiB payloads
/// stay cheap in an unoptimised test build.
pub fn apply_mask(data: &mut [u8], key: [u8; 4]) {
    let word = u64::from_ne_bytes([key[0], key[1], key[2], key[3], key[0], key[1], key[2], key[3]]);
    let mut chunks = data.chunks_exact_mut(8);
    for chunk in &mut chunks {
        let v = u64::from_ne_bytes(chunk.try_into().unwrap()) ^ word;
        chunk.copy_from_slice(&v.to_ne_bytes());
    }
    for (i, b) in chunks.into_remainder().iter_mut().enumerate() {
        *b ^= key[i % 4];
    }
}

/// A frame as received from the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InFrame {
    pub fin: bool,
    pub rsv: u8,
    pub opcode: u8,
    pub masked: bool,
    /// Unmasked payload.
    pub payload: Vec<u8>,
}

/// Parses one frame from the start of `buf`: `Some((frame, bytes_used))`, or `None` when more
/// bytes are needed. Panics on a 64-bit length with the most significant bit set.
pub fn parse_frame(buf: &[u8]) -> Option<(InFrame, usize)> {
    if buf.len() < 2 {
        return None;
    }
    let fin = buf[0] & 0x80 != 0;
    let rsv = (buf[0] >> 4) & 0x07;
    let opcode = buf[0] & 0x0F;
    let masked = buf[1] & 0x80 != 0;
    let (len, mut pos) = match buf[1] & 0x7F {
        126 => {
            if buf.len() < 4 {
                return None;
            }
            (u16::from_be_bytes([buf[2], buf[3]]) as u64, 4)
        }
        127 => {
            if buf.len() < 10 {
                return None;
            }
            let len = u64::from_be_bytes(buf[2..10].try_into().unwrap());
            assert!(len >> 63 == 0, "server sent a 64-bit length with the MSB set");
            (len, 10)
        }
        n => (n as u64, 2),
    };
    let mut key = [0u8; 4];
    if masked {
        if buf.len() < pos + 4 {
            return None;
        }
        key.copy_from_slice(&buf[pos..pos + 4]);
        pos += 4;
    }
    let len = usize::try_from(len).expect("frame length fits usize");
    if buf.len() - pos < len {
        return None;
    }
    let mut payload = buf[pos..pos + len].to_vec();
    if masked {
        apply_mask(&mut payload, key);
    }
    let frame = InFrame { fin, rsv, opcode, masked, payload };
    Some((frame, pos + len))
}

static RNG_STATE: AtomicU64 = AtomicU64::new(0);

/// A xorshift64* step over a process-wide state seeded from the clock; not cryptographic,
/// just unpredictable enough that a server which ignores the mask cannot pass by luck.
pub fn random_u64() -> u64 {
    let mut cur = RNG_STATE.load(Ordering::Relaxed);
    loop {
        let mut x = if cur == 0 {
            let nanos = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0x9E37_79B9_7F4A_7C15);
            nanos | 1
        } else {
            cur
        };
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        match RNG_STATE.compare_exchange_weak(cur, x, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return x.wrapping_mul(0x2545_F491_4F6C_DD1D),
            Err(actual) => cur = actual,
        }
    }
}

/// A masking key whose four bytes are all non-zero, so every payload byte really changes.
pub fn random_mask() -> u32 {
    loop {
        let m = random_u64() as u32;
        if m.to_be_bytes().iter().all(|&b| b != 0) {
            return m;
        }
    }
}

/// The `Sec-WebSocket-Accept` value for `key` (RFC 6455 §4.2.2).
pub fn accept_key(key: &str) -> String {
    let mut input = key.as_bytes().to_vec();
    input.extend_from_slice(b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11");
    base64(&sha1(&input))
}

/// Standard base64 with padding.
pub fn base64(data: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 0x3F) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// SHA-1 (FIPS 180-4), only ever used on handshake keys.
pub fn sha1(data: &[u8]) -> [u8; 20] {
    let mut h: [u32; 5] = [0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0];
    let mut msg = data.to_vec();
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&((data.len() as u64) * 8).to_be_bytes());
    for block in msg.chunks_exact(64) {
        let mut w = [0u32; 80];
        for (i, word) in block.chunks_exact(4).enumerate() {
            w[i] = u32::from_be_bytes(word.try_into().unwrap());
        }
        for i in 16..80 {
            w[i] = (w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]).rotate_left(1);
        }
        let [mut a, mut b, mut c, mut d, mut e] = h;
        for (i, wi) in w.iter().enumerate() {
            let (f, k) = match i {
                0..=19 => ((b & c) | (!b & d), 0x5A82_7999),
                20..=39 => (b ^ c ^ d, 0x6ED9_EBA1),
                40..=59 => ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC),
                _ => (b ^ c ^ d, 0xCA62_C1D6),
            };
            let t = a.rotate_left(5).wrapping_add(f).wrapping_add(e).wrapping_add(k).wrapping_add(*wi);
            e = d;
            d = c;
            c = b.rotate_left(30);
            b = a;
            a = t;
        }
        for (hv, v) in h.iter_mut().zip([a, b, c, d, e]) {
            *hv = hv.wrapping_add(v);
        }
    }
    let mut out = [0u8; 20];
    for (i, v) in h.iter().enumerate() {
        out[i * 4..i * 4 + 4].copy_from_slice(&v.to_be_bytes());
    }
    out
}

/// Renders at most 48 bytes of `data` for panic messages (16 MiB payloads stay readable).
pub fn preview(data: &[u8]) -> String {
    let shown = &data[..data.len().min(48)];
    let more = if data.len() > shown.len() { "…" } else { "" };
    match std::str::from_utf8(shown) {
        Ok(s) if !s.chars().any(char::is_control) => format!("{s:?}{more} ({} bytes)", data.len()),
        _ => {
            let hex: String = shown.iter().map(|b| format!("{b:02x}")).collect();
            format!("0x{hex}{more} ({} bytes)", data.len())
        }
    }
}

#[test]
fn raw_client_sha1_and_accept_key_match_rfc_examples() {
    let hex: String = sha1(b"abc").iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, "a9993e364706816aba3e25717850c26c9cd0d89d");
    assert_eq!(accept_key("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    assert_eq!(base64(b"f"), "Zg==");
    assert_eq!(base64(b"fo"), "Zm8=");
    assert_eq!(base64(b"foo"), "Zm9v");
}

#[test]
fn raw_client_frames_round_trip_through_parser() {
    for len in [0usize, 1, 125, 126, 127, 65535, 65536] {
        let payload: Vec<u8> = (0..len).map(|i| i as u8).collect();
        let bytes = OutFrame::binary(payload.clone()).fin(false).rsv(5).encode();
        let (frame, used) = parse_frame(&bytes).expect("complete frame");
        assert_eq!(used, bytes.len());
        assert!(!frame.fin && frame.masked && frame.rsv == 5 && frame.opcode == OP_BINARY);
        assert_eq!(frame.payload, payload);
    }
    let f = OutFrame::text("abc").len_encoding(LenEncoding::Bits64).unmasked();
    assert_eq!(f.encode(), [0x81, 127, 0, 0, 0, 0, 0, 0, 0, 3, b'a', b'b', b'c']);
}
