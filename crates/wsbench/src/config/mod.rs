//! The one validated run configuration. Command-line flags and TOML scenario files both
//! land in [`RunSettings`] (`settings.rs`, every field optional; flags override the file),
//! and [`RunSettings::validate`] (`validate.rs`) turns that into a [`RunConfig`] with every
//! default applied and every value checked, or a one-line [`ConfigError`] (`error.rs`)
//! naming the setting and what to do. A `RunConfig` is the load itself ([`LoadSpec`], all
//! the engine reads), plus where it runs ([`Placement`]), how the server is found
//! ([`Sampling`]), where results go ([`Outputs`]), whether it is one run or a search
//! ([`Mode`]), the `--threshold`s its result is judged by ([`Threshold`]) and its run id. Defaults live here as `pub const`; the CLI shows them.

pub mod bounds;
mod compression;
mod data;
mod disrupt;
mod error;
mod handshake;
mod io;
mod lines;
mod message_limits;
mod outputs;
mod reconnect;
mod scenario;
mod settings;
mod slo;
mod source_addrs;
mod staged_settings;
mod stages;
pub(crate) mod suggest;
mod target;
mod threshold;
mod tls;
mod toml_position;
mod transport;
mod validate;

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::units::parse_bytes;
pub use bounds::{MAX_DURATION, bounded as bounded_duration_setting, duration as duration_setting};
pub use compression::CompressionOffer;
pub use data::{DataTable, MAX_DATA_COLUMNS, MAX_DATA_ROWS, fill_data, placeholders};
pub use disrupt::{Disruption, DisruptionKind, MAX_DISRUPTIONS, RecoveryPlan};
pub use error::ConfigError;
use error::invalid;
pub(crate) use error::invalid as invalid_setting;
pub use handshake::{CONN_PLACEHOLDER, HandshakeOptions, Header, is_secret};
pub use io::IoBackend;
pub use lines::TextLines;
pub use outputs::{check_output_file, check_output_folder};
pub use reconnect::{Backoff, DEFAULT_POLICY as DEFAULT_RECONNECT_POLICY, Jitter, ReconnectPolicy, draw};
pub use scenario::{
    Defaults, Exchange, NoSettings, Pace, Pacing, ScenarioRules, ScenarioSettings, looks_like_host_port,
};
pub use settings::{DEFAULT_DASHBOARD_ADDR, RunSettings};
pub use slo::{Objective, Slo, Statistic};
pub use source_addrs::parse_addr_range;
pub use stages::{MAX_STAGES, Stage, StageKind, StageList, StagePlan, StageSettings};
pub use target::{REDACTED, Target, redact_password};
pub use threshold::{BackShare, Comparison, Metric, RecoveryFigure, Threshold};
pub use tls::{ClientIdentity, ClientKey, TlsOptions, TlsVersion};
pub use transport::TransportSpec;
pub use validate::Members;

pub const DEFAULT_CONNECTIONS: u64 = 1000;
pub const DEFAULT_DURATION: Duration = Duration::from_secs(10);
pub const DEFAULT_WARMUP: Duration = Duration::from_secs(1);
pub const DEFAULT_IN_FLIGHT: u64 = 1;
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a request may wait for its reply before it is the error `reply_timeout`.
pub const DEFAULT_REPLY_TIMEOUT: Duration = Duration::from_secs(10);
/// An open-loop run whose send lag p99 exceeds this was limited by the client.
pub const DEFAULT_MAX_SEND_LAG: Duration = Duration::from_millis(5);
/// Open loop: how far ahead of its instant a send may go out with an earlier one's batch.
/// Each wake-up of the worker, and of the server it wakes with its first message, is then
/// shared by the sends of half a millisecond (wrk2's timers tick in milliseconds).
pub const DEFAULT_SEND_WINDOW: Duration = Duration::from_micros(500);

/// What each message carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Payload {
    /// A JSON object with the client's send timestamp and a sequence number, as in the IncludeOS vs node.js round-trip test.
    JsonTs,
    /// N random bytes, the same for every message of the run; echoes are checked.
    Bytes(u64),
    /// The lines of a file, in order and cycling (`text:FILE`); every echo is checked.
    Text(TextLines),
}

