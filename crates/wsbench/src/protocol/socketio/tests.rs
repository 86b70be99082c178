//! The Socket.IO session through `Heard`: the opening and its deadlines, heartbeats, echo
//! requests as text and as attachments, rooms, and every way a server can go wrong (the
//! messages are socket.io 4.8's, as docs/peers.md records them).

use std::time::{Duration, Instant};

use super::*;
use crate::protocol::tests::{Heard, setup};

const OPEN: &[u8] =
    br#"0{"sid":"lv_VI97HAXpY6yYWAAAC","upgrades":[],"pingInterval":300,"pingTimeout":200,"maxPayload":1000000}"#;

/// A session of `usage` made at `start`, after the open packet and the namespace joined.
fn joined(usage: Use, options: &Options, start: Instant) -> (Box<dyn Session>, Heard) {
    let mut session = SocketIo.session(&setup(usage, options));
    let mut heard = Heard::default();
    session.open(start, &mut heard);
    assert!(heard.sent.is_empty(), "the server speaks first");
    session.receive(OPEN, false, start, &mut heard);
    assert_eq!(heard.sent_text(0), "40");
    assert!(!session.ready());
    session.receive(br#"40{"sid":"ZaHrA3"}"#, false, start, &mut heard);
    assert!(session.ready());
    assert_eq!(heard.ready, 1);
    heard.sent.clear();
    (session, heard)
}

fn receive(session: &mut Box<dyn Session>, heard: &mut Heard, message: &[u8]) {
    session.receive(message, false, Instant::now(), heard);
}

#[test]
fn the_namespace_is_joined_after_the_open_packet_and_left_at_the_end() {
    let start = Instant::now();
    let (mut session, mut heard) = joined(Use::Requests, &Options::default(), start);
    assert!(heard.errors.is_empty(), "{:?}", heard.errors);
    // The next ping is due within pingInterval + pingTimeout of the open packet.
    assert_eq!(session.next_timer(), Some(start + Duration::from_millis(500)));
    session.close(&mut heard);
    assert_eq!(heard.sent_text(0), "41");
}

#[test]
fn pings_are_answered_at_once_and_a_missing_one_ends_the_connection() {
    let start = Instant::now();
    let (mut session, mut heard) = joined(Use::Requests, &Options::default(), start);
    let later = start + Duration::from_millis(300);
    session.receive(b"2", false, later, &mut heard);
    assert_eq!(heard.sent_text(0), "3");
    assert_eq!(session.next_timer(), Some(later + Duration::from_millis(500)));
    session.on_timer(later + Duration::from_millis(499), &mut heard);
    assert!(heard.errors.is_empty(), "not due yet");
    session.on_timer(later + Duration::from_millis(500), &mut heard);
    let (cause, detail, seq, fatal) = &heard.errors[0];
    assert_eq!((cause.as_str(), *seq, *fatal), ("socketio_heartbeat_missed", None, true));
    assert!(detail.contains("500ms"), "{detail}");
    assert_eq!(session.next_timer(), None, "reported once");
}

#[test]
fn a_heartbeat_schedule_past_the_clocks_end_is_never_due_and_no_panic() {
    let mut session = SocketIo.session(&setup(Use::Requests, &Options::default()));
    let mut heard = Heard::default();
    session.open(Instant::now(), &mut heard);
    let open = format!(r#"0{{"sid":"x","pingInterval":{0},"pingTimeout":{0}}}"#, u64::MAX);
    receive(&mut session, &mut heard, open.as_bytes());
    assert_eq!(heard.sent_text(0), "40");
    let never = |at: Option<Instant>| at.is_none_or(|at| at > Instant::now() + Duration::from_secs(1 << 30));
    assert!(never(session.next_timer()));
    receive(&mut session, &mut heard, b"2");
    assert!(never(session.next_timer()));
    assert!(heard.errors.is_empty(), "{:?}", heard.errors);
}

#[test]
fn a_server_that_never_sends_the_open_packet_is_named_before_the_connect_timeout() {
    let start = Instant::now();
    let mut session = SocketIo.session(&setup(Use::Requests, &Options::default()));
    let mut heard = Heard::default();
    session.open(start, &mut heard);
    // Half the connect timeout (5 s in tests).
    assert_eq!(session.next_timer(), Some(start + Duration::from_millis(2500)));
    session.on_timer(start + Duration::from_millis(2500), &mut heard);
    let (cause, detail, _, fatal) = &heard.errors[0];
    assert_eq!((cause.as_str(), *fatal), ("socketio_no_open_packet", true));
    assert!(detail.contains("Socket.IO 4 server"), "{detail}");
}

#[test]
fn a_first_message_that_is_not_engine_io_ends_the_connection_with_its_start_quoted() {
    for (message, want) in [
        (
            &br#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"},"id":null}"#[..],
            "socketio_not_engine_io",
        ),
        (b"40", "socketio_not_engine_io"),
        (b"\xff\xfe", "socketio_not_engine_io"),
        (b"0{\"sid\":1}", "socketio_bad_open"),
    ] {
        let mut session = SocketIo.session(&setup(Use::Requests, &Options::default()));
        let mut heard = Heard::default();
        session.open(Instant::now(), &mut heard);
        receive(&mut session, &mut heard, message);
        let (cause, detail, _, fatal) = &heard.errors[0];
        assert_eq!((cause.as_str(), *fatal), (want, true), "{detail}");
        assert!(heard.sent.is_empty() && heard.ready == 0);
    }
    let mut session = SocketIo.session(&setup(Use::Requests, &Options::default()));
    let mut heard = Heard::default();
    receive(&mut session, &mut heard, &[b'x'; 500]);
    let detail = &heard.errors[0].1;
    assert!(detail.ends_with("\"…") && detail.len() < 200, "a long message is cut: {detail}");
}

#[test]
fn a_refused_namespace_is_a_fatal_connect_error_with_the_servers_words() {
    let mut session = SocketIo.session(&setup(Use::Requests, &Options::default()));
    let mut heard = Heard::default();
    session.open(Instant::now(), &mut heard);
    receive(&mut session, &mut heard, OPEN);
    receive(&mut session, &mut heard, br#"44{"message":"Not authorized"}"#);
    assert_eq!(heard.errors, [("socketio_connect_error".into(), "Not authorized".into(), None, true)]);
    assert_eq!(heard.ready, 0);
}

#[test]
fn the_servers_close_and_disconnect_end_the_connection() {
    let (mut session, mut heard) = joined(Use::Requests, &Options::default(), Instant::now());
    receive(&mut session, &mut heard, b"1");
    receive(&mut session, &mut heard, b"41");
    let causes: Vec<(&str, bool)> = heard.errors.iter().map(|e| (e.0.as_str(), e.3)).collect();
    assert_eq!(causes, [("socketio_engine_close", true), ("socketio_disconnect", true)]);
}

#[test]
fn an_echo_is_an_emit_acknowledged_with_the_payload() {
    let options = Options::default();
    let (mut session, mut heard) = joined(Use::Requests, &options, Instant::now());
    session.request(3, br#"{"ts":1,"seq":"a \"q\""}"#, &mut heard);
    assert_eq!(heard.sent_text(0), r#"423["echo","{\"ts\":1,\"seq\":\"a \\\"q\\\"\"}"]"#);
    receive(&mut session, &mut heard, br#"433["{\"ts\":1,\"seq\":\"a \\\"q\\\"\"}"]"#);
    receive(&mut session, &mut heard, br#"4317[{"not":"a string"}]"#);
    assert_eq!(
        heard.replies,
        [(Some(3), br#"{"ts":1,"seq":"a \"q\""}"#.to_vec()), (Some(17), br#"{"not":"a string"}"#.to_vec())]
    );
    let named = Options::with([("event", "say".into())]);
    let (mut session, mut heard) = joined(Use::Requests, &named, Instant::now());
    session.request(0, b"x", &mut heard);
    assert_eq!(heard.sent_text(0), r#"420["say","x"]"#);
}

#[test]
fn a_binary_echo_is_an_attachment_and_its_ack_brings_the_bytes_back() {
    let options = Options { binary: true, ..Options::default() };
    let (mut session, mut heard) = joined(Use::Requests, &options, Instant::now());
    session.request(5, b"bytes", &mut heard);
    assert_eq!(heard.sent_text(0), r#"451-5["echo",{"_placeholder":true,"num":0}]"#);
    assert_eq!(heard.sent[1], (false, b"bytes".to_vec()));
    receive(&mut session, &mut heard, br#"461-5[{"_placeholder":true,"num":0}]"#);
    assert!(heard.replies.is_empty(), "the bytes come next");
    session.receive(&[0, 1, 255], true, Instant::now(), &mut heard);
    assert_eq!(heard.replies, [(Some(5), vec![0, 1, 255])]);
    // Without --binary, a payload that is not UTF-8 goes as an attachment too.
    let (mut session, mut heard) = joined(Use::Requests, &Options::default(), Instant::now());
    session.request(0, &[0xff], &mut heard);
    assert_eq!(heard.sent_text(0), r#"451-0["echo",{"_placeholder":true,"num":0}]"#);
    assert_eq!(heard.sent[1], (false, vec![0xff]));
}

#[test]
fn attachments_the_server_does_not_send_or_did_not_announce_are_errors_not_state() {
    let options = Options { binary: true, ..Options::default() };
    let (mut session, mut heard) = joined(Use::Requests, &options, Instant::now());
    // The payload is the second of two attachments: the first is skipped.
    receive(&mut session, &mut heard, br#"462-1[{"_placeholder":true,"num":1}]"#);
    session.receive(b"first", true, Instant::now(), &mut heard);
    session.receive(b"second", true, Instant::now(), &mut heard);
    assert_eq!(heard.replies, [(Some(1), b"second".to_vec())]);
    // A text message where an attachment is due frees the request it answers.
    receive(&mut session, &mut heard, br#"461-2[{"_placeholder":true,"num":0}]"#);
    receive(&mut session, &mut heard, b"2");
    assert_eq!(heard.sent_text(0), "3", "the ping is still answered");
    session.receive(b"unannounced", true, Instant::now(), &mut heard);
    receive(&mut session, &mut heard, br#"46999-3[{"_placeholder":true,"num":0}]"#);
    let errors: Vec<(&str, Option<u64>, bool)> =
        heard.errors.iter().map(|e| (e.0.as_str(), e.2, e.3)).collect();
    assert_eq!(
        errors,
        [
            ("socketio_malformed", Some(2), false),
            ("socketio_malformed", None, false),
            ("socketio_malformed", Some(3), false)
        ]
    );
    assert_eq!(heard.replies.len(), 1);
}

#[test]
fn rooms_are_subscribed_published_to_and_delivered_as_message_events() {
    let (mut session, mut heard) = joined(Use::PubSub, &Options::default(), Instant::now());
    session.subscribe("t3", &mut heard);
    session.subscribe("t4", &mut heard);
    assert_eq!(heard.sent_text(0), r#"420["subscribe","t3"]"#);
    assert_eq!(heard.sent_text(1), r#"421["subscribe","t4"]"#);
    receive(&mut session, &mut heard, b"431[true]");
    receive(&mut session, &mut heard, b"430[true]");
    receive(&mut session, &mut heard, b"4399[true]");
    assert_eq!(heard.subscribed, ["t4", "t3"]);
    assert_eq!(heard.other, 2, "the open packet, and an ack of nothing asked");
    session.publish("t3", br#"{"id":"1-2","ts":5}"#, &mut heard);
    assert_eq!(heard.sent_text(2), r#"42["publish",{"topic":"t3","payload":{"id":"1-2","ts":5}}]"#);
    receive(
        &mut session,
        &mut heard,
        br#"42["message",{"topic":"t3","payload":{"id":"1-2","ts":5,"s":"\""}}]"#,
    );
    assert_eq!(heard.deliveries, [("t3".into(), br#"{"id":"1-2","ts":5,"s":"\""}"#.to_vec())]);
    receive(&mut session, &mut heard, br#"42["news",{"topic":"t3"}]"#);
    receive(&mut session, &mut heard, br#"42/admin,["message",{"topic":"t3","payload":{}}]"#);
    assert_eq!(heard.other, 4, "other events and namespaces");
    receive(&mut session, &mut heard, br#"42["message","t3"]"#);
    assert_eq!(heard.errors[0].0, "socketio_malformed");
    assert_eq!(heard.deliveries.len(), 1);
}

#[test]
fn malformed_packets_are_counted_and_the_connection_goes_on() {
    let (mut session, mut heard) = joined(Use::Requests, &Options::default(), Instant::now());
    for message in [&b"9"[..], b"", b"4", b"47", b"43[1]", b"433{}"] {
        receive(&mut session, &mut heard, message);
    }
    let errors: Vec<(&str, Option<u64>, bool)> =
        heard.errors.iter().map(|e| (e.0.as_str(), e.2, e.3)).collect();
    let malformed = ("socketio_malformed", None, false);
    assert_eq!(
        errors,
        [malformed, malformed, malformed, malformed, malformed, ("socketio_malformed", Some(3), false)]
    );
    receive(&mut session, &mut heard, b"6");
    receive(&mut session, &mut heard, b"3");
    assert_eq!(heard.other, 3, "the open packet, a no-op and a pong");
}

#[test]
fn the_path_is_socket_ios_own_or_gets_the_query_it_lacks() {
    assert_eq!(SocketIo.path("/").as_deref(), Some("/socket.io/?EIO=4&transport=websocket"));
    assert_eq!(SocketIo.path("/socket.io/").as_deref(), Some("/socket.io/?EIO=4&transport=websocket"));
    assert_eq!(SocketIo.path("/chat/?token=x").as_deref(), Some("/chat/?token=x&EIO=4&transport=websocket"));
    assert_eq!(SocketIo.path("/io?EIO=4").as_deref(), Some("/io?EIO=4&transport=websocket"));
    assert_eq!(SocketIo.path("/io?").as_deref(), Some("/io?EIO=4&transport=websocket"));
    assert_eq!(SocketIo.path("/socket.io/?EIO=4&transport=websocket"), None);
    assert_eq!(SocketIo.path("/?transport=websocket&EIO=4"), None);
}

#[test]
fn options_it_cannot_honour_are_refused() {
    assert!(SocketIo.check(&Options::with([("event", "".into())])).is_err());
    assert!(SocketIo.check(&Options { binary: true, ..Options::default() }).is_ok());
    assert!(SocketIo.serves(Use::Requests) && SocketIo.serves(Use::PubSub));
    assert!(!SocketIo.serves(Use::Messages));
    assert_eq!(
        SocketIo.options().iter().map(|o| o.flag).collect::<Vec<_>>(),
        ["event", "stream-event", "subscribe-emit"]
    );
}
