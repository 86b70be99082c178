//! The NATS session without a server: the opening, request/reply through the inbox and the
//! queue-group responder, subscriptions acknowledged by PONG, operations split over and packed
//! into WebSocket messages, `-ERR` causes, and the options refused before a run.

use std::time::Instant;

use super::*;
use crate::protocol::tests::{Heard, setup};

const INFO: &[u8] = b"INFO {\"server_id\":\"x\",\"max_payload\":1048576,\"headers\":true}\r\n";

fn session(usage: Use, options: &Options) -> Box<dyn Session> {
    Nats.session(&setup(usage, options))
}

/// A session of `usage` through its opening: INFO in, CONNECT (with SUBs) and PING out,
/// PONG in.
fn opened(usage: Use, options: &Options) -> (Box<dyn Session>, Heard) {
    let mut session = session(usage, options);
    let mut heard = Heard::default();
    session.open(Instant::now(), &mut heard);
    assert!(heard.sent.is_empty(), "nothing is sent before the server's INFO");
    session.receive(INFO, true, Instant::now(), &mut heard);
    assert!(!session.ready());
    session.receive(b"PONG\r\n", true, Instant::now(), &mut heard);
    assert!(session.ready());
    assert_eq!(heard.ready, 1);
    (session, heard)
}

fn sent(heard: &Heard, at: usize) -> String {
    let (text, payload) = &heard.sent[at];
    assert!(!*text, "NATS over WebSocket is binary messages");
    String::from_utf8(payload.clone()).unwrap()
}

#[test]
fn an_echo_connection_connects_subscribes_to_its_inbox_and_the_queue_group_then_pings() {
    let options = Options::with([("user", "alice".into()), ("pass", "s3cret".into())]);
    let (_, heard) = opened(Use::Requests, &options);
    let opening = sent(&heard, 0);
    let mut lines = opening.split("\r\n");
    let connect: serde_json::Value =
        serde_json::from_str(lines.next().unwrap().strip_prefix("CONNECT ").unwrap()).unwrap();
    assert_eq!((connect["verbose"].as_bool(), connect["pedantic"].as_bool()), (Some(false), Some(false)));
    assert_eq!((connect["user"].as_str(), connect["pass"].as_str()), (Some("alice"), Some("s3cret")));
    assert_eq!(connect["name"], "wsbench-r1-0");
    assert_eq!(connect["no_responders"], true);
    assert_eq!(lines.next(), Some("SUB _INBOX.wsbench.r1.0.* 1"));
    assert_eq!(lines.next(), Some("SUB wsbench.echo.r1 wsbench 2"));
    assert_eq!(lines.next(), Some("PING"));
}

#[test]
fn a_request_goes_out_with_its_reply_subject_and_the_reply_is_matched_by_its_number() {
    let (mut session, mut heard) = opened(Use::Requests, &Options::default());
    session.request(42, b"{\"x\":1}", &mut heard);
    assert_eq!(sent(&heard, 1), "PUB wsbench.echo.r1 _INBOX.wsbench.r1.0.42 7\r\n{\"x\":1}\r\n");
    session.receive(b"MSG _INBOX.wsbench.r1.0.42 1 7\r\n{\"x\":1}\r\n", true, Instant::now(), &mut heard);
    assert_eq!(heard.replies, [(Some(42), b"{\"x\":1}".to_vec())]);
}

#[test]
fn as_a_responder_a_connection_publishes_the_payload_back_to_the_reply_subject() {
    let (mut session, mut heard) = opened(Use::Requests, &Options::default());
    let request = b"MSG wsbench.echo.r1 2 _INBOX.wsbench.r1.9.5 3\r\nabc\r\n";
    session.receive(request, true, Instant::now(), &mut heard);
    assert_eq!(sent(&heard, 1), "PUB _INBOX.wsbench.r1.9.5 3\r\nabc\r\n");
    assert!(heard.replies.is_empty());
}

#[test]
fn with_an_external_responder_no_queue_subscription_is_made_and_no_responders_is_an_error_of_the_request() {
    let options =
        Options::with([("external-responder", true.into()), ("request-subject", "svc.time".into())]);
    assert!(!Nats.replies_echo(&options));
    let (mut session, mut heard) = opened(Use::Requests, &options);
    assert!(!sent(&heard, 0).contains("wsbench 2"), "{}", sent(&heard, 0));
    session.request(3, b"q", &mut heard);
    assert!(sent(&heard, 1).starts_with("PUB svc.time _INBOX.wsbench.r1.0.3 1\r\n"));
    let no_responders = b"HMSG _INBOX.wsbench.r1.0.3 1 16 16\r\nNATS/1.0 503\r\n\r\n\r\n";
    session.receive(no_responders, true, Instant::now(), &mut heard);
    assert_eq!(heard.errors.len(), 1, "{:?}", heard.errors);
    assert_eq!(
        (heard.errors[0].0.as_str(), heard.errors[0].2, heard.errors[0].3),
        ("nats_no_responders", Some(3), false)
    );
}

