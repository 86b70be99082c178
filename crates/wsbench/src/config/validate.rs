//! From settings to a [`RunConfig`]: every default applied, every value checked, each rule
//! in a small function named after the setting it decides. Errors are one line naming the
//! flag and what to do ([`ConfigError`]); nothing here touches the network, and the disk
//! only to check that the output files can be written (`outputs.rs`) and to read the
//! `--header-file` and TLS PEM files (`handshake.rs`, `tls.rs`).

use std::time::Duration;

use super::IoBackend;
use super::error::{ConfigError, invalid};
use super::handshake::{HandshakeOptions, HandshakeSettings};
use super::outputs::check_output_file;
use super::settings::RunSettings;
use super::tls::{TlsOptions, TlsSettings};
use super::{
    CompressionOffer, DEFAULT_C10K_ARRIVAL, DEFAULT_C10K_DURATION, DEFAULT_C10K_INTERVAL, DEFAULT_CHURN_RATE,
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_CONNECTIONS, DEFAULT_DURATION, DEFAULT_FRAMES_PER_SEND, DEFAULT_HOLD,
    DEFAULT_IN_FLIGHT, DEFAULT_MAX_SEND_LAG, DEFAULT_MESSAGES_PER_CONNECTION, DEFAULT_PUBSUB_RATE,
    DEFAULT_THROUGHPUT_PAYLOAD, DEFAULT_WARMUP, FlowProgram, LiveOutputs, LoadSpec, MessageKind, Mode,
    Outputs, Payload, Placement, RunConfig, Sampling, Scenario, Shard, Threshold, parse_addr_range,
};
use crate::config::Target;
use crate::units::{parse_bytes, parse_duration, parse_rate};

impl RunSettings {
    /// Applies defaults and checks every value.
    pub fn validate(&self) -> Result<RunConfig, ConfigError> {
        let scenario: Scenario = self.scenario.as_deref().unwrap_or("echo").parse()?;
        let target = self.target.as_deref().map(Target::parse).transpose()?;
        let churn = self.churn(scenario)?;
        let pubsub = self.pubsub(scenario)?;
        let connections = match (churn, pubsub) {
            (Some((_, connections)), _) => connections,
            (None, Some(pubsub)) => pubsub.connections(),
            (None, None) => self.connections()?,
        };
        let payload = self.payload(scenario)?;
        if pubsub.is_some() {
            super::pubsub::check_payload(&payload)?;
        }
        let message = self.message_kind(&payload)?;
        let frames_per_send = self.frames_per_send(scenario)?;
        let open_loop = matches!(scenario, Scenario::C10k | Scenario::PubSub)
            || (churn.is_none() && (self.rate.is_some() || self.interval.is_some()));
        let in_flight = self.in_flight(scenario, frames_per_send, open_loop)?;
        let mode = self.mode(scenario)?;
        let thresholds = self.thresholds(&mode)?;
        let shard = self.shard.as_deref().map(|text| Shard::parse(text, connections)).transpose()?;
        let placement = self.placement(connections, target.is_some(), shard.is_some(), &mode)?;
        let (default_duration, default_warmup) = match scenario {
            Scenario::C10k => (DEFAULT_C10K_DURATION, Duration::ZERO),
            Scenario::Scalability | Scenario::Flow => (DEFAULT_DURATION, Duration::ZERO),
            // churn: the warm-up is a run of its own before the measured one (session).
            Scenario::Echo | Scenario::Throughput | Scenario::PubSub | Scenario::Churn => {
                (DEFAULT_DURATION, DEFAULT_WARMUP)
            }
        };
        let load = LoadSpec {
            scenario,
            connections,
            ramp_per_sec: match churn {
                Some((rate, _)) => Some(rate),
                None => self.ramp(scenario)?,
            },
            duration: duration("duration", &self.duration, default_duration)?,
            warmup: bounded("warmup", &self.warmup, default_warmup)?,
            hold: duration("hold", &self.hold, DEFAULT_HOLD)?,
            in_flight,
            message_interval: match (churn, pubsub) {
                (Some(_), _) => None,
                (None, Some(pubsub)) => self.publish_interval(pubsub.publishers)?,
                (None, None) => self.message_interval(scenario, connections)?,
            },
            shard,
            start_at_unix_ms: self.start_at,
            payload,
            message,
            frames_per_send,
            connect_timeout: duration("connect-timeout", &self.connect_timeout, DEFAULT_CONNECT_TIMEOUT)?,
            source_addrs: self.source_addrs.as_deref().map(parse_addr_range).transpose()?.unwrap_or_default(),
            reconnect: self.reconnect,
            insecure: self.insecure,
            handshake: self.handshake()?,
            tls: self.tls(target.as_ref())?,
            compression: self.compression()?,
            messages_per_connection: self.messages_per_connection(scenario)?,
            flow: self.flow(scenario)?,
            pubsub,
            io: self.io()?,
        };
        let live = self.live(placement.processes)?;
        Ok(RunConfig {
            load,
            target,
            max_send_lag: duration("max-send-lag", &self.max_send_lag, DEFAULT_MAX_SEND_LAG)?,
            mode,
            placement,
            sampling: Sampling { server_pid: self.server_pid, no_probe: self.no_probe },
            outputs: self.outputs()?,
            thresholds,
            run_id: self.run_id()?,
            live,
        })
    }

