//! The result file: one JSON document per run that users' scripts, `wsbench report` and
//! `wsbench merge` read back. It carries the derived numbers people look at
//! (`summary`, `server`, `client`, `timeline`) *and* the run's raw HdrHistograms in
//! HdrHistogram's own "V2 compressed" encoding, so nothing of them is lost:
//! [`RunResult::common_metrics`] rebuilds the exact [`Metrics`](crate::metrics::Metrics) the
//! run measured. Per second it keeps counts and percentiles (`timeline`); the seconds' whole
//! histograms go to `--hlog` as the run goes, so a file stays small however long the run. The
//! field names are a public contract, pinned by `schema/result.schema.json` at the repository
//! root; bump [`SCHEMA_VERSION`] on any incompatible change.

mod atomic;
mod build;
mod codec;
mod compression;
mod distribution;
mod ended_early;
mod recovery;
pub mod search;
mod sends;
mod stages;
mod stalls;
pub mod sweep;
mod transport;
mod unanswered;

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::metrics::Counters;
use crate::samples::{MachineFacts, ServerSample, WorkerCpu};

pub(crate) use atomic::write_atomically;
pub use codec::{decode_histogram, encode_histogram};
pub use compression::CompressionSummary;
pub use distribution::Distribution;
pub use ended_early::EndedEarly;
pub use recovery::{BackAfter, RecoveryFigures, ServerDuringRecovery, Stretch};
pub use sends::{ACHIEVED_WARNING, SendLedger};
pub use stages::StageFigures;
pub use stalls::{STALLS_KEPT, Stall, Stalls};
pub use transport::TransportSummary;
pub use unanswered::{NO_REQUEST_ANSWERED, reason as no_request_answered_reason};

/// The result-file format this wsbench writes, and the newest it reads. Version 2 dropped
/// the per-second histograms (`histograms.intervals`, which older readers require); version
/// 1 files are still read.
pub const SCHEMA_VERSION: u32 = 2;

/// Why a result file could not be written, read or decoded. Every variant names the file or
/// the field at fault.
#[derive(Debug, thiserror::Error)]
pub enum ResultError {
    #[error("cannot write {}", path.display())]
    Write { path: PathBuf, source: io::Error },
    #[error("cannot read {}", path.display())]
    Read { path: PathBuf, source: io::Error },
    #[error("{} is not a wsbench result file: it is not valid JSON", path.display())]
    NotJson { path: PathBuf, source: serde_json::Error },
    #[error("{} is empty: not a wsbench result file (was its run cut short?)", path.display())]
    Empty { path: PathBuf },
    #[error(
        "{} ends in the middle: a wsbench file cut short (a copy or write that did not finish?)",
        path.display()
    )]
    Truncated { path: PathBuf, source: serde_json::Error },
    #[error(
        "{} was written by a newer wsbench (schema_version {found}; this wsbench reads \
         schema_version {SCHEMA_VERSION}): upgrade wsbench to read it",
        path.display()
    )]
    NewerSchema { path: PathBuf, found: u64 },
    #[error("{} is not a wsbench result file: {reason}", path.display())]
    Invalid { path: PathBuf, reason: String },
    /// A file past its limit ([`crate::input_file`]).
    #[error(transparent)]
    InputFile(crate::input_file::InputFileError),
    #[error("the result's `{field}` cannot be decoded: {reason}")]
    Histogram { field: String, reason: String },
    /// A histogram of the file that does not decode, or disagrees with the file's summary.
    #[error(
        "{} is damaged or was edited: its `{field}` {reason}; give the file as its run wrote it",
        path.display()
    )]
    DamagedHistogram { path: PathBuf, field: String, reason: String },
}

