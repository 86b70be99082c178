//! The report's lines for the stream scenario: the subscribers, deliveries per second,
//! completeness against the union of ids (owed, delivered, missing, duplicated, late), the
//! worst subscribers by connection, the spread from an id's first receipt, and the latency
//! from the server's timestamp. Reads only the result file.

use super::figures::StreamSummary;
use super::window::SubscriberCount;
use crate::result::{ConnectStats, RunResult};
use crate::units::format::{group, micros, plural, rate};

/// The worst subscribers the report names (the result keeps more).
const WORST_SHOWN: usize = 5;

/// `(label, text)` lines; none unless the result is a stream run.
pub fn stream_lines(result: &RunResult) -> Vec<(&'static str, String)> {
    let Some(stream) = result.figures::<StreamSummary>("stream") else { return Vec::new() };
    let id = result.config.pointer("/stream/message_id").and_then(|v| v.as_str()).unwrap_or("?");
    let heard = match stream.silent {
        0 => "each received deliveries".to_owned(),
        silent => format!("{} received deliveries, {} nothing", group(stream.joined), group(silent)),
    };
    let joined = format!("{}, {heard}; id {id}", plural(stream.subscribers, "subscriber", "subscribers"));
    let mut lines = vec![
        ("stream:", joined),
        (
            "deliveries:",
            format!(
                "{} of {} owed ({} ids), {}/s",
                group(stream.delivered),
                group(stream.owed),
                group(stream.ids),
                rate(stream.deliveries_per_sec)
            ),
        ),
        ("", completeness(&stream)),
    ];
    if stream.spread_us.count > 0 {
        lines.push(("spread:", format!("first → other subscribers: {}", percentiles(&stream.spread_us))));
    }
    if let Some(source) = stream.source_latency_us.as_ref().filter(|source| source.count > 0) {
        let mut text = format!("server timestamp → receipt: {}", percentiles(source));
        if stream.time_ahead > 0 {
            text += &format!(" ({} stamped ahead of this machine's clock)", group(stream.time_ahead));
        }
        lines.push(("from source:", text));
    }
    lines.extend(named("missing:", &stream.worst_missing, stream.missing_subscriber_count));
    lines.extend(named("duplicated:", &stream.worst_duplicated, stream.duplicated_subscriber_count));
    lines
}

fn percentiles(stats: &ConnectStats) -> String {
    format!(
        "p50 {}, p90 {}, p99 {}, max {}",
        micros(stats.p50 as f64),
        micros(stats.p90 as f64),
        micros(stats.p99 as f64),
        micros(stats.max as f64)
    )
}

/// Missing, duplicated, late and what could not be read.
fn completeness(stream: &StreamSummary) -> String {
    let mut text = format!(
        "missing {}, duplicated {}, late {}",
        group(stream.missing),
        group(stream.duplicated),
        group(stream.late)
    );
    if stream.unreadable > 0 {
        text += &format!(", {} without a readable id", group(stream.unreadable));
    }
    if stream.time_unreadable > 0 {
        text += &format!(", {} without a readable timestamp", group(stream.time_unreadable));
    }
    if stream.settled_early > 0 {
        text += &format!(
            ", {} settled early (the id window was full: fewer subscribers or a slower stream)",
            plural(stream.settled_early, "id", "ids")
        );
    }
    text
}

/// `label` naming the worst subscribers (of `count` in all), if any.
fn named(label: &'static str, worst: &[SubscriberCount], count: u64) -> Option<(&'static str, String)> {
    if count == 0 {
        return None;
    }
    let shown: Vec<String> =
        worst.iter().take(WORST_SHOWN).map(|s| format!("#{} ×{}", s.connection, group(s.count))).collect();
    let more = count.saturating_sub(shown.len() as u64);
    let tail = if more > 0 { format!(", and {} more", group(more)) } else { String::new() };
    Some((label, format!("{}{tail}", shown.join(", "))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worst_subscribers_are_named_and_the_rest_counted() {
        let worst: Vec<SubscriberCount> =
            (0..7).map(|n| SubscriberCount { connection: 10 + n, count: 9 - n }).collect();
        let line = named("missing:", &worst, 30).unwrap();
        assert_eq!(line.1, "#10 ×9, #11 ×8, #12 ×7, #13 ×6, #14 ×5, and 25 more");
        assert_eq!(named("duplicated:", &[], 0), None);
    }
}