    /// The upgrade request's extra headers and subprotocols, checked (the header file read).
    fn handshake(&self) -> Result<HandshakeOptions, ConfigError> {
        HandshakeSettings {
            headers: &self.header,
            header_file: self.header_file.as_deref(),
            subprotocol: self.subprotocol.as_deref(),
            origin: self.origin.as_deref(),
            bearer: self.bearer.as_deref(),
            cookie: self.cookie.as_deref(),
        }
        .validate()
    }

    /// The TLS options of a `wss://` target, checked (the PEM files read).
    fn tls(&self, target: Option<&Target>) -> Result<TlsOptions, ConfigError> {
        TlsSettings {
            cacert: self.cacert.as_deref(),
            client_cert: self.client_cert.as_deref(),
            client_key: self.client_key.as_deref(),
            sni: self.sni.as_deref(),
            version: self.tls_version.as_deref(),
            insecure: self.insecure,
            tls_target: target.is_some_and(|t| t.tls),
        }
        .validate()
    }

    /// `--io uring|epoll`.
    fn io(&self) -> Result<IoBackend, ConfigError> {
        match self.io.as_deref() {
            None => Ok(IoBackend::DEFAULT),
            Some("uring" | "io_uring" | "io-uring") => Ok(IoBackend::Uring),
            Some("epoll") => Ok(IoBackend::Epoll),
            Some(other) => Err(invalid("io", format!("`{other}` is not an I/O backend: use uring or epoll"))),
        }
    }

    /// The permessage-deflate offer, if `--compression` asks for one.
    fn compression(&self) -> Result<Option<CompressionOffer>, ConfigError> {
        self.compression.as_deref().map_or(Ok(None), CompressionOffer::parse)
    }

    /// `--quiet`, `--metrics-addr` and `--stream`. A `--processes` run's shards each show
    /// their own progress lines (the parent prefixes them); one endpoint or stream over
    /// several processes is not built, so those two are refused there.
    fn live(&self, processes: u64) -> Result<LiveOutputs, ConfigError> {
        let metrics_addr = self.metrics_addr.as_deref().map(parse_metrics_addr).transpose()?;
        if let Some(path) = &self.stream {
            check_output_file("stream", path)?;
        }
        if processes > 1 {
            let given = if metrics_addr.is_some() {
                Some("metrics-addr")
            } else {
                self.stream.as_ref().map(|_| "stream")
            };
            if let Some(setting) = given {
                return Err(invalid(
                    setting,
                    "does not combine with --processes yet: run one process (or --shard I/N by hand, one endpoint each)",
                ));
            }
        }
        Ok(LiveOutputs { quiet: self.quiet, metrics_addr, stream: self.stream.clone() })
    }

    /// The output files, each checked to be writable before any load is sent.
    fn outputs(&self) -> Result<Outputs, ConfigError> {
        for (setting, path) in [("json", &self.json), ("hlog", &self.hlog)] {
            if let Some(path) = path {
                check_output_file(setting, path)?;
            }
        }
        Ok(Outputs { json: self.json.clone(), hlog: self.hlog.clone() })
    }

    fn thresholds(&self, mode: &Mode) -> Result<Vec<Threshold>, ConfigError> {
        if matches!(mode, Mode::FindMaxRate(_)) && !self.threshold.is_empty() {
            return Err(invalid(
                "threshold",
                "does not combine with --find-max-rate (its --slo judges every step)",
            ));
        }
        self.threshold.iter().map(|text| text.parse()).collect()
    }

