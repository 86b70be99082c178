//! The command-line model of the binary (not part of the library): clap structs for every
//! subcommand, mapped onto the library's settings types. Defaults come from the library's
//! constants; the library never sees these types.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use wsbench::config::{ConfigError, RunSettings};
use wsbench::error::CommandError;
use wsbench::report::ReportFormat;
use wsbench::rtt::RttSettings;
use wsbench::units::{UnitError, format_duration, parse_duration};

use crate::series_args::{Series, SweepOptions, series_help};
use crate::serve_args::ServeArgs;

/// A duration flag: parsed with [`parse_duration`], shown with [`format_duration`] in `--help`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DurationArg(pub Duration);

impl std::str::FromStr for DurationArg {
    type Err = UnitError;
    /// A duration above zero and at most 7 days, like every duration of `run`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let duration = parse_duration(s)?;
        if duration.is_zero() || duration > wsbench::config::MAX_DURATION {
            return Err(UnitError {
                input: s.to_owned(),
                problem: format!("`{s}`: give a duration above zero and at most 7 days (168h)"),
            });
        }
        Ok(DurationArg(duration))
    }
}

/// `compare --repeat`: odd, so that the median of the repeats is one run, whose figures the
/// table and the bars both show.
fn odd_repeat(text: &str) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(n) if !n.is_multiple_of(2) && n <= 999 => Ok(n),
        Ok(n) if n.is_multiple_of(2) && n < 999 => Err(format!(
            "give an odd count ({} or {}): the median of an even count is no one run",
            n.max(2) - 1,
            n + 1
        )),
        _ => Err("give an odd count from 1 to 999".to_owned()),
    }
}

impl std::fmt::Display for DurationArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&format_duration(self.0))
    }
}

/// Parses the command line; `wsbench run --help` lists every scenario and preset, as the
/// registry has them. A bad flag ends it with one line and exit code 2, as every other
/// usage error does.
pub fn parse() -> Cli {
    let matches = command().try_get_matches().unwrap_or_else(|error| usage_error(error));
    Cli::from_arg_matches(&matches).unwrap_or_else(|error| usage_error(error))
}

/// The whole command-line definition as `--help`, the completions and the man page show it:
/// the derived flags, the scenario list, and each core option's default.
pub fn command() -> clap::Command {
    Cli::command()
        .mut_subcommand("run", |run| {
            let after = format!("{}\n{}", scenarios_help(), crate::help::protocols_help());
            crate::help::with_defaults(run).after_help(after).allow_negative_numbers(true)
        })
        .mut_subcommand("compare", |compare| {
            series_help(crate::help::without_refused(crate::help::with_defaults(compare)))
                .after_help(crate::help::protocols_help())
                .allow_negative_numbers(true)
        })
        .mut_subcommand("sweep", |sweep| {
            let sweep =
                crate::help::without(crate::help::with_defaults(sweep), &wsbench::sweep::REFUSED_SETTINGS);
            series_help(sweep).after_help(crate::help::protocols_help()).allow_negative_numbers(true)
        })
        .mut_subcommand("diff", |diff| diff.long_about(crate::help::diff_about()))
        .mut_subcommand("serve", |serve| serve.allow_negative_numbers(true))
        .mut_subcommand("rtt", |rtt| rtt.allow_negative_numbers(true))
}

/// Ends the process on a parse error: help and version as clap prints them; anything else
/// as one line (`wsbench: …`, clap's tip in brackets) and exit code 2.
fn usage_error(error: clap::Error) -> ! {
    use clap::error::ErrorKind;
    if matches!(
        error.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        error.exit()
    }
    eprintln!("wsbench: {}", one_line(&error.render().to_string()));
    std::process::exit(i32::from(wsbench::exit::USAGE))
}

/// Clap's message (`error: …`, a `tip:`, the usage) as one line: the message, and the tip
/// unless it is the one about `--` (values that start with `-` are taken as values).
fn one_line(rendered: &str) -> String {
    let mut lines = rendered.lines().map(str::trim).filter(|line| !line.is_empty());
    let message = lines.next().unwrap_or("bad arguments").trim_start_matches("error: ").to_owned();
    let tips: Vec<String> = lines
        .filter_map(|line| line.strip_prefix("tip: "))
        .filter(|tip| !tip.contains("use '--"))
        .map(|tip| match tip.split_once(" exists: ") {
            Some((similar, meant)) if similar.starts_with("a similar ") => format!("did you mean {meant}"),
            _ => tip.to_owned(),
        })
        .collect();
    match tips.is_empty() {
        true => format!("{message} (see --help)"),
        false => format!("{message} ({}; see --help)", tips.join("; ")),
    }
}

