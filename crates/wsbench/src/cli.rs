//! The command-line model: clap structs for every subcommand and their mapping onto the
//! library's validated configuration types. Defaults come from the library's constants.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use wsbench_server::{
    DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_MAX_CONNECTIONS, DEFAULT_PORT, DEFAULT_THREADS, ServeConfig, TlsSource,
};

use crate::config::{ConfigError, RunConfig, RunSettings};
use crate::report::ReportFormat;
use crate::units::{UnitError, format_duration, parse_bytes, parse_duration};

/// A duration flag: parsed with [`parse_duration`], shown with [`format_duration`] in `--help`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DurationArg(pub Duration);

impl std::str::FromStr for DurationArg {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_duration(s).map(DurationArg)
    }
}

impl std::fmt::Display for DurationArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&format_duration(self.0))
    }
}

#[derive(Debug, Parser)]
#[command(
    name = "wsbench",
    version,
    about = "Reproducible WebSocket server benchmarks",
    max_term_width = 100
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a benchmark scenario (default: echo against the built-in server).
    Run(Box<RunArgs>),
    /// Render result files (terminal text, JSON, CSV, Markdown; an HTML page with --html).
    Report(ReportArgs),
    /// Merge the result files of a run's shards (`--shard I/N`) losslessly into one.
    Merge(MergeArgs),
    /// Run the built-in echo server (the default benchmark target).
    Serve(ServeArgs),
    /// Single-connection round-trip times: raw TCP, HTTP, HTTPS, ws and wss (seed 001).
    Rtt(RttArgs),
    /// The competitor servers under servers/: list or install them.
    #[command(subcommand)]
    Fleet(FleetCommand),
    /// Run one scenario against several servers of the fleet and print one table.
    Compare(Box<CompareArgs>),
}

#[derive(Debug, Subcommand)]
pub enum FleetCommand {
    /// Name, language, version, and whether each server is installed.
    List {
        /// The fleet folder (default: ./servers).
        #[arg(long)]
        fleet_dir: Option<PathBuf>,
    },
    /// Install servers from their registries (all when no name is given); idempotent.
    Install {
        names: Vec<String>,
        /// Run the install steps even when the server looks installed.
        #[arg(long)]
        force: bool,
        #[arg(long)]
        fleet_dir: Option<PathBuf>,
    },
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Servers to compare, comma-separated (builtin, node-ws, …), or `all`.
    #[arg(long, value_delimiter = ',', default_value = "all")]
    pub servers: Vec<String>,
    /// Scenario: echo (default), throughput, scalability or c10k.
    #[arg(long = "scenario", value_name = "NAME")]
    pub scenario_name: Option<String>,
    /// Measure every server this many times, interleaved; the table shows medians.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,
    /// Keep every result file here (SERVER-REPEAT.json).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also write a self-contained HTML page with the comparison's charts.
    #[arg(long)]
    pub html: Option<PathBuf>,
    /// Also print the table as Markdown (for a README).
    #[arg(long)]
    pub markdown: bool,
    /// The fleet folder (default: ./servers).
    #[arg(long)]
    pub fleet_dir: Option<PathBuf>,
    #[command(flatten)]
    pub settings: RunSettings,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// A scenario (echo, throughput, scalability) and/or a target URL (ws:// or wss://);
    /// without a URL wsbench starts its built-in server.
    #[arg(value_name = "SCENARIO|URL", num_args = 0..=2)]
    pub positional: Vec<String>,
    /// A TOML scenario file (e.g. scenarios/includeos-25k.toml); flags override it.
    #[arg(long = "scenario", value_name = "FILE")]
    pub scenario_file: Option<PathBuf>,
    #[command(flatten)]
    pub settings: RunSettings,
}

impl RunArgs {
    /// The run's validated configuration: scenario file, then positionals and flags.
    pub fn into_config(self) -> Result<RunConfig, ConfigError> {
        let mut settings = self.settings;
        for word in self.positional {
            let slot = if word.contains("://") { &mut settings.target } else { &mut settings.scenario };
            if slot.replace(word.clone()).is_some() {
                return Err(ConfigError::Invalid {
                    setting: "scenario",
                    problem: format!("`{word}`: give at most one scenario and one URL"),
                });
            }
        }
        let base = match &self.scenario_file {
            Some(path) => RunSettings::from_file(path)?,
            None => RunSettings::default(),
        };
        settings.over(base).validate()
    }
}

#[derive(Debug, Args)]
pub struct RttArgs {
    /// A server to measure, as PROTO=HOST:PORT (e.g. ws=127.0.0.1:8080); repeatable.
    /// Without any, wsbench starts its built-in servers.
    #[arg(long = "target", value_name = "PROTO=HOST:PORT")]
    pub targets: Vec<String>,
    /// Protocols to measure, comma-separated (default: all five, or those given a --target).
    #[arg(long, value_delimiter = ',', value_name = "tcp,http,https,ws,wss")]
    pub protocols: Vec<String>,
    /// Timed repeats per protocol (after one untimed warm-up repeat).
    #[arg(
        long,
        default_value_t = crate::rtt::DEFAULT_REPEATS,
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub repeats: u32,
    /// Round trips per repeat.
    #[arg(
        long,
        default_value_t = crate::rtt::DEFAULT_ITERATIONS,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub iterations: u64,
    /// Bytes per tcp/ws message (e.g. 20, 4KiB).
    #[arg(long, value_parser = parse_bytes, default_value_t = crate::rtt::DEFAULT_PAYLOAD_BYTES)]
    pub payload_bytes: u64,
    /// Also write the results as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Accept any TLS certificate (implied for the built-in server's self-signed one).
    #[arg(long)]
    pub insecure: bool,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Files of one kind: results of `wsbench run --json`, or `wsbench rtt --json` or
    /// `--find-max-rate --json` files (text and json formats only).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = FormatArg::Text)]
    pub format: FormatArg,
    /// Also write a self-contained HTML page with charts comparing the files to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// Output formats of `wsbench report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatArg {
    /// The terminal report.
    Text,
    /// The result files, checked and pretty-printed.
    Json,
    /// The summary table as CSV.
    Csv,
    /// The summary table as Markdown.
    Md,
}

