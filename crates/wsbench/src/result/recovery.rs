//! The recovery figures of a run with `--disrupt` (result `recovery`): what happened
//! (each disruption, and a restarted server's time to listen again), how the connections
//! lost came back (time to the first, and to 50/90/99/100 % of them back, from the
//! disruption; each one's downtime), at what cost (attempts per connection, the peak of
//! attempts a second, the failures of those attempts by cause), what the load did before,
//! during and after (rate and p99 from the timeline), and what the server's CPU and memory
//! did meanwhile (from the probe's samples). The raw counts and the two histograms are kept
//! so results merge exactly.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::LatencyStats;
use crate::engine::disruption::DisruptionEvent;
use crate::metrics::{RecoveryTally, TimelineSecond};
use crate::samples::ServerSample;

/// Seconds of the timeline looked at before the first disruption and after the recovery.
const AROUND_S: u64 = 5;

/// How long after the disruption a share of the lost connections was back, s (`None`: that
/// share never came back).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct BackAfter {
    pub first_s: Option<f64>,
    pub p50_s: Option<f64>,
    pub p90_s: Option<f64>,
    pub p99_s: Option<f64>,
    pub all_s: Option<f64>,
}

/// The load in a stretch of the run: its rate and its worst second's p99.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Stretch {
    pub from_s: u64,
    pub seconds: u64,
    pub exchanges_per_sec: f64,
    pub p99_us_max: u64,
}

/// The server while connections came back (from the probe; absent when not probed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerDuringRecovery {
    /// The most CPU the server used in one sampling interval, in cores.
    pub cpu_peak_cores: Option<f64>,
    pub rss_peak_bytes: Option<u64>,
}

/// The run's recovery figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RecoveryFigures {
    /// `--reconnect`'s policy, as given.
    pub policy: String,
    pub disruptions: Vec<DisruptionEvent>,
    /// Connections lost after a disruption; of them back, and still down at the end.
    pub lost: u64,
    pub back: u64,
    pub not_back: u64,
    /// Connections a `drop` cut.
    pub dropped: u64,
    /// Attempts made to reopen them, and per connection lost.
    pub attempts: u64,
    pub attempts_per_connection: Option<f64>,
    /// The most attempts started in one second, and which.
    pub peak_attempts_per_sec: u64,
    pub peak_at_s: Option<u64>,
    /// From the disruption to each share of the lost connections back.
    pub back_after: BackAfter,
    /// Each connection's own time down, µs.
    pub downtime_us: LatencyStats,
    /// The failures while connections were down, by error kind: the recovery's, not the
    /// run's errors.
    pub failures: BTreeMap<String, u64>,
    pub before: Option<Stretch>,
    pub during: Option<Stretch>,
    pub after: Option<Stretch>,
    pub server: ServerDuringRecovery,
}

impl RecoveryFigures {
    /// The figures of `tally` for a run with `disruptions` under `policy`, its `timeline`
    /// and the server's `samples`.
    pub fn of(
        tally: &RecoveryTally,
        policy: &str,
        disruptions: &[DisruptionEvent],
        timeline: &[TimelineSecond],
        samples: &[ServerSample],
    ) -> RecoveryFigures {
        let lost = tally.lost();
        let back_after = back_after(&tally.back_after, lost);
        let (peak_attempts_per_sec, peak_at_s) = timeline
            .iter()
            .filter(|second| second.reconnects > 0)
            .max_by_key(|second| (second.reconnects, std::cmp::Reverse(second.second)))
            .map_or((0, None), |second| (second.reconnects, Some(second.second)));
        let first = disruptions.iter().map(|event| event.at_s).reduce(f64::min);
        // Until the last connection came back; when some never did, until the run's end.
        let end_of_run = timeline.last().map_or(0.0, |second| second.second as f64 + 1.0);
        let recovered = first.map(|at| back_after.all_s.map_or(end_of_run.max(at), |all| at + all));
        let (before, during, after) = match (first, recovered) {
            (Some(from), Some(to)) => stretches(timeline, from as u64, to.ceil() as u64),
            _ => (None, None, None),
        };
        let server = match (first, recovered) {
            (Some(from), Some(to)) => server_between(samples, (from * 1e3) as u64, (to * 1e3) as u64 + 1_000),
            _ => ServerDuringRecovery::default(),
        };
        RecoveryFigures {
            policy: policy.to_owned(),
            disruptions: disruptions.to_vec(),
            lost,
            back: tally.back,
            not_back: tally.not_back,
            dropped: tally.dropped,
            attempts: tally.attempts,
            attempts_per_connection: (tally.back > 0).then(|| tally.attempts as f64 / tally.back as f64),
            peak_attempts_per_sec,
            peak_at_s,
            back_after,
            downtime_us: LatencyStats::from_histogram(&tally.downtime),
            failures: tally.failures.clone(),
            before,
            during,
            after,
            server,
        }
    }