/// One run, as written to and read from the JSON result file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// Always [`SCHEMA_VERSION`] when written by this wsbench.
    pub schema_version: u32,
    /// The wsbench that wrote the file.
    pub wsbench_version: String,
    /// The run this result belongs to: the shards of one run share it. Absent from files
    /// of older wsbench versions (unknown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    pub scenario: String,
    pub target: Target,
    /// The full validated configuration the engine ran with.
    pub config: serde_json::Value,
    pub machine: MachineFacts,
    pub started_at_unix_ms: u64,
    /// Wall time from the first connection attempt to the end.
    pub elapsed_s: f64,
    /// Wall time over which `summary.exchanges_per_sec` is computed (after ramp and warm-up).
    pub measured_s: f64,
    /// How long the end of the run waited for replies still in flight (the drain), s: what
    /// was still awaited after it is `unanswered_at_end`. Absent from older files.
    #[serde(default)]
    pub drain_s: f64,
    /// The run was stopped early (Ctrl-C, fatal error); the numbers cover what ran.
    pub interrupted: bool,
    /// The run ended before its measured window did, on its own: no connection was left.
    /// Its rates are over the shorter window (`measured_s`). Absent when it ran its window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_early: Option<EndedEarly>,
    pub summary: Summary,
    pub server: ServerSummary,
    pub client: ClientSummary,
    /// One entry per wall-clock second of the run. In a merged result each second's
    /// percentiles are the highest shard's (an upper bound); counts are sums.
    pub timeline: Vec<TimelinePoint>,
    /// The raw counters, so results can be merged exactly.
    pub counters: Counters,
    pub histograms: EncodedHistograms,
    /// A merged result (`wsbench merge`, `run --processes`): each merged shard's own view.
    /// Absent from single runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shards: Vec<ShardSummary>,
    /// A merged result of only some of its run's shards (`wsbench merge --partial`, or a
    /// `--processes` run whose shard left no result). Absent when every shard is in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial: Option<PartialRun>,
    /// `--disrupt`: how the run recovered from each disruption. Absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery: Option<RecoveryFigures>,
    /// `--stages`: each stage's figures, in order. Absent from runs without stages.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<StageFigures>,
    /// The scenario's own figures, under the scenario's own key (churn's `churn`, a flow's
    /// `flow`, a fan-out's `pubsub`); none for scenarios that have none.
    #[serde(flatten)]
    pub scenario_figures: BTreeMap<String, serde_json::Value>,
}

impl RunResult {
    /// The scenario's figures under `key`, as its type; `None` when absent or of another
    /// shape.
    pub fn figures<T: serde::de::DeserializeOwned>(&self, key: &str) -> Option<T> {
        serde_json::from_value(self.scenario_figures.get(key)?.clone()).ok()
    }
}

/// Which shards of a run a merged result holds, when not all of them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartialRun {
    /// Shards merged.
    pub shards: u64,
    /// Shards the run had (the `N` of `--shard I/N`).
    pub of: u64,
    /// The shards missing, as `I/N`.
    pub missing: Vec<String>,
}

impl PartialRun {
    /// "1 of 2 shards (missing 1/2)".
    pub fn describe(&self) -> String {
        format!("{} of {} shards (missing {})", self.shards, self.of, self.missing.join(", "))
    }
}

/// One shard of a merged result: where it ran and what it saw of the server and of itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardSummary {
    /// The shard's result file, as given to the merge.
    pub file: String,
    /// The host its client ran on (`machine.hostname`).
    pub host: String,
    /// `I/N` from the shard's configuration; null when it ran unsharded.
    pub shard: Option<String>,
    pub started_at_unix_ms: u64,
    pub interrupted: bool,
    /// How the shard's process ended abnormally (`exit status 3`, `signal 9`); null when
    /// it exited normally or is not known.
    pub died: Option<String>,
    pub connections_established: u64,
    /// The shard's own measured exchanges per second.
    #[serde(rename = "echoes_per_sec")]
    pub exchanges_per_sec: f64,
    /// The server as this shard's process probed it (unprobed with `--no-probe`).
    pub server: ServerSummary,
    pub client: ClientSummary,
}

/// What was benchmarked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    pub url: String,
    /// The built-in server, started by wsbench.
    pub builtin: bool,
}

