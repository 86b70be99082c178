//! The figures `wsbench diff` compares, each read from a result file the way the run's
//! report shows it, with the direction that counts as better, and (for the few a result
//! keeps per second) the per-second series the block bootstrap resamples.

use crate::result::RunResult;

/// Which way a figure improves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    Higher,
    Lower,
}

/// The unit a figure's values are in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    PerSec,
    Micros,
    PerMillion,
    Bytes,
}

/// One figure: its key (for `--fail-on` and JSON), how a report names it, and how to read it.
#[derive(Debug, Clone, Copy)]
pub struct Figure {
    pub key: &'static str,
    pub label: &'static str,
    pub unit: Unit,
    pub better: Better,
    value: fn(&RunResult) -> Option<f64>,
    per_second: Option<fn(&crate::result::TimelinePoint) -> f64>,
}

impl Figure {
    /// The figure's value in the run `result`; `None` when the run did not measure it.
    pub fn value(&self, result: &RunResult) -> Option<f64> {
        (self.value)(result)
    }

    /// Whether a result keeps the figure per second (else only per run).
    pub fn kept_per_second(&self) -> bool {
        self.per_second.is_some()
    }

    /// The figure's value in each measured second of `result` (warm-up and the last, partial
    /// second left out), when a result keeps it per second.
    pub fn per_second(&self, result: &RunResult) -> Option<Vec<f64>> {
        let of_second = self.per_second?;
        let warmup = result.config.get("warmup").and_then(serde_json::Value::as_f64).unwrap_or(0.0);
        let first = warmup.ceil() as u64;
        let measured = result.timeline.iter().filter(|point| point.second >= first);
        let mut series: Vec<f64> = measured.map(of_second).collect();
        series.pop();
        Some(series)
    }
}

/// A latency percentile of the summary's `stats`, in µs; none when no latency was measured.
macro_rules! latency {
    ($key:literal, $label:literal, $stats:ident, $percentile:ident, $per_second:expr) => {
        Figure {
            key: $key,
            label: $label,
            unit: Unit::Micros,
            better: Better::Lower,
            value: |r| Some(r.summary.$stats.$percentile as f64).filter(|_| r.summary.$stats.count > 0),
            per_second: $per_second,
        }
    };
}

/// Every figure, in the order a diff shows them. The uncorrected latencies are shown only
/// when some run's differ from the corrected ones (an open loop): in a closed loop they are
/// the same figure.
pub const FIGURES: &[Figure] = &[
    Figure {
        key: "round_trips_per_sec",
        label: "rate",
        unit: Unit::PerSec,
        better: Better::Higher,
        value: |r| Some(r.summary.exchanges_per_sec).filter(|_| r.summary.measured_exchanges > 0),
        per_second: Some(|point| point.exchanges as f64),
    },
    latency!("p50", "latency p50", latency_us, p50, Some(|point| point.p50_us as f64)),
    latency!("p90", "latency p90", latency_us, p90, None),
    latency!("p99", "latency p99", latency_us, p99, Some(|point| point.p99_us as f64)),
    latency!("p999", "latency p99.9", latency_us, p999, None),
    latency!("p50_uncorrected", "uncorrected p50", latency_uncorrected_us, p50, None),
    latency!("p90_uncorrected", "uncorrected p90", latency_uncorrected_us, p90, None),
    latency!("p99_uncorrected", "uncorrected p99", latency_uncorrected_us, p99, None),
    latency!("p999_uncorrected", "uncorrected p99.9", latency_uncorrected_us, p999, None),
    Figure {
        key: "connect_p99",
        label: "connect p99",
        unit: Unit::Micros,
        better: Better::Lower,
        value: |r| Some(r.summary.connect_us.p99 as f64).filter(|_| r.summary.connect_us.count > 0),
        per_second: None,
    },
    Figure {
        key: "errors_per_million",
        label: "errors per million",
        unit: Unit::PerMillion,
        better: Better::Lower,
        value: errors_per_million,
        per_second: None,
    },
    Figure {
        key: "server_cpu_us_per_round_trip",
        label: "server CPU per round trip",
        unit: Unit::Micros,
        better: Better::Lower,
        value: |r| r.server.cpu_us_per_round_trip,
        per_second: None,
    },
    Figure {
        key: "server_rss_bytes",
        label: "server RSS peak",
        unit: Unit::Bytes,
        better: Better::Lower,
        value: |r| r.server.rss_peak_bytes.map(|bytes| bytes as f64),
        per_second: None,
    },
];

/// The figure `key` names, if any; the rate also as `--threshold` names it
/// (`echoes_per_sec`, `deliveries_per_sec`) and p99.9 also as `p99.9`.
pub fn by_key(key: &str) -> Option<&'static Figure> {
    let key = match key {
        "echoes_per_sec" | "deliveries_per_sec" => "round_trips_per_sec",
        "p99.9" => "p999",
        "p99.9_uncorrected" => "p999_uncorrected",
        other => other,
    };
    FIGURES.iter().find(|figure| figure.key == key)
}

/// Whether `figure` is an uncorrected latency that every run of `runs` has equal to the
/// corrected one (then it is not a figure of its own).
pub fn is_duplicate(figure: &Figure, runs: &[&RunResult]) -> bool {
    figure.key.ends_with("_uncorrected")
        && runs.iter().all(|r| r.summary.latency_uncorrected_us == r.summary.latency_us)
}

/// Errors counted per million messages sent; none when nothing was sent.
fn errors_per_million(result: &RunResult) -> Option<f64> {
    let sent = result.summary.messages.sent;
    let errors: u64 = result.summary.errors.values().sum();
    (sent > 0).then(|| errors as f64 * 1e6 / sent as f64)
}
