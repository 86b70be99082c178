//! `--protocol pusher` against sockudo 5.2 (a Pusher Channels server, built from crates.io by
//! scripts/install-sockudo.sh). A thousand connections ping with no error; a thousand
//! subscribers of private channels get every client event once; a presence subscriber the
//! server's HTTP API disconnects mid-run (`terminate_connections` of its user) is the one
//! subscriber found short, by what it missed; a wrong app secret is refused by the server's
//! error code and an unknown app key named as such, each run exiting 3; every subscriber of a
//! channel the test publishes to through the signed HTTP events API gets every event once;
//! `compare --protocol pusher` ranks the fleet members that speak it.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use wsbench_appproto::pusher::api_query;
use wsbench_testpeers::{
    Peer, SOCKUDO_APP_ID, SOCKUDO_APP_KEY, SOCKUDO_APP_SECRET, or_skip, peers_required, start_sockudo,
};

use crate::fleet::{Variant, assert_compare_measures, fleet_of};
use crate::harness::{Finished, errors, heavy, scratch, summary_of, uint};
use crate::run;

/// `run` of an echo (pings) over Pusher: `connections` connections.
fn echo(test: &str, url: &str, connections: &str, options: &[&str]) -> (Finished, Value) {
    let load = ["--protocol", "pusher", "--connections", connections, "--warmup", "1s", "--duration", "2s"];
    let args = [&[url], &load[..], options, &["--connect-timeout", "30s"]].concat();
    run(test, &args, Duration::from_secs(180))
}

#[test]
fn a_thousand_connections_ping_through_sockudo() {
    let Some(server) = or_skip(start_sockudo()) else { return };
    let (finished, result) = echo("pusher-echo", &server.url(""), "1000", &["--threshold", "errors==0"]);
    finished.assert_success();
    assert_eq!(errors(&result), BTreeMap::new(), "{}", summary_of(&result));
    assert_eq!(uint(&result, "/summary/connections/established"), 1000, "{}", summary_of(&result));
    assert!(uint(&result, "/summary/latency_us/count") > 1000, "{}", summary_of(&result));
    let url = result["target"]["url"].as_str().unwrap_or_default();
    assert!(url.contains("/app/app-key?protocol=7&client=wsbench"), "the app's path is asked for: {url}");
}

#[test]
fn a_thousand_subscribers_get_every_client_event_once_through_sockudo() {
    let Some(server) = or_skip(start_sockudo()) else { return };
    let shape = ["--subscribers", "1000", "--topics", "10", "--publishers", "10", "--rate", "100/s"];
    let load =
        ["--protocol", "pusher", "--app-secret", SOCKUDO_APP_SECRET, "--warmup", "1s", "--duration", "3s"];
    let url = server.url("");
    let args = [
        &["pubsub", url.as_str()],
        &shape[..],
        &load,
        &["--connect-timeout", "30s", "--threshold", "errors==0"],
    ]
    .concat();
    let (finished, result) = run("pusher-pubsub", &args, Duration::from_secs(180));
    crate::assert_a_thousand_subscribers_got_every_publish_once(&finished, &result);
    assert_eq!(result["config"]["protocol_options"]["app_secret"], "<redacted>");
    let written = std::fs::read_to_string(scratch_result("pusher-pubsub")).unwrap_or_default();
    assert!(!written.contains(SOCKUDO_APP_SECRET), "the secret is written nowhere");
}

/// The result file `run` wrote for `test`.
fn scratch_result(test: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("engine-tests").join(test).join("r.json")
}

/// One request to the server's HTTP API, signed with the app's secret: its status and body.
fn api(server: &Peer, method: &str, path: &str, body: &str) -> (u16, String) {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| since.as_secs());
    let query = api_query(method, path, body.as_bytes(), SOCKUDO_APP_KEY, SOCKUDO_APP_SECRET, now);
    let mut stream = TcpStream::connect(("127.0.0.1", server.port())).expect("sockudo's port");
    let request = format!(
        "{method} {path}?{query} HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).expect("send the API request");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read the API response");
    let status = response.split_whitespace().nth(1).and_then(|code| code.parse().ok()).unwrap_or(0);
    let body = response.split_once("\r\n\r\n").map_or("", |(_, body)| body).to_owned();
    (status, body)
}

