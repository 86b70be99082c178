//! The codec byte by byte: operations packed together and cut anywhere, HMSG headers, `-ERR`
//! words, another protocol refused on its first bytes, the limits, and what the encoders write.

use super::*;

fn one(input: &[u8]) -> (ServerOp<'_>, usize) {
    Decoder::default().decode(input).expect("valid").expect("whole")
}

#[test]
fn several_operations_in_one_buffer_are_read_one_after_another() {
    let wire = b"INFO {\"max_payload\":1048576,\"headers\":true}\r\nPING\r\nMSG t.1 7 5\r\nhello\r\n+OK\r\n";
    let decoder = Decoder::default();
    let mut at = 0;
    let mut ops = Vec::new();
    while let Some((op, used)) = decoder.decode(&wire[at..]).unwrap() {
        ops.push(format!("{op:?}"));
        at += used;
    }
    assert_eq!(at, wire.len());
    assert_eq!(ops.len(), 4, "{ops:?}");
    let (info, _) = one(wire);
    let ServerOp::Info(json) = info else { panic!("{info:?}") };
    let info = Info::parse(json).unwrap();
    assert_eq!((info.max_payload, info.headers, info.auth_required), (Some(1_048_576), true, false));
}

#[test]
fn an_operation_cut_anywhere_needs_more_bytes_until_it_is_whole() {
    let wire = b"MSG _INBOX.r.3.42 1 _INBOX.x 11\r\nhello world\r\n";
    let decoder = Decoder::default();
    for cut in 0..wire.len() {
        assert_eq!(decoder.decode(&wire[..cut]), Ok(None), "cut at {cut}");
    }
    let (op, used) = one(wire);
    assert_eq!(used, wire.len());
    let msg = Msg {
        subject: "_INBOX.r.3.42",
        sid: 1,
        reply_to: Some("_INBOX.x"),
        headers: None,
        payload: b"hello world",
    };
    assert_eq!(op, ServerOp::Msg(msg));
}

#[test]
fn hmsg_splits_its_headers_from_its_payload() {
    let wire = b"HMSG _INBOX.a.7 1 16 16\r\nNATS/1.0 503\r\n\r\n\r\n";
    let (op, used) = one(wire);
    assert_eq!(used, wire.len());
    let ServerOp::Msg(msg) = op else { panic!("{op:?}") };
    assert_eq!(msg.headers, Some(&b"NATS/1.0 503\r\n\r\n"[..]));
    assert!(msg.headers.unwrap().starts_with(NO_RESPONDERS_STATUS));
    assert_eq!(msg.payload, b"");
    let with_body = b"hmsg s 2 r 12 15\r\nNATS/1.0\r\n\r\nabc\r\n";
    let (ServerOp::Msg(msg), _) = one(with_body) else { panic!() };
    assert_eq!((msg.reply_to, msg.payload), (Some("r"), &b"abc"[..]));
}

#[test]
fn err_gives_the_servers_words_without_quotes_and_ping_pong_ok_take_no_arguments() {
    assert_eq!(one(b"-ERR 'Authorization Violation'\r\n").0, ServerOp::Err("Authorization Violation"));
    assert_eq!(one(b"ping\r\n").0, ServerOp::Ping);
    assert_eq!(one(b"PONG\n").0, ServerOp::Pong, "a bare LF is taken");
    assert_eq!(one(b"+OK\r\n").0, ServerOp::Ok);
    assert!(matches!(Decoder::default().decode(b"PING now\r\n"), Err(DecodeError::Malformed { .. })));
}

#[test]
fn another_protocol_fails_on_its_first_bytes() {
    assert_eq!(Decoder::default().decode(b"INF"), Ok(None));
    assert_eq!(Decoder::default().decode(b"-E"), Ok(None));
    assert!(matches!(Decoder::default().decode(b"HTTP/1.1"), Err(DecodeError::UnknownOperation(_))));
    assert!(matches!(Decoder::default().decode(b"{\"type\":"), Err(DecodeError::UnknownOperation(_))));
    assert!(matches!(Decoder::default().decode(b"MSGX a"), Err(DecodeError::UnknownOperation(_))));
    assert!(matches!(Decoder::default().decode(b"CONNECT {}\r\n"), Err(DecodeError::UnknownOperation(_))));
}