impl std::str::FromStr for Payload {
    type Err = ConfigError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text == "json-ts" {
            return Ok(Payload::JsonTs);
        }
        if let Some(path) = text.strip_prefix("text:") {
            return Ok(Payload::Text(TextLines::load(std::path::Path::new(path))?));
        }
        match text.strip_prefix("bytes:") {
            Some(size) => {
                let bytes = parse_bytes(size)
                    .map_err(|e| invalid("payload", format!("bytes:{size}: {}", e.problem)))?;
                Ok(Payload::Bytes(bounds::payload("payload", bytes)?))
            }
            None => Err(invalid(
                "payload",
                format!("`{text}` is not a payload: use json-ts, bytes:N (e.g. bytes:20) or text:FILE"),
            )),
        }
    }
}

impl Payload {
    /// The longest message payload a run of it sends, in bytes.
    pub fn largest_message(&self) -> u64 {
        match self {
            // `{"ts":…,"seq":…}`: under 64 bytes.
            Payload::JsonTs => 64,
            Payload::Bytes(size) => *size,
            Payload::Text(lines) => lines.lines.iter().map(|line| line.len() as u64).max().unwrap_or(0),
        }
    }
}

/// Text or binary frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MessageKind {
    Text,
    Binary,
}

/// One of N equal parts of a scenario: the connections whose number `i` has
/// `i % count == index`. The ramp and the open-loop schedule are computed from the global
/// connection number, so the parts interleave exactly into the whole, remainders spread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

impl Shard {
    /// `I/N`, checked against the run's connections.
    pub fn parse(text: &str, connections: u64) -> Result<Shard, ConfigError> {
        let bad =
            |why: &str| invalid("shard", format!("`{text}`: {why}; write I/N with 0 ≤ I < N, e.g. 0/5"));
        let (index, count) = text.split_once('/').ok_or_else(|| bad("no `/`"))?;
        let index: u64 = index.trim().parse().map_err(|_| bad("I is not a number"))?;
        let count: u64 = count.trim().parse().map_err(|_| bad("N is not a number"))?;
        if count == 0 || index >= count {
            return Err(bad("I must be below N"));
        }
        if count > connections {
            return Err(bad("more shards than connections"));
        }
        Ok(Shard { index, count })
    }

    /// Whether connection `i` belongs to this shard.
    pub fn owns(&self, connection: u64) -> bool {
        connection % self.count == self.index
    }

    /// How many of `connections` this shard opens.
    pub fn share_of(&self, connections: u64) -> u64 {
        connections / self.count + u64::from(self.index < connections % self.count)
    }
}

/// A validated run. Serialized into the result file (`config`), with the key names of the
/// original flat configuration.
#[derive(Debug, Clone, Serialize)]
pub struct RunConfig {
    /// What the engine runs.
    #[serde(flatten)]
    pub load: LoadSpec,
    /// `None`: start the built-in server.
    pub target: Option<Target>,
    /// Open loop: a send lag p99 above this marks the run as client-bound.
    #[serde(serialize_with = "as_secs")]
    pub max_send_lag: Duration,
    /// One run, or a search for the highest rate under an objective.
    #[serde(rename = "find_max_rate")]
    pub mode: Mode,
    #[serde(flatten)]
    pub placement: Placement,
    #[serde(flatten)]
    pub sampling: Sampling,
    #[serde(flatten)]
    pub outputs: Outputs,
    /// `--threshold`: judged on the finished result (recorded in `summary.thresholds`,
    /// not in `config`).
    #[serde(skip)]
    pub thresholds: Vec<Threshold>,
    /// The id every result of this run carries (`run_id`, not in `config`): shards of one
    /// run share it, and `wsbench merge` refuses results of different runs.
    #[serde(skip)]
    pub run_id: String,
    /// Live view, metrics endpoint and stream: not part of what was measured.
    #[serde(skip)]
    pub live: LiveOutputs,
    /// `--wait-for-target`: how long to retry connecting to the target before the run
    /// (how the run began, not what it measured).
    #[serde(skip)]
    pub wait_for_target: Option<Duration>,
    /// The most connections open at the same moment (the scenario says: all of them, or
    /// fewer when connections live briefly): what open files are planned for.
    #[serde(skip)]
    pub open_at_once: u64,
    /// `--disrupt`, `--disrupt-command`: what happens to the server during the run.
    #[serde(skip_serializing_if = "RecoveryPlan::is_empty")]
    pub recovery: RecoveryPlan,
}

