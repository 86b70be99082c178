//! The live view of a `--processes` run: ONE line a second for all its shards, however many
//! (a million connections take ~55 client processes here), instead of one line per shard
//! per second. Each shard hands its seconds to the parent ([`super::shard_feed`]); a second
//! is shown once every running shard has reported it, or once some shard is
//! [`BEHIND_AFTER`] seconds past it (the late ones are then counted as behind and their
//! latest second stands in). Counts are sums, percentiles come from the shards' merged
//! histograms, and the line ends with the shard count and the lowest–highest shard. The
//! same second goes to `--stream` and `--metrics-addr` ([`super::Publisher`]). What the
//! shards say on stderr is forwarded once: the same line from another shard is only
//! counted, and said with its count when the run ends.

use std::collections::BTreeMap;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;

use hdrhistogram::Histogram;

use super::shard_feed::{ShardSecond, parse};
use super::view::View;
use super::{Publisher, Second, ShardSpread};
use crate::metrics::{Counters, new_histogram};

/// A second is shown without the shards that have not reported it once another shard is
/// this many seconds further.
pub const BEHIND_AFTER: u64 = 2;

/// A second, as (measurement, second since its start).
type Key = (u64, u64);

/// One second of every shard, summed up.
#[derive(Debug)]
pub struct Summed {
    /// The measurement it belongs to (an unmeasured warm-up run is 0, the measured run 1).
    pub step: u64,
    pub second: Second,
    /// The latency of its round trips, merged over the shards.
    pub latency: Histogram<u64>,
}

/// The shards' seconds, summed up in order.
#[derive(Debug)]
pub struct ShardSeconds {
    /// The latest second each shard reported, and its report.
    latest: Vec<Option<ShardSecond>>,
    ended: Vec<bool>,
    /// Seconds reported by some shards and not shown yet: each shard's report, by shard.
    pending: BTreeMap<Key, Vec<Option<ShardSecond>>>,
    /// The last second shown.
    shown: Option<Key>,
}

impl ShardSeconds {
    pub fn new(count: usize) -> ShardSeconds {
        ShardSeconds {
            latest: vec![None; count],
            ended: vec![false; count],
            pending: BTreeMap::new(),
            shown: None,
        }
    }

    /// Shard `shard` reported `report`: the seconds now ready, in order.
    pub fn add(&mut self, shard: usize, report: ShardSecond) -> Vec<Summed> {
        let Some(latest) = self.latest.get_mut(shard) else { return Vec::new() };
        let key = (report.step, report.second);
        // A second already shown (this shard was behind) is not shown again.
        if self.shown.is_none_or(|shown| key > shown) {
            let count = self.ended.len();
            self.pending.entry(key).or_insert_with(|| vec![None; count])[shard] = Some(report.clone());
        }
        *latest = Some(report);
        self.ready()
    }

    /// Shard `shard` ended (its pipe closed): the seconds now ready.
    pub fn end(&mut self, shard: usize) -> Vec<Summed> {
        if let Some(ended) = self.ended.get_mut(shard) {
            *ended = true;
        }
        self.ready()
    }

    fn key_of(&self, shard: usize) -> Option<Key> {
        self.latest[shard].as_ref().map(|s| (s.step, s.second))
    }

    /// Pops every second that is complete, or that a shard is [`BEHIND_AFTER`] seconds past.
    fn ready(&mut self) -> Vec<Summed> {
        let mut shown = Vec::new();
        while let Some((&key, _)) = self.pending.first_key_value() {
            let running: Vec<usize> = (0..self.ended.len()).filter(|&i| !self.ended[i]).collect();
            let behind = running.iter().filter(|&&i| self.key_of(i).is_none_or(|at| at < key)).count();
            let far = (key.0, key.1 + BEHIND_AFTER);
            let overtaken = running.iter().any(|&i| self.key_of(i).is_some_and(|at| at >= far));
            if behind > 0 && !overtaken {
                break;
            }
            let Some((_, reports)) = self.pending.pop_first() else { break };
            self.shown = Some(key);
            // Shards that reported this second count even if they ended since.
            let counted = (0..self.ended.len()).filter(|&i| reports[i].is_some() || !self.ended[i]).count();
            shown.push(self.sum(key, &reports, counted as u64, behind as u64));
        }
        shown
    }

