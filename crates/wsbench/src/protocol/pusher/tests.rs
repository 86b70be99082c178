//! The Pusher session against messages as sockudo 5.2 writes them.

use std::time::{Duration, Instant};

use wsbench_appproto::pusher::channel_auth;

use super::*;
use crate::protocol::tests::{Heard, setup};

const ESTABLISHED: &str = r#"{"event":"pusher:connection_established","data":"{\"socket_id\":\"123.456\",\"activity_timeout\":30}"}"#;

fn session(usage: Use, options: &Options) -> Box<dyn Session> {
    Pusher.session(&setup(usage, options))
}

fn receive(session: &mut dyn Session, message: &str, heard: &mut Heard) {
    session.receive(message.as_bytes(), false, Instant::now(), heard);
}

fn established(usage: Use, options: &Options) -> (Box<dyn Session>, Heard) {
    let mut session = session(usage, options);
    let mut heard = Heard::default();
    session.open(Instant::now(), &mut heard);
    receive(session.as_mut(), ESTABLISHED, &mut heard);
    assert!(session.ready());
    (session, Heard::default())
}

fn with_secret() -> Options {
    Options::with([("app-secret", "app-secret".into())])
}

#[test]
fn an_echo_is_a_ping_answered_by_its_pong_in_order() {
    let (mut session, mut heard) = established(Use::Requests, &Options::default());
    session.request(0, b"ignored", &mut heard);
    session.request(1, b"ignored", &mut heard);
    assert_eq!(heard.sent_text(0), r#"{"event":"pusher:ping","data":{}}"#);
    assert_eq!(heard.sent.len(), 2);
    receive(session.as_mut(), r#"{"event":"pusher:pong"}"#, &mut heard);
    receive(session.as_mut(), r#"{"event":"pusher:pong","data":{}}"#, &mut heard);
    receive(session.as_mut(), r#"{"event":"pusher:pong"}"#, &mut heard);
    assert_eq!(heard.replies, [(None, Vec::new()), (None, Vec::new())]);
    assert_eq!(heard.other, 1, "a pong owed to nobody is nothing the load asked for");
    assert!(!Pusher.replies_echo(&Options::default()));
}

#[test]
fn a_private_subscription_is_signed_with_the_socket_id_and_its_events_are_deliveries() {
    let (mut session, mut heard) = established(Use::PubSub, &with_secret());
    session.subscribe("t3", &mut heard);
    let auth = channel_auth("app-key", "app-secret", "123.456", "private-wsbench-3", None);
    let expected =
        format!(r#"{{"event":"pusher:subscribe","data":{{"channel":"private-wsbench-3","auth":"{auth}"}}}}"#);
    assert_eq!(heard.sent_text(0), expected);
    let succeeded =
        r#"{"event":"pusher_internal:subscription_succeeded","channel":"private-wsbench-3","data":"{}"}"#;
    receive(session.as_mut(), succeeded, &mut heard);
    assert_eq!(heard.subscribed, ["t3"]);
    let event = r#"{"event":"client-wsbench","channel":"private-wsbench-3","data":{"id":"0-1"}}"#;
    receive(session.as_mut(), event, &mut heard);
    let published = r#"{"event":"tick","channel":"private-wsbench-3","data":"{\"id\":\"0-2\"}"}"#;
    receive(session.as_mut(), published, &mut heard);
    assert_eq!(
        heard.deliveries,
        [("t3".to_owned(), br#"{"id":"0-1"}"#.to_vec()), ("t3".to_owned(), br#"{"id":"0-2"}"#.to_vec())]
    );
}

#[test]
fn a_presence_member_is_named_by_its_user_id_and_signed_with_it() {
    let options = Options::with([
        ("app-secret", "s".into()),
        ("channel", "presence-room-{topic}".into()),
        ("user-id", "u{conn}-{run}".into()),
    ]);
    let (mut session, mut heard) = established(Use::PubSub, &options);
    session.subscribe("t0", &mut heard);
    let sent: serde_json::Value = serde_json::from_str(&heard.sent_text(0)).unwrap();
    let member = r#"{"user_id":"u0-r1","user_info":{}}"#;
    assert_eq!(sent["data"]["channel_data"], member);
    assert_eq!(
        sent["data"]["auth"],
        channel_auth("app-key", "s", "123.456", "presence-room-0", Some(member))
    );
}

#[test]
fn a_publisher_subscribes_first_and_its_client_events_wait_for_the_subscription() {
    let (mut session, mut heard) = established(Use::PubSub, &with_secret());
    session.publish("t1", br#"{"id":"0-0"}"#, &mut heard);
    assert_eq!(heard.sent.len(), 1, "the subscription alone");
    let succeeded =
        r#"{"event":"pusher_internal:subscription_succeeded","channel":"private-wsbench-1","data":"{}"}"#;
    receive(session.as_mut(), succeeded, &mut heard);
    session.publish("t1", br#"{"id":"0-1"}"#, &mut heard);
    assert_eq!(
        heard.sent_text(1),
        r#"{"event":"client-wsbench","channel":"private-wsbench-1","data":{"id":"0-0"}}"#
    );
    assert_eq!(
        heard.sent_text(2),
        r#"{"event":"client-wsbench","channel":"private-wsbench-1","data":{"id":"0-1"}}"#
    );
    assert!(heard.subscribed.is_empty() && heard.errors.is_empty());
}

#[test]
fn the_servers_errors_are_counted_by_code_fatal_for_the_connections_codes() {
    let (mut session, mut heard) = established(Use::PubSub, &with_secret());
    let refused = r#"{"event":"pusher:error","data":{"code":4301,"message":"Client event rejected"}}"#;
    receive(session.as_mut(), refused, &mut heard);
    assert!(session.ready(), "a refused client event does not end the connection");
    let bad_auth = r#"{"event":"pusher:error","data":{"message":"Authentication error: Channel requires authentication","code":4009}}"#;
    receive(session.as_mut(), bad_auth, &mut heard);
    assert!(!session.ready());
    let causes: Vec<(&str, bool)> = heard.errors.iter().map(|e| (e.0.as_str(), e.3)).collect();
    assert_eq!(causes, [("pusher_error_4301", false), ("pusher_error_4009", true)]);
    assert_eq!(heard.errors[1].1, "Authentication error: Channel requires authentication (code 4009)");

    let mut unknown_app = session_of(Use::Requests);
    let mut heard = Heard::default();
    receive(
        unknown_app.as_mut(),
        r#"{"event":"pusher:error","data":{"code":4001,"message":"App key not found"}}"#,
        &mut heard,
    );
    assert_eq!(heard.errors[0].0, "pusher_error_4001");
    assert!(heard.errors[0].3);
}

fn session_of(usage: Use) -> Box<dyn Session> {
    session(usage, &Options::default())
}

#[test]
fn a_subscription_error_names_its_channel_and_status() {
    let (mut session, mut heard) =
        established(Use::Stream, &Options::with([("subscribe-channel", "feed".into())]));
    session.subscribe_stream(&mut heard);
    assert_eq!(heard.sent_text(0), r#"{"event":"pusher:subscribe","data":{"channel":"feed"}}"#);
    let error = r#"{"event":"pusher:subscription_error","channel":"feed","data":{"type":"AuthError","error":"no","status":403}}"#;
    receive(session.as_mut(), error, &mut heard);
    assert_eq!(
        heard.errors,
        [(
            "pusher_subscription_error_403".into(),
            "the server refused the stream's subscription to feed: no".into(),
            None,
            true
        )]
    );
}

#[test]
fn a_private_channel_without_the_secret_is_said_at_once() {
    let (mut session, mut heard) = established(Use::PubSub, &Options::default());
    let start = Instant::now();
    session.subscribe("t0", &mut heard);
    assert!(heard.sent.is_empty(), "nothing unsigned is sent");
    assert!(session.next_timer().is_some_and(|at| at <= start + Duration::from_millis(100)));
    session.on_timer(Instant::now(), &mut heard);
    assert_eq!(heard.errors[0].0, "pusher_no_secret");
    assert!(
        heard.errors[0].1.starts_with("private-wsbench-0 is signed with the app's secret"),
        "{}",
        heard.errors[0].1
    );
}

#[test]
fn the_servers_pings_are_answered_and_a_silent_server_is_pinged_then_given_up() {
    let mut session = session_of(Use::PubSub);
    let mut heard = Heard::default();
    let start = Instant::now();
    session.open(start, &mut heard);
    session.receive(ESTABLISHED.as_bytes(), false, start, &mut heard);
    session.receive(br#"{"event":"pusher:ping","data":{}}"#, false, start, &mut heard);
    assert_eq!(heard.sent_text(0), r#"{"event":"pusher:pong","data":{}}"#);
    // The server's activity timeout is 30 s: then the client pings, and waits 30 s more.
    assert_eq!(session.next_timer(), Some(start + Duration::from_secs(30)));
    session.on_timer(start + Duration::from_secs(30), &mut heard);
    assert_eq!(heard.sent_text(1), r#"{"event":"pusher:ping","data":{}}"#);
    assert_eq!(session.next_timer(), Some(start + Duration::from_secs(60)));
    session.on_timer(start + Duration::from_secs(60), &mut heard);
    assert_eq!(heard.errors[0].0, "pusher_no_pong");
    assert!(heard.errors[0].3);
}

#[test]
fn what_is_not_pusher_is_malformed_and_fatal_before_the_connection_is_established() {
    let mut session = session_of(Use::Requests);
    let mut heard = Heard::default();
    receive(session.as_mut(), "hello", &mut heard);
    assert_eq!(heard.errors[0].0, "pusher_malformed");
    assert!(heard.errors[0].3);
}

#[test]
fn a_connection_ended_before_it_was_established_names_the_app_key() {
    let mut session = session(Use::Requests, &Options::with([("app-key", "nope".into())]));
    let mut heard = Heard::default();
    session.ended_while_opening(None, &mut heard);
    session.ended_while_opening(Some((1000, "")), &mut heard);
    assert_eq!(heard.errors.len(), 1, "said once");
    assert_eq!(heard.errors[0].0, "pusher_not_established");
    assert!(
        heard.errors[0].1.ends_with(": is \"nope\" the key of one of its apps (--app-key)?"),
        "{}",
        heard.errors[0].1
    );
}

#[test]
fn the_path_names_the_app_key_and_asks_for_protocol_7() {
    let options = Options::with([("app-key", "k1".into())]);
    let version = env!("CARGO_PKG_VERSION");
    let full = format!("/app/k1?protocol=7&client=wsbench&version={version}&flash=false");
    assert_eq!(Pusher.path_for("", &options), Some(full.clone()));
    assert_eq!(Pusher.path_for("/", &options), Some(full));
    let added = format!("/app/x?a=1&protocol=7&client=wsbench&version={version}&flash=false");
    assert_eq!(Pusher.path_for("/app/x?a=1", &options), Some(added));
    assert_eq!(Pusher.path_for("/app/x?protocol=7", &options), None);
    assert_eq!(Pusher.path_for("/proxy/ws", &options), None);
}

#[test]
fn options_it_cannot_honour_are_refused_with_what_to_give() {
    let check = |given: &[(&str, &str)]| {
        Pusher.check(&Options::with(given.iter().map(|(key, value)| (*key, toml::Value::from(*value)))))
    };
    assert!(Pusher.check(&Options { binary: true, ..Options::default() }).unwrap_err().contains("--binary"));
    assert!(check(&[("app-key", "a b")]).unwrap_err().starts_with("--app-key \"a b\""));
    assert!(check(&[("channel", "room")]).unwrap_err().contains("give {topic} once"));
    assert!(check(&[("channel", "room {topic}")]).unwrap_err().contains("give {topic} once"));
    let unsigned = check(&[("channel", "private-{topic}")]).unwrap_err();
    assert!(unsigned.contains("give --app-secret"), "{unsigned}");
    assert_eq!(check(&[("channel", "private-{topic}"), ("app-secret", "s")]), Ok(()));
    assert_eq!(check(&[("channel", "public-{topic}")]), Ok(()));
    assert!(check(&[("client-event", "message")]).unwrap_err().contains("starts with client-"));
    assert!(check(&[("app-secret", "")]).unwrap_err().contains("--app-secret is empty"));
    assert_eq!(check(&[("channel", "room-{data.room}-{topic}")]), Ok(()));
    assert!(!Pusher.serves(Use::Messages));
}
