//! Autobahn section 2 (pings/pongs): every ping is answered with a pong carrying the same
//! payload, a ping over 125 bytes fails the connection, and unsolicited pongs are ignored.

use crate::connect;
use crate::raw_client::OCTET_GAP;
use crate::raw_frame::{LenEncoding, OutFrame, encode_all};

/// Sends one ping and expects the matching pong, then closes normally.
fn ping_pong(payload: &[u8]) {
    let mut c = connect();
    c.send_ping(payload);
    c.expect_pong(payload);
    c.close_normally();
}

#[test]
fn case_2_1_ping_empty_payload_gets_pong() {
    ping_pong(b"");
}

#[test]
fn case_2_2_ping_small_text_payload_gets_pong() {
    ping_pong(b"Hello, world!");
}

#[test]
fn case_2_3_ping_small_binary_payload_gets_pong() {
    ping_pong(&[0x00, 0xFF, 0xFE, 0xFD, 0xFC, 0xFB, 0x00, 0xFF]);
}

#[test]
fn case_2_4_ping_125_byte_payload_gets_pong() {
    ping_pong(&[0xFE; 125]);
}

#[test]
fn case_2_5_ping_126_byte_payload_is_protocol_error() {
    let mut c = connect();
    c.send(&OutFrame::ping(vec![0xFE; 126]).len_encoding(LenEncoding::Bits16));
    c.expect_fail(1002);
}

#[test]
fn case_2_6_ping_125_bytes_in_octet_wise_chops_gets_pong() {
    let payload = [0xFE; 125];
    let mut c = connect();
    c.send_chopped(&OutFrame::ping(payload.to_vec()).encode(), 1, OCTET_GAP);
    c.expect_pong(&payload);
    c.close_normally();
}

#[test]
fn case_2_7_unsolicited_pong_empty_payload_is_ignored() {
    let mut c = connect();
    c.send(&OutFrame::pong(""));
    c.close_normally();
}

#[test]
fn case_2_8_unsolicited_pong_with_payload_is_ignored() {
    let mut c = connect();
    c.send(&OutFrame::pong("unsolicited pong payload"));
    c.close_normally();
}

#[test]
fn case_2_9_unsolicited_pong_then_ping_gets_only_the_ping_answered() {
    let mut c = connect();
    c.send_all(&[OutFrame::pong("unsolicited pong payload"), OutFrame::ping("ping payload")]);
    c.expect_pong(b"ping payload");
    c.close_normally();
}

fn ten_pings() -> Vec<OutFrame> {
    (0..10).map(|i| OutFrame::ping(format!("payload-{i}"))).collect()
}

#[test]
fn case_2_10_ten_pings_get_ten_pongs_in_order() {
    let mut c = connect();
    c.send_all(&ten_pings());
    for i in 0..10 {
        c.expect_pong(format!("payload-{i}").as_bytes());
    }
    c.close_normally();
}

#[test]
fn case_2_11_ten_pings_in_octet_wise_chops_get_ten_pongs_in_order() {
    let mut c = connect();
    c.send_chopped(&encode_all(&ten_pings()), 1, OCTET_GAP);
    for i in 0..10 {
        c.expect_pong(format!("payload-{i}").as_bytes());
    }
    c.close_normally();
}
