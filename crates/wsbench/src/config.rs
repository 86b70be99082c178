//! The one validated run configuration. Command-line flags and TOML scenario files both
//! land in [`RunSettings`] (every field optional; flags override the file), and
//! [`RunSettings::validate`] turns that into a [`RunConfig`] with every default applied and
//! every value checked, or a one-line error naming the setting and what to do.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::target::Target;
use crate::units::{UnitError, parse_bytes, parse_duration, parse_rate};

pub const DEFAULT_CONNECTIONS: u64 = 1000;
pub const DEFAULT_DURATION: Duration = Duration::from_secs(10);
pub const DEFAULT_WARMUP: Duration = Duration::from_secs(1);
pub const DEFAULT_HOLD: Duration = Duration::from_secs(5);
pub const DEFAULT_IN_FLIGHT: u64 = 1;
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
pub const DEFAULT_THROUGHPUT_PAYLOAD: u64 = 20;
pub const DEFAULT_FRAMES_PER_SEND: u64 = 10;
/// c10k (seed 003): a new client every 1 ms, one message per client per second, 300 s.
pub const DEFAULT_C10K_ARRIVAL: Duration = Duration::from_millis(1);
pub const DEFAULT_C10K_INTERVAL: Duration = Duration::from_secs(1);
pub const DEFAULT_C10K_DURATION: Duration = Duration::from_secs(300);
/// An open-loop run whose send lag p99 exceeds this was limited by the client.
pub const DEFAULT_MAX_SEND_LAG: Duration = Duration::from_millis(5);

/// A bad setting, named, with what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{0}")]
    Unit(#[from] UnitError),
    #[error("--{setting}: {problem}")]
    Invalid { setting: &'static str, problem: String },
    #[error("cannot read scenario file {path}: {source}")]
    ReadScenario { path: PathBuf, source: std::io::Error },
    #[error("scenario file {path}: {message}")]
    ParseScenario { path: PathBuf, message: String },
}

fn invalid(setting: &'static str, problem: impl Into<String>) -> ConfigError {
    ConfigError::Invalid { setting, problem: problem.into() }
}

/// The scenarios of `wsbench run`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scenario {
    /// Closed loop: each connection keeps K messages in flight (seeds 000/002).
    Echo,
    /// F frames per send, as fast as the server echoes (seed 004).
    Throughput,
    /// Open N connections and hold them; connections/ms and connections/MB (seed 004).
    Scalability,
    /// Open loop: a new client every `--arrival`, each sending on a fixed schedule (seed 003).
    C10k,
}

impl std::str::FromStr for Scenario {
    type Err = ConfigError;
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name {
            "echo" => Ok(Scenario::Echo),
            "throughput" => Ok(Scenario::Throughput),
            "scalability" => Ok(Scenario::Scalability),
            "c10k" => Ok(Scenario::C10k),
            other => Err(invalid(
                "scenario",
                format!("unknown scenario `{other}`: use echo, throughput, scalability or c10k"),
            )),
        }
    }
}

impl Scenario {
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Echo => "echo",
            Scenario::Throughput => "throughput",
            Scenario::Scalability => "scalability",
            Scenario::C10k => "c10k",
        }
    }
}

/// What each message carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Payload {
    /// A JSON object with the client's send timestamp and a sequence number, as in seed 000.
    JsonTs,
    /// N random bytes, the same for every message of the run; echoes are checked.
    Bytes(u64),
}

