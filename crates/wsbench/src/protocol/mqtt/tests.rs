//! The MQTT session through the shared test outbox: its opening for each use, echo and
//! pub/sub at both QoS, packets split over and packed into messages, every refusal and
//! every kind of broken broker as a cause, the keep-alive, and the options it refuses.

use std::time::{Duration, Instant};

use wsbench_appproto::mqtt::{self, Publish, QoS, Version};

use super::*;
use crate::protocol::tests::{Heard, setup};

/// A session of connection 0, its CONNECT sent into the `Heard` returned.
fn opened(usage: Use, qos: u8, version: &str) -> (Box<dyn Session>, Heard) {
    let mut session = make(usage, qos, version);
    let mut heard = Heard::default();
    session.open(Instant::now(), &mut heard);
    (session, heard)
}

fn make(usage: Use, qos: u8, version: &str) -> Box<dyn Session> {
    let options = Options::with([("qos", i64::from(qos).into()), ("mqtt-version", version.into())]);
    Mqtt.check(&options).unwrap();
    Mqtt.session(&setup(usage, &options))
}

/// The packet type of each message sent (each a binary message).
fn sent_kinds(heard: &Heard) -> Vec<u8> {
    let kind = |(text, payload): &(bool, Vec<u8>)| {
        assert!(!text, "MQTT goes in binary messages");
        payload[0] >> 4
    };
    heard.sent.iter().map(kind).collect()
}

fn feed(session: &mut Box<dyn Session>, heard: &mut Heard, message: &[u8]) {
    session.receive(message, true, Instant::now(), heard);
}

fn publish_packet(version: Version, topic: &str, qos: QoS, packet_id: u16, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let publish = Publish { topic, qos, packet_id, retain: false, payload };
    mqtt::encode_publish(&mut out, version, &publish).unwrap();
    out
}

const CONNACK_OK: [u8; 4] = [0x20, 2, 0, 0];
const CONNACK_OK_5: [u8; 5] = [0x20, 3, 0, 0, 0];
const ECHO_TOPIC: &str = "wsbench/echo/wsbench-r1-0";

#[test]
fn a_pubsub_connection_connects_cleanly_and_is_ready_at_its_connack() {
    let (mut session, mut heard) = opened(Use::PubSub, 0, "3.1.1");
    let mut connect = Vec::new();
    let expected = mqtt::Connect {
        client_id: "wsbench-r1-0",
        keep_alive: 30,
        clean_start: true,
        username: None,
        password: None,
        session_expiry: None,
    };
    mqtt::encode_connect(&mut connect, Version::V311, &expected).unwrap();
    assert_eq!(heard.sent, [(false, connect)]);
    assert!(!session.ready());
    assert_eq!(session.next_timer(), None, "the connect timeout covers the CONNACK");
    feed(&mut session, &mut heard, &CONNACK_OK);
    assert!(session.ready());
    assert_eq!(heard.ready, 1);
}

#[test]
fn an_echo_connection_is_ready_once_its_own_topic_is_subscribed() {
    let (mut session, mut heard) = opened(Use::Requests, 1, "5");
    feed(&mut session, &mut heard, &CONNACK_OK_5);
    assert!(!session.ready());
    assert_eq!(heard.ready, 0);
    let mut subscribe = Vec::new();
    mqtt::encode_subscribe(&mut subscribe, Version::V5, 1, ECHO_TOPIC, QoS::AtLeastOnce).unwrap();
    assert_eq!(heard.sent[1], (false, subscribe));
    feed(&mut session, &mut heard, &[0x90, 4, 0, 1, 0, 1]);
    assert!(session.ready());
    assert_eq!(heard.ready, 1);
}

/// Ready, with `heard` holding nothing yet.
fn ready_echo(qos: u8, version: &str) -> (Box<dyn Session>, Heard) {
    let (mut session, mut heard) = opened(Use::Requests, qos, version);
    let connack: &[u8] = if version == "5" { &CONNACK_OK_5 } else { &CONNACK_OK };
    let suback: &[u8] = if version == "5" { &[0x90, 4, 0, 1, 0, qos] } else { &[0x90, 3, 0, 1, qos] };
    feed(&mut session, &mut heard, &[connack, suback].concat());
    assert!(session.ready());
    (session, Heard::default())
}

