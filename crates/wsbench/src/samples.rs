//! Plain data handed from the measuring parts (engine, server probe, client self-check,
//! machine facts) to the result file. Kept apart so each side can be built and tested
//! without the other.

use serde::{Deserialize, Serialize};

use crate::metrics::Metrics;

/// One sample of the server process(es), summed over their pids.
#[derive(Debug, Clone, Default, Copy, PartialEq, Serialize, Deserialize)]
pub struct ServerSample {
    /// Milliseconds since the run started.
    pub t_ms: u64,
    pub rss_bytes: u64,
    /// User + system CPU time since the process started.
    pub cpu_seconds: f64,
    pub threads: u64,
    pub fds: u64,
    /// The kernel's slab memory (`Slab` of `/proc/meminfo`): the whole machine's, not the
    /// server's alone (0 in files written before it was sampled, or where it is unreadable).
    #[serde(default)]
    pub slab_bytes: u64,
}

/// What the server probe saw.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerReport {
    /// The processes measured; empty when the server could not be probed.
    pub pids: Vec<u32>,
    /// How they were found: `spawned`, `--server-pid`, `listening-port`.
    pub found_by: Option<String>,
    /// Why the server was not probed (e.g. a remote target), when it was not.
    pub unprobed_reason: Option<String>,
    /// Sampled every 250 ms; the first is taken before any connection opens.
    pub samples: Vec<ServerSample>,
    /// The TLS handshakes the server did during the run, by kind, as it counted them (a
    /// `wsbench serve` says; other servers do not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_handshakes: Option<Box<crate::metrics::TlsHandshakes>>,
}

/// The client process's own memory before its first connection opened, and once every
/// connection was open (or had failed): its resident set (`/proc/self/statm`) and the bytes
/// its allocator held in use (`mallinfo2`). `None` where it could not be read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientMemory {
    pub rss_baseline_bytes: Option<u64>,
    pub rss_connected_bytes: Option<u64>,
    pub heap_baseline_bytes: Option<u64>,
    pub heap_connected_bytes: Option<u64>,
}

impl ClientMemory {
    /// Both processes' memory together (shards of one run).
    pub fn plus(self, other: ClientMemory) -> ClientMemory {
        let sum = |a: Option<u64>, b: Option<u64>| Some(a? + b?);
        ClientMemory {
            rss_baseline_bytes: sum(self.rss_baseline_bytes, other.rss_baseline_bytes),
            rss_connected_bytes: sum(self.rss_connected_bytes, other.rss_connected_bytes),
            heap_baseline_bytes: sum(self.heap_baseline_bytes, other.heap_baseline_bytes),
            heap_connected_bytes: sum(self.heap_connected_bytes, other.heap_connected_bytes),
        }
    }
}

/// CPU use of one client worker thread over the run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkerCpu {
    pub name: String,
    /// User + system.
    pub cpu_seconds: f64,
    /// Fraction of one core (cpu_seconds / wall seconds).
    pub share: f64,
    /// The two parts of `cpu_seconds` (0 in files written before they were recorded).
    #[serde(default)]
    pub user_seconds: f64,
    #[serde(default)]
    pub system_seconds: f64,
    /// The socket I/O the worker ran on: `uring` or `epoll` (empty in older files).
    #[serde(default)]
    pub io: String,
}

/// Facts about the machine the client ran on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineFacts {
    pub cpu_model: String,
    pub cores: usize,
    pub kernel: String,
    pub hostname: String,
    pub wsbench_version: String,
    /// Open-file limit (soft) the client ran with.
    pub open_files_limit: u64,
}

/// Everything a finished (or interrupted) run hands to the result file.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// `echo`, `throughput`, `scalability`, …
    pub scenario: String,
    pub target_url: String,
    /// The target was the built-in server, started by wsbench.
    pub target_builtin: bool,
    /// The full validated configuration, as given to the engine.
    pub config: serde_json::Value,
    pub started_at_unix_ms: u64,
    /// Wall time from the first connection attempt to the end.
    pub elapsed_secs: f64,
    /// Wall time over which the exchange rate is computed (after ramp and warm-up).
    pub measured_secs: f64,
    /// Exchanges (round trips, deliveries, …) completed inside the measured window.
    pub measured_exchanges: u64,
    /// From the first connection attempt until every connection was established or failed.
    pub connect_phase_secs: f64,
    /// How long the end of the run waited for replies still in flight, s.
    pub drain_secs: f64,
    pub interrupted: bool,
    /// Connections × in-flight messages the run aimed to keep busy (Little's law).
    pub connections: u64,
    pub in_flight: u64,
    pub metrics: Metrics,
    /// The scenario's own figures, under its key, computed by the scenario.
    pub figures: Option<(String, serde_json::Value)>,
    pub server: ServerReport,
    pub client_workers: Vec<WorkerCpu>,
    pub client_memory: ClientMemory,
    pub machine: MachineFacts,
    /// `--disrupt`: each disruption as it happened.
    pub disruptions: Vec<DisruptionEvent>,
}

/// One disruption as it happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DisruptionEvent {
    /// `restart`, `kill`, `close`, `drop`, `command`.
    pub kind: String,
    /// When it began, seconds since the run's start.
    pub at_s: f64,
    /// How long its action took: a restart from its signal until the new server listened
    /// (the service was down that long), a command's run; absent for a close or a drop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub took_s: Option<f64>,
    /// A restarted server's own start: from its process starting to its listening.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_s: Option<f64>,
    /// Why the action failed, if it did (the server would not start again, the command
    /// exited non-zero).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
}
