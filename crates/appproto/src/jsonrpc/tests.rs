//! Unit tests of the JSON-RPC codec: the exact JSON of every encoder, every response and
//! notification shape (including rpc-websockets' events and its real error replies), ids of
//! every kind, and messages that are not JSON-RPC.

use std::borrow::Cow;

use super::*;

fn encoded(write: impl FnOnce(&mut Vec<u8>)) -> String {
    let mut out = Vec::new();
    write(&mut out);
    String::from_utf8(out).unwrap()
}

#[test]
fn requests_and_notifications_are_the_json_the_specification_defines() {
    assert_eq!(
        encoded(|out| encode_request(out, &Id::Number(1), "echo", Some(r#"{"ts":5}"#))),
        r#"{"jsonrpc":"2.0","method":"echo","params":{"ts":5},"id":1}"#
    );
    assert_eq!(
        encoded(|out| encode_request(out, &Id::Str("a\"1".into()), "ping", None)),
        r#"{"jsonrpc":"2.0","method":"ping","id":"a\"1"}"#
    );
    assert_eq!(
        encoded(|out| encode_notification(out, "log", Some("[1,2]"))),
        r#"{"jsonrpc":"2.0","method":"log","params":[1,2]}"#
    );
    assert_eq!(
        encoded(|out| encode_subscribe(out, &Id::Number(2), &["t0", "t1"])),
        r#"{"jsonrpc":"2.0","method":"rpc.on","params":["t0","t1"],"id":2}"#
    );
    assert_eq!(
        encoded(|out| encode_unsubscribe(out, &Id::Number(3), &["t0"])),
        r#"{"jsonrpc":"2.0","method":"rpc.off","params":["t0"],"id":3}"#
    );
}

#[test]
fn results_borrow_their_json_and_ids_of_every_kind_are_read() {
    let result = decode(br#"{"jsonrpc":"2.0","result":{"ts":5},"id":1}"#).unwrap();
    assert_eq!(result, Message::Result { id: Id::Number(1), result: r#"{"ts":5}"# });
    let null_result = decode(br#"{"jsonrpc":"2.0","result":null,"id":"x"}"#).unwrap();
    let Message::Result { id: Id::Str(id), result } = null_result else { panic!("result") };
    assert!(matches!(id, Cow::Borrowed("x")));
    assert_eq!(result, "null");
    let other = decode(br#"{"jsonrpc":"2.0","result":1,"id":-4}"#).unwrap();
    assert_eq!(other, Message::Result { id: Id::Other("-4"), result: "1" });
}

#[test]
fn errors_carry_code_message_and_data() {
    let text = br#"{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":1}"#;
    let expected =
        Message::Error { id: Id::Number(1), code: -32601, message: "Method not found".into(), data: None };
    assert_eq!(decode(text).unwrap(), expected);
    assert_eq!(error_code_name(-32601), "method_not_found");
    let thrown =
        br#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"Error","data":"unknown topic"},"id":null}"#;
    let Message::Error { id, code, data, .. } = decode(thrown).unwrap() else { panic!("error") };
    assert_eq!((id, code, data), (Id::Null, -32000, Some(r#""unknown topic""#)));
    assert_eq!(decode(br#"{"jsonrpc":"2.0","error":{"code":"x"},"id":1}"#), Err(DecodeError::BadErrorObject));
}

#[test]
fn every_standard_error_code_has_a_name() {
    let names: Vec<_> = [-32700, -32600, -32601, -32602, -32603, -32000, -32099, -32100, 7]
        .into_iter()
        .map(error_code_name)
        .collect();
    assert_eq!(
        names,
        [
            "parse_error",
            "invalid_request",
            "method_not_found",
            "invalid_params",
            "internal_error",
            "server_error",
            "server_error",
            "application_error",
            "application_error"
        ]
    );
}

#[test]
fn notifications_and_rpc_websockets_events_are_told_apart() {
    let notification = decode(br#"{"jsonrpc":"2.0","method":"tick","params":[1]}"#).unwrap();
    assert_eq!(notification, Message::Notification { method: "tick".into(), params: Some("[1]") });
    let event = decode(br#"{"notification":"t0","params":{"topic":"t0","payload":"x"}}"#).unwrap();
    assert_eq!(event, Message::Event { name: "t0".into(), params: Some(r#"{"topic":"t0","payload":"x"}"#) });
}

#[test]
fn anything_else_is_an_error_that_says_what_it_lacks() {
    assert!(matches!(decode(b"[]"), Err(DecodeError::NotJson(_))));
    assert!(matches!(decode(b"{"), Err(DecodeError::NotJson(_))));
    assert_eq!(decode(br#"{"result":1,"id":1}"#), Err(DecodeError::NotJsonRpc("no \"jsonrpc\":\"2.0\"")));
    assert_eq!(
        decode(br#"{"jsonrpc":"1.0","result":1,"id":1}"#),
        Err(DecodeError::NotJsonRpc("no \"jsonrpc\":\"2.0\""))
    );
    assert_eq!(
        decode(br#"{"jsonrpc":"2.0","result":1,"error":{"code":1,"message":""},"id":1}"#),
        Err(DecodeError::NotJsonRpc("both a result and an error"))
    );
    assert_eq!(
        decode(br#"{"jsonrpc":"2.0","result":1}"#),
        Err(DecodeError::NotJsonRpc("a result without an id"))
    );
    assert_eq!(
        decode(br#"{"jsonrpc":"2.0","id":1}"#),
        Err(DecodeError::NotJsonRpc("neither a result, an error nor a method"))
    );
    assert_eq!(
        decode(br#"{"jsonrpc":"2.0","method":"m","id":1}"#),
        Err(DecodeError::ServerRequest("m".into()))
    );
}