    /// One second of every shard: those that reported it, and the latest of the others.
    fn sum(&self, key: Key, reports: &[Option<ShardSecond>], running: u64, behind: u64) -> Summed {
        let mut latency = new_histogram();
        let mut counters = Counters::default();
        let mut errors: BTreeMap<String, u64> = BTreeMap::new();
        let (mut round_trips, mut open, mut awaiting, mut reconnects) = (0, 0, false, 0);
        let (mut rates, mut opens) = (Vec::new(), Vec::new());
        for ((report, latest), ended) in reports.iter().zip(&self.latest).zip(&self.ended) {
            let Some(at) = report.as_ref().or(latest.as_ref()) else { continue };
            counters += &at.counters;
            for (kind, count) in &at.errors {
                *errors.entry(kind.clone()).or_default() += count;
            }
            // A shard that ended holds no connection any more.
            if report.is_some() || !ended {
                open += at.connections_open;
                opens.push(at.connections_open);
            }
            if let Some(report) = report {
                round_trips += report.round_trips;
                awaiting |= report.awaiting;
                reconnects += report.reconnects;
                rates.push(report.round_trips);
                // Both come from wsbench's own bounds.
                let _ = latency.add(&report.latency);
            }
        }
        let first = reports.iter().flatten().next();
        let quantile = |q: f64| if latency.is_empty() { 0 } else { latency.value_at_quantile(q) };
        let range = |values: &[u64]| {
            (values.iter().copied().min().unwrap_or(0), values.iter().copied().max().unwrap_or(0))
        };
        let second = Second {
            second: key.1,
            phase: first.map_or(crate::engine::Phase::Ramp, |s| s.phase),
            stage: first.and_then(|s| s.stage),
            round_trips,
            connections_open: open,
            awaiting,
            reconnects,
            stall_s: 0,
            p50_us: quantile(0.5),
            p90_us: quantile(0.9),
            p99_us: quantile(0.99),
            max_us: if latency.is_empty() { 0 } else { latency.max() },
            counters,
            errors,
            remaining_secs: reports.iter().flatten().filter_map(|s| s.remaining_secs).max(),
            shards: Some(ShardSpread { running, behind, rate: range(&rates), open: range(&opens) }),
        };
        Summed { step: key.0, second, latency }
    }
}

/// What a shard's pipes said.
#[derive(Debug)]
pub enum ShardEvent {
    /// A line of its stdout (a second, or anything else, which is dropped).
    Stdout(usize, String),
    /// A line of its stderr, forwarded once.
    Stderr(usize, String),
    /// Its stdout closed: it ended.
    Ended(usize),
}

/// The parent's view of its shards: events in, one line a second out.
#[derive(Debug)]
pub struct ShardsView {
    events: Sender<ShardEvent>,
    thread: JoinHandle<()>,
}

impl ShardsView {
    /// Shows `count` shards' seconds (whose exchanges are called `exchanges`) unless
    /// `quiet`, and writes them through `publisher`; their stderr lines either way.
    pub fn start(count: usize, exchanges: &'static str, quiet: bool, publisher: Publisher) -> ShardsView {
        let (events, received) = channel();
        let thread = std::thread::spawn(move || follow(&received, count, (exchanges, quiet), publisher));
        ShardsView { events, thread }
    }

    /// Where a shard's pipe readers send what they read.
    pub fn events(&self) -> Sender<ShardEvent> {
        self.events.clone()
    }

    /// Waits until every shard's stdout has closed (each reader sent [`ShardEvent::Ended`]).
    pub fn finish(self) {
        drop(self.events);
        let _ = self.thread.join();
    }
}

