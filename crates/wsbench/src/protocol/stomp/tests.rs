//! The STOMP session through the shared test outbox: the frames it sends at each step of
//! an echo and a pub/sub connection, what each broker frame becomes, heart-beats both ways,
//! frames cut over messages, and every way a broker's input ends the connection.

use std::time::{Duration, Instant};

use super::session::MAX_PENDING;
use super::*;
use crate::protocol::tests::{Heard, setup};

const CONNECTED: &[u8] = b"CONNECTED\nserver:RabbitMQ/3.10.8\nheart-beat:1000,1000\nversion:1.2\n\n\0\n";

/// A session of `usage` that has sent CONNECT and read CONNECTED at `now`.
fn connected(usage: Use, options: &Options, now: Instant) -> (Box<dyn Session>, Heard) {
    let mut session = Stomp.session(&setup(usage, options));
    let mut heard = Heard::default();
    session.open(now, &mut heard);
    session.receive(CONNECTED, false, now, &mut heard);
    (session, heard)
}

fn echo_destination() -> String {
    format!("/topic/wsbench-echo-{}-0", std::process::id())
}

#[test]
fn an_echo_connection_is_ready_once_its_own_subscription_has_its_receipt() {
    let options = Options::default();
    let mut session = Stomp.session(&setup(Use::Requests, &options));
    let mut heard = Heard::default();
    let now = Instant::now();
    session.open(now, &mut heard);
    assert_eq!(
        heard.sent_text(0),
        "CONNECT\naccept-version:1.2\nhost:/\nheart-beat:10000,10000\nlogin:guest\npasscode:guest\n\n\0"
    );
    assert!(!session.ready());
    session.receive(CONNECTED, false, now, &mut heard);
    let subscribe =
        format!("SUBSCRIBE\nid:echo\ndestination:{}\nack:auto\nreceipt:echo\n\n\0", echo_destination());
    assert_eq!(heard.sent_text(1), subscribe);
    assert!(!session.ready() && heard.ready == 0, "ready only on the RECEIPT");
    session.receive(b"RECEIPT\nreceipt-id:echo\n\n\0\n", false, now, &mut heard);
    assert!(session.ready());
    assert_eq!(heard.ready, 1);
}

#[test]
fn an_echo_is_a_send_to_the_own_destination_and_the_message_that_comes_back() {
    let now = Instant::now();
    let options = Options::default();
    let (mut session, mut heard) = connected(Use::Requests, &options, now);
    session.receive(b"RECEIPT\nreceipt-id:echo\n\n\0", false, now, &mut heard);
    session.request(3, b"{\"seq\":3}", &mut heard);
    let send = format!("SEND\ndestination:{}\ncontent-length:9\n\n{{\"seq\":3}}\0", echo_destination());
    assert_eq!(heard.sent_text(2), send);
    let message = format!(
        "MESSAGE\nsubscription:echo\ndestination:{}\nmessage-id:T_echo@@1\nredelivered:false\ncontent-length:9\n\n{{\"seq\":3}}\0\n",
        echo_destination()
    );
    session.receive(message.as_bytes(), false, now, &mut heard);
    assert_eq!(heard.replies, [(None, b"{\"seq\":3}".to_vec())]);
    assert!(heard.errors.is_empty(), "{:?}", heard.errors);
}

#[test]
fn binary_sends_every_frame_as_a_binary_message() {
    let now = Instant::now();
    let options = Options { binary: true, ..Options::default() };
    let (mut session, mut heard) = connected(Use::Requests, &options, now);
    session.receive(b"RECEIPT\nreceipt-id:echo\n\n\0", false, now, &mut heard);
    session.request(0, b"\0\x01\xff", &mut heard);
    assert!(heard.sent.iter().all(|(text, _)| !text), "{:?}", heard.sent);
    assert!(heard.sent[2].1.ends_with(b"content-length:3\n\n\0\x01\xff\0"));
}

#[test]
fn a_payload_that_is_not_utf8_goes_as_a_binary_message() {
    let now = Instant::now();
    let options = Options::default();
    let (mut session, mut heard) = connected(Use::Requests, &options, now);
    session.receive(b"RECEIPT\nreceipt-id:echo\n\n\0", false, now, &mut heard);
    session.request(0, b"plain", &mut heard);
    session.request(1, b"\xff\xfe", &mut heard);
    let text: Vec<bool> = heard.sent.iter().map(|(text, _)| *text).collect();
    assert_eq!(text, [true, true, true, false]);
}

