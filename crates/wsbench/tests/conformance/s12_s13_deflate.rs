//! Autobahn sections 12 and 13 (permessage-deflate, RFC 7692) for `wsbench serve`, plus the
//! extension's failure rules.
//!
//! Section 12: with the default offer, compressed text and binary messages of 16 B to
//! 128 KiB, sent as one frame or fragmented, each echoed compressed (RSV1 on its first frame)
//! and inflating to exactly what was sent. Section 13: each parameter combination —
//! context takeover on and off for either side, `server_max_window_bits` and
//! `client_max_window_bits` 9..15, several offers — answered as RFC 7692 §7.1 says and then
//! used. `server_max_window_bits=8` is declined (zlib cannot compress a raw stream with a
//! 256-byte window), as zlib-based servers do. The deflate here is flate2 driven directly, not
//! `wsbench-proto`, so the server is judged by an independent implementation.

use std::time::Instant;

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress};

use crate::raw_client::{Client, Message};
use crate::raw_frame::{OP_BINARY, OP_CONT, OP_TEXT, OutFrame};
use crate::server;

const TAIL: [u8; 4] = [0, 0, 0xff, 0xff];
/// Autobahn 12.x message sizes.
const SIZES: [usize; 10] = [16, 64, 256, 1024, 4096, 8192, 16384, 32768, 65536, 131072];

/// One side's deflate stream as RFC 7692 §7.2 uses it.
struct Side {
    compress: Compress,
    decompress: Decompress,
    /// Our compressor resets after each message (client_no_context_takeover).
    reset_compress: bool,
    /// The server's compressor resets after each message (server_no_context_takeover), so
    /// each echo must inflate with a fresh decompressor.
    reset_decompress: bool,
}

impl Side {
    fn new(client_bits: u8, server_bits: u8, reset_compress: bool, reset_decompress: bool) -> Side {
        Side {
            compress: Compress::new_with_window_bits(Compression::default(), false, client_bits),
            decompress: Decompress::new_with_window_bits(false, server_bits),
            reset_compress,
            reset_decompress,
        }
    }

    fn deflate(&mut self, message: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(message.len() + 64);
        let before = self.compress.total_in() as usize;
        loop {
            let used = self.compress.total_in() as usize - before;
            self.compress.compress_vec(&message[used..], &mut out, FlushCompress::Sync).unwrap();
            if self.compress.total_in() as usize - before == message.len() && out.len() < out.capacity() {
                break;
            }
            out.reserve(out.capacity().max(1024));
        }
        if out.is_empty() {
            // zlib emits nothing for an empty message after a flush: one empty stored block
            // header stands for it (RFC 7692 §7.2.3.6).
            out.push(0x00);
        } else {
            assert!(out.ends_with(&TAIL));
            out.truncate(out.len() - 4);
        }
        if self.reset_compress {
            self.compress.reset();
        }
        out
    }

    fn inflate(&mut self, payload: &[u8]) -> Vec<u8> {
        let input = [payload, &TAIL].concat();
        let mut out = Vec::with_capacity(input.len() * 4 + 1024);
        let before_in = self.decompress.total_in() as usize;
        loop {
            let used = self.decompress.total_in() as usize - before_in;
            self.decompress
                .decompress_vec(&input[used..], &mut out, FlushDecompress::Sync)
                .unwrap_or_else(|e| panic!("the server's compressed echo does not inflate: {e}"));
            if self.decompress.total_in() as usize - before_in == input.len() && out.len() < out.capacity() {
                break;
            }
            out.reserve(out.capacity());
        }
        if self.reset_decompress {
            self.decompress.reset(false);
        }
        out
    }
}

/// A message of `size` bytes that compresses somewhat (text: JSON-like; binary: a pattern
/// with noise), different for each `seed`.
fn message(size: usize, text: bool, seed: usize) -> Vec<u8> {
    let mut state = (seed as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..size)
        .map(|i| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            if text {
                b"{\"sym\":\"ACME\",\"px\":101.25,\"qty\":42}"[(i + (state % 3) as usize) % 35]
            } else if i % 4 == 0 {
                state as u8
            } else {
                (i % 251) as u8
            }
        })
        .collect()
}

