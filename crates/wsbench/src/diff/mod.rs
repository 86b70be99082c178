//! `wsbench diff BASE… -- NEW…`: did a change make the server faster or slower? Each side is
//! one or more result files of repeated runs; for each figure (rate, latency percentiles,
//! connect p99, errors, server CPU per round trip and memory) the diff gives the change with
//! a confidence interval and a verdict, decided with statistics rather than by eye (see
//! `verdict`), and `--fail-on` gates a CI build on it as `--threshold` gates a run.
//!
//! The files are read by the result codec (`result/`); nothing here measures.

mod bootstrap;
mod compat;
pub mod fail_on;
mod figures;
mod rank_test;
mod render;
mod verdict;

use std::path::{Path, PathBuf};

use serde::Serialize;

pub use bootstrap::{MIN_BLOCK_SECONDS, MIN_BLOCKS, MIN_SECONDS};
pub use fail_on::{Gate, GateOutcome};
pub use verdict::{Criteria, MIN_RUNS_FOR_RANK_TEST, Method, Row, Verdict};

/// How reports name the figures a result keeps per second (the only ones the block
/// bootstrap can test), in the order a diff shows them.
pub fn figures_kept_per_second() -> Vec<&'static str> {
    figures::FIGURES.iter().filter(|figure| figure.kept_per_second()).map(|figure| figure.label).collect()
}

use crate::result::{ResultError, RunResult};

/// `--noise` unless given: changes within ±2 % of the base value never count.
pub const DEFAULT_NOISE: f64 = 0.02;
/// The largest `--noise`, as a fraction.
pub const MAX_NOISE: f64 = 0.5;
/// `--alpha` unless given: the family-wise error rate over the figures tested. With 5 runs a
/// side the smallest two-sided p-value of the rank test is 2/252 ≈ 0.0079, so at 0.05 Holm's
/// correction over the 8 or more figures of a run (0.05/8 ≈ 0.0063) could never find a
/// change; at 0.10, a whole diff of identical sides still says "no difference" on every
/// figure at least 9 times in 10.
pub const DEFAULT_ALPHA: f64 = 0.10;
/// The range of `--alpha`.
pub const ALPHA_RANGE: std::ops::RangeInclusive<f64> = 0.001..=0.5;
/// Result files a side may have.
pub const MAX_FILES_PER_SIDE: usize = 200;
/// `--fail-on` gates a diff may have.
pub const MAX_GATES: usize = 64;

