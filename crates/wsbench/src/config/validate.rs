//! From settings to a [`RunConfig`]: every default applied, every value checked, each rule
//! in a small function named after the setting it decides. Errors are one line naming the
//! flag and what to do ([`ConfigError`]); nothing here sends anything: the disk is touched
//! only to check that the output files can be written (`outputs.rs`) and to read the
//! `--header-file` and TLS PEM files (`handshake.rs`, `tls.rs`), sockets only to bind one
//! to each `--source-addrs` address (an address of no interface is refused).

use std::time::Duration;

use std::sync::Arc;

use super::IoBackend;
use super::bounds::{self, bounded, duration};
use super::error::{ConfigError, invalid};
use super::handshake::{HandshakeOptions, HandshakeSettings};
use super::outputs::check_output_file;
use super::scenario::{Defaults, NoSettings, Pace, Pacing, ScenarioRules};
use super::settings::RunSettings;
use super::source_addrs::local_addrs;
use super::tls::{TlsOptions, TlsSettings};
use super::transport::TransportSpec;
use super::{
    CompressionOffer, DEFAULT_CONNECT_TIMEOUT, DEFAULT_CONNECTIONS, DEFAULT_IN_FLIGHT, DEFAULT_MAX_SEND_LAG,
    DEFAULT_REPLY_TIMEOUT, LiveOutputs, LoadSpec, MessageKind, Mode, Outputs, OwnSettings, Payload,
    Placement, RunConfig, Sampling, Shard, StagePlan, Threshold,
};
use crate::config::Target;
use crate::units::{parse_bytes, parse_rate};

/// The members a run uses besides its scenario, looked up in their registries by the
/// caller, with their options checked.
#[derive(Debug, Clone)]
pub struct Members {
    /// The message protocol's name.
    pub protocol: &'static str,
    /// The protocol's own options as given.
    pub protocol_options: crate::options::OptionValues,
    /// Its secrets, read (and taken out of `protocol_options`).
    pub protocol_secrets: crate::options::Secrets,
    pub transport: TransportSpec,
}

impl RunSettings {
    /// Applies defaults and checks every value, by the rules of the scenario the settings
    /// name (`rules`, looked up by the caller); `all` are every scenario's rules, so that a
    /// setting of another scenario is refused naming it.
    pub fn validate_for(
        &self,
        rules: &dyn ScenarioRules,
        all: &[&dyn ScenarioRules],
        members: Members,
    ) -> Result<RunConfig, ConfigError> {
        self.refuse_settings_of_others(rules, all)?;
        let Some(list) = &self.stages else { return self.validate_staged(rules, None, members) };
        let (staged, plan) = super::staged_settings::apply(self, list, &rules.pacing(self)?)?;
        staged.validate_staged(rules, Some(plan), members)
    }

