//! SignalR's negotiate POST against a real hub (the fleet member's `hub.py`, aiosignalr
//! 0.1.1): every connection negotiates before its WebSocket unless `--skip-negotiate` is
//! given (the hub's own count of negotiate answers says so); a redirect to the same hub with
//! an access token is followed once, that token the bearer of the second negotiate and of the
//! WebSocket; a hub that closes the connection after its answer gets each WebSocket on a new
//! connection; and a hub whose negotiate misbehaves as servers do (an `error`, long polling
//! alone, no JSON, a 401) fails every connection by that cause, never a success, and the run
//! exits 3; so does a server that takes the POST and never answers.

use std::collections::BTreeMap;
use std::io::Read;
use std::net::TcpListener;
use std::time::Duration;

use serde_json::Value;
use wsbench_testpeers::{Peer, or_skip, start_signalr, start_signalr_with};

use crate::harness::{Finished, errors, summary_of, uint};
use crate::run;

/// `run` of a 2 s echo over SignalR: `connections` connections.
fn echo(test: &str, url: &str, connections: &str, options: &[&str]) -> (Finished, Value) {
    let load = ["--protocol", "signalr", "--connections", connections, "--warmup", "0s", "--duration", "2s"];
    let args = [&[url], &load[..], options, &["--connect-timeout", "30s"]].concat();
    run(test, &args, Duration::from_secs(180))
}

/// How many negotiate POSTs the hub has answered (its admin route).
fn negotiations(server: &Peer) -> u64 {
    crate::signalr::admin(server, "negotiations").parse().expect("a count")
}

#[test]
fn every_connection_negotiates_first_unless_told_to_skip_it() {
    let Some(server) = or_skip(start_signalr(None)) else { return };
    let url = server.url("");
    let (finished, result) = echo("signalr-negotiated", &url, "50", &["--threshold", "errors==0"]);
    finished.assert_success();
    assert_eq!(uint(&result, "/summary/connections/established"), 50, "{}", summary_of(&result));
    assert_eq!(negotiations(&server), 50, "one negotiate POST a connection\n{}", summary_of(&result));
    assert_eq!(result["config"]["protocol_options"]["skip_negotiate"], Value::Null);

    let (finished, result) = echo("signalr-skip-negotiate", &url, "50", &["--skip-negotiate"]);
    finished.assert_success();
    assert_eq!(uint(&result, "/summary/connections/established"), 50, "{}", summary_of(&result));
    assert_eq!(negotiations(&server), 50, "no negotiate POST with --skip-negotiate");
    assert_eq!(result["config"]["protocol_options"]["skip_negotiate"], true);
}

#[test]
fn a_redirect_to_the_same_hub_is_followed_once_with_its_access_token() {
    let Some(server) = or_skip(start_signalr_with(None, Some("redirect"))) else { return };
    let url = server.url("");
    let (finished, result) = echo("signalr-redirect", &url, "20", &["--threshold", "errors==0"]);
    finished.assert_success();
    assert_eq!(errors(&result), BTreeMap::new(), "{}", summary_of(&result));
    assert_eq!(uint(&result, "/summary/connections/established"), 20, "{}", summary_of(&result));
    assert_eq!(negotiations(&server), 40, "the redirect and the negotiate again, for each connection");

    // Without the negotiate, the WebSocket lacks the redirect's token: refused 401.
    let (finished, result) = echo("signalr-redirect-skipped", &url, "20", &["--skip-negotiate"]);
    finished.assert_completed_with_failures();
    assert_eq!(errors(&result), BTreeMap::from([("handshake_http_status_401".to_owned(), 20)]));
}

/// A hub that closes the connection after its negotiate answer (`Connection: close`): each
/// WebSocket goes on a new connection, as the official clients always open one.
#[test]
fn a_negotiate_that_closes_its_connection_gets_the_websocket_on_a_new_one() {
    let Some(server) = or_skip(start_signalr_with(None, Some("close"))) else { return };
    let (finished, result) = echo("signalr-negotiate-close", &server.url(""), "20", &[]);
    finished.assert_success();
    assert_eq!(errors(&result), BTreeMap::new(), "{}", summary_of(&result));
    assert_eq!(uint(&result, "/summary/connections/established"), 20, "{}", summary_of(&result));
    assert_eq!(uint(&result, "/counters/tcp_connections"), 40, "two a WebSocket\n{}", summary_of(&result));
    assert_eq!(negotiations(&server), 20);
}

#[test]
fn a_misbehaving_negotiate_fails_every_connection_by_its_cause() {
    let cases = [
        ("error", "handshake_signalr_negotiate_error", "negotiation refused by the test hub"),
        ("polling", "handshake_signalr_negotiate_no_websockets", "offers LongPolling"),
        ("malformed", "handshake_signalr_negotiate_malformed", "not a negotiate answer"),
    ];
    for (mode, cause, detail) in cases {
        let Some(server) = or_skip(start_signalr_with(None, Some(mode))) else { return };
        let (finished, result) = echo(&format!("signalr-negotiate-{mode}"), &server.url(""), "10", &[]);
        finished.assert_completed_with_failures();
        assert_eq!(uint(&result, "/summary/connections/established"), 0, "{mode}\n{}", summary_of(&result));
        assert_eq!(
            errors(&result),
            BTreeMap::from([(cause.to_owned(), 10)]),
            "{mode}\n{}",
            summary_of(&result)
        );
        let said = result["counters"]["handshake_responses"][cause.trim_start_matches("handshake_")].as_str();
        assert!(said.unwrap_or_default().contains(detail), "{mode}: {said:?}\n{}", summary_of(&result));
    }

    let Some(server) = or_skip(start_signalr(Some("s3cret"))) else { return };
    let (finished, result) = echo("signalr-negotiate-401", &server.url(""), "10", &["--bearer", "wrong"]);
    finished.assert_completed_with_failures();
    let causes = errors(&result);
    assert_eq!(causes, BTreeMap::from([("handshake_signalr_negotiate_status_401".to_owned(), 10)]));
    let said = result["counters"]["handshake_responses"]["signalr_negotiate_status_401"].as_str();
    assert!(said.unwrap_or_default().contains("answered 401: Unauthorized"), "{said:?}");
}

/// A server that reads the negotiate POST and never answers: each connection is given up at
/// its connect timeout as `signalr_negotiate_timeout`, and the run exits 3.
#[test]
fn a_negotiate_never_answered_is_given_up_at_the_connect_timeout() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = listener.local_addr().expect("its address").port();
    let (done, run_over) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        let mut streams = Vec::new();
        for stream in listener.incoming().take(5) {
            let Ok(mut stream) = stream else { break };
            let mut request = [0u8; 512];
            let _ = stream.read(&mut request);
            streams.push(stream);
        }
        // The connections stay open, unanswered, until the run is over.
        let _ = run_over.recv_timeout(Duration::from_secs(120));
    });
    let url = format!("ws://127.0.0.1:{port}/hub");
    let load = ["--protocol", "signalr", "--connections", "5", "--warmup", "0s", "--duration", "1s"];
    let args = [&[url.as_str()], &load[..], &["--connect-timeout", "2s"]].concat();
    let (finished, result) = run("signalr-negotiate-timeout", &args, Duration::from_secs(120));
    finished.assert_completed_with_failures();
    let expected = BTreeMap::from([("handshake_signalr_negotiate_timeout".to_owned(), 5)]);
    assert_eq!(errors(&result), expected, "{}", summary_of(&result));
    let _ = done.send(());
}
