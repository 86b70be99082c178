//! The Node.js servers: small programs under `tests/peers/` on the pinned socket.io,
//! graphql-ws and rpc-websockets (`tests/peers/package-lock.json`, installed by `npm ci`).
//! Each takes its port as an argument (0: the kernel picks one) and prints `ready PORT`.

use std::path::Path;
use std::time::Duration;

use wsbench_supervisor::Launch;

use crate::process::{Peer, installed, temp_dir};
use crate::{PeerError, repo_root};

pub(crate) fn start_node(
    peer: &'static str,
    script: &str,
    package: &str,
    extra: &[String],
) -> Result<Peer, PeerError> {
    let peers = repo_root().join("tests/peers");
    installed(peer, &peers.join("node_modules").join(package).join("package.json"))?;
    let node = which_node().ok_or(PeerError::NotInstalled { peer, missing: "node on PATH".into() })?;
    let mut launch = Launch::new(peer, node).arg(peers.join(script)).arg("0");
    for arg in extra {
        launch = launch.arg(arg);
    }
    launch.command_mut().current_dir(&peers);
    let mut peer = Peer::spawn(peer, launch, temp_dir(peer)?)?;
    let port = peer.wait_for_log(Duration::from_secs(20), |log| {
        log.lines().find_map(|line| line.strip_prefix("ready ")?.trim().parse::<u16>().ok())
    })?;
    Ok(peer.with_port("websocket", port))
}

pub(crate) fn which_node() -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join("node")).find(|node| Path::new(node).is_file())
}

/// socket.io 4.8 (`tests/peers/socketio_server.js`): `echo` with ack, rooms `subscribe` /
/// `publish` → `message`. Path: `/socket.io/?EIO=4&transport=websocket`.
pub fn start_socketio() -> Result<Peer, PeerError> {
    start_node("socket.io", "socketio_server.js", "socket.io", &[])
}

/// [`start_socketio`] with Engine.IO pings every `ping_interval_ms` instead of every 25 s,
/// so a test sees the heart-beat without waiting.
pub fn start_socketio_pinging_every(ping_interval_ms: u32) -> Result<Peer, PeerError> {
    start_node("socket.io", "socketio_server.js", "socket.io", &[ping_interval_ms.to_string()])
}

/// [`start_socketio_pinging_every`] that also waits only `ping_timeout_ms` (not 20 s) for
/// each pong before it closes the connection, so a client that does not answer is closed
/// within a short test.
pub fn start_socketio_pinging_with_timeout(
    ping_interval_ms: u32,
    ping_timeout_ms: u32,
) -> Result<Peer, PeerError> {
    let args = [ping_interval_ms.to_string(), ping_timeout_ms.to_string()];
    start_node("socket.io", "socketio_server.js", "socket.io", &args)
}

/// graphql-ws 6 (`tests/peers/graphql_ws_server.js`): query and subscription `echo`,
/// subscription `ticks(count)`. Any path; subprotocol `graphql-transport-ws` required.
pub fn start_graphql_ws() -> Result<Peer, PeerError> {
    start_node("graphql-ws", "graphql_ws_server.js", "graphql-ws", &[])
}

/// rpc-websockets 10 (`tests/peers/rpc_websockets_server.js`): method `echo`, method
/// `publish` to events `t0`…`t9`. Path `/` (the path is rpc-websockets' namespace).
pub fn start_rpc_websockets() -> Result<Peer, PeerError> {
    start_node("rpc-websockets", "rpc_websockets_server.js", "rpc-websockets", &[])
}