#[test]
fn an_echo_at_qos_1_is_a_publish_to_its_own_topic_acknowledged_either_way_round() {
    let (mut session, mut heard) = ready_echo(1, "3.1.1");
    session.request(0, b"first", &mut heard);
    session.request(1, b"second", &mut heard);
    assert_eq!(heard.sent[0].1, publish_packet(Version::V311, ECHO_TOPIC, QoS::AtLeastOnce, 2, b"first"));
    assert_eq!(heard.sent[1].1, publish_packet(Version::V311, ECHO_TOPIC, QoS::AtLeastOnce, 3, b"second"));
    // mosquitto: PUBACK then the delivery; NATS: the delivery may come first.
    let first = publish_packet(Version::V311, ECHO_TOPIC, QoS::AtLeastOnce, 7, b"first");
    let second = publish_packet(Version::V311, ECHO_TOPIC, QoS::AtLeastOnce, 8, b"second");
    feed(&mut session, &mut heard, &[&[0x40, 2, 0, 2][..], &first].concat());
    feed(&mut session, &mut heard, &[&second[..], &[0x40, 2, 0, 3]].concat());
    assert_eq!(heard.replies, [(None, b"first".to_vec()), (None, b"second".to_vec())]);
    // Each QoS 1 delivery is acknowledged with its own packet id.
    assert_eq!(heard.sent[2..], [(false, vec![0x40, 2, 0, 7]), (false, vec![0x40, 2, 0, 8])]);
    assert!(heard.errors.is_empty());
}

#[test]
fn an_echo_at_qos_0_has_no_packet_id_and_no_acknowledgement() {
    let (mut session, mut heard) = ready_echo(0, "5");
    session.request(0, b"x", &mut heard);
    assert_eq!(heard.sent[0].1, publish_packet(Version::V5, ECHO_TOPIC, QoS::AtMostOnce, 0, b"x"));
    feed(&mut session, &mut heard, &publish_packet(Version::V5, ECHO_TOPIC, QoS::AtMostOnce, 0, b"x"));
    assert_eq!(heard.replies, [(None, b"x".to_vec())]);
    assert_eq!(heard.sent.len(), 1);
}

#[test]
fn packets_split_over_messages_and_packed_into_one_are_read_alike() {
    let (mut session, mut heard) = ready_echo(0, "3.1.1");
    let mut wire = Vec::new();
    for payload in [&b"one"[..], &[7; 300], b"three"] {
        wire.extend(publish_packet(Version::V311, ECHO_TOPIC, QoS::AtMostOnce, 0, payload));
        wire.extend([0xD0, 0]);
    }
    for piece in wire.chunks(7) {
        feed(&mut session, &mut heard, piece);
    }
    feed(&mut session, &mut heard, &wire);
    let payloads: Vec<Vec<u8>> = heard.replies.iter().map(|(_, payload)| payload.clone()).collect();
    let once = [b"one".to_vec(), vec![7; 300], b"three".to_vec()];
    assert_eq!(payloads, [&once[..], &once[..]].concat());
    assert!(heard.errors.is_empty());
}

#[test]
fn a_refusing_connack_is_fatal_and_named_after_its_code_in_both_versions() {
    for (version, connack, detail) in [
        ("3.1.1", &[0x20, 2, 0, 5][..], "CONNACK return code 0x05 (not_authorized)"),
        ("5", &[0x20, 3, 0, 0x87, 0], "CONNACK reason code 0x87 (not_authorized)"),
    ] {
        let (mut session, mut heard) = opened(Use::PubSub, 0, version);
        feed(&mut session, &mut heard, connack);
        assert_eq!(heard.errors, [("mqtt_connack_not_authorized".into(), detail.into(), None, true)]);
        assert_eq!(heard.ready, 0);
        session.close(&mut heard);
        assert_eq!(heard.sent.len(), 1, "no DISCONNECT on a refused connection");
    }
}

