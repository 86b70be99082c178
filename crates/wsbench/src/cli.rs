//! The command-line model of the binary (not part of the library): clap structs for every
//! subcommand, mapped onto the library's settings types. Defaults come from the library's
//! constants; the library never sees these types.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use wsbench_server::{
    DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_MAX_CONNECTIONS, DEFAULT_PORT, DEFAULT_THREADS, ServeConfig, TlsSource,
};

use wsbench::config::{ConfigError, RunSettings};
use wsbench::report::ReportFormat;
use wsbench::rtt::RttSettings;
use wsbench::units::{UnitError, format_duration, parse_bytes, parse_duration};

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

/// Parses the command line; `wsbench run --help` lists every scenario and preset, as the
/// registry has them.
pub fn parse() -> Cli {
    let command = Cli::command().mut_subcommand("run", |run| run.after_help(scenarios_help()));
    let matches = command.get_matches();
    Cli::from_arg_matches(&matches).unwrap_or_else(|error| error.exit())
}

/// The scenarios of `wsbench run` with what each does, then the presets.
fn scenarios_help() -> String {
    let mut text = String::from("Scenarios (the SCENARIO word, or --scenario NAME):\n");
    for scenario in wsbench::scenario::SCENARIOS {
        text.push_str(&format!("  {:<12} {}\n", scenario.name(), scenario.about()));
    }
    let presets: Vec<&str> = wsbench::config::PRESETS.iter().map(|(name, _)| *name).collect();
    text.push_str(&format!("Presets (--scenario NAME, from scenarios/NAME.toml): {}", presets.join(", ")));
    text
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
    Rtt(RttSettings),
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
    /// Scenario: echo (default), throughput, scalability, c10k, churn or pubsub.
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
    /// A scenario (listed below) and/or a target URL (ws:// or wss://); without a URL wsbench
    /// starts its built-in server.
    #[arg(value_name = "SCENARIO|URL", num_args = 0..=2)]
    pub positional: Vec<String>,
    /// A preset or a scenario name (both listed below), or a TOML scenario file (e.g.
    /// my-run.toml); flags override it.
    #[arg(long = "scenario", value_name = "FILE")]
    pub scenario_file: Option<PathBuf>,
    #[command(flatten)]
    pub settings: RunSettings,
}

impl RunArgs {
    /// The run's settings: the scenario file, overridden by the positionals and the flags.
    pub fn into_settings(self) -> Result<RunSettings, ConfigError> {
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
            Some(path) => RunSettings::from_scenario(path)?,
            None => RunSettings::default(),
        };
        settings.over(base)
    }
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Files of one kind: results of `wsbench run --json`, or `wsbench rtt --json` or
    /// `--find-max-rate --json` files (text and json formats only).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    pub format: ReportFormat,
    /// Also write a self-contained HTML page with charts comparing the files to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
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
    /// Decline permessage-deflate (RFC 7692) offers; by default they are accepted.
    #[arg(long)]
    pub no_deflate: bool,
    /// Serve the pub/sub protocol of docs/protocols.md (`{"sub":…}`, `{"pub":…}`) on one
    /// event-loop thread; other messages are still echoed.
    #[arg(long, conflicts_with_all = ["threads", "processes"])]
    pub pubsub: bool,
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
            no_deflate,
            pubsub,
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
        if *no_deflate {
            args.push("--no-deflate".to_owned());
        }
        if *pubsub {
            args.push("--pubsub".to_owned());
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
            deflate: !self.no_deflate,
            pubsub: self.pubsub,
            ..ServeConfig::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serve_processes_children_get_every_setting() {
        let parse = |args: &[&str]| match Cli::try_parse_from(args).unwrap().command {
            Command::Serve(serve) => serve,
            other => panic!("{other:?}"),
        };
        let given = parse(&[
            "wsbench",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--threads",
            "3",
            "--tls",
            "--tcp-port",
            "0",
            "--max-message",
            "1MiB",
            "--max-connections",
            "500",
            "--handshake-timeout",
            "3s",
            "--processes",
            "4",
        ]);
        let args = given.child_args(5000, Some(5001));
        let child =
            parse(&std::iter::once("wsbench").chain(args.iter().map(String::as_str)).collect::<Vec<_>>());
        assert_eq!(child.processes, 1);
        let mut expected = given.clone().into_config();
        (expected.port, expected.tcp_port) = (5000, Some(5001));
        assert_eq!(format!("{:?}", child.into_config()), format!("{expected:?}"));
    }
}
