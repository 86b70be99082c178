//! The checks behind wsbench's fuzz targets, written once so the same functions run under
//! libFuzzer (`fuzz/fuzz_targets/*.rs`) and as ordinary tests over the committed corpora
//! (`crates/proto/tests/fuzz_corpus.rs` includes this file by path). It may therefore use
//! only `wsbench_proto` and std. Every function takes the raw fuzz input and panics when an
//! invariant of the codec does not hold.

use std::ops::Range;

use wsbench_proto::handshake::{
    DEFAULT_MAX_HEADER_BYTES, Request, parse_request, parse_response, server_response,
};
use wsbench_proto::{
    Chunk, DEFAULT_MAX_MESSAGE, Decoder, MAX_CONTROL_PAYLOAD, OpCode, ProtocolError, Role,
    parse_close_payload, parse_header, write_frame,
};

/// The key the `handshake_response` target checks answers against (RFC 6455 §1.3's example).
pub const RESPONSE_KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";

/// One delivered message: a whole control frame, or a data message reassembled from chunks.
pub type Event = (OpCode, Vec<u8>);

/// What a decoder made of a byte stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Control frames and complete data messages, in the order they were completed.
    pub events: Vec<Event>,
    /// The error that stopped decoding, if any.
    pub error: Option<ProtocolError>,
    /// Bytes left in the buffer, waiting for more (a partial header or control frame).
    pub leftover: usize,
    /// Payload delivered so far of a data message that has not ended.
    pub partial: Option<Event>,
}

/// Feeds `pieces` to a fresh decoder one after the other, the way a socket delivers bytes,
/// dropping `consumed` bytes after each chunk. Stops at the first error. Panics when a chunk
/// breaks the decoder's contract.
pub fn drive<'a>(role: Role, max_message: u64, pieces: impl IntoIterator<Item = &'a [u8]>) -> Outcome {
    let mut decoder = Decoder::new(role, max_message);
    let mut pending: Vec<u8> = Vec::new();
    let mut events = Vec::new();
    let mut partial: Option<Event> = None;
    // How much of the partial text message is known to be valid UTF-8.
    let mut text_checked = 0;
    for piece in pieces {
        pending.extend_from_slice(piece);
        // Chunks in a row that consumed nothing; one is allowed only if it ends a message.
        let mut stalled = 0;
        loop {
            let before = pending.len();
            let chunk = match decoder.decode(&mut pending) {
                Ok(Some(chunk)) => chunk,
                Ok(None) => break,
                Err(error) => {
                    let leftover = pending.len();
                    return Outcome { events, error: Some(error), leftover, partial };
                }
            };
            assert_eq!(pending.len(), before, "decode changed the buffer's length");
            check_chunk(&chunk, &pending, max_message);
            if chunk.consumed == 0 {
                assert!(chunk.last, "a chunk consumed nothing and ended nothing: {chunk:?}");
                stalled += 1;
                assert!(stalled < 2, "decoder made no progress twice in a row: {chunk:?}");
            } else {
                stalled = 0;
            }
            let payload = &pending[chunk.payload.clone()];
            if chunk.opcode.is_control() {
                events.push((chunk.opcode, payload.to_vec()));
                assert_eq!(
                    decoder.in_message(),
                    partial.is_some(),
                    "control frame changed the message state"
                );
            } else {
                match &mut partial {
                    None => {
                        assert!(chunk.first, "first chunk of a message not marked first: {chunk:?}");
                        partial = Some((chunk.opcode, payload.to_vec()));
                        text_checked = 0;
                    }
                    Some((opcode, bytes)) => {
                        assert!(!chunk.first, "chunk inside a message marked first: {chunk:?}");
                        assert_eq!(*opcode, chunk.opcode, "opcode changed inside a message");
                        bytes.extend_from_slice(payload);
                    }
                }
                let (opcode, bytes) = partial.as_ref().expect("set above");
                assert!(bytes.len() as u64 <= max_message, "message exceeds the limit");
                if *opcode == OpCode::Text {
                    text_checked += check_text_prefix(&bytes[text_checked..], chunk.last);
                }
                if chunk.last {
                    events.extend(partial.take());
                }
                assert_eq!(decoder.in_message(), !chunk.last, "in_message disagrees with `last`");
            }
            pending.drain(..chunk.consumed);
        }
    }
    Outcome { events, error: None, leftover: pending.len(), partial }
}

