//! Unit tests of the Socket.IO codec: the messages socket.io 4.8 sends (taken from a real
//! server's traffic), every packet type, namespaces, ack ids, binary placeholders, and the
//! exact text of every encoder.

use std::borrow::Cow;

use super::*;

fn message(text: &str) -> Packet<'_> {
    match decode_engine(text.as_bytes()).unwrap() {
        EnginePacket::Message(payload) => decode_packet(payload).unwrap(),
        other => panic!("not a message: {other:?}"),
    }
}

fn encoded(write: impl FnOnce(&mut Vec<u8>)) -> String {
    let mut out = Vec::new();
    write(&mut out);
    String::from_utf8(out).unwrap()
}

#[test]
fn the_open_packet_gives_the_heart_beat_schedule() {
    let text = r#"0{"sid":"lv_VI97HAXpY6yYWAAAC","upgrades":[],"pingInterval":25000,"pingTimeout":20000,"maxPayload":1000000}"#;
    let EnginePacket::Open(open) = decode_engine(text.as_bytes()).unwrap() else { panic!("not open") };
    assert!(matches!(open.sid, Cow::Borrowed("lv_VI97HAXpY6yYWAAAC")));
    assert_eq!((open.ping_interval, open.ping_timeout, open.max_payload), (25_000, 20_000, 1_000_000));
    assert!(matches!(decode_engine(b"0{\"sid\":1}"), Err(DecodeError::BadOpen(_))));
}

#[test]
fn engine_packets_are_one_digit_and_a_payload() {
    assert_eq!(decode_engine(b"1"), Ok(EnginePacket::Close));
    assert_eq!(decode_engine(b"2"), Ok(EnginePacket::Ping("")));
    assert_eq!(decode_engine(b"2probe"), Ok(EnginePacket::Ping("probe")));
    assert_eq!(decode_engine(b"3"), Ok(EnginePacket::Pong("")));
    assert_eq!(decode_engine(b"5"), Ok(EnginePacket::Upgrade));
    assert_eq!(decode_engine(b"6"), Ok(EnginePacket::Noop));
    assert_eq!(decode_engine(b""), Err(DecodeError::Empty));
    assert_eq!(decode_engine(b"9"), Err(DecodeError::UnknownEngineType('9')));
    assert_eq!(decode_engine(b"4\xff"), Err(DecodeError::NotUtf8));
}

