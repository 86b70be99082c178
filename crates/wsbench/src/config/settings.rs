//! Settings as the user gives them: command-line flags and TOML scenario files land in one
//! [`RunSettings`] (every field optional). Flags override the file ([`RunSettings::over`]);
//! the same struct is what a `--processes` parent hands each shard, as data on the shard's
//! stdin (`wsbench_supervisor`; never a file, so a `--bearer` token lands on no disk), so no
//! setting is listed twice. [`RunSettings::to_toml`] writes it back as a scenario file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::error::ConfigError;
use super::toml_position::{key_at, key_offset, line_column};
use crate::input_file::{InputFileError, InputKind};
use crate::options::{Kind, TableRefusal};

/// Where the `--dashboard` page listens when the flag is given without an address.
pub const DEFAULT_DASHBOARD_ADDR: &str = "127.0.0.1:5665";

/// Settings as given, from flags or a TOML scenario file; all optional.
#[derive(Debug, Clone, Default, PartialEq, clap::Args, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct RunSettings {
    /// Scenario: one of the registry's (`wsbench run --help` lists them); echo by default.
    #[arg(skip)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scenario: Option<String>,
    /// Server URL (ws:// or wss://); without one, wsbench starts its built-in server.
    #[arg(skip)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Connections to open (at most 10,000,000 over every process and shard).
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connections: Option<u64>,
    /// c10k: clients to connect (the same as --connections; at most 10,000,000).
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clients: Option<u64>,
    /// c10k: time between two new clients (e.g. 1ms; at least 100ns).
    #[arg(long, allow_hyphen_values = true)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arrival: Option<String>,
    /// Open loop: each connection sends one message every interval, whatever the replies
    /// (at most 7 days).
    #[arg(long, allow_hyphen_values = true)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval: Option<String>,
    /// Open loop: total message rate spread over the connections, e.g. 20000/s (above zero,
    /// at most 10,000,000/s).
    #[arg(long, allow_hyphen_values = true)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<String>,
    /// Open loop: send lag p99 above this marks the run as client-bound (at most 7 days).
    #[arg(long, allow_hyphen_values = true)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_send_lag: Option<String>,
    /// Open loop: sends due within this window after the first due one go out with it, in
    /// one batch, at most the window early (0 to 10ms; 0: each at its own instant). An early
    /// send's latency counts from when it went out.
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub send_window: Option<String>,
    /// Find the highest open-loop rate under --slo (each step runs --warmup + --duration).
    #[arg(long)]
    #[serde(default, skip_serializing_if = "is_false")]
    pub find_max_rate: bool,
    /// Latency objective for --find-max-rate, e.g. 'p99<10ms' or 'p99<10ms,p999<50ms'.
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slo: Option<String>,
    /// Pass/fail criterion judged on the result, e.g. 'p99<10ms', 'errors==0', 'stalls==0',
    /// 'longest_stall<1s', 'echoes_per_sec>5000' (repeatable); any failed one exits 99.
    #[arg(long = "threshold", value_name = "EXPR")]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub threshold: Vec<String>,
    /// Load in stages DURATION:TARGET[:ramp][:warmup]: connections ('30s:1000c,2m:1000c,30s:0c',
    /// opened or closed linearly) or the open loop's rate ('1m:1000/s,1m:5000/s:ramp', held or
    /// ramped), the unit (c or /s) always written; each stage's figures reported (at most 100
    /// stages, whole seconds, 7 days).
    #[arg(long, value_name = "STAGES", value_parser = parse_stages)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stages: Option<super::StageList>,
    /// Run the I-th of N equal parts of the scenario (0-based), e.g. 2/5.
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    /// Begin at this instant (milliseconds since the Unix epoch, at most 24 hours ahead), so
    /// shards start together.
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_at: Option<u64>,
    /// The id of the run this result belongs to (shards started by hand on several machines
    /// give them all the same id so `wsbench merge` knows them).
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// Before the run, retry connecting to the target URL until it accepts or this long
    /// has passed (e.g. 60s, at most 1h): for pods started beside their server.
    #[arg(long, value_name = "DURATION")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_for_target: Option<String>,
    /// Connection rate while ramping up, e.g. 75/s (above zero, at most 10,000,000/s).
    #[arg(long, allow_hyphen_values = true)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ramp: Option<String>,
    /// Measured load time, after the ramp and the warm-up (with a unit, e.g. 30s, 2h; at most
    /// 7 days).
    #[arg(long, allow_hyphen_values = true)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration: Option<String>,
    /// Load time after the ramp that is not measured (0 to 7 days).
    #[arg(long, allow_hyphen_values = true)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warmup: Option<String>,
    /// Messages each connection keeps in flight (closed loop; at most 65,536, and what they
    /// hold over a process's connections at most 8 GiB).
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_flight: Option<u64>,
    /// Message payload: json-ts, bytes:N (at most 1GiB) or text:FILE (the file's lines,
    /// cycled; at most 1 GiB of them).
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload: Option<String>,
    /// Throughput: payload bytes per frame (same as --payload bytes:N; at most 1GiB).
    #[arg(long, allow_hyphen_values = true)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload_bytes: Option<String>,
    /// Throughput: frames written in one send (at most 65,536, and 1 GiB in all).
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frames_per_send: Option<u64>,
    /// Send binary frames.
    #[arg(long, conflicts_with = "text")]
    #[serde(default, skip_serializing_if = "is_false")]
    pub binary: bool,
    /// Send text frames.
    #[arg(long)]
    #[serde(default, skip_serializing_if = "is_false")]
    pub text: bool,
    /// Give up on a connection not established by then (at most 7 days).
    #[arg(long, allow_hyphen_values = true)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connect_timeout: Option<String>,
    /// A request still unanswered this long after it was due is the error reply_timeout and
    /// is given up (at most 7 days; checked about once a second).
    #[arg(long, allow_hyphen_values = true)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply_timeout: Option<String>,
    /// CPUs for the client's workers, one worker per CPU (e.g. 1 or 1-3).
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_cpus: Option<String>,
    /// CPUs for the built-in server wsbench starts (e.g. 0).
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_cpus: Option<String>,
    /// Source addresses to spread connections over, e.g. 127.0.0.2-127.0.0.40.
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_addrs: Option<String>,
    /// Reopen a connection the server closed or reset, counting each reconnection, by a
    /// POLICY: immediate, fixed:1s, exponential:base=100ms,cap=30s,factor=2,jitter=full|equal|
    /// decorrelated|none, or a client library's own policy (socket.io-client, phoenix, grpc,
    /// signalr); a bare --reconnect is wsbench's own (100 ms doubling to 5 s, jittered).
    /// Without it a lost connection stays lost [default: off; --reconnect alone: wsbench]
    #[arg(long, value_name = "POLICY", num_args = 0..=1, require_equals = true, default_missing_value = super::reconnect::DEFAULT_POLICY)]
    #[serde(
        default,
        deserialize_with = "super::reconnect::policy_or_switch",
        skip_serializing_if = "Option::is_none"
    )]
    pub reconnect: Option<String>,
    /// Disrupt the server or the network at a time from the load's start, once or every D:
    /// restart@30s, kill@30s,every=2m, close@10s (the built-in server closes every
    /// connection with 1012), drop@10s (every connection cut, no close), command@10s (runs
    /// --disrupt-command); needs --reconnect (repeatable) [default: none]
    #[arg(long, value_name = "KIND@AT")]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disrupt: Vec<String>,
    /// The shell command a `command` disruption runs (e.g. 'systemctl restart app')
    /// [default: none]
    #[arg(long, value_name = "CMD")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disrupt_command: Option<String>,
    /// Set by `compare`: the target is a server wsbench started, which a disruption may
    /// restart (never a flag or a key of a file).
    #[arg(skip)]
    #[serde(skip)]
    pub server_owned: bool,
    /// Accept any TLS certificate (for self-signed servers).
    #[arg(long)]
    #[serde(default, skip_serializing_if = "is_false")]
    pub insecure: bool,
    /// Measure this process as the server instead of finding it by its port.
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_pid: Option<u32>,
    /// Write the result file here.
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub json: Option<PathBuf>,
    /// After the report, print the --json file on stdout between `----- BEGIN/END wsbench
    /// result NAME -----` lines (for pods whose log is the only way out).
    #[arg(long)]
    #[serde(default, skip_serializing_if = "is_false")]
    pub print_result: bool,
    /// Write per-second latency histograms as an HdrHistogram log here.
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hlog: Option<PathBuf>,
    /// Run the scenario as N client processes (shards of this run, each with its own
    /// open-file limit) and merge their results (at most 1,000, and one per connection).
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub processes: Option<u64>,
    /// Start the built-in server as N processes sharing the port (`serve --processes N`; at
    /// most 256).
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_processes: Option<u64>,
    /// Do not sample the server (a `--processes` parent probes it for its shards).
    #[arg(long)]
    #[serde(default, skip_serializing_if = "is_false")]
    pub no_probe: bool,
    /// Extra upgrade-request header, 'Name: value' (repeatable); `{conn}` in the value becomes
    /// the connection's number (0-based), e.g. 'X-User: user-{conn}'.
    #[arg(long = "header", value_name = "NAME: VALUE")]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub header: Vec<String>,
    /// CSV file of per-connection values (a heading row, then rows): row i mod rows belongs
    /// to connection i, and `{data.COLUMN}` in header values, the URL's path and query, a
    /// flow's sends, patterns and checks, and the protocol's templates (--topic,
    /// --destination, …) becomes its value, e.g. 'Authorization: Bearer {data.token}' (at
    /// most 64 MiB).
    #[arg(long, value_name = "FILE.csv")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<PathBuf>,
    /// File of extra headers, one 'Name: value' per line (blank lines and # comments skipped).
    #[arg(long, value_name = "FILE")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub header_file: Option<PathBuf>,
    /// Subprotocols to offer, e.g. chat,superchat; the server must choose one of them.
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subprotocol: Option<String>,
    /// Origin header of the upgrade request.
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// Send 'Authorization: Bearer TOKEN' (redacted in the result file).
    #[arg(long, value_name = "TOKEN")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bearer: Option<String>,
    /// Cookie header of the upgrade request, e.g. 'session=abc' (redacted in the result file).
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cookie: Option<String>,
    /// wss: trust the CAs in this PEM file instead of the built-in Mozilla roots.
    #[arg(long, value_name = "FILE")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cacert: Option<PathBuf>,
    /// wss: client certificate (PEM) for mutual TLS; needs --client-key.
    #[arg(long, value_name = "FILE")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_cert: Option<PathBuf>,
    /// wss: the client certificate's private key (PEM); needs --client-cert.
    #[arg(long, value_name = "FILE")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_key: Option<PathBuf>,
    /// wss: server name to send (SNI) and to verify the certificate against, instead of the
    /// URL's host.
    #[arg(long, value_name = "NAME")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sni: Option<String>,
    /// wss: use only this TLS version, 1.2 or 1.3.
    #[arg(long, value_name = "VERSION")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_version: Option<String>,
    /// wss: resume TLS sessions (tickets, TLS 1.3 PSK, TLS 1.2 ids) on this share of new
    /// connections, spread evenly: 0.5 = every other one offers a session [default: off;
    /// --tls-resume alone: 1, all]
    #[arg(long, value_name = "SHARE", num_args = 0..=1, default_missing_value = "1")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_resume: Option<String>,
    /// Offer permessage-deflate (RFC 7692): `deflate`, or with parameters, e.g.
    /// `deflate; client_no_context_takeover; server_max_window_bits=10`.
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compression: Option<String>,
    /// Largest message accepted from the server, reassembled or inflated, e.g. 16MiB (at most
    /// 1 GiB): a longer one closes its connection with 1009.
    #[arg(long, value_name = "SIZE")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_message: Option<String>,
    /// What all connections of this process may hold together in messages still arriving,
    /// reassembled or inflated (at most 64 GiB): a connection that would pass it is closed
    /// with 1009.
    #[arg(long, value_name = "SIZE")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_message_memory: Option<String>,
    /// Show no live progress on stderr (by default: a redrawn block on a terminal, else one
    /// line per second).
    #[arg(long)]
    #[serde(default, skip_serializing_if = "is_false")]
    pub quiet: bool,
    /// Serve live metrics (Prometheus text format) at http://ADDR/metrics during the run, e.g.
    /// 127.0.0.1:9464.
    #[arg(long, value_name = "ADDR")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics_addr: Option<String>,
    /// Write one JSON line per second of the run here, flushed as it goes.
    #[arg(long, value_name = "FILE")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<PathBuf>,
    /// Serve a live web page of the run at http://ADDR/ (port 0: any free port): its charts,
    /// then the final figures. Nothing waits for a browser.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = DEFAULT_DASHBOARD_ADDR)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dashboard: Option<String>,
    /// Write the HTML report here at the end: a run's page (as `wsbench report --html`
    /// draws it), or a comparison's charts.
    #[arg(long, value_name = "FILE")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub html: Option<PathBuf>,
    /// Set by a `--processes` parent for its shards (no flag): each second goes to stdout as
    /// one line the parent sums up with the other shards', instead of a line on stderr.
    #[arg(skip)]
    #[serde(default, skip_serializing_if = "is_false")]
    pub progress_to_parent: bool,
    /// The client's socket I/O: `uring` (io_uring: batched submission, multishot receive)
    /// or `epoll`.
    #[arg(long, value_name = "BACKEND")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub io: Option<String>,
    /// The message protocol spoken over WebSocket.
    #[arg(long, value_name = "NAME")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// How the WebSockets reach the server: h1 (an HTTP/1.1 upgrade per TCP connection), h2
    /// (RFC 8441 extended CONNECT, many per TCP connection) or h3 (RFC 9220 extended CONNECT,
    /// many per QUIC connection; wss:// only).
    #[arg(long, value_name = "NAME")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    /// The options of the scenarios, protocols and transports, each declared by its member
    /// (`--subscribers`, `--qos`, `--streams-per-connection`, …), by TOML key.
    #[command(flatten)]
    #[serde(flatten)]
    pub options: crate::options::OptionValues,
}

