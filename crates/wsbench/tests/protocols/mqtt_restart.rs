//! A real mosquitto restarted under a QoS 1 pub/sub run with `--reconnect` and
//! `--disrupt command` (its folder's `restart.sh`: SIGTERM, which saves the sessions, then
//! started again): with kept sessions (`--clean-session false`) nothing the broker took is
//! lost once the subscribers are back; with clean sessions the subscribers are short by
//! exactly what the broker took while they were away. What the broker took is told by a
//! subscriber of the test's own, on the TCP listener with a kept session, that misses
//! nothing across the restart; publishes due while the publishers were down were never sent
//! and are owed to no one.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;
use wsbench_appproto::mqtt::{self, Connect, DEFAULT_MAX_PACKET, Decoder, Packet, QoS, Version};
use wsbench_testpeers::{or_skip, start_mosquitto_restartable};

use crate::harness::{Finished, summary_of, uint};
use crate::run;

const TOPICS: u64 = 3;
const SUBSCRIBERS: u64 = 300;

/// The ids (`P-S`) of the measured publishes on each topic the broker delivered to a
/// subscriber that keeps its session at QoS 1 and comes back after every restart.
fn observe(
    port: u16,
    client_id: String,
    done: Arc<AtomicBool>,
) -> JoinHandle<BTreeMap<u64, BTreeSet<String>>> {
    std::thread::spawn(move || {
        let mut seen: BTreeMap<u64, BTreeSet<String>> = BTreeMap::new();
        let mut give_up = None;
        loop {
            // The run is over: a minute more at most to be back and hear the rest.
            if done.load(Ordering::Relaxed) {
                let at = *give_up.get_or_insert_with(|| Instant::now() + Duration::from_secs(60));
                assert!(Instant::now() < at, "the observer did not get back to the broker after the run");
            }
            let Ok(stream) = TcpStream::connect(("127.0.0.1", port)) else {
                std::thread::sleep(Duration::from_millis(50));
                continue;
            };
            if read_session(stream, &client_id, &done, &mut seen) {
                return seen;
            }
        }
    })
}

/// One connection of the observer: CONNECT keeping the session, SUBSCRIBE to every topic at
/// QoS 1, then every PUBLISH acknowledged and noted. True when the run is over and nothing
/// came for a second; false when the broker went away.
fn read_session(
    mut stream: TcpStream,
    client_id: &str,
    done: &AtomicBool,
    seen: &mut BTreeMap<u64, BTreeSet<String>>,
) -> bool {
    let connect = Connect {
        client_id,
        keep_alive: 60,
        clean_start: false,
        username: None,
        password: None,
        session_expiry: None,
    };
    let mut out = Vec::new();
    mqtt::encode_connect(&mut out, Version::V311, &connect).expect("CONNECT");
    for topic in 0..TOPICS {
        let name = format!("t{topic}");
        mqtt::encode_subscribe(&mut out, Version::V311, topic as u16 + 1, &name, QoS::AtLeastOnce)
            .expect("SUBSCRIBE");
    }
    if stream.write_all(&out).is_err() {
        return false;
    }
    let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
    let decoder = Decoder::new(Version::V311, DEFAULT_MAX_PACKET);
    let mut input = Vec::new();
    loop {
        while let Some((packet, used)) = decoder.decode(&input).expect("MQTT from mosquitto") {
            if let Packet::Publish(publish) = packet {
                if let Some(id) = publish.packet_id {
                    let mut ack = Vec::new();
                    mqtt::encode_puback(&mut ack, id);
                    let _ = stream.write_all(&ack);
                }
                if let Some((publisher, id)) = measured_id(publish.payload) {
                    seen.entry(publisher % TOPICS).or_default().insert(id);
                }
            }
            input.drain(..used);
        }
        let mut chunk = [0u8; 16 * 1024];
        match stream.read(&mut chunk) {
            Ok(0) => return false,
            Ok(n) => input.extend_from_slice(&chunk[..n]),
            Err(error) if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                if done.load(Ordering::Relaxed) {
                    return true;
                }
            }
            Err(_) => return false,
        }
    }
}

/// A measured publish's publisher and id, from wsbench's fields in it.
fn measured_id(payload: &[u8]) -> Option<(u64, String)> {
    let text = std::str::from_utf8(payload).ok()?;
    if !text.contains("\"measured\":true") {
        return None;
    }
    let id = text.split("\"id\":\"").nth(1)?.split('"').next()?;
    Some((id.split('-').next()?.parse().ok()?, id.to_owned()))
}

