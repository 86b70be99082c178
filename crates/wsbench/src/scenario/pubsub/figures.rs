//! The pubsub scenario's figures in the result file: deliveries per second, the
//! fan-out's completeness (expected vs delivered, lost, duplicated, out of order), the
//! subscribers that came up short, by connection index, and the spread between a
//! publish's first and last subscriber. Computed from the counters and histograms only, so
//! a merge of shards recomputes them from merged inputs.

use serde::{Deserialize, Serialize};

use super::section::{PubSubSection, SlowSubscriber};
use crate::result::ConnectStats;

/// How many short subscribers the result names (all are counted).
pub const SHORT_SUBSCRIBERS_LISTED: usize = 20;

/// `pubsub` in the result file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PubSubSummary {
    pub subscribers: u64,
    pub topics: u64,
    pub publishers: u64,
    /// Subscriptions the server acknowledged.
    pub subscribed: u64,
    /// Publishes due inside the measured window.
    pub published: u64,
    /// Each acknowledged subscriber times its topic's measured publishes.
    pub expected_deliveries: u64,
    /// Measured publishes received, each once per subscriber.
    pub delivered: u64,
    pub deliveries_per_sec: f64,
    /// Expected deliveries that did not come: lost, or (when `cut_off`) still on their way
    /// when the run stopped.
    pub lost: u64,
    /// The run stopped while deliveries were still arriving (the server had fallen behind
    /// and the drain at the end ran out).
    pub cut_off: bool,
    pub duplicated: u64,
    pub out_of_order: u64,
    pub unexpected: u64,
    pub subscribe_failures: u64,
    /// First subscriber's receipt → last subscriber's, per measured publish (µs).
    pub spread_us: ConnectStats,
    /// Subscribers that received fewer than their topic's publishes.
    pub short_subscriber_count: u64,
    /// The first [`SHORT_SUBSCRIBERS_LISTED`] of them, by connection index.
    pub short_subscribers: Vec<ShortSubscriber>,
    /// Subscribers that received duplicates, and out-of-order deliveries: how many, and the
    /// first [`SHORT_SUBSCRIBERS_LISTED`] by connection index with their counts.
    #[serde(default)]
    pub duplicated_subscriber_count: u64,
    #[serde(default)]
    pub duplicated_subscribers: Vec<SubscriberCount>,
    #[serde(default)]
    pub out_of_order_subscriber_count: u64,
    #[serde(default)]
    pub out_of_order_subscribers: Vec<SubscriberCount>,
    /// The slowest subscribers by p99 of their measured deliveries, slowest first.
    #[serde(default)]
    pub slowest_subscribers: Vec<SlowSubscriber>,
    /// With `--reconnect`: measured publishes due while their publisher was disconnected
    /// (never sent: not in `published`, no delivery expected), and subscriptions made again.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub not_sent: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub resubscribed: u64,
    /// Measured publishes lost with their publisher's connection before the server
    /// acknowledged them (not in `published`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unacknowledged: u64,
}

fn is_zero(count: &u64) -> bool {
    *count == 0
}

/// A subscriber's connection index and how many deliveries of a kind it had.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubscriberCount {
    pub connection: u64,
    pub count: u64,
}

