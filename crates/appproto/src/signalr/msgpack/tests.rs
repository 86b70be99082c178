//! The MessagePack hub protocol's codec against the examples of the hub protocol
//! specification (dotnet/aspnetcore `src/SignalR/docs/specs/HubProtocol.md`, "MessagePack
//! (MsgPack) encoding" and "Binary encoding").

use super::*;

const INVOCATION: &[u8] =
    &[0x96, 0x01, 0x80, 0xa3, b'x', b'y', b'z', 0xa6, b'm', b'e', b't', b'h', b'o', b'd', 0x91, 0x2a, 0x90];

fn framed(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    frame(&mut out, body);
    out
}

#[test]
fn the_specifications_messages_decode() {
    assert_eq!(
        decode(INVOCATION),
        Ok(PackMessage::Invocation { target: "method", arguments: &[0x91, 0x2a] })
    );
    let headers = [
        0x96, 0x01, 0x82, 0xa1, b'x', 0xa1, b'y', 0xa1, b'z', 0xa1, b'z', 0xa3, b'x', b'y', b'z', 0xa6, b'm',
        b'e', b't', b'h', b'o', b'd', 0x91, 0x2a, 0x90,
    ];
    assert_eq!(decode(&headers), decode(INVOCATION));
    let item = [0x94, 0x02, 0x80, 0xa3, b'x', b'y', b'z', 0x2a];
    assert_eq!(decode(&item), Ok(PackMessage::StreamItem { invocation_id: "xyz", item: &[0x2a] }));
    let error = [0x95, 0x03, 0x80, 0xa3, b'x', b'y', b'z', 0x01, 0xa5, b'E', b'r', b'r', b'o', b'r'];
    let completion = |result, error| PackMessage::Completion { invocation_id: "xyz", result, error };
    assert_eq!(decode(&error), Ok(completion(None, Some("Error"))));
    assert_eq!(decode(&[0x94, 0x03, 0x80, 0xa3, b'x', b'y', b'z', 0x02]), Ok(completion(None, None)));
    let result = [0x95, 0x03, 0x80, 0xa3, b'x', b'y', b'z', 0x03, 0x2a];
    assert_eq!(decode(&result), Ok(completion(Some(&[0x2a]), None)));
    assert_eq!(decode(&[0x91, 0x06]), Ok(PackMessage::Ping));
    let close = [0x92, 0x07, 0xa3, b'x', b'y', b'z'];
    assert_eq!(decode(&close), Ok(PackMessage::Close { error: Some("xyz"), allow_reconnect: false }));
    let again = [0x93, 0x07, 0xa3, b'x', b'y', b'z', 0xc3];
    assert_eq!(decode(&again), Ok(PackMessage::Close { error: Some("xyz"), allow_reconnect: true }));
    assert_eq!(decode(&[0x92, 0x08, 0xcc, 0x24]), Ok(PackMessage::Other { kind: 8 }));
}

#[test]
fn what_is_not_a_hub_message_is_refused_by_cause() {
    assert_eq!(decode(&[0x2a]), Err(PackError::NotArray));
    assert_eq!(decode(&[0x90]), Err(PackError::NotArray));
    assert_eq!(decode(&INVOCATION[..10]), Err(PackError::Truncated));
    assert_eq!(decode(&[0x94, 0x03, 0x80, 0xa3, b'x', b'y', b'z', 0x07]), Err(PackError::BadResultKind(7)));
    assert_eq!(decode(&[0x93, 0x03, 0x80, 0xa3]), Err(PackError::Missing("completion", "result kind")));
    assert_eq!(decode(&[0x94, 0x02, 0x80, 0xa2, 0xff, 0xfe, 0x2a]), Err(PackError::NotUtf8));
    // aiosignalr 0.1.1 writes the headers of its completions and stream items as the number
    // 128 (0xcc 0x80), where an empty map (0x80) belongs: the official clients refuse them.
    let numbered = [0x94, 0x03, 0xcc, 0x80, 0xa3, b'x', b'y', b'z', 0x02];
    assert_eq!(decode(&numbered), Err(PackError::Unexpected("the headers' map")));
    let mut deep = vec![0x94, 0x02, 0x80, 0xa1, b's'];
    deep.extend(std::iter::repeat_n(0x91, 100));
    deep.push(0x2a);
    assert_eq!(decode(&deep), Err(PackError::TooDeep));
}

