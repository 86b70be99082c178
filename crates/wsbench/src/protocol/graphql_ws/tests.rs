//! The graphql-ws session through `Heard`: its opening, an echo and what else a result can
//! be, errors by cause, heartbeats, what a server that speaks something else gets, and the
//! bound on operations left running.

use std::time::Instant;

use super::*;
use crate::protocol::tests::{Heard, setup};

/// A session past its opening, and what it heard.
fn acked(options: &Options) -> (Box<dyn Session>, Heard) {
    let mut session = GraphqlWs.session(&setup(Use::Requests, options));
    let mut heard = Heard::default();
    session.open(Instant::now(), &mut heard);
    session.receive(br#"{"type":"connection_ack"}"#, false, Instant::now(), &mut heard);
    (session, heard)
}

fn receive(session: &mut dyn Session, heard: &mut Heard, message: &str) {
    session.receive(message.as_bytes(), false, Instant::now(), heard);
}

#[test]
fn the_session_is_ready_at_connection_ack() {
    let options = Options::default();
    let mut session = GraphqlWs.session(&setup(Use::Requests, &options));
    let mut heard = Heard::default();
    session.open(Instant::now(), &mut heard);
    assert_eq!(heard.sent_text(0), r#"{"type":"connection_init"}"#);
    assert!(!session.ready());
    receive(session.as_mut(), &mut heard, r#"{"type":"ping"}"#);
    assert!(!session.ready(), "a ping is no ack");
    receive(session.as_mut(), &mut heard, r#"{"type":"connection_ack","payload":{}}"#);
    assert!(session.ready());
    assert_eq!(heard.ready, 1);
    assert_eq!(GraphqlWs.subprotocols(), ["graphql-transport-ws"]);
}

#[test]
fn an_echo_is_a_subscription_numbered_by_its_request_and_its_first_result() {
    let (mut session, mut heard) = acked(&Options::default());
    session.request(3, b"a \"quoted\" line", &mut heard);
    assert_eq!(
        heard.sent_text(1),
        r#"{"type":"subscribe","id":"3","payload":{"query":"subscription($payload: String!) { echo(message: $payload) }","variables":{"payload":"a \"quoted\" line"}}}"#
    );
    receive(
        session.as_mut(),
        &mut heard,
        r#"{"id":"3","type":"next","payload":{"data":{"echo":"a \"quoted\" line"}}}"#,
    );
    receive(session.as_mut(), &mut heard, r#"{"id":"3","type":"complete"}"#);
    assert_eq!(heard.replies, [(Some(3), b"a \"quoted\" line".to_vec())]);
    assert_eq!(heard.other, 1, "the complete is nothing the load asked for");
    assert!(heard.errors.is_empty(), "{:?}", heard.errors);
    assert!(GraphqlWs.replies_echo(&Options::default()));
}

#[test]
fn a_result_that_is_not_one_string_is_the_data_s_text_and_later_results_are_other() {
    let options = Options::with([("query", "subscription { ticks(count: 3) }".into())]);
    assert!(!GraphqlWs.replies_echo(&options), "a query of the user's is not an echo");
    let (mut session, mut heard) = acked(&options);
    session.request(0, b"x", &mut heard);
    assert!(heard.sent_text(1).contains(r#""query":"subscription { ticks(count: 3) }""#));
    for tick in 1..=3 {
        let next = format!(r#"{{"id":"0","type":"next","payload":{{"data":{{"ticks":{tick}}}}}}}"#);
        receive(session.as_mut(), &mut heard, &next);
    }
    receive(session.as_mut(), &mut heard, r#"{"id":"0","type":"complete"}"#);
    assert_eq!(heard.replies, [(Some(0), br#"{"ticks":1}"#.to_vec())]);
    assert_eq!(heard.other, 3);
}

#[test]
fn an_error_is_a_graphql_error_for_its_request() {
    let (mut session, mut heard) = acked(&Options::default());
    session.request(0, b"x", &mut heard);
    session.request(1, b"y", &mut heard);
    let error = r#"{"id":"1","type":"error","payload":[{"message":"Cannot query field \"nope\" on type \"Query\"."}]}"#;
    receive(session.as_mut(), &mut heard, error);
    let failed = r#"{"id":"0","type":"next","payload":{"data":null,"errors":[{"message":"boom"}]}}"#;
    receive(session.as_mut(), &mut heard, failed);
    assert!(heard.replies.is_empty());
    assert_eq!(
        heard.errors,
        [
            ("graphql_error".into(), r#"Cannot query field "nope" on type "Query"."#.into(), Some(1), false),
            ("graphql_error".into(), "boom".into(), Some(0), false),
        ]
    );
}

#[test]
fn an_operation_completed_without_a_result_frees_its_request() {
    let (mut session, mut heard) = acked(&Options::default());
    session.request(5, b"x", &mut heard);
    receive(session.as_mut(), &mut heard, r#"{"id":"5","type":"complete"}"#);
    assert_eq!(heard.errors[0].0, "graphql_ws_no_result");
    assert_eq!(heard.errors[0].2, Some(5));
}

#[test]
fn a_ping_is_answered_with_a_pong_carrying_its_payload() {
    let (mut session, mut heard) = acked(&Options::default());
    receive(session.as_mut(), &mut heard, r#"{"type":"ping","payload":{"at":1}}"#);
    receive(session.as_mut(), &mut heard, r#"{"type":"pong"}"#);
    assert_eq!(heard.sent_text(1), r#"{"type":"pong","payload":{"at":1}}"#);
    assert_eq!(heard.other, 2);
    assert_eq!(session.next_timer(), None, "the client sends no pings of its own");
}

#[test]
fn a_server_that_speaks_something_else_ends_the_opening() {
    let options = Options::default();
    let cases = [
        (&br#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request"},"id":null}"#[..], false),
        (b"hello", false),
        (br#"{"type":"connection_init"}"#, false),
        (br#"{"id":"0","type":"next","payload":{"data":{}}}"#, false),
        (b"\x01\x02", true),
    ];
    for (message, binary) in cases {
        let mut session = GraphqlWs.session(&setup(Use::Requests, &options));
        let mut heard = Heard::default();
        session.open(Instant::now(), &mut heard);
        session.receive(message, binary, Instant::now(), &mut heard);
        let (cause, detail, seq, fatal) = &heard.errors[0];
        assert!(cause.starts_with("graphql_ws_"), "{cause}");
        assert!(*fatal && seq.is_none() && !session.ready(), "{cause}: {detail}");
    }
    let mut session = GraphqlWs.session(&setup(Use::Requests, &options));
    let mut heard = Heard::default();
    session.receive(br#"{"type":"connection_init"}"#, false, Instant::now(), &mut heard);
    assert_eq!(heard.errors[0].1, "the server sent connection_init (is it an echo server?)");
}

#[test]
fn once_open_a_broken_message_is_counted_and_the_connection_goes_on() {
    let (mut session, mut heard) = acked(&Options::default());
    receive(session.as_mut(), &mut heard, "not json");
    receive(session.as_mut(), &mut heard, r#"{"type":"connection_ack"}"#);
    assert_eq!(heard.errors.len(), 2);
    assert!(heard.errors.iter().all(|(_, _, _, fatal)| !fatal));
    assert_eq!(heard.errors[0].0, "graphql_ws_malformed");
    assert!(heard.errors[0].1.contains("\"not json\""), "{}", heard.errors[0].1);
    assert_eq!(heard.errors[1].0, "graphql_ws_unexpected");
}

#[test]
fn results_for_operations_it_never_started_are_nothing() {
    let (mut session, mut heard) = acked(&Options::default());
    receive(session.as_mut(), &mut heard, r#"{"id":"9","type":"next","payload":{"data":{"echo":"x"}}}"#);
    receive(session.as_mut(), &mut heard, r#"{"id":"abc","type":"complete"}"#);
    assert!(heard.replies.is_empty() && heard.errors.is_empty());
    assert_eq!(heard.other, 2);
}

#[test]
fn operations_the_server_leaves_running_are_completed_past_the_limit() {
    let (mut session, mut heard) = acked(&Options::default());
    let total = MAX_RUNNING as u64 + 2;
    for seq in 0..total {
        session.request(seq, b"x", &mut heard);
        let next = format!(r#"{{"id":"{seq}","type":"next","payload":{{"data":{{"echo":"x"}}}}}}"#);
        receive(session.as_mut(), &mut heard, &next);
    }
    let completes: Vec<String> = (0..heard.sent.len())
        .map(|at| heard.sent_text(at))
        .filter(|text| text.contains(r#""type":"complete""#))
        .collect();
    assert_eq!(completes, [r#"{"type":"complete","id":"0"}"#, r#"{"type":"complete","id":"1"}"#]);
    assert_eq!(heard.replies.len() as u64, total);
}

#[test]
fn options_it_cannot_honour_are_refused() {
    let binary = Options { binary: true, ..Options::default() };
    assert!(GraphqlWs.check(&binary).unwrap_err().contains("--binary"));
    let empty = Options::with([("query", "  ".into())]);
    assert!(GraphqlWs.check(&empty).unwrap_err().contains("--query"));
    assert!(GraphqlWs.serves(Use::Requests));
    assert!(GraphqlWs.serves(Use::PubSub));
    assert!(GraphqlWs.serves(Use::Messages));
}

#[test]
fn a_flows_messages_pass_whole_after_the_opening_with_errors_marked() {
    let options = Options::default();
    let mut session = GraphqlWs.session(&setup(Use::Messages, &options));
    let mut heard = Heard::default();
    session.open(Instant::now(), &mut heard);
    assert!(heard.sent_text(0).contains("connection_init"));
    session.receive(br#"{"type":"connection_ack"}"#, false, Instant::now(), &mut heard);
    assert_eq!(heard.ready, 1);
    let next = br#"{"id":"s1","type":"next","payload":{"data":{"ticks":1}}}"#;
    let error = br#"{"id":"s2","type":"error","payload":[{"message":"Cannot query field"}]}"#;
    session.receive(next, false, Instant::now(), &mut heard);
    session.receive(error, false, Instant::now(), &mut heard);
    session.receive(br#"{"type":"ping"}"#, false, Instant::now(), &mut heard);
    assert_eq!(heard.messages, [(next.to_vec(), None), (error.to_vec(), Some("graphql_error".to_owned()))]);
    assert!(heard.sent_text(1).contains("pong"), "a ping is still answered");
}

#[test]
fn the_init_payload_is_connection_init_s_payload() {
    let options = Options::with([("init-payload", r#"{"token":"s3cret"}"#.into())]);
    let mut session = GraphqlWs.session(&setup(Use::Requests, &options));
    let mut heard = Heard::default();
    session.open(Instant::now(), &mut heard);
    assert_eq!(heard.sent_text(0), r#"{"type":"connection_init","payload":{"token":"s3cret"}}"#);
}

#[test]
fn a_server_closing_4403_or_4401_at_init_is_a_refusal_by_its_cause() {
    let cases = [
        (None, 4403, "graphql_ws_init_forbidden", "give credentials with --init-payload"),
        (
            Some(r#"{"token":"wrong"}"#),
            4401,
            "graphql_ws_init_unauthorized",
            "check the --init-payload given",
        ),
    ];
    for (init, code, cause, hint) in cases {
        let options = match init {
            Some(init) => Options::with([("init-payload", init.into())]),
            None => Options::default(),
        };
        let mut session = GraphqlWs.session(&setup(Use::Requests, &options));
        let mut heard = Heard::default();
        session.open(Instant::now(), &mut heard);
        session.ended_while_opening(Some((code, "Forbidden")), &mut heard);
        let (said, detail, seq, fatal) = &heard.errors[0];
        assert_eq!((said.as_str(), *seq, *fatal), (cause, None, true));
        assert!(
            detail.starts_with(&format!("the server refused connection_init (close {code} \"Forbidden\")")),
            "{detail}"
        );
        assert!(detail.contains(hint) && !detail.contains("wrong"), "{detail}");
    }
    let mut session = GraphqlWs.session(&setup(Use::Requests, &Options::default()));
    let mut heard = Heard::default();
    session.ended_while_opening(Some((4400, "Invalid message received")), &mut heard);
    session.ended_while_opening(None, &mut heard);
    assert!(heard.errors.is_empty(), "other closes are counted by their code alone");
}

/// A pub/sub session past its opening (`options`), and what it heard.
fn pubsub(options: &Options) -> (Box<dyn Session>, Heard) {
    let mut session = GraphqlWs.session(&setup(Use::PubSub, options));
    let mut heard = Heard::default();
    session.open(Instant::now(), &mut heard);
    receive(session.as_mut(), &mut heard, r#"{"type":"connection_ack"}"#);
    (session, heard)
}

#[test]
fn a_subscription_is_acknowledged_by_the_pong_after_it_and_its_nexts_are_deliveries() {
    let template = r#"{"query":"subscription($r: String!) { room(name: $r) { body } }","variables":{"r":"room-{topic}"}}"#;
    let (mut session, mut heard) = pubsub(&Options::with([("subscription", template.into())]));
    session.subscribe("t3", &mut heard);
    assert_eq!(
        heard.sent_text(1),
        r#"{"type":"subscribe","id":"t3","payload":{"query":"subscription($r: String!) { room(name: $r) { body } }","variables":{"r":"room-3"}}}"#
    );
    assert_eq!(heard.sent_text(2), r#"{"type":"ping","payload":{"subscribed":"t3"}}"#);
    receive(session.as_mut(), &mut heard, r#"{"type":"pong","payload":{"subscribed":"t3"}}"#);
    receive(session.as_mut(), &mut heard, r#"{"type":"pong","payload":{"subscribed":"t3"}}"#);
    assert_eq!(heard.subscribed, ["t3"]);
    receive(
        session.as_mut(),
        &mut heard,
        r#"{"id":"t3","type":"next","payload":{"data":{"room":{"body":"{\"id\":\"0-1\"}"}}}}"#,
    );
    assert_eq!(heard.deliveries, [("t3".to_owned(), br#"{"id":"0-1"}"#.to_vec())]);
    receive(
        session.as_mut(),
        &mut heard,
        r#"{"id":"t3","type":"next","payload":{"data":null,"errors":[{"message":"boom"}]}}"#,
    );
    receive(session.as_mut(), &mut heard, r#"{"id":"t3","type":"complete"}"#);
    let causes: Vec<&str> = heard.errors.iter().map(|(cause, ..)| cause.as_str()).collect();
    assert_eq!(causes, ["graphql_error", "graphql_ws_subscription_completed"]);
    assert_eq!(heard.other, 1, "the second pong");
}

#[test]
fn a_delivery_before_the_pong_acknowledges_the_subscription_and_an_error_refuses_it() {
    let (mut session, mut heard) = pubsub(&Options::default());
    session.subscribe("t0", &mut heard);
    assert!(heard.sent_text(1).contains(r#""variables":{"topic":"t0"}"#), "{}", heard.sent_text(1));
    receive(session.as_mut(), &mut heard, r#"{"id":"t0","type":"next","payload":{"data":{"messages":"x"}}}"#);
    assert_eq!((heard.subscribed.len(), heard.deliveries.len()), (1, 1));

    let (mut session, mut heard) = pubsub(&Options::default());
    session.subscribe("t1", &mut heard);
    receive(
        session.as_mut(),
        &mut heard,
        r#"{"id":"t1","type":"error","payload":[{"message":"Cannot query field \"messages\""}]}"#,
    );
    receive(session.as_mut(), &mut heard, r#"{"type":"pong","payload":{"subscribed":"t1"}}"#);
    assert!(heard.subscribed.is_empty(), "a refused subscription is never acknowledged");
    assert_eq!(heard.errors[0].0, "graphql_error");
    assert_eq!(heard.errors[0].1, r#"Cannot query field "messages""#);
}

#[test]
fn a_publish_is_the_mutation_with_the_message_as_a_json_string_and_its_result_is_nothing() {
    let (mut session, mut heard) = pubsub(&Options::default());
    session.publish("t2", br#"{"id":"1-0","ts":5}"#, &mut heard);
    session.publish("t2", b"{}", &mut heard);
    assert_eq!(
        heard.sent_text(1),
        r#"{"type":"subscribe","id":"p0","payload":{"query":"mutation($topic: String!, $payload: String!) { publish(topic: $topic, payload: $payload) }","variables":{"topic":"t2","payload":"{\"id\":\"1-0\",\"ts\":5}"}}}"#
    );
    assert!(heard.sent_text(2).contains(r#""id":"p1""#));
    receive(session.as_mut(), &mut heard, r#"{"id":"p0","type":"next","payload":{"data":{"publish":true}}}"#);
    receive(session.as_mut(), &mut heard, r#"{"id":"p0","type":"complete"}"#);
    receive(
        session.as_mut(),
        &mut heard,
        r#"{"id":"p1","type":"error","payload":[{"message":"unknown topic"}]}"#,
    );
    assert_eq!(heard.other, 2);
    assert_eq!(heard.errors, [("graphql_error".into(), "unknown topic".into(), None, false)]);
    assert!(heard.deliveries.is_empty());
}

#[test]
fn an_error_with_an_extensions_code_is_counted_by_it() {
    let (mut session, mut heard) = acked(&Options::default());
    session.request(0, b"x", &mut heard);
    session.request(1, b"y", &mut heard);
    let refused =
        r#"{"id":"0","type":"error","payload":[{"message":"no","extensions":{"code":"FORBIDDEN"}}]}"#;
    let failed = r#"{"id":"1","type":"next","payload":{"data":null,"errors":[{"message":"bad","extensions":{"code":"BAD_USER_INPUT"}}]}}"#;
    receive(session.as_mut(), &mut heard, refused);
    receive(session.as_mut(), &mut heard, failed);
    assert_eq!(
        heard.errors,
        [
            ("graphql_error_forbidden".into(), "no".into(), Some(0), false),
            ("graphql_error_bad_user_input".into(), "bad".into(), Some(1), false),
        ]
    );
}
