//! The `--json` file of `wsbench rtt`: per protocol the figures of the table (µs per round
//! trip) plus each repeat's values, with the machine and the configuration they came from.
//! Written atomically (temporary file, then rename), like `wsbench run`'s result files.
//!
//! Shape: `{kind: "wsbench-rtt", schema_version, started_at_unix_ms, machine, config,
//! protocols: {tcp: {mean_us, median_us, stddev_us, p50_us, p99_us, max_us, cpu_us,
//! cpu_median_us, cpu_stddev_us, ratio_to_tcp, iterations, repeats, target, repeat_wall_us,
//! repeat_cpu_us}, …}}`, protocols in table order; `schema/rtt.schema.json` is its contract.
//! `wsbench report` reads it back ([`RttFile`]) and prints the table again.

use std::fmt;
use std::path::Path;

use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{ProtocolResult, Repeat, RttResult};
use crate::result::{ResultError, write_atomically};
use crate::samples::MachineFacts;

/// Version of this file's layout.
pub const RTT_SCHEMA_VERSION: u32 = 1;
/// The file's `kind`, which tells it apart from result and search files.
pub const RTT_KIND: &str = "wsbench-rtt";

/// The `--json` file of `wsbench rtt`, as written and as read back by `wsbench report`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RttFile {
    pub kind: String,
    pub schema_version: u32,
    pub started_at_unix_ms: u64,
    pub machine: MachineFacts,
    pub config: RttFileConfig,
    pub protocols: Protocols,
}

/// The configuration a `wsbench rtt` ran with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RttFileConfig {
    /// Protocol names, in table order.
    pub protocols: Vec<String>,
    /// Started by wsbench (no `--target`).
    pub builtin_servers: bool,
    pub repeats: u32,
    pub warmup_repeats: u32,
    pub iterations: u64,
    pub payload_bytes: u64,
    pub insecure: bool,
    pub client_cpu: Option<usize>,
    pub server_cpu: Option<usize>,
    pub io_timeout_secs: u64,
}

/// One protocol's figures (µs per round trip).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProtocolFigures {
    /// `HOST:PORT` measured.
    pub target: String,
    pub mean_us: f64,
    pub median_us: f64,
    pub stddev_us: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    pub cpu_us: f64,
    pub cpu_median_us: f64,
    pub cpu_stddev_us: f64,
    pub ratio_to_tcp: Option<f64>,
    pub iterations: u64,
    pub repeats: u32,
    pub repeat_wall_us: Vec<f64>,
    pub repeat_cpu_us: Vec<f64>,
}

impl ProtocolFigures {
    fn new(p: &ProtocolResult) -> ProtocolFigures {
        ProtocolFigures {
            target: p.target.clone(),
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

/// The protocols as a JSON object keyed by name, in table order (kept when read back).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Protocols(pub Vec<(String, ProtocolFigures)>);

impl Serialize for Protocols {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(name, figures)| (name, figures)))
    }
}

impl<'de> Deserialize<'de> for Protocols {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Protocols, D::Error> {
        struct InOrder;
        impl<'de> Visitor<'de> for InOrder {
            type Value = Protocols;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of protocols")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Protocols, A::Error> {
                let mut protocols = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    protocols.push(entry);
                }
                Ok(Protocols(protocols))
            }
        }
        deserializer.deserialize_map(InOrder)
    }
}

impl RttFile {
    /// The file of one measurement.
    pub fn new(result: &RttResult) -> RttFile {
        let config = &result.config;
        RttFile {
            kind: RTT_KIND.to_owned(),
            schema_version: RTT_SCHEMA_VERSION,
            started_at_unix_ms: result.started_at_unix_ms,
            machine: result.machine.clone(),
            config: RttFileConfig {
                protocols: config.protocols.iter().map(|p| p.name().to_owned()).collect(),
                builtin_servers: config.builtin(),
                repeats: config.repeats,
                warmup_repeats: 1,
                iterations: config.iterations,
                payload_bytes: config.payload_bytes,
                insecure: config.insecure || config.builtin(),
                client_cpu: result.client_cpu,
                server_cpu: result.server_cpu,
                io_timeout_secs: super::clients::IO_TIMEOUT.as_secs(),
            },
            protocols: Protocols(
                result
                    .protocols
                    .iter()
                    .map(|p| (p.protocol.name().to_owned(), ProtocolFigures::new(p)))
                    .collect(),
            ),
        }
    }
}

/// The result as pretty JSON text (protocols in table order), ending in a newline.
pub fn to_json(result: &RttResult) -> String {
    let mut text = serde_json::to_string_pretty(&RttFile::new(result)).unwrap_or_default();
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
    use crate::rtt::{Protocol, Quantiles, Summary};

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
        let protocols =
            Protocols(rows.iter().map(|p| (p.protocol.name().to_owned(), ProtocolFigures::new(p))).collect());
        let text = serde_json::to_string(&protocols).unwrap();
        let tcp = text.find("\"tcp\"").unwrap();
        let http = text.find("\"http\"").unwrap();
        let wss = text.find("\"wss\"").unwrap();
        assert!(tcp < http && http < wss, "{text}");
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["http"]["repeat_wall_us"][0], 20.0);
        assert_eq!(value["http"]["repeat_cpu_us"][0], 5.0);
        let back: Protocols = serde_json::from_str(&text).unwrap();
        assert_eq!(back, protocols);
    }
}