    /// The tally these figures were made of, with its two histograms (for merging).
    pub fn tally(&self, back_after: Histogram<u64>, downtime: Histogram<u64>) -> RecoveryTally {
        RecoveryTally {
            back_after,
            downtime,
            back: self.back,
            not_back: self.not_back,
            attempts: self.attempts,
            dropped: self.dropped,
            failures: self.failures.clone(),
        }
    }
}

/// The time after the disruption by which each share of the `lost` connections was back
/// (each back one's time in `histogram`, µs); a share more than came back has none.
fn back_after(histogram: &Histogram<u64>, lost: u64) -> BackAfter {
    let back = histogram.len();
    let at = |share: f64| -> Option<f64> {
        let needed = ((share * lost as f64).ceil() as u64).max(1);
        (lost > 0 && needed <= back)
            .then(|| histogram.value_at_quantile(needed as f64 / back as f64) as f64 / 1e6)
    };
    BackAfter {
        first_s: (back > 0).then(|| histogram.min() as f64 / 1e6),
        p50_s: at(0.5),
        p90_s: at(0.9),
        p99_s: at(0.99),
        all_s: at(1.0),
    }
}

/// The load before the disruption at second `from`, during the recovery (until `to`), and
/// after it: up to [`AROUND_S`] seconds each side.
fn stretches(
    timeline: &[TimelineSecond],
    from: u64,
    to: u64,
) -> (Option<Stretch>, Option<Stretch>, Option<Stretch>) {
    let stretch = |from: u64, until: u64| {
        let seconds: Vec<&TimelineSecond> =
            timeline.iter().filter(|second| second.second >= from && second.second < until).collect();
        (!seconds.is_empty()).then(|| Stretch {
            from_s: from,
            seconds: seconds.len() as u64,
            exchanges_per_sec: seconds.iter().map(|s| s.exchanges).sum::<u64>() as f64 / seconds.len() as f64,
            p99_us_max: seconds.iter().map(|s| s.p99_us).max().unwrap_or(0),
        })
    };
    let to = to.max(from + 1);
    (stretch(from.saturating_sub(AROUND_S), from), stretch(from, to), stretch(to, to + AROUND_S))
}