#[test]
fn connect_replies_and_connect_errors_are_read() {
    let connected = message(r#"40{"sid":"abc"}"#);
    assert_eq!(
        (connected.kind, connected.namespace, connected.data),
        (PacketType::Connect, "/", Some(r#"{"sid":"abc"}"#))
    );
    let refused = message(r#"44/admin,{"message":"Invalid namespace"}"#);
    assert_eq!((refused.kind, refused.namespace), (PacketType::ConnectError, "/admin"));
    assert_eq!(refused.error_message().as_deref(), Some("Invalid namespace"));
    assert_eq!(message(r#"44"Not authorized""#).error_message().as_deref(), Some("Not authorized"));
    assert_eq!(message("44").error_message(), None);
    let left = message("41/admin,");
    assert_eq!((left.kind, left.namespace, left.data), (PacketType::Disconnect, "/admin", None));
}

#[test]
fn events_and_acks_carry_ids_and_json_arguments() {
    let event = message(r#"42/chat,17["message",{"topic":"t0","n":[1,2]},"x"]"#);
    assert_eq!((event.namespace, event.ack_id), ("/chat", Some(17)));
    let Event { name, mut args } = event.event().unwrap();
    assert_eq!(name, "message");
    assert_eq!(args.rest(), r#"{"topic":"t0","n":[1,2]},"x""#);
    assert_eq!(args.next(), Some(Ok(r#"{"topic":"t0","n":[1,2]}"#)));
    let ack = message(r#"4317[{"a":1}]"#);
    assert_eq!((ack.kind, ack.ack_id), (PacketType::Ack, Some(17)));
    assert_eq!(ack.args().unwrap().collect::<Result<Vec<_>, _>>().unwrap(), vec![r#"{"a":1}"#]);
    assert!(ack.event().is_err(), "an ack is not an event");
    let escaped = message(r#"42["a\"b"]"#).event().unwrap();
    assert_eq!(escaped.name, "a\"b");
    assert!(message("42[1]").event().is_err(), "a number is not an event name");
    assert!(message("42{}").event().is_err());
}

#[test]
fn binary_packets_count_their_attachments_and_placeholders_name_them() {
    let event = message(r#"451-["echo",{"_placeholder":true,"num":0}]"#);
    assert_eq!((event.kind, event.attachments, event.ack_id), (PacketType::BinaryEvent, 1, None));
    let mut args = event.event().unwrap().args;
    assert_eq!(args.next().and_then(Result::ok).and_then(placeholder_num), Some(0));
    let ack = message(r#"462-/admin,9[{"_placeholder":true,"num":1},{"_placeholder":true,"num":0}]"#);
    assert_eq!(
        (ack.kind, ack.attachments, ack.namespace, ack.ack_id),
        (PacketType::BinaryAck, 2, "/admin", Some(9))
    );
    assert_eq!(placeholder_num(r#"{"num":3,"_placeholder":true}"#), Some(3));
    assert_eq!(placeholder_num(r#"{"_placeholder":false,"num":3}"#), None);
    assert_eq!(placeholder_num(r#""_placeholder""#), None);
}

#[test]
fn malformed_packets_are_errors() {
    assert_eq!(decode_packet(""), Err(DecodeError::Malformed("empty packet")));
    assert_eq!(decode_packet("7"), Err(DecodeError::UnknownPacketType('7')));
    assert_eq!(decode_packet("5-[]"), Err(DecodeError::Malformed("attachment count")));
    assert_eq!(decode_packet("51[]"), Err(DecodeError::Malformed("no '-' after the attachment count")));
    assert_eq!(decode_packet("299999999999999999999[]"), Err(DecodeError::Malformed("acknowledgement id")));
}

#[test]
fn client_messages_are_written_as_socket_io_reads_them() {
    assert_eq!(encoded(|out| encode_connect(out, "/", None)), "40");
    assert_eq!(
        encoded(|out| encode_connect(out, "/admin", Some(r#"{"token":"t"}"#))),
        r#"40/admin,{"token":"t"}"#
    );
    assert_eq!(encoded(|out| encode_disconnect(out, "/")), "41");
    let args = [Arg::Json(r#"{"a":1}"#), Arg::Json("2")];
    assert_eq!(encoded(|out| encode_emit(out, "/", "echo", &args, Some(7))), r#"427["echo",{"a":1},2]"#);
    assert_eq!(
        encoded(|out| encode_emit(out, "/chat", "say \"hi\"", &[], None)),
        r#"42/chat,["say \"hi\""]"#
    );
    let binary = [Arg::Attachment, Arg::Json("1"), Arg::Attachment];
    assert_eq!(
        encoded(|out| encode_emit(out, "/", "echo", &binary, Some(3))),
        r#"452-3["echo",{"_placeholder":true,"num":0},1,{"_placeholder":true,"num":1}]"#
    );
    assert_eq!(encoded(|out| encode_ack(out, "/", 5, &[Arg::Json("true")])), "435[true]");
    assert_eq!(
        encoded(|out| encode_ack(out, "/", 5, &[Arg::Attachment])),
        r#"461-5[{"_placeholder":true,"num":0}]"#
    );
    assert_eq!(encoded(|out| encode_pong(out, "")), "3");
    assert_eq!(encoded(|out| encode_pong(out, "probe")), "3probe");
}

#[test]
fn an_encoded_emit_decodes_back() {
    let text = encoded(|out| encode_emit(out, "/", "echo", &[Arg::Json(r#"{"ts":1}"#)], Some(42)));
    let packet = message(&text);
    let event = packet.event().unwrap();
    assert_eq!((packet.ack_id, event.name.as_ref(), event.args.rest()), (Some(42), "echo", r#"{"ts":1}"#));
}
