//! Autobahn section 7 (close handling): after the closing handshake nothing more is processed
//! (7.1.x); close payloads of 0 bytes, 1 byte, with reasons up to the 125-byte control limit
//! (7.3.x), a non-UTF-8 reason (7.5.1); the server echoes every valid close code (7.7.x) and
//! fails the connection with 1002 on invalid ones (7.9.x, 7.13.x). Extra checks cover the
//! codes the server contract adds (1012–1014 valid, 1015 invalid).

use crate::connect;
use crate::raw_client::Message;
use crate::raw_frame::OutFrame;

#[test]
fn case_7_1_1_text_echoed_then_normal_close() {
    let mut c = connect();
    c.send_text(b"Hello World");
    c.expect_text(b"Hello World");
    c.close_normally();
}

#[test]
fn case_7_1_2_second_close_after_close_is_ignored() {
    let mut c = connect();
    c.send_all(&[OutFrame::close(Some(1000), b""), OutFrame::close(Some(1000), b"")]);
    c.expect_close(Some(1000));
    c.expect_closed_tcp();
}

#[test]
fn case_7_1_3_ping_after_close_gets_no_pong() {
    let mut c = connect();
    c.send_all(&[OutFrame::close(Some(1000), b""), OutFrame::ping("Hello World")]);
    c.expect_close(Some(1000));
    c.expect_closed_tcp();
}

#[test]
fn case_7_1_4_text_after_close_is_not_echoed() {
    let mut c = connect();
    c.send_all(&[OutFrame::close(Some(1000), b""), OutFrame::text("Hello World")]);
    c.expect_close(Some(1000));
    c.expect_closed_tcp();
}

#[test]
fn case_7_1_5_close_between_fragments_ends_the_message_unechoed() {
    let mut c = connect();
    c.send_all(&[
        OutFrame::text("fragment1").fin(false),
        OutFrame::close(Some(1000), b""),
        OutFrame::cont("fragment2"),
    ]);
    c.expect_close(Some(1000));
    c.expect_closed_tcp();
}

#[test]
fn case_7_1_6_256k_text_then_text_then_close_then_ping() {
    // Informational in Autobahn: the echoes may or may not precede the close reply. What was
    // received must be in order and whole, the close must be 1000, and no pong may follow.
    let big: Vec<u8> = b"BAsd7&jh23".repeat(256 * 1024 / 10 + 1)[..256 * 1024].to_vec();
    let mut c = connect();
    c.send_all(&[
        OutFrame::text(big.clone()),
        OutFrame::text("Hello World!"),
        OutFrame::close(Some(1000), b""),
        OutFrame::ping(""),
    ]);
    let mut expected = vec![Message::Text(big), Message::Text(b"Hello World!".to_vec())];
    expected.reverse();
    loop {
        match c.next_message() {
            Ok(Message::Close(code, _)) => {
                assert_eq!(code, Some(1000));
                break;
            }
            Ok(m) => assert!(expected.pop() == Some(m), "unexpected or out-of-order message"),
            Err(end) => panic!("expected echoes then close 1000, got {end:?}"),
        }
    }
    c.expect_closed_tcp();
}

#[test]
fn case_7_3_1_empty_close_payload_gets_empty_close() {
    let mut c = connect();
    c.send_close(None, b"");
    c.expect_close(None);
    c.expect_closed_tcp();
}

#[test]
fn case_7_3_2_one_byte_close_payload_is_protocol_error() {
    let mut c = connect();
    c.send(&OutFrame::new(0x8, vec![0x2A]));
    c.expect_fail(1002);
}

#[test]
fn case_7_3_3_close_1000_without_reason_is_echoed() {
    let mut c = connect();
    c.send_close(Some(1000), b"");
    c.expect_close(Some(1000));
    c.expect_closed_tcp();
}

