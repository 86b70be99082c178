//! `run --data users.csv` end to end: a server that admits each user only with its own
//! token (headers and URL query checked per connection) admits every connection of a run
//! whose rows are right, each user once, and refuses a run whose file holds a wrong token;
//! a flow's sends, patterns and checks take each connection's row; a protocol's template
//! whose row makes a topic the protocol refuses is a usage error naming the row; a
//! placeholder naming a column the file lacks is a usage error naming it.

mod support;

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
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
/// is named, a placeholder without `--data` is refused, and a row whose value would make a
/// topic MQTT refuses (a wildcard) is named by its row before anything connects.
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
    refused(&[&mqtt[..], &["r/{data.room}/{topic}", "--data", rooms]].concat(), 2, "(with row 3 of");
    let stomp = ["run", "pubsub", "ws://127.0.0.1:9/", "--protocol", "stomp", "--destination"];
    refused(
        &[&stomp[..], &["/topic/{data.floor}.{topic}", "--data", rooms]].concat(),
        2,
        "has no column `floor`",
    );
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
