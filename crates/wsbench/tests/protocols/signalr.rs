//! `--protocol signalr` against a real SignalR hub: the fleet member's `hub.py` under
//! aiosignalr 0.1.1 (PyPI), its JSON frames sent as text as the official clients require. A
//! thousand connections echo (`Echo`'s completion) with no error; a thousand subscribers
//! get every group message once; a subscriber the hub aborts mid-run through its admin route
//! is the one subscriber found short, by what it missed; a wrong bearer token (refused 401
//! before the upgrade) and a join the hub refuses (a completion with an error) are counted
//! by their cause, each run exiting 3; `compare --protocol signalr` measures the member.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::Value;
use wsbench_testpeers::{Peer, or_skip, peers_required, start_signalr};

use crate::fleet::{Variant, assert_compare_measures, fleet_of};
use crate::harness::{Finished, errors, heavy, scratch, summary_of, uint};
use crate::run;

/// `run` of an echo over SignalR: `connections` connections.
fn echo(test: &str, url: &str, connections: &str, options: &[&str]) -> (Finished, Value) {
    let load = ["--protocol", "signalr", "--connections", connections, "--warmup", "1s", "--duration", "2s"];
    let args = [&[url], &load[..], options, &["--connect-timeout", "30s"]].concat();
    run(test, &args, Duration::from_secs(180))
}

#[test]
fn a_thousand_connections_echo_through_a_signalr_hub() {
    let Some(server) = or_skip(start_signalr(None)) else { return };
    let (finished, result) = echo("signalr-echo", &server.url(""), "1000", &["--threshold", "errors==0"]);
    finished.assert_success();
    assert_eq!(errors(&result), BTreeMap::new(), "{}", summary_of(&result));
    assert_eq!(uint(&result, "/summary/connections/established"), 1000, "{}", summary_of(&result));
    assert!(uint(&result, "/summary/latency_us/count") > 1000, "{}", summary_of(&result));
    assert_eq!(uint(&result, "/counters/payload_mismatches"), 0, "{}", summary_of(&result));
    assert_eq!(result["config"]["protocol"], "signalr");
    let url = result["target"]["url"].as_str().unwrap_or_default();
    assert!(url.ends_with("/hub"), "the default path is asked for: {url}");
}

#[test]
fn a_thousand_subscribers_get_every_group_message_once_through_a_signalr_hub() {
    let Some(server) = or_skip(start_signalr(None)) else { return };
    let shape = ["--subscribers", "1000", "--topics", "10", "--publishers", "10", "--rate", "5/s"];
    let load = ["--protocol", "signalr", "--warmup", "1s", "--duration", "3s", "--connect-timeout", "30s"];
    let url = server.url("");
    let args = [&["pubsub", url.as_str()], &shape[..], &load].concat();
    let (finished, result) = run("signalr-pubsub", &args, Duration::from_secs(180));
    crate::assert_a_thousand_subscribers_got_every_publish_once(&finished, &result);
}

/// One POST of the hub's admin route: its answer's body.
fn admin(server: &Peer, path: &str) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", server.port())).expect("the hub's port");
    let request = format!("POST /admin/{path} HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n");
    stream.write_all(request.as_bytes()).expect("send the admin request");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read the admin response");
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    assert!(head.starts_with("HTTP/1.1 200") || head.starts_with("HTTP/1.0 200"), "{path}: {response}");
    body.trim().to_owned()
}

/// Mid-run, the hub aborts one member of group `t1` (as a hub's `Context.Abort()` does): it
/// is the one short subscriber, short by exactly what it did not receive, and its
/// connection's end is counted once.
#[test]
fn a_subscriber_the_hub_aborts_mid_run_is_short_by_what_it_missed() {
    let Some(server) = or_skip(start_signalr(None)) else { return };
    let url = server.url("");
    let abort = || assert_eq!(admin(&server, "disconnect?group=t1&count=1"), "1", "one member of t1");
    let (finished, result) =
        crate::pubsub_with_a_fault("signalr-server-abort", &url, "30/s", &["--protocol", "signalr"], abort);
    let missed = crate::assert_short_by_what_they_missed(&finished, &result, 1);
    let context = || format!("{}\n{}", summary_of(&result), finished.describe());
    assert_eq!(uint(&result, "/summary/disconnections"), 1, "{}", context());
    let mut errors = errors(&result);
    assert_eq!(errors.remove("pubsub_lost"), Some(missed), "{}", context());
    assert!(
        errors.len() == 1 && errors.values().all(|&n| n == 1),
        "the hub's abort, once: {errors:?}\n{}",
        context()
    );
}

