//! Unit tests of the graphql-transport-ws codec: every message type both ways, ids that
//! borrow, errors carrying their first message, and close code names.

use std::borrow::Cow;

use super::*;

fn encoded(write: impl FnOnce(&mut Vec<u8>)) -> String {
    let mut out = Vec::new();
    write(&mut out);
    String::from_utf8(out).unwrap()
}

#[test]
fn client_messages_are_the_json_the_protocol_defines() {
    assert_eq!(encoded(|out| encode_connection_init(out, None)), r#"{"type":"connection_init"}"#);
    assert_eq!(
        encoded(|out| encode_connection_init(out, Some(r#"{"token":"t"}"#))),
        r#"{"type":"connection_init","payload":{"token":"t"}}"#
    );
    assert_eq!(encoded(|out| encode_ping(out, None)), r#"{"type":"ping"}"#);
    assert_eq!(encoded(|out| encode_pong(out, Some("{}"))), r#"{"type":"pong","payload":{}}"#);
    assert_eq!(encoded(|out| encode_complete(out, "1")), r#"{"type":"complete","id":"1"}"#);
    let subscribe = Subscribe {
        query: "subscription ($n: Int!) { ticks(count: $n) }\n",
        variables: Some(r#"{"n":3}"#),
        operation_name: None,
    };
    assert_eq!(
        encoded(|out| encode_subscribe(out, "7", &subscribe)),
        r#"{"type":"subscribe","id":"7","payload":{"query":"subscription ($n: Int!) { ticks(count: $n) }\n","variables":{"n":3}}}"#
    );
    let named = Subscribe { query: "query Q { a }", variables: None, operation_name: Some("Q") };
    let text = encoded(|out| encode_subscribe(out, "x\"y", &named));
    let Message::Subscribe { id, payload } = decode(text.as_bytes()).unwrap() else { panic!("{text}") };
    assert_eq!(id, "x\"y");
    assert_eq!(payload, r#"{"query":"query Q { a }","operationName":"Q"}"#);
}

#[test]
fn server_messages_are_decoded_into_borrowed_views() {
    assert_eq!(decode(br#"{"type":"connection_ack"}"#), Ok(Message::ConnectionAck { payload: None }));
    let Message::Ping { payload: Some(payload) } = decode(br#"{"type":"ping","payload":null}"#).unwrap()
    else {
        panic!("ping")
    };
    assert_eq!(payload, "null");
    assert_eq!(decode(br#"{"type":"pong"}"#), Ok(Message::Pong { payload: None }));
    let next = decode(br#"{"id":"1","type":"next","payload":{"data":{"ticks":2}}}"#).unwrap();
    let Message::Next { id, payload } = next else { panic!("next") };
    assert!(matches!(id, Cow::Borrowed("1")));
    assert_eq!(payload, r#"{"data":{"ticks":2}}"#);
    assert_eq!(execution_error(payload), None);
    assert_eq!(decode(br#"{"id":"1","type":"complete"}"#), Ok(Message::Complete { id: "1".into() }));
}

#[test]
fn an_error_carries_its_first_message() {
    let text = br#"{"id":"2","type":"error","payload":[{"message":"Cannot query field \"nope\" on type \"Query\".","locations":[{"line":1,"column":3}]},{"message":"second"}]}"#;
    let Message::Error { id, message, .. } = decode(text).unwrap() else { panic!("error") };
    assert_eq!((id.as_ref(), message.as_ref()), ("2", "Cannot query field \"nope\" on type \"Query\"."));
    let empty = decode(br#"{"id":"2","type":"error","payload":[]}"#).unwrap();
    assert!(matches!(empty, Message::Error { message, .. } if message.is_empty()));
    assert_eq!(decode(br#"{"id":"2","type":"error","payload":{}}"#), Err(DecodeError::BadErrorPayload));
}

#[test]
fn a_result_s_data_and_its_only_field_are_found() {
    let payload = r#"{"data":{"echo":"a \"quoted\" line"}}"#;
    let data = result_data(payload).unwrap();
    assert_eq!(data, r#"{"echo":"a \"quoted\" line"}"#);
    assert_eq!(only_field(data), Some(r#""a \"quoted\" line""#));
    assert_eq!(only_field(r#"{"ticks":2}"#), Some("2"));
    assert_eq!(only_field(r#"{"a":1,"b":{"c":[2]}}"#), None);
    assert_eq!(only_field("{}"), None);
    assert_eq!(only_field(r#"["a"]"#), None);
    assert_eq!(only_field(r#"{"a":1"#), None);
    assert_eq!(result_data(r#"{"data":null,"errors":[{"message":"boom"}]}"#), None);
    assert_eq!(result_data(r#"{"errors":[]}"#), None);
    assert_eq!(result_data("[]"), None);
}

#[test]
fn a_next_with_errors_names_the_first() {
    let boom = execution_error(r#"{"data":null,"errors":[{"message":"boom"}]}"#);
    assert_eq!(boom, Some((Cow::Borrowed("boom"), None)));
}

#[test]
fn messages_that_break_the_protocol_are_errors() {
    assert!(matches!(decode(b"not json"), Err(DecodeError::NotJson(_))));
    assert!(matches!(decode(br#"["connection_ack"]"#), Err(DecodeError::NotJson(_))));
    assert!(matches!(decode(br#"{"id":"1"}"#), Err(DecodeError::NotJson(_))));
    assert_eq!(decode(br#"{"type":"data","id":"1"}"#), Err(DecodeError::UnknownType("data".into())));
    assert_eq!(decode(br#"{"type":"next","payload":{}}"#), Err(DecodeError::MissingId("next")));
    assert_eq!(decode(br#"{"type":"next","id":"1"}"#), Err(DecodeError::MissingPayload("next")));
    assert_eq!(decode(br#"{"type":"complete"}"#), Err(DecodeError::MissingId("complete")));
}

#[test]
fn close_codes_of_graphql_ws_are_named() {
    assert_eq!(close_code_name(4406), Some("subprotocol_not_acceptable"));
    assert_eq!(close_code_name(4400), Some("bad_request"));
    assert_eq!(close_code_name(1000), None);
}

#[test]
fn an_operation_given_whole_is_written_as_its_payload() {
    let text = encoded(|out| {
        encode_subscribe_payload(out, "t3", |out| out.extend_from_slice(br#"{"query":"subscription { m }"}"#))
    });
    assert_eq!(text, r#"{"type":"subscribe","id":"t3","payload":{"query":"subscription { m }"}}"#);
    let Message::Subscribe { id, payload } = decode(text.as_bytes()).unwrap() else { panic!("{text}") };
    assert_eq!((id.as_ref(), payload), ("t3", r#"{"query":"subscription { m }"}"#));
}

#[test]
fn the_innermost_field_is_found_through_objects_of_one_field() {
    assert_eq!(innermost_field(r#"{"room":{"body":"a \"b\""}}"#), r#""a \"b\"""#);
    assert_eq!(innermost_field(r#"{"messages":"x"}"#), r#""x""#);
    assert_eq!(innermost_field(r#"{"room":{"body":"x","at":1}}"#), r#"{"body":"x","at":1}"#);
    assert_eq!(innermost_field("{}"), "{}");
}

#[test]
fn an_error_s_extensions_code_is_its_cause() {
    let error = br#"{"id":"1","type":"error","payload":[{"message":"no","extensions":{"code":"FORBIDDEN","http":{"status":403}}}]}"#;
    let Message::Error { message, code, .. } = decode(error).unwrap() else { panic!() };
    assert_eq!((message.as_ref(), code.as_deref()), ("no", Some("FORBIDDEN")));
    let numeric = br#"{"id":"1","type":"error","payload":[{"message":"no","extensions":{"code":403}}]}"#;
    let Message::Error { code, .. } = decode(numeric).unwrap() else { panic!() };
    assert_eq!(code, None, "a code that is no string is read past");
    let next = r#"{"data":null,"errors":[{"message":"bad","extensions":{"code":"validation-failed"}}]}"#;
    assert_eq!(execution_error(next), Some((Cow::Borrowed("bad"), Some(Cow::Borrowed("validation-failed")))));
    let mut cause = String::new();
    assert_eq!(error_cause(&mut cause, Some("validation-failed")), "graphql_error_validation_failed");
    assert_eq!(error_cause(&mut cause, Some("FORBIDDEN")), "graphql_error_forbidden");
    assert_eq!(error_cause(&mut cause, None), "graphql_error");
    assert_eq!(error_cause(&mut cause, Some(&"X".repeat(500))).len(), "graphql_error_".len() + MAX_CODE);
}