/// The headline numbers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Exchanges (round trips, deliveries, matched replies: what the scenario counts) per
    /// second inside the measured window (0 when the window is empty).
    #[serde(rename = "echoes_per_sec")]
    pub exchanges_per_sec: f64,
    /// Exchanges completed inside the measured window.
    #[serde(rename = "measured_echoes")]
    pub measured_exchanges: u64,
    /// Round-trip latency, corrected for coordinated omission in open-loop runs.
    pub latency_us: LatencyStats,
    /// Round-trip latency from the actual send time.
    pub latency_uncorrected_us: LatencyStats,
    /// TCP connect start → WebSocket handshake done.
    pub connect_us: ConnectStats,
    /// Open-loop only: how late the client sent; all zero otherwise.
    pub send_lag_us: LatencyStats,
    pub connections: ConnectionCounts,
    /// Server-initiated disconnections (close frames and resets).
    pub disconnections: u64,
    /// Every non-zero error counter by kind (`connect_timeout`, `closed_1001`, …).
    pub errors: BTreeMap<String, u64>,
    /// Whole seconds in which requests awaited replies and none came (from the timeline).
    #[serde(default)]
    pub stalls: Stalls,
    /// An open loop's sends due and where each ended; absent for a closed loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sends: Option<SendLedger>,
    pub messages: MessageCounts,
    pub bytes: ByteCounts,
    pub littles_law: LittlesLaw,
    /// From the first connection attempt until every connection was up or had failed.
    #[serde(default)]
    pub connect_phase_s: f64,
    /// Connections established per millisecond of the connect phase (uWebSockets'
    /// "connection performance").
    #[serde(default)]
    pub connections_per_ms: f64,
    /// The C10K seed's statistics block for latency and connect time.
    #[serde(default)]
    pub latency_distribution: Distribution,
    #[serde(default)]
    pub connect_distribution: Distribution,
    /// `--threshold`: each one judged on this result. Absent when none was given, and
    /// from shards (their merged result is judged).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<ThresholdOutcome>,
    /// permessage-deflate: negotiated parameters, wire against payload bytes. Absent when
    /// the run did not compress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compression: Option<CompressionSummary>,
    /// How the WebSockets reached the server (absent in results written before it was
    /// kept: those ran over HTTP/1.1).
    #[serde(default)]
    pub transport: TransportSummary,
}

/// One `--threshold` judged: what the user wrote, the value measured for it (µs for
/// times, a count for `errors`, per second for rates; null when no time was measured, which
/// fails the threshold) and whether it held.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThresholdOutcome {
    pub expression: String,
    pub value: Option<f64>,
    pub passed: bool,
}

/// Percentiles of a histogram in microseconds; all zero when it is empty.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyStats {
    pub count: u64,
    pub min: u64,
    pub mean: f64,
    pub stddev: f64,
    pub p50: u64,
    pub p75: u64,
    pub p90: u64,
    pub p95: u64,
    pub p99: u64,
    pub p999: u64,
    pub p9999: u64,
    pub max: u64,
}

/// Connect-time percentiles in microseconds; all zero when nothing connected.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ConnectStats {
    pub count: u64,
    pub min: u64,
    pub mean: f64,
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub max: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectionCounts {
    pub attempted: u64,
    pub established: u64,
    pub failed: u64,
    /// Attempts still opening when the run ended: neither established nor failed.
    #[serde(default)]
    pub unfinished: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessageCounts {
    /// Messages the socket took.
    pub sent: u64,
    pub received: u64,
    pub unanswered: u64,
    /// Messages queued that the socket never took.
    #[serde(default)]
    pub unsent: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ByteCounts {
    pub sent: u64,
    pub received: u64,
}

/// Little's law as a sanity check: with `connections × in_flight` messages always out, the
/// mean latency must be that number divided by the throughput. A ratio far from 1 means the
/// client did not keep the intended load in flight (or stalled).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LittlesLaw {
    pub connections: u64,
    pub in_flight: u64,
    pub throughput_per_sec: f64,
    /// `connections × in_flight ÷ throughput`, in µs; null when the throughput is 0.
    pub predicted_mean_latency_us: Option<f64>,
    pub measured_mean_latency_us: f64,
    /// measured ÷ predicted; null when there is no prediction.
    pub ratio: Option<f64>,
}

/// The server's resource use, from the probe's samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerSummary {
    pub probed: bool,
    pub pids: Vec<u32>,
    /// `spawned`, `--server-pid`, `listening-port`.
    pub found_by: Option<String>,
    /// Why the server was not probed; null when it was.
    pub unprobed_reason: Option<String>,
    /// RSS before any connection opened.
    pub rss_baseline_bytes: Option<u64>,
    pub rss_peak_bytes: Option<u64>,
    /// CPU time the server used during the run.
    pub cpu_seconds: Option<f64>,
    pub threads_peak: Option<u64>,
    pub fds_peak: Option<u64>,
    /// Established connections per MiB of RSS growth; null when RSS did not grow.
    pub connections_per_mb: Option<f64>,
    /// Measured exchanges per CPU-second of the server.
    #[serde(rename = "echoes_per_cpu_second")]
    pub exchanges_per_cpu_second: Option<f64>,
    pub samples: Vec<ServerSample>,
    /// Server CPU µs per round trip: `cpu_seconds` over every echo the client received
    /// (the same basis as the client's figure); null when not probed or nothing echoed.
    #[serde(default)]
    pub cpu_us_per_round_trip: Option<f64>,
    /// RSS growth (peak − baseline) per established connection, bytes: what a connection
    /// costs the server (absent from older files; null when not probed or none connected).
    #[serde(default)]
    pub bytes_per_connection: Option<f64>,
    /// Growth of the machine's kernel slab memory (`/proc/meminfo` `Slab`, sampled with the
    /// server): highest sample minus the first. It holds the sockets of both ends when the
    /// client runs on the server's machine (and moves with whatever else the machine does).
    #[serde(default)]
    pub kernel_slab_delta_bytes: Option<u64>,
    /// `kernel_slab_delta_bytes` ÷ established connections.
    #[serde(default)]
    pub kernel_bytes_per_connection: Option<f64>,
    /// The TLS handshakes the server did during the run, full and resumed, with its CPU
    /// for each kind, as it counted them (only a `wsbench serve` says).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_handshakes: Option<crate::metrics::TlsHandshakes>,
}

