//! Action Cable: the fleet member's standalone `servers/ruby-actioncable/config.ru` (Debian's
//! ruby-actioncable 6.1, no Rails application) under Debian's puma, so that a test speaks to
//! the very program `wsbench compare` measures. Its channels, admin routes and the token it
//! may require are described in that file. The test peer runs Action Cable's worker pool on
//! one thread: with the default four, two actions of one connection may run at once and a
//! publisher's broadcasts leave out of order (a property of Action Cable the docs note),
//! which a test of exact completeness must not mistake for the client's.

use std::path::Path;
use std::time::Duration;

use wsbench_supervisor::Launch;

use crate::process::{Peer, free_ports, installed, temp_dir};
use crate::{PeerError, repo_root};

/// Where Debian installs puma.
const PUMA: &str = "/usr/bin/puma";
/// Where Debian installs Ruby libraries as gems (ruby-actioncable among them).
const GEMS: &str = "/usr/share/rubygems-integration/all/gems";

/// What an Action Cable test peer is started with.
#[derive(Debug, Clone, Default)]
pub struct ActionCableSettings<'a> {
    /// The bearer token every upgrade must carry (`ACTIONCABLE_TOKEN`); none: any client.
    pub token: Option<&'a str>,
    /// The ticker stream's period in ms (`TICKER_MS`); none: no ticker.
    pub ticker_ms: Option<u64>,
}

/// Action Cable on `/cable`, with the admin routes on `/admin`. Port: main.
pub fn start_actioncable(settings: &ActionCableSettings<'_>) -> Result<Peer, PeerError> {
    const PEER: &str = "actioncable";
    installed(PEER, Path::new(PUMA))?;
    installed_gem(PEER)?;
    let dir = temp_dir(PEER)?;
    let [port] = free_ports(PEER)?;
    let config = repo_root().join("servers/ruby-actioncable/config.ru");
    let mut command = Launch::new(PEER, PUMA)
        .arg("--quiet")
        .arg("-b")
        .arg(format!("tcp://127.0.0.1:{port}"))
        .arg("-t")
        .arg("4:16")
        .arg(&config);
    let env = command.command_mut();
    env.current_dir(&dir).env("ACTIONCABLE_WORKERS", "4");
    if let Some(token) = settings.token {
        env.env("ACTIONCABLE_TOKEN", token);
    }
    if let Some(ms) = settings.ticker_ms {
        env.env("TICKER_MS", ms.to_string());
    }
    let mut peer = Peer::spawn(PEER, command, dir)?.with_port("http", port);
    peer.wait_for_ports(Duration::from_secs(30))?;
    Ok(peer)
}

/// Action Cable's own gem, which `ruby-actioncable` installs (puma alone is not enough).
fn installed_gem(peer: &'static str) -> Result<(), PeerError> {
    let found = std::fs::read_dir(GEMS).is_ok_and(|entries| {
        entries.flatten().any(|entry| entry.file_name().to_string_lossy().starts_with("actioncable-"))
    });
    match found {
        true => Ok(()),
        false => Err(PeerError::NotInstalled {
            peer,
            missing: format!("{GEMS}/actioncable-* (Debian ruby-actioncable)"),
        }),
    }
}
