//! `--protocol mqtt` against real brokers: mosquitto 2.0 (3.1.1 and 5, QoS 0 and 1), NATS
//! (3.1.1 on `/mqtt`) and RabbitMQ web-mqtt (3.1.1 on `/ws`). A thousand connections echo
//! with no error and no mismatch; a thousand subscribers get every publish once; a
//! subscriber whose session another client takes over mid-run is the one subscriber found
//! short, by what it missed; a refusing broker and a broker without MQTT 5 each fail the
//! run with their cause named. RabbitMQ takes ~11 s to start, so one test starts it once
//! and runs its behaviours in turn.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use wsbench::protocol::mqtt::client_id;
use wsbench_appproto::mqtt::{self, Connect, DEFAULT_MAX_PACKET, Decoder, Packet, QoS, Version};
use wsbench_testpeers::{Peer, or_skip, start_mosquitto, start_nats, start_rabbitmq};

use crate::harness::{Wsbench, arg, errors, heavy, read_result, scratch, summary_of, uint};
use crate::run;

/// `run` of an echo over MQTT: a thousand connections with `--threshold errors==0`.
fn echo(test: &str, url: &str, options: &[&str]) -> (crate::harness::Finished, Value) {
    let load = ["--protocol", "mqtt", "--connections", "1000", "--warmup", "1s", "--duration", "4s"];
    let args =
        [&[url], &load[..], options, &["--threshold", "errors==0", "--connect-timeout", "20s"]].concat();
    run(test, &args, Duration::from_secs(120))
}

/// A thousand connections echoed with no error and every reply the payload sent.
fn assert_clean_echo(finished: &crate::harness::Finished, result: &Value) {
    finished.assert_success();
    assert_eq!(uint(result, "/summary/connections/established"), 1000, "{}", summary_of(result));
    // Every connection echoed in the measured window (not a rate: a busy machine is slower).
    assert_eq!(uint(result, "/counters/connections_in_window"), 1000, "{}", summary_of(result));
    assert_eq!(uint(result, "/counters/payload_mismatches"), 0, "{}", summary_of(result));
    assert_eq!(result["config"]["protocol"], "mqtt");
}

#[test]
fn a_thousand_connections_echo_through_mosquitto_at_qos_0() {
    let Some(broker) = or_skip(start_mosquitto()) else { return };
    let (finished, result) = echo("mqtt-echo-mosquitto-qos0", &broker.url("/"), &[]);
    assert_clean_echo(&finished, &result);
    assert_eq!(result["counters"]["subprotocols_chosen"]["mqtt"], 1000, "{}", summary_of(&result));
}

#[test]
fn a_thousand_connections_echo_through_mosquitto_at_qos_1() {
    let Some(broker) = or_skip(start_mosquitto()) else { return };
    let (finished, result) = echo("mqtt-echo-mosquitto-qos1", &broker.url("/"), &["--qos", "1"]);
    assert_clean_echo(&finished, &result);
    assert_eq!(result["config"]["protocol_options"], json!({"qos": 1}));
}

#[test]
fn a_thousand_connections_echo_through_mosquitto_over_mqtt_5() {
    let Some(broker) = or_skip(start_mosquitto()) else { return };
    let options = ["--mqtt-version", "5", "--qos", "1"];
    let (finished, result) = echo("mqtt-echo-mosquitto-v5", &broker.url("/"), &options);
    assert_clean_echo(&finished, &result);
}

/// CONNECT asking mosquitto to keep each session (3.1.1; MQTT 5 with a Session Expiry
/// Interval property) and PUBLISH with the retain flag: taken, and every echo comes back.
#[test]
fn kept_sessions_and_retained_publishes_echo_through_mosquitto_under_3_1_1_and_5() {
    let Some(broker) = or_skip(start_mosquitto()) else { return };
    for (version, expiry) in [("3.1.1", None), ("5", Some("60"))] {
        let mut options =
            vec!["--mqtt-version", version, "--qos", "1", "--clean-session", "false", "--retain"];
        options.extend(expiry.iter().flat_map(|secs| ["--session-expiry", *secs]));
        let test = format!("mqtt-kept-session-{version}");
        let (finished, result) = echo(&test, &broker.url("/"), &options);
        assert_clean_echo(&finished, &result);
        let given = &result["config"]["protocol_options"];
        assert_eq!((&given["clean_session"], &given["retain"]), (&json!("false"), &json!(true)), "{given}");
    }
}

