//! `--protocol nats` against the real nats-server (its WebSocket listener, the NATS text
//! protocol), each test on a server of its own started on free ports: a thousand
//! connections make requests answered through the broker by the run's own responders with
//! no error; requests and replies the server cuts into 4 KiB messages (as for a browser) are
//! put back together; a thousand subscribers get every publish once; a subscriber the server kicks
//! mid-run (its system account's KICK request, the connection found by its name in the
//! monitoring endpoint's `/connz`) is the one subscriber found short, by exactly what it
//! missed; the right user and password or token open every connection and a wrong one is
//! the server's "Authorization Violation", by name; an application's own responder answers
//! `--external-responder` requests, and a subject nobody serves is `nats_no_responders`;
//! `compare --protocol nats` ranks the fleet's NATS members.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use wsbench::protocol::nats::connection_name;
use wsbench_appproto::nats::{Decoder, ServerOp, encode_pub, encode_sub};
use wsbench_testpeers::{or_skip, start_nats_configured};

use crate::harness::{
    Finished, Wsbench, arg, errors, heavy, read_result, scratch, summary_of, uint, wsbench,
};
use crate::run;

/// A thousand connections, each a requester and a responder, with `--threshold errors==0`.
#[test]
fn a_thousand_connections_make_requests_answered_through_the_broker_with_no_error() {
    let Some(broker) = or_skip(start_nats_configured("")) else { return };
    let load = ["--protocol", "nats", "--connections", "1000", "--warmup", "1s", "--duration", "4s"];
    let checks = ["--threshold", "errors==0", "--connect-timeout", "20s"];
    let url = broker.url("/");
    let (finished, result) =
        run("nats-echo", &[&[url.as_str()], &load[..], &checks].concat(), Duration::from_secs(120));
    finished.assert_success();
    assert_eq!(uint(&result, "/summary/connections/established"), 1000, "{}", summary_of(&result));
    // Every connection echoed in the measured window (not a rate: a busy machine is slower).
    assert_eq!(uint(&result, "/counters/connections_in_window"), 1000, "{}", summary_of(&result));
    assert_eq!(uint(&result, "/counters/payload_mismatches"), 0, "{}", summary_of(&result));
    assert_eq!(result["config"]["protocol"], "nats");
}

/// Every one of the thousand subscribers got each measured publish of its topic once: 10
/// topics, one publisher each, so each topic's publishes reach 100 subscribers.
#[test]
fn a_thousand_subscribers_get_every_publish_once_on_subjects_of_the_users_naming() {
    let Some(broker) = or_skip(start_nats_configured("")) else { return };
    let shape = ["--subscribers", "1000", "--topics", "10", "--publishers", "10", "--rate", "100/s"];
    let load = ["--protocol", "nats", "--warmup", "1s", "--duration", "3s", "--connect-timeout", "30s"];
    let subject = ["--subject", "orders.{topic}.new", "--threshold", "errors==0"];
    let url = broker.url("/");
    let args = [&["pubsub", url.as_str()][..], &shape, &load, &subject].concat();
    let (finished, result) = run("nats-pubsub", &args, Duration::from_secs(180));
    let context = || format!("{}\n{}", result["pubsub"], finished.describe());
    crate::assert_a_thousand_subscribers_got_every_publish_once(&finished, &result);
    assert_eq!(result["pubsub"]["cut_off"], false, "{}", context());
    assert_eq!(result["config"]["protocol_options"]["subject"], "orders.{topic}.new");
}

/// nats-server cuts what it sends a browser (a `User-Agent` with `Mozilla`) into WebSocket
/// messages of at most 4 KiB: each 20,000-byte request and reply reaches its connection as
/// several messages, and is put back together into one MSG, matched and checked.
#[test]
fn operations_the_server_cuts_over_websocket_messages_are_put_back_together() {
    let Some(broker) = or_skip(start_nats_configured("")) else { return };
    let load = ["--protocol", "nats", "--connections", "10", "--warmup", "0s", "--duration", "2s"];
    let browser = ["--payload", "bytes:20000", "--header", "User-Agent: Mozilla/5.0 (X11; Linux x86_64)"];
    let url = broker.url("/");
    let args = [&[url.as_str()], &load[..], &browser, &["--threshold", "errors==0"]].concat();
    let (finished, result) = run("nats-cut-messages", &args, Duration::from_secs(120));
    finished.assert_success();
    let round_trips = uint(&result, "/summary/latency_us/count");
    assert!(round_trips > 10, "{}", summary_of(&result));
    // A round trip is a request delivered to a responder and its reply delivered back.
    let received = uint(&result, "/summary/messages/received");
    assert!(received > 4 * 2 * round_trips, "{received} messages for {round_trips} round trips: not cut");
    assert_eq!(uint(&result, "/counters/payload_mismatches"), 0, "{}", summary_of(&result));
}

