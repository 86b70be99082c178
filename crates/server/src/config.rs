//! The server's one validated configuration; `wsbench serve` flags map onto it and its
//! defaults are the `pub const`s here, reused by the CLI. It is also what a server started
//! as a child process (the built-in server of a run, each process of `serve --processes N`)
//! reads on its stdin: serialized with serde, so every field reaches the child.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use wsbench_proto::DEFAULT_MAX_MESSAGE;

/// What every connection of one server process may hold at once in messages still
/// arriving (reassembled or inflated): 1 GiB.
pub const DEFAULT_MAX_MESSAGE_MEMORY: u64 = 1 << 30;
use wsbench_proto::handshake::DEFAULT_MAX_HEADER_BYTES;

pub const DEFAULT_PORT: u16 = 8080;
pub const DEFAULT_THREADS: usize = 1;
pub const DEFAULT_PROCESSES: usize = 1;
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// No limit beyond the process's open-file limit.
pub const DEFAULT_MAX_CONNECTIONS: usize = usize::MAX;

/// Where the TLS certificate comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum TlsSource {
    /// A self-signed certificate for `localhost` and `127.0.0.1`, generated at start.
    SelfSigned,
    /// PEM files.
    Files { cert: PathBuf, key: PathBuf },
}

/// Everything the server needs to know.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServeConfig {
    pub host: IpAddr,
    pub port: u16,
    pub threads: usize,
    /// Processes sharing the port ([`crate::serve_processes`]), each with its own open-file
    /// limit; [`crate::start`] runs one, in this process, whatever this says.
    pub processes: usize,
    pub tls: Option<TlsSource>,
    /// Extra raw TCP echo port (0 picks a free one).
    pub tcp_port: Option<u16>,
    pub max_message: u64,
    /// Bytes all connections of one process may hold together in messages still arriving
    /// (each `--processes` process has its own); past it a connection is closed with 1009.
    #[serde(default = "default_max_message_memory")]
    pub max_message_memory: u64,
    pub max_header_bytes: usize,
    pub max_connections: usize,
    pub handshake_timeout: Duration,
    /// Accept permessage-deflate (RFC 7692) when a client offers it; on by default, like
    /// Python `websockets` and browsers.
    pub deflate: bool,
    /// Serve the pub/sub protocol of docs/protocols.md (one event-loop thread, no
    /// permessage-deflate); other messages are still echoed.
    pub pubsub: bool,
    /// The close code SIGUSR2 closes every connection with, the server going on: 1012
    /// (Service Restart) as a graceful restart says, or 1001 (Going Away).
    #[serde(default = "default_close_code")]
    pub close_code: u16,
    /// Also serve WebSockets over HTTP/3 (RFC 9220) on the UDP port of the WebSocket port's
    /// number, with the `tls` certificate (a self-signed one without `tls`).
    #[serde(default)]
    pub h3: bool,
    /// Over HTTP/3, leave SETTINGS_ENABLE_CONNECT_PROTOCOL out: a plain HTTP/3 server, which
    /// refuses WebSockets (to test clients against one).
    #[serde(default)]
    pub h3_refuse_websockets: bool,
}

fn default_close_code() -> u16 {
    DEFAULT_CLOSE_CODE
}

/// The close code of SIGUSR2 by default: 1012, Service Restart.
pub const DEFAULT_CLOSE_CODE: u16 = 1012;

fn default_max_message_memory() -> u64 {
    DEFAULT_MAX_MESSAGE_MEMORY
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            host: IpAddr::from([127, 0, 0, 1]),
            port: DEFAULT_PORT,
            threads: DEFAULT_THREADS,
            processes: DEFAULT_PROCESSES,
            tls: None,
            tcp_port: None,
            max_message: DEFAULT_MAX_MESSAGE,
            max_message_memory: DEFAULT_MAX_MESSAGE_MEMORY,
            max_header_bytes: DEFAULT_MAX_HEADER_BYTES,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
            deflate: true,
            pubsub: false,
            close_code: DEFAULT_CLOSE_CODE,
            h3: false,
            h3_refuse_websockets: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_setting_reaches_a_child_server() {
        // Every field, none at its default: a new one does not compile until it is here.
        let every = ServeConfig {
            host: IpAddr::from([127, 0, 0, 2]),
            port: 5000,
            threads: 3,
            processes: 4,
            tls: Some(TlsSource::Files { cert: "c.pem".into(), key: "k.pem".into() }),
            tcp_port: Some(5001),
            max_message: 1 << 20,
            max_message_memory: 3 << 20,
            max_header_bytes: 1234,
            max_connections: usize::MAX - 1,
            handshake_timeout: Duration::from_millis(2500),
            deflate: false,
            pubsub: true,
            close_code: 1001,
            h3: true,
            h3_refuse_websockets: true,
        };
        let bytes = wsbench_supervisor::encode_settings(&every).unwrap();
        let back: ServeConfig = wsbench_supervisor::read_settings(bytes.as_slice()).unwrap();
        assert_eq!(back, every);
        let self_signed = ServeConfig { tls: Some(TlsSource::SelfSigned), ..ServeConfig::default() };
        let bytes = wsbench_supervisor::encode_settings(&self_signed).unwrap();
        assert_eq!(wsbench_supervisor::read_settings::<ServeConfig>(bytes.as_slice()).unwrap(), self_signed);
    }
}
