//! Autobahn section 6.1–6.4 (UTF-8 handling of text messages): empty and fragmented valid
//! messages echo, fragment and chop boundaries inside a code point are fine, invalid UTF-8
//! fails with 1007 — and fails *fast* (6.4.x): the close must come as soon as the offending
//! byte arrives, before the client sends the rest. The per-sequence cases 6.5–6.23 are in
//! `s06_utf8_sequences.rs`. Extra checks split a valid message at every byte.

use std::time::Duration;

use crate::connect;
use crate::raw_client::{Client, OCTET_GAP};
use crate::raw_frame::OutFrame;

const HELLO: &str = "Hello-\u{b5}@\u{df}\u{f6}\u{e4}\u{fc}\u{e0}\u{e1}-UTF-8!!";
/// "κόσμε" (Greek "cosmos"), the classic UTF-8 sample.
const KOSME: &[u8] = b"\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5";
/// 6.3.x / 6.4.x: KOSME, then an invalid sequence, then "edited".
const EDITED: &[u8] = b"\x65\x64\x69\x74\x65\x64";
/// How long a server must stay silent after a valid-so-far prefix (Autobahn: 1 s).
const SILENCE: Duration = Duration::from_millis(500);
/// Deadline for the fail-fast close after the offending byte.
const FAIL_FAST: Duration = Duration::from_secs(1);

/// Sends `payload` as a text message in fragments of `frag` bytes (0: one frame), expects
/// the echo, closes normally.
fn echo_fragmented(payload: &[u8], frag: usize) {
    let mut c = connect();
    c.send_all(&fragments(payload, frag));
    c.expect_text(payload);
    c.close_normally();
}

fn fragments(payload: &[u8], frag: usize) -> Vec<OutFrame> {
    if frag == 0 || payload.is_empty() {
        return vec![OutFrame::text(payload)];
    }
    let pieces: Vec<&[u8]> = payload.chunks(frag).collect();
    let last = pieces.len() - 1;
    pieces
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let f = if i == 0 { OutFrame::text(*p) } else { OutFrame::cont(*p) };
            f.fin(i == last)
        })
        .collect()
}

#[test]
fn case_6_1_1_empty_text_message_is_echoed() {
    echo_fragmented(b"", 0);
}

#[test]
fn case_6_1_2_text_in_3_empty_fragments_is_echoed_empty() {
    let mut c = connect();
    c.send_all(&[OutFrame::text("").fin(false), OutFrame::cont("").fin(false), OutFrame::cont("")]);
    c.expect_text(b"");
    c.close_normally();
}

#[test]
fn case_6_1_3_empty_first_and_last_fragment_nonempty_middle_is_echoed() {
    let mut c = connect();
    c.send_all(&[
        OutFrame::text("").fin(false),
        OutFrame::cont("middle frame payload").fin(false),
        OutFrame::cont(""),
    ]);
    c.expect_text(b"middle frame payload");
    c.close_normally();
}

#[test]
fn case_6_2_1_valid_utf8_in_one_frame_is_echoed() {
    echo_fragmented(HELLO.as_bytes(), 0);
}

#[test]
fn case_6_2_2_valid_utf8_in_2_fragments_split_on_code_point_is_echoed() {
    let (a, b) = HELLO.split_at(HELLO.find('\u{fc}').unwrap());
    let mut c = connect();
    c.send_all(&[OutFrame::text(a).fin(false), OutFrame::cont(b)]);
    c.expect_text(HELLO.as_bytes());
    c.close_normally();
}

#[test]
fn case_6_2_3_valid_utf8_in_1_byte_fragments_is_echoed() {
    echo_fragmented(HELLO.as_bytes(), 1);
}

#[test]
fn case_6_2_4_valid_kosme_in_1_byte_fragments_is_echoed() {
    echo_fragmented(KOSME, 1);
}

fn kosme_surrogate_edited() -> Vec<u8> {
    [KOSME, b"\xed\xa0\x80", EDITED].concat()
}

#[test]
fn case_6_3_1_invalid_utf8_surrogate_in_one_frame_fails_1007() {
    let mut c = connect();
    c.send_text(&kosme_surrogate_edited());
    c.expect_fail(1007);
}

#[test]
fn case_6_3_2_invalid_utf8_surrogate_in_1_byte_fragments_fails_1007() {
    let mut c = connect();
    c.send_all(&fragments(&kosme_surrogate_edited(), 1));
    c.expect_fail(1007);
}

/// The 6.4.x message: KOSME, then U+110000 in the UTF-8 integer scheme (invalid from its 2nd
/// byte 0x90, at offset 12), then "edited".
fn kosme_out_of_range_edited() -> Vec<u8> {
    [KOSME, b"\xf4\x90\x80\x80", EDITED].concat()
}