/// The server's CPU peak (cores, between consecutive samples of one process run: a
/// restarted server's CPU time starts again) and RSS peak, between `from_ms` and `to_ms`.
fn server_between(samples: &[ServerSample], from_ms: u64, to_ms: u64) -> ServerDuringRecovery {
    let within: Vec<&ServerSample> =
        samples.iter().filter(|s| s.t_ms >= from_ms && s.t_ms <= to_ms).collect();
    let cpu_peak_cores = within
        .windows(2)
        .filter(|pair| pair[1].cpu_seconds >= pair[0].cpu_seconds && pair[1].t_ms > pair[0].t_ms)
        .map(|pair| {
            (pair[1].cpu_seconds - pair[0].cpu_seconds) / ((pair[1].t_ms - pair[0].t_ms) as f64 / 1e3)
        })
        .reduce(f64::max);
    ServerDuringRecovery { cpu_peak_cores, rss_peak_bytes: within.iter().map(|s| s.rss_bytes).max() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::record_us;

    fn tally(back_after_ms: &[u64], not_back: u64) -> RecoveryTally {
        let mut tally = RecoveryTally::default();
        for &ms in back_after_ms {
            tally.came_back(ms * 1_000, (ms * 1_000).saturating_sub(50_000), 2);
        }
        tally.not_back = not_back;
        tally
    }

    fn event(at_s: f64) -> DisruptionEvent {
        DisruptionEvent { kind: "restart".into(), at_s, took_s: Some(0.1), start_s: Some(0.05), failed: None }
    }

    /// Seconds to whole milliseconds (the histogram keeps 3 significant digits).
    fn ms(seconds: Option<f64>) -> Option<u64> {
        seconds.map(|s| (s * 1e3).round() as u64)
    }

    #[test]
    fn shares_back_count_the_connections_that_never_came_back() {
        let all: Vec<u64> = (1..=100).collect();
        let figures = RecoveryFigures::of(&tally(&all, 0), "immediate", &[event(10.0)], &[], &[]);
        let back = figures.back_after;
        assert_eq!((figures.lost, figures.back, figures.not_back), (100, 100, 0));
        let shares = [back.first_s, back.p50_s, back.p90_s, back.p99_s, back.all_s].map(ms);
        assert_eq!(shares, [Some(1), Some(50), Some(90), Some(99), Some(100)]);
        assert_eq!(figures.attempts_per_connection, Some(2.0));
        // Ten of a hundred never came back: 90 % were, 99 % and all never were.
        let most: Vec<u64> = (1..=90).collect();
        let back = RecoveryFigures::of(&tally(&most, 10), "immediate", &[event(10.0)], &[], &[]).back_after;
        assert_eq!(
            [back.p50_s, back.p90_s, back.p99_s, back.all_s].map(ms),
            [Some(50), Some(90), None, None]
        );
        let none = RecoveryFigures::of(&tally(&[], 5), "immediate", &[event(1.0)], &[], &[]);
        assert_eq!(none.back_after, BackAfter::default());
        assert_eq!(none.attempts_per_connection, None);
    }

    #[test]
    fn the_load_and_the_server_are_seen_before_during_and_after() {
        let timeline: Vec<TimelineSecond> = (0..20)
            .map(|second| TimelineSecond {
                second,
                exchanges: if (10..12).contains(&second) { 100 } else { 1_000 },
                p99_us: if (10..12).contains(&second) { 90_000 } else { 1_000 },
                reconnects: if second == 10 { 500 } else { 0 },
                ..TimelineSecond::default()
            })
            .collect();
        let samples: Vec<ServerSample> = (0..40)
            .map(|i| ServerSample {
                t_ms: i * 500,
                rss_bytes: if i == 21 { 9_000 } else { 1_000 },
                cpu_seconds: i as f64 * 0.1 + if i >= 22 { 0.5 } else { 0.0 },
                threads: 1,
                fds: 1,
                slab_bytes: 0,
            })
            .collect();
        let mut tally = tally(&[1_500, 1_800], 0);
        record_us(&mut tally.downtime, 1);
        let figures = RecoveryFigures::of(&tally, "grpc", &[event(10.0)], &timeline, &samples);
        assert_eq!((figures.peak_attempts_per_sec, figures.peak_at_s), (500, Some(10)));
        let (before, during, after) =
            (figures.before.unwrap(), figures.during.unwrap(), figures.after.unwrap());
        assert_eq!((before.from_s, before.seconds, before.exchanges_per_sec), (5, 5, 1_000.0));
        assert_eq!((during.from_s, during.seconds, during.p99_us_max), (10, 2, 90_000));
        assert_eq!((after.from_s, after.exchanges_per_sec), (12, 1_000.0));
        assert_eq!(figures.server.rss_peak_bytes, Some(9_000));
        let peak = figures.server.cpu_peak_cores.unwrap();
        assert!((peak - 1.2).abs() < 1e-9, "{peak}");
    }
}
