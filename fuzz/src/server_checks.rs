//! The check behind the `server_conn` fuzz target: arbitrary byte streams, cut into pieces,
//! fed to the echo server's per-connection state machine (through
//! `wsbench_server::fuzzing::feed_connection`), and its output checked. Kept apart from
//! `checks.rs`, which may use only `wsbench_proto` (the proto crate's corpus test includes it),
//! and included by path by `crates/server/tests/fuzz_corpus.rs` so `cargo test` runs the
//! committed `fuzz/corpus/server_conn/` seeds on stable. It may use only `wsbench_server`,
//! `wsbench_proto` and std.
//!
//! Invariants: the state machine never panics; what it writes is a sequence of well-formed
//! HTTP responses, optionally followed (after a 101) by well-formed unmasked server frames;
//! an error response (4xx) or a close frame is the last thing written, and a frame is cut
//! short only where the input ended inside a large binary message echoed as it arrived. A
//! stream that opens with the HTTP/2 preface (h2c with prior knowledge, for RFC 8441's
//! WebSockets as streams) is answered with whole HTTP/2 frames, the server's SETTINGS first.

use wsbench_proto::{Decoder, OpCode, Role};
use wsbench_server::fuzzing::{MIN_STREAMED_REST, feed_connection};

/// Splits `data` into pieces: the first byte picks the piece sizes (1..=256 bytes, cycling
/// through a small pattern derived from it), the rest is the byte stream.
pub fn pieces(data: &[u8]) -> Vec<&[u8]> {
    let Some((&mode, mut rest)) = data.split_first() else { return Vec::new() };
    let mut pieces = Vec::new();
    let mut step = 0usize;
    while !rest.is_empty() {
        let size = match mode % 4 {
            0 => rest.len(),
            1 => 1,
            2 => 1 + (mode as usize >> 2),
            _ => 1 + ((mode as usize).wrapping_mul(step + 7) % 97),
        };
        let (piece, tail) = rest.split_at(size.min(rest.len()));
        pieces.push(piece);
        rest = tail;
        step += 1;
    }
    pieces
}

/// What an HTTP/2 client sends first (RFC 9113 §3.4).
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// An HTTP/2 frame's header: length (3 bytes), type, flags, stream id (4 bytes).
const H2_FRAME_HEADER: usize = 9;
/// The SETTINGS frame's type.
const H2_SETTINGS: u8 = 0x4;

/// Fuzz entry point: feeds the pieces of `data` to a server connection and checks the output.
pub fn server_conn(data: &[u8]) {
    let pieces = pieces(data);
    let out = feed_connection(&pieces);
    if pieces.concat().starts_with(H2_PREFACE) {
        check_h2_output(&out);
    } else {
        check_output(&out);
    }
}

/// Panics unless `out` is whole HTTP/2 frames, the first of them the server's SETTINGS on
/// stream 0.
pub fn check_h2_output(out: &[u8]) {
    let mut at = 0;
    while at < out.len() {
        let header = out
            .get(at..at + H2_FRAME_HEADER)
            .unwrap_or_else(|| panic!("HTTP/2 frame header cut short at byte {at}"));
        let length = u32::from_be_bytes([0, header[0], header[1], header[2]]) as usize;
        let stream = u32::from_be_bytes([header[5], header[6], header[7], header[8]]) & 0x7fff_ffff;
        if at == 0 {
            assert!(
                header[3] == H2_SETTINGS && stream == 0,
                "the server's first frame is not SETTINGS: {header:?}"
            );
        }
        at += H2_FRAME_HEADER + length;
        assert!(at <= out.len(), "HTTP/2 frame payload cut short: {header:?}");
    }
}

/// Panics unless `out` is HTTP responses, optionally then frames, and nothing after an end.
pub fn check_output(out: &[u8]) {
    let mut rest = out;
    loop {
        if rest.is_empty() {
            return;
        }
        let end = find(rest, b"\r\n\r\n").unwrap_or_else(|| panic!("unterminated HTTP response: {rest:?}"));
        let head = std::str::from_utf8(&rest[..end]).expect("HTTP response head is ASCII");
        let status: u16 = head
            .strip_prefix("HTTP/1.1 ")
            .and_then(|s| s.get(..3))
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad status line in {head:?}"));
        let content_length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("Content-Length: "))
            .map(|v| v.parse().expect("Content-Length is a number"))
            .unwrap_or(0);
        let body_end = end + 4 + content_length;
        assert!(body_end <= rest.len(), "response body cut short: {head:?}");
        rest = &rest[body_end..];
        match status {
            101 => return check_frames(rest),
            200 => {}
            400..=499 => {
                assert!(rest.is_empty(), "{} bytes written after a {status} response", rest.len());
                return;
            }
            _ => panic!("unexpected status {status}"),
        }
    }
}

/// Panics unless `wire` is whole, unmasked server frames, ending at the first close frame.
/// The one frame that may be cut short (necessarily the last: the decoder takes every byte
/// after its header as its payload) is where the input ended inside a binary message that the
/// server echoes as it arrives: one unfragmented frame announced at least
/// [`MIN_STREAMED_REST`] longer than its first piece.
fn check_frames(wire: &[u8]) {
    let mut buf = wire.to_vec();
    let mut decoder = Decoder::new(Role::Client, u64::MAX >> 1);
    let mut at = 0;
    while at < buf.len() {
        let chunk = decoder
            .decode(&mut buf[at..])
            .unwrap_or_else(|e| panic!("server wrote an invalid frame at byte {at}: {e}"))
            .unwrap_or_else(|| panic!("server wrote an incomplete frame at byte {at}"));
        at += chunk.consumed;
        if !(chunk.first && chunk.last) {
            let (rest, final_frame) = decoder.frame_remaining().expect("a frame cut short is in progress");
            let announced = chunk.payload.len() as u64 + rest;
            assert!(
                chunk.first && final_frame && chunk.opcode == OpCode::Binary,
                "server frames are whole and unfragmented; only a binary echo may be cut short"
            );
            assert!(
                announced >= MIN_STREAMED_REST,
                "an echo of {announced} bytes was cut short, but only frames of {MIN_STREAMED_REST} bytes or more are echoed before they are whole"
            );
        }
        if chunk.opcode == OpCode::Close {
            assert_eq!(at, buf.len(), "{} bytes written after a close frame", buf.len() - at);
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}
