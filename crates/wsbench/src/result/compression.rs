//! The result's permessage-deflate block: what was negotiated and what it saved, as wire
//! bytes (what crossed the socket, frames and handshake included) against payload bytes
//! (the messages before compression). Present only when the run negotiated compression, so
//! results of uncompressed runs are unchanged.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::ByteCounts;
use crate::metrics::Counters;

/// permessage-deflate as the run saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompressionSummary {
    /// Connections by the server's `Sec-WebSocket-Extensions` answer.
    pub negotiated: BTreeMap<String, u64>,
    /// Echoes that arrived compressed (RSV1 set).
    pub compressed_messages_received: u64,
    pub payload_bytes: ByteCounts,
    pub wire_bytes: ByteCounts,
    /// Wire bytes per payload byte, each way (below 1: compression saved bytes).
    pub ratio_sent: f64,
    pub ratio_received: f64,
}

impl CompressionSummary {
    /// The block for these counters, or `None` when no connection negotiated compression.
    pub fn of(counters: &Counters) -> Option<CompressionSummary> {
        if counters.compression_negotiated.is_empty() {
            return None;
        }
        let ratio = |wire: u64, payload: u64| if payload == 0 { 0.0 } else { wire as f64 / payload as f64 };
        Some(CompressionSummary {
            negotiated: counters.compression_negotiated.clone(),
            compressed_messages_received: counters.compressed_messages_received,
            payload_bytes: ByteCounts {
                sent: counters.payload_bytes_sent,
                received: counters.payload_bytes_received,
            },
            wire_bytes: ByteCounts { sent: counters.bytes_sent, received: counters.bytes_received },
            ratio_sent: ratio(counters.bytes_sent, counters.payload_bytes_sent),
            ratio_received: ratio(counters.bytes_received, counters.payload_bytes_received),
        })
    }
}