/// NATS speaks MQTT on `/mqtt` alone: the default path when the target names none.
#[test]
fn a_thousand_connections_echo_through_nats() {
    let Some(broker) = or_skip(start_nats()) else { return };
    let (finished, result) = echo("mqtt-echo-nats", &broker.url(""), &[]);
    assert_clean_echo(&finished, &result);
    assert!(result["target"]["url"].as_str().unwrap_or_default().ends_with("/mqtt"), "{}", result["target"]);
}

/// `run pubsub` over MQTT: a thousand subscribers on 10 topics, 10 publishers at `rate`
/// in all.
fn pubsub(test: &str, url: &str, rate: &str, options: &[&str]) -> (crate::harness::Finished, Value) {
    let shape = ["--subscribers", "1000", "--topics", "10", "--publishers", "10", "--rate", rate];
    let load = ["--protocol", "mqtt", "--warmup", "1s", "--duration", "3s", "--connect-timeout", "30s"];
    let args = [&["pubsub", url], &shape[..], &load, options, &["--threshold", "errors==0"]].concat();
    run(test, &args, Duration::from_secs(180))
}

/// Every one of the thousand subscribers got each measured publish of its topic once: 10
/// topics, one publisher each, so each topic's publishes reach 100 subscribers.
fn assert_complete_fan_out(finished: &crate::harness::Finished, result: &Value) {
    let context = || format!("{}\n{}", result["pubsub"], finished.describe());
    let expected = crate::assert_a_thousand_subscribers_got_every_publish_once(finished, result);
    assert_eq!(result["pubsub"]["cut_off"], false, "{}", context());
    assert_eq!(
        uint(result, "/summary/latency_us/count"),
        expected,
        "one latency per delivery\n{}",
        context()
    );
}

#[test]
fn a_thousand_subscribers_get_every_publish_once_through_mosquitto() {
    let Some(broker) = or_skip(start_mosquitto()) else { return };
    let (finished, result) = pubsub("mqtt-pubsub-mosquitto", &broker.url("/"), "100/s", &["--qos", "1"]);
    assert_complete_fan_out(&finished, &result);
}

#[test]
fn a_topic_template_carries_the_fan_out_on_topics_of_the_users_naming_through_mosquitto() {
    let Some(broker) = or_skip(start_mosquitto()) else { return };
    let template = format!("wsbench-test/{}/{{topic}}/load", std::process::id());
    let options = ["--qos", "1", "--topic", template.as_str()];
    let (finished, result) = pubsub("mqtt-pubsub-topic-template", &broker.url("/"), "100/s", &options);
    assert_complete_fan_out(&finished, &result);
    assert_eq!(result["config"]["protocol_options"]["topic"], template.as_str(), "{}", result["config"]);
}

/// At QoS 0: NATS carries QoS 1 through JetStream, and a thousand QoS 1 subscribers on
/// this machine put its deliveries seconds behind (see docs/protocols.md).
#[test]
fn a_thousand_subscribers_get_every_publish_once_through_nats() {
    let Some(broker) = or_skip(start_nats()) else { return };
    let (finished, result) = pubsub("mqtt-pubsub-nats", &broker.url("/mqtt"), "100/s", &[]);
    assert_complete_fan_out(&finished, &result);
}

/// RabbitMQ once: a thousand subscribers through web-mqtt, then MQTT 5, which it does not
/// speak, refused with a named cause. At 20 publishes a second: RabbitMQ spends ~0.3 ms of
/// CPU per QoS 1 delivery here, and at 100 a second (10,000 deliveries a second) it falls
/// seconds behind, its credit flow holding whole publishers back past the run's drain.
#[test]
fn rabbitmq_web_mqtt_fans_out_to_a_thousand_subscribers_and_refuses_mqtt_5_by_name() {
    // RabbitMQ spends ~0.3 ms of CPU per QoS 1 delivery: the machine is its alone meanwhile.
    let _machine = crate::harness::heavy(2);
    let Some(broker) = or_skip(start_rabbitmq()) else { return };
    let url = format!("ws://127.0.0.1:{}/ws", broker.port_of("mqtt").expect("web-mqtt port"));
    eprintln!("rabbitmq: a thousand subscribers");
    let (finished, result) = pubsub("mqtt-pubsub-rabbitmq", &url, "20/s", &["--qos", "1"]);
    assert_complete_fan_out(&finished, &result);
    eprintln!("rabbitmq: MQTT 5");
    assert_mqtt_5_refused("mqtt-v5-rabbitmq", &url, &broker);
}

