//! The stream scenario's figures in the result file (`stream`): deliveries per second, each
//! subscriber's completeness against the union of ids any subscriber saw (owed, delivered,
//! missing, duplicated, late, the worst subscribers by connection), the spread from an id's
//! first receipt to each other subscriber's, and the latency from the server's timestamp.
//! Computed from the section's counters and histograms only.

use serde::{Deserialize, Serialize};

use super::section::StreamSection;
use super::window::SubscriberCount;
use crate::result::ConnectStats;

/// `stream` in the result file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamSummary {
    pub subscribers: u64,
    /// Subscribers that received at least one delivery, and those that received none.
    pub joined: u64,
    pub silent: u64,
    /// Distinct ids first received inside the measured window.
    pub ids: u64,
    /// Each measured id once per subscriber that owed it, and those received.
    pub owed: u64,
    pub delivered: u64,
    pub deliveries_per_sec: f64,
    pub missing: u64,
    pub duplicated: u64,
    /// Receipts of an id that had settled already (counted missing too).
    pub late: u64,
    pub unreadable: u64,
    pub time_unreadable: u64,
    pub time_ahead: u64,
    /// Ids settled early because the window was full.
    pub settled_early: u64,
    pub missing_subscriber_count: u64,
    pub worst_missing: Vec<SubscriberCount>,
    pub duplicated_subscriber_count: u64,
    pub worst_duplicated: Vec<SubscriberCount>,
    /// An id's first receipt → each other subscriber's (µs).
    pub spread_us: ConnectStats,
    /// The server's timestamp → receipt (µs), with `--message-time`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_latency_us: Option<ConnectStats>,
}

impl StreamSummary {
    /// `config` is the run's load (its `stream` object gives the subscribers).
    pub fn of(section: &StreamSection, config: &serde_json::Value, measured_secs: f64) -> StreamSummary {
        let counters = &section.counters;
        let tally = &counters.tally;
        let per_sec = if measured_secs > 0.0 { tally.delivered as f64 / measured_secs } else { 0.0 };
        let timed = config.get("stream").and_then(|stream| stream.get("message_time")).is_some();
        StreamSummary {
            subscribers: config.pointer("/stream/subscribers").and_then(|v| v.as_u64()).unwrap_or(0),
            joined: tally.joined,
            silent: tally.silent,
            ids: tally.ids,
            owed: tally.owed,
            delivered: tally.delivered,
            deliveries_per_sec: if per_sec.is_finite() { per_sec } else { 0.0 },
            missing: tally.missing,
            duplicated: tally.duplicated,
            late: tally.late,
            unreadable: counters.unreadable,
            time_unreadable: counters.time_unreadable,
            time_ahead: counters.time_ahead,
            settled_early: tally.settled_early,
            missing_subscriber_count: tally.missing_subscriber_count,
            worst_missing: tally.worst_missing.clone(),
            duplicated_subscriber_count: tally.duplicated_subscriber_count,
            worst_duplicated: tally.worst_duplicated.clone(),
            spread_us: ConnectStats::from_histogram(&section.spread),
            source_latency_us: timed.then(|| ConnectStats::from_histogram(&section.source_latency)),
        }
    }
}
