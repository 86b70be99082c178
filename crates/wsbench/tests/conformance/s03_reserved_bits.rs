//! Autobahn section 3 (reserved bits): with no extension negotiated, any frame with RSV1-3
//! set must fail the connection with 1002, while frames before it are still answered and
//! frames after it are not.

use crate::connect;
use crate::raw_client::Client;
use crate::raw_frame::OutFrame;

fn echo_bad_ping() -> Vec<OutFrame> {
    vec![
        OutFrame::text("Hello, world!"),
        OutFrame::text("Hello, world!").rsv(2),
        OutFrame::ping("Hello, world!"),
    ]
}

/// The first text is echoed, then close 1002, and the ping after the bad frame gets no pong.
fn expect_echo_then_fail(c: &mut Client) {
    c.expect_text(b"Hello, world!");
    c.expect_fail(1002);
}

#[test]
fn case_3_1_text_with_rsv1_is_protocol_error() {
    let mut c = connect();
    c.send(&OutFrame::text("Hello, world!").rsv(1));
    c.expect_fail(1002);
}

#[test]
fn case_3_2_text_then_text_with_rsv2_then_ping_echoes_first_then_fails() {
    let mut c = connect();
    c.send_all(&echo_bad_ping());
    expect_echo_then_fail(&mut c);
}

#[test]
fn case_3_3_rsv3_text_frame_wise_echoes_first_then_fails() {
    let mut c = connect();
    let mut frames = echo_bad_ping();
    frames[1] = frames[1].clone().rsv(3);
    c.send_framewise(&frames);
    expect_echo_then_fail(&mut c);
}

#[test]
fn case_3_4_rsv4_text_octet_wise_echoes_first_then_fails() {
    let mut c = connect();
    let mut frames = echo_bad_ping();
    frames[1] = frames[1].clone().rsv(4);
    c.send_octetwise(&frames);
    expect_echo_then_fail(&mut c);
}

#[test]
fn case_3_5_binary_with_rsv5_is_protocol_error() {
    let mut c = connect();
    c.send(&OutFrame::binary(vec![0x00, 0xFF, 0xFE, 0xFD, 0xFC, 0xFB, 0x00, 0xFF]).rsv(5));
    c.expect_fail(1002);
}

#[test]
fn case_3_6_ping_with_rsv6_is_protocol_error_without_pong() {
    let mut c = connect();
    c.send(&OutFrame::ping("Hello, world!").rsv(6));
    c.expect_fail(1002);
}

#[test]
fn case_3_7_close_with_rsv7_is_protocol_error() {
    let mut c = connect();
    c.send(&OutFrame::close(Some(1000), b"").rsv(7));
    c.expect_fail(1002);
}
