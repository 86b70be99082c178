//! Autobahn section 5 (fragmentation): fragmented text messages are reassembled and echoed,
//! pings interleaved between fragments are answered at once, and the fragmentation errors
//! (fragmented control frames, continuation with nothing to continue, a new data frame while
//! a message is in progress) fail the connection with 1002.
//!
//! Autobahn sends each case "all in one chop", "frame-wise" (a write per frame) or
//! "octet-wise" (a write per byte); [`Mode`] selects which.

use crate::connect;
use crate::raw_client::Client;
use crate::raw_frame::{OP_PING, OP_PONG, OutFrame};

#[derive(Clone, Copy)]
enum Mode {
    OneChop,
    FrameWise,
    OctetWise,
}

fn send(c: &mut Client, frames: &[OutFrame], mode: Mode) {
    match mode {
        Mode::OneChop => c.send_all(frames),
        Mode::FrameWise => c.send_framewise(frames),
        Mode::OctetWise => c.send_octetwise(frames),
    }
}

/// A control frame fragmented into two frames fails the connection.
fn fragmented_control(opcode: u8) {
    let mut c = connect();
    c.send_all(&[OutFrame::new(opcode, "fragment1").fin(false), OutFrame::cont("fragment2")]);
    c.expect_fail(1002);
}

#[test]
fn case_5_1_ping_fragmented_into_2_frames_is_protocol_error() {
    fragmented_control(OP_PING);
}

#[test]
fn case_5_2_pong_fragmented_into_2_frames_is_protocol_error() {
    fragmented_control(OP_PONG);
}

fn two_fragments(mode: Mode) {
    let mut c = connect();
    let frames = [OutFrame::text("fragment1").fin(false), OutFrame::cont("fragment2")];
    send(&mut c, &frames, mode);
    c.expect_text(b"fragment1fragment2");
    c.close_normally();
}

#[test]
fn case_5_3_text_in_2_fragments_is_echoed() {
    two_fragments(Mode::OneChop);
}

#[test]
fn case_5_4_text_in_2_fragments_frame_wise_is_echoed() {
    two_fragments(Mode::FrameWise);
}

#[test]
fn case_5_5_text_in_2_fragments_octet_wise_is_echoed() {
    two_fragments(Mode::OctetWise);
}

fn ping_between_fragments(mode: Mode) {
    let mut c = connect();
    let frames =
        [OutFrame::text("fragment1").fin(false), OutFrame::ping("ping payload"), OutFrame::cont("fragment2")];
    send(&mut c, &frames, mode);
    c.expect_pong(b"ping payload");
    c.expect_text(b"fragment1fragment2");
    c.close_normally();
}

#[test]
fn case_5_6_text_in_2_fragments_with_ping_between_pongs_then_echoes() {
    ping_between_fragments(Mode::OneChop);
}

#[test]
fn case_5_7_ping_between_fragments_frame_wise_pongs_then_echoes() {
    ping_between_fragments(Mode::FrameWise);
}

#[test]
fn case_5_8_ping_between_fragments_octet_wise_pongs_then_echoes() {
    ping_between_fragments(Mode::OctetWise);
}

/// A continuation frame with no message in progress (FIN `fin`), then a valid text message:
/// the connection fails and the text is never echoed.
fn continuation_without_message(fin: bool, mode: Mode) {
    let mut c = connect();
    let frames = [OutFrame::cont("non-continuation payload").fin(fin), OutFrame::text("Hello, world!")];
    send(&mut c, &frames, mode);
    c.expect_fail(1002);
}

#[test]
fn case_5_9_continuation_fin_without_message_is_protocol_error() {
    continuation_without_message(true, Mode::OneChop);
}

#[test]
fn case_5_10_continuation_fin_without_message_frame_wise_is_protocol_error() {
    continuation_without_message(true, Mode::FrameWise);
}

#[test]
fn case_5_11_continuation_fin_without_message_octet_wise_is_protocol_error() {
    continuation_without_message(true, Mode::OctetWise);
}

#[test]
fn case_5_12_continuation_nonfin_without_message_is_protocol_error() {
    continuation_without_message(false, Mode::OneChop);
}

#[test]
fn case_5_13_continuation_nonfin_without_message_frame_wise_is_protocol_error() {
    continuation_without_message(false, Mode::FrameWise);
}

#[test]
fn case_5_14_continuation_nonfin_without_message_octet_wise_is_protocol_error() {
    continuation_without_message(false, Mode::OctetWise);
}

#[test]
fn case_5_15_message_then_stray_continuation_echoes_first_then_fails() {
    let mut c = connect();
    c.send_all(&[
        OutFrame::text("fragment1").fin(false),
        OutFrame::cont("fragment2"),
        OutFrame::cont("fragment3").fin(false),
        OutFrame::text("fragment4"),
    ]);
    c.expect_text(b"fragment1fragment2");
    c.expect_fail(1002);
}

/// Autobahn 5.16/5.17: two repetitions of (continuation, text start, continuation end) where
/// the first continuation has nothing to continue.
fn repeated_stray_continuation(first_fin: bool) {
    let mut c = connect();
    let round = [
        OutFrame::cont("fragment1").fin(first_fin),
        OutFrame::text("fragment2").fin(false),
        OutFrame::cont("fragment3"),
    ];
    let frames: Vec<OutFrame> = round.iter().chain(round.iter()).cloned().collect();
    c.send_all(&frames);
    c.expect_fail(1002);
}

#[test]
fn case_5_16_repeated_nonfin_continuation_then_fragmented_text_fails() {
    repeated_stray_continuation(false);
}

#[test]
fn case_5_17_repeated_fin_continuation_then_fragmented_text_fails() {
    repeated_stray_continuation(true);
}

#[test]
fn case_5_18_text_start_then_new_text_instead_of_continuation_fails() {
    let mut c = connect();
    c.send_all(&[OutFrame::text("fragment1").fin(false), OutFrame::text("fragment2")]);
    c.expect_fail(1002);
}

/// Autobahn 5.19/5.20: five fragments with two pings in between; the first pong must arrive
/// before the rest of the message is sent (here: the client waits for it), then the second
/// pong, then the echo.
fn five_fragments_two_pings(mode: Mode) {
    let mut c = connect();
    send(
        &mut c,
        &[
            OutFrame::text("fragment1").fin(false),
            OutFrame::cont("fragment2").fin(false),
            OutFrame::ping("pongme 1!"),
        ],
        mode,
    );
    c.expect_pong(b"pongme 1!");
    send(
        &mut c,
        &[
            OutFrame::cont("fragment3").fin(false),
            OutFrame::cont("fragment4").fin(false),
            OutFrame::ping("pongme 2!"),
            OutFrame::cont("fragment5"),
        ],
        mode,
    );
    c.expect_pong(b"pongme 2!");
    c.expect_text(b"fragment1fragment2fragment3fragment4fragment5");
    c.close_normally();
}

#[test]
fn case_5_19_five_fragments_with_two_pings_pong_before_message_completes() {
    five_fragments_two_pings(Mode::OneChop);
}

#[test]
fn case_5_20_five_fragments_with_two_pings_frame_wise_pong_before_message_completes() {
    five_fragments_two_pings(Mode::FrameWise);
}
