//! `--protocol socketio` against socket.io 4.8 (servers/node-socketio/server.js): an echo is
//! an emit acknowledged with its payload (as text, or as a binary attachment), pub/sub is the
//! peer's rooms, the server's pings are answered; and against a server that does not speak
//! Engine.IO the run ends with the cause named, instead of waiting. And against socket.io
//! applications as they are written (tests/peers/socketio_app_server.js): a namespace behind
//! an auth middleware, pub/sub events of their own, deliveries of the payload alone, and the
//! msgpack parser.

use std::time::Duration;

use serde_json::Value;
use wsbench_testpeers::{or_skip, start_socketio, start_socketio_app, start_socketio_pinging_with_timeout};

use crate::harness::{Finished, errors, heavy, summary_of, uint, wsbench};
use crate::run;
use crate::support::Server;

#[test]
fn a_thousand_connections_echo_through_socket_io_without_an_error() {
    let Some(server) = or_skip(start_socketio()) else { return };
    let url = server.url("/");
    let load = ["--protocol", "socketio", "--connections", "1000", "--warmup", "1s", "--duration", "4s"];
    let (finished, result) = run(
        "socketio-echo",
        &[&[url.as_str()], &load[..], &["--threshold", "errors==0"]].concat(),
        Duration::from_secs(60),
    );
    finished.assert_success();
    assert_eq!(uint(&result, "/summary/connections/established"), 1000, "{}", summary_of(&result));
    // Every connection echoed in the measured window (not a rate: a busy machine is slower).
    assert_eq!(uint(&result, "/counters/connections_in_window"), 1000, "{}", summary_of(&result));
    assert_eq!(uint(&result, "/counters/payload_mismatches"), 0, "{}", summary_of(&result));
    assert_eq!(result["config"]["protocol"], "socketio");
    // The target names no path: socket.io's own is requested.
    let path = &result["config"]["target"]["path"];
    assert_eq!(path, "/socket.io/?EIO=4&transport=websocket");
}

#[test]
fn binary_payloads_echo_as_attachments() {
    let Some(server) = or_skip(start_socketio()) else { return };
    let url = server.url("/socket.io/");
    let load = ["--protocol", "socketio", "--binary", "--payload", "bytes:256", "--connections", "100"];
    let (finished, result) = run(
        "socketio-binary",
        &[&[url.as_str()], &load[..], &["--warmup", "1s", "--duration", "2s", "--threshold", "errors==0"]]
            .concat(),
        Duration::from_secs(60),
    );
    finished.assert_success();
    assert_eq!(uint(&result, "/summary/connections/established"), 100, "{}", summary_of(&result));
    assert!(uint(&result, "/summary/latency_us/count") > 100, "{}", summary_of(&result));
    assert_eq!(uint(&result, "/counters/payload_mismatches"), 0, "{}", summary_of(&result));
    // Each request is a text packet and its attachment.
    let sent = uint(&result, "/counters/messages_sent");
    assert!(sent > 2 * uint(&result, "/summary/latency_us/count"), "{}", summary_of(&result));
}