impl std::str::FromStr for Payload {
    type Err = ConfigError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text == "json-ts" {
            return Ok(Payload::JsonTs);
        }
        match text.strip_prefix("bytes:") {
            Some(size) => Ok(Payload::Bytes(parse_bytes(size)?)),
            None => Err(invalid(
                "payload",
                format!("`{text}` is not a payload: use json-ts or bytes:N (e.g. bytes:20)"),
            )),
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

/// Settings as given, from flags or a TOML scenario file; all optional.
#[derive(Debug, Clone, Default, clap::Args, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RunSettings {
    /// Scenario: echo (default), throughput or scalability.
    #[arg(skip)]
    pub scenario: Option<String>,
    /// Server URL (ws:// or wss://); without one, wsbench starts its built-in server.
    #[arg(skip)]
    pub target: Option<String>,
    /// Connections to open.
    #[arg(long)]
    pub connections: Option<u64>,
    /// c10k: clients to connect (the same as --connections).
    #[arg(long)]
    pub clients: Option<u64>,
    /// c10k: time between two new clients (e.g. 1ms).
    #[arg(long)]
    pub arrival: Option<String>,
    /// Open loop: each connection sends one message every interval, whatever the replies.
    #[arg(long)]
    pub interval: Option<String>,
    /// Open loop: total message rate spread over the connections, e.g. 20000/s.
    #[arg(long)]
    pub rate: Option<String>,
    /// Open loop: send lag p99 above this marks the run as client-bound.
    #[arg(long)]
    pub max_send_lag: Option<String>,
    /// Find the highest open-loop rate under --slo (each step runs --warmup + --duration).
    #[arg(long)]
    #[serde(default)]
    pub find_max_rate: bool,
    /// Latency objective for --find-max-rate, e.g. 'p99<10ms' or 'p99<10ms,p999<50ms'.
    #[arg(long)]
    pub slo: Option<String>,
    /// Run the I-th of N equal parts of the scenario (0-based), e.g. 2/5.
    #[arg(long)]
    pub shard: Option<String>,
    /// Begin at this instant (milliseconds since the Unix epoch), so shards start together.
    #[arg(long)]
    pub start_at: Option<u64>,
    /// Connection rate while ramping up, e.g. 75/s (default: as fast as possible).
    #[arg(long)]
    pub ramp: Option<String>,
    /// Measured load time, after the ramp and the warm-up.
    #[arg(long)]
    pub duration: Option<String>,
    /// Load time after the ramp that is not measured.
    #[arg(long)]
    pub warmup: Option<String>,
    /// Scalability: how long to hold the connections open.
    #[arg(long)]
    pub hold: Option<String>,
    /// Messages each connection keeps in flight (closed loop).
    #[arg(long)]
    pub in_flight: Option<u64>,
    /// Message payload: json-ts or bytes:N.
    #[arg(long)]
    pub payload: Option<String>,
    /// Throughput: payload bytes per frame (same as --payload bytes:N).
    #[arg(long)]
    pub payload_bytes: Option<String>,
    /// Throughput: frames written in one send.
    #[arg(long)]
    pub frames_per_send: Option<u64>,
    /// Send binary frames.
    #[arg(long, conflicts_with = "text")]
    #[serde(default)]
    pub binary: bool,
    /// Send text frames.
    #[arg(long)]
    #[serde(default)]
    pub text: bool,
    /// Give up on a connection not established by then.
    #[arg(long)]
    pub connect_timeout: Option<String>,
    /// CPUs for the client's workers, one worker per CPU (e.g. 1 or 1-3).
    #[arg(long)]
    pub client_cpus: Option<String>,
    /// CPUs for the built-in server wsbench starts (e.g. 0).
    #[arg(long)]
    pub server_cpus: Option<String>,
    /// Source addresses to spread connections over, e.g. 127.0.0.2-127.0.0.40.
    #[arg(long)]
    pub source_addrs: Option<String>,
    /// Reopen a connection the server closed or reset (after a short pause), counting each
    /// reconnection; off by default, so a lost connection stays lost.
    #[arg(long)]
    #[serde(default)]
    pub reconnect: bool,
    /// Accept any TLS certificate (for self-signed servers).
    #[arg(long)]
    #[serde(default)]
    pub insecure: bool,
    /// Measure this process as the server instead of finding it by its port.
    #[arg(long)]
    pub server_pid: Option<u32>,
    /// Write the result file here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write per-second latency histograms as an HdrHistogram log here.
    #[arg(long)]
    pub hlog: Option<PathBuf>,
    /// Run the scenario as N client processes (shards of this run, each with its own
    /// open-file limit) and merge their results.
    #[arg(long)]
    pub processes: Option<u64>,
    /// Start the built-in server as N processes sharing the port (`serve --processes N`).
    #[arg(long)]
    pub server_processes: Option<u64>,
    /// Do not sample the server (a `--processes` parent probes it for its shards).
    #[arg(long)]
    #[serde(default)]
    pub no_probe: bool,
}

impl RunSettings {
    /// Reads a TOML scenario file (the same keys as the flags, kebab-case).
    pub fn from_file(path: &Path) -> Result<RunSettings, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| ConfigError::ReadScenario { path: path.to_owned(), source })?;
        toml::from_str(&text).map_err(|e| ConfigError::ParseScenario {
            path: path.to_owned(),
            message: e.message().to_owned()
                + &e.span().map(|s| format!(" (at byte {})", s.start)).unwrap_or_default(),
        })
    }

    /// `self` overrides `base` wherever `self` has a value.
    pub fn over(self, base: RunSettings) -> RunSettings {
        RunSettings {
            scenario: self.scenario.or(base.scenario),
            target: self.target.or(base.target),
            connections: self.connections.or(base.connections),
            clients: self.clients.or(base.clients),
            arrival: self.arrival.or(base.arrival),
            interval: self.interval.or(base.interval),
            rate: self.rate.or(base.rate),
            max_send_lag: self.max_send_lag.or(base.max_send_lag),
            find_max_rate: self.find_max_rate || base.find_max_rate,
            slo: self.slo.or(base.slo),
            shard: self.shard.or(base.shard),
            start_at: self.start_at.or(base.start_at),
            ramp: self.ramp.or(base.ramp),
            duration: self.duration.or(base.duration),
            warmup: self.warmup.or(base.warmup),
            hold: self.hold.or(base.hold),
            in_flight: self.in_flight.or(base.in_flight),
            payload: self.payload.or(base.payload),
            payload_bytes: self.payload_bytes.or(base.payload_bytes),
            frames_per_send: self.frames_per_send.or(base.frames_per_send),
            binary: self.binary || (base.binary && !self.text),
            text: self.text || (base.text && !self.binary),
            connect_timeout: self.connect_timeout.or(base.connect_timeout),
            client_cpus: self.client_cpus.or(base.client_cpus),
            server_cpus: self.server_cpus.or(base.server_cpus),
            source_addrs: self.source_addrs.or(base.source_addrs),
            insecure: self.insecure || base.insecure,
            reconnect: self.reconnect || base.reconnect,
            server_pid: self.server_pid.or(base.server_pid),
            json: self.json.or(base.json),
            hlog: self.hlog.or(base.hlog),
            processes: self.processes.or(base.processes),
            server_processes: self.server_processes.or(base.server_processes),
            no_probe: self.no_probe || base.no_probe,
        }
    }

    /// The command-line arguments of `wsbench run` that give these settings back: the
    /// scenario and the target as positionals, then one `--flag=value` per set field.
    /// `--processes` re-runs a scenario in child processes with them.
    pub fn to_args(&self) -> Vec<String> {
        // Destructured without `..`: a new setting does not compile until it is passed on.
        let RunSettings {
            scenario,
            target,
            connections,
            clients,
            arrival,
            interval,
            rate,
            max_send_lag,
            find_max_rate,
            slo,
            shard,
            start_at,
            ramp,
            duration,
            warmup,
            hold,
            in_flight,
            payload,
            payload_bytes,
            frames_per_send,
            binary,
            text,
            connect_timeout,
            client_cpus,
            server_cpus,
            source_addrs,
            insecure,
            reconnect,
            server_pid,
            json,
            hlog,
            processes,
            server_processes,
            no_probe,
        } = self;
        let mut args: Vec<String> = scenario.iter().chain(target).cloned().collect();
        let mut value = |flag: &str, value: Option<String>| {
            if let Some(value) = value {
                args.push(format!("--{flag}={value}"));
            }
        };
        let text_of = |v: &Option<String>| v.clone();
        let number = |v: &Option<u64>| v.map(|n| n.to_string());
        let path = |v: &Option<PathBuf>| v.as_ref().map(|p| p.display().to_string());
        value("connections", number(connections));
        value("clients", number(clients));
        value("arrival", text_of(arrival));
        value("interval", text_of(interval));
        value("rate", text_of(rate));
        value("max-send-lag", text_of(max_send_lag));
        value("slo", text_of(slo));
        value("shard", text_of(shard));
        value("start-at", number(start_at));
        value("ramp", text_of(ramp));
        value("duration", text_of(duration));
        value("warmup", text_of(warmup));
        value("hold", text_of(hold));
        value("in-flight", number(in_flight));
        value("payload", text_of(payload));
        value("payload-bytes", text_of(payload_bytes));
        value("frames-per-send", number(frames_per_send));
        value("connect-timeout", text_of(connect_timeout));
        value("client-cpus", text_of(client_cpus));
        value("server-cpus", text_of(server_cpus));
        value("source-addrs", text_of(source_addrs));
        value("server-pid", server_pid.map(|p| p.to_string()));
        value("json", path(json));
        value("hlog", path(hlog));
        value("processes", number(processes));
        value("server-processes", number(server_processes));
        for (flag, set) in [
            ("find-max-rate", find_max_rate),
            ("binary", binary),
            ("text", text),
            ("insecure", insecure),
            ("reconnect", reconnect),
            ("no-probe", no_probe),
        ] {
            if *set {
                args.push(format!("--{flag}"));
            }
        }
        args
    }

    /// Applies defaults and checks every value.
    pub fn validate(self) -> Result<RunConfig, ConfigError> {
        let settings = self.clone();
        let scenario: Scenario = self.scenario.as_deref().unwrap_or("echo").parse()?;
        let target = self.target.as_deref().map(Target::parse).transpose()?;
        let connections = match (self.connections, self.clients) {
            (Some(_), Some(_)) => return Err(invalid("clients", "give either --clients or --connections")),
            (count, clients) => count.or(clients).unwrap_or(DEFAULT_CONNECTIONS),
        };
        if connections == 0 {
            return Err(invalid("connections", "must be at least 1"));
        }
        let duration = |value: &Option<String>, default: Duration| -> Result<Duration, ConfigError> {
            Ok(value.as_deref().map(parse_duration).transpose()?.unwrap_or(default))
        };
        let payload = match (&self.payload, &self.payload_bytes) {
            (Some(_), Some(_)) => {
                return Err(invalid("payload-bytes", "give either --payload or --payload-bytes"));
            }
            (Some(text), None) => text.parse()?,
            (None, Some(size)) => Payload::Bytes(parse_bytes(size)?),
            (None, None) if scenario == Scenario::Throughput => Payload::Bytes(DEFAULT_THROUGHPUT_PAYLOAD),
            (None, None) => Payload::JsonTs,
        };
        let frames_per_send = match (scenario, self.frames_per_send) {
            (_, Some(0)) => return Err(invalid("frames-per-send", "must be at least 1")),
            (Scenario::Throughput, frames) => frames.unwrap_or(DEFAULT_FRAMES_PER_SEND),
            (_, Some(_)) => {
                return Err(invalid("frames-per-send", "only applies to the throughput scenario"));
            }
            (_, None) => 1,
        };
        let open_loop = scenario == Scenario::C10k || self.rate.is_some() || self.interval.is_some();
        let in_flight = match (scenario, self.in_flight) {
            (_, Some(0)) => return Err(invalid("in-flight", "must be at least 1")),
            (Scenario::Throughput, Some(k)) if k % frames_per_send != 0 => {
                return Err(invalid(
                    "in-flight",
                    format!("must be a multiple of --frames-per-send ({frames_per_send})"),
                ));
            }
            (_, Some(k)) => k,
            // Open loop sends on schedule whatever is outstanding, unless capped.
            _ if open_loop => u64::MAX,
            (Scenario::Throughput, None) => frames_per_send,
            (_, None) => DEFAULT_IN_FLIGHT,
        };
        let message_interval = match (scenario, &self.rate, &self.interval) {
            (_, Some(_), Some(_)) => return Err(invalid("rate", "give either --rate or --interval")),
            (Scenario::Scalability, Some(_), _) | (Scenario::Scalability, _, Some(_)) => {
                return Err(invalid("rate", "the scalability scenario sends no messages"));
            }
            (_, Some(rate), None) => {
                let per_connection = parse_rate(rate)? / connections as f64;
                Some(Duration::from_secs_f64(1.0 / per_connection))
            }
            (_, None, Some(interval)) => Some(parse_duration(interval)?),
            (Scenario::C10k, None, None) => Some(DEFAULT_C10K_INTERVAL),
            (_, None, None) => None,
        };
        if message_interval.is_some_and(|i| i.is_zero()) {
            return Err(invalid("interval", "must be longer than zero"));
        }
        let message = match (self.binary, self.text, payload) {
            (true, _, Payload::JsonTs) => {
                return Err(invalid(
                    "binary",
                    "json-ts payloads are text; drop --binary or use --payload bytes:N",
                ));
            }
            (true, _, _) => MessageKind::Binary,
            (_, true, _) => MessageKind::Text,
            (_, _, Payload::JsonTs) => MessageKind::Text,
            (_, _, Payload::Bytes(_)) => MessageKind::Binary,
        };
        if let (MessageKind::Text, Payload::Bytes(_)) = (message, payload) {
            // Random bytes are not UTF-8; text frames carry printable ASCII instead.
        }
        let ramp = match (&self.ramp, &self.arrival) {
            (Some(_), Some(_)) => return Err(invalid("arrival", "give either --arrival or --ramp")),
            (Some(rate), None) => Some(parse_rate(rate)?),
            (None, Some(arrival)) => {
                let arrival = parse_duration(arrival)?;
                if arrival.is_zero() {
                    return Err(invalid(
                        "arrival",
                        "must be longer than zero (omit it to connect as fast as possible)",
                    ));
                }
                Some(1.0 / arrival.as_secs_f64())
            }
            (None, None) if scenario == Scenario::C10k => Some(1.0 / DEFAULT_C10K_ARRIVAL.as_secs_f64()),
            (None, None) => None,
        };
        let client_cpus = self
            .client_cpus
            .as_deref()
            .map(crate::affinity::parse_cpu_list)
            .transpose()
            .map_err(|e| invalid("client-cpus", e.to_string()))?;
        let server_cpus = self
            .server_cpus
            .as_deref()
            .map(crate::affinity::parse_cpu_list)
            .transpose()
            .map_err(|e| invalid("server-cpus", e.to_string()))?;
        let source_addrs =
            self.source_addrs.as_deref().map(parse_addr_range).transpose()?.unwrap_or_default();
        let find_max_rate = match (self.find_max_rate, self.slo) {
            (false, None) => None,
            (false, Some(_)) => return Err(invalid("slo", "only applies with --find-max-rate")),
            (true, None) => {
                return Err(invalid("find-max-rate", "needs a latency objective, e.g. --slo 'p99<10ms'"));
            }
            (true, Some(_)) if !matches!(scenario, Scenario::Echo | Scenario::Throughput) => {
                return Err(invalid("find-max-rate", "applies to the echo and throughput scenarios"));
            }
            (true, Some(slo)) => Some(slo.parse::<crate::find_rate::Slo>()?),
        };
        let shard = self.shard.as_deref().map(|text| Shard::parse(text, connections)).transpose()?;
        let processes = match self.processes {
            None | Some(1) => 1,
            Some(0) => return Err(invalid("processes", "must be at least 1")),
            Some(_) if shard.is_some() => {
                return Err(invalid(
                    "processes",
                    "give either --processes or --shard (a shard runs in one process)",
                ));
            }
            Some(_) if find_max_rate.is_some() => {
                return Err(invalid("processes", "does not combine with --find-max-rate"));
            }
            Some(n) if n > connections => {
                return Err(invalid(
                    "processes",
                    format!(
                        "{n} processes for {connections} connections: use at most one process per connection"
                    ),
                ));
            }
            Some(n) => n,
        };
        let server_processes = match self.server_processes {
            None => 1,
            Some(0) => return Err(invalid("server-processes", "must be at least 1")),
            Some(_) if target.is_some() => {
                return Err(invalid("server-processes", "only applies to the built-in server (give no URL)"));
            }
            Some(n) => n,
        };
        if target.is_some() && server_cpus.is_some() {
            return Err(invalid("server-cpus", "only applies to the built-in server (give no URL)"));
        }
        Ok(RunConfig {
            scenario,
            target,
            connections,
            ramp_per_sec: ramp,
            duration: duration(
                &self.duration,
                if scenario == Scenario::C10k { DEFAULT_C10K_DURATION } else { DEFAULT_DURATION },
            )?,
            warmup: duration(
                &self.warmup,
                if matches!(scenario, Scenario::Scalability | Scenario::C10k) {
                    Duration::ZERO
                } else {
                    DEFAULT_WARMUP
                },
            )?,
            message_interval,
            find_max_rate,
            shard,
            start_at_unix_ms: self.start_at,
            max_send_lag: duration(&self.max_send_lag, DEFAULT_MAX_SEND_LAG)?,
            hold: duration(&self.hold, DEFAULT_HOLD)?,
            in_flight,
            payload,
            message,
            frames_per_send,
            connect_timeout: duration(&self.connect_timeout, DEFAULT_CONNECT_TIMEOUT)?,
            client_cpus,
            server_cpus,
            source_addrs,
            insecure: self.insecure,
            reconnect: self.reconnect,
            server_pid: self.server_pid,
            json: self.json,
            hlog: self.hlog,
            processes,
            server_processes,
            no_probe: self.no_probe,
            settings,
        })
    }
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