/// MQTT 5 against a broker that speaks 3.1.1 alone: every connection fails with a cause
/// that names MQTT, the run ends at once and exits 3.
fn assert_mqtt_5_refused(test: &str, url: &str, broker: &Peer) {
    let load = ["--protocol", "mqtt", "--mqtt-version", "5", "--connections", "10", "--warmup", "0s"];
    let (finished, result) =
        run(test, &[&[url], &load[..], &["--duration", "1s"]].concat(), Duration::from_secs(60));
    let context = || format!("{}\n{}\n{}", summary_of(&result), finished.describe(), broker.name());
    finished.assert_completed_with_failures();
    assert_eq!(uint(&result, "/summary/connections/established"), 0, "{}", context());
    let errors = errors(&result);
    // NATS answers most with no CONNACK and some with CONNACK 0x01 before closing.
    let named: u64 = ["mqtt_closed_before_connack", "mqtt_connack_unacceptable_protocol_version"]
        .iter()
        .map(|cause| errors.get(*cause).copied().unwrap_or(0))
        .sum();
    assert_eq!(named, 10, "each connection's failure named\n{}", context());
    let line = finished.stdout.lines().find(|line| line.starts_with("errors:")).unwrap_or_default();
    assert!(line.contains("mqtt_"), "the report names the cause on its errors line: {line}\n{}", context());
    if let Some(detail) = result["counters"]["protocol_error_details"]["mqtt_closed_before_connack"].as_str()
    {
        assert!(detail.contains("try --mqtt-version 3.1.1"), "{detail}");
    }
}

#[test]
fn mqtt_5_against_nats_fails_with_its_cause_named() {
    let Some(broker) = or_skip(start_nats()) else { return };
    assert_mqtt_5_refused("mqtt-v5-nats", &broker.url("/mqtt"), &broker);
}

#[test]
fn a_broker_refusing_anonymous_clients_is_named_by_its_connack_code() {
    let Some(broker) = or_skip(start_mosquitto()) else { return };
    let url = format!("ws://127.0.0.1:{}/", broker.port_of("refusing").expect("refusing listener"));
    let load = ["--protocol", "mqtt", "--connections", "10", "--warmup", "0s", "--duration", "1s"];
    let (finished, result) =
        run("mqtt-refused", &[&[url.as_str()], &load[..]].concat(), Duration::from_secs(60));
    finished.assert_completed_with_failures();
    assert_eq!(
        errors(&result),
        [("mqtt_connack_not_authorized".to_owned(), 10)].into(),
        "{}",
        summary_of(&result)
    );
    let details = &result["counters"]["protocol_error_details"];
    assert_eq!(details["mqtt_connack_not_authorized"], "CONNACK return code 0x05 (not_authorized)");
}

/// A plain MQTT 3.1.1 client over mosquitto's TCP listener: the test's own hand on the broker.
struct TcpClient {
    stream: TcpStream,
    input: Vec<u8>,
    decoder: Decoder,
}

impl TcpClient {
    /// Connects as `client_id` (a clean session) and waits for its CONNACK.
    fn connect(port: u16, client_id: &str) -> TcpClient {
        let stream = TcpStream::connect(("127.0.0.1", port)).expect("mosquitto's TCP listener");
        let decoder = Decoder::new(Version::V311, DEFAULT_MAX_PACKET);
        let mut client = TcpClient { stream, input: Vec::new(), decoder };
        let connect = Connect {
            client_id,
            keep_alive: 60,
            clean_start: true,
            username: None,
            password: None,
            session_expiry: None,
        };
        client.send(|out| mqtt::encode_connect(out, Version::V311, &connect).unwrap());
        match client.next(Duration::from_secs(30)) {
            Some(Reading::ConnAck(0)) => client,
            other => panic!("CONNECT as {client_id} not accepted: {other:?}"),
        }
    }