/// The contract every chunk must keep, whatever the input.
fn check_chunk(chunk: &Chunk, buf: &[u8], max_message: u64) {
    let Range { start, end } = chunk.payload;
    assert!(start <= end, "reversed payload range: {chunk:?}");
    assert!(end <= chunk.consumed, "payload beyond the consumed bytes: {chunk:?}");
    assert!(chunk.consumed <= buf.len(), "consumed more than the buffer holds: {chunk:?}");
    if chunk.opcode.is_control() {
        assert!(chunk.first && chunk.last, "control frame delivered in pieces: {chunk:?}");
        assert!((end - start) as u64 <= MAX_CONTROL_PAYLOAD, "control payload over 125: {chunk:?}");
        assert_eq!(end, chunk.consumed, "control frame has bytes after its payload: {chunk:?}");
        let header = parse_header(buf).expect("a delivered frame's header parses");
        let header = header.expect("a delivered frame's header is complete");
        assert_eq!(header.header_len, start, "control payload does not follow its header");
        if chunk.opcode == OpCode::Close {
            assert!(parse_close_payload(&buf[start..end]).is_ok(), "invalid close payload delivered");
        }
    } else {
        assert!(
            matches!(chunk.opcode, OpCode::Text | OpCode::Binary),
            "data chunk with opcode {:?}",
            chunk.opcode
        );
        assert!((end - start) as u64 <= max_message, "chunk larger than the message limit");
    }
}

/// Text delivered so far must be valid UTF-8 up to an incomplete last character, and a whole
/// message must be valid UTF-8 (the decoder fails fast on invalid text). `bytes` is the text
/// not yet known to be valid; returns how many of them now are.
fn check_text_prefix(bytes: &[u8], complete: bool) -> usize {
    match std::str::from_utf8(bytes) {
        Ok(_) => bytes.len(),
        Err(e) if e.error_len().is_none() && !complete => e.valid_up_to(),
        Err(e) => panic!("invalid UTF-8 delivered as text (complete: {complete}): {e}"),
    }
}

/// Splits `wire` into socket-like pieces according to `mode`: whole, byte by byte, fixed
/// steps of 1..=64 bytes, or pseudo-random sizes of 1..=32 bytes.
pub fn split_pieces(mode: u8, wire: &[u8]) -> Vec<&[u8]> {
    let param = usize::from((mode >> 2) & 0x1F);
    match mode & 3 {
        0 => vec![wire],
        1 => wire.chunks(1).collect(),
        2 => wire.chunks(param * 2 + 1).collect(),
        _ => {
            let mut state = (u32::from(mode) << 16) ^ (wire.len() as u32) ^ 0x9E37_79B9;
            let mut pieces = Vec::new();
            let mut rest = wire;
            while !rest.is_empty() {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                let size = (state as usize % 32 + 1).min(rest.len());
                let (piece, tail) = rest.split_at(size);
                pieces.push(piece);
                rest = tail;
            }
            pieces
        }
    }
}

/// Arbitrary bytes into a decoder of `role`. The first byte chooses how the rest is split
/// into pieces (see [`split_pieces`]) and, with its top bit, a 64-byte message limit instead
/// of 1 MiB. Decoding in pieces must give exactly what decoding the whole buffer gives.
pub fn frame_decode(role: Role, data: &[u8]) {
    let Some((&mode, wire)) = data.split_first() else { return };
    let max_message = if mode & 0x80 != 0 { 64 } else { 1 << 20 };
    let whole = drive(role, max_message, [wire]);
    assert!(whole.leftover <= wire.len());
    if mode & 3 != 0 {
        let split = drive(role, max_message, split_pieces(mode, wire));
        assert_eq!(split.events, whole.events, "pieces and whole buffer decode differently");
        assert_eq!(split.error, whole.error, "pieces and whole buffer fail differently");
        if whole.error.is_none() {
            assert_eq!(split.leftover, whole.leftover, "pieces and whole buffer leave different bytes");
            assert_eq!(
                split.partial, whole.partial,
                "pieces and whole buffer deliver different partial data"
            );
        }
    }
}

/// The `frame_decode_server` target: a server decodes masked client frames.
pub fn frame_decode_server(data: &[u8]) {
    frame_decode(Role::Server, data);
}

/// The `frame_decode_client` target: a client decodes unmasked server frames.
pub fn frame_decode_client(data: &[u8]) {
    frame_decode(Role::Client, data);
}