/// 1,000 subscribers in 10 rooms, each room published to 10 times a second: 10,000
/// deliveries a second, which the peer (one node thread) delivers in milliseconds. The run
/// has the machine to itself (both load slots): when the node process is starved of CPU it
/// falls seconds behind before it even reads the publishes, the subscribers go quiet, and the
/// end of the run takes the publishes it never read for lost (seen at 200 publishes a second
/// beside a 1,000-connection echo run, load average 12 on the 2 cores).
#[test]
fn a_thousand_subscribers_get_every_publish_of_their_room_once() {
    let Some(server) = or_skip(start_socketio()) else { return };
    let _machine = heavy(2);
    let url = server.url("/");
    let shape = ["--subscribers", "1000", "--topics", "10", "--publishers", "10", "--rate", "100/s"];
    let gates = ["--threshold", "lost==0", "--threshold", "duplicated==0", "--threshold", "errors==0"];
    let (finished, result) = run(
        "socketio-pubsub",
        &[
            &["pubsub", url.as_str(), "--protocol", "socketio"],
            &shape[..],
            &gates[..],
            &["--warmup", "1s", "--duration", "2s"],
        ]
        .concat(),
        Duration::from_secs(90),
    );
    let context = || format!("{}\n{}\n{}", result["pubsub"], summary_of(&result), finished.describe());
    finished.assert_success();
    assert_eq!(uint(&result, "/pubsub/subscribed"), 1000, "{}", context());
    let published = uint(&result, "/pubsub/published");
    assert!(published > 0, "{}", context());
    // Every topic has one publisher and 100 subscribers.
    assert_eq!(uint(&result, "/pubsub/expected_deliveries"), published * 100, "{}", context());
    assert_eq!(uint(&result, "/pubsub/delivered"), published * 100, "{}", context());
    for key in ["lost", "duplicated", "unexpected", "subscribe_failures", "short_subscriber_count"] {
        assert_eq!(uint(&result, &format!("/pubsub/{key}")), 0, "{key}\n{}", context());
    }
}

/// The peer pings every 300 ms and closes a connection whose pong has not come within 3 s
/// (as it did in a run whose pongs were left out: every connection closed by the server), so
/// a run of 5 s with no error had every ping answered. (The session's own deadline for the
/// next ping is 3.3 s: shorter waits were missed by a node process starved of CPU.)
#[test]
fn the_servers_pings_are_answered_and_no_connection_is_dropped() {
    let Some(server) = or_skip(start_socketio_pinging_with_timeout(300, 3000)) else { return };
    let url = server.url("/");
    let load = ["--protocol", "socketio", "--connections", "100", "--warmup", "0s", "--duration", "5s"];
    let (finished, result) = run(
        "socketio-heartbeat",
        &[&[url.as_str()], &load[..], &["--threshold", "errors==0"]].concat(),
        Duration::from_secs(60),
    );
    finished.assert_success();
    assert_eq!(uint(&result, "/summary/connections/established"), 100, "{}", summary_of(&result));
    assert!(errors(&result).is_empty(), "{}", summary_of(&result));
    assert_eq!(uint(&result, "/counters/messages_unanswered"), 0, "{}", summary_of(&result));
}

/// The built-in server echoes and never speaks first: no connection gets the Engine.IO open
/// packet, each ends with that cause, and the run ends (failures counted) without waiting for
/// its duration (300 s).
#[test]
fn a_server_that_does_not_speak_socket_io_ends_the_run_with_the_cause_named() {
    let server = Server::spawn(&[]);
    let url = format!("ws://{}/", server.addr);
    let load = ["--protocol", "socketio", "--connections", "20", "--warmup", "0s", "--duration", "300s"];
    // The open packet is waited for half the connect timeout (the patient one `run` gives)
    // after the upgrade: an upgrade slower than the other half would be the engine's
    // protocol_timeout instead.
    let (finished, result) =
        run("socketio-wrong-server", &[&[url.as_str()], &load[..]].concat(), Duration::from_secs(60));
    finished.assert_completed_with_failures();
    assert_eq!(errors(&result).get("socketio_no_open_packet"), Some(&20), "{}", summary_of(&result));
    assert_eq!(errors(&result).len(), 1, "{}", summary_of(&result));
    assert_eq!(uint(&result, "/summary/connections/established"), 0, "{}", summary_of(&result));
    let details = &result["counters"]["protocol_error_details"];
    let detail = details["socketio_no_open_packet"].as_str().unwrap_or_default();
    assert!(detail.contains("is it a Socket.IO 4 server?"), "{details}");
    assert!(finished.stdout.contains("socketio_no_open_packet 20"), "{}", finished.describe());
}