#[test]
fn a_refused_echo_subscription_ends_the_connection_and_a_pubsub_one_is_counted() {
    let (mut echo, mut heard) = opened(Use::Requests, 0, "3.1.1");
    feed(&mut echo, &mut heard, &[0x20, 2, 0, 0, 0x90, 3, 0, 1, 0x80]);
    let detail = format!("SUBACK 0x80 (failure) for topic {ECHO_TOPIC}");
    assert_eq!(heard.errors, [("mqtt_suback_failure".into(), detail, None, true)]);
    assert!(!echo.ready());

    let (mut subscriber, mut heard) = opened(Use::PubSub, 1, "3.1.1");
    feed(&mut subscriber, &mut heard, &CONNACK_OK);
    subscriber.subscribe("t1", &mut heard);
    subscriber.subscribe("t2", &mut heard);
    feed(&mut subscriber, &mut heard, &[0x90, 3, 0, 2, 0x80, 0x90, 3, 0, 1, 1]);
    assert_eq!(
        heard.errors,
        [("mqtt_suback_failure".into(), "SUBACK 0x80 (failure) for topic t2".into(), None, false)]
    );
    assert_eq!(heard.subscribed, ["t1"]);
}

#[test]
fn pubsub_subscribes_publishes_and_delivers_on_the_topics_as_named() {
    let (mut session, mut heard) = opened(Use::PubSub, 1, "5");
    feed(&mut session, &mut heard, &CONNACK_OK_5);
    session.subscribe("t3", &mut heard);
    let mut subscribe = Vec::new();
    mqtt::encode_subscribe(&mut subscribe, Version::V5, 1, "t3", QoS::AtLeastOnce).unwrap();
    assert_eq!(heard.sent[1].1, subscribe);
    feed(&mut session, &mut heard, &[0x90, 4, 0, 1, 0, 1]);
    assert_eq!(heard.subscribed, ["t3"]);
    session.publish("t3", br#"{"id":"0-0"}"#, &mut heard);
    assert_eq!(heard.sent[2].1, publish_packet(Version::V5, "t3", QoS::AtLeastOnce, 2, br#"{"id":"0-0"}"#));
    feed(&mut session, &mut heard, &publish_packet(Version::V5, "t3", QoS::AtLeastOnce, 9, b"{}"));
    assert_eq!(heard.deliveries, [("t3".into(), b"{}".to_vec())]);
    assert_eq!(heard.sent[3].1, [0x40, 2, 0, 9]);
    // PUBACK "no matching subscribers" is no error; "not authorized" is.
    feed(&mut session, &mut heard, &[0x40, 3, 0, 2, 0x10]);
    session.publish("t3", b"{}", &mut heard);
    feed(&mut session, &mut heard, &[0x40, 3, 0, 3, 0x87]);
    assert_eq!(
        heard.errors,
        [(
            "mqtt_puback_not_authorized".into(),
            "PUBACK reason code 0x87 (not_authorized)".into(),
            None,
            false
        )]
    );
}

#[test]
fn a_topic_template_names_each_mqtt_topic_and_deliveries_come_back_under_the_workloads_name() {
    let options = Options::with([("topic", "bench/{topic}/load".into())]);
    Mqtt.check(&options).unwrap();
    let mut session = Mqtt.session(&setup(Use::PubSub, &options));
    let mut heard = Heard::default();
    session.open(Instant::now(), &mut heard);
    feed(&mut session, &mut heard, &CONNACK_OK);
    session.subscribe("t12", &mut heard);
    let mut subscribe = Vec::new();
    mqtt::encode_subscribe(&mut subscribe, Version::V311, 1, "bench/12/load", QoS::AtMostOnce).unwrap();
    assert_eq!(heard.sent[1].1, subscribe);
    feed(&mut session, &mut heard, &[0x90, 3, 0, 1, 0]);
    assert_eq!(heard.subscribed, ["t12"]);
    session.publish("t12", b"{}", &mut heard);
    assert_eq!(heard.sent[2].1, publish_packet(Version::V311, "bench/12/load", QoS::AtMostOnce, 0, b"{}"));
    feed(
        &mut session,
        &mut heard,
        &publish_packet(Version::V311, "bench/12/load", QoS::AtMostOnce, 0, b"{}"),
    );
    assert_eq!(heard.deliveries, [("t12".into(), b"{}".to_vec())]);
    let with = |template: &str| Mqtt.check(&Options::with([("topic", template.into())]));
    for bad in ["bench/x", "bench/{topic}/{topic}", "bench/+/{topic}", "bench/{topic}/#"] {
        assert!(with(bad).unwrap_err().contains("--topic"), "{bad}");
    }
}

#[test]
fn a_refused_echo_publish_frees_its_request() {
    let (mut session, mut heard) = ready_echo(1, "5");
    session.request(41, b"x", &mut heard);
    feed(&mut session, &mut heard, &[0x40, 3, 0, 2, 0x97]);
    assert_eq!(heard.errors[0].0, "mqtt_puback_quota_exceeded");
    assert_eq!(heard.errors[0].2, Some(41));
}

#[test]
fn the_keep_alive_pings_every_half_and_a_missing_pingresp_is_fatal() {
    let start = Instant::now();
    let mut session = make(Use::PubSub, 0, "3.1.1");
    let mut heard = Heard::default();
    session.open(start, &mut heard);
    session.receive(&CONNACK_OK, true, start, &mut heard);
    let half = KEEP_ALIVE / 2;
    assert_eq!(session.next_timer(), Some(start + half));
    session.on_timer(start + half, &mut heard);
    assert_eq!(heard.sent.last().unwrap().1, [0xC0, 0]);
    assert_eq!(session.next_timer(), Some(start + 2 * half));
    session.receive(&[0xD0, 0], true, start + half, &mut heard);
    session.on_timer(start + 2 * half, &mut heard);
    assert_eq!(sent_kinds(&heard), [1, 12, 12]);
    // This PINGRESP never comes: one keep-alive after its PINGREQ, the connection ends.
    session.on_timer(start + 3 * half, &mut heard);
    assert!(heard.errors.is_empty());
    assert_eq!(session.next_timer(), Some(start + 2 * half + KEEP_ALIVE));
    session.on_timer(start + 2 * half + KEEP_ALIVE + Duration::from_millis(1), &mut heard);
    assert_eq!(
        heard.errors,
        [("mqtt_pingresp_missed".into(), "no PINGRESP within the keep-alive of 30 s".into(), None, true)]
    );
    assert_eq!(session.next_timer(), None);
}

/// What a NATS server says first on a path that is not its MQTT one (`N`: a PUBACK of
/// 78 bytes, with flags set).
const NATS_INFO: &[u8] = br#"INFO {"server_id":"NDX2","server_name":"wsbench_nats","version":"2.15.2","proto":1,"host":"127.0.0.1","port":4222}"#;

#[test]
fn what_is_not_mqtt_ends_the_connection_with_its_cause() {
    let cases: [(&[u8], bool, &str); 4] = [
        (NATS_INFO, true, "mqtt_malformed"),
        (b"hello", false, "mqtt_text_message"),
        (&[0x90, 3, 0, 1, 0], true, "mqtt_no_connack"),
        (&[0x30, 0xFF, 0xFF, 0xFF, 0x7F], true, "mqtt_malformed"),
    ];
    for (message, binary, cause) in cases {
        let (mut session, mut heard) = opened(Use::PubSub, 0, "3.1.1");
        session.receive(message, binary, Instant::now(), &mut heard);
        assert_eq!(heard.errors.len(), 1, "{cause}: {:?}", heard.errors);
        assert_eq!((heard.errors[0].0.as_str(), heard.errors[0].3), (cause, true));
        // Nothing after is read.
        session.receive(&CONNACK_OK, true, Instant::now(), &mut heard);
        assert_eq!((heard.errors.len(), heard.ready), (1, 0));
    }
    let mut session = make(Use::PubSub, 0, "3.1.1");
    let mut heard = Heard::default();
    session.receive(NATS_INFO, true, Instant::now(), &mut heard);
    assert_eq!(
        heard.errors[0].1,
        r#"malformed PUBACK: reserved flags are set; the broker sent INFO {"server_id":"NDX2","server_name":"wsbench_…"#
    );
    let mut session = make(Use::PubSub, 0, "3.1.1");
    let mut heard = Heard::default();
    session.receive(&[0x30, 0xFF, 0xFF, 0xFF, 0x7F], true, Instant::now(), &mut heard);
    assert!(
        heard.errors[0].1.starts_with("packet of 268435460 bytes exceeds the limit"),
        "{:?}",
        heard.errors
    );
}

#[test]
fn a_broker_disconnect_is_fatal_and_named_after_its_reason() {
    let (mut session, mut heard) = opened(Use::PubSub, 0, "5");
    feed(&mut session, &mut heard, &[&CONNACK_OK_5[..], &[0xE0, 2, 0x8E, 0]].concat());
    let detail = "the broker sent DISCONNECT, reason code 0x8e (session_taken_over)";
    assert_eq!(heard.errors, [("mqtt_disconnect_session_taken_over".into(), detail.into(), None, true)]);
}

#[test]
fn the_end_of_the_run_sends_disconnect_once_connected() {
    let (mut session, mut heard) = ready_echo(0, "3.1.1");
    session.close(&mut heard);
    session.close(&mut heard);
    assert_eq!(heard.sent, [(false, vec![0xE0, 0])]);
    let mut connecting = session_of_run("r1", 0);
    let mut heard = Heard::default();
    connecting.close(&mut heard);
    assert!(heard.sent.is_empty());
}

fn session_of_run(run: &str, index: u64) -> Box<dyn Session> {
    let options = Options::default();
    Mqtt.session(&Setup { index, run, ..setup(Use::PubSub, &options) })
}

#[test]
fn publishes_never_acknowledged_are_given_up_beyond_a_bound() {
    let (mut session, mut heard) = opened(Use::PubSub, 1, "3.1.1");
    feed(&mut session, &mut heard, &CONNACK_OK);
    for _ in 0..super::inflight::MAX_UNACKED + 2 {
        session.publish("t0", b"{}", &mut heard);
    }
    feed(&mut session, &mut heard, &[0xD0, 0]);
    let causes: Vec<&str> = heard.errors.iter().map(|e| e.0.as_str()).collect();
    assert_eq!(causes, ["mqtt_puback_missing", "mqtt_puback_missing"]);
}

#[test]
fn client_ids_follow_the_run_and_the_connection() {
    assert_eq!(client_id("run-7", 12), "wsbench-run-7-12");
    let mut heard = Heard::default();
    session_of_run("abc", 5).open(Instant::now(), &mut heard);
    assert!(heard.sent[0].1.ends_with(b"\0\x0dwsbench-abc-5"));
}

#[test]
fn options_it_cannot_honour_are_refused_and_binary_is_taken() {
    let with = |qos: Option<u8>, version: Option<&str>| Options {
        binary: true,
        ..Options::with(
            qos.map(|qos| ("qos", i64::from(qos).into()))
                .into_iter()
                .chain(version.map(|version| ("mqtt-version", version.into()))),
        )
    };
    assert!(Mqtt.check(&with(None, None)).is_ok());
    assert!(Mqtt.check(&with(Some(1), Some("5"))).is_ok());
    assert!(Mqtt.check(&with(Some(2), None)).is_ok());
    assert!(Mqtt.check(&with(Some(3), None)).unwrap_err().contains("0, 1 and 2"));
    assert!(Mqtt.check(&with(None, Some("3"))).unwrap_err().contains("3.1.1 or 5"));
    assert!(Mqtt.serves(Use::Requests) && Mqtt.serves(Use::PubSub) && !Mqtt.serves(Use::Messages));
    assert_eq!(Mqtt.path(""), Some("/mqtt".into()));
    assert_eq!(Mqtt.path("/"), None, "a path the user wrote is theirs, / too");
    assert_eq!(Mqtt.path("/ws"), None);
    assert_eq!(Mqtt.subprotocols(), ["mqtt"]);
}

#[test]
fn a_broker_that_ends_the_connection_before_connack_is_explained() {
    let (mut session, mut heard) = opened(Use::Requests, 0, "5");
    session.ended_while_opening(Some((1011, "")), &mut heard);
    let detail = "the broker ended the connection before its CONNACK (close 1011): a broker without \
                  MQTT 5 does this; try --mqtt-version 3.1.1";
    assert_eq!(heard.errors, [("mqtt_closed_before_connack".into(), detail.into(), None, true)]);

    let (mut session, mut heard) = opened(Use::Requests, 0, "3.1.1");
    feed(&mut session, &mut heard, &CONNACK_OK);
    session.ended_while_opening(None, &mut heard);
    let detail = "the broker ended the connection before its SUBACK (no close frame)";
    assert_eq!(heard.errors, [("mqtt_closed_before_suback".into(), detail.into(), None, true)]);
}

#[test]
fn connect_gives_the_user_name_filled_in_and_the_password_read_before_the_run() {
    let mut options =
        Options::with([("username", "u".into()), ("password", crate::options::REDACTED.into())]);
    options.secrets = crate::options::Secrets::of([("password", "hunter2".to_owned())]);
    Mqtt.check(&options).unwrap();
    let mut session = Mqtt.session(&setup(Use::PubSub, &options));
    assert!(!format!("{session:?}").contains("hunter2"), "{session:?}");
    let mut heard = Heard::default();
    session.open(Instant::now(), &mut heard);
    let mut connect = Vec::new();
    let expected = mqtt::Connect {
        client_id: "wsbench-r1-0",
        keep_alive: 30,
        clean_start: true,
        username: Some("u"),
        password: Some(b"hunter2"),
        session_expiry: None,
    };
    mqtt::encode_connect(&mut connect, Version::V311, &expected).unwrap();
    assert_eq!(heard.sent, [(false, connect)]);
}

#[test]
fn credentials_mqtt_cannot_carry_are_refused_without_naming_the_password() {
    let refused = |options: &Options| Mqtt.check(options).unwrap_err();
    let mut alone = Options::with([]);
    alone.secrets = crate::options::Secrets::of([("password", "hunter2".to_owned())]);
    assert_eq!(refused(&alone), "--password needs --username under MQTT 3.1.1 (or give --mqtt-version 5)");
    alone.given.0.insert("mqtt-version".into(), "5".into());
    Mqtt.check(&alone).unwrap();
    let mut long = Options::with([("username", "u".into())]);
    long.secrets = crate::options::Secrets::of([("password", "x".repeat(65_536))]);
    assert_eq!(refused(&long), "--password: 65536 bytes: MQTT carries up to 65,535");
    let nul = Options::with([("username", "a\0b".into())]);
    assert_eq!(
        refused(&nul),
        "--username: 3 bytes with a control character: MQTT carries up to 65,535 bytes and no NUL or other \
         control character"
    );
    let line_break = Options::with([("username", "a\r\nb".into())]);
    assert!(refused(&line_break).contains("with a control character"), "{}", refused(&line_break));
}

#[test]
fn only_a_url_without_a_path_gets_the_usual_mqtt_path() {
    let url = |target: &str| {
        let settings = crate::config::RunSettings {
            target: Some(target.into()),
            protocol: Some("mqtt".into()),
            ..Default::default()
        };
        settings.validate().unwrap().target.unwrap().url
    };
    assert_eq!(url("ws://127.0.0.1:1"), "ws://127.0.0.1:1/mqtt");
    assert_eq!(url("ws://127.0.0.1:1/"), "ws://127.0.0.1:1/");
    assert_eq!(url("ws://127.0.0.1:1/ws"), "ws://127.0.0.1:1/ws");
    assert_eq!(url("ws://127.0.0.1:1?x=1"), "ws://127.0.0.1:1?x=1");
}

#[test]
fn qos_2_publishes_release_at_pubrec_and_deliveries_count_once_until_released() {
    let (mut session, mut heard) = opened(Use::PubSub, 2, "3.1.1");
    feed(&mut session, &mut heard, &CONNACK_OK);
    session.publish("t1", b"{}", &mut heard);
    assert_eq!(heard.sent[1].1, publish_packet(Version::V311, "t1", QoS::ExactlyOnce, 1, b"{}"));
    feed(&mut session, &mut heard, &[0x50, 2, 0, 1]);
    assert_eq!(heard.sent[2].1, [0x62, 2, 0, 1], "PUBREL at the PUBREC");
    feed(&mut session, &mut heard, &[0x50, 2, 0, 1]);
    assert_eq!(heard.sent[3].1, [0x62, 2, 0, 1], "a PUBREC again is released again");
    feed(&mut session, &mut heard, &[0x70, 2, 0, 1]);
    feed(&mut session, &mut heard, &[0x50, 2, 0, 1]);
    assert_eq!(heard.sent.len(), 4, "after PUBCOMP the exchange is over");

    let delivery = publish_packet(Version::V311, "t1", QoS::ExactlyOnce, 9, b"{}");
    feed(&mut session, &mut heard, &delivery);
    let mut again = delivery.clone();
    again[0] |= 0x08; // DUP
    feed(&mut session, &mut heard, &again);
    assert_eq!(heard.deliveries.len(), 1, "the same delivery sent again before PUBREL counts once");
    assert_eq!(&heard.sent[4..], [(false, vec![0x50, 2, 0, 9]), (false, vec![0x50, 2, 0, 9])]);
    feed(&mut session, &mut heard, &[0x62, 2, 0, 9]);
    assert_eq!(heard.sent[6].1, [0x70, 2, 0, 9], "PUBCOMP at the PUBREL");
    feed(&mut session, &mut heard, &delivery);
    assert_eq!(heard.deliveries.len(), 2, "released, the identifier carries a new delivery");
    assert!(heard.errors.is_empty(), "{:?}", heard.errors);
}

#[test]
fn a_refusing_pubrec_is_an_error_by_its_reason() {
    let (mut session, mut heard) = opened(Use::PubSub, 2, "5");
    feed(&mut session, &mut heard, &CONNACK_OK_5);
    session.publish("t1", b"{}", &mut heard);
    feed(&mut session, &mut heard, &[0x50, 3, 0, 1, 0x87]);
    let refused = ("mqtt_pubrec_not_authorized".into(), "PUBREC reason code 0x87 (not_authorized)".into());
    assert_eq!(heard.errors, [(refused.0, refused.1, None, false)]);
    assert_eq!(heard.sent.len(), 2, "no PUBREL for a refused publish");
}

#[test]
fn client_id_retain_and_a_kept_session_are_what_connect_and_publish_say() {
    let options = Options::with([
        ("client-id", "sensor-{run}-{conn}".into()),
        ("retain", true.into()),
        ("clean-session", "false".into()),
        ("mqtt-version", "5".into()),
        ("session-expiry", 3600.into()),
    ]);
    Mqtt.check(&options).unwrap();
    let mut session = Mqtt.session(&Setup { index: 7, ..setup(Use::PubSub, &options) });
    let mut heard = Heard::default();
    session.open(Instant::now(), &mut heard);
    let mut connect = Vec::new();
    let expected = mqtt::Connect {
        client_id: "sensor-r1-7",
        keep_alive: 30,
        clean_start: false,
        username: None,
        password: None,
        session_expiry: Some(3600),
    };
    mqtt::encode_connect(&mut connect, Version::V5, &expected).unwrap();
    assert_eq!(heard.sent[0].1, connect);
    feed(&mut session, &mut heard, &CONNACK_OK_5);
    session.publish("t1", b"{}", &mut heard);
    assert_eq!(heard.sent[1].1[0], 0x31, "PUBLISH at QoS 0 with the retain flag");
}

#[test]
fn a_client_id_without_conn_and_a_session_expiry_under_3_1_1_are_refused() {
    let refused = |given: Vec<(&'static str, toml::Value)>| Mqtt.check(&Options::with(given)).unwrap_err();
    assert!(refused(vec![("client-id", "fixed".into())]).starts_with("--client-id fixed: give {conn} in it"));
    assert_eq!(
        refused(vec![("session-expiry", 60.into())]),
        "--session-expiry is MQTT 5's: give --mqtt-version 5, or --clean-session false alone"
    );
    assert_eq!(refused(vec![("clean-session", "no".into())]), "--clean-session no: give true or false");
    let too_long = vec![("mqtt-version", "5".into()), ("session-expiry", (1_i64 << 32).into())];
    assert_eq!(refused(too_long), "--session-expiry 4294967296: give at most 4,294,967,295 seconds");
}