    fn send(&mut self, write: impl FnOnce(&mut Vec<u8>)) {
        let mut wire = Vec::new();
        write(&mut wire);
        self.stream.write_all(&wire).expect("write to mosquitto");
    }

    /// Subscribes to `topic` at QoS 0 and waits for the SUBACK.
    fn subscribe(&mut self, topic: &str) {
        self.send(|out| mqtt::encode_subscribe(out, Version::V311, 1, topic, QoS::AtMostOnce).unwrap());
        loop {
            match self.next(Duration::from_secs(30)) {
                Some(Reading::SubAck) => return,
                Some(Reading::Publish(_)) => {}
                other => panic!("no SUBACK for {topic}: {other:?}"),
            }
        }
    }

    /// The next packet, or None when nothing came within `wait`.
    fn next(&mut self, wait: Duration) -> Option<Reading> {
        self.stream.set_read_timeout(Some(wait)).expect("read timeout");
        loop {
            if let Some((packet, used)) = self.decoder.decode(&self.input).expect("MQTT from mosquitto") {
                let reading = match packet {
                    Packet::ConnAck(connack) => Reading::ConnAck(connack.code),
                    Packet::SubAck(_) => Reading::SubAck,
                    Packet::Publish(publish) => Reading::Publish(publish.payload.to_vec()),
                    _ => Reading::Other,
                };
                self.input.drain(..used);
                return Some(reading);
            }
            let mut chunk = [0u8; 16 * 1024];
            match self.stream.read(&mut chunk) {
                Ok(0) => panic!("mosquitto closed the test's connection"),
                Ok(n) => self.input.extend_from_slice(&chunk[..n]),
                Err(error) if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return None;
                }
                Err(error) => panic!("reading from mosquitto: {error}"),
            }
        }
    }
}

#[derive(Debug)]
enum Reading {
    ConnAck(u8),
    SubAck,
    Publish(Vec<u8>),
    Other,
}

/// A publish due inside the run's measured window (wsbench says so in its fields).
fn measured(payload: &[u8]) -> bool {
    payload.windows(b"\"measured\":true".len()).any(|window| window == b"\"measured\":true")
}

