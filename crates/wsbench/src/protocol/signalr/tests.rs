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
    let mut session = session(usage, &Options::default());
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
