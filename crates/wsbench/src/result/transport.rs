//! How the run's WebSockets reached the server, as its result says it: the transport
//! (`http1`: RFC 6455's upgrade, one TCP connection each; `http2`: RFC 8441's extended
//! CONNECT, streams of shared connections; `http3`: RFC 9220's, streams of QUIC connections),
//! the TCP or QUIC connections that carried them (the QUIC ones' packets sent and lost),
//! and the WebSockets each was meant to carry. Read from the run's flags and counters only.

use serde::{Deserialize, Serialize};

use crate::metrics::Counters;

/// The transport block of a result's summary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransportSummary {
    /// `http1` or `http2`.
    pub name: String,
    /// TCP connections that connected and carried the WebSockets.
    pub tcp_connections: u64,
    /// WebSockets per connection asked for (`--streams-per-connection`; 1 for `http1`).
    pub streams_per_connection: u64,
    /// QUIC connections that connected and carried the WebSockets (`http3`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub quic_connections: u64,
    /// Packets the QUIC connections sent, and of them the ones QUIC declared lost.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub quic_packets_sent: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub quic_packets_lost: u64,
}

impl Default for TransportSummary {
    /// What a result written before the block existed ran on.
    fn default() -> TransportSummary {
        TransportSummary {
            name: default_name().to_owned(),
            tcp_connections: 0,
            streams_per_connection: 1,
            quic_connections: 0,
            quic_packets_sent: 0,
            quic_packets_lost: 0,
        }
    }
}

impl TransportSummary {
    /// The block for a run with these settings (`config`, as the result file carries
    /// them) and counters.
    pub fn of(config: &serde_json::Value, counters: &Counters) -> TransportSummary {
        let transport = config.get("transport");
        let field = |name: &str| transport.and_then(|t| t.get(name));
        TransportSummary {
            name: field("name").and_then(|n| n.as_str()).unwrap_or(default_name()).to_owned(),
            tcp_connections: counters.tcp_connections,
            streams_per_connection: field("streams_per_connection").and_then(|s| s.as_u64()).unwrap_or(1),
            quic_connections: counters.quic_connections,
            quic_packets_sent: counters.quic_packets_sent,
            quic_packets_lost: counters.quic_packets_lost,
        }
    }

    /// Whether WebSockets shared TCP connections.
    pub fn is_shared(&self) -> bool {
        self.name != default_name()
    }
}

fn is_zero(count: &u64) -> bool {
    *count == 0
}

/// The default transport's name (the registry's first): the one a run whose `config` has
/// no transport block used.
fn default_name() -> &'static str {
    crate::engine::dial::DIALS[0].name()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_counters_add_up_the_quic_connections_packets() {
        let shard = |sent: u64, lost: u64| Counters {
            quic_connections: 2,
            quic_packets_sent: sent,
            quic_packets_lost: lost,
            ..Counters::default()
        };
        let mut merged = shard(28_000, 1_000);
        merged += &shard(67, 85);
        let config = serde_json::json!({ "transport": { "name": "http3", "streams_per_connection": 50 } });
        let summary = TransportSummary::of(&config, &merged);
        assert_eq!(
            (summary.quic_connections, summary.quic_packets_sent, summary.quic_packets_lost),
            (4, 28_067, 1_085)
        );
    }
}