fn is_false(value: &bool) -> bool {
    !*value
}

fn parse_stages(text: &str) -> Result<super::StageList, String> {
    text.parse()
}

impl RunSettings {
    /// The text of the scenario file `path` (bounded in size).
    pub fn read_file(path: &Path) -> Result<String, ConfigError> {
        crate::input_file::read_text(path, InputKind::Scenario).map_err(|e| match e {
            InputFileError::Read { source, .. } => {
                ConfigError::ReadScenario { path: path.to_owned(), source }
            }
            too_big => ConfigError::InputFile(too_big),
        })
    }

    /// Parses the TOML text of the scenario file `path`, whose member options (the keys that
    /// are not shared settings) have the kinds of `members`, by key; an error says where
    /// (line:column) and, for a mistyped key, which key was meant.
    pub fn parse_toml_with(
        text: &str,
        path: &Path,
        members: &BTreeMap<&'static str, Kind>,
    ) -> Result<RunSettings, ConfigError> {
        let parse_error = |offset: Option<usize>, message: String| ConfigError::ParseScenario {
            path: path.to_owned(),
            location: offset.map(|at| line_column(text, at)).unwrap_or_default(),
            message,
        };
        let toml_error = |e: toml::de::Error| {
            let key = e.span().and_then(|span| key_at(text, span.start));
            let message = explain(e.message());
            let message = match key {
                Some(key) if !message.starts_with("unknown key") => format!("key `{key}`: {message}"),
                _ => message,
            };
            parse_error(e.span().map(|span| span.start), message)
        };
        // A member's table is read by its member first: a bound before parsing, then its
        // values where they stand in the text.
        for kind in members.values() {
            if let Kind::Table(check) = kind {
                check(text).map_err(|refusal| match refusal {
                    TableRefusal::Bound { table, problem } => ConfigError::Table { table, problem },
                    TableRefusal::Toml(e) => toml_error(e),
                })?;
            }
        }
        let settings: RunSettings = toml::from_str(text).map_err(toml_error)?;
        for (key, value) in &settings.options.0 {
            let at = key_offset(text, key);
            match members.get(key.as_str()) {
                None => return Err(parse_error(at, unknown_key(key, members.keys().copied()))),
                Some(kind) if !kind.fits(value) => {
                    // A secret of the wrong kind is named by its kind alone.
                    let given = match kind {
                        Kind::Secret { .. } => value.type_str().to_owned(),
                        _ => format!("{} {value}", value.type_str()),
                    };
                    let message = format!("key `{key}`: invalid type: {given}, expected {}", kind.expected());
                    return Err(parse_error(at, message));
                }
                Some(_) => {}
            }
        }
        Ok(settings)
    }

