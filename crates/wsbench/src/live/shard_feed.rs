//! A `--processes` shard's seconds, handed to its parent: one line per second on the
//! shard's stdout (a pipe only the parent reads), holding the second's counts, the shard's
//! counters so far and the second's latency histogram encoded losslessly, so that the
//! parent's one line for every shard has exact percentiles ([`super::shards`] sums them
//! up). Never shown to a user: the shard shows no progress of its own.

use std::collections::BTreeMap;
use std::io::Write;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::{Second, Steps};
use crate::engine::Phase;
use crate::metrics::{Counters, Interval};
use crate::result::{decode_histogram, encode_histogram};

/// What opens a line of the feed; the shard's other stdout lines (its own report) are not
/// the parent's concern.
pub const MARK: &str = "wsbench-shard-second ";

/// One second of one shard, as the parent reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardSecond {
    /// The measurement (an unmeasured warm-up run is 0, the measured run 1).
    pub step: u64,
    pub second: u64,
    pub phase: Phase,
    /// With `--stages`, the stage (from 1) the second falls in.
    pub stage: Option<u64>,
    pub round_trips: u64,
    pub connections_open: u64,
    /// Replies were awaited when the second began.
    pub awaiting: bool,
    /// Attempts to reopen lost connections started in this second.
    pub reconnects: u64,
    pub remaining_secs: Option<u64>,
    /// The shard's counters and errors so far.
    pub counters: Counters,
    pub errors: BTreeMap<String, u64>,
    /// The latency of this second's round trips.
    pub latency: Histogram<u64>,
}

/// The line as written.
#[derive(Debug, Serialize, Deserialize)]
struct Wire {
    step: u64,
    second: u64,
    phase: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stage: Option<u64>,
    round_trips: u64,
    connections_open: u64,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    awaiting: bool,
    #[serde(default, skip_serializing_if = "crate::metrics::is_zero")]
    reconnects: u64,
    remaining_secs: Option<u64>,
    counters: Counters,
    errors: BTreeMap<String, u64>,
    /// HdrHistogram V2 + DEFLATE, base64 (as in result files).
    latency: String,
}

/// The shard's side: writes each second to stdout.
#[derive(Debug, Default)]
pub struct Feed {
    steps: Steps,
}

impl Feed {
    /// Writes `second` (made of `interval`) as one flushed line; a closed pipe (the parent
    /// is gone) ends the feed, not the run.
    pub fn write(&mut self, second: &Second, interval: &Interval) {
        let line = line(second, interval, self.steps.of(second.second));
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}").and_then(|()| out.flush());
    }
}

/// The feed's line for `second` of measurement `step`.
pub fn line(second: &Second, interval: &Interval, step: u64) -> String {
    let wire = Wire {
        step,
        second: second.second,
        phase: second.phase.name().to_owned(),
        stage: second.stage,
        round_trips: second.round_trips,
        connections_open: second.connections_open,
        awaiting: second.awaiting,
        reconnects: second.reconnects,
        remaining_secs: second.remaining_secs,
        counters: second.counters.clone(),
        errors: second.errors.clone(),
        latency: encode_histogram(&interval.latency),
    };
    // Plain data: serializing it cannot fail.
    format!("{MARK}{}", serde_json::to_string(&wire).unwrap_or_default())
}

/// A line of a shard's stdout: its second, or `None` for any other line.
pub fn parse(line: &str) -> Option<ShardSecond> {
    let wire: Wire = serde_json::from_str(line.strip_prefix(MARK)?).ok()?;
    Some(ShardSecond {
        step: wire.step,
        second: wire.second,
        phase: Phase::ALL.into_iter().find(|phase| phase.name() == wire.phase)?,
        stage: wire.stage,
        round_trips: wire.round_trips,
        connections_open: wire.connections_open,
        awaiting: wire.awaiting,
        reconnects: wire.reconnects,
        remaining_secs: wire.remaining_secs,
        counters: wire.counters,
        errors: wire.errors,
        latency: decode_histogram("latency", &wire.latency).ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::record_us;

    #[test]
    fn a_second_travels_whole_and_other_lines_are_not_seconds() {
        let mut interval = Interval::new(3);
        for us in [100, 200, 300, 40_000] {
            record_us(&mut interval.latency, us);
        }
        interval.exchanges = 4;
        interval.connections_open = 20;
        let second =
            Second { second: 3, round_trips: 4, connections_open: 20, ..super::super::view::tests::second() };
        let read = parse(&line(&second, &interval, 1)).unwrap();
        assert_eq!((read.step, read.second, read.phase), (1, 3, Phase::Measured));
        assert_eq!((read.round_trips, read.connections_open, read.remaining_secs), (4, 20, Some(3)));
        assert_eq!(read.counters, second.counters);
        assert_eq!(read.errors, second.errors);
        assert_eq!(read.latency, interval.latency);
        assert_eq!(parse("wsbench echo → ws://127.0.0.1:1 (built-in server)"), None);
        assert_eq!(parse(&format!("{MARK}{{not json")), None);
    }
}