/// The application of the auth and namespace tests: `/chat` behind a middleware that checks
/// `handshake.auth.token`, rooms joined with `join`, published to with `say(room, payload)`
/// and delivered as `news` with the payload alone.
const CHAT_APP: &str =
    r#"{"namespace":"/chat","token":"s3cret","subscribe":"join","publish":"say","delivery":"news"}"#;

/// wsbench's side of [`CHAT_APP`]: its namespace and events, rooms named `room-K`.
const CHAT_FLAGS: [&str; 12] = [
    "--namespace",
    "/chat",
    "--subscribe-event",
    "join",
    "--publish-event",
    "say",
    "--delivery-event",
    "news",
    "--subscribe-args",
    r#"["room-{topic}"]"#,
    "--publish-args",
    r#"["room-{topic}", {payload}]"#,
];

/// A pub/sub run of 100 subscribers over 4 topics, 4 publishers at 40 publishes a second.
fn pubsub_run(test: &str, url: &str, flags: &[&str]) -> (Finished, Value) {
    let shape = ["--subscribers", "100", "--topics", "4", "--publishers", "4", "--rate", "40/s"];
    let gates = ["--threshold", "lost==0", "--threshold", "duplicated==0", "--threshold", "errors==0"];
    let timing = ["--warmup", "1s", "--duration", "2s"];
    let args = [&["pubsub", url, "--protocol", "socketio"][..], &shape, &gates, &timing, flags].concat();
    run(test, &args, Duration::from_secs(90))
}

/// Every measured publish reached each of its topic's 25 subscribers once, and nothing else
/// came.
fn assert_exact(finished: &Finished, result: &Value) {
    let context = || format!("{}\n{}\n{}", result["pubsub"], summary_of(result), finished.describe());
    finished.assert_success();
    assert_eq!(uint(result, "/pubsub/subscribed"), 100, "{}", context());
    let published = uint(result, "/pubsub/published");
    assert!(published > 0, "{}", context());
    assert_eq!(uint(result, "/pubsub/expected_deliveries"), published * 25, "{}", context());
    assert_eq!(uint(result, "/pubsub/delivered"), published * 25, "{}", context());
    for key in ["lost", "duplicated", "unexpected", "subscribe_failures"] {
        assert_eq!(uint(result, &format!("/pubsub/{key}")), 0, "{key}\n{}", context());
    }
    assert!(errors(result).is_empty(), "{}", context());
}