/// A QoS 1 pub/sub run of [`SUBSCRIBERS`] on [`TOPICS`] topics, its broker restarted 3 s in
/// (down 1 s); the observer's count of what the broker took, per topic.
fn restarted_run(
    test: &str,
    kept_sessions: bool,
) -> Option<(Finished, Value, BTreeMap<u64, BTreeSet<String>>)> {
    let broker = or_skip(start_mosquitto_restartable(Duration::from_secs(1)))?;
    let tcp = broker.port_of("tcp").expect("mosquitto's TCP listener");
    let done = Arc::new(AtomicBool::new(false));
    let observer = observe(tcp, format!("observer-{test}-{}", std::process::id()), Arc::clone(&done));
    let script = broker.dir().join("restart.sh");
    let subscribers = SUBSCRIBERS.to_string();
    let topics = TOPICS.to_string();
    let shape =
        ["--subscribers", &subscribers, "--topics", &topics, "--publishers", &topics, "--rate", "150/s"];
    let session = if kept_sessions { "false" } else { "true" };
    let load = [
        "--protocol",
        "mqtt",
        "--qos",
        "1",
        "--clean-session",
        session,
        "--warmup",
        "1s",
        "--duration",
        "8s",
    ];
    let disrupt =
        ["--reconnect", "--disrupt", "command@3s", "--disrupt-command", script.to_str().expect("path")];
    let url = broker.url("/");
    let args = [&["pubsub", url.as_str()], &shape[..], &load, &disrupt].concat();
    let (finished, result) = run(test, &args, Duration::from_secs(180));
    done.store(true, Ordering::Relaxed);
    let seen = observer.join().expect("the observer");
    Some((finished, result, seen))
}

/// What wsbench counted as published on each topic is what the broker took, but for the
/// publishes whose acknowledgement the restart cut off (`unacknowledged`: counted as not
/// taken, though the broker may have taken some before it went). Returns how many of those
/// the broker did take.
fn assert_published_is_what_the_broker_took(result: &Value, seen: &BTreeMap<u64, BTreeSet<String>>) -> u64 {
    let by_topic = &result["counters"]["pubsub"]["published"];
    let mut taken_unacknowledged = 0;
    for topic in 0..TOPICS {
        let published = by_topic[topic.to_string()].as_u64().unwrap_or(0);
        let taken = seen.get(&topic).map_or(0, |ids| ids.len() as u64);
        assert!(
            published > 0 && published <= taken,
            "topic t{topic}: {published} published, {taken} taken\n{}",
            result["pubsub"]
        );
        taken_unacknowledged += taken - published;
    }
    let unacknowledged = result["pubsub"]["unacknowledged"].as_u64().unwrap_or(0);
    assert!(
        taken_unacknowledged <= unacknowledged,
        "{taken_unacknowledged} taken beyond the count\n{}",
        result["pubsub"]
    );
    taken_unacknowledged
}

/// Every connection came back and every subscriber subscribed again; the publishes due
/// while the publishers were down are counted as never sent.
fn assert_all_back(finished: &Finished, result: &Value) {
    let context = || format!("{}\n{}", summary_of(result), finished.describe());
    assert_eq!(uint(result, "/recovery/lost"), SUBSCRIBERS + TOPICS, "{}", context());
    assert_eq!(uint(result, "/recovery/not_back"), 0, "{}", context());
    assert_eq!(uint(result, "/pubsub/resubscribed"), SUBSCRIBERS, "{}", context());
    assert!(uint(result, "/pubsub/not_sent") > 0, "{}", context());
    assert_eq!(uint(result, "/pubsub/subscribe_failures"), 0, "{}", context());
}

#[test]
fn kept_sessions_at_qos_1_lose_nothing_the_broker_took_across_its_restart() {
    let Some((finished, result, seen)) = restarted_run("mqtt-restart-kept", true) else { return };
    assert_all_back(&finished, &result);
    let uncertain = assert_published_is_what_the_broker_took(&result, &seen);
    let pubsub = &result["pubsub"];
    assert_eq!(uint(&result, "/pubsub/lost"), 0, "{pubsub}\n{}", finished.describe());
    // Every expected delivery made; beyond, only deliveries of publishes counted as not taken.
    let (expected, delivered) =
        (uint(&result, "/pubsub/expected_deliveries"), uint(&result, "/pubsub/delivered"));
    assert!(delivered >= expected && delivered <= expected + uncertain * (SUBSCRIBERS / TOPICS), "{pubsub}");
}

#[test]
fn clean_sessions_are_short_by_exactly_what_the_broker_took_while_they_were_away() {
    let Some((finished, result, seen)) = restarted_run("mqtt-restart-clean", false) else { return };
    assert_all_back(&finished, &result);
    let uncertain = assert_published_is_what_the_broker_took(&result, &seen);
    let pubsub = &result["pubsub"];
    let (expected, delivered, lost) = (
        uint(&result, "/pubsub/expected_deliveries"),
        uint(&result, "/pubsub/delivered"),
        uint(&result, "/pubsub/lost"),
    );
    assert!(lost > 0, "clean sessions lose what was published before they subscribed again: {pubsub}");
    // A delivery of a publish counted as not taken is one more than expected; else exact.
    let per_topic = SUBSCRIBERS / TOPICS;
    assert!(lost >= expected - delivered && lost <= expected - delivered + uncertain * per_topic, "{pubsub}");
    if uncertain == 0 {
        assert_eq!(expected - delivered, lost, "{pubsub}");
        // Each short subscriber was owed every publish the broker took on its topic.
        for short in pubsub["short_subscribers"].as_array().expect("short subscribers") {
            let topic = short["topic"].as_u64().unwrap();
            assert_eq!(short["expected"].as_u64(), seen.get(&topic).map(|ids| ids.len() as u64), "{short}");
        }
    }
}