#[test]
fn frames_carry_a_varint_length() {
    let mut message = vec![0x0b];
    message.extend_from_slice(b"Hello\nWorld");
    message.extend_from_slice(&[0x02, 0x01, 0x02]);
    let read: Vec<_> = frames(&message).collect();
    assert_eq!(read, [Ok(&b"Hello\nWorld"[..]), Ok(&[0x01, 0x02][..])]);
    let long = vec![7u8; 5248];
    let framed = framed(&long);
    assert_eq!(&framed[..2], [0x80, 0x29], "the specification's 5248");
    assert_eq!(frames(&framed).collect::<Vec<_>>(), [Ok(&long[..])]);
    assert_eq!(frames(&framed[..100]).collect::<Vec<_>>(), [Err(PackError::Truncated)]);
    assert_eq!(frames(&[0xff, 0xff, 0xff, 0xff, 0x0f]).collect::<Vec<_>>(), [Err(PackError::BadPrefix)]);
    assert_eq!(
        frames(&[0xff, 0xff, 0xff, 0xff, 0xff, 0x01]).collect::<Vec<_>>(),
        [Err(PackError::BadPrefix)]
    );
}

#[test]
fn invocations_cancellations_pings_and_closes_encode_as_the_specification_writes_them() {
    let (mut out, mut scratch) = (Vec::new(), Vec::new());
    let value = serde_json::json!(42);
    encode_invocation(&mut out, &mut scratch, 1, Some("xyz"), "method", &[Argument::Json(&value)]);
    assert_eq!(out, framed(INVOCATION));
    out.clear();
    encode_invocation(&mut out, &mut scratch, 4, Some("xyz"), "method", &[Argument::Json(&value)]);
    let mut stream = INVOCATION.to_vec();
    stream[1] = 0x04;
    assert_eq!(out, framed(&stream));
    out.clear();
    encode_invocation(
        &mut out,
        &mut scratch,
        1,
        None,
        "method",
        &[Argument::Str("hi"), Argument::Bin(&[1, 2])],
    );
    let body = [
        0x96, 0x01, 0x80, 0xc0, 0xa6, b'm', b'e', b't', b'h', b'o', b'd', 0x92, 0xa2, b'h', b'i', 0xc4, 0x02,
        1, 2, 0x90,
    ];
    assert_eq!(out, framed(&body));
    out.clear();
    encode_cancel_invocation(&mut out, &mut scratch, "xyz");
    assert_eq!(out, framed(&[0x93, 0x05, 0x80, 0xa3, b'x', b'y', b'z']));
    out.clear();
    encode_ping(&mut out);
    encode_close(&mut out);
    assert_eq!(out, [0x02, 0x91, 0x06, 0x04, 0x93, 0x07, 0xc0, 0xc2]);
    out.clear();
    encode_handshake(&mut out);
    assert_eq!(out, b"{\"protocol\":\"messagepack\",\"version\":1}\x1e");
}

#[test]
fn values_turn_into_json_of_the_same_shape() {
    let value = serde_json::json!({"seq": 7, "ts": 1_795_924_102_826_u64, "neg": -3, "big": -70000, "f": 1.5, "s": "a\"b", "l": [true, null], "m": {}});
    let mut packed = Vec::new();
    write_json(&mut packed, &value);
    let mut json = Vec::new();
    to_json(&packed, &mut json).unwrap();
    assert_eq!(serde_json::from_slice::<serde_json::Value>(&json).unwrap(), value);
    let mut out = Vec::new();
    to_json(&[0x82, 0x01, 0xc4, 0x02, 9, 8, 0xd4, 0x01, 0x00, 0xca, 0x3f, 0xc0, 0x00, 0x00], &mut out)
        .unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), r#"{"1":[9,8],"null":1.5}"#);
    assert_eq!(as_bytes(&[0xa2, b'h', b'i']), Some(&b"hi"[..]));
    assert_eq!(as_bytes(&[0xc4, 0x01, 0xff]), Some(&[0xff][..]));
    assert_eq!(as_bytes(&[0x2a]), None);
    assert_eq!(to_json(&[0xa3, b'x'], &mut Vec::new()), Err(PackError::Truncated));
    // Maps as keys of maps as keys…: the fuzzer's input whose JSON text doubled with each level.
    let mut nested = vec![0x93; 4];
    nested.extend(std::iter::repeat_n(0x81, 60));
    nested.push(0x2a);
    let refused = Err(PackError::Unexpected("a string or a number as a map's key"));
    assert_eq!(to_json(&nested, &mut Vec::new()), refused);
}