    /// [`RunSettings::validate_for`] once `--stages` set what it decides (`stages`: its plan).
    fn validate_staged(
        &self,
        rules: &dyn ScenarioRules,
        stages: Option<StagePlan>,
        members: Members,
    ) -> Result<RunConfig, ConfigError> {
        let Members { protocol, protocol_options: given, protocol_secrets: secrets, transport } = members;
        let target = self.target.as_deref().map(Target::parse).transpose()?;
        let defaults = rules.defaults();
        let pacing = rules.pacing(self)?;
        let connections = rules.connections(self)?.map_or_else(|| self.connections(), Ok)?;
        let payload = self.payload(&defaults)?;
        let message = self.message_kind(&payload)?;
        let binary = message == MessageKind::Binary;
        let frames_per_send = self.frames_per_send(&defaults)?;
        bounds::send(frames_per_send, payload.largest_message())?;
        let (ramp_per_sec, message_interval) = self.pace(&pacing, &defaults, connections)?;
        let in_flight = self.in_flight(frames_per_send, message_interval.is_some())?;
        let mode = self.mode(rules.name(), defaults.rate_search)?;
        self.check_search(&mode)?;
        let thresholds = self.thresholds()?;
        super::stages::check_thresholds(&thresholds, stages.as_ref())?;
        let shard = self.shard.as_deref().map(|text| Shard::parse(text, connections)).transpose()?;
        let placement =
            self.placement(connections, target.is_some(), shard.is_some(), rules.single_server_process())?;
        self.check_in_flight(connections, shard.as_ref(), &placement, in_flight, &payload)?;
        let mut load = LoadSpec {
            scenario: rules.name(),
            connections,
            ramp_per_sec,
            duration: duration("duration", &self.duration, defaults.duration)?,
            warmup: bounded("warmup", &self.warmup, defaults.warmup)?,
            in_flight,
            message_interval,
            send_window: bounds::send_window(&self.send_window)?,
            shard,
            start_at_unix_ms: self.start_at()?,
            payload,
            message,
            frames_per_send,
            connect_timeout: duration("connect-timeout", &self.connect_timeout, DEFAULT_CONNECT_TIMEOUT)?,
            reply_timeout: duration("reply-timeout", &self.reply_timeout, DEFAULT_REPLY_TIMEOUT)?,
            source_addrs: self.source_addrs.as_deref().map(local_addrs).transpose()?.unwrap_or_default(),
            reconnect: self.reconnect_policy()?,
            insecure: self.insecure,
            handshake: self.handshake(target.as_ref())?,
            tls: self.tls(target.as_ref())?,
            compression: self.compression()?,
            max_message: 0,
            max_message_memory: 0,
            io: self.io()?,
            transport,
            protocol,
            protocol_options: crate::protocol::Options { given, secrets, binary },
            run_id: self.run_id()?,
            scenario_settings: OwnSettings(Arc::new(NoSettings)),
            stages,
        };
        (load.max_message, load.max_message_memory) = self.message_limits(&load.payload)?;
        load.scenario_settings = OwnSettings(rules.settings(self, &load)?);
        let live = self.live()?;
        let run_id = load.run_id.clone();
        let wait_for_target = bounds::wait_for_target(&self.wait_for_target, target.is_some())?;
        let recovery = self.recovery(&load, target.is_none(), &placement)?;
        Ok(RunConfig {
            open_at_once: rules.open_at_once(&load),
            load,
            target,
            max_send_lag: duration("max-send-lag", &self.max_send_lag, DEFAULT_MAX_SEND_LAG)?,
            mode,
            placement,
            sampling: Sampling { server_pid: self.server_pid()?, no_probe: self.no_probe },
            outputs: self.outputs()?,
            thresholds,
            run_id,
            live,
            wait_for_target,
            recovery,
        })
    }

    /// `--reconnect[=POLICY]`, parsed.
    fn reconnect_policy(&self) -> Result<Option<super::ReconnectPolicy>, ConfigError> {
        let policy = self.reconnect.as_deref().map(super::ReconnectPolicy::parse).transpose();
        policy.map_err(|problem| invalid("reconnect", problem))
    }

    /// A given `--in-flight` within its bound for the connections each client process has.
    fn check_in_flight(
        &self,
        connections: u64,
        shard: Option<&Shard>,
        placement: &Placement,
        in_flight: u64,
        payload: &Payload,
    ) -> Result<(), ConfigError> {
        if self.in_flight.is_none() {
            return Ok(());
        }
        let per_process =
            shard.map_or(connections.div_ceil(placement.processes), |s| s.share_of(connections));
        bounds::in_flight(per_process, in_flight, payload.largest_message())
    }

    /// A setting that belongs to another scenario alone (`--subscribers` in an echo run) is
    /// refused, naming the scenario it belongs to.
    fn refuse_settings_of_others(
        &self,
        rules: &dyn ScenarioRules,
        all: &[&dyn ScenarioRules],
    ) -> Result<(), ConfigError> {
        let given = serde_json::to_value(self).unwrap_or_default();
        let Some(given) = given.as_object() else { return Ok(()) };
        for other in all.iter().filter(|other| other.name() != rules.name()) {
            for setting in other.own_settings() {
                if given.contains_key(*setting) && !rules.own_settings().contains(setting) {
                    return Err(invalid(setting, format!("applies to the {} scenario only", other.name())));
                }
            }
        }
        Ok(())
    }