/// The load itself, and all the engine reads of a configuration: how many connections, how
/// they open, what they send and for how long.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadSpec {
    /// The scenario's name (one of `crate::scenario`'s registry).
    pub scenario: &'static str,
    /// Connections of the whole run (all shards).
    pub connections: u64,
    /// New connections per second while ramping up; `None`: as fast as possible.
    pub ramp_per_sec: Option<f64>,
    #[serde(serialize_with = "as_secs")]
    pub duration: Duration,
    #[serde(serialize_with = "as_secs")]
    pub warmup: Duration,
    /// Messages a connection may have outstanding (`u64::MAX`: no cap, open loop's default).
    pub in_flight: u64,
    /// Open loop: each connection sends one batch every interval on a fixed schedule;
    /// `None` is the closed loop (send the next when an echo returns).
    #[serde(serialize_with = "as_optional_secs")]
    pub message_interval: Option<Duration>,
    /// Open loop: sends due within this window after the first due one are written with it
    /// (early; their latency counts from when they went out, so nothing is credited).
    #[serde(serialize_with = "as_secs")]
    pub send_window: Duration,
    /// This process runs one part of the scenario.
    pub shard: Option<Shard>,
    /// Common start instant of the shards (ms since the Unix epoch).
    pub start_at_unix_ms: Option<u64>,
    pub payload: Payload,
    pub message: MessageKind,
    pub frames_per_send: u64,
    #[serde(serialize_with = "as_secs")]
    pub connect_timeout: Duration,
    /// A request unanswered this long after it was due is the error `reply_timeout` and is
    /// given up (`--reply-timeout`).
    #[serde(serialize_with = "as_secs")]
    pub reply_timeout: Duration,
    /// Source addresses connections are spread over (empty: the kernel picks).
    pub source_addrs: Vec<IpAddr>,
    /// Reopen connections the server closed or reset, by this policy (`--reconnect`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reconnect: Option<ReconnectPolicy>,
    /// Accept any TLS certificate.
    pub insecure: bool,
    /// Extra upgrade-request headers and offered subprotocols (`--header`, `--subprotocol`, …).
    #[serde(skip_serializing_if = "HandshakeOptions::is_empty")]
    pub handshake: HandshakeOptions,
    /// `--cacert`, `--client-cert`/`--client-key`, `--sni`, `--tls-version`.
    #[serde(skip_serializing_if = "TlsOptions::is_default")]
    pub tls: TlsOptions,
    /// The permessage-deflate offer (`--compression`); `None`: no compression.
    pub compression: Option<CompressionOffer>,
    /// `--max-message`: the largest message accepted from the server, in bytes.
    pub max_message: u64,
    /// `--max-message-memory`: what all connections of one process may hold together in
    /// messages still arriving, in bytes.
    pub max_message_memory: u64,
    /// `--io`: the socket I/O the workers use.
    pub io: IoBackend,
    /// `--http2`, `--streams-per-connection`: how WebSockets reach the server.
    #[serde(skip_serializing_if = "TransportSpec::is_default")]
    pub transport: TransportSpec,
    /// `--protocol`: the message protocol spoken over WebSocket (one of `crate::protocol`'s).
    pub protocol: &'static str,
    /// Its options (`--event`, `--method`, `--qos`, `--mqtt-version`, `--query`, `--heartbeat`,
    /// `--vhost`).
    #[serde(skip_serializing_if = "is_default_options")]
    pub protocol_options: crate::protocol::Options,
    /// The run's id, as [`RunConfig::run_id`]: what a protocol names the run's clients after.
    #[serde(skip)]
    pub run_id: String,
    /// The scenario's own settings, checked (written into `config` under its own keys).
    #[serde(flatten)]
    pub scenario_settings: OwnSettings,
    /// `--stages`: connections or rate that change over the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stages: Option<StagePlan>,
}