/// `127.0.0.2-127.0.0.40` or a comma-separated list of addresses.
pub fn parse_addr_range(text: &str) -> Result<Vec<IpAddr>, ConfigError> {
    let bad = |why: &str| invalid("source-addrs", format!("`{text}`: {why}; use e.g. 127.0.0.2-127.0.0.40"));
    let mut addrs = Vec::new();
    for part in text.split(',').map(str::trim) {
        match part.split_once('-') {
            Some((first, last)) => {
                let first: std::net::Ipv4Addr =
                    first.trim().parse().map_err(|_| bad("not an IPv4 address"))?;
                let last: std::net::Ipv4Addr = last.trim().parse().map_err(|_| bad("not an IPv4 address"))?;
                let (a, b) = (u32::from(first), u32::from(last));
                if a > b || b - a > 65_535 {
                    return Err(bad("the range is reversed or too large"));
                }
                addrs.extend((a..=b).map(|n| IpAddr::from(std::net::Ipv4Addr::from(n))));
            }
            None => addrs.push(part.parse().map_err(|_| bad("not an IP address"))?),
        }
    }
    Ok(addrs)
}

/// A validated run: what the engine executes. Serialized into the result file.
#[derive(Debug, Clone, Serialize)]
pub struct RunConfig {
    pub scenario: Scenario,
    /// `None`: start the built-in server.
    pub target: Option<Target>,
    pub connections: u64,
    pub ramp_per_sec: Option<f64>,
    #[serde(serialize_with = "as_secs")]
    pub duration: Duration,
    #[serde(serialize_with = "as_secs")]
    pub warmup: Duration,
    #[serde(serialize_with = "as_secs")]
    pub hold: Duration,
    /// Messages a connection may have outstanding (`u64::MAX`: no cap, open loop's default).
    pub in_flight: u64,
    /// Open loop: each connection sends one batch every interval on a fixed schedule;
    /// `None` is the closed loop (send the next when an echo returns).
    #[serde(serialize_with = "as_optional_secs")]
    pub message_interval: Option<Duration>,
    #[serde(serialize_with = "as_secs")]
    pub max_send_lag: Duration,
    /// Search for the highest rate under this objective instead of one run.
    pub find_max_rate: Option<crate::find_rate::Slo>,
    /// This process runs one part of the scenario.
    pub shard: Option<Shard>,
    /// Common start instant of the shards (ms since the Unix epoch).
    pub start_at_unix_ms: Option<u64>,
    pub payload: Payload,
    pub message: MessageKind,
    pub frames_per_send: u64,
    #[serde(serialize_with = "as_secs")]
    pub connect_timeout: Duration,
    pub client_cpus: Option<Vec<usize>>,
    pub server_cpus: Option<Vec<usize>>,
    pub source_addrs: Vec<IpAddr>,
    /// Reopen connections the server closed or reset.
    pub reconnect: bool,
    pub insecure: bool,
    pub server_pid: Option<u32>,
    pub json: Option<PathBuf>,
    pub hlog: Option<PathBuf>,
    /// Client processes the run is split into (1: this process runs it all).
    pub processes: u64,
    /// Processes of the built-in server.
    pub server_processes: u64,
    /// The server is not sampled by this process.
    pub no_probe: bool,
    /// The settings this configuration was validated from, to hand to child processes.
    #[serde(skip)]
    pub settings: RunSettings,
}

