//! sockudo, a Pusher Channels server, built from crates.io into `.tools/` by
//! `scripts/install-sockudo.sh`, with a JSON configuration of its own: one app
//! ([`SOCKUDO_APP_ID`], [`SOCKUDO_APP_KEY`], [`SOCKUDO_APP_SECRET`]) that allows client
//! events, the local adapter, no metrics or rate limits. One free loopback port serves the
//! WebSocket (`/app/<key>`) and the HTTP API (`/apps/<id>/…`, signed with the secret).

use std::time::Duration;

use wsbench_supervisor::Launch;

use crate::process::{Peer, free_ports, installed, io, temp_dir};
use crate::{PeerError, repo_root};

/// The app's id (the HTTP API's `/apps/<id>/…`).
pub const SOCKUDO_APP_ID: &str = "app-id";
/// The app's key (the WebSocket's `/app/<key>`).
pub const SOCKUDO_APP_KEY: &str = "app-key";
/// The app's secret, which signs private and presence channels and API requests.
pub const SOCKUDO_APP_SECRET: &str = "wsbench-test-app-secret";

/// sockudo with its app. Port: main (WebSocket and HTTP API).
pub fn start_sockudo() -> Result<Peer, PeerError> {
    const PEER: &str = "sockudo";
    let binary = repo_root().join(".tools/sockudo");
    installed(PEER, &binary)?;
    let dir = temp_dir(PEER)?;
    let [port] = free_ports(PEER)?;
    let config = dir.join("config.json");
    let text = format!(
        r#"{{
  "host": "127.0.0.1",
  "port": {port},
  "metrics": {{ "enabled": false }},
  "rate_limiter": {{ "enabled": false }},
  "app_manager": {{
    "driver": "memory",
    "array": {{ "apps": [
      {{ "id": "{SOCKUDO_APP_ID}", "key": "{SOCKUDO_APP_KEY}", "secret": "{SOCKUDO_APP_SECRET}", "enabled": true,
         "policy": {{ "features": {{ "enable_client_messages": true }} }} }}
    ] }}
  }}
}}
"#
    );
    std::fs::write(&config, text)
        .map_err(|source| io(PEER, format!("writing {}", config.display()), source))?;
    let mut command = Launch::new(PEER, &binary).arg("--config").arg(&config);
    command.command_mut().env("RUST_LOG", "warn");
    let mut peer = Peer::spawn(PEER, command, dir)?.with_port("websocket", port);
    peer.wait_for_ports(Duration::from_secs(30))?;
    Ok(peer)
}