/// A plain NATS client over the server's TCP listener: the test's own hand on the broker.
struct TcpClient {
    stream: TcpStream,
    input: Vec<u8>,
}

/// What the test's client read.
#[derive(Debug)]
enum Reading {
    /// A message: its payload, and its reply subject when it is a request.
    Msg(Vec<u8>, Option<String>),
    Pong,
    Other,
}

impl TcpClient {
    /// Connects as `user` and waits for the PONG that says CONNECT was taken.
    fn connect(port: u16, user: &str, pass: &str) -> TcpClient {
        let stream = TcpStream::connect(("127.0.0.1", port)).expect("nats-server's client listener");
        let mut client = TcpClient { stream, input: Vec::new() };
        let connect = json!({"verbose": false, "pedantic": false, "user": user, "pass": pass});
        client.send(format!("CONNECT {connect}\r\nPING\r\n").as_bytes());
        loop {
            match client.next(Duration::from_secs(30)) {
                Some(Reading::Pong) => return client,
                Some(_) => {}
                None => panic!("no PONG after CONNECT as {user}"),
            }
        }
    }

    fn send(&mut self, wire: &[u8]) {
        self.stream.write_all(wire).expect("write to nats-server");
    }

    /// The next operation, or None when nothing came within `wait`.
    fn next(&mut self, wait: Duration) -> Option<Reading> {
        self.stream.set_read_timeout(Some(wait)).expect("read timeout");
        loop {
            if let Some((op, used)) = Decoder::default().decode(&self.input).expect("NATS from nats-server") {
                let reading = match op {
                    ServerOp::Msg(msg) => Reading::Msg(msg.payload.to_vec(), msg.reply_to.map(str::to_owned)),
                    ServerOp::Pong => Reading::Pong,
                    ServerOp::Err(words) => panic!("nats-server: -ERR {words}"),
                    _ => Reading::Other,
                };
                self.input.drain(..used);
                return Some(reading);
            }
            let mut chunk = [0u8; 16 * 1024];
            match self.stream.read(&mut chunk) {
                Ok(0) => panic!("nats-server closed the test's connection"),
                Ok(n) => self.input.extend_from_slice(&chunk[..n]),
                Err(error) if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return None;
                }
                Err(error) => panic!("reading from nats-server: {error}"),
            }
        }
    }

    /// A request's reply: subscribes to an inbox, publishes `payload` to `subject` with it
    /// as the reply subject, and returns the first message on it.
    fn request(&mut self, subject: &str, payload: &[u8]) -> Vec<u8> {
        let mut wire = Vec::new();
        encode_sub(&mut wire, "_INBOX.test.reply.1", None, 99);
        encode_pub(&mut wire, subject, Some(("_INBOX.test.reply.", 1)), payload);
        self.send(&wire);
        loop {
            match self.next(Duration::from_secs(30)) {
                Some(Reading::Msg(reply, _)) => return reply,
                Some(_) => {}
                None => panic!("no reply to {subject}"),
            }
        }
    }
}

/// A publish due inside the run's measured window (wsbench says so in its fields).
fn measured(payload: &[u8]) -> bool {
    payload.windows(b"\"measured\":true".len()).any(|window| window == b"\"measured\":true")
}

/// An HTTP GET of `path` from the monitoring port, its body as JSON.
fn monitor(port: u16, path: &str) -> Value {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("nats-server's monitoring port");
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").expect("write the request");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read the response");
    let body = response.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    serde_json::from_str(body).unwrap_or_else(|error| panic!("{path}: {error}: {response}"))
}

/// Users of an application account (the run's) and of the system account (the test's, to
/// kick a connection with).
const ACCOUNTS: &str = "accounts {\n  SYS { users: [ {user: admin, password: admin-pass} ] }\n  \
                        APP { users: [ {user: app, password: app-pass} ] }\n}\nsystem_account: SYS\n";

