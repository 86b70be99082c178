//! The Node.js servers: the fleet's own programs (`servers/node-*/server.js`), run on the
//! socket.io, graphql-ws and rpc-websockets pinned for the tests (`tests/peers/package-lock.json`,
//! installed by `npm ci`, found through `NODE_PATH`), so a test measures the very program
//! `wsbench compare` does; and socket.io applications shaped as real ones are
//! (`tests/peers/socketio_app_server.js`). Each takes its port as an argument (0: the kernel
//! picks one) and prints `listening on ws://127.0.0.1:PORT`.

use std::path::Path;
use std::time::Duration;

use wsbench_supervisor::Launch;

use crate::process::{Peer, installed, temp_dir};
use crate::{PeerError, repo_root};

/// Starts the fleet server `servers/SERVER/server.js` on a free port, with `package` from
/// the test peers' modules.
fn start_fleet_node(
    peer: &'static str,
    server: &str,
    package: &str,
    extra: &[String],
) -> Result<Peer, PeerError> {
    let folder = repo_root().join("servers").join(server);
    start_node_script(peer, &folder.join("server.js"), &[package], extra)
}

/// Starts the node program `script` on a free port (its folder the working directory), with
/// `packages` from the test peers' modules.
fn start_node_script(
    peer: &'static str,
    script: &Path,
    packages: &[&str],
    extra: &[String],
) -> Result<Peer, PeerError> {
    let modules = repo_root().join("tests/peers/node_modules");
    for package in packages {
        installed(peer, &modules.join(package).join("package.json"))?;
    }
    let node = which_node().ok_or(PeerError::NotInstalled { peer, missing: "node on PATH".into() })?;
    let folder = script.parent().unwrap_or(Path::new("."));
    let mut launch = Launch::new(peer, node).arg(script).arg("0");
    for arg in extra {
        launch = launch.arg(arg);
    }
    launch.command_mut().current_dir(folder).env("NODE_PATH", &modules);
    let mut peer = Peer::spawn(peer, launch, temp_dir(peer)?)?;
    let port = peer.wait_for_log(Duration::from_secs(20), |log| {
        log.lines()
            .find_map(|line| line.strip_prefix("listening on ws://127.0.0.1:")?.trim().parse::<u16>().ok())
    })?;
    Ok(peer.with_port("websocket", port))
}

pub(crate) fn which_node() -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join("node")).find(|node| Path::new(node).is_file())
}

/// socket.io 4.8 (`servers/node-socketio/server.js`): `echo` with ack, rooms `subscribe` /
/// `publish` → `message`. Path: `/socket.io/?EIO=4&transport=websocket`.
pub fn start_socketio() -> Result<Peer, PeerError> {
    start_fleet_node("socket.io", "node-socketio", "socket.io", &[])
}

/// [`start_socketio`] with Engine.IO pings every `ping_interval_ms` instead of every 25 s,
/// so a test sees the heart-beat without waiting.
pub fn start_socketio_pinging_every(ping_interval_ms: u32) -> Result<Peer, PeerError> {
    start_fleet_node("socket.io", "node-socketio", "socket.io", &[ping_interval_ms.to_string()])
}

/// [`start_socketio_pinging_every`] that also waits only `ping_timeout_ms` (not 20 s) for
/// each pong before it closes the connection, so a client that does not answer is closed
/// within a short test.
pub fn start_socketio_pinging_with_timeout(
    ping_interval_ms: u32,
    ping_timeout_ms: u32,
) -> Result<Peer, PeerError> {
    let args = [ping_interval_ms.to_string(), ping_timeout_ms.to_string()];
    start_fleet_node("socket.io", "node-socketio", "socket.io", &args)
}

/// A socket.io 4.8 application as applications are written (`tests/peers/socketio_app_server.js`):
/// `config` is its JSON (a namespace behind an auth middleware checking
/// `handshake.auth.token`, the pub/sub events' names, deliveries of the payload alone, the
/// msgpack parser); the script's header says each key. Path:
/// `/socket.io/?EIO=4&transport=websocket`.
pub fn start_socketio_app(config: &str) -> Result<Peer, PeerError> {
    let script = repo_root().join("tests/peers/socketio_app_server.js");
    let mut packages = vec!["socket.io"];
    if config.contains("msgpack") {
        packages.push("socket.io-msgpack-parser");
    }
    start_node_script("socket.io", &script, &packages, &[config.to_owned()])
}

/// graphql-ws 6 (`servers/node-graphql-ws/server.js`): query and subscription `echo`,
/// subscription `ticks(count)`. Any path; subprotocol `graphql-transport-ws` required.
pub fn start_graphql_ws() -> Result<Peer, PeerError> {
    start_fleet_node("graphql-ws", "node-graphql-ws", "graphql-ws", &[])
}

/// rpc-websockets 10 (`servers/node-rpc-websockets/server.js`): method `echo`, method
/// `publish` to events `t0`…`t9`. Path `/` (the path is rpc-websockets' namespace).
pub fn start_rpc_websockets() -> Result<Peer, PeerError> {
    start_fleet_node("rpc-websockets", "node-rpc-websockets", "rpc-websockets", &[])
}

/// A graphql-ws 6 application with its own web page (`tests/peers/graphql_app_server.js`):
/// the page runs the official client against the WebSocket its `ws` query parameter names
/// (`hello`, then a subscription of five quotes); `GET /counts` says the connections
/// accepted and the messages received and sent. WebSocket path `/graphql`.
pub fn start_graphql_app() -> Result<Peer, PeerError> {
    let script = repo_root().join("tests/peers/graphql_app_server.js");
    start_node_script("graphql-ws", &script, &["graphql-ws", "graphql", "ws"], &[])
}