impl RunConfig {
    /// The most connections one process of this run opens: the whole run, this shard's
    /// share, or the largest share of its `--processes` children. The open-file limit is
    /// checked against this.
    pub fn connections_per_process(&self) -> u64 {
        match self.shard {
            Some(shard) => shard.share_of(self.connections),
            None => self.connections.div_ceil(self.processes.max(1)),
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(f: impl FnOnce(&mut RunSettings)) -> RunSettings {
        let mut s = RunSettings::default();
        f(&mut s);
        s
    }

    #[test]
    fn defaults_are_the_seed_echo_loop() {
        let config = RunSettings::default().validate().unwrap();
        assert_eq!(config.scenario, Scenario::Echo);
        assert_eq!(config.connections, DEFAULT_CONNECTIONS);
        assert_eq!(config.payload, Payload::JsonTs);
        assert_eq!(config.message, MessageKind::Text);
        assert_eq!(config.in_flight, 1);
        assert!(config.target.is_none());
    }

    #[test]
    fn throughput_defaults_follow_the_uws_benchmark() {
        let config = settings(|s| s.scenario = Some("throughput".into())).validate().unwrap();
        assert_eq!(config.payload, Payload::Bytes(20));
        assert_eq!(config.frames_per_send, 10);
        assert_eq!(config.in_flight, 10);
        assert_eq!(config.message, MessageKind::Binary);
    }

    #[test]
    fn flags_override_the_scenario_file() {
        let file: RunSettings =
            toml::from_str("scenario = \"echo\"\nconnections = 25000\nramp = \"75/s\"\n").unwrap();
        let flags = settings(|s| s.connections = Some(10));
        let config = flags.over(file).validate().unwrap();
        assert_eq!(config.connections, 10);
        assert_eq!(config.ramp_per_sec, Some(75.0));
    }

    #[test]
    fn bad_values_name_the_setting() {
        let cases: Vec<(RunSettings, &str)> = vec![
            (settings(|s| s.connections = Some(0)), "--connections"),
            (settings(|s| s.payload = Some("words".into())), "--payload"),
            (settings(|s| s.duration = Some("soon".into())), "duration"),
            (settings(|s| s.scenario = Some("c1m".into())), "--scenario"),
            (settings(|s| s.frames_per_send = Some(3)), "--frames-per-send"),
            (settings(|s| s.source_addrs = Some("127.0.0.9-127.0.0.2".into())), "--source-addrs"),
            (settings(|s| s.target = Some("http://x".into())), "ws://"),
        ];
        for (settings, expected) in cases {
            let message = settings.validate().unwrap_err().to_string();
            assert!(message.contains(expected), "{message:?} should mention {expected}");
        }
    }

    #[test]
    fn unknown_keys_in_a_scenario_file_are_rejected() {
        let error = toml::from_str::<RunSettings>("conections = 5\n").unwrap_err();
        assert!(error.to_string().contains("conections"));
    }

    #[test]
    fn c10k_defaults_are_the_seed_setup() {
        let config = settings(|s| s.scenario = Some("c10k".into())).validate().unwrap();
        assert_eq!(config.ramp_per_sec, Some(1000.0));
        assert_eq!(config.message_interval, Some(Duration::from_secs(1)));
        assert_eq!(config.duration, Duration::from_secs(300));
        assert_eq!(config.in_flight, u64::MAX);
        assert_eq!(config.warmup, Duration::ZERO);
    }

    #[test]
    fn rate_spreads_over_the_connections() {
        let config = settings(|s| {
            s.connections = Some(100);
            s.rate = Some("1000/s".into());
            s.in_flight = Some(1);
        })
        .validate()
        .unwrap();
        assert_eq!(config.message_interval, Some(Duration::from_millis(100)));
        assert_eq!(config.in_flight, 1);
    }

    #[test]
    fn shards_divide_the_connections_exactly() {
        for (connections, count) in [(25_000u64, 5u64), (10, 3), (7, 7), (1000, 6)] {
            let shards: Vec<Shard> =
                (0..count).map(|i| Shard::parse(&format!("{i}/{count}"), connections).unwrap()).collect();
            let total: u64 = shards.iter().map(|s| s.share_of(connections)).sum();
            assert_eq!(total, connections);
            for i in 0..connections {
                assert_eq!(shards.iter().filter(|s| s.owns(i)).count(), 1, "connection {i} owned once");
            }
            for shard in &shards {
                assert_eq!(
                    (0..connections).filter(|&i| shard.owns(i)).count() as u64,
                    shard.share_of(connections)
                );
            }
        }
        for bad in ["5/5", "1", "a/2", "0/0", "0/20"] {
            assert!(Shard::parse(bad, 10).is_err(), "{bad}");
        }
    }

    #[test]
    fn settings_survive_the_round_trip_through_flags() {
        let some = |text: &str| Some(text.to_owned());
        let every = RunSettings {
            scenario: some("throughput"),
            target: some("ws://127.0.0.1:9/path"),
            connections: Some(100),
            clients: Some(101),
            arrival: some("1ms"),
            interval: some("1s"),
            rate: some("10/s"),
            max_send_lag: some("5ms"),
            find_max_rate: true,
            slo: some("p99<10ms,p999<50ms"),
            shard: some("1/3"),
            start_at: Some(1_700_000_000_000),
            ramp: some("75/s"),
            duration: some("2s"),
            warmup: some("0s"),
            hold: some("3s"),
            in_flight: Some(4),
            payload: some("bytes:20"),
            payload_bytes: some("1KiB"),
            frames_per_send: Some(2),
            binary: true,
            text: false,
            connect_timeout: some("2s"),
            client_cpus: some("1-3"),
            server_cpus: some("0"),
            source_addrs: some("127.0.0.2-127.0.0.6"),
            insecure: true,
            reconnect: true,
            server_pid: Some(42),
            json: Some("out dir/r.json".into()),
            hlog: Some("r.hlog".into()),
            processes: Some(5),
            server_processes: Some(2),
            no_probe: true,
        };
        let args = every.to_args();
        let cli = <crate::cli::Cli as clap::Parser>::try_parse_from(
            ["wsbench", "run"].into_iter().map(str::to_owned).chain(args.iter().cloned()),
        )
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
        let crate::cli::Command::Run(run) = cli.command else { panic!("not a run") };
        assert_eq!(run.positional, ["throughput", "ws://127.0.0.1:9/path"]);
        let mut back = run.settings;
        (back.scenario, back.target) = (every.scenario.clone(), every.target.clone());
        assert_eq!(format!("{back:?}"), format!("{every:?}"));
        assert!(RunSettings::default().to_args().is_empty());
    }

    #[test]
    fn processes_are_checked() {
        let config = settings(|s| s.processes = Some(5)).validate().unwrap();
        assert_eq!((config.processes, config.server_processes), (5, 1));
        let big = settings(|s| {
            s.connections = Some(25_000);
            s.processes = Some(5);
        })
        .validate()
        .unwrap();
        assert_eq!(big.connections_per_process(), 5_000);
        let shard = settings(|s| {
            s.connections = Some(10);
            s.shard = Some("0/3".into());
        })
        .validate()
        .unwrap();
        assert_eq!(shard.connections_per_process(), 4);
        let cases: Vec<(RunSettings, &str)> = vec![
            (settings(|s| s.processes = Some(0)), "--processes: must be at least 1"),
            (settings(|s| s.server_processes = Some(0)), "--server-processes: must be at least 1"),
            (
                settings(|s| {
                    s.processes = Some(2);
                    s.shard = Some("0/2".into());
                }),
                "--processes: give either --processes or --shard",
            ),
            (
                settings(|s| {
                    s.connections = Some(3);
                    s.processes = Some(4);
                }),
                "--processes: 4 processes for 3 connections",
            ),
            (
                settings(|s| {
                    s.target = Some("ws://127.0.0.1:9/".into());
                    s.server_processes = Some(2);
                }),
                "--server-processes: only applies to the built-in server",
            ),
        ];
        for (settings, expected) in cases {
            let message = settings.validate().unwrap_err().to_string();
            assert!(message.starts_with(expected), "{message:?} should start with {expected:?}");
        }
        let file: RunSettings = toml::from_str("processes = 5\nserver-processes = 2\n").unwrap();
        assert_eq!((file.processes, file.server_processes), (Some(5), Some(2)));
    }

    #[test]
    fn source_address_ranges() {
        let addrs = parse_addr_range("127.0.0.2-127.0.0.4").unwrap();
        assert_eq!(addrs.len(), 3);
        assert_eq!(addrs[2], IpAddr::from([127, 0, 0, 4]));
    }
}