    /// These settings as a TOML scenario file that [`RunSettings::from_file`] reads back.
    pub fn to_toml(&self) -> Result<String, ConfigError> {
        toml::to_string(self).map_err(|e| not_representable(&e))
    }

    /// `self` overrides `base` wherever `self` has a value (a set option, a `true` flag);
    /// `--text` and `--binary` also cancel each other.
    pub fn over(self, base: RunSettings) -> Result<RunSettings, ConfigError> {
        let table =
            |settings: &RunSettings| toml::Table::try_from(settings).map_err(|e| not_representable(&e));
        let mut merged = table(&base)?;
        merged.extend(table(&self)?);
        let mut settings: RunSettings = merged.try_into().map_err(|e| not_representable(&e))?;
        settings.binary &= !self.text;
        settings.text &= !self.binary;
        Ok(settings)
    }
}

/// The TOML parser's message, with a did-you-mean for an unknown key (serde names the
/// unknown key and then every known one, each in backticks), and type names in words.
fn explain(message: &str) -> String {
    let Some(rest) = message.strip_prefix("unknown field ") else {
        return message
            .trim_end()
            .replace("expected u64", "expected a whole number")
            .replace("expected u8", "expected a whole number")
            .replace("expected u32", "expected a whole number");
    };
    let quoted: Vec<&str> = rest.split('`').skip(1).step_by(2).collect();
    let Some((unknown, known)) = quoted.split_first() else {
        return message.trim_end().to_owned();
    };
    unknown_key(unknown, known.iter().copied())
}