#[test]
fn case_7_3_4_close_1000_with_short_reason_is_echoed() {
    let mut c = connect();
    c.send_close(Some(1000), b"Hello World!");
    c.expect_close(Some(1000));
    c.expect_closed_tcp();
}

#[test]
fn case_7_3_5_close_1000_with_123_byte_reason_is_echoed() {
    let mut c = connect();
    c.send_close(Some(1000), &[b'*'; 123]);
    c.expect_close(Some(1000));
    c.expect_closed_tcp();
}

#[test]
fn case_7_3_6_close_with_124_byte_reason_is_too_long_protocol_error() {
    let mut c = connect();
    c.send_close(Some(1000), &[b'*'; 124]);
    c.expect_fail(1002);
}

#[test]
fn case_7_5_1_close_reason_invalid_utf8_fails_1007() {
    let mut c = connect();
    let reason = b"\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5\xed\xa0\x80\x65\x64\x69\x74\x65\x64";
    c.send_close(Some(1000), reason);
    c.expect_fail(1007);
}

/// A valid close code is answered with a close carrying the same code.
fn valid_code(code: u16) {
    let mut c = connect();
    c.send_close(Some(code), b"");
    c.expect_close(Some(code));
    c.expect_closed_tcp();
}

/// An invalid close code fails the connection with 1002.
fn invalid_code(code: u16) {
    let mut c = connect();
    c.send_close(Some(code), b"");
    c.expect_fail(1002);
}

macro_rules! close_code_cases {
    ($check:ident: $($name:ident => $code:expr;)*) => {
        $(
            #[test]
            fn $name() {
                $check($code);
            }
        )*
    };
}

close_code_cases! { valid_code:
    case_7_7_1_close_code_1000_normal_is_echoed => 1000;
    case_7_7_2_close_code_1001_going_away_is_echoed => 1001;
    case_7_7_3_close_code_1002_protocol_error_is_echoed => 1002;
    case_7_7_4_close_code_1003_unsupported_data_is_echoed => 1003;
    case_7_7_5_close_code_1007_invalid_payload_is_echoed => 1007;
    case_7_7_6_close_code_1008_policy_violation_is_echoed => 1008;
    case_7_7_7_close_code_1009_message_too_big_is_echoed => 1009;
    case_7_7_8_close_code_1010_mandatory_extension_is_echoed => 1010;
    case_7_7_9_close_code_1011_internal_error_is_echoed => 1011;
    case_7_7_10_close_code_3000_registered_is_echoed => 3000;
    case_7_7_11_close_code_3999_registered_is_echoed => 3999;
    case_7_7_12_close_code_4000_private_is_echoed => 4000;
    case_7_7_13_close_code_4999_private_is_echoed => 4999;
    extra_7_7_close_code_1012_service_restart_is_echoed => 1012;
    extra_7_7_close_code_1013_try_again_later_is_echoed => 1013;
    extra_7_7_close_code_1014_bad_gateway_is_echoed => 1014;
}

close_code_cases! { invalid_code:
    case_7_9_1_close_code_0_is_protocol_error => 0;
    case_7_9_2_close_code_999_is_protocol_error => 999;
    case_7_9_3_close_code_1004_reserved_is_protocol_error => 1004;
    case_7_9_4_close_code_1005_no_status_is_protocol_error => 1005;
    case_7_9_5_close_code_1006_abnormal_is_protocol_error => 1006;
    case_7_9_6_close_code_1016_unassigned_is_protocol_error => 1016;
    case_7_9_7_close_code_1100_unassigned_is_protocol_error => 1100;
    case_7_9_8_close_code_2000_unassigned_is_protocol_error => 2000;
    case_7_9_9_close_code_2999_unassigned_is_protocol_error => 2999;
    case_7_13_1_close_code_5000_out_of_range_is_protocol_error => 5000;
    case_7_13_2_close_code_65535_out_of_range_is_protocol_error => 65535;
    extra_7_9_close_code_1015_tls_handshake_is_protocol_error => 1015;
}