/// The right token passes the middleware into `/chat`, where pub/sub runs through the
/// application's own events; the URL's explicit path stays the Engine.IO path.
#[test]
fn the_right_token_joins_the_namespace_and_pub_sub_runs_through_the_apps_events() {
    let Some(server) = or_skip(start_socketio_app(CHAT_APP)) else { return };
    let url = server.url("/socket.io/");
    let flags = [&CHAT_FLAGS[..], &["--auth", r#"{"token":"s3cret"}"#]].concat();
    let (finished, result) = pubsub_run("socketio-auth-namespace", &url, &flags);
    assert_exact(&finished, &result);
    assert_eq!(result["config"]["target"]["path"], "/socket.io/?EIO=4&transport=websocket");
}

/// A wrong token is refused by the middleware: every connection's CONNECT_ERROR counted by
/// its cause with the server's message, and the run ends (exit 3) without waiting out its
/// duration.
#[test]
fn a_wrong_token_is_a_connect_error_counted_with_the_servers_message() {
    let Some(server) = or_skip(start_socketio_app(CHAT_APP)) else { return };
    let url = server.url("/");
    let auth = ["--namespace", "/chat", "--auth", r#"{"token":"wrong"}"#];
    let load = ["--protocol", "socketio", "--connections", "20", "--warmup", "0s", "--duration", "300s"];
    let args = [&[url.as_str()][..], &load, &auth].concat();
    let (finished, result) = run("socketio-auth-refused", &args, Duration::from_secs(60));
    finished.assert_completed_with_failures();
    assert_eq!(errors(&result).get("socketio_connect_error"), Some(&20), "{}", summary_of(&result));
    assert_eq!(errors(&result).len(), 1, "{}", summary_of(&result));
    let details = &result["counters"]["protocol_error_details"];
    assert_eq!(details["socketio_connect_error"], "invalid token", "{details}");
    assert_eq!(uint(&result, "/summary/connections/established"), 0, "{}", summary_of(&result));
}

/// The application of the report this answers: wsbench's own events and `{topic, payload}`
/// publish, and the server emitting only the payload to the room
/// (`io.to(room).emit('message', payload)`), with every flag at its default. Each delivery
/// is known by the marker inside it.
#[test]
fn an_app_that_emits_only_the_payload_to_the_room_is_measured_exactly() {
    let Some(server) = or_skip(start_socketio_app(r#"{"object":true}"#)) else { return };
    let url = server.url("/");
    let (finished, result) = pubsub_run("socketio-payload-only", &url, &[]);
    assert_exact(&finished, &result);
}

/// A server on socket.io-msgpack-parser cannot read the text CONNECT and closes at once:
/// each connection says so, with the question that points at the parser.
#[test]
fn a_server_on_the_msgpack_parser_gets_the_parser_hint() {
    let Some(server) = or_skip(start_socketio_app(r#"{"parser":"msgpack"}"#)) else { return };
    let url = server.url("/");
    let load = ["--protocol", "socketio", "--connections", "10", "--warmup", "0s", "--duration", "300s"];
    let (finished, result) =
        run("socketio-msgpack", &[&[url.as_str()], &load[..]].concat(), Duration::from_secs(60));
    finished.assert_completed_with_failures();
    assert_eq!(errors(&result).get("socketio_closed_after_join"), Some(&10), "{}", summary_of(&result));
    let details = &result["counters"]["protocol_error_details"];
    let detail = details["socketio_closed_after_join"].as_str().unwrap_or_default();
    assert!(
        detail.starts_with(
            "closed right after the namespace join: does the server use another parser (msgpack)?"
        ),
        "{details}"
    );
    assert!(finished.stdout.contains("socketio_closed_after_join 10"), "{}", finished.describe());
}

/// Socket.IO options that cannot work are refused before anything connects: one line naming
/// the flag and what to give, exit 2.
#[test]
fn socket_io_options_that_cannot_work_are_refused_before_the_run() {
    let _slot = heavy(1);
    let url = "ws://127.0.0.1:9/";
    for (args, mentions) in [
        (&["--auth", "token=s3cret"][..], "--auth is not JSON"),
        (&["--auth", r#""s3cret""#], "--auth: the CONNECT's auth payload is a JSON object"),
        (&["--namespace", "chat"], "a Socket.IO namespace starts with /"),
        (&["--delivery-event", ""], "--delivery-event is empty"),
        (&["--publish-args", r#"["{topic}", "{payload}"]"#], "not inside quotes"),
        (&["--publish-args", r#"["{topic}"]"#], "give {payload} once"),
        (&["--subscribe-args", "t{topic}"], "--subscribe-args"),
    ] {
        let run_args = [&["run", "pubsub", url, "--protocol", "socketio"][..], args].concat();
        let run = wsbench(&run_args, Duration::from_secs(10));
        assert_eq!(run.code, Some(2), "{}", run.describe());
        let stderr = run.stderr.trim_end();
        assert_eq!(stderr.lines().count(), 1, "{}", run.describe());
        assert!(stderr.contains(mentions), "want {mentions:?}\n{}", run.describe());
    }
    // Pub/sub's options in an echo run are named as pub/sub's.
    let run =
        wsbench(&["run", url, "--protocol", "socketio", "--publish-event", "say"], Duration::from_secs(10));
    assert_eq!(run.code, Some(2), "{}", run.describe());
    assert!(run.stderr.contains("--publish-event") && run.stderr.contains("pubsub"), "{}", run.describe());
}