    /// `--run-id`, checked; else shards started together by hand (`--shard` with
    /// `--start-at`) share one derived from their start; else a new one.
    fn run_id(&self) -> Result<String, ConfigError> {
        match (&self.run_id, &self.shard, self.start_at) {
            (Some(id), _, _) => {
                let fits = |c: char| c.is_ascii_alphanumeric() || "._-".contains(c);
                if id.is_empty() || id.len() > 64 || !id.chars().all(fits) {
                    return Err(invalid(
                        "run-id",
                        format!("`{id}`: use 1 to 64 letters, digits, `.`, `_` or `-`"),
                    ));
                }
                Ok(id.clone())
            }
            (None, Some(_), Some(start_at)) => Ok(format!("start-{start_at}")),
            (None, _, _) => Ok(new_run_id()),
        }
    }

    fn connections(&self) -> Result<u64, ConfigError> {
        let connections = match (self.connections, self.clients) {
            (Some(_), Some(_)) => return Err(invalid("clients", "give either --clients or --connections")),
            (count, clients) => count.or(clients).unwrap_or(DEFAULT_CONNECTIONS),
        };
        if connections == 0 {
            return Err(invalid("connections", "must be at least 1"));
        }
        Ok(connections)
    }

    fn payload(&self, scenario: Scenario) -> Result<Payload, ConfigError> {
        Ok(match (&self.payload, &self.payload_bytes) {
            (Some(_), Some(_)) => {
                return Err(invalid("payload-bytes", "give either --payload or --payload-bytes"));
            }
            (Some(text), None) => text.parse()?,
            (None, Some(size)) => Payload::Bytes(parse_bytes(size)?),
            (None, None) if scenario == Scenario::Throughput => Payload::Bytes(DEFAULT_THROUGHPUT_PAYLOAD),
            (None, None) => Payload::JsonTs,
        })
    }

    fn frames_per_send(&self, scenario: Scenario) -> Result<u64, ConfigError> {
        match (scenario, self.frames_per_send) {
            (_, Some(0)) => Err(invalid("frames-per-send", "must be at least 1")),
            (Scenario::Throughput, frames) => Ok(frames.unwrap_or(DEFAULT_FRAMES_PER_SEND)),
            (_, Some(_)) => Err(invalid("frames-per-send", "only applies to the throughput scenario")),
            (_, None) => Ok(1),
        }
    }

    fn in_flight(
        &self,
        scenario: Scenario,
        frames_per_send: u64,
        open_loop: bool,
    ) -> Result<u64, ConfigError> {
        match (scenario, self.in_flight) {
            (_, Some(0)) => Err(invalid("in-flight", "must be at least 1")),
            (Scenario::Throughput, Some(k)) if k % frames_per_send != 0 => Err(invalid(
                "in-flight",
                format!("must be a multiple of --frames-per-send ({frames_per_send})"),
            )),
            (_, Some(k)) => Ok(k),
            // Open loop sends on schedule whatever is outstanding, unless capped.
            _ if open_loop => Ok(u64::MAX),
            (Scenario::Throughput, None) => Ok(frames_per_send),
            (_, None) => Ok(DEFAULT_IN_FLIGHT),
        }
    }

