//! The flags of the commands that sweep (not part of the library): `wsbench sweep` and
//! `compare --sweep` take `--connections` and `--rate` as a series (`1,10,100`,
//! `1..10000`, `1000/s..200000/s`) where `run` takes one value, plus `--steps` and
//! `--holdout`. `run`'s `--connections` is a count: [`Series`] reads it as text instead and
//! takes it out of the matches before the command's own settings are read, so `run`'s
//! flags stay one definition. What the series mean is decided by the library
//! (`wsbench::sweep`).

use std::path::PathBuf;

use clap::{Args, FromArgMatches};

use wsbench::config::{ConfigError, RunSettings};
use wsbench::error::CommandError;

use crate::cli::{CompareArgs, settings_of};

/// The options a sweep adds to those of `run`.
#[derive(Debug, Args)]
pub struct SweepOptions {
    /// Steps a range (A..B) is spread over, geometrically (2 to 100) [default: 10]
    #[arg(long)]
    pub steps: Option<usize>,
    /// Fit the Universal Scalability Law on all steps but the last K and report how far it
    /// predicted them (a closed-loop connections sweep; at least 6 steps must remain).
    #[arg(long, value_name = "K")]
    pub holdout: Option<usize>,
}

/// `wsbench sweep`: a scenario and/or URL, a scenario file, the sweep's options and the
/// settings of `run`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// A scenario (as `wsbench run` lists them) and/or a target URL (ws:// or wss://); without
    /// a URL wsbench starts its built-in server once, for every step.
    #[arg(value_name = "SCENARIO|URL", num_args = 0..=2)]
    pub positional: Vec<String>,
    /// A scenario or a preset by name, or a TOML scenario file; flags override it.
    #[arg(long = "scenario", value_name = "NAME|FILE")]
    pub scenario_file: Option<PathBuf>,
    #[command(flatten)]
    pub options: SweepOptions,
    #[command(flatten)]
    pub settings: RunSettings,
}

/// A command whose `--connections` may be a series (`1,10,100`, `1..10000`): the flag of
/// `run` (a count) is read here as text, taken out of the matches before the command's
/// own settings are, and `connections` keeps it.
#[derive(Debug)]
pub struct Series<T> {
    pub args: T,
    pub connections: Option<String>,
}

impl<T: FromArgMatches> FromArgMatches for Series<T> {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        Self::from_arg_matches_mut(&mut matches.clone())
    }

    fn from_arg_matches_mut(matches: &mut clap::ArgMatches) -> Result<Self, clap::Error> {
        let connections = matches.remove_one::<String>("connections");
        Ok(Series { args: T::from_arg_matches_mut(matches)?, connections })
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

impl<T: Args> Args for Series<T> {
    fn augment_args(command: clap::Command) -> clap::Command {
        T::augment_args(command)
            .mut_arg("connections", |arg| arg.value_parser(clap::builder::NonEmptyStringValueParser::new()))
    }

    fn augment_args_for_update(command: clap::Command) -> clap::Command {
        Self::augment_args(command)
    }
}

/// The help of the flags a sweep reads as a series, and of its outputs.
pub fn series_help(command: clap::Command) -> clap::Command {
    command
        .mut_arg("connections", |arg| {
            arg.value_name("N|A..B|N,N,…").help(
                "Connections: one count, or (sweep) the series swept: a list from lowest to highest \
                 (1,10,100) or a range spread geometrically over --steps (1..10000) [default: 1000]",
            )
        })
        .mut_arg("rate", |arg| {
            arg.value_name("R|A..B|R,R,…").help(
                "Open loop: the total message rate, or (sweep) the series swept: a list \
                 (1000/s,5000/s) or a range over --steps (1000/s..200000/s), each above zero and at \
                 most 10,000,000/s",
            )
        })
}

impl Series<SweepArgs> {
    /// The sweep as given: the scenario file, overridden by the positionals and the flags.
    pub fn into_sweep_settings(self) -> Result<wsbench::sweep::SweepSettings, CommandError> {
        let SweepArgs { positional, scenario_file, options, settings } = self.args;
        let settings = settings_of(positional, scenario_file.as_deref(), settings)?;
        Ok(options.sweep(self.connections, settings))
    }
}

impl SweepOptions {
    /// The sweep of `settings` whose `--connections` was `connections`: their `--rate` and
    /// `--threshold` are the sweep's.
    pub fn sweep(
        &self,
        connections: Option<String>,
        mut settings: RunSettings,
    ) -> wsbench::sweep::SweepSettings {
        wsbench::sweep::SweepSettings {
            connections,
            rate: settings.rate.take(),
            steps: self.steps,
            holdout: self.holdout,
            thresholds: std::mem::take(&mut settings.threshold),
            settings,
        }
    }
}

impl Series<CompareArgs> {
    /// The comparison's settings: `--connections` a count, unless `--sweep` takes it as a
    /// series (then the sweep's settings are given too).
    pub fn into_compare(self) -> Result<(CompareArgs, Option<wsbench::sweep::SweepSettings>), CommandError> {
        let mut args = self.args;
        if !args.sweep {
            let count = self.connections.as_deref().map(|text| {
                text.trim().parse::<u64>().map_err(|_| ConfigError::Invalid {
                    setting: "connections",
                    problem: format!("`{text}` is not a count: give a whole number (a series needs --sweep)"),
                })
            });
            args.settings.connections = count.transpose()?;
            return Ok((args, None));
        }
        let sweep = args.sweep_options.sweep(self.connections, args.settings.clone());
        (args.settings.rate, args.settings.threshold) = (None, Vec::new());
        Ok((args, Some(sweep)))
    }
}