/// The `handshake_request` target: a server parses a client's opening handshake with the
/// 8 KiB limit; an accepted upgrade must be answered with a response the client accepts.
pub fn handshake_request(data: &[u8]) {
    let limit = DEFAULT_MAX_HEADER_BYTES;
    match parse_request(data, limit) {
        Ok(None) => assert!(data.len() < limit, "{} bytes still incomplete", data.len()),
        Err(error) => {
            let response = error.http_response();
            assert!(response.starts_with(b"HTTP/1.1 4"), "error response is not a 4xx");
        }
        Ok(Some((request, used))) => {
            assert!(used > 0 && used <= data.len() && used <= limit, "used {used} of {}", data.len());
            // The header ends where `used` says: no fewer bytes parse, and more change nothing.
            assert_eq!(parse_request(&data[..used - 1], limit), Ok(None), "header ends before `used`");
            let again = parse_request(&data[..used], limit).expect("the header alone parses");
            assert_eq!(again, Some((request.clone(), used)), "bytes after the header changed the result");
            if let Request::Upgrade(upgrade) = request {
                let protocol = upgrade.protocols.first().map(String::as_str);
                let response = server_response(&upgrade, protocol);
                let parsed = parse_response(&response, &upgrade.key);
                let Ok(Some((answer, n))) = parsed else {
                    panic!("client rejects the server's answer to {upgrade:?}: {parsed:?}");
                };
                assert_eq!(n, response.len(), "response header length");
                assert_eq!(answer.protocol.as_deref(), protocol, "the client sees another subprotocol");
            }
        }
    }
}

/// The `handshake_response` target: a client checks a server's answer to a request sent
/// with [`RESPONSE_KEY`]. An answer must not depend on how many bytes follow its header.
pub fn handshake_response(data: &[u8]) {
    http_response(data);
    let Ok(Some((answer, used))) = parse_response(data, RESPONSE_KEY) else { return };
    assert!(used > 0 && used <= data.len(), "used {used} of {}", data.len());
    assert!(
        used <= DEFAULT_MAX_HEADER_BYTES,
        "{used}-byte response accepted whole, though it fails when read in pieces"
    );
    assert_eq!(parse_response(&data[..used - 1], RESPONSE_KEY), Ok(None), "header ends before `used`");
    let again = parse_response(&data[..used], RESPONSE_KEY).expect("the header alone parses");
    assert_eq!(again, Some((answer, used)), "bytes after the header changed the result");
}

/// The input as a plain HTTP/1.1 response (a negotiate's answer before the upgrade): a whole
/// one takes no more than the input, and reads the same from its own bytes alone.
fn http_response(data: &[u8]) {
    let Ok(Some(response)) = wsbench_proto::http_response::read(data) else { return };
    assert!(response.used <= data.len(), "used {} of {}", response.used, data.len());
    assert!(response.body.len() <= wsbench_proto::http_response::MAX_BODY_BYTES);
    let again = wsbench_proto::http_response::read(&data[..response.used]);
    assert_eq!(again, Ok(Some(response)), "bytes after the response changed it");
}

/// Reads structured values from fuzz input; zeros once it runs out.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn byte(&mut self) -> u8 {
        let Some((&first, rest)) = self.0.split_first() else { return 0 };
        self.0 = rest;
        first
    }

    fn bytes(&mut self, n: usize) -> &'a [u8] {
        let (taken, rest) = self.0.split_at(n.min(self.0.len()));
        self.0 = rest;
        taken
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A payload length: mostly small, sometimes at or around each length-encoding boundary.
fn payload_len(r: &mut Reader<'_>) -> usize {
    match r.byte() {
        n @ 0..=199 => usize::from(n),
        200 => 125,
        201 => 126,
        202 => 127,
        203 => 65535,
        204 => 65536,
        205 => 70_000,
        n => usize::from(n) + usize::from(r.byte()) * 3,
    }
}

/// A payload of `len` bytes: taken from the input while it lasts, then a pattern from a
/// seed byte; for text, made valid UTF-8 and cut back to at most `len` bytes.
fn payload(r: &mut Reader<'_>, len: usize, text: bool) -> Vec<u8> {
    let mut bytes = r.bytes(len).to_vec();
    let seed = r.byte();
    let filler = (0..len - bytes.len()).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed));
    bytes.extend(filler);
    if text {
        let mut text = String::from_utf8_lossy(&bytes).into_owned();
        let mut cut = len.min(text.len());
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        bytes = text.into_bytes();
    }
    bytes
}

/// A close frame's payload: empty, or a valid code and a UTF-8 reason of ≤123 bytes.
fn close_payload(r: &mut Reader<'_>) -> Vec<u8> {
    const CODES: [u16; 8] = [1000, 1001, 1002, 1003, 1007, 1011, 3000, 4999];
    let choice = r.byte();
    if choice == 0 {
        return Vec::new();
    }
    let mut bytes = CODES[usize::from(choice) % CODES.len()].to_be_bytes().to_vec();
    let len = usize::from(r.byte()) % 124;
    bytes.extend(payload(r, len, true));
    bytes
}

/// Frames to put on the wire, and what the decoder must deliver for them.
#[derive(Default)]
struct Script {
    wire: Vec<u8>,
    /// (start, fin, opcode, payload length) of every frame, to check its header.
    frames: Vec<(usize, bool, OpCode, usize)>,
    expected: Vec<Event>,
}

