//! Autobahn section 1 (framing): text (1.1.x) and binary (1.2.x) messages whose lengths sit on
//! either side of the 7/16/64-bit length encodings, each echoed back unchanged. Also extra
//! checks the server contract adds: unmasked client frames and a 64-bit length with its most
//! significant bit set must fail the connection.

use std::time::Duration;

use crate::connect;
use crate::raw_frame::{LenEncoding, OP_BINARY, OP_TEXT, OutFrame};

/// Sends one `len`-byte message (in `chop`-sized writes if given), expects it echoed with the
/// same opcode, then closes normally.
fn echo(opcode: u8, len: usize, chop: Option<usize>) {
    let fill = if opcode == OP_TEXT { b'*' } else { 0xFE };
    let payload = vec![fill; len];
    let mut c = connect();
    let frame = OutFrame::new(opcode, payload.clone());
    match chop {
        None => c.send(&frame),
        Some(n) => c.send_chopped(&frame.encode(), n, Duration::ZERO),
    }
    if opcode == OP_TEXT {
        c.expect_text(&payload);
    } else {
        c.expect_binary(&payload);
    }
    c.close_normally();
}

#[test]
fn case_1_1_1_text_empty_payload() {
    echo(OP_TEXT, 0, None);
}

#[test]
fn case_1_1_2_text_payload_125_max_7_bit_length() {
    echo(OP_TEXT, 125, None);
}

#[test]
fn case_1_1_3_text_payload_126_min_16_bit_length() {
    echo(OP_TEXT, 126, None);
}

#[test]
fn case_1_1_4_text_payload_127() {
    echo(OP_TEXT, 127, None);
}

#[test]
fn case_1_1_5_text_payload_128() {
    echo(OP_TEXT, 128, None);
}

#[test]
fn case_1_1_6_text_payload_65535_max_16_bit_length() {
    echo(OP_TEXT, 65535, None);
}

#[test]
fn case_1_1_7_text_payload_65536_min_64_bit_length() {
    echo(OP_TEXT, 65536, None);
}

#[test]
fn case_1_1_8_text_payload_65536_sent_in_chops_of_997() {
    echo(OP_TEXT, 65536, Some(997));
}

#[test]
fn case_1_2_1_binary_empty_payload() {
    echo(OP_BINARY, 0, None);
}

#[test]
fn case_1_2_2_binary_payload_125_max_7_bit_length() {
    echo(OP_BINARY, 125, None);
}

#[test]
fn case_1_2_3_binary_payload_126_min_16_bit_length() {
    echo(OP_BINARY, 126, None);
}

#[test]
fn case_1_2_4_binary_payload_127() {
    echo(OP_BINARY, 127, None);
}

#[test]
fn case_1_2_5_binary_payload_128() {
    echo(OP_BINARY, 128, None);
}

#[test]
fn case_1_2_6_binary_payload_65535_max_16_bit_length() {
    echo(OP_BINARY, 65535, None);
}

#[test]
fn case_1_2_7_binary_payload_65536_min_64_bit_length() {
    echo(OP_BINARY, 65536, None);
}

#[test]
fn case_1_2_8_binary_payload_65536_sent_in_chops_of_997() {
    echo(OP_BINARY, 65536, Some(997));
}

#[test]
fn extra_1_unmasked_client_text_frame_is_protocol_error() {
    let mut c = connect();
    c.send(&OutFrame::text("Hello, world!").unmasked());
    c.expect_fail(1002);
}

#[test]
fn extra_1_unmasked_client_ping_is_protocol_error() {
    let mut c = connect();
    c.send(&OutFrame::ping("Hello, world!").unmasked());
    c.expect_fail(1002);
}

#[test]
fn extra_1_masked_then_unmasked_frame_echoes_first_then_protocol_error() {
    let mut c = connect();
    c.send_all(&[OutFrame::binary(vec![1, 2, 3]), OutFrame::binary(vec![4, 5, 6]).unmasked()]);
    c.expect_binary(&[1, 2, 3]);
    c.expect_fail(1002);
}

#[test]
fn extra_1_64_bit_length_with_msb_set_fails_connection() {
    let mut c = connect();
    let frame = OutFrame::binary(Vec::new()).len_encoding(LenEncoding::Bits64).declared_len(1 << 63);
    c.send(&frame);
    // RFC 6455 §5.2: the MSB MUST be 0. Protocol error, or "too big" is also a fair verdict.
    c.expect_fail_with_one_of(&[1002, 1009]);
}
