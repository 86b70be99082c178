//! Every protocol's side of a stream ([`Use::Stream`]), side by side: what a subscriber
//! sends to subscribe ([`super::Session::subscribe_stream`]) as its options say, and which
//! messages of the server are deliveries (and what of them `--message-id` reads). Raw's and
//! JSON-RPC's are beside their code; these need their protocol's opening first.

use std::time::Instant;

use wsbench_appproto::mqtt::{self, Publish, QoS, Version};

use super::graphql_ws::GraphqlWs;
use super::mqtt::Mqtt;
use super::socketio::SocketIo;
use super::stomp::Stomp;
use super::tests::{Heard, setup};
use super::{Options, Protocol, Session, Use};

/// A stream session of `protocol` with `options`, made ready by `opening` (the server's
/// messages, binary ones for MQTT), with what it sent to subscribe and nothing else heard.
fn subscribed(protocol: &dyn Protocol, options: &Options, opening: &[&[u8]]) -> (Box<dyn Session>, Heard) {
    let binary = protocol.name() == "mqtt";
    assert_eq!(protocol.check(options), Ok(()));
    assert!(protocol.serves(Use::Stream), "{} carries a stream", protocol.name());
    let mut session = protocol.session(&setup(Use::Stream, options));
    let mut opened = Heard::default();
    session.open(Instant::now(), &mut opened);
    for message in opening {
        session.receive(message, binary, Instant::now(), &mut opened);
    }
    assert!(session.ready(), "{} is ready", protocol.name());
    let mut heard = Heard::default();
    session.subscribe_stream(&mut heard);
    (session, heard)
}

#[test]
fn mqtt_subscribes_to_its_filter_and_every_publish_is_a_delivery() {
    let options = Options::with([("subscribe-topic", "feed/+/ticks".into())]);
    let (mut session, mut heard) = subscribed(&Mqtt, &options, &[&[0x20, 2, 0, 0]]);
    let mut expected = Vec::new();
    mqtt::encode_subscribe(&mut expected, Version::V311, 1, "feed/+/ticks", QoS::AtMostOnce).unwrap();
    assert_eq!(heard.sent, [(false, expected)]);
    session.receive(&[0x90, 3, 0, 1, 0], true, Instant::now(), &mut heard);
    assert_eq!(heard.subscribed, ["feed/+/ticks"]);
    let mut publish = Vec::new();
    let tick = Publish {
        topic: "feed/a/ticks",
        qos: QoS::AtMostOnce,
        packet_id: 0,
        retain: false,
        payload: b"{\"seq\":1}",
    };
    mqtt::encode_publish(&mut publish, Version::V311, &tick).unwrap();
    session.receive(&publish, true, Instant::now(), &mut heard);
    assert_eq!(heard.deliveries, [("feed/a/ticks".to_owned(), b"{\"seq\":1}".to_vec())]);
    assert!(Mqtt.check(&Options::with([("subscribe-topic", "".into())])).is_err());
}

#[test]
fn stomp_subscribes_to_its_destination_and_every_message_is_a_delivery() {
    let connected: &[u8] = b"CONNECTED\nversion:1.2\nheart-beat:0,0\n\n\0";
    let options = Options::with([("subscribe-destination", "/exchange/feed/ticks".into())]);
    let (mut session, mut heard) = subscribed(&Stomp, &options, &[connected]);
    let sent = heard.sent_text(0);
    assert!(sent.starts_with("SUBSCRIBE\n"), "{sent}");
    assert!(sent.contains("destination:/exchange/feed/ticks\n") && sent.contains("id:sub-0\n"), "{sent}");
    session.receive(b"RECEIPT\nreceipt-id:sub-0\n\n\0", false, Instant::now(), &mut heard);
    let message =
        b"MESSAGE\nsubscription:sub-0\ndestination:/exchange/feed/ticks\nmessage-id:m1\n\n{\"seq\":7}\0";
    session.receive(message, false, Instant::now(), &mut heard);
    assert_eq!(heard.subscribed, ["/exchange/feed/ticks"]);
    assert_eq!(heard.deliveries, [("/exchange/feed/ticks".to_owned(), b"{\"seq\":7}".to_vec())]);
    let (_, default) = subscribed(&Stomp, &Options::default(), &[connected]);
    assert!(default.sent_text(0).contains("destination:/topic/#\n"), "everything on amq.topic by default");
}

#[test]
fn socketio_emits_its_subscription_and_takes_the_stream_event_as_a_json_array() {
    let open: &[u8] =
        br#"0{"sid":"s","upgrades":[],"pingInterval":25000,"pingTimeout":20000,"maxPayload":1000000}"#;
    let options = Options::with([
        ("stream-event", "tick".into()),
        ("subscribe-emit", r#"["subscribe","ticks",{"depth":1}]"#.into()),
    ]);
    let (mut session, mut heard) = subscribed(&SocketIo, &options, &[open, br#"40{"sid":"n"}"#]);
    assert_eq!(heard.sent_text(0), r#"42["subscribe","ticks",{"depth":1}]"#);
    session.receive(br#"42["tick",{"seq":3},"x"]"#, false, Instant::now(), &mut heard);
    session.receive(br#"42["other",{"seq":4}]"#, false, Instant::now(), &mut heard);
    assert_eq!(heard.deliveries, [("tick".to_owned(), br#"[{"seq":3},"x"]"#.to_vec())]);
    for bad in ["subscribe", "[]", "[1]", r#"{"a":1}"#] {
        let refused = SocketIo.check(&Options::with([("subscribe-emit", bad.into())]));
        assert!(refused.unwrap_err().contains("--subscribe-emit"), "{bad}");
    }
}

#[test]
fn graphql_ws_starts_its_subscription_and_every_result_is_a_delivery() {
    let options = Options::with([("subscribe-query", "subscription { ticks { seq } }".into())]);
    let (mut session, mut heard) = subscribed(&GraphqlWs, &options, &[br#"{"type":"connection_ack"}"#]);
    assert_eq!(
        heard.sent_text(0),
        r#"{"type":"subscribe","id":"stream","payload":{"query":"subscription { ticks { seq } }"}}"#
    );
    let next = br#"{"type":"next","id":"stream","payload":{"data":{"ticks":{"seq":9}}}}"#;
    session.receive(next, false, Instant::now(), &mut heard);
    let failed = br#"{"type":"next","id":"stream","payload":{"errors":[{"message":"boom"}]}}"#;
    session.receive(failed, false, Instant::now(), &mut heard);
    assert_eq!(heard.deliveries, [("stream".to_owned(), br#"{"data":{"ticks":{"seq":9}}}"#.to_vec())]);
    assert_eq!(heard.errors[0].0, "graphql_error");
}