/// Mid-run, the test finds subscriber 7 (its CONNECT name, `wsbench-<run id>-7`, in
/// `/connz`) and asks the server through its system account to kick it: the server closes
/// that connection. Subscriber 7 is then the one short subscriber, short by exactly what it
/// did not receive; the test's own subscriber to the same subject counted every measured
/// publish the run says was expected.
#[test]
fn a_subscriber_the_server_kicks_mid_run_is_the_only_one_short_by_what_it_missed() {
    let Some(broker) = or_skip(start_nats_configured(ACCOUNTS)) else { return };
    let client = broker.port_of("client").expect("client port");
    let monitor_port = broker.port_of("monitor").expect("monitoring port");
    let _slot = heavy(1);
    let run_id = format!("kick-{}", std::process::id());
    let json = scratch("nats-kick").join("r.json");
    let url = broker.url("/");
    // Subscriber 7 listens to topic 7 mod 3 = 1: subject room.1.
    let mut observer = TcpClient::connect(client, "app", "app-pass");
    let mut wire = Vec::new();
    encode_sub(&mut wire, "room.1", None, 1);
    observer.send(&wire);
    let shape = ["--subscribers", "30", "--topics", "3", "--publishers", "3", "--rate", "150/s"];
    let load = ["--protocol", "nats", "--subject", "room.{topic}", "--user", "app", "--pass", "app-pass"];
    let outputs =
        ["--run-id", &run_id, "--warmup", "1s", "--duration", "4s", "--json", arg(&json), "--quiet"];
    let wsbench = Wsbench::spawn(&[&["run", "pubsub", &url], &shape[..], &load, &outputs].concat());
    // Mid-run: the observer has seen 20 of room.1's measured publishes (50 a second for 4 s).
    let mut seen = 0u64;
    while seen < 20 {
        match observer.next(Duration::from_secs(60)) {
            Some(Reading::Msg(payload, _)) => seen += u64::from(measured(&payload)),
            Some(_) => {}
            None => panic!("no publish on room.1 within a minute; {seen} measured so far"),
        }
    }
    let connz = monitor(monitor_port, "/connz?limit=1000");
    let name = connection_name(&run_id, 7);
    let cid = connz["connections"]
        .as_array()
        .and_then(|all| all.iter().find(|conn| conn["name"] == name.as_str()))
        .and_then(|conn| conn["cid"].as_u64())
        .unwrap_or_else(|| panic!("{name} is not in /connz: {connz}"));
    let server_id = monitor(monitor_port, "/varz")["server_id"].as_str().expect("server_id").to_owned();
    let mut admin = TcpClient::connect(client, "admin", "admin-pass");
    let reply = admin
        .request(&format!("$SYS.REQ.SERVER.{server_id}.KICK"), json!({ "cid": cid }).to_string().as_bytes());
    let reply: Value = serde_json::from_slice(&reply).expect("KICK's reply is JSON");
    assert!(reply.get("error").is_none(), "KICK refused: {reply}");

    let done = Arc::new(AtomicBool::new(false));
    let counting = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            // Until the run has ended and nothing more is on its way.
            loop {
                match observer.next(Duration::from_millis(200)) {
                    Some(Reading::Msg(payload, _)) => seen += u64::from(measured(&payload)),
                    Some(_) => {}
                    None if done.load(Ordering::Relaxed) => return seen,
                    None => {}
                }
            }
        })
    };
    let finished = wsbench.finish(Duration::from_secs(120));
    done.store(true, Ordering::Relaxed);
    let observed = counting.join().expect("the test's subscriber");
    let result = read_result(&json);
    let context = || format!("observed {observed}\n{}\n{}", result["pubsub"], finished.describe());
    finished.assert_completed_with_failures();

    let expected = uint(&result, "/counters/pubsub/published/1");
    let received = uint(&result, "/counters/pubsub/received/7/1");
    let lost = uint(&result, "/pubsub/lost");
    assert_eq!(observed, expected, "the test's subscriber saw every measured publish\n{}", context());
    assert!(received > 0, "subscriber 7 had deliveries before it was kicked\n{}", context());
    assert!(received < expected, "subscriber 7 missed what came after the kick\n{}", context());
    assert_eq!(lost, expected - received, "lost is what subscriber 7 missed\n{}", context());
    assert_eq!(
        result["pubsub"]["short_subscribers"],
        json!([{ "connection": 7, "topic": 1, "expected": expected, "received": received }]),
        "no other subscriber is short\n{}",
        context()
    );
    for key in ["duplicated", "unexpected", "subscribe_failures"] {
        assert_eq!(uint(&result, &format!("/pubsub/{key}")), 0, "{key}\n{}", context());
    }
    assert_eq!(uint(&result, "/summary/disconnections"), 1, "{}", context());
    let mut errors = errors(&result);
    assert_eq!(errors.remove("pubsub_lost"), Some(lost), "{}", context());
    // nats-server closes a kicked WebSocket with 1011 and the reason "Kicked".
    assert_eq!(errors, [("closed_1011".to_owned(), 1)].into(), "{}", context());
}