    /// churn: new connections per second (`--rate`) and the connections of the whole run
    /// (rate × duration, at least 1); `None` for the other scenarios.
    fn churn(&self, scenario: Scenario) -> Result<Option<(f64, u64)>, ConfigError> {
        if scenario != Scenario::Churn {
            return Ok(None);
        }
        let reject = |flag: &'static str, given: bool| match given {
            true => {
                Err(invalid(flag, "churn opens --rate new connections per second for --duration; drop it"))
            }
            false => Ok(()),
        };
        reject("connections", self.connections.is_some() || self.clients.is_some())?;
        reject("ramp", self.ramp.is_some() || self.arrival.is_some())?;
        reject("interval", self.interval.is_some())?;
        let rate = self.rate.as_deref().map(parse_rate).transpose()?.unwrap_or(DEFAULT_CHURN_RATE);
        let duration = duration("duration", &self.duration, DEFAULT_DURATION)?;
        let connections = (rate * duration.as_secs_f64()).round().max(1.0) as u64;
        Ok(Some((rate, connections)))
    }

    /// flow: the `[[flow.steps]]`, compiled; the scenario and the steps come together.
    fn flow(&self, scenario: Scenario) -> Result<Option<FlowProgram>, ConfigError> {
        match (scenario, &self.flow) {
            (Scenario::Flow, Some(_)) if self.rate.is_some() || self.interval.is_some() => {
                Err(invalid("rate", "a flow sends as its steps say: drop --rate/--interval"))
            }
            (Scenario::Flow, Some(flow)) => flow.compile().map(Some),
            (Scenario::Flow, None) => Err(invalid(
                "scenario",
                "flow runs the [[flow.steps]] of a scenario file: give --scenario FILE",
            )),
            (_, Some(_)) => Err(invalid("flow.steps", "[[flow.steps]] need scenario = \"flow\"")),
            (_, None) => Ok(None),
        }
    }

    /// `--messages-per-connection`: churn only.
    fn messages_per_connection(&self, scenario: Scenario) -> Result<u64, ConfigError> {
        match (scenario, self.messages_per_connection) {
            (Scenario::Churn, count) => Ok(count.unwrap_or(DEFAULT_MESSAGES_PER_CONNECTION)),
            (_, None) => Ok(DEFAULT_MESSAGES_PER_CONNECTION),
            (_, Some(_)) => Err(invalid("messages-per-connection", "applies to the churn scenario only")),
        }
    }

    fn message_interval(
        &self,
        scenario: Scenario,
        connections: u64,
    ) -> Result<Option<Duration>, ConfigError> {
        let interval = match (scenario, &self.rate, &self.interval) {
            (_, Some(_), Some(_)) => return Err(invalid("rate", "give either --rate or --interval")),
            (Scenario::Scalability, Some(_), _) | (Scenario::Scalability, _, Some(_)) => {
                return Err(invalid("rate", "the scalability scenario sends no messages"));
            }
            (_, Some(rate), None) => {
                let per_connection = parse_rate(rate)? / connections as f64;
                Some(Duration::from_secs_f64(1.0 / per_connection))
            }
            (_, None, Some(_)) => Some(duration("interval", &self.interval, Duration::ZERO)?),
            (Scenario::C10k, None, None) => Some(DEFAULT_C10K_INTERVAL),
            (_, None, None) => None,
        };
        Ok(interval)
    }

    /// pubsub: each publisher's interval, from `--rate` (shared by the publishers, default
    /// [`DEFAULT_PUBSUB_RATE`]) or `--interval` (each publisher's own).
    fn publish_interval(&self, publishers: u64) -> Result<Option<Duration>, ConfigError> {
        if self.rate.is_none() && self.interval.is_none() {
            return Ok(Some(Duration::from_secs_f64(publishers as f64 / DEFAULT_PUBSUB_RATE)));
        }
        self.message_interval(Scenario::PubSub, publishers)
    }

    /// Text or binary frames. Random bytes are not UTF-8: text frames of a `bytes:N` payload
    /// carry printable ASCII instead.
    fn message_kind(&self, payload: &Payload) -> Result<MessageKind, ConfigError> {
        Ok(match (self.binary, self.text, payload) {
            (true, _, Payload::JsonTs) => {
                return Err(invalid(
                    "binary",
                    "json-ts payloads are text; drop --binary or use --payload bytes:N",
                ));
            }
            (true, _, _) => MessageKind::Binary,
            (_, _, Payload::Text(lines)) if !lines.is_utf8() => {
                return Err(invalid(
                    "payload",
                    format!(
                        "{} is not UTF-8, so its lines cannot be text frames; add --binary",
                        lines.path.display()
                    ),
                ));
            }
            (_, true, _) => MessageKind::Text,
            (_, _, Payload::JsonTs | Payload::Text(_)) => MessageKind::Text,
            (_, _, Payload::Bytes(_)) => MessageKind::Binary,
        })
    }

    /// New connections per second while ramping up (`None`: as fast as possible).
    fn ramp(&self, scenario: Scenario) -> Result<Option<f64>, ConfigError> {
        Ok(match (&self.ramp, &self.arrival) {
            (Some(_), Some(_)) => return Err(invalid("arrival", "give either --arrival or --ramp")),
            (Some(rate), None) => Some(parse_rate(rate)?),
            (None, Some(_)) => {
                let arrival = bounded("arrival", &self.arrival, Duration::ZERO)?;
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
        })
    }

    fn mode(&self, scenario: Scenario) -> Result<Mode, ConfigError> {
        match (self.find_max_rate, &self.slo) {
            (false, None) => Ok(Mode::Once),
            (false, Some(_)) => Err(invalid("slo", "only applies with --find-max-rate")),
            (true, None) => Err(invalid("find-max-rate", "needs a latency objective, e.g. --slo 'p99<10ms'")),
            (true, Some(_)) if !matches!(scenario, Scenario::Echo | Scenario::Throughput) => {
                Err(invalid("find-max-rate", "applies to the echo and throughput scenarios"))
            }
            (true, Some(slo)) => Ok(Mode::FindMaxRate(slo.parse()?)),
        }
    }

    /// CPUs and processes of the client and of the built-in server.
    fn placement(
        &self,
        connections: u64,
        has_url: bool,
        sharded: bool,
        mode: &Mode,
    ) -> Result<Placement, ConfigError> {
        let online = crate::affinity::allowed_cpus();
        let cpus = |setting: &'static str, list: &Option<String>| match list.as_deref() {
            None => Ok(None),
            Some(list) => {
                let cpus =
                    crate::affinity::parse_cpu_list(list).map_err(|e| invalid(setting, e.to_string()))?;
                check_online(setting, &cpus, &online).map(|()| Some(cpus))
            }
        };
        let processes = match self.processes {
            None | Some(1) => 1,
            Some(0) => return Err(invalid("processes", "must be at least 1")),
            Some(_) if sharded => {
                return Err(invalid(
                    "processes",
                    "give either --processes or --shard (a shard runs in one process)",
                ));
            }
            Some(_) if matches!(mode, Mode::FindMaxRate(_)) => {
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
            Some(_) if has_url => {
                return Err(invalid("server-processes", "only applies to the built-in server (give no URL)"));
            }
            Some(n) if n > 1 && self.scenario.as_deref() == Some("pubsub") => {
                return Err(invalid(
                    "server-processes",
                    "the built-in pub/sub server runs one event loop (one topic table): drop it",
                ));
            }
            Some(n) => n,
        };
        let server_cpus = cpus("server-cpus", &self.server_cpus)?;
        if has_url && server_cpus.is_some() {
            return Err(invalid("server-cpus", "only applies to the built-in server (give no URL)"));
        }
        Ok(Placement {
            client_cpus: cpus("client-cpus", &self.client_cpus)?,
            server_cpus,
            processes,
            server_processes,
        })
    }
}

