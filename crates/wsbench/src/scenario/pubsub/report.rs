//! The report's lines for the pubsub scenario: the fan-out's shape, deliveries
//! per second, completeness (expected, delivered, lost, duplicated, out of order), the
//! spread between a publish's first and last subscriber, and the subscribers that came up
//! short, by connection index. Reads only the result file.

use super::figures::{PubSubSummary, SubscriberCount};
use crate::result::RunResult;
use crate::units::format::{group, micros, plural, rate};

/// `(label, text)` lines; none unless the result is a pubsub run.
pub fn pubsub_lines(result: &RunResult) -> Vec<(&'static str, String)> {
    let Some(pubsub) = result.figures::<PubSubSummary>("pubsub") else { return Vec::new() };
    let pubsub = &pubsub;
    let spread = &pubsub.spread_us;
    let mut lines = vec![
        (
            "pubsub:",
            format!(
                "{} → {} on {}; {} acknowledged",
                plural(pubsub.publishers, "publisher", "publishers"),
                plural(pubsub.subscribers, "subscriber", "subscribers"),
                plural(pubsub.topics, "topic", "topics"),
                group(pubsub.subscribed)
            ),
        ),
        (
            "deliveries:",
            format!(
                "{} of {} expected ({} publishes), {}/s",
                group(pubsub.delivered),
                group(pubsub.expected_deliveries),
                group(pubsub.published),
                rate(pubsub.deliveries_per_sec)
            ),
        ),
        ("", completeness(pubsub, result.config["protocol"].as_str().unwrap_or(crate::protocol::DEFAULT))),
    ];
    if let Some(text) = reconnects_line(pubsub) {
        lines.push(("reconnects:", text));
    }
    if spread.count > 0 {
        let text = format!(
            "first → last subscriber: p50 {}, p90 {}, p99 {}, max {}",
            micros(spread.p50 as f64),
            micros(spread.p90 as f64),
            micros(spread.p99 as f64),
            micros(spread.max as f64)
        );
        lines.push(("spread:", text));
    }
    let short = pubsub
        .short_subscribers
        .iter()
        .map(|s| format!("#{} (t{}) {} of {}", s.connection, s.topic, group(s.received), group(s.expected)));
    lines.extend(named_line("short:", short, pubsub.short_subscriber_count));
    let counted = |listed: &[SubscriberCount]| -> Vec<String> {
        listed.iter().map(|s| format!("#{} ×{}", s.connection, group(s.count))).collect()
    };
    let duplicated = counted(&pubsub.duplicated_subscribers);
    lines.extend(named_line("duplicated:", duplicated.into_iter(), pubsub.duplicated_subscriber_count));
    let reordered = counted(&pubsub.out_of_order_subscribers);
    lines.extend(named_line("out of order:", reordered.into_iter(), pubsub.out_of_order_subscriber_count));
    if pubsub.slowest_subscribers.len() > 1 {
        let slowest: Vec<String> = pubsub
            .slowest_subscribers
            .iter()
            .take(SLOWEST_SHOWN)
            .map(|s| {
                format!(
                    "#{} (t{}) p99 ≤ {}, max {}",
                    s.connection,
                    s.topic,
                    micros(s.p99_us_at_most as f64),
                    micros(s.max_us as f64)
                )
            })
            .collect();
        lines.push(("slowest:", slowest.join(", ")));
    }
    lines
}

/// With `--reconnect`: subscriptions made again, and the publishes never sent or never
/// acknowledged by a server that went away.
fn reconnects_line(pubsub: &PubSubSummary) -> Option<String> {
    if pubsub.not_sent == 0 && pubsub.resubscribed == 0 && pubsub.unacknowledged == 0 {
        return None;
    }
    let mut text = format!(
        "{} made again; {} fell due while their publisher was disconnected (never sent, so \
         no delivery is expected of them)",
        plural(pubsub.resubscribed, "subscription", "subscriptions"),
        plural(pubsub.not_sent, "publish", "publishes")
    );
    if pubsub.unacknowledged > 0 {
        text += &format!(
            "; {} unacknowledged when the connection was lost (counted as not taken)",
            plural(pubsub.unacknowledged, "publish", "publishes")
        );
    }
    Some(text)
}