/// The scenarios of `wsbench run` with what each does, then the presets.
fn scenarios_help() -> String {
    let mut text = String::from("Scenarios (the SCENARIO word, or --scenario NAME):\n");
    for scenario in wsbench::scenario::SCENARIOS {
        text.push_str(&format!("  {:<12} {}\n", scenario.name(), scenario.about()));
    }
    let presets: Vec<&str> = wsbench::presets::PRESETS.iter().map(|(name, _)| *name).collect();
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
    /// Run a benchmark scenario: echo against the built-in server unless told otherwise.
    Run(Box<RunArgs>),
    /// Render result files (terminal text, JSON, CSV, Markdown; an HTML page with --html).
    Report(ReportArgs),
    /// Merge the result files of a run's shards (`--shard I/N`) losslessly into one.
    Merge(MergeArgs),
    /// Run the built-in echo server (the benchmark target when no URL is given). On SIGUSR1,
    /// and when it stops, it prints `echoed N messages, C connections open` (with --tls, then its
    /// TLS handshakes, full and resumed, and their CPU; not with --processes).
    Serve(ServeArgs),
    /// Single-connection round-trip times (the HTTP/WS client round-trip benchmark): raw TCP,
    /// HTTP, HTTPS, ws, wss, and ws and wss over HTTP/2.
    Rtt(RttSettings),
    /// The competitor servers under servers/: list or install them.
    #[command(subcommand)]
    Fleet(FleetCommand),
    /// Run one scenario at a series of loads (connections or rate): a row per step, the knee
    /// of the latency curve, and the Universal Scalability Law fitted to it.
    Sweep(Box<Series<crate::series_args::SweepArgs>>),
    /// Run one scenario against several servers of the fleet and print one table (or, with
    /// --sweep, overlay each server's curve).
    Compare(Box<Series<CompareArgs>>),
    /// Compare repeated runs before and after a change: per figure, the change with a confidence
    /// interval and a verdict (better, worse, no difference).
    Diff(DiffArgs),
    /// Turn a recorded session (a browser's HAR export, or a JSONL recording) into a flow
    /// scenario file: sends with their pauses, replies awaited by their shape, values sent back
    /// captured, identity headers as --data placeholders; prints what it inferred.
    Import(crate::import_args::ImportArgs),
    /// A recording proxy: forward WebSocket clients (a browser, an app) to a server and write
    /// each connection's handshake and every message both ways to a JSONL file that `wsbench
    /// import` reads. Runs until SIGINT, SIGTERM or SIGHUP.
    Record(crate::record_args::RecordArgs),
    /// Print a shell completion script for wsbench (e.g. `wsbench completions bash >
    /// /etc/bash_completion.d/wsbench`).
    Completions {
        /// The shell to complete for.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print wsbench's man page (roff; e.g. `wsbench man | man -l -`).
    Man,
}

#[derive(Debug, Subcommand)]
pub enum FleetCommand {
    /// Name, language, version, and whether each server is installed.
    List {
        /// The fleet folder [default: ./servers]
        #[arg(long, value_name = "DIR")]
        fleet_dir: Option<PathBuf>,
    },
    /// Install servers from their registries (all when no name is given); idempotent.
    Install {
        /// Servers to install, by the names `wsbench fleet list` shows [default: all]
        #[arg(value_name = "NAME")]
        names: Vec<String>,
        /// Run the install steps even when the server looks installed.
        #[arg(long)]
        force: bool,
        /// The fleet folder, one subfolder with a server.toml per server [default: ./servers]
        #[arg(long, value_name = "DIR")]
        fleet_dir: Option<PathBuf>,
    },
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Servers to compare, comma-separated (builtin, node-ws, …), or `all`.
    #[arg(long, value_delimiter = ',', default_value = "all")]
    pub servers: Vec<String>,
    /// Scenario: echo, throughput, scalability, c10k, churn or pubsub [default: echo]
    #[arg(long = "scenario", value_name = "NAME")]
    pub scenario_name: Option<String>,
    /// Measure every server this many times, interleaved (an odd count, at most 999): the
    /// table and the page show each server's median run by rate, and the range of the repeats.
    #[arg(long, default_value_t = 1, value_parser = odd_repeat)]
    pub repeat: u32,
    /// Keep every result file here (SERVER-REPEAT.json).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also print the table as Markdown (for a README).
    #[arg(long)]
    pub markdown: bool,
    /// The fleet folder [default: ./servers]
    #[arg(long)]
    pub fleet_dir: Option<PathBuf>,
    /// Sweep each server over the series that --connections or --rate gives (as `wsbench
    /// sweep` does) and overlay their curves on one page (--html).
    #[arg(long)]
    pub sweep: bool,
    #[command(flatten)]
    pub sweep_options: SweepOptions,
    #[command(flatten)]
    pub settings: RunSettings,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// A scenario (listed below) and/or a target URL (ws:// or wss://); without a URL wsbench
    /// starts its built-in server.
    #[arg(value_name = "SCENARIO|URL", num_args = 0..=2)]
    pub positional: Vec<String>,
    /// A scenario or a preset by name (both listed below), or a TOML scenario file (e.g.
    /// my-run.toml); flags override it.
    #[arg(long = "scenario", value_name = "NAME|FILE")]
    pub scenario_file: Option<PathBuf>,
    #[command(flatten)]
    pub settings: RunSettings,
    /// Read the run's settings as JSON from stdin: how `--processes N` starts its shards.
    #[arg(long = wsbench_supervisor::SETTINGS_FLAG, hide = true, exclusive = true)]
    pub settings_from_stdin: bool,
}

impl RunArgs {
    /// The run's settings: the scenario file, overridden by the positionals and the flags;
    /// or, for a shard, what its parent wrote on stdin.
    pub fn into_settings(self) -> Result<RunSettings, CommandError> {
        if self.settings_from_stdin {
            return Ok(wsbench_supervisor::read_settings(std::io::stdin().lock())?);
        }
        settings_of(self.positional, self.scenario_file.as_deref(), self.settings)
    }
}

/// The settings of a run or a sweep: `scenario_file`, overridden by the positional words (a
/// scenario, a URL) and the flags `settings`.
pub(crate) fn settings_of(
    positional: Vec<String>,
    scenario_file: Option<&std::path::Path>,
    mut settings: RunSettings,
) -> Result<RunSettings, CommandError> {
    for word in positional {
        let slot = if word.contains("://") { &mut settings.target } else { &mut settings.scenario };
        if slot.replace(word.clone()).is_some() {
            return Err(CommandError::Config(ConfigError::Invalid {
                setting: "scenario",
                problem: format!("`{word}`: give at most one scenario and one URL"),
            }));
        }
    }
    let mut base = match scenario_file {
        Some(path) => RunSettings::from_scenario(path)?,
        None => RunSettings::default(),
    };
    wsbench::members::secrets_over(&settings.options, &mut base.options);
    Ok(settings.over(base)?)
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
#[command(
    override_usage = "wsbench diff [OPTIONS] <BASE>... -- <NEW>...",
    after_help = "Example: wsbench diff --fail-on 'p99:+5%' before-*.json -- after-*.json (flags go before `--`)"
)]
pub struct DiffArgs {
    /// Result files of the base runs (repeats of one benchmark; 5 or more for the rank test).
    // Not required here: the library's refusal of an empty side says which and how to write it.
    #[arg(value_name = "BASE")]
    pub base: Vec<PathBuf>,
    /// Result files of the new runs, after `--` (every flag goes before it).
    #[arg(last = true, value_name = "NEW")]
    pub new: Vec<PathBuf>,
    /// Changes within this share of the base value never count (0% to 50%).
    #[arg(long, default_value = "2%", value_parser = wsbench::diff::parse_noise)]
    pub noise: f64,
    /// The chance of any false "better" or "worse" in the whole diff (Holm's correction over the
    /// figures tested), 0.001 to 0.5; intervals are at 1 − alpha.
    #[arg(long, default_value_t = wsbench::diff::DEFAULT_ALPHA, value_parser = wsbench::diff::parse_alpha)]
    pub alpha: f64,
    /// Exit 99 when FIGURE changed past N% (counted changes only), e.g. 'p99:+5%' or
    /// 'round_trips_per_sec:-3%' (repeatable).
    #[arg(long = "fail-on", value_name = "FIGURE:±N%")]
    pub fail_on: Vec<wsbench::diff::Gate>,
    /// Compare runs that differ in scenario, settings, wsbench version, machine or transport, or
    /// that were client-bound, with a warning instead of refusing.
    #[arg(long)]
    pub force: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: wsbench::diff::DiffFormat,
}