/// Whether the client, rather than the server, limited the result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientSummary {
    /// Some worker was busy ≥ 90% of a core.
    pub bound: bool,
    /// A sentence saying why, when `bound`.
    pub bound_reason: Option<String>,
    pub workers: Vec<WorkerCpu>,
    /// Every worker's CPU seconds, and their user and system parts.
    #[serde(default)]
    pub cpu_seconds: f64,
    #[serde(default)]
    pub user_seconds: f64,
    #[serde(default)]
    pub system_seconds: f64,
    /// Client CPU µs per round trip: `cpu_seconds` over every echo received, the run's
    /// whole length as for the server's figure; null when nothing was echoed.
    #[serde(default)]
    pub cpu_us_per_round_trip: Option<f64>,
    /// Open loop: client CPU µs per message sent on schedule (`cpu_seconds` over every
    /// message sent), the figure to set beside a closed loop's `cpu_us_per_round_trip`;
    /// null for a closed loop or when nothing was sent.
    #[serde(default)]
    pub cpu_us_per_paced_message: Option<f64>,
    /// The client process's resident memory before its first connection opened, and once
    /// every connection was open or had failed; of a merged run, its processes' summed
    /// (null when not read, and in older files).
    #[serde(default)]
    pub rss_baseline_bytes: Option<u64>,
    #[serde(default)]
    pub rss_connected_bytes: Option<u64>,
    /// The bytes the client process's allocator held in use (glibc `mallinfo2`) at the same
    /// two instants; of a merged run, its processes' summed (null with another C library,
    /// and in older files).
    #[serde(default)]
    pub heap_baseline_bytes: Option<u64>,
    #[serde(default)]
    pub heap_connected_bytes: Option<u64>,
    /// (`heap_connected_bytes` − `heap_baseline_bytes`) ÷ established connections: the heap
    /// an open connection holds in the client, its workers' buffers included. Measured from
    /// the run's own start, so memory earlier runs of the same process freed (and the RSS
    /// still holds) neither hides nor inflates it. Older files took the RSS growth.
    #[serde(default)]
    pub bytes_per_connection: Option<f64>,
    /// What the machine did besides the run: other processes' CPU, the hypervisor's steal,
    /// a server sharing the client's CPUs (absent in merged results and older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_load: Option<crate::machine_load::MachineLoad>,
    /// What the kernel's network stack dropped and retransmitted on this machine during the
    /// run (absent in merged results and older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_network: Option<crate::machine_net::MachineNetwork>,
}

/// One second of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimelinePoint {
    /// Seconds since the run started.
    pub second: u64,
    /// Exchanges completed in this second (warm-up included).
    #[serde(rename = "echoes")]
    pub exchanges: u64,
    pub connections_open: u64,
    /// Requests awaited replies when the second began: with no exchange in it, a stall.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub awaiting: bool,
    /// Attempts to reopen lost connections started in this second (present only when any).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reconnects: u64,
    pub p50_us: u64,
    pub p99_us: u64,
}