#[test]
fn a_subscription_is_acknowledged_by_the_pong_after_it_and_deliveries_come_on_its_subject() {
    let options = Options::with([("subject", "orders.{topic}.new".into())]);
    let (mut session, mut heard) = opened(Use::PubSub, &options);
    session.subscribe("t4", &mut heard);
    session.subscribe("t7", &mut heard);
    assert_eq!(sent(&heard, 1), "SUB orders.4.new 3\r\nPING\r\n");
    assert_eq!(sent(&heard, 2), "SUB orders.7.new 4\r\nPING\r\n");
    session.receive(b"PONG\r\nPONG\r\n", true, Instant::now(), &mut heard);
    assert_eq!(heard.subscribed, ["t4", "t7"]);
    session.publish("t7", b"{}", &mut heard);
    assert_eq!(sent(&heard, 3), "PUB orders.7.new 2\r\n{}\r\n");
    session.receive(b"MSG orders.7.new 4 2\r\n{}\r\n", true, Instant::now(), &mut heard);
    assert_eq!(heard.deliveries, [("t7".to_owned(), b"{}".to_vec())]);
}

#[test]
fn messages_split_across_websocket_messages_and_many_in_one_are_all_read() {
    let (mut session, mut heard) = opened(Use::PubSub, &Options::default());
    session.subscribe("t1", &mut heard);
    session.receive(b"PONG\r\n", true, Instant::now(), &mut heard);
    let mut wire = Vec::new();
    for n in 0..5 {
        wire.extend_from_slice(format!("MSG t1 3 {}\r\n{{\"n\":{n}}}\r\n", 7).as_bytes());
    }
    wire.extend_from_slice(b"PING\r\n");
    // Cut into pieces of 4 bytes, then read whole in one message.
    for piece in wire.chunks(4) {
        session.receive(piece, true, Instant::now(), &mut heard);
    }
    session.receive(&wire, true, Instant::now(), &mut heard);
    assert_eq!(heard.deliveries.len(), 10);
    assert_eq!(heard.deliveries[4].1, b"{\"n\":4}");
    let pongs = heard.sent.iter().filter(|(_, payload)| payload == b"PONG\r\n").count();
    assert_eq!(pongs, 2, "each server PING answered");
    assert!(heard.errors.is_empty(), "{:?}", heard.errors);
}

#[test]
fn err_is_counted_by_its_words_and_fatal_where_the_server_closes() {
    let (mut session, mut heard) = opened(Use::PubSub, &Options::default());
    session.receive(
        b"-ERR 'Permissions Violation for Publish to \"t1\"'\r\n",
        true,
        Instant::now(),
        &mut heard,
    );
    session.receive(b"-ERR 'Stale Connection'\r\nMSG t1 3 0\r\n\r\n", true, Instant::now(), &mut heard);
    let causes: Vec<_> = heard.errors.iter().map(|(cause, _, _, fatal)| (cause.as_str(), *fatal)).collect();
    assert_eq!(
        causes,
        [("nats_err_permissions_violation_for_publish_to", false), ("nats_err_stale_connection", true)]
    );
    assert_eq!(heard.errors[1].1, "Stale Connection");
    assert!(heard.deliveries.is_empty(), "nothing is read after a fatal error");
}

#[test]
fn wrong_credentials_end_the_opening_with_the_authorization_violation() {
    let mut session = session(Use::Requests, &Options::with([("auth-token", "nope".into())]));
    let mut heard = Heard::default();
    session.receive(INFO, true, Instant::now(), &mut heard);
    assert!(sent(&heard, 0).contains("\"auth_token\":\"nope\""));
    session.receive(b"-ERR 'Authorization Violation'\r\n", true, Instant::now(), &mut heard);
    session.ended_while_opening(None, &mut heard);
    assert_eq!(heard.errors.len(), 1, "the close adds no second cause: {:?}", heard.errors);
    assert_eq!((heard.errors[0].0.as_str(), heard.errors[0].3), ("nats_err_authorization_violation", true));
}

#[test]
fn a_server_of_another_protocol_is_told_apart_on_its_first_message() {
    let mut session = session(Use::Requests, &Options::default());
    let mut heard = Heard::default();
    session.receive(b"{\"type\":\"hello\"}", false, Instant::now(), &mut heard);
    assert_eq!(heard.errors[0].0, "nats_malformed");
    let mut silent = Nats.session(&setup(Use::PubSub, &Options::default()));
    let mut heard = Heard::default();
    silent.ended_while_opening(Some((1000, "")), &mut heard);
    assert_eq!(heard.errors[0].0, "nats_closed_before_info");
}

#[test]
fn options_that_cannot_be_spoken_are_refused_with_the_reason() {
    let refused = |given: Vec<(&str, toml::Value)>| Nats.check(&Options::with(given)).unwrap_err();
    assert!(refused(vec![("user", "a".into())]).contains("--user needs --pass"));
    assert!(refused(vec![("pass", "a".into())]).contains("--pass needs --user"));
    let both = vec![("user", "a".into()), ("pass", "b".into()), ("auth-token", "t".into())];
    assert!(refused(both).contains("give one of them"));
    assert!(refused(vec![("subject", "orders.new".into())]).contains("{topic} once"));
    assert!(refused(vec![("subject", "orders.*.{topic}".into())]).contains("without spaces or wildcards"));
    assert!(refused(vec![("request-subject", "svc time".into())]).contains("not a subject to publish to"));
    assert!(
        Nats.check(&Options::with([("subject", "a.{topic}.b".into()), ("auth-token", "t".into())])).is_ok()
    );
}

#[test]
fn err_causes_stop_before_subjects_and_figures() {
    let mut cause = String::new();
    super::session::cause_of("Maximum Payload Violation", &mut cause);
    assert_eq!(cause, "nats_err_maximum_payload_violation");
    super::session::cause_of("Permissions Violation for Subscription to \"x.y\"", &mut cause);
    assert_eq!(cause, "nats_err_permissions_violation_for_subscription_to");
    super::session::cause_of("'", &mut cause);
    assert_eq!(cause, "nats_err_unnamed");
}