fn follow(
    received: &Receiver<ShardEvent>,
    count: usize,
    (exchanges, quiet): (&'static str, bool),
    mut publisher: Publisher,
) {
    let mut seconds = ShardSeconds::new(count);
    let mut view = (!quiet).then(|| View::start(exchanges));
    let mut step = 0;
    // Each different stderr line: the first shard that said it and how many did.
    let mut said: BTreeMap<String, (usize, u64)> = BTreeMap::new();
    let mut ended = 0;
    while ended < count {
        let Ok(event) = received.recv() else { break };
        let mut shown = match event {
            ShardEvent::Stdout(shard, line) => parse(&line).map_or_else(Vec::new, |s| seconds.add(shard, s)),
            ShardEvent::Ended(shard) => {
                ended += 1;
                seconds.end(shard)
            }
            ShardEvent::Stderr(shard, line) => {
                let seen = said.entry(line.clone()).or_insert((shard, 0));
                seen.1 += 1;
                if seen.1 == 1 {
                    note(view.as_ref(), &format!("[shard {shard}/{count}] {line}"));
                }
                Vec::new()
            }
        };
        for summed in &mut shown {
            // Each measurement's page counts from nothing, as a tracker's does.
            if summed.step != step {
                step = summed.step;
                publisher.restart();
            }
            publisher.write(&mut summed.second, &summed.latency);
        }
        if let Some(last) = shown.last() {
            publisher.publish(last.second.second + 1);
        }
        if let Some(view) = &mut view {
            shown.iter().for_each(|summed| view.second(&summed.second));
        }
    }
    if let Some(view) = view {
        view.finish();
    }
    publisher.flush();
    for (line, (shard, times)) in said.into_iter().filter(|(_, (_, times))| *times > 1) {
        eprintln!("[shard {shard}/{count} and {} more] {line}", times - 1);
    }
}

fn note(view: Option<&View>, line: &str) {
    match view {
        Some(view) => view.note(line),
        None => eprintln!("{line}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Phase;
    use crate::metrics::record_us;

    fn report(step: u64, second: u64, round_trips: u64, latency_us: u64) -> ShardSecond {
        let mut latency = new_histogram();
        for _ in 0..round_trips {
            record_us(&mut latency, latency_us);
        }
        ShardSecond {
            step,
            second,
            phase: Phase::Measured,
            stage: None,
            round_trips,
            connections_open: 10,
            awaiting: false,
            reconnects: 0,
            remaining_secs: Some(5 - second),
            counters: Counters {
                connections_attempted: 10,
                connections_established: 10,
                ..Counters::default()
            },
            errors: BTreeMap::new(),
            latency,
        }
    }

    #[test]
    fn a_second_is_shown_once_when_every_shard_has_it_summed_with_merged_percentiles() {
        let mut seconds = ShardSeconds::new(3);
        assert!(seconds.add(0, report(0, 0, 100, 1_000)).is_empty());
        assert!(seconds.add(2, report(0, 0, 100, 1_000)).is_empty());
        let shown = seconds.add(1, report(0, 0, 50, 9_000));
        assert_eq!(shown.len(), 1);
        assert_eq!(shown[0].latency.len(), 250, "the shards' histograms merged");
        let second = &shown[0].second;
        assert_eq!((second.second, second.round_trips, second.connections_open), (0, 250, 30));
        assert_eq!(second.counters.connections_established, 30);
        // 200 of 250 at 1 ms: the merged p50 is 1 ms, its p99 the slow shard's 9 ms.
        assert_eq!((second.p50_us / 100, second.p99_us / 100), (10, 90));
        let spread = second.shards.unwrap();
        assert_eq!((spread.running, spread.behind, spread.rate, spread.open), (3, 0, (50, 100), (10, 10)));
    }

    #[test]
    fn a_shard_far_behind_is_counted_behind_and_its_late_second_not_shown_again() {
        let mut seconds = ShardSeconds::new(2);
        let mut shown = Vec::new();
        for second in 0..=BEHIND_AFTER {
            shown.extend(seconds.add(0, report(0, second, 10, 500)));
        }
        assert_eq!(shown.len(), 1, "second 0 waited until shard 0 was {BEHIND_AFTER} s further");
        assert_eq!(shown[0].second.shards.unwrap().behind, 1);
        assert_eq!(shown[0].second.round_trips, 10);
        // Shard 1 catches up: its second 0 is late, seconds 1 and 2 are whole.
        let caught_up: Vec<Summed> =
            (0..=BEHIND_AFTER).flat_map(|second| seconds.add(1, report(0, second, 10, 500))).collect();
        assert_eq!(
            caught_up.iter().map(|s| (s.second.second, s.second.round_trips)).collect::<Vec<_>>(),
            [(1, 20), (2, 20)]
        );
    }

    #[test]
    fn an_ended_shard_is_not_waited_for_and_a_new_step_follows_the_last() {
        let mut seconds = ShardSeconds::new(2);
        assert!(seconds.add(0, report(0, 3, 10, 500)).is_empty());
        let shown = seconds.end(1);
        assert_eq!(shown.len(), 1);
        assert_eq!(shown[0].second.shards.unwrap().running, 1);
        // The measured run after an unmeasured warm-up counts from 0 again.
        let next = seconds.add(0, report(1, 0, 10, 500));
        assert_eq!(next.iter().map(|s| (s.step, s.second.second)).collect::<Vec<_>>(), [(1, 0)]);
    }
}
