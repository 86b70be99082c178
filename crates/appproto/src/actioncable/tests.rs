//! The Action Cable codec against messages as Action Cable 6.1 writes them (copied from
//! what Debian's ruby-actioncable under puma sent) and commands as Rails' JavaScript client
//! writes them.

use super::*;

fn one(message: &str) -> ServerMessage<'_> {
    decode(message.as_bytes()).unwrap_or_else(|error| panic!("{message}: {error}"))
}

#[test]
fn the_servers_own_messages_are_read_by_their_type() {
    assert_eq!(one(r#"{"type":"welcome"}"#), ServerMessage::Welcome);
    assert_eq!(one(r#"{"type":"welcome","sid":"abc"}"#), ServerMessage::Welcome);
    assert_eq!(one(r#"{"type":"ping","message":1795887365}"#), ServerMessage::Ping);
    assert_eq!(
        one(r#"{"type":"disconnect","reason":"unauthorized","reconnect":false}"#),
        ServerMessage::Disconnect { reason: "unauthorized".into(), reconnect: false }
    );
    assert_eq!(
        one(r#"{"type":"disconnect","reason":"server_restart"}"#),
        ServerMessage::Disconnect { reason: "server_restart".into(), reconnect: true }
    );
    assert_eq!(
        one(r#"{"type":"confirm_subscription_v2"}"#),
        ServerMessage::Unknown { kind: "confirm_subscription_v2".into() }
    );
}

#[test]
fn subscriptions_are_confirmed_or_rejected_by_their_identifier_as_sent() {
    let identifier = r#"{"channel":"BenchChannel","room":"1"}"#;
    assert_eq!(
        one(
            r#"{"identifier":"{\"channel\":\"BenchChannel\",\"room\":\"1\"}","type":"confirm_subscription"}"#
        ),
        ServerMessage::Confirmed { identifier: identifier.into() }
    );
    assert_eq!(
        one(r#"{"identifier":"{\"channel\":\"GuardedChannel\"}","type":"reject_subscription"}"#),
        ServerMessage::Rejected { identifier: r#"{"channel":"GuardedChannel"}"#.into() }
    );
    assert_eq!(decode(br#"{"type":"confirm_subscription"}"#), Err(DecodeError::NoIdentifier("confirmation")));
}

#[test]
fn what_a_channel_transmits_is_kept_as_its_raw_json() {
    let message = r#"{"identifier":"{\"channel\":\"BenchChannel\",\"room\":\"1\"}","message":{"action":"echo","payload":"hi \"x\""}}"#;
    assert_eq!(
        one(message),
        ServerMessage::Message {
            identifier: r#"{"channel":"BenchChannel","room":"1"}"#.into(),
            message: r#"{"action":"echo","payload":"hi \"x\""}"#,
        }
    );
    assert_eq!(
        one(r#"{"identifier":"x","message":null}"#),
        ServerMessage::Message { identifier: "x".into(), message: "null" }
    );
    assert_eq!(decode(br#"{"message":1}"#), Err(DecodeError::NoIdentifier("message")));
}

#[test]
fn what_is_not_action_cable_is_refused_by_why() {
    assert!(matches!(decode(b"hello"), Err(DecodeError::NotJson(_))));
    assert!(matches!(decode(b"[1]"), Err(DecodeError::NotJson(_))));
    assert!(matches!(decode(b"{\"type\":"), Err(DecodeError::NotJson(_))));
    assert_eq!(decode(b"{}"), Err(DecodeError::Unrecognised));
    assert_eq!(decode(br#"{"identifier":"x"}"#), Err(DecodeError::Unrecognised));
}

#[test]
fn commands_carry_the_identifier_and_data_as_json_strings() {
    let mut identifier = Vec::new();
    write_identifier(&mut identifier, "BenchChannel", r#"{"room":"7"}"#);
    assert_eq!(identifier, br#"{"channel":"BenchChannel","room":"7"}"#);
    let mut bare = Vec::new();
    write_identifier(&mut bare, "Ticker\"Channel", " { } ");
    assert_eq!(bare, br#"{"channel":"Ticker\"Channel"}"#);
    let identifier = std::str::from_utf8(&identifier).unwrap();

    let mut out = Vec::new();
    encode_subscribe(&mut out, identifier);
    assert_eq!(
        out,
        br#"{"command":"subscribe","identifier":"{\"channel\":\"BenchChannel\",\"room\":\"7\"}"}"#
    );
    out.clear();
    encode_unsubscribe(&mut out, identifier);
    assert_eq!(
        out,
        br#"{"command":"unsubscribe","identifier":"{\"channel\":\"BenchChannel\",\"room\":\"7\"}"}"#
    );
    let mut data = Vec::new();
    write_action(&mut data, "echo", r#""seq":3,"payload":"a\"b""#);
    assert_eq!(data, br#"{"action":"echo","seq":3,"payload":"a\"b"}"#);
    out.clear();
    encode_message(&mut out, r#"{"channel":"C"}"#, std::str::from_utf8(&data).unwrap());
    assert_eq!(
        out,
        br#"{"command":"message","identifier":"{\"channel\":\"C\"}","data":"{\"action\":\"echo\",\"seq\":3,\"payload\":\"a\\\"b\"}"}"#
    );
    data.clear();
    write_action(&mut data, "ping", "");
    assert_eq!(data, br#"{"action":"ping"}"#);
}

#[test]
fn a_command_the_server_would_read_decodes_to_what_was_written() {
    // The server parses the command, then its identifier and data as JSON again.
    let mut identifier = Vec::new();
    write_identifier(&mut identifier, "Bench", r#"{"room":"a\"b","n":[1]}"#);
    let identifier = String::from_utf8(identifier).unwrap();
    let mut out = Vec::new();
    encode_message(&mut out, &identifier, r#"{"action":"x","payload":"\u00e9\n"}"#);
    let command: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let inner: serde_json::Value = serde_json::from_str(command["identifier"].as_str().unwrap()).unwrap();
    assert_eq!(inner, serde_json::json!({"channel": "Bench", "room": "a\"b", "n": [1]}));
    let data: serde_json::Value = serde_json::from_str(command["data"].as_str().unwrap()).unwrap();
    assert_eq!(data, serde_json::json!({"action": "x", "payload": "é\n"}));
}

#[test]
fn an_actions_fields_are_read_back_from_what_the_channel_transmitted() {
    assert_eq!(action_fields(r#"{"action":"echo","seq":41,"payload":"x"}"#), (Some(41), Some(r#""x""#)));
    assert_eq!(action_fields(r#"{"payload":{"a":[1]}}"#), (None, Some(r#"{"a":[1]}"#)));
    assert_eq!(action_fields(r#"{"seq":"41","payload":null}"#), (None, Some("null")));
    assert_eq!(action_fields(r#"{"seq":-1}"#), (None, None));
    assert_eq!(action_fields("[1]"), (None, None));
    assert_eq!(action_fields("{"), (None, None));
}
