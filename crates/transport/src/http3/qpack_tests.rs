//! Tests of the static-table-only QPACK encoder and decoder.

use super::*;

fn fields(list: &[(&str, &str)]) -> Vec<Field> {
    list.iter().map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec())).collect()
}

#[test]
fn an_extended_connect_round_trips_and_uses_the_static_table() {
    let request = [
        (":method", "CONNECT"),
        (":protocol", "websocket"),
        (":scheme", "https"),
        (":path", "/chat?room=1"),
        (":authority", "localhost:4433"),
        ("sec-websocket-version", "13"),
        ("origin", "https://localhost"),
    ];
    let mut block = Vec::new();
    encode(&request, &mut block);
    // :method CONNECT is static entry 15, :scheme https 23: one byte each.
    assert_eq!(&block[..4], &[0, 0, 0xc0 | 15, 0x20 | 7]);
    assert!(block.contains(&(0xc0 | 23)));
    assert_eq!(decode(&block, 16_384).unwrap(), fields(&request));
}

#[test]
fn rfc_9204_literal_with_name_reference_decodes() {
    // RFC 9204 B.1: ":path: /index.html" as a literal with static name reference 1.
    let block = b"\x00\x00\x51\x0b/index.html";
    assert_eq!(decode(block, 1000).unwrap(), fields(&[(":path", "/index.html")]));
    // Indexed static entry 25, `:status: 200`.
    assert_eq!(decode(&[0, 0, 0xd9], 1000).unwrap(), fields(&[(":status", "200")]));
}

#[test]
fn long_values_use_continuation_bytes() {
    let value = "x".repeat(300);
    let mut block = Vec::new();
    encode(&[("sec-websocket-protocol", value.as_str())], &mut block);
    assert_eq!(decode(&block, 1000).unwrap(), fields(&[("sec-websocket-protocol", &value)]));
}

#[test]
fn what_a_zero_capacity_table_cannot_hold_is_refused() {
    let cases: &[(&[u8], &str)] = &[
        (&[1, 0, 0xd9], "dynamic table"),
        (&[0, 0, 0x80], "dynamic table"),
        (&[0, 0, 0x41, 0], "dynamic table entry"),
        (&[0, 0, 0x10], "post-base"),
        (&[0, 0, 0xff, 0x30], "past its 99"),
        (&[0, 0, 0x51, 0x85, 1, 2, 3, 4, 5], "Huffman"),
        (&[0, 0, 0x51, 0x0b, b'/'], "cut short"),
        (&[0, 0, 0xff], "cut short"),
        (&[0], "cut short"),
        (&[0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff], "64 bits"),
    ];
    for (block, what) in cases {
        let error = decode(block, 1000).unwrap_err();
        assert_eq!(error.code, Code::QpackDecompressionFailed, "{block:?}");
        assert!(error.what.contains(what), "{block:?}: {}", error.what);
    }
}

#[test]
fn a_section_past_the_size_limit_is_refused() {
    let mut block = Vec::new();
    encode(&[("x-long", "y".repeat(100))], &mut block);
    assert_eq!(decode(&block, 100).unwrap_err().code, Code::ExcessiveLoad);
    assert!(decode(&block, 200).is_ok());
}
