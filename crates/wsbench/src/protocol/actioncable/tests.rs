//! The Action Cable session against messages as Action Cable 6.1 writes them.

use std::time::{Duration, Instant};

use super::*;
use crate::protocol::tests::{Heard, setup};

fn session(usage: Use, options: &Options) -> Box<dyn Session> {
    ActionCable.session(&setup(usage, options))
}

fn receive(session: &mut dyn Session, message: &str, heard: &mut Heard) {
    session.receive(message.as_bytes(), false, Instant::now(), heard);
}

/// `{"identifier":IDENTIFIER,…}` with the identifier written as Action Cable writes it back.
fn on(identifier: &str, rest: &str) -> String {
    let quoted = serde_json::to_string(identifier).unwrap();
    format!(r#"{{"identifier":{quoted},{rest}}}"#)
}

const ECHO: &str = r#"{"channel":"BenchChannel","room":"echo-r1-0"}"#;

#[test]
fn an_echo_connection_is_welcomed_subscribes_then_performs_its_action() {
    let options = Options::default();
    let mut session = session(Use::Requests, &options);
    let mut heard = Heard::default();
    session.open(Instant::now(), &mut heard);
    assert!(heard.sent.is_empty(), "the server speaks first");
    receive(session.as_mut(), r#"{"type":"welcome"}"#, &mut heard);
    assert!(!session.ready());
    assert_eq!(
        heard.sent_text(0),
        r#"{"command":"subscribe","identifier":"{\"channel\":\"BenchChannel\",\"room\":\"echo-r1-0\"}"}"#
    );
    receive(session.as_mut(), &on(ECHO, r#""type":"confirm_subscription""#), &mut heard);
    assert!(session.ready());
    assert_eq!(heard.ready, 1);

    session.request(7, b"a \"quoted\" line", &mut heard);
    assert_eq!(
        heard.sent_text(1),
        r#"{"command":"message","identifier":"{\"channel\":\"BenchChannel\",\"room\":\"echo-r1-0\"}","data":"{\"action\":\"echo\",\"seq\":7,\"payload\":\"a \\\"quoted\\\" line\"}"}"#
    );
    let reply = on(ECHO, r#""message":{"action":"echo","seq":7,"payload":"a \"quoted\" line"}"#);
    receive(session.as_mut(), &reply, &mut heard);
    assert_eq!(heard.replies, [(Some(7), b"a \"quoted\" line".to_vec())]);
    receive(session.as_mut(), r#"{"type":"ping","message":1795887365}"#, &mut heard);
    assert_eq!(heard.other, 1);
    assert!(heard.errors.is_empty(), "{:?}", heard.errors);
}

#[test]
fn a_reply_without_wsbenchs_fields_is_the_whole_message() {
    let options = Options::with([("channel", "Chat".into()), ("channel-params", "{}".into())]);
    let mut session = session(Use::Requests, &options);
    let mut heard = Heard::default();
    receive(session.as_mut(), r#"{"type":"welcome"}"#, &mut heard);
    receive(session.as_mut(), &on(r#"{"channel":"Chat"}"#, r#""type":"confirm_subscription""#), &mut heard);
    receive(session.as_mut(), &on(r#"{"channel":"Chat"}"#, r#""message":{"text":"hi"}"#), &mut heard);
    assert_eq!(heard.replies, [(None, br#"{"text":"hi"}"#.to_vec())]);
}

#[test]
fn a_subscriber_is_subscribed_to_its_topics_parameters_and_gets_its_broadcasts() {
    let options = Options::with([("channel-params", r#"{"room":"r-{topic}","kind":"news"}"#.into())]);
    let mut session = session(Use::PubSub, &options);
    let mut heard = Heard::default();
    receive(session.as_mut(), r#"{"type":"welcome"}"#, &mut heard);
    assert!(session.ready());
    session.subscribe("t3", &mut heard);
    let identifier = r#"{"channel":"BenchChannel","room":"r-3","kind":"news"}"#;
    let sent: serde_json::Value = serde_json::from_str(&heard.sent_text(0)).unwrap();
    assert_eq!(sent["identifier"], identifier);
    receive(session.as_mut(), &on(identifier, r#""type":"confirm_subscription""#), &mut heard);
    assert_eq!(heard.subscribed, ["t3"]);
    receive(
        session.as_mut(),
        &on(identifier, r#""message":{"action":"broadcast","payload":{"id":"0-1"}}"#),
        &mut heard,
    );
    let delivered = br#"{"action":"broadcast","payload":{"id":"0-1"}}"#.to_vec();
    assert_eq!(heard.deliveries, [("t3".to_owned(), delivered)]);
}

#[test]
fn a_publisher_subscribes_on_its_first_publish_and_sends_what_waited_once_confirmed() {
    let options = Options::default();
    let mut session = session(Use::PubSub, &options);
    let mut heard = Heard::default();
    receive(session.as_mut(), r#"{"type":"welcome"}"#, &mut heard);
    session.publish("t1", br#"{"id":"0-0"}"#, &mut heard);
    session.publish("t1", br#"{"id":"0-1"}"#, &mut heard);
    assert_eq!(heard.sent.len(), 1, "the subscription alone, until it is confirmed");
    let identifier = r#"{"channel":"BenchChannel","room":"1"}"#;
    receive(session.as_mut(), &on(identifier, r#""type":"confirm_subscription""#), &mut heard);
    session.publish("t1", br#"{"id":"0-2"}"#, &mut heard);
    let sent: Vec<serde_json::Value> =
        (1..4).map(|at| serde_json::from_str(&heard.sent_text(at)).unwrap()).collect();
    for (at, command) in sent.iter().enumerate() {
        assert_eq!(command["command"], "message");
        assert_eq!(command["identifier"], identifier);
        assert_eq!(command["data"], format!(r#"{{"action":"broadcast","payload":{{"id":"0-{at}"}}}}"#));
    }
    // Its own broadcasts come back on its subscription: nothing the load asked for.
    receive(session.as_mut(), &on(identifier, r#""message":{"payload":{"id":"0-0"}}"#), &mut heard);
    assert!(heard.deliveries.is_empty() && heard.subscribed.is_empty());
    assert!(heard.errors.is_empty(), "{:?}", heard.errors);
}

#[test]
fn rejected_subscriptions_are_counted_fatal_for_an_echo_and_each_publish_not_sent_too() {
    let options = Options::default();
    let mut echo = session(Use::Requests, &options);
    let mut heard = Heard::default();
    receive(echo.as_mut(), r#"{"type":"welcome"}"#, &mut heard);
    receive(echo.as_mut(), &on(ECHO, r#""type":"reject_subscription""#), &mut heard);
    assert_eq!(heard.errors[0].0, "actioncable_rejected");
    assert!(heard.errors[0].3, "fatal");
    assert!(heard.errors[0].1.contains("the echo's subscription {\"channel\""), "{}", heard.errors[0].1);

    let mut publisher = session(Use::PubSub, &options);
    let mut heard = Heard::default();
    receive(publisher.as_mut(), r#"{"type":"welcome"}"#, &mut heard);
    publisher.publish("t0", b"{}", &mut heard);
    let identifier = r#"{"channel":"BenchChannel","room":"0"}"#;
    receive(publisher.as_mut(), &on(identifier, r#""type":"reject_subscription""#), &mut heard);
    publisher.publish("t0", b"{}", &mut heard);
    receive(publisher.as_mut(), r#"{"type":"ping","message":1}"#, &mut heard);
    let causes: Vec<(&str, bool)> = heard.errors.iter().map(|e| (e.0.as_str(), e.3)).collect();
    assert_eq!(causes, [("actioncable_rejected", false), ("actioncable_rejected", false)]);
    assert!(heard.errors[0].1.ends_with("(1 publishes waiting for it not sent)"), "{}", heard.errors[0].1);
    assert_eq!(heard.sent.len(), 1, "the subscription alone was sent");
}

#[test]
fn the_servers_disconnect_is_counted_by_its_reason_and_ends_the_connection() {
    let options = Options::default();
    let mut session = session(Use::PubSub, &options);
    let mut heard = Heard::default();
    receive(
        session.as_mut(),
        r#"{"type":"disconnect","reason":"unauthorized","reconnect":false}"#,
        &mut heard,
    );
    assert_eq!(
        heard.errors,
        [(
            "actioncable_disconnect_unauthorized".into(),
            "the server disconnected the client: \"unauthorized\" (it may not reconnect)".into(),
            None,
            true
        )]
    );
    receive(session.as_mut(), r#"{"type":"welcome"}"#, &mut heard);
    assert!(!session.ready(), "nothing is read after a disconnect");
}

#[test]
fn a_silent_server_and_an_unanswered_subscription_are_given_up() {
    let options = Options::default();
    let start = Instant::now();
    let mut session = session(Use::PubSub, &options);
    let mut heard = Heard::default();
    session.open(start, &mut heard);
    session.receive(br#"{"type":"welcome"}"#, false, start, &mut heard);
    session.subscribe("t2", &mut heard);
    // The subscription's answer is due within the open timeout (5 s in these tests).
    assert_eq!(session.next_timer(), Some(start + Duration::from_secs(5)));
    session.on_timer(start + Duration::from_secs(5), &mut heard);
    assert_eq!(heard.errors.len(), 1);
    assert_eq!(heard.errors[0].0, "actioncable_unconfirmed");
    assert!(!heard.errors[0].3, "a subscriber goes on: the pub/sub counts its failure");
    assert!(
        heard.errors[0].1.contains("is its channel a class of the application?"),
        "{}",
        heard.errors[0].1
    );
    assert_eq!(session.next_timer(), Some(start + Duration::from_secs(13)));
    session.on_timer(start + Duration::from_secs(12), &mut heard);
    assert_eq!(heard.errors.len(), 1);
    session.on_timer(start + Duration::from_secs(13), &mut heard);
    assert_eq!(heard.errors[1].0, "actioncable_no_ping");
    assert!(heard.errors[1].3);
}

#[test]
fn what_is_not_action_cable_is_malformed_and_fatal_before_the_welcome() {
    let options = Options::default();
    let mut session = session(Use::PubSub, &options);
    let mut heard = Heard::default();
    receive(session.as_mut(), "hello", &mut heard);
    assert_eq!(heard.errors[0].0, "actioncable_malformed");
    assert!(heard.errors[0].3);
    assert!(heard.errors[0].1.contains("\"hello\""), "{}", heard.errors[0].1);
}

#[test]
fn a_flow_sees_every_message_after_the_welcome_but_pings() {
    let options = Options::default();
    let mut session = session(Use::Messages, &options);
    let mut heard = Heard::default();
    receive(session.as_mut(), r#"{"type":"welcome"}"#, &mut heard);
    assert!(session.ready());
    receive(session.as_mut(), r#"{"type":"ping","message":1}"#, &mut heard);
    let confirmed = on(ECHO, r#""type":"confirm_subscription""#);
    receive(session.as_mut(), &confirmed, &mut heard);
    let rejected = on(ECHO, r#""type":"reject_subscription""#);
    receive(session.as_mut(), &rejected, &mut heard);
    assert_eq!(
        heard.messages,
        [(confirmed.into_bytes(), None), (rejected.into_bytes(), Some("actioncable_rejected".to_owned()))]
    );
}

#[test]
fn a_stream_subscribes_once_and_every_broadcast_is_a_delivery() {
    let options = Options::with([("channel", "TickerChannel".into()), ("channel-params", "{}".into())]);
    let mut session = session(Use::Stream, &options);
    let mut heard = Heard::default();
    receive(session.as_mut(), r#"{"type":"welcome"}"#, &mut heard);
    session.subscribe_stream(&mut heard);
    assert_eq!(
        heard.sent_text(0),
        r#"{"command":"subscribe","identifier":"{\"channel\":\"TickerChannel\"}"}"#
    );
    let identifier = r#"{"channel":"TickerChannel"}"#;
    receive(session.as_mut(), &on(identifier, r#""type":"confirm_subscription""#), &mut heard);
    receive(session.as_mut(), &on(identifier, r#""message":{"seq":1,"ts":5}"#), &mut heard);
    assert_eq!(heard.subscribed, [identifier]);
    assert_eq!(heard.deliveries, [(String::new(), br#"{"seq":1,"ts":5}"#.to_vec())]);
}

#[test]
fn options_it_cannot_honour_are_refused_with_what_to_give() {
    let check = |key: &str, value: &str| ActionCable.check(&Options::with([(key, value.into())]));
    assert!(
        ActionCable.check(&Options { binary: true, ..Options::default() }).unwrap_err().contains("--binary")
    );
    assert!(
        check("channel", "Chat Channel").unwrap_err().starts_with("--channel \"Chat Channel\": give a name")
    );
    assert!(check("action", "").unwrap_err().starts_with("--action \"\": give a name"));
    assert!(check("channel-params", "[1]").unwrap_err().contains("is not a JSON object"));
    let unquoted = check("channel-params", r#"{"room":{topic}}"#).unwrap_err();
    assert!(unquoted.contains("{topic} inside a string"), "{unquoted}");
    let named = check("channel-params", r#"{"channel":"X"}"#).unwrap_err();
    assert!(named.contains("give the channel with --channel"), "{named}");
    assert_eq!(check("channel-params", r#"{"room":"{topic}","user":"{data.user}"}"#), Ok(()));
    assert_eq!(ActionCable.subprotocols(), ["actioncable-v1-json", "actioncable-unsupported"]);
    assert_eq!(ActionCable.path("").as_deref(), Some("/cable"));
    assert_eq!(ActionCable.path("/ws"), None);
}