/// The slowest subscribers the report names (the result keeps more).
const SLOWEST_SHOWN: usize = 5;

/// `label` naming the subscribers `listed` (of `count` in all), if any.
fn named_line(
    label: &'static str,
    listed: impl Iterator<Item = String>,
    count: u64,
) -> Option<(&'static str, String)> {
    let named: Vec<String> = listed.collect();
    if count == 0 {
        return None;
    }
    let more = count.saturating_sub(named.len() as u64);
    let tail = if more > 0 { format!(", and {} more", group(more)) } else { String::new() };
    Some((label, format!("{}{tail}", named.join(", "))))
}

/// Lost, duplicated, out of order and the rest; `protocol`: what the run spoke.
fn completeness(pubsub: &PubSubSummary, protocol: &str) -> String {
    let missing = match pubsub.cut_off && pubsub.lost > 0 {
        false => format!("lost {}", group(pubsub.lost)),
        true => format!(
            "undelivered {} (the server was still delivering when the run stopped: behind \
             schedule, not known lost; lower --rate)",
            group(pubsub.lost)
        ),
    };
    let mut text = format!(
        "{missing}, duplicated {}, out of order {}",
        group(pubsub.duplicated),
        group(pubsub.out_of_order)
    );
    if pubsub.unexpected > 0 {
        text += &format!(", unexpected {}", group(pubsub.unexpected));
    }
    if pubsub.subscribe_failures > 0 {
        let spoken = match protocol {
            crate::protocol::DEFAULT => "the pub/sub of docs/protocols.md".to_owned(),
            other => format!("--protocol {other}"),
        };
        text += &format!(
            ", {} not acknowledged (does the server speak {spoken}?)",
            plural(pubsub.subscribe_failures, "subscription", "subscriptions")
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::pubsub::figures::ShortSubscriber;

    #[test]
    fn short_subscribers_are_named_and_the_rest_counted() {
        let summary = PubSubSummary {
            subscribers: 3,
            topics: 1,
            publishers: 1,
            subscribed: 3,
            published: 10,
            expected_deliveries: 30,
            delivered: 20,
            deliveries_per_sec: 10.0,
            lost: 10,
            cut_off: false,
            duplicated: 0,
            out_of_order: 1,
            unexpected: 0,
            subscribe_failures: 2,
            spread_us: Default::default(),
            short_subscriber_count: 2,
            short_subscribers: vec![ShortSubscriber { connection: 1, topic: 0, expected: 10, received: 0 }],
            duplicated_subscriber_count: 0,
            duplicated_subscribers: Vec::new(),
            out_of_order_subscriber_count: 1,
            out_of_order_subscribers: vec![SubscriberCount { connection: 2, count: 1 }],
            slowest_subscribers: Vec::new(),
            not_sent: 0,
            resubscribed: 0,
            unacknowledged: 0,
        };
        assert_eq!(
            completeness(&summary, "raw"),
            "lost 10, duplicated 0, out of order 1, 2 subscriptions not acknowledged (does the server \
             speak the pub/sub of docs/protocols.md?)"
        );
        assert!(completeness(&summary, "mqtt").ends_with("(does the server speak --protocol mqtt?)"));
        let mut result = RunResult::from_outcome(&crate::fixture::closed_loop());
        result.scenario_figures.insert("pubsub".to_owned(), serde_json::to_value(summary).unwrap());
        let lines = pubsub_lines(&result);
        assert!(lines.contains(&("short:", "#1 (t0) 0 of 10, and 1 more".to_owned())), "{lines:?}");
        assert_eq!(lines.last().unwrap(), &("out of order:", "#2 ×1".to_owned()));
        assert!(!lines.iter().any(|(label, _)| *label == "duplicated:"), "none duplicated, no line");
        assert!(!lines.iter().any(|(label, _)| *label == "spread:"), "no spread without deliveries");
    }
}
