//! `wsbench run` against an endpoint guarded like a real application: the Python
//! `websockets` server of `tests/interop/auth_server.py` (the pinned interop peer) that
//! refuses the upgrade without a bearer token (401) or the `chat` subprotocol (403), records
//! a header of every connection, and, over TLS, requires a client certificate, records the
//! SNI and the negotiated version. Certificates come from a test CA made here with rcgen. A
//! run split over shards (`--processes 2`) hands them the token, and no file keeps it.

use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command};
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use serde_json::Value;

use crate::bad_input::assert_usage_error;
use crate::harness::{
    Finished, arg, assert_matches_schema, errors, heavy, read_result, scratch, spawn_listening, summary_of,
    uint, wsbench,
};
use crate::support::scripted_server::Script;

/// The auth server, killed on drop.
struct AuthServer {
    child: Child,
    _stdin: ChildStdin,
    url: String,
}

impl AuthServer {
    /// `auth_server.py ARGS`, or None (after saying why) when the Python peer is not installed.
    fn start(args: &[&str]) -> Option<AuthServer> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let python = root.join(".venv/bin/python");
        if !python.exists() {
            crate::support::peer_missing(&format!(
                "peer python websockets not installed ({})",
                python.display()
            ));
            return None;
        }
        let mut command = Command::new(&python);
        command.arg(root.join("tests/interop/auth_server.py")).args(args);
        let (child, stdin, url) = spawn_listening(command, "auth_server.py");
        Some(AuthServer { child, _stdin: stdin, url })
    }
}

impl Drop for AuthServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const CONNECTIONS: u64 = 20;
/// A bearer token that cannot occur by chance in a result file: the hyphens keep it out of
/// the base64 histogram blobs, where a short token like `t0k` once matched by accident.
const TOKEN: &str = "bearer-secret-do-not-store";

