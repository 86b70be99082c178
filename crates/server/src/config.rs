//! The server's one validated configuration; `wsbench serve` flags map onto it and its
//! defaults are the `pub const`s here, reused by the CLI.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use wsbench_proto::DEFAULT_MAX_MESSAGE;
use wsbench_proto::handshake::DEFAULT_MAX_HEADER_BYTES;

pub const DEFAULT_PORT: u16 = 8080;
pub const DEFAULT_THREADS: usize = 1;
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// No limit beyond the process's open-file limit.
pub const DEFAULT_MAX_CONNECTIONS: usize = usize::MAX;

/// Where the TLS certificate comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TlsSource {
    /// A self-signed certificate for `localhost` and `127.0.0.1`, generated at start.
    SelfSigned,
    /// PEM files.
    Files { cert: PathBuf, key: PathBuf },
}

/// Everything the server needs to know.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub host: IpAddr,
    pub port: u16,
    pub threads: usize,
    pub tls: Option<TlsSource>,
    /// Extra raw TCP echo port (0 picks a free one).
    pub tcp_port: Option<u16>,
    pub max_message: u64,
    pub max_header_bytes: usize,
    pub max_connections: usize,
    pub handshake_timeout: Duration,
    /// Accept permessage-deflate (RFC 7692) when a client offers it; on by default, like
    /// Python `websockets` and browsers.
    pub deflate: bool,
    /// Serve the pub/sub protocol of docs/protocols.md (one event-loop thread, no
    /// permessage-deflate); other messages are still echoed.
    pub pubsub: bool,
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            host: IpAddr::from([127, 0, 0, 1]),
            port: DEFAULT_PORT,
            threads: DEFAULT_THREADS,
            tls: None,
            tcp_port: None,
            max_message: DEFAULT_MAX_MESSAGE,
            max_header_bytes: DEFAULT_MAX_HEADER_BYTES,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
            deflate: true,
            pubsub: false,
        }
    }
}
