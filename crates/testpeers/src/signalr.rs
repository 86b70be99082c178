//! SignalR: the fleet member's hub (`servers/python-signalr/hub.py`, aiosignalr 0.1.1's
//! standalone server) run by the Python of `<repo>/.venv-signalr` (aiosignalr needs
//! websockets 16, the repository's `.venv` pins 17.4), so that a test speaks to the very
//! program `wsbench compare` measures. Its hub methods, admin route and the token it may
//! require are described in that file.

use std::time::Duration;

use wsbench_supervisor::Launch;

use crate::process::{Peer, free_ports, installed, temp_dir};
use crate::{PeerError, repo_root};

/// A SignalR hub on `/hub`, with its admin route on `/admin/disconnect`; `token`: the bearer
/// every request to the hub must carry (none: any client). Port: main.
pub fn start_signalr(token: Option<&str>) -> Result<Peer, PeerError> {
    const PEER: &str = "signalr";
    let python = repo_root().join(".venv-signalr/bin/python");
    installed(PEER, &python)?;
    let dir = temp_dir(PEER)?;
    let [port] = free_ports(PEER)?;
    let hub = repo_root().join("servers/python-signalr/hub.py");
    let mut command = Launch::new(PEER, &python).arg(&hub).arg(port.to_string());
    let env = command.command_mut();
    env.current_dir(&dir);
    if let Some(token) = token {
        env.env("WSBENCH_SIGNALR_TOKEN", token);
    }
    let mut peer = Peer::spawn(PEER, command, dir)?.with_port("http", port);
    peer.wait_for_ports(Duration::from_secs(30))?;
    Ok(peer)
}
