//! A `--stages` run's figures per stage, beside the whole run's: the stage's rate of
//! exchanges, its latency (percentiles, and its histogram losslessly encoded), the errors
//! counted during it, the connections open at its end and on average over it (what Little's
//! law per stage is computed from), and the server's memory at its end
//! and CPU over it (from the probe's samples). Readers of the result (reports, thresholds,
//! `wsbench diff`) find them under `stages`, in order, named `stage1`, `stage2`, ….

use serde::{Deserialize, Serialize};

use super::{LatencyStats, encode_histogram};
use crate::metrics::StageTally;
use crate::samples::ServerSample;

/// One stage's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageFigures {
    /// `stage1`, `stage2`, …: what `--threshold stage2.p99<10ms` names.
    pub name: String,
    /// The stage as given (`30s:1000c`, `1m:5000/s:ramp`, `10s:100/s:warmup`).
    pub stage: String,
    /// Seconds since the run's start.
    pub start_s: u64,
    pub end_s: u64,
    /// False for a warm-up stage (its figures are kept, but not in the run's summary).
    pub measured: bool,
    /// Exchanges completed during the stage (round trips, deliveries, …).
    pub exchanges: u64,
    pub exchanges_per_sec: f64,
    /// The stage's latency, µs (corrected in an open loop).
    pub latency_us: LatencyStats,
    /// Errors of every kind counted during the stage.
    pub errors: u64,
    /// Connections open in the stage's last second.
    pub connections_open: u64,
    /// The mean over the stage's seconds of the connections open in each (absent from
    /// results that predate it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections_mean: Option<f64>,
    /// The server's resident memory at the stage's end (the last sample in it); absent
    /// when the server was not sampled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_rss_bytes: Option<u64>,
    /// The server's CPU over the stage, % of one core; absent when not sampled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpu_percent: Option<f64>,
    /// The stage's latency histogram (HdrHistogram V2 + DEFLATE, base64), lossless.
    pub latency_histogram: String,
}

/// The figures of each stage, from the engine's tallies and the server's samples.
pub fn figures(tallies: &[StageTally], samples: &[ServerSample]) -> Vec<StageFigures> {
    let mut errors_before = 0;
    tallies
        .iter()
        .enumerate()
        .map(|(i, tally)| {
            let errors = tally.errors_by_end.saturating_sub(errors_before);
            errors_before = errors_before.max(tally.errors_by_end);
            let seconds = (tally.end_s - tally.start_s).max(1) as f64;
            let (start_ms, end_ms) = (tally.start_s * 1000, tally.end_s * 1000);
            let last = samples.iter().rfind(|s| s.t_ms <= end_ms);
            let cpu = cpu_percent_between(samples, start_ms, end_ms);
            StageFigures {
                name: format!("stage{}", i + 1),
                stage: tally.label.clone(),
                start_s: tally.start_s,
                end_s: tally.end_s,
                measured: tally.measured,
                exchanges: tally.exchanges,
                exchanges_per_sec: tally.exchanges as f64 / seconds,
                latency_us: LatencyStats::from_histogram(&tally.latency),
                errors,
                connections_open: tally.connections_open,
                connections_mean: Some(match tally.seconds {
                    0 => 0.0,
                    seconds => tally.connection_seconds as f64 / seconds as f64,
                }),
                server_rss_bytes: last.map(|s| s.rss_bytes),
                server_cpu_percent: cpu,
                latency_histogram: encode_histogram(&tally.latency),
            }
        })
        .collect()
}

/// The server's CPU from `start_ms` to `end_ms` of the run, % of one core, from the
/// samples nearest each end; `None` without two samples apart in it.
pub(crate) fn cpu_percent_between(samples: &[ServerSample], start_ms: u64, end_ms: u64) -> Option<f64> {
    let first = samples.iter().rfind(|s| s.t_ms <= start_ms).or(samples.first());
    let last = samples.iter().rfind(|s| s.t_ms <= end_ms);
    match (first, last) {
        (Some(a), Some(b)) if b.t_ms > a.t_ms => {
            Some((b.cpu_seconds - a.cpu_seconds).max(0.0) / ((b.t_ms - a.t_ms) as f64 / 1000.0) * 100.0)
        }
        _ => None,
    }
    .filter(|c| c.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{Interval, add_stage_second, record_us};

    #[test]
    fn each_stage_has_its_rate_latency_errors_and_the_servers_state_at_its_end() {
        let mut tallies =
            vec![StageTally::new("2s:10c".into(), 0, 2, true), StageTally::new("2s:0c".into(), 2, 4, true)];
        for s in 0..4u64 {
            let mut second = Interval::new(s);
            second.exchanges = 100;
            second.connections_open = if s < 2 { 10 } else { 3 - s };
            record_us(&mut second.latency, 1000 * (s + 1));
            add_stage_second(&mut tallies, &second, &[("reset".to_owned(), s / 2 * 5 + 1)].into());
        }
        let sample = |t_ms: u64, rss_bytes: u64, cpu_seconds: f64| ServerSample {
            t_ms,
            rss_bytes,
            cpu_seconds,
            ..ServerSample::default()
        };
        let samples = [sample(0, 10, 0.0), sample(2000, 50, 1.0), sample(3750, 20, 1.5)];
        let stages = figures(&tallies, &samples);
        assert_eq!(stages[0].name, "stage1");
        assert_eq!(
            (stages[0].exchanges_per_sec, stages[0].errors, stages[0].connections_open),
            (100.0, 1, 10)
        );
        assert_eq!((stages[1].errors, stages[1].connections_open), (5, 0));
        assert_eq!((stages[0].connections_mean, stages[1].connections_mean), (Some(10.0), Some(0.5)));
        assert_eq!(stages[0].latency_us.max, 2000);
        assert_eq!(stages[1].latency_us.min, 3000);
        assert_eq!((stages[0].server_rss_bytes, stages[1].server_rss_bytes), (Some(50), Some(20)));
        assert_eq!(stages[0].server_cpu_percent, Some(50.0));
        let decoded = super::super::decode_histogram("s", &stages[1].latency_histogram).unwrap();
        assert_eq!(decoded.len(), 2);
        assert_eq!(figures(&tallies, &[])[0].server_rss_bytes, None);
    }
}