/// `--external-responder`: the test's own client answers requests on `svc.time` with a
/// payload of its own, as an application's service would; every request is answered and
/// none is checked against what was sent. Requests to a subject nobody serves come back as
/// NATS's no-responders status, each an error by that cause and no round trip.
#[test]
fn an_applications_responder_answers_the_requests_and_a_subject_nobody_serves_is_no_responders() {
    let Some(broker) = or_skip(start_nats_configured("")) else { return };
    let mut service = TcpClient::connect(broker.port_of("client").expect("client port"), "", "");
    let mut wire = Vec::new();
    encode_sub(&mut wire, "svc.time", Some("service"), 1);
    wire.extend_from_slice(b"PING\r\n");
    service.send(&wire);
    while !matches!(service.next(Duration::from_secs(30)), Some(Reading::Pong)) {}
    let done = Arc::new(AtomicBool::new(false));
    let answering = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let mut answered = 0u64;
            while !done.load(Ordering::Relaxed) {
                if let Some(Reading::Msg(_, Some(reply_to))) = service.next(Duration::from_millis(200)) {
                    let mut wire = Vec::new();
                    encode_pub(&mut wire, &reply_to, None, b"{\"time\":\"now\"}");
                    service.send(&wire);
                    answered += 1;
                }
            }
            answered
        })
    };
    let url = broker.url("/");
    let load = ["--protocol", "nats", "--external-responder", "--connections", "10", "--warmup", "0s"];
    let served = ["--request-subject", "svc.time", "--duration", "1s", "--threshold", "errors==0"];
    let (finished, result) =
        run("nats-external", &[&[url.as_str()], &load[..], &served].concat(), Duration::from_secs(60));
    done.store(true, Ordering::Relaxed);
    let answered = answering.join().expect("the test's service");
    finished.assert_success();
    let round_trips = uint(&result, "/summary/latency_us/count");
    assert!(round_trips > 10 && answered >= round_trips, "{answered} answered\n{}", summary_of(&result));
    assert_eq!(uint(&result, "/counters/payload_mismatches"), 0, "{}", summary_of(&result));

    let unserved = ["--request-subject", "svc.nobody", "--duration", "1s"];
    let (finished, result) =
        run("nats-no-responders", &[&[url.as_str()], &load[..], &unserved].concat(), Duration::from_secs(60));
    finished.assert_completed_with_failures();
    assert_eq!(uint(&result, "/summary/latency_us/count"), 0, "{}", summary_of(&result));
    let errors = errors(&result);
    assert!(errors.get("nats_no_responders").is_some_and(|&n| n >= 10), "{}", summary_of(&result));
    assert_eq!(errors.len(), 1, "no responders alone: {errors:?}");
}

/// A run of 10 echo connections against `url` with `credentials`.
fn authenticated(test: &str, url: &str, credentials: &[&str]) -> (Finished, Value) {
    let load = ["--protocol", "nats", "--connections", "10", "--warmup", "0s", "--duration", "1s"];
    run(test, &[&[url], &load[..], credentials].concat(), Duration::from_secs(60))
}

#[test]
fn the_right_user_and_password_open_every_connection_and_a_wrong_password_is_the_authorization_violation() {
    let config = "authorization { user: wsbench, password: \"right-pass\" }";
    let Some(broker) = or_skip(start_nats_configured(config)) else { return };
    let url = broker.url("/");
    let right = ["--user", "wsbench", "--pass", "right-pass", "--threshold", "errors==0"];
    let (finished, result) = authenticated("nats-auth-right", &url, &right);
    finished.assert_success();
    assert_eq!(uint(&result, "/summary/connections/established"), 10, "{}", summary_of(&result));

    let (finished, result) =
        authenticated("nats-auth-wrong", &url, &["--user", "wsbench", "--pass", "wrong"]);
    assert_eq!(finished.code, Some(3), "{}", finished.describe());
    assert_eq!(uint(&result, "/summary/connections/established"), 0, "{}", summary_of(&result));
    assert_eq!(
        errors(&result),
        [("nats_err_authorization_violation".to_owned(), 10)].into(),
        "{}",
        summary_of(&result)
    );
    let details = &result["counters"]["protocol_error_details"];
    assert_eq!(details["nats_err_authorization_violation"], "Authorization Violation");
    let line = finished.stdout.lines().find(|line| line.starts_with("errors:")).unwrap_or_default();
    assert!(line.contains("nats_err_authorization_violation"), "{line}");
}

