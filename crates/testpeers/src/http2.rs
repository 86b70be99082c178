//! The HTTP/2 peers of the RFC 8441 tests: HAProxy from Debian as an HTTP/2 front (h2c with
//! `proto h2`, TLS with `alpn h2,http/1.1`) before any WebSocket server, to which it speaks
//! the HTTP/1.1 upgrade; and node's built-in `http2` module with `enableConnectProtocol`
//! (`tests/peers/h2_websocket_server.js`, nothing to install but node).

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use wsbench_supervisor::Launch;

use crate::node::which_node;
use crate::process::{Peer, free_ports, installed, io, temp_dir};
use crate::{PeerError, repo_root};

const HAPROXY: &str = "/usr/sbin/haproxy";
/// HAProxy's stats socket in its peer's folder: `show info` on it gives its own counts.
const STATS_SOCKET: &str = "stats.sock";

/// What the node peer does besides echoing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeH2 {
    /// Echo every WebSocket.
    Echo,
    /// SETTINGS without SETTINGS_ENABLE_CONNECT_PROTOCOL.
    NoConnectProtocol,
    /// SETTINGS_MAX_CONCURRENT_STREAMS 10.
    FewStreams,
    /// Reset the stream of `x-conn: 7` after its 10th message; GOAWAY the connection
    /// carrying `x-conn: 150` after that one's 20th (see the script).
    Faults,
}

/// node's `http2` server on a free port. Outside [`NodeH2::Echo`] its log has a line per
/// extended CONNECT (`connect request N`) and per fault.
pub fn start_node_h2(mode: NodeH2) -> Result<Peer, PeerError> {
    const PEER: &str = "node-http2";
    let node = which_node().ok_or(PeerError::NotInstalled { peer: PEER, missing: "node on PATH".into() })?;
    let mode = match mode {
        NodeH2::Echo => "echo",
        NodeH2::NoConnectProtocol => "no-connect-protocol",
        NodeH2::FewStreams => "few-streams",
        NodeH2::Faults => "faults",
    };
    let script = repo_root().join("tests/peers/h2_websocket_server.js");
    let launch = Launch::new(PEER, node).arg(script).arg("0").arg(mode);
    let mut peer = Peer::spawn(PEER, launch, temp_dir(PEER)?)?;
    let port = peer.wait_for_log(Duration::from_secs(20), |log| {
        log.lines().find_map(|line| line.strip_prefix("ready ")?.trim().parse::<u16>().ok())
    })?;
    Ok(peer.with_port("h2c", port))
}

/// HAProxy (one thread) before the WebSocket server at `backend`: port `h2c` takes HTTP/2
/// with prior knowledge, port `tls` TLS with ALPN `h2,http/1.1` (a self-signed certificate
/// for 127.0.0.1 and localhost), port `http1` plain HTTP/1.1. Each WebSocket becomes an
/// HTTP/1.1 upgrade to the backend.
pub fn start_haproxy(backend: SocketAddr) -> Result<Peer, PeerError> {
    const PEER: &str = "haproxy";
    installed(PEER, Path::new(HAPROXY))?;
    let dir = temp_dir(PEER)?;
    let [h2c, tls, http1] = free_ports(PEER)?;
    let pem = dir.join("cert.pem");
    let names = vec!["127.0.0.1".to_owned(), "localhost".to_owned()];
    let certified = rcgen::generate_simple_self_signed(names)
        .map_err(|e| io(PEER, "making a certificate".into(), std::io::Error::other(e)))?;
    let pem_text = format!("{}{}", certified.cert.pem(), certified.signing_key.serialize_pem());
    std::fs::write(&pem, pem_text).map_err(|source| io(PEER, "writing the certificate".into(), source))?;
    let config = dir.join("haproxy.cfg");
    let text = format!(
        "global\n    maxconn 9000\n    nbthread 1\n    tune.h2.max-concurrent-streams 1000\n\
         \x20   stats socket {}\n\
         defaults\n    mode http\n    timeout connect 5s\n    timeout client 60s\n    timeout server 60s\n\
         \x20   timeout tunnel 60s\n    maxconn 9000\n\
         frontend h2c\n    bind 127.0.0.1:{h2c} proto h2\n    default_backend websocket\n\
         frontend tls\n    bind 127.0.0.1:{tls} ssl crt {} alpn h2,http/1.1\n    default_backend websocket\n\
         frontend http1\n    bind 127.0.0.1:{http1}\n    default_backend websocket\n\
         backend websocket\n    server echo {backend} maxconn 9000\n",
        dir.join(STATS_SOCKET).display(),
        pem.display()
    );
    std::fs::write(&config, text).map_err(|source| io(PEER, "writing haproxy.cfg".into(), source))?;
    let launch = Launch::new(PEER, HAPROXY).arg("-db").arg("-f").arg(&config);
    let mut peer =
        Peer::spawn(PEER, launch, dir)?.with_port("h2c", h2c).with_port("tls", tls).with_port("http1", http1);
    peer.wait_for_ports(Duration::from_secs(10))?;
    Ok(peer)
}

/// The fleet's axum 0.8 echo server on a free port (HTTP/1.1 and h2c with extended CONNECT).
pub fn start_axum() -> Result<Peer, PeerError> {
    const PEER: &str = "rust-axum";
    let binary = repo_root().join("servers/rust-axum/target/release/fleet-axum-echo");
    installed(PEER, &binary)?;
    let mut peer = Peer::spawn(PEER, Launch::new(PEER, binary).arg("0"), temp_dir(PEER)?)?;
    let port = peer.wait_for_log(Duration::from_secs(20), |log| {
        log.lines()
            .find_map(|line| line.strip_prefix("listening on ws://127.0.0.1:")?.trim().parse::<u16>().ok())
    })?;
    Ok(peer.with_port("websocket", port))
}

/// HAProxy's own `show stat` (CSV, a `# ` header line, a row per frontend, backend and
/// server), from its stats socket: e.g. a frontend's TLS handshakes, full (`ssl_sess`) and
/// resumed (`ssl_reused_sess`).
pub fn haproxy_show_stat(haproxy: &Peer) -> Result<String, PeerError> {
    use std::io::{Read, Write};
    let failed = |source| io("haproxy", "asking its stats socket".into(), source);
    let mut socket =
        std::os::unix::net::UnixStream::connect(haproxy.dir().join(STATS_SOCKET)).map_err(failed)?;
    socket.set_read_timeout(Some(Duration::from_secs(5))).map_err(failed)?;
    socket.write_all(b"show stat\n").map_err(failed)?;
    let mut info = String::new();
    socket.read_to_string(&mut info).map_err(failed)?;
    Ok(info)
}
