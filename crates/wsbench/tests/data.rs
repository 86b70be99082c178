//! `run --data users.csv` end to end: a server that admits each user only with its own
//! token (headers and URL query checked per connection) admits every connection of a run
//! whose rows are right, each user once, and refuses a run whose file holds a wrong token;
//! a flow's sends, patterns and checks take each connection's row; a protocol's template
//! whose row makes a topic the protocol refuses is a usage error naming the row; a
//! placeholder naming a column the file lacks is a usage error naming it; a row whose value
//! would end a header (CR, LF, NUL) is refused with exit 2 before anything reaches the wire,
//! which a listener of the test's own, capturing every byte, shows.

mod support;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use support::raw_server::RawServer;
use support::user_check_server::UserCheckServer;
use support::{fresh_dir, refused, run_with_timeout, wsbench_bin};

const USERS: [(&str, &str); 4] = [("alice", "t-a1"), ("bob", "t,b2"), ("carol", "t\"c3"), ("dave", "t-d4")];

fn server() -> UserCheckServer {
    UserCheckServer::start(
        USERS.iter().map(|(u, t)| (u.to_string(), t.to_string())).collect::<BTreeMap<_, _>>(),
    )
}

/// `users.csv` with the users' tokens, `wrong` of them replaced; quoted as CSV needs.
fn users_csv(dir: &std::path::Path, name: &str, wrong: usize) -> std::path::PathBuf {
    let mut text = String::from("user,token\r\n");
    for (i, (user, token)) in USERS.iter().enumerate() {
        let token = if i < wrong { "stolen".to_owned() } else { token.to_string() };
        text.push_str(&format!("{user},\"{}\"\r\n", token.replace('"', "\"\"")));
    }
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn held_run(server: &UserCheckServer, data: &std::path::Path, dir: &std::path::Path) -> (Option<i32>, Value) {
    let json = dir.join("r.json");
    let finished = run_with_timeout(
        Command::new(wsbench_bin())
            .args(["run", &server.url(), "--scenario", "scalability", "--connections", "8", "--hold", "1s"])
            .args(["--header", "X-User: {data.user}", "--header", "Authorization: Bearer {data.token}"])
            .arg("--data")
            .arg(data)
            .arg("--json")
            .arg(&json)
            .arg("--quiet"),
        Duration::from_secs(60),
    );
    let result = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    (finished.status.and_then(|s| s.code()), result)
}

#[test]
fn each_connection_brings_its_own_row_and_a_wrong_file_is_refused() {
    let dir = fresh_dir("data");
    let good = server();
    let (code, result) = held_run(&good, &users_csv(&dir, "users.csv", 0), &dir);
    assert_eq!(code, Some(0), "{}", result["summary"]);
    assert_eq!(result["counters"]["connections_established"], 8, "{}", result["counters"]);
    let mut admitted = good.admitted();
    admitted.sort();
    assert_eq!(
        admitted,
        ["alice", "alice", "bob", "bob", "carol", "carol", "dave", "dave"],
        "row i mod 4 for connection i"
    );
    assert_eq!(result["config"]["handshake"]["data"], dir.join("users.csv").display().to_string());

    let strict = server();
    let (code, result) = held_run(&strict, &users_csv(&dir, "stolen.csv", 1), &dir);
    assert_ne!(code, Some(0), "a wrong token fails the run");
    assert_eq!(
        result["counters"]["connections_established"], 6,
        "alice's two connections refused: {}",
        result["counters"]
    );
    assert!(!strict.admitted().contains(&"alice".to_owned()));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_missing_column_or_file_is_a_usage_error_naming_it() {
    let dir = fresh_dir("data-usage");
    let csv = users_csv(&dir, "users.csv", 0);
    let csv = csv.to_str().unwrap();
    refused(
        &["run", "ws://127.0.0.1:9/", "--data", csv, "--header", "X-Name: {data.name}"],
        2,
        "has no column `name` (its columns: user, token)",
    );
    refused(&["run", "ws://127.0.0.1:9/?u={data.login}", "--data", csv], 2, "--target: `{data.login}`");
    refused(&["run", "ws://127.0.0.1:9/", "--header", "X-User: {data.user}"], 2, "needs --data FILE.csv");
    refused(
        &["run", "ws://127.0.0.1:9/", "--data", "/nonexistent/users.csv"],
        2,
        "--data: /nonexistent/users.csv",
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// A flow's sends carry the connection's row: the built-in echo server sends it back, and a
/// pattern that only the rows' users match finds every echo; one naming a user the file
/// lacks finds none.
#[test]
fn a_flows_sends_carry_each_connections_row() {
    let dir = fresh_dir("data-flow");
    let csv = users_csv(&dir, "users.csv", 0);
    let flow = |pattern: &str| {
        let path = dir.join(format!("{pattern}.toml").replace('|', "-"));
        std::fs::write(
            &path,
            format!(
                "scenario = \"flow\"\nconnections = 4\nduration = \"2s\"\n\n[[flow.steps]]\nrepeat = \"until-end\"\n\
                 steps = [\n  {{ send = '{{\"id\":\"{{conn}}-{{seq}}\",\"user\":\"{{data.user}}\"}}' }},\n  \
                 {{ expect-regex = '\"user\":\"({pattern})\"', timeout = \"2s\" }},\n  {{ sleep = \"50ms\" }},\n]\n"
            ),
        )
        .unwrap();
        run_flow_file(&path, &csv)
    };
    let (code, result) = flow("alice|bob|carol|dave");
    assert_eq!(code, Some(0), "{}", result["summary"]);
    assert!(result["summary"]["errors"].as_object().unwrap().is_empty(), "{}", result["summary"]);
    assert!(result["counters"]["messages_received"].as_u64() > Some(0));
    let (code, result) = flow("erin");
    assert_ne!(code, Some(0));
    assert!(result["summary"]["errors"]["flow_unmatched"].as_u64() > Some(0), "{}", result["summary"]);
    std::fs::remove_dir_all(dir).unwrap();
}

/// A flow's `check-json` and `check-regex` are filled with each connection's own row: echoes
/// of sends carrying the row pass them all; sends all carrying alice's name pass only on
/// alice's connection, every other connection's replies counted as mismatched.
#[test]
fn a_flows_checks_hold_each_reply_to_its_connections_row() {
    let dir = fresh_dir("data-checks");
    let csv = users_csv(&dir, "users.csv", 0);
    let flow = |name: &str, sent_user: &str| {
        let path = dir.join(format!("{name}.toml"));
        std::fs::write(
            &path,
            format!(
                "scenario = \"flow\"\nconnections = 4\nduration = \"2s\"\n\n[[flow.steps]]\nrepeat = \"until-end\"\n\
                 steps = [\n  {{ name = \"hi\", send = '{{\"id\":\"{{conn}}-{{seq}}\",\"user\":\"{sent_user}\"}}' }},\n  \
                 {{ expect = \"hi\", match-field = \"id\", timeout = \"2s\", check-json = {{ \"/user\" = \"{{data.user}}\" }}, \
                 check-regex = '\"user\":\"{{data.user}}\"' }},\n  {{ sleep = \"50ms\" }},\n]\n"
            ),
        )
        .unwrap();
        run_flow_file(&path, &csv)
    };
    let (code, result) = flow("own", "{data.user}");
    assert_eq!(code, Some(0), "{}", result["summary"]);
    assert!(result["summary"]["errors"].as_object().unwrap().is_empty(), "{}", result["summary"]);
    assert!(result["summary"]["latency_us"]["count"].as_u64() > Some(0), "{}", result["summary"]);
    let (code, result) = flow("alices", "alice");
    assert_ne!(code, Some(0));
    let errors = &result["summary"]["errors"];
    assert!(errors["flow_mismatch"].as_u64() > Some(0), "bob's, carol's and dave's replies: {errors}");
    assert!(
        result["summary"]["latency_us"]["count"].as_u64() > Some(0),
        "alice's pass: {}",
        result["summary"]
    );
    let unknown = dir.join("unknown.toml");
    std::fs::write(
        &unknown,
        "scenario = \"flow\"\n[[flow.steps]]\nsend = \"hi\"\n[[flow.steps]]\nexpect-regex = 'hi {data.floor}'\n",
    )
    .unwrap();
    let args = [
        "run",
        "ws://127.0.0.1:9/",
        "--scenario",
        unknown.to_str().unwrap(),
        "--data",
        csv.to_str().unwrap(),
    ];
    refused(&args, 2, "has no column `floor`");
    std::fs::remove_dir_all(dir).unwrap();
}

/// A protocol's templates take `{data.NAME}` as the handshake's do: a column the file lacks
/// is named (a secret's template too), a placeholder without `--data` is refused, and a row
/// whose value would make a topic MQTT refuses (a wildcard, a control character), a STOMP
/// header or a NATS subject that a line break would end, is named by its row, its column and
/// the option it fills before anything connects.
#[test]
fn a_protocols_templates_are_checked_against_every_row_before_load() {
    let dir = fresh_dir("data-protocol");
    let rooms = dir.join("rooms.csv");
    std::fs::write(&rooms, "room\nlobby\nsport/+\n").unwrap();
    let rooms = rooms.to_str().unwrap();
    let mqtt = ["run", "pubsub", "ws://127.0.0.1:9/", "--protocol", "mqtt", "--topic"];
    refused(
        &[&mqtt[..], &["r/{data.floor}/{topic}", "--data", rooms]].concat(),
        2,
        "--topic: `{data.floor}`",
    );
    refused(&[&mqtt[..], &["r/{data.room}/{topic}"]].concat(), 2, "--topic: `{data.NAME}` needs --data");
    refused(
        &[&mqtt[..], &["r/{data.room}/{topic}", "--data", rooms]].concat(),
        2,
        &format!(
            "--data: {rooms}: row 3, column room fills --topic, which the mqtt protocol refuses: --topic"
        ),
    );
    let stomp = ["run", "pubsub", "ws://127.0.0.1:9/", "--protocol", "stomp", "--destination"];
    refused(
        &[&stomp[..], &["/topic/{data.floor}.{topic}", "--data", rooms]].concat(),
        2,
        "has no column `floor`",
    );
    // A line break or NUL would end a STOMP header or frame, and MQTT carries no control
    // character in a topic: each row is named with its line, the column and the option.
    let framed = dir.join("framed.csv");
    std::fs::write(&framed, "room\nlobby\n\"two\nlines\"\n\"a\rb\"\nnul\u{0}room\n").unwrap();
    let framed = framed.to_str().unwrap();
    refused(
        &[&mqtt[..], &["r/{data.room}/{topic}", "--data", framed]].concat(),
        2,
        "row 3, column room fills --topic, which the mqtt protocol refuses",
    );
    refused(
        &[&stomp[..], &["/topic/{data.room}.{topic}", "--data", framed]].concat(),
        2,
        "row 3, column room fills --destination, which the stomp protocol refuses: --destination holds a line break or NUL",
    );
    let nats = ["run", "pubsub", "ws://127.0.0.1:9/", "--protocol", "nats", "--subject"];
    refused(
        &[&nats[..], &["rooms.{data.room}.{topic}", "--data", framed]].concat(),
        2,
        "row 3, column room fills --subject, which the nats protocol refuses",
    );
    // A secret's template is checked as the others are (its value never shown).
    let socketio = ["run", "ws://127.0.0.1:9/", "--protocol", "socketio", "--auth"];
    refused(
        &[&socketio[..], &[r#"{"token":"{data.nope}"}"#, "--data", framed]].concat(),
        2,
        "--auth: `{data.nope}`",
    );
    let later = dir.join("later.csv");
    std::fs::write(&later, "room,note\nlobby,\"two\nlines\"\nhall,x\n\"a\rb\",y\n").unwrap();
    let later = later.to_str().unwrap();
    let mqtt_alone = refused(
        &[&mqtt[..], &["r/{data.room}/{topic}", "--data", later]].concat(),
        2,
        "row 4 (line 5), column room fills --topic",
    );
    assert!(
        mqtt_alone.contains("\\r") && !mqtt_alone.contains('\r'),
        "a control character shown escaped: {mqtt_alone}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// A listener on port 0 that keeps every byte each connection sends before its request's
/// blank line (at most 64 KiB), then refuses it with 403: what reached the wire.
fn capturing_server() -> (RawServer, Arc<Mutex<Vec<Vec<u8>>>>) {
    let captured = Arc::new(Mutex::new(Vec::new()));
    let kept = captured.clone();
    let server = RawServer::start(move |mut stream, _| {
        let mut head = Vec::new();
        let mut chunk = [0u8; 4096];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 64 * 1024 {
            match stream.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => head.extend_from_slice(&chunk[..n]),
            }
        }
        kept.lock().unwrap_or_else(|e| e.into_inner()).push(head);
        let _ = stream.write_all(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    });
    (server, captured)
}

/// A CSV value holding CR LF, LF or NUL in a column a header names is refused with exit 2
/// naming the file, the row, the column and the header, and no request reaches the wire
/// (before, `X-User: al` and `X-Injected: yes` went out as two headers). The same file with
/// clean values does reach the listener, so the listener would have seen an injection; the
/// URL's query carries a CR LF percent-encoded (it cannot end the request line).
#[test]
fn a_row_that_would_end_a_header_is_refused_before_anything_reaches_the_wire() {
    let dir = fresh_dir("data-injection");
    let (server, captured) = capturing_server();
    let url = format!("ws://{}/feed", server.addr());
    let cases: [(&str, &str, &str); 3] = [
        (
            "crlf.csv",
            "user,token\r\nalice,t1\r\n\"al\r\nX-Injected: yes\",t2\r\n",
            "row 3, column user holds a carriage return (CR), which would end the X-User header",
        ),
        (
            "lf.csv",
            "user,token\n\"bob\nX-Injected: yes\",t1\n",
            "row 2, column user holds a line feed (LF), which would end the X-User header",
        ),
        (
            "nul.csv",
            "user,token\nal\u{0}ice,t1\n",
            "row 2, column user holds a NUL, which the X-User header cannot carry",
        ),
    ];
    for (name, text, expected) in cases {
        let csv = dir.join(name);
        std::fs::write(&csv, text).unwrap();
        let csv = csv.to_str().unwrap().to_owned();
        let args = ["run", &url, "--connections", "2", "--duration", "1s", "--header", "X-User: {data.user}"];
        let line = refused(&[&args[..], &["--data", &csv]].concat(), 2, expected);
        assert!(line.contains(&format!("--data: {csv}: ")), "the file named: {line}");
    }
    assert_eq!(
        captured.lock().unwrap().len(),
        0,
        "nothing reached the wire: {:?}",
        captured.lock().unwrap().iter().map(|h| String::from_utf8_lossy(h).into_owned()).collect::<Vec<_>>()
    );

    let clean = dir.join("clean.csv");
    std::fs::write(&clean, "user,token\n\"al ice\",t1\n").unwrap();
    let crlf_in_query = dir.join("query.csv");
    std::fs::write(&crlf_in_query, "user,token\n\"al\r\nX-Injected: yes\",t1\n").unwrap();
    for (csv, target) in [(&clean, url.clone()), (&crlf_in_query, format!("{url}?u={{data.user}}"))] {
        let finished = run_with_timeout(
            Command::new(wsbench_bin())
                .args(["run", &target, "--connections", "1", "--duration", "1s", "--quiet"])
                .args(["--header", "X-User: [{data.token}]", "--data"])
                .arg(csv),
            Duration::from_secs(60),
        );
        assert_eq!(
            finished.status.and_then(|s| s.code()),
            Some(3),
            "{}",
            finished.describe("a refused upgrade")
        );
    }
    let heads: Vec<String> =
        captured.lock().unwrap().iter().map(|h| String::from_utf8_lossy(h).into_owned()).collect();
    assert!(heads.len() >= 2, "the clean runs reached the listener: {heads:?}");
    assert!(heads.iter().all(|h| h.contains("\r\nX-User: [t1]\r\n")), "{heads:?}");
    assert!(
        heads.iter().any(|h| h.starts_with("GET /feed?u=al%0D%0AX-Injected%3A%20yes HTTP/1.1\r\n")),
        "the query's value percent-encoded: {heads:?}"
    );
    assert!(heads.iter().all(|h| !h.contains("\nX-Injected")), "{heads:?}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// `wsbench run --scenario FLOW --data CSV`: its exit code and its result file.
fn run_flow_file(path: &std::path::Path, csv: &std::path::Path) -> (Option<i32>, Value) {
    let json = path.with_extension("json");
    let finished = run_with_timeout(
        Command::new(wsbench_bin())
            .arg("run")
            .arg("--scenario")
            .arg(path)
            .arg("--data")
            .arg(csv)
            .arg("--json")
            .arg(&json)
            .arg("--quiet"),
        Duration::from_secs(60),
    );
    let result: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    (finished.status.and_then(|s| s.code()), result)
}