/// A short echo run of `CONNECTIONS` connections against `url` with `extra` flags; the
/// result file is `json`.
fn run(url: &str, json: &Path, extra: &[&str]) -> Finished {
    let connections = CONNECTIONS.to_string();
    let mut args =
        vec!["run", "echo", url, "--connections", &connections, "--duration", "1s", "--warmup", "0s"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--json", arg(json)]);
    wsbench(&args, Duration::from_secs(30))
}

/// Runs against `url` with `extra` flags and checks that every connection failed its
/// handshake with `error` (e.g. `handshake_http_status_401`); returns the run.
fn assert_every_handshake_fails(url: &str, json: &Path, extra: &[&str], error: &str) -> Finished {
    let finished = run(url, json, extra);
    finished.assert_completed_with_failures();
    let result = read_result(json);
    let context = format!("{}\n{}", summary_of(&result), finished.describe());
    assert_eq!(errors(&result).get(error), Some(&CONNECTIONS), "{context}");
    finished
}

#[test]
fn bearer_and_subprotocol_open_every_connection_of_a_guarded_python_server() {
    let Some(server) = AuthServer::start(&["--bearer", TOKEN, "--subprotocol", "chat"]) else { return };
    let _slot = heavy(1);
    let dir = scratch("endpoint-guarded");

    let json = dir.join("with.json");
    let with = run(&server.url, &json, &["--bearer", TOKEN, "--subprotocol", "chat"]);
    with.assert_success();
    let result = read_result(&json);
    let context = format!("{}\n{}", summary_of(&result), with.describe());
    assert_eq!(uint(&result, "/summary/connections/established"), CONNECTIONS, "{context}");
    assert!(errors(&result).is_empty(), "{context}");
    assert_eq!(uint(&result, "/counters/subprotocols_chosen/chat"), CONNECTIONS, "{context}");
    assert_eq!(result["config"]["handshake"]["headers"], serde_json::json!(["Authorization: <redacted>"]));
    assert_eq!(result["config"]["handshake"]["subprotocols"], serde_json::json!(["chat"]));
    let text = std::fs::read_to_string(&json).unwrap();
    assert!(!text.contains(TOKEN), "the token leaked into the result file");
    assert_matches_schema(&result);
    assert!(with.stdout.contains("subprotocol offered chat, chosen chat (20)"), "{}", with.describe());

    let without = assert_every_handshake_fails(
        &server.url,
        &dir.join("without.json"),
        &[],
        "handshake_http_status_401",
    );
    assert!(without.stdout.contains("handshake_http_status_401 20"), "{}", without.describe());
    let json = dir.join("no-subprotocol.json");
    assert_every_handshake_fails(&server.url, &json, &["--bearer", TOKEN], "handshake_http_status_403");
}

#[test]
fn a_server_that_chooses_no_offered_subprotocol_fails_the_handshake() {
    // Python websockets configured without subprotocols ignores the offer and chooses none.
    let Some(server) = AuthServer::start(&[]) else { return };
    let _slot = heavy(1);
    let json = scratch("endpoint-subprotocol-none").join("r.json");
    assert_every_handshake_fails(
        &server.url,
        &json,
        &["--subprotocol", "v2"],
        "handshake_subprotocol_not_chosen",
    );
    // A server that answers with a subprotocol that was never offered.
    let server = Script::echo().choose_subprotocol("mqtt").start();
    let json = scratch("endpoint-subprotocol-other").join("r.json");
    let offered = ["--subprotocol", "chat"];
    assert_every_handshake_fails(&server.url(), &json, &offered, "handshake_subprotocol_not_offered");
}

#[test]
fn conn_template_gives_each_connection_its_own_header() {
    let dir = scratch("endpoint-template");
    let record = dir.join("headers.txt");
    let Some(server) = AuthServer::start(&["--record-header", "X-User", "--record", arg(&record)]) else {
        return;
    };
    let _slot = heavy(1);
    let headers = dir.join("headers.conf");
    std::fs::write(&headers, "# per-connection identity\n\nX-User: user-{conn}\n").unwrap();
    let json = dir.join("r.json");
    let finished = run(&server.url, &json, &["--header-file", arg(&headers), "--header", "X-Trace: t"]);
    finished.assert_success();
    let seen = std::fs::read_to_string(&record).unwrap();
    let mut values: Vec<&str> = seen.lines().collect();
    values.sort_unstable();
    values.dedup();
    let expected: Vec<String> = (0..CONNECTIONS).map(|i| format!("user-{i}")).collect();
    let mut expected: Vec<&str> = expected.iter().map(String::as_str).collect();
    expected.sort_unstable();
    assert_eq!(values, expected, "each connection sends its own X-User\n{}", finished.describe());
    let result = read_result(&json);
    assert_eq!(
        result["config"]["handshake"]["headers"],
        serde_json::json!(["X-User: user-{conn}", "X-Trace: t"]),
        "the template is recorded"
    );
}

#[test]
fn a_bad_header_file_line_is_a_usage_error_naming_file_and_line() {
    let dir = scratch("endpoint-header-file");
    let headers = dir.join("h.conf");
    std::fs::write(&headers, "X-A: 1\n# comment\nX-B 2\n").unwrap();
    let line = format!("{}:3: `X-B 2` is not `Name: value`", headers.display());
    assert_usage_error(&["run", "echo", "ws://127.0.0.1:1", "--header-file", arg(&headers)], &line);
    let owned = ["run", "echo", "ws://127.0.0.1:1", "--header", "Sec-WebSocket-Key: x"];
    assert_usage_error(&owned, "written by wsbench itself");
    assert_usage_error(&["run", "echo", "ws://127.0.0.1:1", "--header", "X-A: a\rb"], "control character");
    let half = ["run", "echo", "wss://127.0.0.1:1", "--client-cert", arg(&headers)];
    assert_usage_error(&half, "--client-cert: needs --client-key too");
    assert_usage_error(&["run", "echo", "wss://127.0.0.1:1", "--cacert", arg(&headers)], "--cacert: ");
}

/// A test CA; a server certificate for `localhost` and `wsbench.test` and a client
/// certificate, both signed by it; written as PEM files into `dir`.
struct Pki {
    ca: PathBuf,
    server_cert: PathBuf,
    server_key: PathBuf,
    client_cert: PathBuf,
    client_key: PathBuf,
}

fn make_pki(dir: &Path) -> Pki {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(DnType::CommonName, "wsbench test CA");
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let write = |name: &str, text: String| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let leaf = |names: Vec<String>, cert: &str, key: &str| {
        let key_pair = KeyPair::generate().unwrap();
        let certificate = CertificateParams::new(names).unwrap().signed_by(&key_pair, &ca).unwrap();
        (write(cert, certificate.pem()), write(key, key_pair.serialize_pem()))
    };
    let (server_cert, server_key) =
        leaf(vec!["localhost".into(), "wsbench.test".into()], "server.pem", "server-key.pem");
    let (client_cert, client_key) = leaf(vec!["client.wsbench.test".into()], "client.pem", "client-key.pem");
    Pki { ca: write("ca.pem", ca.as_ref().pem()), server_cert, server_key, client_cert, client_key }
}

/// The server's `wss://127.0.0.1:PORT` as `wss://localhost:PORT` (the certificate's name).
fn localhost(url: &str) -> String {
    url.replace("127.0.0.1", "localhost")
}

#[test]
fn mutual_tls_with_a_test_ca_connects_and_without_the_client_certificate_fails_with_a_tls_cause() {
    let dir = scratch("endpoint-mtls");
    let pki = make_pki(&dir);
    let (cert, key, ca) = (arg(&pki.server_cert), arg(&pki.server_key), arg(&pki.ca));
    let Some(server) = AuthServer::start(&["--cert", cert, "--key", key, "--client-ca", ca]) else { return };
    let _slot = heavy(1);
    let url = localhost(&server.url);

    let json = dir.join("mtls.json");
    let client =
        ["--cacert", ca, "--client-cert", arg(&pki.client_cert), "--client-key", arg(&pki.client_key)];
    let with = run(&url, &json, &client);
    with.assert_success();
    let result = read_result(&json);
    let context = format!("{}\n{}", summary_of(&result), with.describe());
    assert_eq!(uint(&result, "/summary/connections/established"), CONNECTIONS, "{context}");
    let sessions = result["counters"]["tls_negotiated"].as_object().expect("tls_negotiated counted");
    assert_eq!(sessions.values().filter_map(Value::as_u64).sum::<u64>(), CONNECTIONS, "{context}");
    assert!(with.stdout.contains("\ntls:          TLSv1."), "{}", with.describe());

    let json = dir.join("no-client-cert.json");
    let without = run(&url, &json, &["--cacert", ca]);
    without.assert_completed_with_failures();
    let result = read_result(&json);
    let context = format!("{}\n{}", summary_of(&result), without.describe());
    let failures = errors(&result);
    let tls_failures: u64 =
        failures.iter().filter(|(k, _)| k.starts_with("handshake_tls_")).map(|(_, n)| n).sum();
    assert_eq!(tls_failures, CONNECTIONS, "every connection fails with a TLS cause\n{context}");

    // Without --cacert the test CA is unknown: the server's certificate is refused.
    assert_every_handshake_fails(&url, &dir.join("unknown-ca.json"), &[], "handshake_tls_unknown_ca");
}

#[test]
fn tls_version_pin_negotiates_1_2_and_the_sni_arrives() {
    let dir = scratch("endpoint-tls-version");
    let pki = make_pki(&dir);
    let record = dir.join("seen.txt");
    let (cert, key) = (arg(&pki.server_cert), arg(&pki.server_key));
    let Some(server) = AuthServer::start(&["--cert", cert, "--key", key, "--record", arg(&record)]) else {
        return;
    };
    let _slot = heavy(1);
    let json = dir.join("r.json");
    // The URL names 127.0.0.1; --sni sends (and verifies) wsbench.test instead.
    let pinned =
        run(&server.url, &json, &["--cacert", arg(&pki.ca), "--tls-version", "1.2", "--sni", "wsbench.test"]);
    pinned.assert_success();
    let result = read_result(&json);
    let context = format!("{}\n{}", summary_of(&result), pinned.describe());
    let sessions: Vec<&String> =
        result["counters"]["tls_negotiated"].as_object().expect("counted").keys().collect();
    assert!(sessions.len() == 1 && sessions[0].starts_with("TLSv1.2 TLS_ECDHE_"), "{sessions:?}\n{context}");
    assert_eq!(result["config"]["tls"]["version"], "1.2", "{context}");
    assert_matches_schema(&result);
    let seen = std::fs::read_to_string(&record).unwrap();
    let count = |line: &str| seen.lines().filter(|l| *l == line).count() as u64;
    assert_eq!(count("sni wsbench.test"), CONNECTIONS, "{seen}");
    assert_eq!(count("tls TLSv1.2 alpn http/1.1"), CONNECTIONS, "{seen}");
}

/// A certificate for other names keeps its cause, `handshake_tls_bad_certificate`, and says
/// why: the name wsbench expected (the URL's 127.0.0.1) and the names the certificate holds,
/// kept in `handshake_responses` and shown on the report's errors line (it was a bare cause).
#[test]
fn a_certificate_for_other_names_is_a_bad_certificate_naming_the_expected_and_presented_names() {
    let dir = scratch("endpoint-wrong-name");
    let pki = make_pki(&dir);
    let server =
        crate::support::Server::spawn(&["--cert", arg(&pki.server_cert), "--key", arg(&pki.server_key)]);
    let url = server.urls.iter().find(|u| u.starts_with("wss://127.0.0.1:")).expect("a wss:// listener");
    let _slot = heavy(1);
    let json = dir.join("r.json");
    let finished = assert_every_handshake_fails(
        url,
        &json,
        &["--cacert", arg(&pki.ca)],
        "handshake_tls_bad_certificate",
    );
    let result = read_result(&json);
    let detail =
        result["counters"]["handshake_responses"]["tls_bad_certificate"].as_str().unwrap_or_default();
    assert!(
        detail.contains("127.0.0.1") && detail.contains("localhost") && detail.contains("wsbench.test"),
        "the expected name and the certificate's: {detail:?}\n{}",
        finished.describe()
    );
    let line = finished.stdout.lines().find(|l| l.starts_with("errors:")).unwrap_or_default();
    assert!(line.contains(detail), "the errors line shows it: {line:?}");
}

/// Every file under `dir`, relative to it, sorted.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(files_under(&path).into_iter().map(|file| path.join(file)));
        } else {
            files.push(path);
        }
    }
    let mut files: Vec<PathBuf> =
        files.into_iter().map(|f| f.strip_prefix(dir).unwrap_or(&f).to_owned()).collect();
    files.sort();
    files
}

