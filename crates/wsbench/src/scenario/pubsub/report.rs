//! The report's lines for the pubsub scenario: the fan-out's shape, deliveries
//! per second, completeness (expected, delivered, lost, duplicated, out of order), the
//! spread between a publish's first and last subscriber, and the subscribers that came up
//! short, by connection index. Reads only the result file.

use super::figures::PubSubSummary;
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
        ("", completeness(pubsub)),
    ];
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
    if pubsub.short_subscriber_count > 0 {
        let named: Vec<String> = pubsub
            .short_subscribers
            .iter()
            .map(|s| {
                format!("#{} (t{}) {} of {}", s.connection, s.topic, group(s.received), group(s.expected))
            })
            .collect();
        let more = pubsub.short_subscriber_count - pubsub.short_subscribers.len() as u64;
        let tail = if more > 0 { format!(", and {} more", group(more)) } else { String::new() };
        lines.push(("short:", format!("{}{tail}", named.join(", "))));
    }
    lines
}

fn completeness(pubsub: &PubSubSummary) -> String {
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
        text += &format!(
            ", {} not acknowledged (does the server speak docs/protocols.md?)",
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
        };
        assert_eq!(
            completeness(&summary),
            "lost 10, duplicated 0, out of order 1, 2 subscriptions not acknowledged (does the server \
             speak docs/protocols.md?)"
        );
        let mut result = RunResult::from_outcome(&crate::fixture::closed_loop());
        result.scenario_figures.insert("pubsub".to_owned(), serde_json::to_value(summary).unwrap());
        let lines = pubsub_lines(&result);
        assert_eq!(lines.last().unwrap(), &("short:", "#1 (t0) 0 of 10, and 1 more".to_owned()));
        assert!(!lines.iter().any(|(label, _)| *label == "spread:"), "no spread without deliveries");
    }
}