    /// The ramp (new connections per second) and the open-loop interval, from what
    /// `--rate`/`--interval`/`--ramp`/`--arrival` mean in this scenario.
    fn pace(
        &self,
        pacing: &Pacing,
        defaults: &Defaults,
        connections: u64,
    ) -> Result<(Option<f64>, Option<Duration>), ConfigError> {
        match *pacing {
            Pacing::Connections { default_rate } => {
                let rate = self.rate.as_deref().map(|text| rate("rate", text)).transpose()?;
                Ok((Some(rate.unwrap_or(default_rate)), None))
            }
            Pacing::Refused(reason) => {
                if self.rate.is_some() || self.interval.is_some() {
                    return Err(invalid(if self.rate.is_some() { "rate" } else { "interval" }, reason));
                }
                Ok((self.ramp(defaults)?, None))
            }
            Pacing::Messages { senders, default } => {
                let interval = self.message_interval(senders.unwrap_or(connections), default)?;
                Ok((self.ramp(defaults)?, interval))
            }
        }
    }

    /// The upgrade request's extra headers and subprotocols, checked (the header file read),
    /// with the `Authorization: Basic` of the URL's `user:password`.
    fn handshake(&self, target: Option<&Target>) -> Result<HandshakeOptions, ConfigError> {
        HandshakeSettings {
            target,
            headers: &self.header,
            header_file: self.header_file.as_deref(),
            subprotocol: self.subprotocol.as_deref(),
            origin: self.origin.as_deref(),
            bearer: self.bearer.as_deref(),
            cookie: self.cookie.as_deref(),
            data: self.data.as_deref(),
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
            resume: self.tls_resume.as_deref(),
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

    /// `--quiet`, `--metrics-addr` and `--stream`. A `--processes` run's shards hand their
    /// seconds to the parent, which shows, streams and serves one second for all of them.
    fn live(&self) -> Result<LiveOutputs, ConfigError> {
        let metrics_addr = self.metrics_addr.as_deref().map(parse_metrics_addr).transpose()?;
        self.dashboard_addr()?;
        if let Some(path) = &self.stream {
            check_output_file("stream", path)?;
        }
        let to_parent = self.progress_to_parent;
        Ok(LiveOutputs { quiet: self.quiet, metrics_addr, stream: self.stream.clone(), to_parent })
    }

    /// The output files, each checked to be writable before any load is sent.
    fn outputs(&self) -> Result<Outputs, ConfigError> {
        for (setting, path) in [("json", &self.json), ("hlog", &self.hlog), ("html", &self.html)] {
            if let Some(path) = path {
                check_output_file(setting, path)?;
            }
        }
        if self.print_result && self.json.is_none() {
            return Err(invalid("print-result", "needs --json FILE (it prints that file)"));
        }
        Ok(Outputs { json: self.json.clone(), hlog: self.hlog.clone() })
    }

    /// What a `--find-max-rate` search cannot take: its `--slo` judges every step, and no
    /// one interval log holds steps that each count their seconds from 0.
    fn check_search(&self, mode: &Mode) -> Result<(), ConfigError> {
        if !matches!(mode, Mode::FindMaxRate(_)) {
            return Ok(());
        }
        if !self.threshold.is_empty() {
            return Err(invalid(
                "threshold",
                "does not combine with --find-max-rate (its --slo judges every step)",
            ));
        }
        if self.hlog.is_some() {
            return Err(invalid(
                "hlog",
                "does not combine with --find-max-rate (its --json keeps each step's percentiles)",
            ));
        }
        if self.html.is_some() {
            return Err(invalid(
                "html",
                "does not combine with --find-max-rate (a search is no one run to chart): give --json \
                 FILE and chart a step's own run with `wsbench run --rate R --html FILE`",
            ));
        }
        Ok(())
    }

    fn thresholds(&self) -> Result<Vec<Threshold>, ConfigError> {
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
        let (setting, connections) = match (self.connections, self.clients) {
            (Some(_), Some(_)) => return Err(invalid("clients", "give either --clients or --connections")),
            (None, Some(clients)) => ("clients", clients),
            (count, None) => ("connections", count.unwrap_or(DEFAULT_CONNECTIONS)),
        };
        if connections == 0 {
            return Err(invalid(setting, "must be at least 1"));
        }
        bounds::at_most(setting, connections, bounds::MAX_CONNECTIONS, "connections")
    }

    /// `--start-at`: a common start at most [`bounds::MAX_START_AHEAD`] from now (one
    /// already past starts at once).
    fn start_at(&self) -> Result<Option<u64>, ConfigError> {
        let Some(at) = self.start_at else { return Ok(None) };
        let latest = crate::machine::unix_ms() + bounds::MAX_START_AHEAD.as_millis() as u64;
        if at > latest {
            return Err(invalid(
                "start-at",
                format!(
                    "{at} is more than 24 hours from now (milliseconds since the Unix epoch, e.g. {latest})"
                ),
            ));
        }
        Ok(Some(at))
    }

    /// `--server-pid`: a process of this machine.
    fn server_pid(&self) -> Result<Option<u32>, ConfigError> {
        let Some(pid) = self.server_pid else { return Ok(None) };
        if pid == 0 || pid > bounds::MAX_PID || !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            return Err(invalid("server-pid", format!("{pid}: no such process on this machine")));
        }
        Ok(Some(pid))
    }

    fn payload(&self, defaults: &Defaults) -> Result<Payload, ConfigError> {
        Ok(match (&self.payload, &self.payload_bytes) {
            (Some(_), Some(_)) => {
                return Err(invalid("payload-bytes", "give either --payload or --payload-bytes"));
            }
            (Some(text), None) => text.parse()?,
            (None, Some(size)) => {
                let bytes = parse_bytes(size).map_err(|e| invalid("payload-bytes", e.problem))?;
                Payload::Bytes(bounds::payload("payload-bytes", bytes)?)
            }
            (None, None) => defaults.payload.clone(),
        })
    }

    fn frames_per_send(&self, defaults: &Defaults) -> Result<u64, ConfigError> {
        match (defaults.frames_per_send, self.frames_per_send) {
            (_, Some(0)) => Err(invalid("frames-per-send", "must be at least 1")),
            (_, Some(frames)) if frames > bounds::MAX_FRAMES_PER_SEND => {
                bounds::at_most("frames-per-send", frames, bounds::MAX_FRAMES_PER_SEND, "frames")
            }
            (Some(default), frames) => Ok(frames.unwrap_or(default)),
            (None, Some(_)) => Err(invalid("frames-per-send", "does not apply to this scenario")),
            (None, None) => Ok(1),
        }
    }

    /// Messages a connection may have outstanding: a multiple of the frames of one send.
    fn in_flight(&self, frames_per_send: u64, open_loop: bool) -> Result<u64, ConfigError> {
        match self.in_flight {
            Some(0) => Err(invalid("in-flight", "must be at least 1")),
            Some(k) if k > bounds::MAX_IN_FLIGHT => {
                bounds::at_most("in-flight", k, bounds::MAX_IN_FLIGHT, "messages")
            }
            Some(k) if k % frames_per_send != 0 => Err(invalid(
                "in-flight",
                format!("must be a multiple of --frames-per-send ({frames_per_send})"),
            )),
            Some(k) => Ok(k),
            // Open loop sends on schedule whatever is outstanding, unless capped.
            None if open_loop => Ok(u64::MAX),
            None if frames_per_send > 1 => Ok(frames_per_send),
            None => Ok(DEFAULT_IN_FLIGHT),
        }
    }

    /// The open-loop interval of each of `senders` connections: from `--rate` (spread over
    /// them) or `--interval`, else the scenario's default pace; `None`: a closed loop.
    fn message_interval(&self, senders: u64, default: Option<Pace>) -> Result<Option<Duration>, ConfigError> {
        let interval = match (&self.rate, &self.interval, default) {
            (Some(_), Some(_), _) => return Err(invalid("rate", "give either --rate or --interval")),
            (Some(text), None, _) => {
                let per_connection = rate("rate", text)? / senders as f64;
                Some(Duration::from_secs_f64(1.0 / per_connection))
            }
            (None, Some(_), _) => Some(duration("interval", &self.interval, Duration::ZERO)?),
            (None, None, Some(Pace::Rate(rate))) => Some(Duration::from_secs_f64(senders as f64 / rate)),
            (None, None, Some(Pace::Interval(interval))) => Some(interval),
            (None, None, None) => None,
        };
        Ok(interval)
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
    fn ramp(&self, defaults: &Defaults) -> Result<Option<f64>, ConfigError> {
        Ok(match (&self.ramp, &self.arrival) {
            (Some(_), Some(_)) => return Err(invalid("arrival", "give either --arrival or --ramp")),
            (Some(text), None) => Some(rate("ramp", text)?),
            (None, Some(_)) => {
                let arrival = bounded("arrival", &self.arrival, Duration::ZERO)?;
                if arrival.is_zero() {
                    return Err(invalid(
                        "arrival",
                        "must be longer than zero (omit it to connect as fast as possible)",
                    ));
                }
                Some(bounds::rate("arrival", 1.0 / arrival.as_secs_f64())?)
            }
            (None, None) => defaults.ramp_per_sec,
        })
    }

    fn mode(&self, scenario: &str, rate_search: bool) -> Result<Mode, ConfigError> {
        match (self.find_max_rate, &self.slo) {
            (false, None) => Ok(Mode::Once),
            (false, Some(_)) => Err(invalid("slo", "only applies with --find-max-rate")),
            (true, None) => Err(invalid("find-max-rate", "needs a latency objective, e.g. --slo 'p99<10ms'")),
            (true, Some(_)) if !rate_search => Err(invalid(
                "find-max-rate",
                format!("does not apply to the {scenario} scenario (it searches the rate of a request loop)"),
            )),
            (true, Some(slo)) => Ok(Mode::FindMaxRate(slo.parse()?)),
        }
    }

    /// CPUs and processes of the client and of the built-in server.
    fn placement(
        &self,
        connections: u64,
        has_url: bool,
        sharded: bool,
        single_server_process: bool,
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
            Some(n) if n > bounds::MAX_PROCESSES => {
                bounds::at_most("processes", n, bounds::MAX_PROCESSES, "processes")?
            }
            Some(_) if sharded => {
                return Err(invalid(
                    "processes",
                    "give either --processes or --shard (a shard runs in one process)",
                ));
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
            Some(n) if n > bounds::MAX_SERVER_PROCESSES => {
                bounds::at_most("server-processes", n, bounds::MAX_SERVER_PROCESSES, "processes")?
            }
            Some(_) if has_url => {
                return Err(invalid("server-processes", "only applies to the built-in server (give no URL)"));
            }
            Some(n) if n > 1 && single_server_process => {
                return Err(invalid(
                    "server-processes",
                    "the built-in server runs one process for this scenario (its state is not shared \
                     between processes): drop it",
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

/// A rate setting: above zero (the parser says so) and at most [`bounds::MAX_RATE`].
fn rate(setting: &'static str, text: &str) -> Result<f64, ConfigError> {
    let per_sec = parse_rate(text).map_err(|e| invalid(setting, e.problem))?;
    bounds::rate(setting, per_sec)
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
