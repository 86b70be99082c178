//! The Centrifugo session against replies as Centrifugo v6 writes them.

use std::time::{Duration, Instant};

use super::*;
use crate::protocol::tests::{Heard, setup};

fn session(usage: Use, options: &Options) -> Box<dyn Session> {
    Centrifugo.session(&setup(usage, options))
}

fn receive(session: &mut dyn Session, line: &str, heard: &mut Heard) {
    session.receive(line.as_bytes(), false, Instant::now(), heard);
}

#[test]
fn an_echo_connection_connects_subscribes_to_its_own_channel_then_publishes_into_it() {
    let options = Options::with([("connection-token", "a.b.c".into())]);
    let mut session = session(Use::Requests, &options);
    let mut heard = Heard::default();
    session.open(Instant::now(), &mut heard);
    assert_eq!(heard.sent_text(0), r#"{"id":1,"connect":{"token":"a.b.c","name":"wsbench"}}"#);
    receive(
        session.as_mut(),
        r#"{"id":1,"connect":{"client":"c1","version":"6.9.1","ping":25,"pong":true}}"#,
        &mut heard,
    );
    assert!(!session.ready());
    assert_eq!(heard.sent_text(1), r#"{"id":2,"subscribe":{"channel":"wsbench-echo-r1-0"}}"#);
    receive(session.as_mut(), r#"{"id":2,"subscribe":{}}"#, &mut heard);
    assert!(session.ready());
    assert_eq!(heard.ready, 1);

    session.request(0, b"a \"quoted\" line", &mut heard);
    assert_eq!(
        heard.sent_text(2),
        r#"{"id":3,"publish":{"channel":"wsbench-echo-r1-0","data":"a \"quoted\" line"}}"#
    );
    // The publish's result and the publication, batched in one message as Centrifugo does.
    let batch = "{\"id\":3,\"publish\":{}}\n{\"push\":{\"channel\":\"wsbench-echo-r1-0\",\"pub\":{\"data\":\"a \\\"quoted\\\" line\",\"offset\":1}}}";
    receive(session.as_mut(), batch, &mut heard);
    assert_eq!(heard.replies, [(None, b"a \"quoted\" line".to_vec())]);
    assert!(heard.errors.is_empty(), "{:?}", heard.errors);
}

#[test]
fn an_anonymous_connection_sends_no_token_and_pubsub_is_ready_at_connect() {
    let options = Options::with([("channel", "chat:room-{topic}".into())]);
    let mut session = session(Use::PubSub, &options);
    let mut heard = Heard::default();
    session.open(Instant::now(), &mut heard);
    assert_eq!(heard.sent_text(0), r#"{"id":1,"connect":{"name":"wsbench"}}"#);
    receive(session.as_mut(), r#"{"id":1,"connect":{"client":"c1"}}"#, &mut heard);
    assert!(session.ready());
    session.subscribe("t7", &mut heard);
    assert_eq!(heard.sent_text(1), r#"{"id":2,"subscribe":{"channel":"chat:room-7"}}"#);
    receive(session.as_mut(), r#"{"id":2,"subscribe":{}}"#, &mut heard);
    assert_eq!(heard.subscribed, ["t7"]);
    session.publish("t7", br#"{"p":1}"#, &mut heard);
    assert_eq!(heard.sent_text(2), r#"{"id":3,"publish":{"channel":"chat:room-7","data":{"p":1}}}"#);
    receive(session.as_mut(), r#"{"push":{"channel":"chat:room-7","pub":{"data":{"p":1}}}}"#, &mut heard);
    receive(session.as_mut(), r#"{"push":{"channel":"elsewhere","pub":{"data":{"p":2}}}}"#, &mut heard);
    assert_eq!(
        heard.deliveries,
        [("t7".to_owned(), br#"{"p":1}"#.to_vec()), ("elsewhere".to_owned(), br#"{"p":2}"#.to_vec())]
    );
}

#[test]
fn errors_are_counted_by_code_with_the_servers_message_for_the_command_they_answer() {
    let options = Options::default();
    let mut session = session(Use::Requests, &options);
    let mut heard = Heard::default();
    session.open(Instant::now(), &mut heard);
    receive(session.as_mut(), r#"{"id":1,"connect":{"client":"c"}}"#, &mut heard);
    receive(session.as_mut(), r#"{"id":2,"subscribe":{}}"#, &mut heard);
    session.request(41, b"x", &mut heard);
    receive(session.as_mut(), r#"{"id":3,"error":{"code":103,"message":"permission denied"}}"#, &mut heard);
    assert_eq!(
        heard.errors,
        [(
            "centrifugo_error_103".into(),
            "permission denied (code 103, answering publish)".into(),
            Some(41),
            false
        )]
    );
    assert!(session.ready(), "a refused publish does not end the connection");
}

#[test]
fn a_refused_connect_or_echo_subscription_ends_the_connection() {
    let options = Options::default();
    let mut session = session(Use::Requests, &options);
    let mut heard = Heard::default();
    session.open(Instant::now(), &mut heard);
    receive(session.as_mut(), r#"{"id":1,"error":{"code":109,"message":"token expired"}}"#, &mut heard);
    assert_eq!(heard.errors[0].0, "centrifugo_error_109");
    assert!(heard.errors[0].3, "fatal");

    let mut session = session_ready_to_subscribe();
    let mut heard = Heard::default();
    receive(session.as_mut(), r#"{"id":2,"error":{"code":102,"message":"unknown channel"}}"#, &mut heard);
    assert_eq!(
        heard.errors,
        [(
            "centrifugo_error_102".into(),
            "unknown channel (code 102, answering subscribe to the echo channel wsbench-echo-r1-0)".into(),
            None,
            true
        )]
    );
}

fn session_ready_to_subscribe() -> Box<dyn Session> {
    let mut session = session(Use::Requests, &Options::default());
    let mut heard = Heard::default();
    session.open(Instant::now(), &mut heard);
    receive(session.as_mut(), r#"{"id":1,"connect":{"client":"c"}}"#, &mut heard);
    session
}

#[test]
fn pings_are_answered_only_when_asked_and_a_silent_server_is_given_up() {
    let options = Options::default();
    for (pong, answers) in [(true, 1), (false, 0)] {
        let mut session = session(Use::PubSub, &options);
        let mut heard = Heard::default();
        let start = Instant::now();
        session.open(start, &mut heard);
        let connected = format!(r#"{{"id":1,"connect":{{"client":"c","ping":25,"pong":{pong}}}}}"#);
        session.receive(connected.as_bytes(), false, start, &mut heard);
        let before = heard.sent.len();
        session.receive(b"{}", false, start, &mut heard);
        assert_eq!(heard.sent.len() - before, answers, "pong {pong}");
        if answers == 1 {
            assert_eq!(heard.sent_text(before), "{}");
        }
        assert_eq!(session.next_timer(), Some(start + Duration::from_secs(25) + MAX_PING_DELAY));
        session.on_timer(start + Duration::from_secs(34), &mut heard);
        assert!(heard.errors.is_empty());
        session.on_timer(start + Duration::from_secs(35), &mut heard);
        assert_eq!(heard.errors[0].0, "centrifugo_no_ping");
        assert!(heard.errors[0].3);
    }
}

#[test]
fn a_server_side_unsubscribe_and_disconnect_are_named_by_their_codes() {
    let options = Options::default();
    let mut session = session(Use::PubSub, &options);
    let mut heard = Heard::default();
    session.open(Instant::now(), &mut heard);
    receive(session.as_mut(), r#"{"id":1,"connect":{"client":"c"}}"#, &mut heard);
    receive(
        session.as_mut(),
        r#"{"push":{"channel":"wsbench-3","unsubscribe":{"code":2000,"reason":"server unsubscribe"}}}"#,
        &mut heard,
    );
    receive(
        session.as_mut(),
        r#"{"push":{"disconnect":{"code":3503,"reason":"force disconnect"}}}"#,
        &mut heard,
    );
    receive(session.as_mut(), r#"{"push":{"channel":"wsbench-3","pub":{"data":{}}}}"#, &mut heard);
    assert_eq!(
        heard.errors,
        [
            (
                "centrifugo_unsubscribed_2000".into(),
                "the server unsubscribed the client from wsbench-3: server unsubscribe".into(),
                None,
                false
            ),
            (
                "centrifugo_disconnect_3503".into(),
                "the server disconnected the client: force disconnect".into(),
                None,
                true
            ),
        ]
    );
    assert!(heard.deliveries.is_empty(), "nothing is read after a disconnect");
}

#[test]
fn what_is_not_centrifugo_is_malformed_and_fatal_before_the_connection_is_ready() {
    let options = Options::default();
    let mut session = session(Use::PubSub, &options);
    let mut heard = Heard::default();
    session.open(Instant::now(), &mut heard);
    receive(session.as_mut(), "hello", &mut heard);
    assert_eq!(heard.errors[0].0, "centrifugo_malformed");
    assert!(heard.errors[0].3);
    assert!(heard.errors[0].1.contains("\"hello\""), "{}", heard.errors[0].1);
}

#[test]
fn options_it_cannot_honour_are_refused_with_what_to_give() {
    let binary = Options { binary: true, ..Options::default() };
    assert!(Centrifugo.check(&binary).unwrap_err().contains("--binary"));
    assert!(
        Centrifugo
            .check(&Options::with([("connection-token", " ".into())]))
            .unwrap_err()
            .contains("--connection-token is empty")
    );
    for bad in ["room", "a-{topic}-{topic}", "my room {topic}"] {
        let error = Centrifugo.check(&Options::with([("channel", bad.into())])).unwrap_err();
        assert!(error.contains("{topic} exactly once"), "{bad}: {error}");
    }
    assert_eq!(Centrifugo.check(&Options::with([("channel", "news:{topic}".into())])), Ok(()));
    assert!(!Centrifugo.serves(Use::Messages));
    assert_eq!(Centrifugo.path("/").as_deref(), Some("/connection/websocket"));
    assert_eq!(Centrifugo.path("/ws?x=1"), None);
}

#[test]
fn commands_beyond_the_bound_awaiting_their_reply_are_given_up_one_error_each() {
    let options = Options::default();
    let mut session = session(Use::PubSub, &options);
    let mut heard = Heard::default();
    session.open(Instant::now(), &mut heard);
    receive(session.as_mut(), r#"{"id":1,"connect":{"client":"c"}}"#, &mut heard);
    for _ in 0..session::MAX_PENDING + 3 {
        session.publish("t0", b"{}", &mut heard);
    }
    receive(session.as_mut(), "{}", &mut heard);
    assert_eq!(heard.errors.len(), 3, "{:?}", heard.errors.first());
    assert!(heard.errors.iter().all(|error| error.0 == "centrifugo_no_reply"));
}
