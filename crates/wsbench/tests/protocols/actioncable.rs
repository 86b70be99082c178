//! `--protocol actioncable` against real Action Cable: the fleet member's standalone
//! `config.ru` (Debian's ruby-actioncable 6.1) under Debian's puma. A thousand connections
//! echo (the `echo` action transmitted back) with no error; a thousand subscribers get every
//! broadcast once (in some order: Action Cable does not keep a publisher's); a subscriber the server disconnects mid-run through Action Cable's own
//! remote connections API is the one subscriber found short, by what it missed; a wrong
//! bearer token is refused as `unauthorized` and a channel that rejects its subscriptions is
//! counted as such, each run exiting 3; every subscriber of a server-side stream (the ticker
//! channel) gets every tick once; `compare --protocol actioncable` ranks the fleet members
//! that speak it.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::Value;
use wsbench_testpeers::{ActionCableSettings, Peer, or_skip, peers_required, start_actioncable};

use crate::fleet::{Variant, assert_compare_measures, fleet_of};
use crate::harness::{Finished, errors, heavy, scratch, summary_of, uint};
use crate::run;

fn start(settings: &ActionCableSettings<'_>) -> Option<Peer> {
    or_skip(start_actioncable(settings))
}

/// `run` of an echo over Action Cable: `connections` connections.
fn echo(test: &str, url: &str, connections: &str, options: &[&str]) -> (Finished, Value) {
    let load =
        ["--protocol", "actioncable", "--connections", connections, "--warmup", "1s", "--duration", "2s"];
    let args = [&[url], &load[..], options, &["--connect-timeout", "30s"]].concat();
    run(test, &args, Duration::from_secs(180))
}

#[test]
fn a_thousand_connections_echo_through_action_cable() {
    let Some(server) = start(&ActionCableSettings::default()) else { return };
    let (finished, result) = echo("actioncable-echo", &server.url(""), "1000", &["--threshold", "errors==0"]);
    finished.assert_success();
    assert_eq!(errors(&result), BTreeMap::new(), "{}", summary_of(&result));
    assert_eq!(uint(&result, "/summary/connections/established"), 1000, "{}", summary_of(&result));
    assert!(uint(&result, "/summary/latency_us/count") > 1000, "{}", summary_of(&result));
    assert_eq!(uint(&result, "/counters/payload_mismatches"), 0, "{}", summary_of(&result));
    assert_eq!(result["config"]["protocol"], "actioncable");
    let url = result["target"]["url"].as_str().unwrap_or_default();
    assert!(url.ends_with("/cable"), "the default path is asked for: {url}");
}

#[test]
fn a_thousand_subscribers_get_every_broadcast_once_through_action_cable() {
    let Some(server) = start(&ActionCableSettings::default()) else { return };
    // Action Cable spends some 0.4 ms of CPU on each delivery here: on a machine whose
    // cores are shared (load 11 on 2 cores seen) it fell seconds behind 1,000 deliveries a
    // second. 5 publishes a second to 100 subscribers each are 500.
    let shape = ["--subscribers", "1000", "--topics", "10", "--publishers", "10", "--rate", "5/s"];
    let load =
        ["--protocol", "actioncable", "--warmup", "1s", "--duration", "3s", "--connect-timeout", "30s"];
    let url = server.url("");
    let args = [&["pubsub", url.as_str()], &shape[..], &load].concat();
    let (finished, result) = run("actioncable-pubsub", &args, Duration::from_secs(180));
    // Action Cable hands each broadcast to each subscriber through thread pools (the async
    // adapter's event loop, up to 10 threads, then the worker pool): two broadcasts close
    // together may reach a subscriber in either order, which the run counts as out of
    // order. Every one still arrives once.
    crate::assert_a_thousand_subscribers_got_every_publish_once_in_any_order(&finished, &result);
}

