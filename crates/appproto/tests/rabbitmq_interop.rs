//! STOMP and MQTT over WebSocket against a real RabbitMQ (web-stomp and web-mqtt, both on
//! the path `/ws`), spoken with `wsbench_appproto::stomp` and `::mqtt`. RabbitMQ takes ~11 s
//! to start, so one test starts it once and runs each behaviour in turn, named after it.

mod support;

use std::time::{Duration, Instant};

use support::mqtt::{Connected, MqttClient, connect_bytes, round_trip};
use support::stomp::StompClient;
use wsbench_appproto::mqtt::Version;
use wsbench_appproto::stomp::{self, ServerFrame};
use wsbench_testpeers::{Peer, or_skip, start_rabbitmq};

/// CONNECT with heart-beats both ways; CONNECTED says 1.2 and the broker's heart-beats.
fn stomp_connect(client: &mut StompClient, heart_beat: (u32, u32)) -> (u32, u32) {
    let connect = stomp::Connect { host: "/", heart_beat, login: Some("guest"), passcode: Some("guest") };
    client.send(|out| stomp::encode_connect(out, &connect).unwrap());
    match client.next() {
        ServerFrame::Connected { version, heart_beat } => {
            assert_eq!(version.as_deref(), Some("1.2"));
            heart_beat
        }
        other => panic!("expected CONNECTED, got {other:?}"),
    }
}

fn stomp_subscribes_with_a_receipt_and_gets_what_it_sends(broker: &Peer) {
    let mut client = StompClient::open(broker.port(), "/ws");
    assert_eq!(client.ws.protocol.as_deref(), Some("v12.stomp"));
    stomp_connect(&mut client, (0, 0));
    client.send(|out| stomp::encode_subscribe(out, "s1", "/topic/t0", Some("r1")));
    assert_eq!(client.next(), ServerFrame::Receipt { receipt_id: "r1".into() });
    let body = b"{\"ts\":1}\0with a NUL";
    let send =
        stomp::Send { destination: "/topic/t0", content_type: Some("application/json"), receipt: None, body };
    client.send(|out| stomp::encode_send(out, &send));
    let ServerFrame::Message { destination, subscription, message_id, body: received } = client.next() else {
        panic!("expected MESSAGE")
    };
    assert_eq!((destination.as_ref(), subscription.as_ref(), received), ("/topic/t0", "s1", &body[..]));
    assert!(!message_id.is_empty());
    client.send(|out| stomp::encode_unsubscribe(out, "s1", Some("r2")));
    assert_eq!(client.next(), ServerFrame::Receipt { receipt_id: "r2".into() });
}

fn stomp_heart_beats_flow_both_ways(broker: &Peer) {
    let mut client = StompClient::open(broker.port(), "/ws");
    let (sx, sy) = stomp_connect(&mut client, (1000, 1000));
    eprintln!("  CONNECTED heart-beat:{sx},{sy}");
    assert!(sx > 0 && sx <= 1000 && sy > 0, "broker heart-beat {sx},{sy}");
    // Send ours every 500 ms for 3.5 s and count the broker's.
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(3500) {
        client.send(stomp::encode_heartbeat);
        if let Some(message) = client.ws.recv_within(Duration::from_millis(500)) {
            assert_eq!(message, support::Message::Text("\n".into()), "only heart-beats are due");
            client.heart_beats += 1;
        }
    }
    eprintln!("  {} heart-beats in 3.5 s", client.heart_beats);
    assert!(client.heart_beats >= 2, "{} heart-beats from the broker", client.heart_beats);
}

fn stomp_reads_an_error_frame_for_an_unknown_destination(broker: &Peer) {
    let mut client = StompClient::open(broker.port(), "/ws");
    stomp_connect(&mut client, (0, 0));
    client.send(|out| stomp::encode_subscribe(out, "s1", "/nowhere/x", None));
    let ServerFrame::Error { message, body } = client.next() else { panic!("expected ERROR") };
    assert_eq!(message.as_deref(), Some("Unknown destination"));
    assert!(String::from_utf8_lossy(body).contains("/nowhere/x"), "{:?}", String::from_utf8_lossy(body));
}

fn stomp_disconnect_with_a_receipt_ends_the_connection(broker: &Peer) {
    let mut client = StompClient::open(broker.port(), "/ws");
    stomp_connect(&mut client, (0, 0));
    client.send(|out| stomp::encode_disconnect(out, "bye"));
    match client.next_frame() {
        Ok(frame) => assert_eq!(frame.server_frame(), Ok(ServerFrame::Receipt { receipt_id: "bye".into() })),
        Err((code, reason)) => {
            eprintln!("  closed {code} {reason:?} instead of a RECEIPT");
            assert_eq!(code, 1000)
        }
    }
    if let Ok(frame) = client.next_frame() {
        panic!("a frame after the RECEIPT: {frame:?}");
    }
}

fn mqtt_3_1_1_round_trips_qos_0_and_1(broker: &Peer) {
    let port = broker.port_of("mqtt").expect("web-mqtt port");
    let mut client = MqttClient::connect(port, "/ws", Version::V311, "rabbit311");
    assert_eq!(client.ws.protocol.as_deref(), Some("mqtt"));
    round_trip(&mut client, "wsbench/rabbit");
}

fn mqtt_5_connect_is_closed_with_1011(broker: &Peer) {
    let port = broker.port_of("mqtt").expect("web-mqtt port");
    // RabbitMQ 3.10 does not speak MQTT 5, and says so by closing, not with a CONNACK.
    match MqttClient::open(port, "/ws", Version::V5, &connect_bytes(Version::V5, "rabbit5")) {
        Connected::Closed(code, _) => assert_eq!(code, 1011),
        other => panic!("expected a close, got {other:?}"),
    }
}

/// A behaviour checked against the running broker, and its name.
type Check = (&'static str, fn(&Peer));

#[test]
fn rabbitmq_speaks_stomp_and_mqtt_over_websocket() {
    let Some(broker) = or_skip(start_rabbitmq()) else { return };
    let checks: [Check; 6] = [
        (
            "stomp_subscribes_with_a_receipt_and_gets_what_it_sends",
            stomp_subscribes_with_a_receipt_and_gets_what_it_sends,
        ),
        ("stomp_heart_beats_flow_both_ways", stomp_heart_beats_flow_both_ways),
        (
            "stomp_reads_an_error_frame_for_an_unknown_destination",
            stomp_reads_an_error_frame_for_an_unknown_destination,
        ),
        (
            "stomp_disconnect_with_a_receipt_ends_the_connection",
            stomp_disconnect_with_a_receipt_ends_the_connection,
        ),
        ("mqtt_3_1_1_round_trips_qos_0_and_1", mqtt_3_1_1_round_trips_qos_0_and_1),
        ("mqtt_5_connect_is_closed_with_1011", mqtt_5_connect_is_closed_with_1011),
    ];
    for (name, check) in checks {
        eprintln!("rabbitmq: {name}");
        check(&broker);
    }
}