/// With a token required, the right bearer echoes with no error and a wrong one is refused
/// 401 before the upgrade; a join the hub refuses is counted as the completion's error.
/// Each failed run exits 3.
#[test]
fn a_wrong_token_and_a_refused_join_are_counted_by_their_cause() {
    let Some(server) = or_skip(start_signalr(Some("s3cret"))) else { return };
    let url = server.url("");
    let (finished, result) = echo("signalr-token-right", &url, "20", &["--bearer", "s3cret"]);
    finished.assert_success();
    assert_eq!(errors(&result), BTreeMap::new(), "{}", summary_of(&result));

    let (finished, result) = echo("signalr-token-wrong", &url, "20", &["--bearer", "wrong"]);
    finished.assert_completed_with_failures();
    assert_eq!(uint(&result, "/summary/connections/established"), 0, "{}", summary_of(&result));
    let errors_seen = errors(&result);
    assert_eq!(errors_seen.values().sum::<u64>(), 20, "{errors_seen:?}\n{}", summary_of(&result));
    assert!(errors_seen.keys().all(|cause| cause.contains("401")), "{errors_seen:?}");

    let shape = ["--subscribers", "20", "--topics", "2", "--publishers", "2", "--rate", "5/s"];
    let load = ["--protocol", "signalr", "--bearer", "s3cret", "--join-method", "Forbidden"];
    let args =
        [&["pubsub", url.as_str()], &shape[..], &load, &["--warmup", "0s", "--duration", "2s"]].concat();
    let (finished, result) = run("signalr-join-refused", &args, Duration::from_secs(120));
    finished.assert_completed_with_failures();
    let refused = errors(&result).remove("signalr_completion_error").unwrap_or_default();
    assert_eq!(refused, 20, "every subscriber's join refused once\n{}", summary_of(&result));
    let detail = &result["counters"]["protocol_error_details"]["signalr_completion_error"];
    assert!(detail.as_str().unwrap_or_default().contains("not allowed to join t"), "{detail}");
}

/// A fleet of the repository's `servers/python-signalr` member beside the built-in server:
/// `compare --protocol signalr` measures it and skips the built-in server.
#[test]
fn compare_measures_the_fleet_member_that_speaks_signalr() {
    if or_skip(start_signalr(None)).is_none() {
        assert!(!peers_required(), "aiosignalr (.venv-signalr) is required");
        return;
    }
    let _slot = heavy(1);
    let scratch = scratch("signalr-compare");
    let venv = crate::harness::repo_root().join(".venv-signalr");
    let variants = [Variant { name: "python-signalr", from: "", to: "" }];
    let fleet = fleet_of(
        &scratch,
        "python-signalr",
        &["hub.py", "requirements.txt"],
        &[(".venv", venv.as_path())],
        &variants,
    );
    let out = scratch.join("results");
    assert_compare_measures(&fleet, &out, "signalr", &["python-signalr"]);
}

/// Options SignalR cannot honour are refused before any connection, in one line that names
/// the option and what to give, with exit 2.
#[test]
fn bad_signalr_options_are_refused_in_one_line_before_the_run() {
    let _slot = heavy(1);
    let url = "ws://127.0.0.1:9/";
    let cases: [(&[&str], &str); 2] = [
        (&["--hub-method", "Send Message"], "--hub-method \"Send Message\": give a method name"),
        (&["--payload", "bytes:16"], "SignalR's JSON hub protocol is text: leave out --binary"),
    ];
    for (options, expected) in cases {
        let args = [&["run", url, "--protocol", "signalr"][..], options].concat();
        let finished = crate::harness::wsbench(&args, Duration::from_secs(60));
        assert_eq!(finished.code, Some(2), "{}", finished.describe());
        assert!(finished.stderr.contains(expected), "{expected}\n{}", finished.describe());
        assert_eq!(finished.stderr.trim().lines().count(), 1, "{}", finished.describe());
    }
}
