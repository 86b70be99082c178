//! Starts the real servers that wsbench's application-protocol tests talk to, on free
//! loopback ports, and stops them when the returned [`Peer`] is dropped: mosquitto, NATS,
//! RabbitMQ (web-stomp and web-mqtt), Centrifugo, Action Cable (puma), sockudo (Pusher),
//! HAProxy as an HTTP/2 front, the fleet's axum server, Caddy and hypercorn over HTTP/3, and
//! the small socket.io, graphql-ws, rpc-websockets and node `http2` programs under
//! `tests/peers/`. Test-only (`publish = false`): it may block, sleep and spawn, which the
//! library crates never do.
//!
//! Each server is installed by `scripts/install-test-peers.sh`; a missing one is
//! [`PeerError::NotInstalled`], which [`or_skip`] turns into a skip message, or a test
//! failure when `WSBENCH_REQUIRE_PEERS=1` (as `scripts/test.sh` sets it). Every process is
//! started in a process group of its own and stopped by that group's id, never by name;
//! each peer's configuration and data live in a fresh temporary folder removed on drop.

mod actioncable;
mod brokers;
mod centrifugo;
mod http2;
mod http3;
mod nats;
mod node;
mod process;
mod signalr;
mod sockudo;

use std::path::PathBuf;

pub use actioncable::{ActionCableSettings, start_actioncable};
pub use brokers::{
    add_rabbitmq_user, start_mosquitto, start_mosquitto_restartable, start_mosquitto_with_password,
    start_nats, start_rabbitmq,
};
pub use centrifugo::{
    CENTRIFUGO_API_KEY, CENTRIFUGO_SECRET, centrifugo_token, start_centrifugo, start_centrifugo_pinging_every,
};
pub use http2::{NodeH2, haproxy_show_stat, start_axum, start_haproxy, start_node_h2};
pub use http3::{start_caddy_h3, start_hypercorn_h3};
pub use nats::start_nats_configured;
pub use node::{
    start_graphql_app, start_graphql_ws, start_rpc_websockets, start_socketio, start_socketio_app,
    start_socketio_pinging_every, start_socketio_pinging_with_timeout,
};
pub use process::Peer;
pub use signalr::{start_signalr, start_signalr_with};
pub use sockudo::{SOCKUDO_APP_ID, SOCKUDO_APP_KEY, SOCKUDO_APP_SECRET, start_sockudo};

/// Why a peer could not be started.
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    #[error("{peer} is not installed ({missing}): run scripts/install-test-peers.sh")]
    NotInstalled { peer: &'static str, missing: String },
    #[error("{peer} did not start: {reason}")]
    DidNotStart { peer: &'static str, reason: String },
    #[error("{peer}: {context}: {error}")]
    Io { peer: &'static str, context: String, error: std::io::Error },
    #[error("{peer} could not be started: {error}")]
    Start { peer: &'static str, error: wsbench_supervisor::Error },
}

/// Whether missing peers fail tests (`WSBENCH_REQUIRE_PEERS=1`) instead of skipping them.
pub fn peers_required() -> bool {
    std::env::var("WSBENCH_REQUIRE_PEERS").is_ok_and(|value| value == "1")
}

/// The started peer, or `None` after printing why the test is skipped when the peer is not
/// installed. Panics when the peer is required (`WSBENCH_REQUIRE_PEERS=1`) but missing, and
/// whenever an installed peer fails to start: that is a failure, never a skip.
pub fn or_skip(started: Result<Peer, PeerError>) -> Option<Peer> {
    match started {
        Ok(peer) => Some(peer),
        Err(error) => match skip_reason(&error, peers_required()) {
            Some(reason) => {
                eprintln!("{reason}");
                None
            }
            None => panic!("{error}"),
        },
    }
}

/// The skip message for `error`, or `None` when it must fail the test: a missing peer is a
/// skip unless peers are `required`; any other error is a failure.
pub fn skip_reason(error: &PeerError, required: bool) -> Option<String> {
    match error {
        PeerError::NotInstalled { .. } if !required => Some(format!("skipped: {error}")),
        _ => None,
    }
}

/// The repository's root folder (this crate is `crates/testpeers`).
pub fn repo_root() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::fs::canonicalize(&root).unwrap_or(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn missing() -> PeerError {
        PeerError::NotInstalled { peer: "mosquitto", missing: "/usr/sbin/mosquitto".into() }
    }

    #[test]
    fn a_missing_peer_is_a_skip_that_says_how_to_install_it() {
        let reason = skip_reason(&missing(), false).expect("a skip");
        assert_eq!(
            reason,
            "skipped: mosquitto is not installed (/usr/sbin/mosquitto): run scripts/install-test-peers.sh"
        );
    }

    #[test]
    fn a_missing_peer_fails_when_peers_are_required() {
        assert_eq!(skip_reason(&missing(), true), None);
    }

    #[test]
    fn a_peer_that_does_not_start_always_fails() {
        let error = PeerError::DidNotStart { peer: "rabbitmq", reason: "exited".into() };
        assert_eq!(skip_reason(&error, false), None);
    }

    #[test]
    fn the_peer_programs_are_where_the_crate_looks_for_them() {
        let server = repo_root().join("servers/node-socketio/server.js");
        assert!(server.is_file(), "{}", server.display());
    }
}