/// Sends `message` compressed, split into frames of at most `fragment` compressed bytes
/// (RSV1 on the first frame only), and checks the echo.
fn round_trip(c: &mut Client, side: &mut Side, message: &[u8], text: bool, fragment: usize) {
    let compressed = side.deflate(message);
    let opcode = if text { OP_TEXT } else { OP_BINARY };
    let pieces: Vec<&[u8]> =
        if compressed.is_empty() { vec![&[]] } else { compressed.chunks(fragment).collect() };
    let frames: Vec<OutFrame> = pieces
        .iter()
        .enumerate()
        .map(|(i, piece)| {
            let frame = OutFrame::new(if i == 0 { opcode } else { OP_CONT }, piece.to_vec());
            let frame = if i == 0 { frame.rsv(4) } else { frame };
            frame.fin(i + 1 == pieces.len())
        })
        .collect();
    c.send_all(&frames);
    let deadline = Instant::now() + crate::raw_client::DEFAULT_TIMEOUT;
    let first = c.next_frame(deadline).unwrap_or_else(|end| panic!("no echo: {end:?}"));
    assert_eq!(first.opcode, opcode, "echo opcode");
    assert_eq!(first.rsv, 4, "the echo of a compressed message is compressed (RSV1)");
    let mut payload = first.payload;
    let mut fin = first.fin;
    while !fin {
        let next = c.next_frame(deadline).unwrap_or_else(|end| panic!("echo cut short: {end:?}"));
        assert_eq!((next.opcode, next.rsv), (OP_CONT, 0), "RSV1 only on the first frame");
        payload.extend_from_slice(&next.payload);
        fin = next.fin;
    }
    let echoed = side.inflate(&payload);
    assert!(echoed == message, "echo of {} bytes differs (got {} bytes)", message.len(), echoed.len());
}

fn connect(offer: &str) -> (Client, Option<String>) {
    Client::connect_offering(server(), Some(offer))
}

#[test]
fn case_12_messages_of_16_bytes_to_128_kib_whole_and_fragmented_round_trip_compressed() {
    for text in [true, false] {
        for fragment in [usize::MAX, 256, 4096] {
            let (mut c, answer) = connect("permessage-deflate");
            assert_eq!(answer.as_deref(), Some("permessage-deflate"));
            let mut side = Side::new(15, 15, false, false);
            for (seed, size) in SIZES.iter().enumerate() {
                // Twice each: the second refers back to the first through the shared context.
                round_trip(&mut c, &mut side, &message(*size, text, seed), text, fragment);
                round_trip(&mut c, &mut side, &message(*size, text, seed), text, fragment);
            }
            round_trip(&mut c, &mut side, b"", text, fragment);
            c.close_normally();
        }
    }
}

/// Section 13: the offer, the answer `wsbench serve` must give, and how both sides compress.
struct Combination {
    offer: String,
    answer: String,
    client_bits: u8,
    server_bits: u8,
    client_resets: bool,
    server_resets: bool,
}

fn combinations() -> Vec<Combination> {
    let plain = |offer: &str, answer: &str, client_resets, server_resets| Combination {
        offer: offer.to_owned(),
        answer: answer.to_owned(),
        client_bits: 15,
        server_bits: 15,
        client_resets,
        server_resets,
    };
    let mut all = vec![
        plain("permessage-deflate", "permessage-deflate", false, false),
        plain(
            "permessage-deflate; client_no_context_takeover",
            "permessage-deflate; client_no_context_takeover",
            true,
            false,
        ),
        plain(
            "permessage-deflate; server_no_context_takeover",
            "permessage-deflate; server_no_context_takeover",
            false,
            true,
        ),
        plain(
            "permessage-deflate; server_no_context_takeover; client_no_context_takeover",
            "permessage-deflate; server_no_context_takeover; client_no_context_takeover",
            true,
            true,
        ),
        // 13.7: several offers; the first asks for a window zlib cannot make and is declined.
        plain(
            "permessage-deflate; server_max_window_bits=8, permessage-deflate",
            "permessage-deflate",
            false,
            false,
        ),
    ];
    for bits in 9..=15u8 {
        all.push(Combination {
            offer: format!("permessage-deflate; server_max_window_bits={bits}"),
            answer: if bits == 15 {
                "permessage-deflate".to_owned()
            } else {
                format!("permessage-deflate; server_max_window_bits={bits}")
            },
            client_bits: 15,
            server_bits: bits,
            client_resets: false,
            server_resets: false,
        });
        all.push(Combination {
            offer: format!("permessage-deflate; client_no_context_takeover; client_max_window_bits={bits}"),
            answer: match bits {
                15 => "permessage-deflate; client_no_context_takeover".to_owned(),
                _ => format!("permessage-deflate; client_no_context_takeover; client_max_window_bits={bits}"),
            },
            client_bits: bits,
            server_bits: 15,
            client_resets: true,
            server_resets: false,
        });
    }
    all
}

