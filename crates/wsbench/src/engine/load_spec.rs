//! What the load engine is told to do: the handful of settings it reads, and nothing of
//! reports, result files, probes or processes. [`LoadSpec::from_config`] is the one place
//! that knows the run configuration, so the engine does not.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use rustls::ClientConfig;

use crate::config::Target;
use crate::config::{MessageKind, Payload, RunConfig, Scenario, Shard};

/// Everything the workers share, read-only.
#[derive(Debug, Clone)]
pub struct LoadSpec {
    pub scenario: Scenario,
    pub target: Target,
    /// Connections of the whole run (all shards).
    pub connections: u64,
    /// This process opens only this part of the connections.
    pub shard: Option<Shard>,
    /// New connections per second; `None`: all at once.
    pub ramp_per_sec: Option<f64>,
    pub duration: Duration,
    pub warmup: Duration,
    /// Scalability: how long the connections are held open.
    pub hold: Duration,
    /// Messages a connection may have outstanding (`u64::MAX`: no cap).
    pub in_flight: u64,
    /// Open loop: one batch per connection every interval; `None`: the closed loop.
    pub message_interval: Option<Duration>,
    pub payload: Payload,
    pub message: MessageKind,
    pub frames_per_send: u64,
    pub connect_timeout: Duration,
    /// Reopen connections the server closed or reset.
    pub reconnect: bool,
    /// Common start instant of the shards (ms since the Unix epoch).
    pub start_at_unix_ms: Option<u64>,
    /// Source addresses connections are spread over (empty: the kernel picks).
    pub source_addrs: Vec<IpAddr>,
    /// The client's TLS configuration, for a `wss://` target.
    pub tls: Option<Arc<ClientConfig>>,
}

impl LoadSpec {
    pub fn from_config(config: &RunConfig, target: Target) -> LoadSpec {
        let tls = target.tls.then(|| crate::engine::tls::client_config(config.insecure));
        LoadSpec {
            scenario: config.scenario,
            target,
            connections: config.connections,
            shard: config.shard,
            ramp_per_sec: config.ramp_per_sec,
            duration: config.duration,
            warmup: config.warmup,
            hold: config.hold,
            in_flight: config.in_flight,
            message_interval: config.message_interval,
            payload: config.payload,
            message: config.message,
            frames_per_send: config.frames_per_send,
            connect_timeout: config.connect_timeout,
            reconnect: config.reconnect,
            start_at_unix_ms: config.start_at_unix_ms,
            source_addrs: config.source_addrs.clone(),
            tls,
        }
    }
}
