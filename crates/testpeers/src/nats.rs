//! The NATS server set up as a test of `--protocol nats` needs it: its WebSocket listener
//! (the NATS protocol on any path but `/mqtt`), a client listener for the test's own
//! connections, the HTTP monitoring endpoint (`/connz` names every connection), and what
//! the test adds to the configuration (users, a token, a system account). The binary is the
//! one `scripts/install-nats-server.sh` builds into `.tools/`, as for [`crate::start_nats`].

use std::path::Path;
use std::time::Duration;

use wsbench_supervisor::Launch;

use crate::process::{Peer, free_ports, installed, io, temp_dir};
use crate::repo_root;

/// nats-server with `extra` appended to its configuration (e.g. `authorization { token:
/// "t" }`). Ports: main (WebSocket), `client` (NATS over TCP), `monitor` (HTTP).
pub fn start_nats_configured(extra: &str) -> Result<Peer, crate::PeerError> {
    const PEER: &str = "nats-server";
    let binary = repo_root().join(".tools/nats-server");
    installed(PEER, &binary)?;
    let dir = temp_dir(PEER)?;
    let [websocket, client, monitor] = free_ports(PEER)?;
    let config = dir.join("nats.conf");
    let text = format!(
        "listen: \"127.0.0.1:{client}\"\nhttp: \"127.0.0.1:{monitor}\"\nserver_name: wsbench_nats\n\
         websocket {{ listen: \"127.0.0.1:{websocket}\", no_tls: true }}\n{extra}\n"
    );
    write(&config, &text)?;
    let command = Launch::new(PEER, &binary).arg("-c").arg(&config);
    let mut peer = Peer::spawn(PEER, command, dir)?
        .with_port("websocket", websocket)
        .with_port("client", client)
        .with_port("monitor", monitor);
    peer.wait_for_ports(Duration::from_secs(20))?;
    Ok(peer)
}

fn write(path: &Path, text: &str) -> Result<(), crate::PeerError> {
    std::fs::write(path, text)
        .map_err(|source| io("nats-server", format!("writing {}", path.display()), source))
}