/// Mid-run, the HTTP API terminates the connections of user `u4` (subscriber 4, topic 1 of
/// 3, on the presence channel `presence-room-1`): it is the one short subscriber, short by
/// exactly what it missed, and the server's `pusher:error` 4009 that ends its connection is
/// counted once.
#[test]
fn a_subscriber_the_server_api_disconnects_mid_run_is_short_by_what_it_missed() {
    let Some(server) = or_skip(start_sockudo()) else { return };
    let url = server.url("");
    let options =
        ["--protocol", "pusher", "--app-secret", SOCKUDO_APP_SECRET, "--channel", "presence-room-{topic}"];
    let options = [&options[..], &["--user-id", "u{conn}"]].concat();
    let terminate = || {
        let path = format!("/apps/{SOCKUDO_APP_ID}/users/u4/terminate_connections");
        let (status, body) = api(&server, "POST", &path, "{}");
        assert_eq!(status, 200, "terminate_connections: {body}");
    };
    let (finished, result) =
        crate::pubsub_with_a_fault("pusher-server-terminate", &url, "60/s", &options, terminate);
    let missed = crate::assert_short_by_what_they_missed(&finished, &result, 1);
    let context = || format!("{}\n{}", summary_of(&result), finished.describe());
    // The server's error message ends the connection: counted once, by its code.
    let mut errors = errors(&result);
    assert_eq!(errors.remove("pubsub_lost"), Some(missed), "{}", context());
    assert_eq!(errors, [("pusher_error_4009".to_owned(), 1)].into(), "{}", context());
    let details = &result["counters"]["protocol_error_details"]["pusher_error_4009"];
    assert_eq!(details, "You got disconnected by the app. (code 4009)", "{}", context());
}

/// A wrong app secret signs every private subscription wrongly: the server refuses each
/// (`pusher:error` 4009); an app key the server does not have is named as such. Both exit 3.
#[test]
fn a_wrong_secret_and_an_unknown_app_key_are_counted_by_their_cause() {
    let Some(server) = or_skip(start_sockudo()) else { return };
    let url = server.url("");
    let shape = ["--subscribers", "20", "--topics", "2", "--publishers", "2", "--rate", "20/s"];
    let load =
        ["--protocol", "pusher", "--app-secret", "not-the-secret", "--warmup", "0s", "--duration", "2s"];
    let args = [&["pubsub", url.as_str()], &shape[..], &load].concat();
    let (finished, result) = run("pusher-wrong-secret", &args, Duration::from_secs(120));
    finished.assert_completed_with_failures();
    assert_eq!(uint(&result, "/pubsub/subscribed"), 0, "{}", summary_of(&result));
    let refused = errors(&result).get("pusher_error_4009").copied().unwrap_or(0);
    assert!(refused >= 20, "every subscriber refused by code 4009 (publishers too): {}", summary_of(&result));
    let detail = &result["counters"]["protocol_error_details"]["pusher_error_4009"];
    assert!(detail.as_str().unwrap_or_default().contains("Authentication error"), "{detail}");

    let (finished, result) = echo("pusher-unknown-key", &url, "10", &["--app-key", "no-such-app"]);
    finished.assert_completed_with_failures();
    assert_eq!(uint(&result, "/summary/connections/established"), 0, "{}", summary_of(&result));
    assert_eq!(errors(&result).get("pusher_not_established"), Some(&10), "{}", summary_of(&result));
}

