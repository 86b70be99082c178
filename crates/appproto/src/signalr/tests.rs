//! The JSON hub protocol's codec against the examples of the hub protocol specification
//! (dotnet/aspnetcore `src/SignalR/docs/specs/HubProtocol.md`, "JSON Encoding") and what
//! aiosignalr 0.1.1 sent.

use std::borrow::Cow;

use super::*;

fn record(json: &str) -> Vec<u8> {
    let mut out = json.as_bytes().to_vec();
    out.push(RECORD_SEPARATOR);
    out
}

#[test]
fn the_specifications_messages_decode() {
    let invocation =
        r#"{"type": 1, "invocationId": "123", "target": "Send", "arguments": [42, "Test Message"]}"#;
    assert_eq!(
        decode(invocation.as_bytes()),
        Ok(HubMessage::Invocation {
            invocation_id: Some(Cow::Borrowed("123")),
            target: Cow::Borrowed("Send"),
            arguments: r#"[42, "Test Message"]"#,
        })
    );
    let non_blocking = r#"{"type": 1, "target": "Send", "arguments": [42, "Test Message"]}"#;
    assert!(matches!(
        decode(non_blocking.as_bytes()),
        Ok(HubMessage::Invocation { invocation_id: None, .. })
    ));
    let headers = r#"{"type": 1, "headers": {"Foo": "Bar"}, "invocationId": "123", "target": "Send", "arguments": [42]}"#;
    assert!(matches!(decode(headers.as_bytes()), Ok(HubMessage::Invocation { .. })));
    assert_eq!(
        decode(br#"{"type": 2, "invocationId": "123", "item": 42}"#),
        Ok(HubMessage::StreamItem { invocation_id: Cow::Borrowed("123"), item: "42" })
    );
    assert_eq!(
        decode(br#"{"type": 3, "invocationId": "123"}"#),
        Ok(HubMessage::Completion { invocation_id: Cow::Borrowed("123"), result: None, error: None })
    );
    assert_eq!(
        decode(br#"{"type": 3, "invocationId": "123", "result": 42}"#),
        Ok(HubMessage::Completion { invocation_id: Cow::Borrowed("123"), result: Some("42"), error: None })
    );
    assert_eq!(
        decode(br#"{"type": 3, "invocationId": "123", "result": null}"#),
        Ok(HubMessage::Completion { invocation_id: Cow::Borrowed("123"), result: Some("null"), error: None })
    );
    assert_eq!(
        decode(br#"{"type": 3, "invocationId": "123", "error": "It didn't work!"}"#),
        Ok(HubMessage::Completion {
            invocation_id: Cow::Borrowed("123"),
            result: None,
            error: Some(Cow::Borrowed("It didn't work!")),
        })
    );
    assert_eq!(
        decode(br#"{"type": 3, "invocationId": "123", "result": 42, "error": "It didn't work!"}"#),
        Err(DecodeError::ResultAndError)
    );
    assert_eq!(decode(br#"{"type": 6}"#), Ok(HubMessage::Ping));
    assert_eq!(decode(br#"{"type": 7}"#), Ok(HubMessage::Close { error: None, allow_reconnect: false }));
    assert_eq!(
        decode(br#"{"type": 7, "error": "Connection closed because of an error!", "allowReconnect": true}"#),
        Ok(HubMessage::Close {
            error: Some(Cow::Borrowed("Connection closed because of an error!")),
            allow_reconnect: true,
        })
    );
    assert_eq!(decode(br#"{"type": 5, "invocationId": "123"}"#), Ok(HubMessage::Other { kind: 5 }));
    assert_eq!(decode(br#"{"type": 8, "sequenceId": 1394}"#), Ok(HubMessage::Other { kind: 8 }));
}

#[test]
fn what_is_not_a_hub_message_is_refused_by_cause() {
    assert_eq!(decode(br#"{"invocationId": "1"}"#), Err(DecodeError::NoType));
    assert_eq!(decode(br#"{"type": 1, "arguments": []}"#), Err(DecodeError::Missing("invocation", "target")));
    assert_eq!(decode(br#"{"type": 3}"#), Err(DecodeError::Missing("completion", "invocationId")));
    assert!(matches!(decode(b"[1,2]"), Err(DecodeError::NotJson(_))));
    assert!(matches!(decode(br#"{"type": "1"}"#), Err(DecodeError::NotJson(_))));
    assert!(matches!(decode(b""), Err(DecodeError::NotJson(_))));
}

#[test]
fn a_message_holds_records_each_ended_by_the_separator() {
    let mut message = record(r#"{"type":6}"#);
    message.extend(record(r#"{"type":3,"invocationId":"1","result":"a\u001eb"}"#));
    let split: Vec<_> = records(&message).collect();
    assert_eq!(
        split,
        vec![Ok(&br#"{"type":6}"#[..]), Ok(&br#"{"type":3,"invocationId":"1","result":"a\u001eb"}"#[..])]
    );
    let unterminated: Vec<_> = records(br#"{"type":6}"#).collect();
    assert_eq!(unterminated, vec![Err(DecodeError::Unterminated)]);
}

#[test]
fn the_handshake_is_accepted_or_refused_with_the_servers_words() {
    let mut request = Vec::new();
    encode_handshake(&mut request);
    assert_eq!(request, record(r#"{"protocol":"json","version":1}"#));
    assert_eq!(decode_handshake(b"{}"), Ok(None));
    assert_eq!(
        decode_handshake(br#"{"error":"The protocol 'foo' is not supported."}"#),
        Ok(Some(Cow::Borrowed("The protocol 'foo' is not supported.")))
    );
    assert!(decode_handshake(b"nope").is_err());
}

#[test]
fn invocations_pings_and_closes_encode_as_the_specification_writes_them() {
    let mut out = Vec::new();
    encode_invocation(&mut out, Some("123"), "Send", &[b"42", b"\"Test Message\""]);
    assert_eq!(
        out,
        record(r#"{"type":1,"invocationId":"123","target":"Send","arguments":[42,"Test Message"]}"#)
    );
    out.clear();
    encode_invocation(&mut out, None, "Se\"nd", &[]);
    assert_eq!(out, record(r#"{"type":1,"target":"Se\"nd","arguments":[]}"#));
    let Ok(HubMessage::Invocation { target, .. }) = decode(&out[..out.len() - 1]) else { panic!("{out:?}") };
    assert_eq!(target, "Se\"nd");
    out.clear();
    encode_ping(&mut out);
    encode_close(&mut out);
    let mut both = record(r#"{"type":6}"#);
    both.extend(record(r#"{"type":7}"#));
    assert_eq!(out, both);
}