/// Every CPU of `--client-cpus`/`--server-cpus` is one this process may run on.
fn check_online(setting: &'static str, cpus: &[usize], online: &[usize]) -> Result<(), ConfigError> {
    match cpus.iter().find(|cpu| !online.contains(cpu)) {
        None => Ok(()),
        Some(cpu) => Err(invalid(
            setting,
            format!(
                "CPU {cpu} is not online here (CPUs {} are): give CPUs from that list",
                crate::affinity::format_cpu_list(online)
            ),
        )),
    }
}

/// The longest duration any setting takes: a week. Longer is a typo (`999999h`), not a run.
pub const MAX_DURATION: Duration = Duration::from_secs(7 * 24 * 3600);

/// A duration setting, given or `default`: longer than zero and at most [`MAX_DURATION`].
fn duration(
    setting: &'static str,
    value: &Option<String>,
    default: Duration,
) -> Result<Duration, ConfigError> {
    let given = bounded(setting, value, default)?;
    if given.is_zero() {
        return Err(invalid(setting, "must be longer than zero"));
    }
    Ok(given)
}

/// A duration setting, given or `default`, at most [`MAX_DURATION`] (zero allowed: the
/// warm-up).
fn bounded(
    setting: &'static str,
    value: &Option<String>,
    default: Duration,
) -> Result<Duration, ConfigError> {
    let given = value.as_deref().map(parse_duration).transpose()?.unwrap_or(default);
    if given > MAX_DURATION {
        return Err(invalid(setting, "must be at most 7 days (168h)"));
    }
    Ok(given)
}

/// A run id unique enough across runs and machines: the time in nanoseconds and the pid.
fn new_run_id() -> String {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    format!("{nanos:x}-{:x}", std::process::id())
}

/// `--metrics-addr`: an IP address and a port (a name would need a resolver before the run).
fn parse_metrics_addr(text: &str) -> Result<std::net::SocketAddr, ConfigError> {
    text.parse().map_err(|_| {
        invalid(
            "metrics-addr",
            format!("`{text}` is not an address and port: give one such as 127.0.0.1:9464"),
        )
    })
}
