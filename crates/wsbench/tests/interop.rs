//! Interoperability tests: third-party WebSocket clients (Python `websockets`, node `ws`)
//! talk to the real `wsbench serve` binary over plain `ws://` and TLS `wss://`.
//!
//! Our own codec agreeing with itself proves little; these peers are independent, widely used
//! implementations. Each runs a script from `tests/interop/` that exchanges text (non-ASCII
//! UTF-8), binary, 1 MiB and 16 MiB binary, a fragmented message, a ping and a clean close,
//! and prints one line per check.
//!
//! The peers are installed by `scripts/install-test-peers.sh`. When one is missing the test
//! is skipped with a message, unless `WSBENCH_REQUIRE_PEERS=1` (set by `scripts/test.sh`), in
//! which case it fails.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use support::{Server, peer_missing, run_with_timeout};

/// Upper bound for one whole client script run; the child is killed past it.
const PEER_TIMEOUT: Duration = Duration::from_secs(60);

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("repo root")
}

/// A third-party client: the interpreter to run and the script it runs.
#[derive(Debug)]
struct Peer {
    name: &'static str,
    program: PathBuf,
    script: PathBuf,
}

fn python_peer() -> Result<Peer, String> {
    let root = repo_root();
    let python = root.join(".venv/bin/python");
    if !python.exists() {
        return Err(format!("{} does not exist", python.display()));
    }
    let import = Command::new(&python)
        .args(["-c", "import websockets"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    if !import.status.success() {
        return Err(format!(
            "`import websockets` failed: {}",
            String::from_utf8_lossy(&import.stderr).trim()
        ));
    }
    Ok(Peer { name: "python websockets", program: python, script: root.join("tests/interop/client.py") })
}

fn node_peer() -> Result<Peer, String> {
    let root = repo_root();
    let ws = root.join("tests/interop/node_modules/ws");
    if !ws.join("package.json").exists() {
        return Err(format!("{} does not exist", ws.display()));
    }
    let version = Command::new("node")
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run `node`: {e}"))?;
    if !version.status.success() {
        return Err("`node --version` failed".to_owned());
    }
    Ok(Peer { name: "node ws", program: PathBuf::from("node"), script: root.join("tests/interop/client.js") })
}

/// The peer, or `None` (after saying why on stderr) when it is missing and peers are optional.
fn require(peer: Result<Peer, String>, name: &str) -> Option<Peer> {
    match peer {
        Ok(peer) => Some(peer),
        Err(why) => {
            peer_missing(&format!("peer {name} not installed ({why})"));
            None
        }
    }
}

/// Runs `peer` against `url` and asserts that every check passed.
fn run_peer(peer: &Peer, url: &str) {
    let finished = run_with_timeout(Command::new(&peer.program).arg(&peer.script).arg(url), PEER_TIMEOUT);
    let report = finished.describe(&format!("{} client against {url}", peer.name));
    match finished.status {
        None => panic!("timed out after {PEER_TIMEOUT:?}, killed\n{report}"),
        Some(status) if !status.success() => panic!("exited with {status}\n{report}"),
        Some(_) => {
            assert!(
                finished.stdout.contains("all checks passed"),
                "exited 0 without finishing its checks\n{report}"
            );
            // Both clients offer permessage-deflate by default and `wsbench serve` accepts it,
            // so every check above ran compressed both ways (RFC 7692 interop).
            assert!(finished.stdout.contains("permessage-deflate"), "deflate was not negotiated\n{report}");
            println!("{report}");
        }
    }
}

fn plain_url(server: &Server) -> String {
    let url = server.urls[0].clone();
    assert!(url.starts_with("ws://"), "plain server printed {url}");
    url
}

fn tls_url(server: &Server) -> String {
    let url = server.urls[0].clone();
    assert!(url.starts_with("wss://"), "`serve --tls` printed {url}, want wss://");
    url
}

#[test]
fn python_websockets_client_round_trips_over_ws() {
    let Some(peer) = require(python_peer(), "python websockets") else {
        return;
    };
    let server = Server::spawn(&[]);
    run_peer(&peer, &plain_url(&server));
}

#[test]
fn python_websockets_client_round_trips_over_wss() {
    let Some(peer) = require(python_peer(), "python websockets") else {
        return;
    };
    let server = Server::spawn(&["--tls"]);
    run_peer(&peer, &tls_url(&server));
}

#[test]
fn node_ws_client_round_trips_over_ws() {
    let Some(peer) = require(node_peer(), "node ws") else {
        return;
    };
    let server = Server::spawn(&[]);
    run_peer(&peer, &plain_url(&server));
}

#[test]
fn node_ws_client_round_trips_over_wss() {
    let Some(peer) = require(node_peer(), "node ws") else {
        return;
    };
    let server = Server::spawn(&["--tls"]);
    run_peer(&peer, &tls_url(&server));
}
