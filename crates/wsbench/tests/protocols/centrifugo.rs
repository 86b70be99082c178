//! `--protocol centrifugo` against the real Centrifugo v6 server (built from its Go module
//! by scripts/install-centrifugo.sh). A thousand connections echo (a publish delivered back
//! on each connection's own channel) with no error; a thousand subscribers get every
//! publish once; a subscriber the server disconnects mid-run through its HTTP API and one
//! it unsubscribes are the two subscribers found short, each by what it missed; a token
//! signed with the server's secret opens a namespace anonymous clients may not use, and a
//! token signed with another is refused by its disconnect code; the server's pings are
//! answered; `compare --protocol centrifugo` ranks the fleet members that speak it.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{Value, json};
use wsbench_testpeers::{
    CENTRIFUGO_API_KEY, CENTRIFUGO_SECRET, Peer, centrifugo_token, or_skip, peers_required, start_centrifugo,
    start_centrifugo_pinging_every,
};

use crate::fleet::{Variant, assert_compare_measures, fleet_of};
use crate::harness::{Finished, arg, errors, heavy, read_result, scratch, summary_of, uint};
use crate::run;

/// `run` of an echo over Centrifugo: `connections` connections with `--threshold errors==0`.
fn echo(test: &str, url: &str, connections: &str, options: &[&str]) -> (Finished, Value) {
    let load =
        ["--protocol", "centrifugo", "--connections", connections, "--warmup", "1s", "--duration", "2s"];
    let args = [&[url], &load[..], options, &["--connect-timeout", "30s"]].concat();
    run(test, &args, Duration::from_secs(180))
}

/// Every connection open, echoing, every reply the payload sent, no error.
fn assert_clean_echo(finished: &Finished, result: &Value, connections: u64) {
    finished.assert_success();
    assert_eq!(errors(result), BTreeMap::new(), "{}", summary_of(result));
    assert_eq!(uint(result, "/summary/connections/established"), connections, "{}", summary_of(result));
    assert!(uint(result, "/summary/latency_us/count") > connections, "{}", summary_of(result));
    assert_eq!(uint(result, "/counters/payload_mismatches"), 0, "{}", summary_of(result));
    assert_eq!(result["config"]["protocol"], "centrifugo");
}

#[test]
fn a_thousand_connections_echo_through_centrifugo() {
    let Some(server) = or_skip(start_centrifugo()) else { return };
    let (finished, result) = echo("centrifugo-echo", &server.url(""), "1000", &["--threshold", "errors==0"]);
    assert_clean_echo(&finished, &result, 1000);
    let url = result["target"]["url"].as_str().unwrap_or_default();
    assert!(url.ends_with("/connection/websocket"), "the default path is asked for: {url}");
}

#[test]
fn a_thousand_subscribers_get_every_publish_once_through_centrifugo() {
    let Some(server) = or_skip(start_centrifugo()) else { return };
    let shape = ["--subscribers", "1000", "--topics", "10", "--publishers", "10", "--rate", "100/s"];
    let load = ["--protocol", "centrifugo", "--warmup", "1s", "--duration", "3s", "--connect-timeout", "30s"];
    let channel = ["--channel", "bench.{topic}.load", "--threshold", "errors==0"];
    let url = server.url("");
    let args = [&["pubsub", url.as_str()], &shape[..], &load, &channel].concat();
    let (finished, result) = run("centrifugo-pubsub", &args, Duration::from_secs(180));
    crate::assert_a_thousand_subscribers_got_every_publish_once(&finished, &result);
    assert_eq!(result["config"]["protocol_options"]["channel"], "bench.{topic}.load");
}

