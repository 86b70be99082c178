//! The stream scenario against a real broker: mosquitto, fed by a publisher of the test's
//! own over its TCP listener (a numbered, timestamped event every 10 ms on `feed/ticks`), the
//! stream's subscribers on its WebSocket listener with `--subscribe-topic 'feed/#'`. Every
//! subscriber gets every id once (missing 0, delivered = owed) with the latency from the
//! events' own timestamps; subscribed to a filter nothing is published on, every subscriber
//! is silent and `--threshold silent==0` fails the run.

use std::io::Write;
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use wsbench_appproto::mqtt::{self, Connect, Publish, QoS, Version};
use wsbench_testpeers::{or_skip, start_mosquitto};

use crate::harness::{errors, summary_of, uint};
use crate::run;

const SUBSCRIBERS: u64 = 50;

/// Publishes `{"seq":N,"ts":UNIX_MS}` to `feed/ticks` every 10 ms over mosquitto's TCP
/// listener until dropped.
struct Publisher {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Publisher {
    fn start(port: u16) -> Publisher {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("mosquitto's TCP listener");
        let mut wire = Vec::new();
        let connect = Connect {
            client_id: "stream-publisher",
            keep_alive: 60,
            clean_start: true,
            username: None,
            password: None,
            session_expiry: None,
        };
        mqtt::encode_connect(&mut wire, Version::V311, &connect).unwrap();
        stream.write_all(&wire).expect("CONNECT");
        let stop = Arc::new(AtomicBool::new(false));
        let running = stop.clone();
        let thread = thread::spawn(move || {
            let start = Instant::now();
            let mut seq = 0u32;
            while !running.load(Ordering::SeqCst) {
                if let Some(wait) =
                    (start + Duration::from_millis(10) * seq).checked_duration_since(Instant::now())
                {
                    thread::sleep(wait);
                }
                let ts = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis();
                let payload = format!(r#"{{"seq":{seq},"ts":{ts}}}"#);
                let publish = Publish {
                    topic: "feed/ticks",
                    qos: QoS::AtMostOnce,
                    packet_id: 0,
                    retain: false,
                    payload: payload.as_bytes(),
                };
                wire.clear();
                mqtt::encode_publish(&mut wire, Version::V311, &publish).unwrap();
                if stream.write_all(&wire).is_err() {
                    return;
                }
                seq += 1;
            }
        });
        Publisher { stop, thread: Some(thread) }
    }
}

impl Drop for Publisher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn stream_args<'a>(url: &'a str, filter: &'a str, thresholds: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "stream",
        url,
        "--protocol",
        "mqtt",
        "--subscribe-topic",
        filter,
        "--subscribers",
        "50",
        "--message-id",
        "/seq",
        "--message-time",
        "/ts",
        "--duration",
        "3s",
        "--warmup",
        "1s",
    ];
    for threshold in thresholds {
        args.extend(["--threshold", threshold]);
    }
    args
}

#[test]
fn every_subscriber_gets_every_event_a_broker_streams_once() {
    let Some(broker) = or_skip(start_mosquitto()) else { return };
    let _publisher = Publisher::start(broker.port_of("tcp").expect("mosquitto's TCP port"));
    let url = broker.url("/");
    let args = stream_args(&url, "feed/#", &["missing==0", "errors==0"]);
    let (finished, result) = run("stream-mosquitto", &args, Duration::from_secs(90));
    let context = || format!("{}\n{}", finished.describe(), summary_of(&result));
    assert_eq!(finished.code, Some(0), "{}", context());
    assert_eq!(uint(&result, "/stream/joined"), SUBSCRIBERS, "{}", context());
    let (ids, owed, delivered) =
        (uint(&result, "/stream/ids"), uint(&result, "/stream/owed"), uint(&result, "/stream/delivered"));
    // 3 measured seconds of an event every 10 ms.
    assert!(ids > 200, "{}", context());
    assert_eq!(owed, ids * SUBSCRIBERS, "every subscriber joined before the measured window\n{}", context());
    assert_eq!(delivered, owed, "{}", context());
    for key in ["missing", "duplicated", "late", "silent", "unreadable", "time_unreadable"] {
        assert_eq!(uint(&result, &format!("/stream/{key}")), 0, "{key}\n{}", context());
    }
    assert_eq!(uint(&result, "/stream/source_latency_us/count"), delivered, "{}", context());
    assert_eq!(uint(&result, "/stream/spread_us/count"), delivered - ids, "{}", context());
    assert!(errors(&result).is_empty(), "{}", context());
}

#[test]
fn subscribers_of_a_filter_nothing_is_published_on_are_silent() {
    let Some(broker) = or_skip(start_mosquitto()) else { return };
    let _publisher = Publisher::start(broker.port_of("tcp").expect("mosquitto's TCP port"));
    let url = broker.url("/");
    let args = stream_args(&url, "elsewhere/#", &["silent==0"]);
    let (finished, result) = run("stream-mosquitto-silent", &args, Duration::from_secs(90));
    let context = || format!("{}\n{}", finished.describe(), summary_of(&result));
    assert_eq!(finished.code, Some(99), "the threshold silent==0 fails the run\n{}", context());
    assert_eq!(uint(&result, "/stream/silent"), SUBSCRIBERS, "{}", context());
    assert_eq!(uint(&result, "/stream/ids"), 0, "{}", context());
}
