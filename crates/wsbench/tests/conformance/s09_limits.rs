//! Autobahn section 9 (limits and performance): text and binary messages up to 16 MiB in one
//! frame (9.1/9.2), 4 MiB messages in fragments from 64 B to 4 MiB (9.3/9.4), 1 MiB messages
//! written in chops of 64 B to 2 KiB (9.5/9.6), and 1000 sequential round trips of small
//! messages (9.7/9.8). Extra checks exercise `--max-message` (1009 when exceeded).
//!
//! Large sends run on a second thread so that no case can deadlock on full socket buffers,
//! and reads here get a 60 s deadline. Payloads are patterned, not constant, so a server
//! that mangles masking or reassembly cannot echo the right bytes by accident.

use std::time::Duration;

use crate::raw_client::Client;
use crate::raw_frame::{OP_BINARY, OP_TEXT, OutFrame, encode_all};
use crate::{server, support};

const KIB: usize = 1024;
const MIB: usize = 1024 * 1024;
const LONG: Duration = Duration::from_secs(60);

/// A `len`-byte payload: cycled "BAsd7&jh23" for text, a byte pattern for binary.
fn payload(opcode: u8, len: usize) -> Vec<u8> {
    let unit: Vec<u8> =
        if opcode == OP_TEXT { b"BAsd7&jh23".to_vec() } else { (0..=255u8).rev().chain(0..=255u8).collect() };
    let mut out = unit.repeat(len / unit.len() + 1);
    out.truncate(len);
    out
}

fn expect_echo(c: &mut Client, opcode: u8, payload: &[u8]) {
    if opcode == OP_TEXT {
        c.expect_text(payload);
    } else {
        c.expect_binary(payload);
    }
}

/// Sends `frames` (written in `chop`-byte pieces) from a background thread, expects one
/// message echoing `payload`, then closes normally.
fn big_echo(opcode: u8, payload: &[u8], frames: &[OutFrame], chop: usize) {
    let mut c = Client::connect(server()).with_timeout(LONG);
    let writer = c.send_in_background(encode_all(frames), chop);
    expect_echo(&mut c, opcode, payload);
    writer.join().expect("background writer");
    c.close_normally();
}

/// 9.1/9.2: one frame of `len` bytes.
fn single_frame(opcode: u8, len: usize) {
    let p = payload(opcode, len);
    big_echo(opcode, &p, &[OutFrame::new(opcode, p.clone())], 256 * KIB);
}

/// 9.3/9.4: a 4 MiB message in fragments of `frag` bytes.
fn fragmented(opcode: u8, frag: usize) {
    let p = payload(opcode, 4 * MIB);
    let n = p.len() / frag;
    let frames: Vec<OutFrame> = p
        .chunks(frag)
        .enumerate()
        .map(|(i, piece)| {
            let op = if i == 0 { opcode } else { 0 };
            OutFrame::new(op, piece).fin(i + 1 == n)
        })
        .collect();
    big_echo(opcode, &p, &frames, 256 * KIB);
}

/// 9.5/9.6: a 1 MiB message in one frame, written in chops of `chop` bytes.
fn chopped(opcode: u8, chop: usize) {
    let p = payload(opcode, MIB);
    big_echo(opcode, &p, &[OutFrame::new(opcode, p.clone())], chop);
}

/// 9.7/9.8: 1000 messages of `len` bytes, each sent after the previous echo arrived.
fn round_trips(opcode: u8, len: usize) {
    let p = payload(opcode, len);
    let frame = OutFrame::new(opcode, p.clone());
    let mut c = Client::connect(server()).with_timeout(LONG);
    for _ in 0..1000 {
        c.send(&frame);
        expect_echo(&mut c, opcode, &p);
    }
    c.close_normally();
}

macro_rules! limit_cases {
    ($($name:ident => $run:ident($op:expr, $arg:expr);)*) => {
        $(
            #[test]
            fn $name() {
                $run($op, $arg);
            }
        )*
    };
}