/// Why a diff could not be made. Each names the file, flag or figure at fault.
#[derive(Debug, thiserror::Error)]
pub enum DiffError {
    #[error(transparent)]
    Result(#[from] ResultError),
    #[error(
        "the {runs} side is empty: give the {runs} runs' result files {place} `--` (`wsbench diff BASE… -- NEW…`)"
    )]
    EmptySide { runs: &'static str, place: &'static str },
    #[error("`{first}` and `{other}` are the same file, {given}")]
    SameFile { first: String, other: String, given: &'static str },
    #[error("`{first}` and `{other}` are the same run (run id {run_id}), {given}")]
    SameRun { first: String, other: String, run_id: String, given: &'static str },
    #[error("{side} has {count} result files, more than {MAX_FILES_PER_SIDE}: give fewer repeats")]
    TooManyFiles { side: &'static str, count: usize },
    #[error("`--fail-on {expression}`: {problem}")]
    FailOn { expression: String, problem: String },
    #[error("--{flag} `{input}`: {problem}")]
    Setting { flag: &'static str, input: String, problem: String },
    #[error(
        "{side} file `{name}` looks like a flag: give flags before `--` (everything after it is a NEW file)"
    )]
    FlagAfterSeparator { side: &'static str, name: String },
    #[error("{count} --fail-on gates, more than {MAX_GATES}: give fewer")]
    TooManyGates { count: usize },
    #[error("{first}{more}; give --force to compare them anyway")]
    Incomparable { first: String, more: String },
}

impl crate::exit::ExitCode for DiffError {
    fn exit_code(&self) -> u8 {
        match self {
            DiffError::Result(error) => error.exit_code(),
            _ => crate::exit::USAGE,
        }
    }
}

/// How `wsbench diff` renders.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum DiffFormat {
    /// A benchstat-like table for the terminal.
    #[default]
    Text,
    /// A Markdown table for a pull-request comment.
    Md,
    /// JSON, with the same figures, intervals, p-values, verdicts and reasons.
    Json,
}

/// Everything `wsbench diff` is asked.
#[derive(Debug, Clone)]
pub struct DiffSettings {
    pub base: Vec<PathBuf>,
    pub new: Vec<PathBuf>,
    pub criteria: Criteria,
    /// Compare runs that differ in scenario, settings, version, machine or transport, or
    /// that were client-bound, with a warning instead of refusing.
    pub force: bool,
    pub gates: Vec<Gate>,
}

/// The version of `--format json` output (`schema/diff.schema.json`): 2 added the verdict
/// `too_little_data` and each figure's `reason`, and made a bootstrap's shift the change of
/// the medians the columns show.
pub const DIFF_SCHEMA_VERSION: u32 = 2;

/// A finished diff, as every format renders it.
#[derive(Debug, Clone, Serialize)]
pub struct Diff {
    /// Always `wsbench-diff`: what this JSON is.
    pub kind: &'static str,
    pub schema_version: u32,
    pub base: Vec<String>,
    pub new: Vec<String>,
    pub scenario: String,
    /// What the scenario's exchanges are called ("round trips", "deliveries").
    pub exchanges: String,
    pub alpha: f64,
    pub noise: f64,
    /// Why the runs should not have been compared (only with `--force`).
    pub warnings: Vec<String>,
    #[serde(rename = "figures")]
    pub rows: Vec<Row>,
    pub fail_on: Vec<GateOutcome>,
    /// Whether a `--fail-on` gate failed (then `diff` exits 99).
    pub failed: bool,
}

impl Diff {
    /// The exit code: 99 when a gate failed, else 0.
    pub fn exit_code(&self) -> u8 {
        match self.failed {
            true => crate::exit::THRESHOLDS_FAILED,
            false => crate::exit::SUCCESS,
        }
    }

    /// The diff in `format`.
    pub fn render(&self, format: DiffFormat) -> String {
        match format {
            DiffFormat::Text => render::text(self),
            DiffFormat::Md => render::markdown(self),
            DiffFormat::Json => render::json(self),
        }
    }
}

/// Reads both sides, checks that they can be compared, and decides every figure.
pub fn command(settings: &DiffSettings) -> Result<Diff, DiffError> {
    if settings.gates.len() > MAX_GATES {
        return Err(DiffError::TooManyGates { count: settings.gates.len() });
    }
    check_paths("BASE", &settings.base)?;
    check_paths("NEW", &settings.new)?;
    distinct_files(&settings.base, &settings.new)?;
    let base = read_side(&settings.base)?;
    let new = read_side(&settings.new)?;
    distinct_runs(&base, &new)?;
    let paths: Vec<(&Path, &RunResult)> =
        base.iter().chain(&new).map(|(path, run)| (path.as_path(), run)).collect();
    let warnings = compat::mismatches(&paths);
    if !settings.force && !warnings.is_empty() {
        let more = match warnings.len() {
            1 => String::new(),
            n => format!(" (and {} more)", n - 1),
        };
        return Err(DiffError::Incomparable { first: warnings[0].clone(), more });
    }
    let (base_runs, new_runs): (Vec<&RunResult>, Vec<&RunResult>) =
        (base.iter().map(|(_, r)| r).collect(), new.iter().map(|(_, r)| r).collect());
    let rows = verdict::decide(&base_runs, &new_runs, settings.criteria);
    let fail_on = fail_on::judge(&settings.gates, &rows);
    let exchange = crate::scenario::of_result(base_runs[0])
        .map_or(crate::config::Exchange::ROUND_TRIP, |scenario| scenario.exchange());
    Ok(Diff {
        kind: "wsbench-diff",
        schema_version: DIFF_SCHEMA_VERSION,
        base: settings.base.iter().map(|p| p.display().to_string()).collect(),
        new: settings.new.iter().map(|p| p.display().to_string()).collect(),
        scenario: base_runs[0].scenario.clone(),
        exchanges: exchange.many.to_owned(),
        alpha: settings.criteria.alpha,
        noise: settings.criteria.noise,
        warnings,
        rows,
        failed: fail_on.iter().any(|gate| gate.failed),
        fail_on,
    })
}

/// Refuses a side with no file, too many, or a flag given after `--`, before any is read.
fn check_paths(side: &'static str, paths: &[PathBuf]) -> Result<(), DiffError> {
    let (runs, place) = match side {
        "BASE" => ("base", "before"),
        _ => ("new", "after"),
    };
    match paths.len() {
        0 => return Err(DiffError::EmptySide { runs, place }),
        count if count > MAX_FILES_PER_SIDE => return Err(DiffError::TooManyFiles { side, count }),
        _ => {}
    }
    if let Some(flag) = paths.iter().find(|p| p.to_string_lossy().starts_with("--") && !p.exists()) {
        return Err(DiffError::FlagAfterSeparator { side, name: flag.display().to_string() });
    }
    Ok(())
}

fn read_side(paths: &[PathBuf]) -> Result<Vec<(PathBuf, RunResult)>, DiffError> {
    paths.iter().map(|path| Ok((path.clone(), RunResult::read_json(path)?))).collect()
}

/// Where the second of two paths of one file or run was given, and what to do: on the other
/// side (a run compared with itself) or twice on one side (a run counted twice).
fn sides_of(first: usize, other: usize, base_count: usize) -> &'static str {
    match (first < base_count, other < base_count) {
        (true, false) => {
            "on both sides of `--`: a run compared with itself shows nothing; give the base runs' files \
             before `--` and the new runs' after it"
        }
        (true, true) => "given twice in BASE: a run would count twice; give each run once",
        _ => "given twice in NEW: a run would count twice; give each run once",
    }
}