/// Mid-run, the test connects with subscriber 7's client id (`wsbench-<run id>-7`, from
/// `--run-id`): mosquitto hands the session over and closes subscriber 7's connection.
/// Subscriber 7 is then the one short
/// subscriber, short by exactly what it did not receive, and at least by every measured
/// publish the test's connection received in its place.
#[test]
fn a_subscriber_taken_over_mid_run_is_the_only_one_short_by_what_it_missed() {
    let Some(broker) = or_skip(start_mosquitto()) else { return };
    let tcp = broker.port_of("tcp").expect("mosquitto's TCP listener");
    let _slot = heavy(1);
    let run_id = format!("takeover-{}", std::process::id());
    let json = scratch("mqtt-takeover").join("r.json");
    let url = broker.url("/");
    // Subscriber 7 listens to topic 7 mod 3 = t1.
    let mut observer = TcpClient::connect(tcp, &format!("observer-{run_id}"));
    observer.subscribe("t1");
    let shape = ["--subscribers", "30", "--topics", "3", "--publishers", "3", "--rate", "150/s"];
    let load = ["--protocol", "mqtt", "--mqtt-version", "5", "--run-id", &run_id, "--warmup", "1s"];
    let outputs = ["--duration", "4s", "--json", arg(&json), "--quiet"];
    let wsbench = Wsbench::spawn(&[&["run", "pubsub", &url], &shape[..], &load, &outputs].concat());
    // Mid-run: the observer has seen 20 of t1's measured publishes (50 a second for 4 s).
    let mut seen = 0;
    while seen < 20 {
        match observer.next(Duration::from_secs(60)) {
            Some(Reading::Publish(payload)) => seen += usize::from(measured(&payload)),
            Some(_) => {}
            None => panic!("no publish on t1 within a minute; {seen} measured so far"),
        }
    }
    let mut thief = TcpClient::connect(tcp, &client_id(&run_id, 7));
    thief.subscribe("t1");
    let done = Arc::new(AtomicBool::new(false));
    let counting = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let mut stolen = 0u64;
            // Until the run has ended and nothing more is on its way.
            loop {
                match thief.next(Duration::from_millis(200)) {
                    Some(Reading::Publish(payload)) => stolen += u64::from(measured(&payload)),
                    Some(_) => {}
                    None if done.load(Ordering::Relaxed) => return stolen,
                    None => {}
                }
            }
        })
    };
    let finished = wsbench.finish(Duration::from_secs(120));
    done.store(true, Ordering::Relaxed);
    let stolen = counting.join().expect("the test's subscriber");
    let result = read_result(&json);
    let context = || format!("stolen {stolen}\n{}\n{}", result["pubsub"], finished.describe());
    finished.assert_completed_with_failures();

    let expected = uint(&result, "/counters/pubsub/published/1");
    let received = uint(&result, "/counters/pubsub/received/7/1");
    let lost = uint(&result, "/pubsub/lost");
    assert!(received > 0, "subscriber 7 had deliveries before it was taken over\n{}", context());
    assert_eq!(lost, expected - received, "lost is what subscriber 7 missed\n{}", context());
    assert!(stolen > 0 && lost >= stolen, "it missed at least what the test got in its place\n{}", context());
    assert_eq!(
        result["pubsub"]["short_subscribers"],
        json!([{ "connection": 7, "topic": 1, "expected": expected, "received": received }]),
        "no other subscriber is short\n{}",
        context()
    );
    assert_eq!(uint(&result, "/pubsub/short_subscriber_count"), 1, "{}", context());
    for key in ["duplicated", "unexpected", "subscribe_failures"] {
        assert_eq!(uint(&result, &format!("/pubsub/{key}")), 0, "{key}\n{}", context());
    }
    assert_eq!(result["pubsub"]["cut_off"], false, "{}", context());
    // mosquitto 2.0.11 ends the taken-over connection without a DISCONNECT, even in MQTT 5.
    assert_eq!(uint(&result, "/summary/disconnections"), 1, "{}", context());
    let mut errors = errors(&result);
    assert_eq!(errors.remove("pubsub_lost"), Some(lost), "{}", context());
    assert_eq!(errors.values().sum::<u64>(), 1, "the one disconnection alone\n{}", context());
}

/// `--topic` with `{data.room}`: each connection's topics are named with its `--data` row's
/// room, filled once when its session is made. The test's own client, subscribed to the
/// room's topics before the run, gets the run's publishes there; the fan-out is complete.
#[test]
fn a_topic_template_takes_each_connections_room_from_its_data_row_through_mosquitto() {
    let Some(broker) = or_skip(start_mosquitto()) else { return };
    let tcp = broker.port_of("tcp").expect("mosquitto's TCP listener");
    let dir = scratch("mqtt-data-topic-rooms");
    let room = format!("room-{}", std::process::id());
    let rooms = dir.join("rooms.csv");
    std::fs::write(&rooms, format!("room\n{room}\n")).unwrap();
    let mut observer = TcpClient::connect(tcp, &format!("observer-{room}"));
    observer.subscribe(&format!("wsbench-data/{room}/#"));
    let shape = ["--subscribers", "20", "--topics", "2", "--publishers", "2", "--rate", "50/s"];
    let load = ["--protocol", "mqtt", "--qos", "1", "--warmup", "1s", "--duration", "2s"];
    let data = ["--topic", "wsbench-data/{data.room}/{topic}", "--data", arg(&rooms)];
    let url = broker.url("/");
    let args = [&["pubsub", &url][..], &shape, &load, &data, &["--threshold", "errors==0"]].concat();
    let (finished, result) = run("mqtt-data-topic", &args, Duration::from_secs(120));
    finished.assert_success();
    let mut observed = 0u64;
    while let Some(reading) = observer.next(Duration::from_millis(500)) {
        observed += u64::from(matches!(reading, Reading::Publish(_)));
    }
    let delivered = uint(&result, "/pubsub/delivered");
    assert!(delivered > 0, "{}", result["pubsub"]);
    assert_eq!(delivered, uint(&result, "/pubsub/expected_deliveries"), "{}", result["pubsub"]);
    assert!(observed > 0, "no publish reached wsbench-data/{room}/#: {}", result["pubsub"]);
    assert_eq!(result["config"]["protocol_options"]["topic"], "wsbench-data/{data.room}/{topic}");
}