limit_cases! {
    case_9_1_1_text_64k_in_one_frame_is_echoed => single_frame(OP_TEXT, 64 * KIB);
    case_9_1_2_text_256k_in_one_frame_is_echoed => single_frame(OP_TEXT, 256 * KIB);
    case_9_1_3_text_1m_in_one_frame_is_echoed => single_frame(OP_TEXT, MIB);
    case_9_1_4_text_4m_in_one_frame_is_echoed => single_frame(OP_TEXT, 4 * MIB);
    case_9_1_5_text_8m_in_one_frame_is_echoed => single_frame(OP_TEXT, 8 * MIB);
    case_9_1_6_text_16m_in_one_frame_is_echoed => single_frame(OP_TEXT, 16 * MIB);
    case_9_2_1_binary_64k_in_one_frame_is_echoed => single_frame(OP_BINARY, 64 * KIB);
    case_9_2_2_binary_256k_in_one_frame_is_echoed => single_frame(OP_BINARY, 256 * KIB);
    case_9_2_3_binary_1m_in_one_frame_is_echoed => single_frame(OP_BINARY, MIB);
    case_9_2_4_binary_4m_in_one_frame_is_echoed => single_frame(OP_BINARY, 4 * MIB);
    case_9_2_5_binary_8m_in_one_frame_is_echoed => single_frame(OP_BINARY, 8 * MIB);
    case_9_2_6_binary_16m_in_one_frame_is_echoed => single_frame(OP_BINARY, 16 * MIB);
    case_9_3_1_text_4m_in_64_byte_fragments_is_echoed => fragmented(OP_TEXT, 64);
    case_9_3_2_text_4m_in_256_byte_fragments_is_echoed => fragmented(OP_TEXT, 256);
    case_9_3_3_text_4m_in_1k_fragments_is_echoed => fragmented(OP_TEXT, KIB);
    case_9_3_4_text_4m_in_4k_fragments_is_echoed => fragmented(OP_TEXT, 4 * KIB);
    case_9_3_5_text_4m_in_16k_fragments_is_echoed => fragmented(OP_TEXT, 16 * KIB);
    case_9_3_6_text_4m_in_64k_fragments_is_echoed => fragmented(OP_TEXT, 64 * KIB);
    case_9_3_7_text_4m_in_256k_fragments_is_echoed => fragmented(OP_TEXT, 256 * KIB);
    case_9_3_8_text_4m_in_1m_fragments_is_echoed => fragmented(OP_TEXT, MIB);
    case_9_3_9_text_4m_in_one_4m_fragment_is_echoed => fragmented(OP_TEXT, 4 * MIB);
    case_9_4_1_binary_4m_in_64_byte_fragments_is_echoed => fragmented(OP_BINARY, 64);
    case_9_4_2_binary_4m_in_256_byte_fragments_is_echoed => fragmented(OP_BINARY, 256);
    case_9_4_3_binary_4m_in_1k_fragments_is_echoed => fragmented(OP_BINARY, KIB);
    case_9_4_4_binary_4m_in_4k_fragments_is_echoed => fragmented(OP_BINARY, 4 * KIB);
    case_9_4_5_binary_4m_in_16k_fragments_is_echoed => fragmented(OP_BINARY, 16 * KIB);
    case_9_4_6_binary_4m_in_64k_fragments_is_echoed => fragmented(OP_BINARY, 64 * KIB);
    case_9_4_7_binary_4m_in_256k_fragments_is_echoed => fragmented(OP_BINARY, 256 * KIB);
    case_9_4_8_binary_4m_in_1m_fragments_is_echoed => fragmented(OP_BINARY, MIB);
    case_9_4_9_binary_4m_in_one_4m_fragment_is_echoed => fragmented(OP_BINARY, 4 * MIB);
    case_9_5_1_text_1m_written_in_64_byte_chops_is_echoed => chopped(OP_TEXT, 64);
    case_9_5_2_text_1m_written_in_128_byte_chops_is_echoed => chopped(OP_TEXT, 128);
    case_9_5_3_text_1m_written_in_256_byte_chops_is_echoed => chopped(OP_TEXT, 256);
    case_9_5_4_text_1m_written_in_512_byte_chops_is_echoed => chopped(OP_TEXT, 512);
    case_9_5_5_text_1m_written_in_1k_chops_is_echoed => chopped(OP_TEXT, KIB);
    case_9_5_6_text_1m_written_in_2k_chops_is_echoed => chopped(OP_TEXT, 2 * KIB);
    case_9_6_1_binary_1m_written_in_64_byte_chops_is_echoed => chopped(OP_BINARY, 64);
    case_9_6_2_binary_1m_written_in_128_byte_chops_is_echoed => chopped(OP_BINARY, 128);
    case_9_6_3_binary_1m_written_in_256_byte_chops_is_echoed => chopped(OP_BINARY, 256);
    case_9_6_4_binary_1m_written_in_512_byte_chops_is_echoed => chopped(OP_BINARY, 512);
    case_9_6_5_binary_1m_written_in_1k_chops_is_echoed => chopped(OP_BINARY, KIB);
    case_9_6_6_binary_1m_written_in_2k_chops_is_echoed => chopped(OP_BINARY, 2 * KIB);
    case_9_7_1_1000_round_trips_of_empty_text => round_trips(OP_TEXT, 0);
    case_9_7_2_1000_round_trips_of_16_byte_text => round_trips(OP_TEXT, 16);
    case_9_7_3_1000_round_trips_of_64_byte_text => round_trips(OP_TEXT, 64);
    case_9_7_4_1000_round_trips_of_256_byte_text => round_trips(OP_TEXT, 256);
    case_9_7_5_1000_round_trips_of_1k_text => round_trips(OP_TEXT, KIB);
    case_9_7_6_1000_round_trips_of_4k_text => round_trips(OP_TEXT, 4 * KIB);
    case_9_8_1_1000_round_trips_of_empty_binary => round_trips(OP_BINARY, 0);
    case_9_8_2_1000_round_trips_of_16_byte_binary => round_trips(OP_BINARY, 16);
    case_9_8_3_1000_round_trips_of_64_byte_binary => round_trips(OP_BINARY, 64);
    case_9_8_4_1000_round_trips_of_256_byte_binary => round_trips(OP_BINARY, 256);
    case_9_8_5_1000_round_trips_of_1k_binary => round_trips(OP_BINARY, KIB);
    case_9_8_6_1000_round_trips_of_4k_binary => round_trips(OP_BINARY, 4 * KIB);
}

/// A server limited to 1 MiB messages.
fn small_server_client() -> Client {
    Client::connect(support::shared_server(&["--max-message", "1048576"])).with_timeout(LONG)
}

#[test]
fn extra_9_message_of_exactly_max_message_is_echoed() {
    let p = payload(OP_BINARY, MIB);
    let mut c = small_server_client();
    let writer = c.send_in_background(OutFrame::binary(p.clone()).encode(), 256 * KIB);
    c.expect_binary(&p);
    writer.join().expect("background writer");
    c.close_normally();
}

#[test]
fn extra_9_frame_one_byte_over_max_message_fails_1009() {
    let mut c = small_server_client();
    let writer = c.send_in_background(OutFrame::binary(payload(OP_BINARY, MIB + 1)).encode(), MIB);
    c.expect_fail(1009);
    writer.join().expect("background writer");
}

#[test]
fn extra_9_fragments_adding_up_over_max_message_fail_1009() {
    let half = payload(OP_TEXT, MIB / 2 + 1);
    let mut c = small_server_client();
    let frames = [OutFrame::text(half.clone()).fin(false), OutFrame::cont(half)];
    let writer = c.send_in_background(encode_all(&frames), MIB);
    c.expect_fail(1009);
    writer.join().expect("background writer");
}