/// One HTTP/1.0 call of the server API (`/api/METHOD`, JSON in and out): its `result`.
fn api(server: &Peer, method: &str, body: &Value) -> Value {
    let mut stream = TcpStream::connect(("127.0.0.1", server.port())).expect("Centrifugo's HTTP port");
    let body = body.to_string();
    let request = format!(
        "POST /api/{method} HTTP/1.0\r\nHost: 127.0.0.1\r\nX-API-Key: {CENTRIFUGO_API_KEY}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).expect("send the API request");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read the API response");
    let (head, text) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    assert!(head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"), "{method}: {response}");
    let reply: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{method}: {e}: {text}"));
    assert!(reply.get("error").is_none(), "{method}: {reply}");
    reply["result"].clone()
}

/// Mid-run, the server's HTTP API disconnects one of topic 1's subscribers and unsubscribes
/// another from its channel (both found by the channel's presence). They are the two short
/// subscribers, each short by exactly what it did not receive; the disconnect is counted by
/// its close code, the unsubscribe by its push's code.
#[test]
fn subscribers_the_server_disconnects_or_unsubscribes_mid_run_are_short_by_what_they_missed() {
    let Some(server) = or_skip(start_centrifugo()) else { return };
    let token = centrifugo_token(CENTRIFUGO_SECRET, "bench");
    let url = server.url("");
    let options = ["--protocol", "centrifugo", "--connection-token", &token];
    let faults = || {
        let presence = api(&server, "presence", &json!({ "channel": "wsbench-1" }));
        let mut clients: Vec<String> =
            presence["presence"].as_object().expect("presence").keys().cloned().collect();
        clients.sort();
        assert_eq!(clients.len(), 10, "topic 1's ten subscribers are on wsbench-1: {presence}");
        api(&server, "disconnect", &json!({ "user": "bench", "client": clients[0] }));
        api(
            &server,
            "unsubscribe",
            &json!({ "user": "bench", "client": clients[1], "channel": "wsbench-1" }),
        );
    };
    let (finished, result) =
        crate::pubsub_with_a_fault("centrifugo-server-faults", &url, "150/s", &options, faults);
    let missed = crate::assert_short_by_what_they_missed(&finished, &result, 2);
    let context = || format!("{}\n{}", summary_of(&result), finished.describe());
    assert_eq!(uint(&result, "/summary/disconnections"), 1, "{}", context());
    let mut errors = errors(&result);
    assert_eq!(errors.remove("pubsub_lost"), Some(missed), "{}", context());
    assert_eq!(
        errors,
        [("centrifugo_unsubscribed_2000".to_owned(), 1), ("closed_3503".to_owned(), 1)].into(),
        "the disconnect by its close code, the unsubscribe by its push's code\n{}",
        context()
    );
    let details = &result["counters"]["protocol_error_details"];
    let unsubscribed = details["centrifugo_unsubscribed_2000"].as_str().unwrap_or_default();
    assert!(unsubscribed.contains("wsbench-1"), "{unsubscribed}\n{}", context());
}

/// The namespace `guarded` takes clients with a token only: the right token echoes there
/// with no error; anonymous clients are refused their subscription by its error code; a
/// token signed with another secret is refused by the server's close code. Each failed run
/// exits 3.
#[test]
fn a_token_opens_what_anonymous_clients_may_not_and_a_wrong_one_is_refused_by_its_code() {
    let Some(server) = or_skip(start_centrifugo()) else { return };
    let url = server.url("");
    let guarded = ["--channel", "guarded:{topic}"];
    let right = centrifugo_token(CENTRIFUGO_SECRET, "bench");
    let (finished, result) =
        echo("centrifugo-token-right", &url, "20", &[&guarded[..], &["--connection-token", &right]].concat());
    assert_clean_echo(&finished, &result, 20);

    let (finished, result) = echo("centrifugo-token-none", &url, "20", &guarded);
    finished.assert_completed_with_failures();
    assert_eq!(errors(&result), [("centrifugo_error_103".to_owned(), 20)].into(), "{}", summary_of(&result));
    let detail = &result["counters"]["protocol_error_details"]["centrifugo_error_103"];
    let detail = detail.as_str().unwrap_or_default();
    let refused = "permission denied (code 103, answering subscribe to the echo channel guarded:echo-";
    assert!(detail.starts_with(refused), "{detail}\n{}", summary_of(&result));

    let wrong = centrifugo_token("another-secret", "bench");
    let (finished, result) =
        echo("centrifugo-token-wrong", &url, "20", &[&guarded[..], &["--connection-token", &wrong]].concat());
    finished.assert_completed_with_failures();
    assert_eq!(uint(&result, "/summary/connections/established"), 0, "{}", summary_of(&result));
    assert_eq!(errors(&result), [("closed_3500".to_owned(), 20)].into(), "{}", summary_of(&result));
}

/// `--connection-token '{data.token}'`: each connection connects with its `--data` row's
/// token (row `index mod rows`). Of two rows, one token signed with the server's secret and
/// one with another, every other connection is refused: half established, half
/// `closed_3500`.
#[test]
fn each_connection_takes_its_token_from_its_data_row() {
    let Some(server) = or_skip(start_centrifugo()) else { return };
    let rows = scratch("centrifugo-data-tokens").join("tokens.csv");
    let (right, wrong) =
        (centrifugo_token(CENTRIFUGO_SECRET, "u0"), centrifugo_token("another-secret", "u1"));
    std::fs::write(&rows, format!("token\n{right}\n{wrong}\n")).unwrap();
    let options = ["--connection-token", "{data.token}", "--data", arg(&rows)];
    let (finished, result) = echo("centrifugo-data-tokens-run", &server.url(""), "10", &options);
    finished.assert_completed_with_failures();
    assert_eq!(uint(&result, "/summary/connections/established"), 5, "{}", summary_of(&result));
    assert_eq!(errors(&result), [("closed_3500".to_owned(), 5)].into(), "{}", summary_of(&result));
    assert!(uint(&result, "/summary/latency_us/count") > 5, "the five others echo\n{}", summary_of(&result));
}

/// Centrifugo pings every 2 s and disconnects a client whose pong is not back within 1.5 s
/// (close code 3012): connections that last several pings and are never disconnected
/// answered each one.
#[test]
fn the_servers_pings_are_answered() {
    let Some(server) = or_skip(start_centrifugo_pinging_every(2)) else { return };
    let url = server.url("");
    let load = ["--protocol", "centrifugo", "--connections", "20", "--warmup", "0s", "--duration", "7s"];
    let args = [&[url.as_str()][..], &load, &["--threshold", "errors==0"]].concat();
    let (finished, result) = run("centrifugo-pings", &args, Duration::from_secs(120));
    finished.assert_success();
    assert_eq!(errors(&result), BTreeMap::new(), "{}", summary_of(&result));
    assert_eq!(uint(&result, "/summary/disconnections"), 0, "{}", summary_of(&result));
}

/// A fleet of the repository's `servers/centrifugo` member twice (one Go thread, and two)
/// beside the built-in server: `compare --protocol centrifugo` measures the two and skips
/// the built-in server, which speaks raw only; `compare --scenario pubsub` measures the two
/// with every delivery made.
#[test]
fn compare_ranks_the_fleet_members_that_speak_centrifugo() {
    let repo = crate::harness::repo_root();
    let binary = repo.join(".tools/centrifugo");
    if !binary.is_file() {
        assert!(!peers_required(), "centrifugo is not installed: run scripts/install-test-peers.sh");
        eprintln!("skipped: centrifugo is not installed (run scripts/install-test-peers.sh)");
        return;
    }
    let _slot = heavy(1);
    let scratch = scratch("centrifugo-compare");
    let variants = [
        Variant { name: "centrifugo", from: "", to: "" },
        Variant { name: "centrifugo-2-threads", from: "GOMAXPROCS = \"1\"", to: "GOMAXPROCS = \"2\"" },
    ];
    let fleet = fleet_of(&scratch, "centrifugo", &["start.sh"], &[("centrifugo", &binary)], &variants);
    let out = scratch.join("results");
    assert_compare_measures(&fleet, &out, "centrifugo", &["centrifugo", "centrifugo-2-threads"]);
    // The same members in a pub/sub comparison: every delivery of every subscriber there.
    let out = scratch.join("pubsub-results");
    let shape = "--subscribers 100 --topics 2 --publishers 2 --rate 50/s --warmup 1s --duration 2s";
    let mut args = vec!["compare", "--scenario", "pubsub", "--protocol", "centrifugo", "--servers"];
    args.extend(["centrifugo,centrifugo-2-threads", "--fleet-dir", arg(&fleet), "--out", arg(&out)]);
    args.extend(shape.split_whitespace().chain(["--connect-timeout", "30s"]));
    let finished = crate::harness::wsbench(&args, Duration::from_secs(240));
    assert_eq!(finished.code, Some(0), "{}", finished.describe());
    for name in ["centrifugo", "centrifugo-2-threads"] {
        let result = read_result(&out.join(format!("{name}-1.json")));
        let context = || format!("{name}: {}\n{}", result["pubsub"], finished.describe());
        assert_eq!(uint(&result, "/pubsub/subscribed"), 100, "{}", context());
        assert!(uint(&result, "/pubsub/delivered") > 0, "{}", context());
        assert_eq!(
            uint(&result, "/pubsub/delivered"),
            uint(&result, "/pubsub/expected_deliveries"),
            "{}",
            context()
        );
        assert_eq!(uint(&result, "/pubsub/lost") + uint(&result, "/pubsub/duplicated"), 0, "{}", context());
    }
}

/// Options Centrifugo cannot honour are refused before any connection, in one line that
/// names the option and what to give, with exit 2; its options under another protocol too.
#[test]
fn bad_centrifugo_options_are_refused_in_one_line_before_the_run() {
    let _slot = heavy(1);
    let url = "ws://127.0.0.1:9/";
    let cases: [(&[&str], &str); 4] = [
        (&["--channel", "room"], "--channel room: give {topic} exactly once"),
        (&["--channel", "a{topic}{topic}"], "give {topic} exactly once"),
        (&["--connection-token", ""], "--connection-token is empty"),
        (&["--payload", "bytes:16"], "Centrifugo's JSON protocol is text: leave out --binary"),
    ];
    for (options, expected) in cases {
        let args = [&["run", url, "--protocol", "centrifugo"][..], options].concat();
        let finished = crate::harness::wsbench(&args, Duration::from_secs(60));
        assert_eq!(finished.code, Some(2), "{}", finished.describe());
        assert!(finished.stderr.contains(expected), "{expected}\n{}", finished.describe());
        assert_eq!(finished.stderr.trim().lines().count(), 1, "{}", finished.describe());
    }
    let finished = crate::harness::wsbench(
        &["run", url, "--protocol", "mqtt", "--channel", "x{topic}"],
        Duration::from_secs(60),
    );
    assert_eq!(finished.code, Some(2), "{}", finished.describe());
    // Every member that declares --channel is named; mqtt is not among them.
    assert!(
        finished.stderr.contains("--channel: applies to --protocol centrifugo or")
            && finished.stderr.contains("only (this run speaks mqtt)"),
        "{}",
        finished.describe()
    );
}