#[test]
fn the_right_token_opens_every_connection_and_none_is_the_authorization_violation() {
    let Some(broker) = or_skip(start_nats_configured("authorization { token: \"s3cret-token\" }")) else {
        return;
    };
    let url = broker.url("/");
    let right = ["--auth-token", "s3cret-token", "--threshold", "errors==0"];
    let (finished, result) = authenticated("nats-token-right", &url, &right);
    finished.assert_success();
    assert_eq!(uint(&result, "/summary/connections/established"), 10, "{}", summary_of(&result));
    let (finished, result) = authenticated("nats-token-none", &url, &[]);
    finished.assert_completed_with_failures();
    assert_eq!(errors(&result), [("nats_err_authorization_violation".to_owned(), 10)].into());
}

/// A fleet of the shipped `servers/nats` manifest and a copy of it with two Go threads
/// (`GOMAXPROCS=2`), both running the nats-server of `.tools/`, and the built-in server:
/// `compare --protocol nats` measures the two NATS members side by side in its table and skips the
/// built-in server, which does not speak NATS.
#[test]
fn compare_ranks_the_fleet_members_that_speak_nats() {
    let root = crate::harness::repo_root();
    let binary = root.join(".tools/nats-server");
    if !binary.is_file() {
        let _ = or_skip(start_nats_configured(""));
        return;
    }
    let dir = scratch("nats-compare");
    let manifest = std::fs::read_to_string(root.join("servers/nats/server.toml")).expect("servers/nats");
    for (name, threads) in [("nats", "1"), ("nats-2", "2")] {
        let member = dir.join("fleet").join(name);
        std::fs::create_dir_all(&member).unwrap();
        std::fs::copy(root.join("servers/nats/start.sh"), member.join("start.sh")).unwrap();
        let _ = std::fs::remove_file(member.join("nats-server"));
        std::os::unix::fs::symlink(&binary, member.join("nats-server")).unwrap();
        let text = manifest
            .replace("name = \"nats\"", &format!("name = \"{name}\""))
            .replace("GOMAXPROCS = \"1\"", &format!("GOMAXPROCS = \"{threads}\""))
            .replace("threads = 1", &format!("threads = {threads}"));
        std::fs::write(member.join("server.toml"), text).unwrap();
    }
    assert_ranked(&dir.join("fleet"), &dir.join("results"));
}

fn assert_ranked(fleet: &Path, out: &Path) {
    let _slot = heavy(1);
    let load = "--protocol nats --connections 20 --warmup 0s --duration 1s";
    let mut args =
        vec!["compare", "--servers", "builtin,nats,nats-2", "--fleet-dir", arg(fleet), "--out", arg(out)];
    args.extend(load.split_whitespace());
    let finished = wsbench(&args, Duration::from_secs(180));
    finished.assert_success();
    let stdout = &finished.stdout;
    let row = |server: &str| {
        stdout
            .lines()
            .find(|line| line.starts_with(&format!("{server} ")))
            .unwrap_or_else(|| panic!("{stdout}"))
    };
    assert!(row("builtin").contains("skipped: does not speak --protocol nats"), "{stdout}");
    for server in ["nats", "nats-2"] {
        assert!(row(server).contains("20/20"), "{}", row(server));
        let result = read_result(&out.join(format!("{server}-1.json")));
        assert_eq!(result["config"]["protocol"], "nats", "{stdout}");
        assert!(result["summary"]["errors"].as_object().is_some_and(|e| e.is_empty()), "{stdout}");
        assert!(uint(&result, "/summary/latency_us/count") > 20, "{stdout}");
        let rate = result["summary"]["echoes_per_sec"].as_f64().unwrap_or(0.0);
        assert!(rate > 0.0, "{server}: {rate} round trips/s\n{stdout}");
    }
}
