//! The `--json` file of `wsbench rtt`: per protocol the figures of the table (µs per round
//! trip) plus each repeat's values, with the machine and the configuration they came from.
//! Written atomically (temporary file, then rename), like `wsbench run`'s result files.
//!
//! Shape: `{kind: "wsbench-rtt", schema_version, started_at_unix_ms, machine, config,
//! protocols: {tcp: {mean_us, median_us, stddev_us, p50_us, p99_us, max_us, cpu_us,
//! cpu_median_us, cpu_stddev_us, ratio_to_tcp, iterations, repeats, target, repeat_wall_us,
//! repeat_cpu_us}, …}}`, protocols in table order.

use std::path::Path;

use serde::{Serialize, Serializer};

use super::config::{Protocol, RttConfig};
use super::{ProtocolResult, Repeat, RttResult};
use crate::result::{ResultError, write_atomically};
use crate::samples::MachineFacts;

/// Version of this file's layout.
pub const RTT_SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Serialize)]
struct RttFile<'a> {
    kind: &'static str,
    schema_version: u32,
    started_at_unix_ms: u64,
    machine: &'a MachineFacts,
    config: ConfigJson<'a>,
    protocols: Protocols<'a>,
}

#[derive(Debug, Serialize)]
struct ConfigJson<'a> {
    protocols: &'a [Protocol],
    /// Started by wsbench (no `--target`).
    builtin_servers: bool,
    repeats: u32,
    warmup_repeats: u32,
    iterations: u64,
    payload_bytes: u64,
    insecure: bool,
    client_cpu: Option<usize>,
    server_cpu: Option<usize>,
    io_timeout_secs: u64,
}

#[derive(Debug, Serialize)]
struct ProtocolJson<'a> {
    target: &'a str,
    mean_us: f64,
    median_us: f64,
    stddev_us: f64,
    p50_us: f64,
    p99_us: f64,
    max_us: f64,
    cpu_us: f64,
    cpu_median_us: f64,
    cpu_stddev_us: f64,
    ratio_to_tcp: Option<f64>,
    iterations: u64,
    repeats: u32,
    repeat_wall_us: Vec<f64>,
    repeat_cpu_us: Vec<f64>,
}

impl<'a> ProtocolJson<'a> {
    fn new(p: &'a ProtocolResult) -> ProtocolJson<'a> {
        ProtocolJson {
            target: &p.target,
            mean_us: p.wall_us.mean,
            median_us: p.wall_us.median,
            stddev_us: p.wall_us.stddev,
            p50_us: p.quantiles.p50_us,
            p99_us: p.quantiles.p99_us,
            max_us: p.quantiles.max_us,
            cpu_us: p.cpu_us.mean,
            cpu_median_us: p.cpu_us.median,
            cpu_stddev_us: p.cpu_us.stddev,
            ratio_to_tcp: p.ratio_to_tcp,
            iterations: p.iterations,
            repeats: p.repeats,
            repeat_wall_us: p.per_repeat.iter().map(Repeat::wall_us_per_round_trip).collect(),
            repeat_cpu_us: p.per_repeat.iter().map(Repeat::cpu_us_per_round_trip).collect(),
        }
    }
}

/// The protocols as a JSON object keyed by name, in table order.
#[derive(Debug)]
struct Protocols<'a>(&'a [ProtocolResult]);

impl Serialize for Protocols<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|p| (p.protocol.name(), ProtocolJson::new(p))))
    }
}

fn config_json<'a>(config: &'a RttConfig, result: &RttResult) -> ConfigJson<'a> {
    ConfigJson {
        protocols: &config.protocols,
        builtin_servers: config.builtin(),
        repeats: config.repeats,
        warmup_repeats: 1,
        iterations: config.iterations,
        payload_bytes: config.payload_bytes,
        insecure: config.insecure || config.builtin(),
        client_cpu: result.client_cpu,
        server_cpu: result.server_cpu,
        io_timeout_secs: super::clients::IO_TIMEOUT.as_secs(),
    }
}

fn file(result: &RttResult) -> RttFile<'_> {
    RttFile {
        kind: "wsbench-rtt",
        schema_version: RTT_SCHEMA_VERSION,
        started_at_unix_ms: result.started_at_unix_ms,
        machine: &result.machine,
        config: config_json(&result.config, result),
        protocols: Protocols(&result.protocols),
    }
}

/// The result as pretty JSON text (protocols in table order), ending in a newline.
pub fn to_json(result: &RttResult) -> String {
    let mut text = serde_json::to_string_pretty(&file(result)).unwrap_or_default();
    text.push('\n');
    text
}

/// Writes the result as pretty JSON to `path`, atomically.
pub fn write(result: &RttResult, path: &Path) -> Result<(), ResultError> {
    let text = to_json(result);
    write_atomically(path, |out| out.write_all(text.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rtt::{Quantiles, Summary};

    #[test]
    fn protocols_keep_table_order_and_fields() {
        let summary = Summary { mean: 20.0, median: 19.0, stddev: 1.0 };
        let row = |protocol| ProtocolResult {
            protocol,
            target: "127.0.0.1:1".into(),
            wall_us: summary,
            cpu_us: summary,
            quantiles: Quantiles { p50_us: 19.0, p99_us: 30.0, max_us: 90.0 },
            ratio_to_tcp: Some(1.0),
            iterations: 10,
            repeats: 1,
            per_repeat: vec![Repeat { iterations: 10, wall_ns: 200_000, cpu_ns: 50_000 }],
        };
        let rows = [row(Protocol::Tcp), row(Protocol::Http), row(Protocol::Wss)];
        let text = serde_json::to_string(&Protocols(&rows)).unwrap();
        let tcp = text.find("\"tcp\"").unwrap();
        let http = text.find("\"http\"").unwrap();
        let wss = text.find("\"wss\"").unwrap();
        assert!(tcp < http && http < wss, "{text}");
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["http"]["repeat_wall_us"][0], 20.0);
        assert_eq!(value["http"]["repeat_cpu_us"][0], 5.0);
    }
}