#[test]
fn a_processes_run_hands_its_shards_the_token_and_writes_it_nowhere() {
    let Some(server) = AuthServer::start(&["--bearer", TOKEN]) else { return };
    let _slot = heavy(2);
    let dir = scratch("endpoint-processes-token");
    let json = dir.join("p.json");
    let finished = run(&server.url, &json, &["--processes", "2", "--bearer", TOKEN]);
    finished.assert_success();

    // The server refuses an upgrade without the token (401): every shard had it.
    let result = read_result(&json);
    let context = format!("{}\n{}", summary_of(&result), finished.describe());
    assert_eq!(uint(&result, "/summary/connections/established"), CONNECTIONS, "{context}");
    assert!(errors(&result).is_empty(), "{context}");
    assert!(uint(&result, "/summary/measured_echoes") > 0, "{context}");
    assert_eq!(result["shards"].as_array().map(Vec::len), Some(2), "{context}");
    assert_eq!(result["config"]["handshake"]["headers"], serde_json::json!(["Authorization: <redacted>"]));

    // The shards' folder holds their results only, and no file holds the token.
    let expected = ["p.json", "p.shards/shard-0.json", "p.shards/shard-1.json"].map(PathBuf::from);
    assert_eq!(files_under(&dir), expected);
    for file in expected {
        let bytes = std::fs::read(dir.join(&file)).unwrap();
        let leaked = bytes.windows(TOKEN.len()).any(|window| window == TOKEN.as_bytes());
        assert!(!leaked, "the token is in {}", file.display());
    }
}