/// One GET of the peer's admin routes (`/admin/…`): its JSON answer.
fn admin(server: &Peer, path: &str) -> Value {
    let mut stream = TcpStream::connect(("127.0.0.1", server.port())).expect("puma's port");
    let request = format!("GET /admin/{path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
    stream.write_all(request.as_bytes()).expect("send the admin request");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read the admin response");
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    assert!(head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"), "{path}: {response}");
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"))
}

/// Mid-run, Action Cable's remote connections API (`remote_connections.where(user:)
/// .disconnect`) closes subscriber 4's connection (user `u4`, topic 1 of 3). It is the one
/// short subscriber, short by exactly what it did not receive, and its connection's end is
/// counted by how the server closed it.
#[test]
fn a_subscriber_action_cable_disconnects_mid_run_is_short_by_what_it_missed() {
    let Some(server) = start(&ActionCableSettings::default()) else { return };
    let url = server.url("");
    let options = ["--protocol", "actioncable", "--cookie", "user=u{conn}"];
    let disconnect = || assert_eq!(admin(&server, "disconnect?user=u4")["connections"], 1, "u4's one");
    let (finished, result) =
        crate::pubsub_with_a_fault("actioncable-server-disconnect", &url, "30/s", &options, disconnect);
    let missed = crate::assert_short_by_what_they_missed(&finished, &result, 1);
    let context = || format!("{}\n{}", summary_of(&result), finished.describe());
    assert_eq!(uint(&result, "/summary/disconnections"), 1, "{}", context());
    let mut errors = errors(&result);
    assert_eq!(errors.remove("pubsub_lost"), Some(missed), "{}", context());
    let closes: Vec<&String> = errors.keys().collect();
    assert!(
        errors.len() == 1 && errors.values().all(|&n| n == 1) && closes[0].starts_with("closed_"),
        "the server's close, once, by its code: {errors:?}\n{}",
        context()
    );
}

/// With a token required, the right bearer echoes with no error and a wrong one is refused
/// by Action Cable's `unauthorized` disconnect; a channel that rejects every subscription
/// is counted as rejected. Each failed run exits 3.
#[test]
fn a_wrong_token_and_a_rejected_subscription_are_counted_by_their_cause() {
    let Some(server) = start(&ActionCableSettings { token: Some("s3cret"), ..Default::default() }) else {
        return;
    };
    let url = server.url("");
    let (finished, result) = echo("actioncable-token-right", &url, "20", &["--bearer", "s3cret"]);
    finished.assert_success();
    assert_eq!(errors(&result), BTreeMap::new(), "{}", summary_of(&result));

    let (finished, result) = echo("actioncable-token-wrong", &url, "20", &["--bearer", "wrong"]);
    finished.assert_completed_with_failures();
    assert_eq!(uint(&result, "/summary/connections/established"), 0, "{}", summary_of(&result));
    let unauthorized = [("actioncable_disconnect_unauthorized".to_owned(), 20)].into();
    assert_eq!(errors(&result), unauthorized, "{}", summary_of(&result));

    let guarded = ["--bearer", "s3cret", "--channel", "GuardedChannel", "--channel-params", "{}"];
    let (finished, result) = echo("actioncable-rejected", &url, "20", &guarded);
    finished.assert_completed_with_failures();
    assert_eq!(errors(&result), [("actioncable_rejected".to_owned(), 20)].into(), "{}", summary_of(&result));
    let detail = &result["counters"]["protocol_error_details"]["actioncable_rejected"];
    let detail = detail.as_str().unwrap_or_default();
    assert!(
        detail.starts_with(r#"the channel rejected the echo's subscription {"channel":"GuardedChannel"}"#),
        "{detail}"
    );
}

/// The ticker channel broadcasts `{"seq":N,"ts":UNIX_MS}` every 10 ms from the server
/// itself: every stream subscriber gets every tick once.
#[test]
fn every_subscriber_of_an_action_cable_stream_gets_every_tick_once() {
    let Some(server) = start(&ActionCableSettings { ticker_ms: Some(10), ..Default::default() }) else {
        return;
    };
    let url = server.url("");
    let mut args = vec!["stream", url.as_str(), "--protocol", "actioncable", "--channel", "TickerChannel"];
    args.extend(["--channel-params", "{}", "--subscribers", "50", "--message-id", "/seq"]);
    args.extend(["--message-time", "/ts", "--warmup", "1s", "--duration", "3s"]);
    args.extend(["--threshold", "missing==0", "--threshold", "errors==0"]);
    let (finished, result) = run("actioncable-stream", &args, Duration::from_secs(90));
    let context = || format!("{}\n{}", finished.describe(), summary_of(&result));
    assert_eq!(finished.code, Some(0), "{}", context());
    assert_eq!(uint(&result, "/stream/joined"), 50, "{}", context());
    let (ids, delivered) = (uint(&result, "/stream/ids"), uint(&result, "/stream/delivered"));
    assert!(ids > 100, "3 measured seconds of a tick every 10 ms\n{}", context());
    assert_eq!(delivered, ids * 50, "{}", context());
    for key in ["missing", "duplicated", "silent", "unreadable"] {
        assert_eq!(uint(&result, &format!("/stream/{key}")), 0, "{key}\n{}", context());
    }
}

/// A fleet of the repository's `servers/ruby-actioncable` member twice (Action Cable's
/// worker pool of 4 threads, as Rails configures it, and of 1) beside the built-in server:
/// `compare --protocol actioncable` measures the two and skips the built-in server.
#[test]
fn compare_ranks_the_fleet_members_that_speak_action_cable() {
    if or_skip(start_actioncable(&ActionCableSettings::default())).is_none() {
        assert!(!peers_required(), "puma and ruby-actioncable are required");
        return;
    }
    let _slot = heavy(1);
    let scratch = scratch("actioncable-compare");
    let one = "ACTIONCABLE_WORKERS = \"1\"";
    let variants = [
        Variant { name: "ruby-actioncable", from: "", to: "" },
        Variant { name: "ruby-actioncable-1-worker", from: "ACTIONCABLE_WORKERS = \"4\"", to: one },
    ];
    let fleet = fleet_of(&scratch, "ruby-actioncable", &["config.ru"], &[], &variants);
    let out = scratch.join("results");
    assert_compare_measures(&fleet, &out, "actioncable", &["ruby-actioncable", "ruby-actioncable-1-worker"]);
}

/// Options Action Cable cannot honour are refused before any connection, in one line that
/// names the option and what to give, with exit 2.
#[test]
fn bad_actioncable_options_are_refused_in_one_line_before_the_run() {
    let _slot = heavy(1);
    let url = "ws://127.0.0.1:9/";
    let cases: [(&[&str], &str); 4] = [
        (&["--channel", "Chat Channel"], "--channel \"Chat Channel\": give a name without spaces"),
        (&["--channel-params", "[]"], "--channel-params is not a JSON object"),
        (&["--channel-params", r#"{"room":{topic}}"#], "{topic} inside a string"),
        (&["--payload", "bytes:16"], "Action Cable's JSON protocol is text: leave out --binary"),
    ];
    for (options, expected) in cases {
        let args = [&["run", url, "--protocol", "actioncable"][..], options].concat();
        let finished = crate::harness::wsbench(&args, Duration::from_secs(60));
        assert_eq!(finished.code, Some(2), "{}", finished.describe());
        assert!(finished.stderr.contains(expected), "{expected}\n{}", finished.describe());
        assert_eq!(finished.stderr.trim().lines().count(), 1, "{}", finished.describe());
    }
}
