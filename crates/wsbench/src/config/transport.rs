//! `--http2` and `--streams-per-connection`: how the run's WebSockets reach the server, as
//! the engine gets it. Its own file so the choice, its default and its bound are in one place.

use serde::Serialize;

/// How WebSockets reach the server: the transport (one of `engine::dial`'s registry) and how
/// many share one TCP connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TransportSpec {
    /// `http1` (RFC 6455's upgrade, the default) or `http2` (RFC 8441's extended CONNECT).
    pub name: &'static str,
    /// WebSockets per TCP connection (1 for `http1`).
    pub streams_per_connection: u64,
}

/// `--streams-per-connection` when not given.
pub const DEFAULT_STREAMS_PER_CONNECTION: u64 = 100;
/// The most `--streams-per-connection` allows (servers cap streams far lower: HAProxy at
/// 100, nghttp2 and h2 at a few hundred by default).
pub const MAX_STREAMS_PER_CONNECTION: u64 = 10_000;

impl TransportSpec {
    /// One WebSocket per TCP connection, HTTP/1.1 upgrade.
    pub const HTTP1: TransportSpec = TransportSpec { name: "http1", streams_per_connection: 1 };

    pub fn is_default(&self) -> bool {
        *self == TransportSpec::HTTP1
    }
}

impl Default for TransportSpec {
    fn default() -> TransportSpec {
        TransportSpec::HTTP1
    }
}