/// An unknown key of a scenario file, with the known key it is closest to (`members`: the
/// members' keys, besides the shared settings).
fn unknown_key<'a>(unknown: &str, members: impl IntoIterator<Item = &'a str>) -> String {
    let shared: Vec<String> = <RunSettings as clap::Args>::augment_args(clap::Command::default())
        .get_arguments()
        .filter_map(|arg| arg.get_long().map(str::to_owned))
        .chain(["scenario", "target"].map(str::to_owned))
        .collect();
    let members: Vec<&str> = members.into_iter().collect();
    let known = shared.iter().map(String::as_str).chain(members.iter().copied());
    match super::suggest::closest(unknown, known) {
        Some(meant) => format!("unknown key `{unknown}`: did you mean `{meant}`?"),
        None => format!(
            "unknown key `{unknown}`: the keys are the flags of `wsbench run` without their `--` \
             (see wsbench run --help)"
        ),
    }
}

/// A value TOML cannot hold (a path that is not UTF-8, a number above 2^63).
fn not_representable(error: &dyn std::fmt::Display) -> ConfigError {
    super::error::invalid(
        "scenario",
        format!("a setting cannot be written as TOML ({error}): check paths and numbers"),
    )
}

#[cfg(test)]
#[path = "settings_tests.rs"]
mod tests;