#[test]
fn sizes_past_the_limits_fail_before_the_payload_is_awaited() {
    let decoder = Decoder::new(10);
    assert_eq!(decoder.decode(b"MSG a 1 11\r\n"), Err(DecodeError::PayloadTooLarge { size: 11, limit: 10 }));
    let long =
        vec![b'I'; 1].into_iter().chain(std::iter::repeat_n(b' ', MAX_CONTROL_LINE + 1)).collect::<Vec<_>>();
    let mut line = b"INFO".to_vec();
    line.extend_from_slice(&long);
    assert_eq!(decoder.decode(&line), Err(DecodeError::ControlLineTooLong { limit: MAX_CONTROL_LINE }));
    assert!(matches!(decoder.decode(b"MSG a 1 3\r\nabcd\r\n"), Err(DecodeError::Malformed { .. })));
    assert!(matches!(decoder.decode(b"MSG a x 3\r\nabc\r\n"), Err(DecodeError::Malformed { .. })));
    assert!(matches!(decoder.decode(b"HMSG a 1 5 3\r\nabc\r\n"), Err(DecodeError::Malformed { .. })));
    assert!(matches!(decoder.decode(b"MSG a 1 r s 3\r\nabc\r\n"), Err(DecodeError::Malformed { .. })));
}

#[test]
fn encoders_write_what_the_server_reads() {
    let mut out = Vec::new();
    let connect = Connect {
        name: "wsbench-r-1",
        user: Some("u\"x"),
        pass: Some("p"),
        auth_token: None,
        headers: true,
        no_responders: true,
    };
    encode_connect(&mut out, &connect);
    let text = String::from_utf8(out.clone()).unwrap();
    let json = text.strip_prefix("CONNECT ").unwrap().strip_suffix("\r\n").unwrap();
    let value: serde_json::Value = serde_json::from_str(json).unwrap();
    assert_eq!(value["verbose"], false);
    assert_eq!(value["pedantic"], false);
    assert_eq!(value["user"], "u\"x");
    assert_eq!(value["pass"], "p");
    assert!(value.get("auth_token").is_none());
    assert_eq!((value["headers"].as_bool(), value["no_responders"].as_bool()), (Some(true), Some(true)));

    out.clear();
    encode_sub(&mut out, "req", Some("workers"), 2);
    encode_sub(&mut out, "_INBOX.r.1.*", None, 1);
    encode_pub(&mut out, "req", Some(("_INBOX.r.1.", 42)), b"hi");
    encode_pub(&mut out, "_INBOX.r.1.42", None, b"");
    encode_unsub(&mut out, 2);
    encode_ping(&mut out);
    encode_pong(&mut out);
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "SUB req workers 2\r\nSUB _INBOX.r.1.* 1\r\nPUB req _INBOX.r.1.42 2\r\nhi\r\nPUB _INBOX.r.1.42 0\r\n\r\n\
         UNSUB 2\r\nPING\r\nPONG\r\n"
    );
}

#[test]
fn subjects_are_dot_separated_tokens_without_whitespace() {
    for good in ["t1", "wsbench.echo.r-1", "orders.*.new", "a.>", "é.b"] {
        assert!(valid_subject(good), "{good}");
    }
    for bad in ["", "a..b", ".a", "a.", "a b", "a\tb", "a\r\nb"] {
        assert!(!valid_subject(bad), "{bad:?}");
    }
    assert!(valid_publish_subject("orders.eu.new"));
    assert!(!valid_publish_subject("orders.*.new"));
    assert!(!valid_publish_subject("orders.>"));
}
