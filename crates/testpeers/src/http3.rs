//! The HTTP/3 peers of the RFC 9220 tests, the fleet members themselves: Caddy
//! (`servers/caddy-h3/start.sh`, the binary built into `.tools/` by
//! `scripts/install-caddy.sh`) reverse-proxying WebSockets over HTTP/3 to an HTTP/1.1 echo
//! server the test names, and hypercorn with aioquic (`servers/python-hypercorn-h3/server.py`
//! in the repository's `.venv`) running an ASGI echo application. Each takes HTTP/1.1 on its
//! TCP port and HTTP/3 on the UDP port of the same number (QUIC with a self-signed
//! certificate: clients connect with `--insecure`).

use std::net::{SocketAddr, UdpSocket};
use std::process::Stdio;
use std::time::{Duration, Instant};

use wsbench_supervisor::Launch;

use crate::process::{Peer, free_ports, installed, temp_dir};
use crate::{PeerError, repo_root};

/// Caddy before the WebSocket server at `backend`. Ports: `websocket` (TCP, HTTP/1.1) first,
/// `h3` (UDP, the same number).
pub fn start_caddy_h3(backend: SocketAddr) -> Result<Peer, PeerError> {
    const PEER: &str = "caddy";
    let caddy = repo_root().join(".tools/caddy");
    installed(PEER, &caddy)?;
    which_on_path(PEER, "openssl")?;
    let dir = temp_dir(PEER)?;
    let [port] = free_ports(PEER)?;
    let member = repo_root().join("servers/caddy-h3");
    let mut launch = Launch::new(PEER, "sh").arg(member.join("start.sh")).arg(port.to_string());
    launch = launch.arg(backend.to_string());
    launch.command_mut().current_dir(&member).env("CADDY", &caddy).env("GOMAXPROCS", "1");
    start_on(PEER, launch, dir, port)
}

/// hypercorn + aioquic with the fleet member's ASGI echo application; SIGUSR1 makes it print
/// `echoed N messages, M connections open`. Ports: `websocket` (TCP), `h3` (UDP).
pub fn start_hypercorn_h3() -> Result<Peer, PeerError> {
    const PEER: &str = "hypercorn";
    let python = repo_root().join(".venv/bin/python");
    installed(PEER, &python)?;
    let mut probe = Launch::new(PEER, &python).arg("-c").arg("import hypercorn, aioquic");
    probe.command_mut().stdout(Stdio::null()).stderr(Stdio::null());
    if !probe.run_to_completion(Duration::from_secs(30)).is_ok_and(|status| status.success()) {
        let missing = format!("hypercorn and aioquic in {}", python.display());
        return Err(PeerError::NotInstalled { peer: PEER, missing });
    }
    let dir = temp_dir(PEER)?;
    let [port] = free_ports(PEER)?;
    let server = repo_root().join("servers/python-hypercorn-h3/server.py");
    let launch = Launch::new(PEER, &python).arg("-u").arg(server).arg(port.to_string());
    start_on(PEER, launch, dir, port)
}

fn which_on_path(peer: &'static str, tool: &str) -> Result<(), PeerError> {
    let found = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(tool).is_file()));
    if found { Ok(()) } else { Err(PeerError::NotInstalled { peer, missing: format!("{tool} on PATH") }) }
}

/// Starts `launch` and waits until it holds both the TCP and the UDP port `port`.
fn start_on(
    peer: &'static str,
    launch: Launch,
    dir: std::path::PathBuf,
    port: u16,
) -> Result<Peer, PeerError> {
    let mut peer = Peer::spawn(peer, launch, dir)?.with_port("websocket", port).with_port("h3", port);
    peer.wait_for_ports(Duration::from_secs(30))?;
    let deadline = Instant::now() + Duration::from_secs(30);
    // The UDP port is taken once binding it here fails.
    while UdpSocket::bind(("127.0.0.1", port)).is_ok() {
        peer.check_alive(deadline, "its QUIC port")?;
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(peer)
}
