//! What `wsbench sweep` measured and found, as data: every step's figures (throughput,
//! percentiles, errors, the server's CPU and memory, whether the client was the limit)
//! beside the step's whole result as a result file holds it (counters and lossless
//! histograms, so steps merge and report like any run), then the analysis (the knees,
//! the Universal Scalability Law fit, the hold-out) and the thresholds judged. The file
//! carries `kind: "wsbench-sweep"` and a schema version (`schema/sweep.schema.json`), so
//! `wsbench report` reads it back; the report renders it without the code that ran it.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::stages::cpu_percent_between;
use super::{LatencyStats, ResultError, RunResult, ThresholdOutcome, write_atomically};
use crate::curve::knee::Knee;
use crate::curve::usl::{Fit, Holdout};

/// Version of the sweep file's layout.
pub const SWEEP_SCHEMA_VERSION: u32 = 1;
/// The sweep file's `kind`.
pub const SWEEP_KIND: &str = "wsbench-sweep";

/// What a sweep varies from step to step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Varied {
    /// Connections, each in a closed loop (or at a fixed interval): N of the USL.
    Connections,
    /// The open loop's offered rate over a fixed set of connections.
    Rate,
}

/// One step: the load asked, the figures it measured, and its whole result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepStep {
    /// The load asked: connections, or messages per second offered.
    pub load: f64,
    /// Connections established.
    pub connections: u64,
    /// Exchanges per second in the measured window (what the server did).
    pub throughput_per_sec: f64,
    /// Latency of the measured window, µs (corrected for coordinated omission in an open loop).
    pub latency_us: LatencyStats,
    /// Errors of every kind.
    pub errors: u64,
    /// The server's CPU over the measured window, % of one core; null when not sampled.
    pub server_cpu_percent: Option<f64>,
    /// The server's peak resident memory; null when not sampled.
    pub server_rss_bytes: Option<u64>,
    /// The client, not the server, limited the step (the sentence in `result.client`).
    pub client_bound: bool,
    /// Why the step is left out of the knee and the fit; null when it is in.
    pub excluded: Option<String>,
    /// The step's result as `wsbench run --json` writes it.
    pub result: RunResult,
}

impl SweepStep {
    /// The figures of `result`, measured at `load`.
    pub fn of(load: f64, result: RunResult) -> SweepStep {
        let summary = &result.summary;
        let end_ms = ((result.elapsed_s - result.drain_s).max(0.0) * 1000.0) as u64;
        let start_ms = end_ms.saturating_sub((result.measured_s * 1000.0) as u64);
        let excluded = if result.interrupted {
            Some("cut short by an interruption".to_owned())
        } else if summary.latency_us.count == 0 || summary.exchanges_per_sec <= 0.0 {
            Some("no exchange measured".to_owned())
        } else if result.client.bound {
            Some("client-bound: the client, not the server, was the limit".to_owned())
        } else {
            None
        };
        SweepStep {
            load,
            connections: summary.connections.established,
            throughput_per_sec: summary.exchanges_per_sec,
            latency_us: summary.latency_us,
            errors: summary.errors.values().sum(),
            server_cpu_percent: cpu_percent_between(&result.server.samples, start_ms, end_ms),
            server_rss_bytes: result.server.rss_peak_bytes,
            client_bound: result.client.bound,
            excluded,
            result,
        }
    }
}

/// What the steps show: where latency bends, what the USL says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    /// Kneedle on p99 against throughput.
    pub knee_p99: Knee,
    /// Kneedle on p50 against throughput.
    pub knee_p50: Knee,
    /// The Universal Scalability Law on throughput against connections.
    pub usl: Fit,
    /// `--holdout K`: the fit on the first steps, judged on the last K.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holdout: Option<Holdout>,
}

/// The whole sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sweep {
    /// What was swept: `builtin`, a fleet server's name, or the URL.
    pub label: String,
    pub scenario: String,
    pub varied: Varied,
    /// Each step's connections wait for replies (no `--rate` or `--interval`).
    pub closed_loop: bool,
    /// The loads planned, in order (the steps measured may be fewer when interrupted).
    pub planned: Vec<f64>,
    /// Each step's unmeasured warm-up and measured window, s.
    pub warmup_s: f64,
    pub duration_s: f64,
    pub steps: Vec<SweepStep>,
    pub analysis: Analysis,
    /// `--threshold` on the sweep's figures, judged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<ThresholdOutcome>,
    pub interrupted: bool,
}

impl Sweep {
    /// The steps used by the knee and the fit, with their index among all steps.
    pub fn usable(&self) -> impl Iterator<Item = (usize, &SweepStep)> {
        self.steps.iter().enumerate().filter(|(_, step)| step.excluded.is_none())
    }

    /// The highest throughput of any usable step.
    pub fn max_throughput(&self) -> Option<f64> {
        self.usable().map(|(_, step)| step.throughput_per_sec).reduce(f64::max)
    }
}

/// The `--json` file of `wsbench sweep`: the sweep, headed by its kind and version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepFile {
    pub kind: String,
    pub schema_version: u32,
    #[serde(flatten)]
    pub sweep: Sweep,
}

impl SweepFile {
    pub fn new(sweep: &Sweep) -> SweepFile {
        SweepFile { kind: SWEEP_KIND.to_owned(), schema_version: SWEEP_SCHEMA_VERSION, sweep: sweep.clone() }
    }
}

/// Writes the sweep as pretty JSON to `path` (atomically: a step's rewrite never leaves
/// half a file).
pub fn write_sweep_json(sweep: &Sweep, path: &Path) -> Result<(), ResultError> {
    let file = SweepFile::new(sweep);
    write_atomically(path, |out| {
        serde_json::to_writer_pretty(&mut *out, &file).map_err(std::io::Error::other)?;
        out.write_all(b"\n")
    })
}