impl Script {
    fn frame(&mut self, fin: bool, opcode: OpCode, mask: Option<[u8; 4]>, payload: &[u8]) {
        self.frames.push((self.wire.len(), fin, opcode, payload.len()));
        write_frame(&mut self.wire, fin, opcode, mask, payload);
    }

    fn control(&mut self, r: &mut Reader<'_>, mask: Option<[u8; 4]>) {
        let opcode = [OpCode::Ping, OpCode::Pong, OpCode::Close][usize::from(r.byte() % 3)];
        let payload = if opcode == OpCode::Close {
            close_payload(r)
        } else {
            let len = payload_len(r) % 126;
            payload(r, len, false)
        };
        self.frame(true, opcode, mask, &payload);
        self.expected.push((opcode, payload));
    }
}

/// The `roundtrip` target: builds frames from the input (data messages whole and fragmented,
/// with control frames between fragments), writes them with `write_frame`, and decodes them
/// back, whole and in pieces (at every split point for small inputs). Every message must come
/// back unchanged, and every header must parse back to what was encoded.
pub fn roundtrip(data: &[u8]) {
    let mut r = Reader(data);
    let flags = r.byte();
    let mask = (flags & 1 != 0).then(|| r.bytes(4)).map(|k| {
        let mut key = [0u8; 4];
        key[..k.len()].copy_from_slice(k);
        key
    });
    let role = if mask.is_some() { Role::Server } else { Role::Client };
    let mut script = Script::default();
    for _ in 0..8 {
        if r.is_empty() {
            break;
        }
        match r.byte() % 4 {
            0 => script.control(&mut r, mask),
            kind => {
                let opcode = if kind == 1 { OpCode::Text } else { OpCode::Binary };
                let len = payload_len(&mut r);
                let message = payload(&mut r, len, opcode == OpCode::Text);
                // Fragments: cut points derived from the input; a text message may be cut
                // inside a character, which the decoder must accept.
                let fragments = usize::from(r.byte() % 4);
                let mut cuts: Vec<usize> =
                    (0..fragments).map(|_| usize::from(r.byte()) * (message.len() + 1) / 256).collect();
                cuts.sort_unstable();
                let mut start = 0;
                for (i, &cut) in cuts.iter().chain([&message.len()]).enumerate() {
                    let fin = i == fragments;
                    let frame_opcode = if i == 0 { opcode } else { OpCode::Continuation };
                    script.frame(fin, frame_opcode, mask, &message[start..cut]);
                    start = cut;
                    if !fin && r.byte() & 1 == 1 {
                        script.control(&mut r, mask);
                    }
                }
                script.expected.push((opcode, message));
            }
        }
    }
    check_headers(&script, mask);
    let wire = &script.wire;
    let expected = Outcome { events: script.expected, error: None, leftover: 0, partial: None };
    assert_eq!(drive(role, DEFAULT_MAX_MESSAGE, [wire.as_slice()]), expected, "whole buffer");
    if wire.len() <= 300 {
        for split in 0..=wire.len() {
            let (a, b) = wire.split_at(split);
            assert_eq!(drive(role, DEFAULT_MAX_MESSAGE, [a, b]), expected, "split at {split}");
        }
    }
    if wire.len() <= 4096 {
        assert_eq!(drive(role, DEFAULT_MAX_MESSAGE, wire.chunks(1)), expected, "byte by byte");
    }
    let pieces = split_pieces(flags | 3, wire);
    assert_eq!(drive(role, DEFAULT_MAX_MESSAGE, pieces), expected, "random pieces");
    // Tiny steps over a 64 KiB payload would only slow the fuzzer down.
    let step = (1 + usize::from(flags >> 1) * 37).max(wire.len() / 1024);
    assert_eq!(drive(role, DEFAULT_MAX_MESSAGE, wire.chunks(step)), expected, "steps of {step}");
}

/// Every frame's header parses back to what `write_frame` was asked to encode, with the
/// shortest length encoding.
fn check_headers(script: &Script, mask: Option<[u8; 4]>) {
    for &(start, fin, opcode, len) in &script.frames {
        let header = parse_header(&script.wire[start..]).expect("encoded header parses");
        let header = header.expect("encoded header is complete");
        assert_eq!((header.fin, header.rsv, header.opcode), (fin, 0, opcode));
        assert_eq!((header.mask, header.payload_len), (mask, len as u64));
        let length_bytes = match len {
            0..=125 => 0,
            126..=65535 => 2,
            _ => 8,
        };
        assert_eq!(header.header_len, 2 + length_bytes + if mask.is_some() { 4 } else { 0 });
    }
}