/// Publishes `{"seq":N,"ts":UNIX_MS}` as event `tick` on channel `feed` through the HTTP
/// events API every 10 ms until dropped.
struct ApiPublisher {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl ApiPublisher {
    fn start(port: u16) -> ApiPublisher {
        let stop = Arc::new(AtomicBool::new(false));
        let running = stop.clone();
        let thread = thread::spawn(move || {
            let start = Instant::now();
            let path = format!("/apps/{SOCKUDO_APP_ID}/events");
            for seq in 0u32.. {
                if running.load(Ordering::SeqCst) {
                    return;
                }
                if let Some(wait) =
                    (start + Duration::from_millis(10) * seq).checked_duration_since(Instant::now())
                {
                    thread::sleep(wait);
                }
                let ts = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| since.as_millis());
                let data = serde_json::to_string(&format!(r#"{{"seq":{seq},"ts":{ts}}}"#)).unwrap();
                let body = format!(r#"{{"name":"tick","channel":"feed","data":{data}}}"#);
                let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| since.as_secs());
                let query =
                    api_query("POST", &path, body.as_bytes(), SOCKUDO_APP_KEY, SOCKUDO_APP_SECRET, now);
                let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else { return };
                let request = format!(
                    "POST {path}?{query} HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
                     Content-Length: {}\r\n\r\n{body}",
                    body.len()
                );
                let mut response = Vec::new();
                if stream.write_all(request.as_bytes()).is_err() || stream.read_to_end(&mut response).is_err()
                {
                    return;
                }
                let head = String::from_utf8_lossy(&response[..response.len().min(12)]).into_owned();
                assert!(head.ends_with(" 200"), "{}", String::from_utf8_lossy(&response));
            }
        });
        ApiPublisher { stop, thread: Some(thread) }
    }
}

impl Drop for ApiPublisher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[test]
fn every_subscriber_of_a_channel_the_api_publishes_to_gets_every_event_once() {
    let Some(server) = or_skip(start_sockudo()) else { return };
    let _publisher = ApiPublisher::start(server.port());
    let url = server.url("");
    let mut args = vec!["stream", url.as_str(), "--protocol", "pusher", "--subscribe-channel", "feed"];
    args.extend(["--subscribers", "50", "--message-id", "/seq", "--message-time", "/ts"]);
    args.extend([
        "--warmup",
        "1s",
        "--duration",
        "3s",
        "--threshold",
        "missing==0",
        "--threshold",
        "errors==0",
    ]);
    let (finished, result) = run("pusher-stream", &args, Duration::from_secs(90));
    let context = || format!("{}\n{}", finished.describe(), summary_of(&result));
    assert_eq!(finished.code, Some(0), "{}", context());
    assert_eq!(uint(&result, "/stream/joined"), 50, "{}", context());
    let (ids, delivered) = (uint(&result, "/stream/ids"), uint(&result, "/stream/delivered"));
    assert!(ids > 100, "3 measured seconds of an event every 10 ms\n{}", context());
    assert_eq!(delivered, ids * 50, "{}", context());
    for key in ["missing", "duplicated", "silent", "unreadable"] {
        assert_eq!(uint(&result, &format!("/stream/{key}")), 0, "{key}\n{}", context());
    }
}

/// The repository's `servers/sockudo` member on one tokio worker thread and on two, beside
/// the built-in server: `compare --protocol pusher` measures the two and skips the built-in.
#[test]
fn compare_ranks_the_fleet_members_that_speak_pusher() {
    let binary = crate::harness::repo_root().join(".tools/sockudo");
    if !binary.is_file() {
        assert!(!peers_required(), "sockudo is not installed: run scripts/install-test-peers.sh");
        eprintln!("skipped: sockudo is not installed (run scripts/install-test-peers.sh)");
        return;
    }
    let _slot = heavy(1);
    let scratch = scratch("pusher-compare");
    let two = "TOKIO_WORKER_THREADS = \"2\"";
    let variants = [
        Variant { name: "sockudo", from: "", to: "" },
        Variant { name: "sockudo-2-threads", from: "TOKIO_WORKER_THREADS = \"1\"", to: two },
    ];
    let fleet = fleet_of(&scratch, "sockudo", &["start.sh"], &[("sockudo", &binary)], &variants);
    assert_compare_measures(&fleet, &scratch.join("results"), "pusher", &["sockudo", "sockudo-2-threads"]);
}

/// Options Pusher cannot honour are refused before any connection, in one line naming the
/// option and what to give, with exit 2; a secret never appears in an error.
#[test]
fn bad_pusher_options_are_refused_in_one_line_before_the_run() {
    let _slot = heavy(1);
    let url = "ws://127.0.0.1:9/";
    let cases: [(&[&str], &str); 5] = [
        (&["--channel", "room"], "--channel \"room\": give {topic} once"),
        (&["--channel", "private-{topic}"], "is signed with the app's secret: give --app-secret"),
        (&["--app-key", "a/b"], "--app-key \"a/b\": give the app's key"),
        (&["--app-secret", "", "--channel", "public-{topic}"], "--app-secret is empty"),
        (&["--payload", "bytes:16"], "Pusher's protocol is JSON text: leave out --binary"),
    ];
    for (options, expected) in cases {
        let args = [&["run", url, "--protocol", "pusher"][..], options].concat();
        let finished = crate::harness::wsbench(&args, Duration::from_secs(60));
        assert_eq!(finished.code, Some(2), "{}", finished.describe());
        assert!(finished.stderr.contains(expected), "{expected}\n{}", finished.describe());
        assert_eq!(finished.stderr.trim().lines().count(), 1, "{}", finished.describe());
    }
    let finished = crate::harness::wsbench(
        &[
            "run",
            "pubsub",
            url,
            "--protocol",
            "pusher",
            "--client-event",
            "client-x",
            "--app-secret",
            "hunter2",
            "--channel",
            "x",
        ],
        Duration::from_secs(60),
    );
    assert_eq!(finished.code, Some(2), "{}", finished.describe());
    assert!(!finished.stderr.contains("hunter2"), "{}", finished.describe());
}