#[test]
fn pubsub_topics_are_topic_destinations_acknowledged_by_their_receipts() {
    let now = Instant::now();
    let options = Options::default();
    let (mut session, mut heard) = connected(Use::PubSub, &options, now);
    assert!(session.ready());
    assert_eq!(heard.ready, 1, "ready on CONNECTED");
    session.subscribe("t3", &mut heard);
    assert_eq!(
        heard.sent_text(1),
        "SUBSCRIBE\nid:sub-0\ndestination:/topic/t3\nack:auto\nreceipt:sub-0\n\n\0"
    );
    session.receive(b"RECEIPT\nreceipt-id:sub-0\n\n\0\n", false, now, &mut heard);
    assert_eq!(heard.subscribed, ["t3"]);
    session.publish("t3", br#"{"id":"0-1"}"#, &mut heard);
    assert_eq!(heard.sent_text(2), "SEND\ndestination:/topic/t3\ncontent-length:12\n\n{\"id\":\"0-1\"}\0");
    let delivery = b"MESSAGE\nsubscription:sub-0\ndestination:/topic/t3\nmessage-id:m1\ncontent-length:12\n\n{\"id\":\"0-1\"}\0\n";
    session.receive(delivery, false, now, &mut heard);
    assert_eq!(heard.deliveries, [("t3".to_owned(), br#"{"id":"0-1"}"#.to_vec())]);
    // A receipt or a message for a subscription the session never made is nothing.
    session.receive(b"RECEIPT\nreceipt-id:sub-9\n\n\0", false, now, &mut heard);
    session.receive(
        b"MESSAGE\nsubscription:x\ndestination:/topic/t\nmessage-id:m\n\n\0",
        false,
        now,
        &mut heard,
    );
    assert_eq!((heard.other, heard.errors.len()), (2, 0));
}

#[test]
fn an_error_frame_ends_the_connection_with_the_brokers_message() {
    let now = Instant::now();
    let options = Options::default();
    let (mut session, mut heard) = connected(Use::PubSub, &options, now);
    let error = b"ERROR\nmessage:Unknown destination\ncontent-type:text/plain\ncontent-length:21\n\n'/x' is not valid.\nAh\0\n";
    session.receive(error, false, now, &mut heard);
    assert_eq!(heard.errors, [("stomp_error".into(), "Unknown destination".into(), None, true)]);
    assert_eq!(session.next_timer(), None, "no heart-beats after the end");
    // Without a message header, the body's first line says it.
    let mut session = Stomp.session(&setup(Use::PubSub, &options));
    let mut heard = Heard::default();
    session.open(now, &mut heard);
    session.receive(b"ERROR\n\nVirtual host 'x' access denied\nmore\0", false, now, &mut heard);
    assert_eq!(heard.errors[0].1, "Virtual host 'x' access denied");
    session.receive(CONNECTED, false, now, &mut heard);
    assert_eq!((heard.ready, heard.errors.len()), (0, 1), "nothing is read after a fatal error");
}

#[test]
fn a_server_of_another_protocol_fails_on_its_first_message() {
    let options = Options::default();
    let now = Instant::now();
    let cases: [(&[u8], &str); 3] = [
        (br#"{"hello":"world"}"#, "stomp_malformed"),
        (b"hello world\n", "stomp_malformed"),
        // An echo server sends CONNECT back.
        (b"CONNECT\naccept-version:1.2\nhost:/\n\n\0", "stomp_unexpected_frame"),
    ];
    for (message, cause) in cases {
        let mut session = Stomp.session(&setup(Use::Requests, &options));
        let mut heard = Heard::default();
        session.open(now, &mut heard);
        session.receive(message, false, now, &mut heard);
        assert_eq!(heard.errors.len(), 1, "{message:?}: {:?}", heard.errors);
        let (got, detail, _, fatal) = &heard.errors[0];
        assert_eq!((got.as_str(), *fatal), (cause, true), "{detail}");
        assert!(!detail.contains('\n'), "one line: {detail:?}");
    }
}

#[test]
fn a_frame_cut_over_messages_is_read_whole_and_its_buffer_is_bounded() {
    let now = Instant::now();
    let options = Options::default();
    let (mut session, mut heard) = connected(Use::PubSub, &options, now);
    session.subscribe("t0", &mut heard);
    let wire = b"RECEIPT\nreceipt-id:sub-0\n\n\0\nMESSAGE\nsubscription:sub-0\ndestination:/topic/t0\nmessage-id:1\n\nbody\0";
    for piece in wire.chunks(7) {
        session.receive(piece, false, now, &mut heard);
    }
    assert_eq!(heard.subscribed, ["t0"]);
    assert_eq!(heard.deliveries, [("t0".to_owned(), b"body".to_vec())]);
    assert!(heard.errors.is_empty(), "{:?}", heard.errors);
    // A frame that never ends fails once the buffer is full, not after it grew further.
    session.receive(b"MESSAGE\nsubscription:sub-0\n\n", false, now, &mut heard);
    let chunk = vec![b'x'; 64 * 1024];
    let mut sent = 0;
    while heard.errors.is_empty() && sent <= MAX_PENDING + chunk.len() {
        session.receive(&chunk, false, now, &mut heard);
        sent += chunk.len();
    }
    assert_eq!(heard.errors[0].0, "stomp_frame_too_large");
    assert!(
        sent > MAX_PENDING - chunk.len() && sent <= MAX_PENDING + chunk.len(),
        "failed after {sent} bytes"
    );
}

#[test]
fn heart_beats_are_answered_sent_when_idle_and_missed_when_the_server_is_silent() {
    let start = Instant::now();
    let ms = Duration::from_millis(1);
    let options = Options::with([("heartbeat", "1s".into())]);
    let (mut session, mut heard) = connected(Use::PubSub, &options, start);
    assert!(heard.sent_text(0).contains("heart-beat:1000,1000\n"));
    session.receive(b"\n", false, start + 400 * ms, &mut heard);
    assert_eq!(heard.other, 1, "the server's heart-beat");
    // The client looks every half interval and sends an end of line when it sent nothing.
    assert_eq!(session.next_timer(), Some(start + 500 * ms));
    session.on_timer(start + 500 * ms, &mut heard);
    assert_eq!(heard.sent_text(1), "\n", "nothing went out since CONNECTED");
    session.publish("t0", b"{}", &mut heard);
    session.on_timer(start + 1000 * ms, &mut heard);
    assert_eq!(heard.sent.len(), 3, "a publish went out since the last look");
    session.on_timer(start + 1500 * ms, &mut heard);
    assert_eq!(heard.sent_text(3), "\n");
    // Silent for twice its interval (2 s after 400 ms), the server is gone.
    assert_eq!(session.next_timer(), Some(start + 2000 * ms));
    session.on_timer(start + 2000 * ms, &mut heard);
    assert!(heard.errors.is_empty());
    session.on_timer(start + 2400 * ms, &mut heard);
    assert_eq!(heard.errors[0].0, "stomp_heartbeat_missed");
    assert!(heard.errors[0].3, "fatal");
    assert_eq!(session.next_timer(), None);
}

#[test]
fn no_heart_beats_flow_when_asked_for_none() {
    let options = Options::with([("heartbeat", "0s".into())]);
    let (session, heard) = connected(Use::PubSub, &options, Instant::now());
    assert!(heard.sent_text(0).contains("heart-beat:0,0\n"));
    assert_eq!(session.next_timer(), None);
}

#[test]
fn disconnect_goes_out_at_the_end_once_connected() {
    let options = Options::with([("vhost", "bench".into())]);
    let mut session = Stomp.session(&setup(Use::PubSub, &options));
    let mut heard = Heard::default();
    session.open(Instant::now(), &mut heard);
    assert!(heard.sent_text(0).contains("\nhost:bench\n"));
    session.close(&mut heard);
    assert_eq!(heard.sent.len(), 1, "nothing to disconnect before CONNECTED");
    let (mut session, mut heard) = connected(Use::PubSub, &options, Instant::now());
    session.close(&mut heard);
    session.close(&mut heard);
    assert_eq!(heard.sent_text(1), "DISCONNECT\nreceipt:disconnect\n\n\0");
    assert_eq!(heard.sent.len(), 2);
    assert_eq!(session.next_timer(), None, "no heart-beat after DISCONNECT");
}

#[test]
fn a_destination_template_names_each_topic_by_its_number() {
    let now = Instant::now();
    let options = Options::with([("destination", "/queue/q{topic}.in".into())]);
    Stomp.check(&options).unwrap();
    let (mut session, mut heard) = connected(Use::PubSub, &options, now);
    session.subscribe("t12", &mut heard);
    assert_eq!(
        heard.sent_text(1),
        "SUBSCRIBE\nid:sub-0\ndestination:/queue/q12.in\nack:auto\nreceipt:sub-0\n\n\0"
    );
    session.receive(b"RECEIPT\nreceipt-id:sub-0\n\n\0\n", false, now, &mut heard);
    session.publish("t12", b"{}", &mut heard);
    assert_eq!(heard.sent_text(2), "SEND\ndestination:/queue/q12.in\ncontent-length:2\n\n{}\0");
    let delivery = b"MESSAGE\nsubscription:sub-0\ndestination:/queue/q12.in\nmessage-id:m1\n\n{}\0";
    session.receive(delivery, false, now, &mut heard);
    assert_eq!(
        heard.deliveries,
        [("t12".to_owned(), b"{}".to_vec())],
        "delivered under the scenario's topic"
    );
    let with = |template: &str| Stomp.check(&Options::with([("destination", template.into())]));
    for bad in ["/queue/q", "/queue/{topic}/{topic}", "/queue/q{topic}\nx"] {
        assert!(with(bad).unwrap_err().contains("--destination"), "{bad}");
    }
    for prefix in ["/queue/q{topic}", "/exchange/bench/t{topic}", "/amq/queue/q{topic}", "/topic/a.{topic}.b"]
    {
        assert_eq!(with(prefix), Ok(()), "any broker prefix: {prefix}");
    }
}

#[test]
fn options_it_cannot_honour_are_refused() {
    let with = |heartbeat: &str| Options::with([("heartbeat", heartbeat.into())]);
    assert!(Stomp.check(&with("250ms")).is_ok());
    assert!(Stomp.check(&with("0s")).is_ok());
    assert!(Stomp.check(&with("soon")).unwrap_err().contains("--heartbeat"));
    assert!(Stomp.check(&with("10us")).unwrap_err().contains("under a millisecond"));
    assert!(Stomp.check(&with("2000h")).unwrap_err().contains("too long"));
    assert!(Stomp.check(&Options::with([("vhost", "".into())])).is_err());
    assert!(Stomp.check(&Options::with([("vhost", "a\nb".into())])).is_err());
    assert!(Stomp.serves(Use::Requests) && Stomp.serves(Use::PubSub) && !Stomp.serves(Use::Messages));
}

/// Rooms by connection, as a `--data` file with a `room` column gives them.
#[derive(Debug)]
struct Rooms(&'static [&'static str]);

impl crate::protocol::DataRows for Rooms {
    fn fill_row<'t>(&self, template: &'t str, conn: u64) -> std::borrow::Cow<'t, str> {
        template.replace("{data.room}", self.0[(conn % self.0.len() as u64) as usize]).into()
    }
}

#[test]
fn a_destination_and_vhost_take_the_connections_data_row_once_at_setup() {
    let options = Options::with([
        ("destination", "/exchange/{data.room}/t{topic}".into()),
        ("vhost", "{data.room}-vh".into()),
    ]);
    let rooms = Rooms(&["lobby", "sport"]);
    let mut session = Stomp.session(&Setup { index: 3, data: Some(&rooms), ..setup(Use::PubSub, &options) });
    let mut heard = Heard::default();
    session.open(Instant::now(), &mut heard);
    assert!(heard.sent_text(0).contains("\nhost:sport-vh\n"), "{}", heard.sent_text(0));
    session.receive(CONNECTED, false, Instant::now(), &mut heard);
    session.subscribe("t4", &mut heard);
    assert!(heard.sent_text(1).contains("\ndestination:/exchange/sport/t4\n"), "{}", heard.sent_text(1));
}

#[test]
fn connect_logs_in_with_the_login_and_passcode_given() {
    let opened = |options: &Options| {
        Stomp.check(options).unwrap();
        let mut session = Stomp.session(&setup(Use::PubSub, options));
        let mut heard = Heard::default();
        session.open(Instant::now(), &mut heard);
        (format!("{session:?}"), heard.sent_text(0))
    };
    let mut options =
        Options::with([("login", "bench".into()), ("passcode", crate::options::REDACTED.into())]);
    options.secrets = crate::options::Secrets::of([("passcode", "hunter2".to_owned())]);
    let (debug, connect) = opened(&options);
    assert!(connect.contains("\nlogin:bench\npasscode:hunter2\n"), "{connect}");
    assert!(!debug.contains("hunter2"), "{debug}");
    let (_, alone) = opened(&Options::with([("login", "bench".into())]));
    assert!(alone.contains("\nlogin:bench\n\n") && !alone.contains("passcode"), "{alone}");
    let mut broken = Options::with([]);
    broken.secrets = crate::options::Secrets::of([("passcode", "a\nb".to_owned())]);
    assert_eq!(
        Stomp.check(&broken).unwrap_err(),
        "--passcode: give one line of at most 4,096 bytes, without NUL"
    );
    let long = Options::with([("login", "x".repeat(4097).into())]);
    assert_eq!(Stomp.check(&long).unwrap_err(), "--login: give one line of at most 4,096 bytes, without NUL");
}