#[test]
fn case_13_each_parameter_combination_is_answered_and_honoured() {
    for combination in combinations() {
        let (mut c, answer) = connect(&combination.offer);
        assert_eq!(answer.as_deref(), Some(combination.answer.as_str()), "offer {}", combination.offer);
        let mut side = Side::new(
            combination.client_bits,
            combination.server_bits,
            combination.client_resets,
            combination.server_resets,
        );
        for (seed, size) in [16, 1024, 65536, 1024].into_iter().enumerate() {
            round_trip(&mut c, &mut side, &message(size, seed % 2 == 0, seed), seed % 2 == 0, 4096);
        }
        c.close_normally();
    }
}

#[test]
fn extra_deflate_offers_the_server_cannot_honour_are_declined() {
    for offer in [
        "permessage-deflate; server_max_window_bits=8",
        "permessage-deflate; server_max_window_bits=16",
        "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
        "permessage-deflate; unknown_parameter",
        "x-webkit-deflate-frame",
    ] {
        let (mut c, answer) = connect(offer);
        assert_eq!(answer, None, "offer {offer}");
        // Without the extension RSV1 stays a protocol error (Autobahn 3.1).
        c.send(&OutFrame::text("Hello").rsv(4));
        c.expect_fail(1002);
    }
}

#[test]
fn extra_deflate_rsv1_on_a_continuation_or_control_frame_fails_with_1002() {
    let mut side = Side::new(15, 15, false, false);
    let compressed = side.deflate(b"Hello, world! Hello, world!");
    let (mut c, _) = connect("permessage-deflate");
    c.send_all(&[
        OutFrame::text(compressed[..4].to_vec()).rsv(4).fin(false),
        OutFrame::cont(compressed[4..].to_vec()).rsv(4),
    ]);
    c.expect_fail(1002);
    let (mut c, _) = connect("permessage-deflate");
    c.send(&OutFrame::ping("x").rsv(4));
    c.expect_fail(1002);
}

#[test]
fn extra_deflate_corrupt_data_fails_with_1002_and_invalid_utf8_with_1007() {
    let (mut c, _) = connect("permessage-deflate");
    c.send(&OutFrame::binary(vec![0xff; 16]).rsv(4));
    c.expect_fail(1002);
    let mut side = Side::new(15, 15, false, false);
    let (mut c, _) = connect("permessage-deflate");
    c.send(&OutFrame::text(side.deflate(b"caf\xc3 not utf-8")).rsv(4));
    c.expect_fail(1007);
}

#[test]
fn extra_deflate_a_compression_bomb_beyond_max_message_fails_with_1009() {
    let mut side = Side::new(15, 15, false, false);
    let bomb = side.deflate(&vec![0u8; 4 << 20]);
    assert!(bomb.len() < 10_000, "the bomb is small on the wire");
    let addr = crate::support::shared_server(&["--max-message", "1048576"]);
    let (mut c, _) = Client::connect_offering(addr, Some("permessage-deflate"));
    c.send(&OutFrame::binary(bomb).rsv(4));
    c.expect_fail(1009);
}

#[test]
fn extra_deflate_uncompressed_messages_are_still_echoed_uncompressed() {
    let (mut c, _) = connect("permessage-deflate");
    c.send_text(b"plain");
    c.expect_message(Message::Text(b"plain".to_vec()));
    c.close_normally();
}