impl DiffArgs {
    pub fn into_settings(self) -> wsbench::diff::DiffSettings {
        wsbench::diff::DiffSettings {
            base: self.base,
            new: self.new,
            criteria: wsbench::diff::Criteria { alpha: self.alpha, noise: self.noise },
            force: self.force,
            gates: self.fail_on,
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
    /// Merge the files given even when they are not every shard of the run (`--shard I/N`
    /// missing some I): the merged result and its report say "k of N shards".
    #[arg(long)]
    pub partial: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_from_stdin_takes_no_other_flag_and_is_hidden() {
        let serve = Cli::try_parse_from(["wsbench", "serve", "--settings-from-stdin"]).unwrap();
        assert!(matches!(serve.command, Command::Serve(ref serve) if serve.settings_from_stdin));
        let shard = Cli::try_parse_from(["wsbench", "run", "--settings-from-stdin"]).unwrap();
        assert!(matches!(shard.command, Command::Run(ref run) if run.settings_from_stdin));
        for (command, flag) in [("serve", "--port"), ("run", "--connections")] {
            let error =
                Cli::try_parse_from(["wsbench", command, "--settings-from-stdin", flag, "1"]).unwrap_err();
            assert_eq!(error.kind(), clap::error::ErrorKind::ArgumentConflict, "{command}");
            let help = Cli::try_parse_from(["wsbench", command, "--help"]).unwrap_err().to_string();
            assert!(help.contains(flag) && !help.contains("settings-from-stdin"), "{help}");
        }
    }
}
