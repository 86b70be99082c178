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
    /// Render result files (terminal text or JSON).
    Report(ReportArgs),
    /// Run the built-in echo server (the default benchmark target).
    Serve(ServeArgs),
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
pub struct ReportArgs {
    /// Result files written by `wsbench run --json`.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = FormatArg::Text)]
    pub format: FormatArg,
}

/// Output formats of `wsbench report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatArg {
    Text,
    Json,
}

impl From<FormatArg> for ReportFormat {
    fn from(format: FormatArg) -> ReportFormat {
        match format {
            FormatArg::Text => ReportFormat::Text,
            FormatArg::Json => ReportFormat::Json,
        }
    }
}

#[derive(Debug, Args)]
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
}

impl ServeArgs {
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