impl From<FormatArg> for ReportFormat {
    fn from(format: FormatArg) -> ReportFormat {
        match format {
            FormatArg::Text => ReportFormat::Text,
            FormatArg::Json => ReportFormat::Json,
            FormatArg::Csv => ReportFormat::Csv,
            FormatArg::Md => ReportFormat::Md,
        }
    }
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Result files of the shards of one run (`wsbench run --shard I/N --json FILE`).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Write the merged result here and print its report; without it, print the merged JSON.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: IpAddr,
    /// Port for WebSocket and HTTP (0 picks a free port).
    #[arg(long, default_value_t = DEFAULT_PORT)]
    pub port: u16,
    /// Event-loop threads sharing the port (SO_REUSEPORT).
    #[arg(long, default_value_t = DEFAULT_THREADS as u16, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: u16,
    /// Serve wss/https; without --cert/--key a self-signed certificate is generated.
    #[arg(long)]
    pub tls: bool,
    /// PEM certificate chain (needs --key, implies --tls).
    #[arg(long, requires = "key")]
    pub cert: Option<PathBuf>,
    /// PEM private key (needs --cert, implies --tls).
    #[arg(long, requires = "cert")]
    pub key: Option<PathBuf>,
    /// Extra raw TCP echo port (0 picks a free port).
    #[arg(long)]
    pub tcp_port: Option<u16>,
    /// Largest message accepted, in bytes (e.g. 16MiB); larger ones are closed with 1009.
    #[arg(long, value_parser = parse_bytes, default_value = "128MiB")]
    pub max_message: u64,
    /// Refuse connections beyond this many (default: the open-file limit).
    #[arg(long)]
    pub max_connections: Option<usize>,
    /// Close connections that have not completed their handshake by then.
    #[arg(long, default_value_t = DurationArg(DEFAULT_HANDSHAKE_TIMEOUT))]
    pub handshake_timeout: DurationArg,
    /// Server processes sharing the port (SO_REUSEPORT), each with its own open-file limit.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub processes: u16,
}

impl ServeArgs {
    /// Serves until SIGINT or SIGTERM: in this process, or with `--processes N` as N
    /// processes of this program sharing the port.
    pub fn serve(self) -> Result<(), wsbench_server::ServeError> {
        if self.processes <= 1 {
            return wsbench_server::serve_until_signalled(&self.into_config());
        }
        let exe = std::env::current_exe()?;
        let command = |port: u16, tcp_port: Option<u16>| {
            let mut command = std::process::Command::new(&exe);
            command.args(self.child_args(port, tcp_port));
            command
        };
        wsbench_server::serve_processes(&self.clone().into_config(), usize::from(self.processes), &command)
    }

    /// The `serve` arguments of one process of a `--processes` server: these settings, on
    /// the given ports, as one process.
    pub fn child_args(&self, port: u16, tcp_port: Option<u16>) -> Vec<String> {
        // Destructured without `..`: a new flag does not compile until it is passed on.
        let ServeArgs {
            host,
            port: _,
            threads,
            tls,
            cert,
            key,
            tcp_port: _,
            max_message,
            max_connections,
            handshake_timeout,
            processes: _,
        } = self;
        let mut args = vec![
            "serve".to_owned(),
            format!("--host={host}"),
            format!("--port={port}"),
            format!("--threads={threads}"),
            format!("--max-message={max_message}"),
            format!("--handshake-timeout={handshake_timeout}"),
            "--processes=1".to_owned(),
        ];
        if *tls {
            args.push("--tls".to_owned());
        }
        for (flag, path) in [("cert", cert), ("key", key)] {
            if let Some(path) = path {
                args.push(format!("--{flag}={}", path.display()));
            }
        }
        if let Some(port) = tcp_port {
            args.push(format!("--tcp-port={port}"));
        }
        if let Some(max) = max_connections {
            args.push(format!("--max-connections={max}"));
        }
        args
    }

    pub fn into_config(self) -> ServeConfig {
        let tls = match (self.cert, self.key) {
            (Some(cert), Some(key)) => Some(TlsSource::Files { cert, key }),
            _ if self.tls => Some(TlsSource::SelfSigned),
            _ => None,
        };
        ServeConfig {
            host: self.host,
            port: self.port,
            threads: usize::from(self.threads),
            tls,
            tcp_port: self.tcp_port,
            max_message: self.max_message,
            max_connections: self.max_connections.unwrap_or(DEFAULT_MAX_CONNECTIONS),
            handshake_timeout: self.handshake_timeout.0,
            ..ServeConfig::default()
        }
    }
}