/// The first [`SHORT_SUBSCRIBERS_LISTED`] of `by_connection`.
fn first_listed(by_connection: &std::collections::BTreeMap<u64, u64>) -> Vec<SubscriberCount> {
    let listed = by_connection.iter().take(SHORT_SUBSCRIBERS_LISTED);
    listed.map(|(&connection, &count)| SubscriberCount { connection, count }).collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShortSubscriber {
    /// The subscriber's connection index (`{conn}` in `--header`).
    pub connection: u64,
    pub topic: u64,
    pub expected: u64,
    pub received: u64,
}

impl PubSubSummary {
    /// `config` is the run's load (its `pubsub` object gives the shape).
    pub fn of(section: &PubSubSection, config: &serde_json::Value, measured_secs: f64) -> PubSubSummary {
        let shape =
            |key: &str| config.get("pubsub").and_then(|p| p.get(key)).and_then(|v| v.as_u64()).unwrap_or(0);
        let counters = &section.counters;
        let delivered = counters.delivered();
        let short: Vec<ShortSubscriber> = counters
            .received
            .iter()
            .filter(|&(_, &(topic, received))| counters.lost_by(topic, received) > 0)
            .map(|(&connection, &(topic, received))| ShortSubscriber {
                connection,
                topic,
                expected: counters.lost_by(topic, received) + received,
                received,
            })
            .collect();
        let per_sec = if measured_secs > 0.0 { delivered as f64 / measured_secs } else { 0.0 };
        PubSubSummary {
            subscribers: shape("subscribers"),
            topics: shape("topics"),
            publishers: shape("publishers"),
            subscribed: counters.received.len() as u64,
            published: counters.published.values().sum(),
            expected_deliveries: counters.expected(),
            delivered,
            deliveries_per_sec: if per_sec.is_finite() { per_sec } else { 0.0 },
            lost: counters.lost(),
            cut_off: counters.cut_off > 0,
            duplicated: counters.duplicates,
            out_of_order: counters.out_of_order,
            unexpected: counters.unexpected,
            subscribe_failures: counters.subscribe_failures,
            spread_us: ConnectStats::from_histogram(&section.spread),
            short_subscriber_count: short.len() as u64,
            short_subscribers: short.into_iter().take(SHORT_SUBSCRIBERS_LISTED).collect(),
            duplicated_subscriber_count: counters.duplicated_by.len() as u64,
            duplicated_subscribers: first_listed(&counters.duplicated_by),
            out_of_order_subscriber_count: counters.out_of_order_by.len() as u64,
            out_of_order_subscribers: first_listed(&counters.out_of_order_by),
            slowest_subscribers: counters.slowest.clone(),
            not_sent: counters.not_sent,
            resubscribed: counters.resubscribed,
            unacknowledged: counters.unacknowledged,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::pubsub::section::PubSubCounters;

    fn section_of(counters: PubSubCounters) -> PubSubSection {
        PubSubSection { counters, ..PubSubSection::default() }
    }

    #[test]
    fn completeness_names_the_subscribers_that_came_up_short() {
        let pubsub = PubSubCounters {
            published: [(0, 100), (1, 50)].into(),
            received: [(0, (0, 100)), (1, (1, 50)), (2, (0, 0)), (3, (1, 49))].into(),
            duplicates: 2,
            ..PubSubCounters::default()
        };
        let config = serde_json::json!({"pubsub": {"subscribers": 4, "topics": 2, "publishers": 2}});
        let summary = PubSubSummary::of(&section_of(pubsub), &config, 2.0);
        assert_eq!((summary.subscribers, summary.topics, summary.publishers), (4, 2, 2));
        assert_eq!((summary.published, summary.expected_deliveries, summary.delivered), (150, 300, 199));
        assert_eq!((summary.lost, summary.duplicated, summary.subscribed), (101, 2, 4));
        assert_eq!(summary.deliveries_per_sec, 99.5);
        assert_eq!(
            summary.short_subscribers,
            [
                ShortSubscriber { connection: 2, topic: 0, expected: 100, received: 0 },
                ShortSubscriber { connection: 3, topic: 1, expected: 50, received: 49 },
            ]
        );
    }

    /// Two shards' counters, added, account as one run: the publishes of one shard are
    /// what the other shard's subscribers expect.
    #[test]
    fn shards_add_up_before_the_accounting() {
        let publishers_shard = PubSubCounters {
            published: [(0, 10)].into(),
            received: [(0, (0, 10))].into(),
            ..Default::default()
        };
        let subscribers_shard =
            PubSubCounters { received: [(1, (0, 10)), (3, (0, 7))].into(), ..Default::default() };
        let mut merged = publishers_shard.clone();
        merged += &subscribers_shard;
        assert_eq!((merged.expected(), merged.delivered(), merged.lost()), (30, 27, 3));
        assert_eq!(subscribers_shard.lost(), 0, "alone, a shard without publishers expects nothing");
    }
}
