//! Unit tests of the STOMP codec: exact bytes of every encoder, header escaping both ways,
//! every server frame's view, heart-beats between frames, input split at every byte and
//! frames concatenated, and the limits.

use std::borrow::Cow;

use super::*;

fn decode_all(wire: &[u8]) -> Vec<Item<'_>> {
    let decoder = Decoder::new(DEFAULT_MAX_FRAME);
    let mut items = Vec::new();
    let mut at = 0;
    while let Some((item, used)) = decoder.decode(&wire[at..]).unwrap() {
        items.push(item);
        at += used;
    }
    assert_eq!(at, wire.len(), "bytes left over");
    items
}

fn frame<'a>(item: &Item<'a>) -> Frame<'a> {
    match item {
        Item::Frame(frame) => *frame,
        Item::HeartBeat => panic!("a heart-beat, not a frame"),
    }
}

#[test]
fn client_frames_are_laid_out_as_the_specification_says() {
    let mut out = Vec::new();
    let connect =
        Connect { host: "/", heart_beat: (10_000, 0), login: Some("guest"), passcode: Some("guest") };
    encode_connect(&mut out, &connect).unwrap();
    assert_eq!(
        out,
        b"CONNECT\naccept-version:1.2\nhost:/\nheart-beat:10000,0\nlogin:guest\npasscode:guest\n\n\0"
    );
    out.clear();
    encode_subscribe(&mut out, "s1", "/topic/t0", Some("r1"));
    assert_eq!(out, b"SUBSCRIBE\nid:s1\ndestination:/topic/t0\nack:auto\nreceipt:r1\n\n\0");
    out.clear();
    encode_unsubscribe(&mut out, "s1", None);
    assert_eq!(out, b"UNSUBSCRIBE\nid:s1\n\n\0");
    out.clear();
    let send =
        Send { destination: "/topic/t0", content_type: Some("text/plain"), receipt: None, body: b"a\0b" };
    encode_send(&mut out, &send);
    assert_eq!(out, b"SEND\ndestination:/topic/t0\ncontent-length:3\ncontent-type:text/plain\n\na\0b\0");
    out.clear();
    encode_disconnect(&mut out, "bye");
    encode_heartbeat(&mut out);
    assert_eq!(out, b"DISCONNECT\nreceipt:bye\n\n\0\n");
}

#[test]
fn connect_refuses_values_it_cannot_carry() {
    let mut out = Vec::new();
    let connect = Connect { host: "a\nb", heart_beat: (0, 0), login: None, passcode: None };
    assert_eq!(encode_connect(&mut out, &connect), Err(EncodeError::UnescapableValue("host")));
    let connect = Connect { host: "/", login: Some("x\r"), ..connect };
    assert_eq!(encode_connect(&mut out, &connect), Err(EncodeError::UnescapableValue("login")));
    assert!(out.is_empty());
}

#[test]
fn header_escapes_survive_a_round_trip() {
    let mut out = Vec::new();
    let awkward = "a:b\\c\nd\re";
    encode_subscribe(&mut out, awkward, "/queue/q", None);
    assert!(out.starts_with(b"SUBSCRIBE\nid:a\\cb\\\\c\\nd\\re\n"));
    let items = decode_all(&out);
    let subscribe = frame(&items[0]);
    assert_eq!(subscribe.header("id").as_deref(), Some(awkward));
    assert!(matches!(subscribe.header("destination"), Some(Cow::Borrowed("/queue/q"))));
}

#[test]
fn connected_headers_are_not_unescaped() {
    let items = decode_all(b"CONNECTED\nversion:1.2\nserver:a\\cb\nheart-beat:0,10000\n\n\0\n");
    let connected = frame(&items[0]);
    assert_eq!(connected.header("server").as_deref(), Some("a\\cb"));
    let expected = ServerFrame::Connected { version: Some("1.2".into()), heart_beat: (0, 10_000) };
    assert_eq!(connected.server_frame(), Ok(expected));
}

#[test]
fn server_frames_have_typed_views() {
    let wire = b"MESSAGE\r\nsubscription:s1\r\ndestination:/topic/t0\r\nmessage-id:m\\c1\r\ncontent-length:2\r\n\r\nhi\0\r\n\
RECEIPT\nreceipt-id:r1\n\n\0\
ERROR\nmessage:not_found\ncontent-type:text/plain\n\nno exchange\0\n\n";
    let items = decode_all(wire);
    assert_eq!(items.len(), 3, "{items:?}");
    let message = ServerFrame::Message {
        destination: "/topic/t0".into(),
        subscription: "s1".into(),
        message_id: "m:1".into(),
        body: b"hi",
    };
    assert_eq!(frame(&items[0]).server_frame(), Ok(message));
    assert_eq!(frame(&items[1]).server_frame(), Ok(ServerFrame::Receipt { receipt_id: "r1".into() }));
    let error = ServerFrame::Error { message: Some("not_found".into()), body: b"no exchange" };
    assert_eq!(frame(&items[2]).server_frame(), Ok(error));
}