/// Refuses a file given twice, under any name (`a.json`, `./a.json`, a link to it): the same
/// device and inode. Files that cannot be read are left to the reading, which names them.
fn distinct_files(base: &[PathBuf], new: &[PathBuf]) -> Result<(), DiffError> {
    use std::os::unix::fs::MetadataExt;
    let every: Vec<&PathBuf> = base.iter().chain(new).collect();
    let identity: Vec<Option<(u64, u64)>> =
        every.iter().map(|path| std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))).collect();
    for (n, id) in identity.iter().enumerate().filter(|(_, id)| id.is_some()) {
        if let Some(m) = identity[n + 1..].iter().position(|other| other == id) {
            return Err(DiffError::SameFile {
                first: every[n].display().to_string(),
                other: every[n + 1 + m].display().to_string(),
                given: sides_of(n, n + 1 + m, base.len()),
            });
        }
    }
    Ok(())
}

/// Refuses the same run twice under two files (a copy): the same run id, shard and start.
fn distinct_runs(base: &[(PathBuf, RunResult)], new: &[(PathBuf, RunResult)]) -> Result<(), DiffError> {
    let every: Vec<&(PathBuf, RunResult)> = base.iter().chain(new).collect();
    let identity = |run: &RunResult| {
        let id = run.run_id.clone()?;
        Some((id, run.config.get("shard").cloned(), run.started_at_unix_ms))
    };
    let identities: Vec<_> = every.iter().map(|(_, run)| identity(run)).collect();
    for (n, id) in identities.iter().enumerate().filter(|(_, id)| id.is_some()) {
        if let Some(m) = identities[n + 1..].iter().position(|other| other == id) {
            return Err(DiffError::SameRun {
                first: every[n].0.display().to_string(),
                other: every[n + 1 + m].0.display().to_string(),
                run_id: id.as_ref().map_or(String::new(), |(run_id, _, _)| run_id.clone()),
                given: sides_of(n, n + 1 + m, base.len()),
            });
        }
    }
    Ok(())
}

/// `--noise`: a percentage from 0% to 50% (`2%`), as a fraction.
pub fn parse_noise(text: &str) -> Result<f64, DiffError> {
    let bad = |problem: &str| DiffError::Setting {
        flag: "noise",
        input: text.to_owned(),
        problem: problem.to_owned(),
    };
    let number = text.trim().strip_suffix('%').ok_or_else(|| bad("give a percentage, e.g. 2%"))?;
    let percent: f64 = number.trim().parse().map_err(|_| bad("give a percentage, e.g. 2%"))?;
    match percent.is_finite() && (0.0..=MAX_NOISE * 100.0).contains(&percent) {
        true => Ok(percent / 100.0),
        false => Err(bad("give a percentage from 0% to 50%")),
    }
}

/// `--alpha`: a family-wise error rate from 0.001 to 0.5.
pub fn parse_alpha(text: &str) -> Result<f64, DiffError> {
    let bad = || DiffError::Setting {
        flag: "alpha",
        input: text.to_owned(),
        problem: "give a number from 0.001 to 0.5, e.g. 0.05".to_owned(),
    };
    let alpha: f64 = text.trim().parse().map_err(|_| bad())?;
    match ALPHA_RANGE.contains(&alpha) {
        true => Ok(alpha),
        false => Err(bad()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn noise_and_alpha_are_bounded() {
        assert_eq!(parse_noise("2%").unwrap(), 0.02);
        assert_eq!(parse_noise("0%").unwrap(), 0.0);
        for bad in ["2", "51%", "-1%", "NaN%", "x%"] {
            let error = parse_noise(bad).unwrap_err().to_string();
            assert!(error.starts_with(&format!("--noise `{bad}`: give a percentage")), "{error}");
        }
        assert_eq!(parse_alpha("0.05").unwrap(), 0.05);
        for bad in ["0", "0.6", "x", "inf"] {
            assert!(parse_alpha(bad).unwrap_err().to_string().contains("from 0.001 to 0.5"), "{bad}");
        }
    }
}
