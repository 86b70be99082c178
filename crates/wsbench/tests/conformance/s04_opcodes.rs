//! Autobahn section 4 (opcodes): reserved non-control (3-7) and control (11-15) opcodes must
//! fail the connection with 1002; a message before the bad frame is still echoed and a ping
//! after it is not answered.

use crate::connect;
use crate::raw_frame::OutFrame;

/// A lone frame with reserved `opcode` fails the connection.
fn lone(opcode: u8, payload: &str) {
    let mut c = connect();
    c.send(&OutFrame::new(opcode, payload));
    c.expect_fail(1002);
}

/// Text, then the reserved-opcode frame, then a ping: echo, close 1002, no pong.
fn sandwiched(opcode: u8, payload: &str) {
    let mut c = connect();
    c.send_all(&[
        OutFrame::text("Hello, world!"),
        OutFrame::new(opcode, payload),
        OutFrame::ping("Hello, world!"),
    ]);
    c.expect_text(b"Hello, world!");
    c.expect_fail(1002);
}

#[test]
fn case_4_1_1_reserved_data_opcode_3_is_protocol_error() {
    lone(3, "");
}

#[test]
fn case_4_1_2_reserved_data_opcode_4_with_payload_is_protocol_error() {
    lone(4, "reserved opcode payload");
}

#[test]
fn case_4_1_3_text_then_reserved_opcode_5_then_ping_echoes_first_then_fails() {
    sandwiched(5, "");
}

#[test]
fn case_4_1_4_text_then_reserved_opcode_6_with_payload_then_ping_fails() {
    sandwiched(6, "reserved opcode payload");
}

#[test]
fn case_4_1_5_text_then_reserved_opcode_7_with_payload_then_ping_fails() {
    sandwiched(7, "reserved opcode payload");
}

#[test]
fn case_4_2_1_reserved_control_opcode_11_is_protocol_error() {
    lone(11, "");
}

#[test]
fn case_4_2_2_reserved_control_opcode_12_with_payload_is_protocol_error() {
    lone(12, "reserved opcode payload");
}

#[test]
fn case_4_2_3_text_then_reserved_opcode_13_then_ping_echoes_first_then_fails() {
    sandwiched(13, "");
}

#[test]
fn case_4_2_4_text_then_reserved_opcode_14_with_payload_then_ping_fails() {
    sandwiched(14, "reserved opcode payload");
}

#[test]
fn case_4_2_5_text_then_reserved_opcode_15_with_payload_then_ping_fails() {
    sandwiched(15, "reserved opcode payload");
}
