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

/// `bytes` from hex digits.
fn hex(digits: &str) -> Vec<u8> {
    (0..digits.len()).step_by(2).map(|i| u8::from_str_radix(&digits[i..i + 2], 16).unwrap()).collect()
}

#[test]
fn huffman_coded_names_and_values_decode() {
    // `:authority: www.example.com` (static name 0, value Huffman-coded as in RFC 7541
    // C.4.1), then `custom-key: custom-value` with both strings Huffman-coded (C.4.3).
    let mut block = vec![0, 0, 0x50, 0x80 | 12];
    block.extend(hex("f1e3c2e5f23a6ba0ab90f4ff"));
    // 001 N=0 H=1 and a 3-bit length of 8: 7 then one continuation byte.
    block.extend([0x2f, 0x01]);
    block.extend(hex("25a849e95ba97d7f"));
    block.push(0x80 | 9);
    block.extend(hex("25a849e95bb8e8b4bf"));
    let want = fields(&[(":authority", "www.example.com"), ("custom-key", "custom-value")]);
    assert_eq!(decode(&block, 1000).unwrap(), want);
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
        (&[0, 0, 0x51, 0x81, 0x18], "padding"),
        (&[0, 0, 0x51, 0x84, 0xff, 0xff, 0xff, 0xff], "EOS"),
        (&[0, 0, 0x51, 0x85, 0xf1], "cut short"),
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