/// The run's histograms, each HdrHistogram "V2 compressed" (V2 + DEFLATE) in base64: the
/// same text HdrHistogram's Java and Go tools decode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EncodedHistograms {
    pub latency: String,
    pub latency_uncorrected: String,
    pub connect: String,
    pub send_lag: String,
    /// `--disrupt`: from the disruption to each lost connection back, and each one's
    /// downtime (µs); absent without a recovery.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery_back_after: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery_downtime: Option<String>,
    /// Per-second latency histograms, in the order of `timeline`: only in files of
    /// schema_version 1 (read, never used). Now `--hlog` has them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub intervals: Vec<String>,
    /// The scenario's own histograms, under its own keys (a flow's `flow_steps`, one per
    /// step; a fan-out's `pubsub_spread`).
    #[serde(flatten)]
    pub scenario: BTreeMap<String, serde_json::Value>,
}

impl RunResult {
    /// Writes the result as pretty JSON, atomically: a crash or a full disk leaves either
    /// the previous file or none at `path`, never a truncated one.
    pub fn write_json(&self, path: &Path) -> Result<(), ResultError> {
        write_atomically(path, |out| {
            serde_json::to_writer_pretty(&mut *out, self).map_err(io::Error::other)?;
            out.write_all(b"\n")
        })
    }

    /// Reads a result file, saying which file is wrong and how.
    pub fn read_json(path: &Path) -> Result<RunResult, ResultError> {
        let bytes = read_bounded(path)?;
        Self::from_json_bytes(path, &bytes)
    }

    /// Parses a result file's contents; `path` is only used in errors.
    pub fn from_json_bytes(path: &Path, bytes: &[u8]) -> Result<RunResult, ResultError> {
        let invalid = |reason: String| ResultError::Invalid { path: path.to_owned(), reason };
        let value = parse_json(path, bytes)?;
        let object = value.as_object().ok_or_else(|| invalid("it is JSON but not an object".to_owned()))?;
        match object.get("schema_version") {
            None => return Err(invalid("it has no `schema_version`".to_owned())),
            Some(version) => match version.as_u64() {
                Some(found) if found > u64::from(SCHEMA_VERSION) => {
                    return Err(ResultError::NewerSchema { path: path.to_owned(), found });
                }
                Some(found) if found >= 1 => {}
                _ => return Err(invalid(format!("`schema_version` is {version}, not a version number"))),
            },
        }
        let result: RunResult = serde_json::from_value(value).map_err(|e| invalid(e.to_string()))?;
        result.verify_histograms(path)?;
        Ok(result)
    }
}

/// The bytes of the result, rtt or search file `path`, at most
/// [`crate::input_file::MAX_RESULT_FILE_BYTES`] whatever the file is.
pub(crate) fn read_bounded(path: &Path) -> Result<Vec<u8>, ResultError> {
    crate::input_file::read(path, crate::input_file::InputKind::Result).map_err(|e| match e {
        crate::input_file::InputFileError::Read { path, source } => ResultError::Read { path, source },
        too_big => ResultError::InputFile(too_big),
    })
}

/// `bytes` of the file `path` as JSON; an empty file and one cut short are said to be.
pub(crate) fn parse_json(path: &Path, bytes: &[u8]) -> Result<serde_json::Value, ResultError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ResultError::Empty { path: path.to_owned() });
    }
    serde_json::from_slice(bytes).map_err(|source| match source.is_eof() {
        true => ResultError::Truncated { path: path.to_owned(), source },
        false => ResultError::NotJson { path: path.to_owned(), source },
    })
}

/// Whether a count is zero (and left out of the file).
fn is_zero(count: &u64) -> bool {
    *count == 0
}

#[cfg(test)]
mod tests;

/// The text of the result file `path` between `----- BEGIN wsbench result NAME -----` and
/// `----- END wsbench result NAME -----` lines (NAME: the file's name), as `run
/// --print-result` prints it: a pod's log then carries its result, and
/// `scripts/k8s-collect-results.sh --from logs` cuts it out again.
pub fn between_markers(path: &Path) -> io::Result<String> {
    let text = std::fs::read_to_string(path)?;
    let name =
        path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
    let newline = if text.ends_with('\n') { "" } else { "\n" };
    Ok(format!(
        "----- BEGIN wsbench result {name} -----\n{text}{newline}----- END wsbench result {name} -----\n"
    ))
}
