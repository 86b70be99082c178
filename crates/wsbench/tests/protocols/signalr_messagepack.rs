//! `--protocol signalr --hub-protocol messagepack` against a real hub (the fleet member's
//! `hub.py`, aiosignalr 0.1.1, its MessagePack headers written as maps): a thousand
//! connections negotiate (the `Binary` transfer format) and echo with no error, text and
//! binary payloads alike; a thousand subscribers get every group message once; every
//! subscriber of the `Ticks` stream gets every tick once; a hub protocol wsbench does not
//! speak is refused before the run.

use std::collections::BTreeMap;
use std::time::Duration;

use wsbench_testpeers::{or_skip, start_signalr};

use crate::harness::{errors, heavy, summary_of, uint};
use crate::run;

const PACKED: [&str; 4] = ["--protocol", "signalr", "--hub-protocol", "messagepack"];

#[test]
fn a_thousand_connections_echo_over_messagepack() {
    let Some(server) = or_skip(start_signalr(None)) else { return };
    let url = server.url("");
    let load = ["--connections", "1000", "--warmup", "1s", "--duration", "2s", "--connect-timeout", "30s"];
    let args = [&[url.as_str()], &PACKED[..], &load, &["--threshold", "errors==0"]].concat();
    let (finished, result) = run("signalr-messagepack-echo", &args, Duration::from_secs(180));
    finished.assert_success();
    assert_eq!(errors(&result), BTreeMap::new(), "{}", summary_of(&result));
    assert_eq!(uint(&result, "/summary/connections/established"), 1000, "{}", summary_of(&result));
    assert!(uint(&result, "/summary/latency_us/count") > 1000, "{}", summary_of(&result));
    assert_eq!(uint(&result, "/counters/payload_mismatches"), 0, "{}", summary_of(&result));
    assert_eq!(crate::signalr::admin(&server, "negotiations"), "1000");

    let binary = ["--connections", "20", "--warmup", "0s", "--duration", "2s", "--payload", "bytes:64"];
    let args = [&[url.as_str()], &PACKED[..], &binary].concat();
    let (finished, result) = run("signalr-messagepack-binary", &args, Duration::from_secs(120));
    finished.assert_success();
    assert_eq!(errors(&result), BTreeMap::new(), "{}", summary_of(&result));
    assert!(uint(&result, "/summary/latency_us/count") > 20, "{}", summary_of(&result));
    assert_eq!(uint(&result, "/counters/payload_mismatches"), 0, "{}", summary_of(&result));
}

#[test]
fn a_thousand_subscribers_get_every_group_message_once_over_messagepack() {
    let Some(server) = or_skip(start_signalr(None)) else { return };
    let shape = ["--subscribers", "1000", "--topics", "10", "--publishers", "10", "--rate", "5/s"];
    let load = ["--warmup", "1s", "--duration", "3s", "--connect-timeout", "30s"];
    let url = server.url("");
    let args = [&["pubsub", url.as_str()], &PACKED[..], &shape, &load].concat();
    let (finished, result) = run("signalr-messagepack-pubsub", &args, Duration::from_secs(180));
    crate::assert_a_thousand_subscribers_got_every_publish_once(&finished, &result);

    let mut args = vec!["stream", url.as_str()];
    args.extend(PACKED);
    args.extend(["--stream-method", "Ticks", "--stream-arguments", "[0, 10]", "--subscribers", "50"]);
    args.extend(["--message-id", "/seq", "--message-time", "/ts", "--warmup", "1s", "--duration", "3s"]);
    let (finished, result) = run("signalr-messagepack-stream", &args, Duration::from_secs(90));
    crate::assert_every_stream_subscriber_got_every_id(&finished, &result, 50, 50);
}

#[test]
fn a_hub_protocol_wsbench_does_not_speak_is_refused_before_the_run() {
    let _slot = heavy(1);
    let args = ["run", "ws://127.0.0.1:9/", "--protocol", "signalr", "--hub-protocol", "protobuf"];
    let finished = crate::harness::wsbench(&args, Duration::from_secs(60));
    assert_eq!(finished.code, Some(2), "{}", finished.describe());
    assert!(
        finished.stderr.contains("--hub-protocol \"protobuf\": give json or messagepack"),
        "{}",
        finished.describe()
    );
    assert_eq!(finished.stderr.trim().lines().count(), 1, "{}", finished.describe());
}