/// A scenario's own settings as [`LoadSpec`] carries them: shared, compared and written by
/// what they say.
#[derive(Debug, Clone)]
pub struct OwnSettings(pub std::sync::Arc<dyn ScenarioSettings>);

impl OwnSettings {
    /// The settings as the scenario's type `T` (`None` if they are another's).
    pub fn get<T: 'static>(&self) -> Option<&T> {
        self.0.as_any().downcast_ref()
    }
}

impl PartialEq for OwnSettings {
    fn eq(&self, other: &OwnSettings) -> bool {
        self.0.to_json() == other.0.to_json()
    }
}

impl Serialize for OwnSettings {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.to_json().serialize(serializer)
    }
}

/// One measured run, or `--find-max-rate`: open-loop steps until the objective breaks.
#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    Once,
    FindMaxRate(Slo),
}

impl Serialize for Mode {
    /// As the result files always had it: the objective, or null.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Mode::Once => serializer.serialize_none(),
            Mode::FindMaxRate(slo) => serializer.serialize_some(slo),
        }
    }
}

/// Where the run's processes go: the client's CPUs and processes, the built-in server's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Placement {
    /// One worker per CPU; `None`: every CPU the built-in server does not take.
    pub client_cpus: Option<Vec<usize>>,
    pub server_cpus: Option<Vec<usize>>,
    /// Client processes the run is split into (1: this process runs it all).
    pub processes: u64,
    /// Processes of the built-in server.
    pub server_processes: u64,
}

/// How the server process is found and sampled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Sampling {
    /// Measure this process instead of finding it by the port it listens on.
    pub server_pid: Option<u32>,
    /// The server is not sampled by this process (a `--processes` parent does it).
    pub no_probe: bool,
}

/// What is shown and exported while the run goes on (`crate::live`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LiveOutputs {
    /// `--quiet`: no progress on stderr.
    pub quiet: bool,
    /// `--metrics-addr`: where the Prometheus text endpoint listens.
    pub metrics_addr: Option<std::net::SocketAddr>,
    /// `--stream`: the JSON-lines file of the run's seconds.
    pub stream: Option<PathBuf>,
    /// A `--processes` shard: its seconds go to the parent on stdout (`live::shard_feed`),
    /// and it shows no progress of its own.
    pub to_parent: bool,
}

/// Where the run's files go.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Outputs {
    /// The result file.
    pub json: Option<PathBuf>,
    /// Per-second latency histograms as an HdrHistogram log.
    pub hlog: Option<PathBuf>,
}

impl RunConfig {
    /// The most connections one process of this run opens: the whole run, this shard's
    /// share, or the largest share of its `--processes` children. The open-file limit is
    /// checked against this.
    pub fn connections_per_process(&self) -> u64 {
        let per_process = match self.load.shard {
            Some(shard) => shard.share_of(self.load.connections),
            None => self.load.connections.div_ceil(self.placement.processes.max(1)),
        };
        per_process.min(self.connections_open_at_once())
    }

    /// The most connections open at the same moment (see [`RunConfig::open_at_once`]).
    pub fn connections_open_at_once(&self) -> u64 {
        self.open_at_once
    }
}

fn is_default_options(options: &crate::protocol::Options) -> bool {
    *options == crate::protocol::Options::default()
}

fn as_optional_secs<S: serde::Serializer>(
    duration: &Option<Duration>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match duration {
        Some(duration) => serializer.serialize_f64(duration.as_secs_f64()),
        None => serializer.serialize_none(),
    }
}

fn as_secs<S: serde::Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(duration.as_secs_f64())
}

fn as_secs_opt<S: serde::Serializer>(duration: &Option<Duration>, serializer: S) -> Result<S::Ok, S::Error> {
    match duration {
        Some(duration) => serializer.serialize_some(&duration.as_secs_f64()),
        None => serializer.serialize_none(),
    }
}

#[cfg(test)]
mod tests;
