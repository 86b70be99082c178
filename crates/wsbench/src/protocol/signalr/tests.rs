//! The SignalR session against messages as the hub protocol's specification and aiosignalr
//! 0.1.1 write them.

use std::time::{Duration, Instant};

use super::*;
use crate::protocol::tests::{Heard, setup};

const RS: char = '\u{1e}';

fn session(usage: Use, options: &Options) -> Box<dyn Session> {
    SignalR.session(&setup(usage, options))
}

fn receive(session: &mut dyn Session, message: &str, heard: &mut Heard) {
    session.receive(message.as_bytes(), false, Instant::now(), heard);
}

fn handshaken(usage: Use) -> (Box<dyn Session>, Heard) {
    handshaken_with(usage, &Options::default())
}

fn handshaken_with(usage: Use, options: &Options) -> (Box<dyn Session>, Heard) {
    let mut session = session(usage, options);
    let mut heard = Heard::default();
    session.open(Instant::now(), &mut heard);
    assert_eq!(heard.sent_text(0), format!(r#"{{"protocol":"json","version":1}}{RS}"#));
    assert!(!session.ready());
    receive(session.as_mut(), &format!("{{}}{RS}"), &mut heard);
    assert!(session.ready());
    assert_eq!(heard.ready, 1);
    (session, Heard::default())
}

#[test]
fn an_echo_invokes_the_hub_method_and_its_completion_is_the_reply() {
    let (mut session, mut heard) = handshaken(Use::Requests);
    session.request(7, b"hi \"there\"", &mut heard);
    assert_eq!(
        heard.sent_text(0),
        format!(r#"{{"type":1,"invocationId":"7","target":"Echo","arguments":["hi \"there\""]}}{RS}"#)
    );
    let two = format!(
        r#"{{"type":3,"invocationId":"7","result":"hi \"there\""}}{RS}{{"type":6}}{RS}{{"type":3,"invocationId":"8","error":"It didn't work!"}}{RS}"#
    );
    receive(session.as_mut(), &two, &mut heard);
    assert_eq!(heard.replies, [(Some(7), b"hi \"there\"".to_vec())]);
    assert_eq!(heard.other, 1, "the server's ping");
    assert_eq!(heard.errors.len(), 1);
    let (cause, detail, seq, fatal) = &heard.errors[0];
    assert_eq!((cause.as_str(), *seq, *fatal), ("signalr_completion_error", Some(8), false));
    assert!(detail.contains("It didn't work!"), "{detail}");
}

#[test]
fn a_subscriber_joins_its_group_and_the_hubs_invocations_are_deliveries() {
    let (mut session, mut heard) = handshaken(Use::PubSub);
    session.subscribe("t3", &mut heard);
    assert_eq!(
        heard.sent_text(0),
        format!(r#"{{"type":1,"invocationId":"join-t3","target":"Join","arguments":["t3"]}}{RS}"#)
    );
    receive(session.as_mut(), &format!(r#"{{"type":3,"invocationId":"join-t3"}}{RS}"#), &mut heard);
    assert_eq!(heard.subscribed, ["t3"]);
    let delivery = format!(r#"{{"type":1,"target":"Message","arguments":[{{"id":"0-1"}}]}}{RS}"#);
    receive(session.as_mut(), &delivery, &mut heard);
    assert_eq!(heard.deliveries, [(String::new(), br#"[{"id":"0-1"}]"#.to_vec())]);
    session.publish("t3", br#"{"id":"0-2"}"#, &mut heard);
    assert_eq!(
        heard.sent_text(1),
        format!(
            r#"{{"type":1,"invocationId":"p1","target":"Publish","arguments":["t3",{{"id":"0-2"}}]}}{RS}"#
        )
    );
    receive(session.as_mut(), &format!(r#"{{"type":3,"invocationId":"p1"}}{RS}"#), &mut heard);
    assert!(heard.errors.is_empty(), "{:?}", heard.errors);
}

#[test]
fn a_refused_join_is_counted_by_its_cause() {
    let (mut session, mut heard) = handshaken(Use::PubSub);
    session.subscribe("t1", &mut heard);
    let refused = format!(r#"{{"type":3,"invocationId":"join-t1","error":"not allowed"}}{RS}"#);
    receive(session.as_mut(), &refused, &mut heard);
    assert!(heard.subscribed.is_empty());
    assert_eq!(heard.errors.len(), 1, "{:?}", heard.errors);
    assert_eq!(heard.errors[0].0, "signalr_completion_error");
    assert!(heard.errors[0].1.contains("not allowed"));
}

#[test]
fn a_refused_handshake_and_the_servers_close_end_the_connection_by_cause() {
    let mut refused = session(Use::Requests, &Options::default());
    let mut heard = Heard::default();
    refused.open(Instant::now(), &mut heard);
    receive(
        refused.as_mut(),
        &format!(r#"{{"error":"The protocol 'json' is not supported."}}{RS}"#),
        &mut heard,
    );
    assert!(!refused.ready());
    assert_eq!(heard.errors[0].0, "signalr_handshake_error");
    assert!(heard.errors[0].3);

    let (mut closed, mut heard) = handshaken(Use::Requests);
    receive(closed.as_mut(), &format!(r#"{{"type":7,"error":"Server is shutting down."}}{RS}"#), &mut heard);
    assert_eq!(heard.errors.len(), 1);
    assert_eq!(heard.errors[0].0, "signalr_close_error");
    assert!(heard.errors[0].1.contains("Server is shutting down."));
    assert!(heard.errors[0].3);
    assert!(closed.next_timer().is_none());

    let (mut plain, mut heard) = handshaken(Use::Requests);
    receive(plain.as_mut(), &format!(r#"{{"type":7}}{RS}"#), &mut heard);
    assert_eq!(heard.errors[0].0, "signalr_closed");
}

#[test]
fn a_binary_or_unterminated_message_is_no_hub_message() {
    let mut binary = session(Use::Requests, &Options::default());
    let mut heard = Heard::default();
    binary.open(Instant::now(), &mut heard);
    binary.receive(format!("{{}}{RS}").as_bytes(), true, Instant::now(), &mut heard);
    assert_eq!(heard.errors[0].0, "signalr_malformed");
    assert!(heard.errors[0].3, "before the handshake a stranger cannot go on");

    let (mut session, mut heard) = handshaken(Use::Requests);
    receive(session.as_mut(), r#"{"type":6}"#, &mut heard);
    assert_eq!(heard.errors[0].0, "signalr_malformed");
    assert!(heard.errors[0].1.contains("record separator"), "{}", heard.errors[0].1);
}

#[test]
fn the_client_pings_after_its_silence_and_gives_a_silent_server_up() {
    let (mut session, mut heard) = handshaken(Use::Requests);
    let due = session.next_timer().expect("a keep-alive");
    let later = Instant::now() + Duration::from_secs(KEEP_ALIVE_SECS);
    assert!(due <= later + Duration::from_secs(1));
    session.on_timer(later + Duration::from_secs(1), &mut heard);
    assert_eq!(heard.sent_text(0), format!(r#"{{"type":6}}{RS}"#));
    assert!(heard.errors.is_empty());
    session.on_timer(Instant::now() + Duration::from_secs(SERVER_TIMEOUT_SECS + 1), &mut heard);
    assert_eq!(heard.errors.len(), 1);
    assert_eq!(heard.errors[0].0, "signalr_server_timeout");
}

#[test]
fn the_server_ending_the_connection_before_the_handshake_is_said() {
    let mut session = session(Use::Requests, &Options::default());
    let mut heard = Heard::default();
    session.open(Instant::now(), &mut heard);
    session.ended_while_opening(Some((4401, "invalid access token")), &mut heard);
    assert_eq!(heard.errors[0].0, "signalr_no_handshake");
    assert!(heard.errors[0].1.contains("4401"));
}

#[test]
fn options_are_checked_before_load() {
    assert!(SignalR.check(&Options::with([("hub-method", "Send Message".into())])).is_err());
    assert!(SignalR.check(&Options::with([("client-method", "".into())])).is_err());
    assert!(SignalR.check(&Options::with([("join-method", "AddToGroup".into())])).is_ok());
    assert_eq!(SignalR.path(""), Some("/hub".to_owned()));
    assert_eq!(SignalR.path("/chat"), None);
}

/// A stream session of `Ticks` with `arguments` (when given), handshaken, its stream
/// invocation sent and checked.
fn streaming(arguments: Option<&str>) -> (Box<dyn Session>, Heard) {
    let mut given = vec![("stream-method", "Ticks".into())];
    given.extend(arguments.map(|arguments| ("stream-arguments", arguments.into())));
    let options = Options::with(given);
    assert_eq!(SignalR.check(&options), Ok(()));
    let (mut session, mut heard) = handshaken_with(Use::Stream, &options);
    session.subscribe_stream(&mut heard);
    let arguments = arguments.unwrap_or("[]");
    let invocation =
        format!(r#"{{"type":4,"invocationId":"s1","target":"Ticks","arguments":{arguments}}}{RS}"#);
    assert_eq!(heard.sent_text(0), invocation);
    (session, heard)
}

#[test]
fn a_stream_invocation_delivers_its_items_and_is_cancelled_at_the_end() {
    let (mut session, mut heard) = streaming(Some("[0, 100]"));
    let items = format!(
        r#"{{"type":2,"invocationId":"s1","item":{{"seq":1}}}}{RS}{{"type":2,"invocationId":"other","item":2}}{RS}{{"type":2,"invocationId":"s1","item":{{"seq":2}}}}{RS}"#
    );
    receive(session.as_mut(), &items, &mut heard);
    let delivered: Vec<&[u8]> = heard.deliveries.iter().map(|(_, item)| item.as_slice()).collect();
    assert_eq!(delivered, [&br#"{"seq":1}"#[..], br#"{"seq":2}"#]);
    assert_eq!(heard.other, 1, "another invocation's item");
    session.close(&mut heard);
    assert_eq!(heard.sent_text(1), format!(r#"{{"type":5,"invocationId":"s1"}}{RS}"#));
}

#[test]
fn a_stream_the_hub_completes_is_not_cancelled_and_its_error_is_counted() {
    let (mut session, mut heard) = streaming(None);
    let failed = format!(
        r#"{{"type":3,"invocationId":"s1","error":"An error occurred on the server while streaming results."}}{RS}"#
    );
    receive(session.as_mut(), &failed, &mut heard);
    assert_eq!(heard.errors.len(), 1);
    let (cause, detail, _, fatal) = &heard.errors[0];
    assert_eq!((cause.as_str(), *fatal), ("signalr_stream_error", false));
    assert!(detail.contains("while streaming results"), "{detail}");
    receive(session.as_mut(), &format!(r#"{{"type":2,"invocationId":"s1","item":3}}{RS}"#), &mut heard);
    assert!(heard.deliveries.is_empty(), "an item after the completion is no delivery");
    session.close(&mut heard);
    assert_eq!(heard.sent.len(), 1, "nothing to cancel");
}

#[test]
fn without_a_stream_method_the_hubs_invocations_are_the_stream() {
    let (mut session, mut heard) = handshaken(Use::Stream);
    session.subscribe_stream(&mut heard);
    assert!(heard.sent.is_empty());
    receive(
        session.as_mut(),
        &format!(r#"{{"type":1,"target":"Message","arguments":[{{"seq":4}}]}}{RS}"#),
        &mut heard,
    );
    assert_eq!(heard.deliveries, [(String::new(), br#"[{"seq":4}]"#.to_vec())]);
}

#[test]
fn stream_arguments_are_a_json_array_for_a_stream_method() {
    let check = |given: &[(&'static str, &str)]| {
        SignalR.check(&Options::with(given.iter().map(|(key, value)| (*key, (*value).into()))))
    };
    assert_eq!(check(&[("stream-method", "Ticks"), ("stream-arguments", "[\"{data.room}\", 1]")]), Ok(()));
    let not_array = check(&[("stream-method", "Ticks"), ("stream-arguments", "{\"a\":1}")]).unwrap_err();
    assert!(not_array.contains("give a JSON array"), "{not_array}");
    let alone = check(&[("stream-arguments", "[]")]).unwrap_err();
    assert!(alone.contains("without --stream-method"), "{alone}");
    let spaced = check(&[("stream-method", "Tick s")]).unwrap_err();
    assert!(spaced.contains("--stream-method"), "{spaced}");
}

/// A session of the MessagePack hub protocol, its handshake answered (as text, as hub.py
/// sends it).
fn packed(usage: Use, given: Vec<(&'static str, toml::Value)>) -> (Box<dyn Session>, Heard) {
    let mut given = given;
    given.push(("hub-protocol", "messagepack".into()));
    let options = Options::with(given);
    assert_eq!(SignalR.check(&options), Ok(()));
    let mut session = session(usage, &options);
    let mut heard = Heard::default();
    session.open(Instant::now(), &mut heard);
    assert_eq!(heard.sent[0], (false, b"{\"protocol\":\"messagepack\",\"version\":1}\x1e".to_vec()));
    receive(session.as_mut(), &format!("{{}}{RS}"), &mut heard);
    assert!(session.ready());
    (session, Heard::default())
}

#[test]
fn messagepack_echoes_are_binary_invocations_answered_by_their_completion() {
    let (mut session, mut heard) = packed(Use::Requests, Vec::new());
    session.request(7, b"hi", &mut heard);
    let body = [0x96, 0x01, 0x80, 0xa1, b'7', 0xa4, b'E', b'c', b'h', b'o', 0x91, 0xa2, b'h', b'i', 0x90];
    assert_eq!(heard.sent[0], (false, [&[body.len() as u8][..], &body].concat()));
    let completion = [0x95, 0x03, 0x80, 0xa1, b'7', 0x03, 0xa2, b'h', b'i'];
    let error = [0x95, 0x03, 0x80, 0xa1, b'8', 0x01, 0xa4, b'b', b'o', b'o', b'm'];
    let message = [&[9u8][..], &completion, &[2, 0x91, 0x06], &[11], &error].concat();
    session.receive(&message, true, Instant::now(), &mut heard);
    assert_eq!(heard.replies, [(Some(7), b"hi".to_vec())]);
    assert_eq!(heard.other, 1, "the ping");
    assert_eq!(heard.errors.len(), 1);
    assert_eq!((heard.errors[0].0.as_str(), heard.errors[0].2), ("signalr_completion_error", Some(8)));
    session.receive(b"{\"type\":6}\x1e", false, Instant::now(), &mut heard);
    assert_eq!(heard.errors[1].0, "signalr_malformed", "a text message after the handshake");
}

#[test]
fn messagepack_deliveries_and_stream_items_are_read_as_json() {
    let (mut session, mut heard) = packed(Use::PubSub, Vec::new());
    session.publish("t1", br#"{"seq":3,"s":"x"}"#, &mut heard);
    let (text, sent) = &heard.sent[0];
    assert!(!text);
    let mut map = Vec::new();
    wsbench_appproto::signalr::msgpack::write_json(&mut map, &serde_json::json!({"seq": 3, "s": "x"}));
    assert!(sent.windows(map.len()).any(|w| w == map), "the payload as a map: {sent:?}");
    let group = [&[0x96, 0x01, 0x80, 0xc0, 0xa7][..], b"message", &[0x91], &map, &[0x90]].concat();
    session.receive(&[&[group.len() as u8][..], &group].concat(), true, Instant::now(), &mut heard);
    assert_eq!(heard.deliveries, [(String::new(), br#"[{"s":"x","seq":3}]"#.to_vec())]);

    let given = vec![("stream-method", "Ticks".into()), ("stream-arguments", "[0, 10]".into())];
    let (mut session, mut heard) = packed(Use::Stream, given);
    session.subscribe_stream(&mut heard);
    let body =
        [0x96, 0x04, 0x80, 0xa2, b's', b'1', 0xa5, b'T', b'i', b'c', b'k', b's', 0x92, 0x00, 0x0a, 0x90];
    assert_eq!(heard.sent[0], (false, [&[body.len() as u8][..], &body].concat()));
    let item = [0x94, 0x02, 0x80, 0xa2, b's', b'1', 0x81, 0xa3, b's', b'e', b'q', 0x05];
    session.receive(&[&[item.len() as u8][..], &item].concat(), true, Instant::now(), &mut heard);
    assert_eq!(heard.deliveries, [(String::new(), br#"{"seq":5}"#.to_vec())]);
    session.close(&mut heard);
    let cancel = [0x93, 0x05, 0x80, 0xa2, b's', b'1'];
    assert_eq!(heard.sent[1], (false, [&[cancel.len() as u8][..], &cancel].concat()));
}

#[test]
fn the_hub_protocol_is_json_or_messagepack_and_binary_needs_messagepack() {
    let wrong = SignalR.check(&Options::with([("hub-protocol", "protobuf".into())])).unwrap_err();
    assert!(wrong.contains("give json or messagepack"), "{wrong}");
    let mut binary = Options::with([("hub-protocol", "messagepack".into())]);
    binary.binary = true;
    assert_eq!(SignalR.check(&binary), Ok(()));
    let json = Options { binary: true, ..Options::default() };
    assert!(SignalR.check(&json).unwrap_err().contains("--hub-protocol messagepack"));
}