#[test]
fn missing_headers_and_unknown_commands_are_named() {
    let items = decode_all(b"MESSAGE\ndestination:/topic/t\nmessage-id:1\n\n\0RECEIPT\n\n\0SEND\n\n\0");
    let missing = |header| DecodeError::MissingHeader {
        command: if header == "receipt-id" { "RECEIPT" } else { "MESSAGE" },
        header,
    };
    assert_eq!(frame(&items[0]).server_frame(), Err(missing("subscription")));
    assert_eq!(frame(&items[1]).server_frame(), Err(missing("receipt-id")));
    assert_eq!(frame(&items[2]).server_frame(), Err(DecodeError::UnexpectedCommand("SEND".into())));
    let bad_beat = decode_all(b"CONNECTED\nheart-beat:x\n\n\0");
    assert_eq!(frame(&bad_beat[0]).server_frame(), Err(DecodeError::Malformed("heart-beat header")));
}

#[test]
fn repeated_headers_keep_the_first_value() {
    let items = decode_all(b"MESSAGE\nfoo:1\nfoo:2\n\n\0");
    let message = frame(&items[0]);
    assert_eq!(message.header("foo").as_deref(), Some("1"));
    assert_eq!(message.headers().count(), 2);
}

#[test]
fn heart_beats_between_frames_are_items_of_their_own() {
    let items = decode_all(b"\n\r\nRECEIPT\nreceipt-id:1\n\n\0");
    assert_eq!(items[..2], [Item::HeartBeat, Item::HeartBeat]);
    assert!(matches!(items[2], Item::Frame(_)));
    let decoder = Decoder::new(DEFAULT_MAX_FRAME);
    assert_eq!(decoder.decode(b"\r"), Ok(None), "a CR may be the start of CRLF");
    assert_eq!(decoder.decode(b""), Ok(None));
}

#[test]
fn input_split_at_every_byte_decodes_the_same() {
    let wire: &[u8] =
        b"\nMESSAGE\nsubscription:s\ndestination:/topic/t\nmessage-id:7\ncontent-length:3\n\nx\0y\0\n\
MESSAGE\nsubscription:s\ndestination:/topic/t\nmessage-id:8\n\nplain\0\r\n\n";
    let whole = decode_all(wire);
    assert_eq!(whole.len(), 3);
    let decoder = Decoder::new(DEFAULT_MAX_FRAME);
    for split in 0..wire.len() {
        let (mut at, mut got) = (0, Vec::new());
        while let Some((item, used)) = decoder.decode(&wire[at..split]).unwrap() {
            got.push(item);
            at += used;
        }
        assert_eq!(got[..], whole[..got.len()], "split at {split}");
        while let Some((item, used)) = decoder.decode(&wire[at..]).unwrap() {
            got.push(item);
            at += used;
        }
        // A frame's trailing ends of line may arrive as heart-beats after a split.
        got.retain(|item| *item != Item::HeartBeat);
        let frames: Vec<_> = whole.iter().filter(|item| **item != Item::HeartBeat).copied().collect();
        assert_eq!(got, frames, "split at {split}");
    }
}

#[test]
fn frames_over_the_limit_fail_before_the_rest_is_buffered() {
    let decoder = Decoder::new(64);
    let announced = decoder.decode(b"MESSAGE\ncontent-length:100\n\n");
    assert!(matches!(announced, Err(DecodeError::FrameTooLarge { .. })), "{announced:?}");
    let unterminated = [b"MESSAGE\n\n".as_slice(), &[b'x'; 60]].concat();
    assert!(matches!(decoder.decode(&unterminated), Err(DecodeError::FrameTooLarge { .. })));
    assert_eq!(decoder.decode(&unterminated[..40]), Ok(None));
    let endless_header = [b"MESSAGE\nh:".as_slice(), &[b'x'; 60]].concat();
    assert!(matches!(decoder.decode(&endless_header), Err(DecodeError::FrameTooLarge { .. })));
}

#[test]
fn malformed_frames_are_errors() {
    let decoder = Decoder::new(DEFAULT_MAX_FRAME);
    let malformed = |wire: &[u8]| match decoder.decode(wire) {
        Err(DecodeError::Malformed(reason)) => reason,
        other => panic!("{other:?}"),
    };
    assert_eq!(malformed(b"message\n\n\0"), "command");
    assert_eq!(malformed(b"MESSAGE\nno colon\n\n\0"), "header without a colon");
    assert_eq!(malformed(b"MESSAGE\na:b\\t\n\n\0"), "header escape");
    assert_eq!(malformed(b"MESSAGE\ncontent-length:x\n\n\0"), "content-length");
    assert_eq!(malformed(b"MESSAGE\ncontent-length:1\n\nab\0"), "no NUL after content-length bytes");
    assert_eq!(malformed(b"MESSAGE\na:\xff\n\n\0"), "header is not UTF-8");
}