/// Sends `part1`, expects silence, sends `part2`, expects close 1007 within [`FAIL_FAST`],
/// and only then sends `part3` (which the server must not need to see).
fn fail_fast(c: &mut Client, part1: &[u8], part2: &[u8], part3: &[u8]) {
    c.send_raw(part1);
    c.expect_nothing_for(SILENCE);
    c.send_raw(part2);
    c.expect_close_within(1007, FAIL_FAST);
    c.send_raw(part3);
    c.send_close(Some(1007), b"");
    c.expect_closed_tcp();
}

/// 6.4.1/6.4.2: three frames, split at `a` and `b`.
fn fail_fast_frames(a: usize, b: usize) {
    let msg = kosme_out_of_range_edited();
    let mut c = connect();
    let f1 = OutFrame::text(&msg[..a]).fin(false).encode();
    let f2 = OutFrame::cont(&msg[a..b]).fin(false).encode();
    let f3 = OutFrame::cont(&msg[b..]).encode();
    fail_fast(&mut c, &f1, &f2, &f3);
}

/// 6.4.3/6.4.4: one frame whose bytes are written in three chops, split at `a` and `b` of
/// the payload.
fn fail_fast_chops(a: usize, b: usize) {
    let msg = kosme_out_of_range_edited();
    let frame = OutFrame::text(msg);
    let h = frame.header_len();
    let bytes = frame.encode();
    let mut c = connect();
    fail_fast(&mut c, &bytes[..h + a], &bytes[h + a..h + b], &bytes[h + b..]);
}

#[test]
fn case_6_4_1_invalid_utf8_fails_fast_in_three_fragments() {
    fail_fast_frames(11, 15);
}

#[test]
fn case_6_4_2_invalid_utf8_fails_fast_on_the_offending_byte_fragment() {
    fail_fast_frames(12, 13);
}

#[test]
fn case_6_4_3_invalid_utf8_fails_fast_in_three_chops() {
    fail_fast_chops(11, 15);
}

#[test]
fn case_6_4_4_invalid_utf8_fails_fast_on_the_offending_byte_chop() {
    fail_fast_chops(12, 13);
}

#[test]
fn extra_6_4_surrogate_fails_fast_mid_frame_before_message_completes() {
    let msg = kosme_surrogate_edited();
    let frame = OutFrame::text(msg);
    let h = frame.header_len();
    let bytes = frame.encode();
    let mut c = connect();
    // KOSME + 0xED is valid so far; 0xA0 after 0xED makes it a surrogate.
    fail_fast(&mut c, &bytes[..h + 12], &bytes[h + 12..h + 13], &bytes[h + 13..]);
}

#[test]
fn extra_6_4_lone_continuation_byte_fails_fast_mid_frame() {
    let msg = [b"edited".as_slice(), b"\x80", KOSME].concat();
    let frame = OutFrame::text(msg);
    let h = frame.header_len();
    let bytes = frame.encode();
    let mut c = connect();
    fail_fast(&mut c, &bytes[..h + 6], &bytes[h + 6..h + 7], &bytes[h + 7..]);
}

#[test]
fn extra_6_4_incomplete_code_point_at_chop_boundary_is_not_an_error() {
    let frame = OutFrame::text(KOSME);
    let h = frame.header_len();
    let bytes = frame.encode();
    let mut c = connect();
    // Stop after 0xE1 0xBD: the first two bytes of a three-byte code point.
    c.send_raw(&bytes[..h + 4]);
    c.expect_nothing_for(SILENCE);
    c.send_raw(&bytes[h + 4..]);
    c.expect_text(KOSME);
    c.close_normally();
}

#[test]
fn extra_6_4_incomplete_code_point_at_fragment_boundary_is_not_an_error() {
    let msg = "a\u{10348}b".as_bytes(); // a four-byte code point, split after its 2nd byte
    let mut c = connect();
    c.send(&OutFrame::text(&msg[..3]).fin(false));
    c.expect_nothing_for(SILENCE);
    c.send(&OutFrame::cont(&msg[3..]));
    c.expect_text(msg);
    c.close_normally();
}

#[test]
fn extra_6_2_valid_utf8_split_into_2_fragments_at_every_byte_is_echoed() {
    for msg in [HELLO.as_bytes(), KOSME, "a\u{10348}\u{10ffff}z".as_bytes()] {
        for split in 0..=msg.len() {
            let mut c = connect();
            c.send_all(&[OutFrame::text(&msg[..split]).fin(false), OutFrame::cont(&msg[split..])]);
            c.expect_text(msg);
            c.close_normally();
        }
    }
}

#[test]
fn extra_6_2_valid_utf8_frame_written_one_byte_at_a_time_is_echoed() {
    let msg = [HELLO.as_bytes(), KOSME, "\u{10348}\u{10ffff}".as_bytes()].concat();
    let mut c = connect();
    c.send_chopped(&OutFrame::text(msg.clone()).encode(), 1, OCTET_GAP);
    c.expect_text(&msg);
    c.close_normally();
}

#[test]
fn extra_6_3_incomplete_code_point_at_end_of_message_fails_1007() {
    let mut c = connect();
    c.send_all(&[OutFrame::text(&KOSME[..5]).fin(false), OutFrame::cont(&KOSME[5..6])]);
    c.expect_fail(1007);
}
