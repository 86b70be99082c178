//! The decision of `wsbench diff`, figure by figure: the change from the base runs to the
//! new ones with its confidence interval, its p-value corrected for the number of figures
//! tested (Holm), and a verdict. A change counts only when it is significant *and* its whole
//! interval lies outside the noise band around the base value: a real but tiny change, or a
//! large one that the runs cannot pin down, is "no difference".

use serde::Serialize;

use super::bootstrap::{MIN_BLOCK_SECONDS, MIN_BLOCKS, MIN_SECONDS, RunSeries, TooShort, block_bootstrap};
use super::figures::{Better, FIGURES, Figure, Unit, is_duplicate};
use super::rank_test::{Shift, hodges_lehmann, mann_whitney, median_of_sorted};
use crate::result::RunResult;
use crate::units::format::plural;

/// Runs a side needs for the rank test; with fewer, the block bootstrap of per-second
/// values decides (for the figures a result keeps per second).
pub const MIN_RUNS_FOR_RANK_TEST: usize = 5;

/// How sure a verdict must be, and how large a change must be to count.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Criteria {
    /// Family-wise error rate over the figures tested (Holm); the intervals are at 1 − α.
    pub alpha: f64,
    /// Half-width of the noise band, as a fraction of the base value.
    pub noise: f64,
}

/// What was decided about one figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Better,
    Worse,
    NoDifference,
    /// Not tested: too few runs for the rank test and no per-second series to resample.
    Untested,
    /// Too few runs for the rank test and runs too short for the block bootstrap: no
    /// interval, no p-value, never better or worse (`Row::reason` says what is missing).
    TooLittleData,
}

/// How a figure was tested.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Mann–Whitney U over the runs, Hodges–Lehmann interval of the shift.
    MannWhitney,
    /// Block bootstrap over the runs' per-second values, percentile interval.
    BlockBootstrap,
    /// Every run of both sides has the same value: nothing to test.
    Identical,
}

/// One figure of a diff.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub figure: &'static str,
    #[serde(skip)]
    pub definition: &'static Figure,
    pub unit: Unit,
    pub better: Better,
    /// Median over each side's runs of each run's value (what the change is of).
    pub base: f64,
    pub new: f64,
    pub base_runs: usize,
    pub new_runs: usize,
    pub method: Option<Method>,
    /// The shift new − base, in the figure's unit: Hodges–Lehmann (rank test) or the
    /// difference of the medians `new − base` (block bootstrap); its interval holds it.
    pub shift: Option<Shift>,
    /// The shift and its interval as fractions of the base value (none when that is 0).
    pub change: Option<Shift>,
    pub p_value: Option<f64>,
    /// `p_value` after Holm's correction over every figure tested.
    pub p_holm: Option<f64>,
    pub verdict: Verdict,
    /// Why the figure is `untested` or has `too_little_data`, and what would decide it.
    pub reason: Option<String>,
}

/// Every figure that both sides measured, decided.
pub fn decide(base: &[&RunResult], new: &[&RunResult], criteria: Criteria) -> Vec<Row> {
    let every: Vec<&RunResult> = base.iter().chain(new).copied().collect();
    let mut rows: Vec<Row> = FIGURES
        .iter()
        .filter(|figure| !is_duplicate(figure, &every))
        .filter_map(|figure| test_figure(figure, base, new, criteria.alpha))
        .collect();
    holm(&mut rows);
    for row in rows.iter_mut().filter(|row| row.verdict != Verdict::TooLittleData) {
        row.verdict = verdict(row, criteria);
    }
    rows
}

/// One figure tested, its verdict still open; `None` when a side never measured it.
fn test_figure(figure: &'static Figure, base: &[&RunResult], new: &[&RunResult], alpha: f64) -> Option<Row> {
    let values = |runs: &[&RunResult]| -> Vec<f64> { runs.iter().filter_map(|r| figure.value(r)).collect() };
    let (base_values, new_values) = (values(base), values(new));
    if base_values.is_empty() || new_values.is_empty() {
        return None;
    }
    let mut row = Row {
        figure: figure.key,
        definition: figure,
        unit: figure.unit,
        better: figure.better,
        base: median(&base_values),
        new: median(&new_values),
        base_runs: base_values.len(),
        new_runs: new_values.len(),
        method: None,
        shift: None,
        change: None,
        p_value: None,
        p_holm: None,
        verdict: Verdict::Untested,
        reason: None,
    };
    let first = base_values[0];
    if base_values.iter().chain(&new_values).all(|&v| v == first) {
        row.method = Some(Method::Identical);
        row.shift = Some(Shift { estimate: 0.0, low: 0.0, high: 0.0 });
        row.change = relative(row.shift, first);
        return Some(row);
    }
    let confidence = 1.0 - alpha;
    if base_values.len() >= MIN_RUNS_FOR_RANK_TEST && new_values.len() >= MIN_RUNS_FOR_RANK_TEST {
        row.method = Some(Method::MannWhitney);
        row.shift = hodges_lehmann(&base_values, &new_values, confidence);
        row.p_value = Some(mann_whitney(&base_values, &new_values).p_value);
        row.change = relative(row.shift, row.base);
    } else {
        bootstrap(&mut row, base, new, confidence);
    }
    Some(row)
}

/// The block bootstrap of a figure a result keeps per second, over the runs that measured
/// it; a figure kept only per run is untested, and runs too short for the bootstrap have
/// too little data. Either way the reason says what would decide it.
fn bootstrap(row: &mut Row, base: &[&RunResult], new: &[&RunResult], confidence: f64) {
    let figure = row.definition;
    let runs = |runs: &[&RunResult]| -> Option<Vec<RunSeries>> {
        let measured = runs.iter().filter_map(|r| Some((figure.value(r)?, r)));
        measured.map(|(value, r)| Some(RunSeries { value, seconds: figure.per_second(r)? })).collect()
    };
    let fewer = format!(
        "{} and {} (the rank test needs {MIN_RUNS_FOR_RANK_TEST} a side)",
        plural(row.base_runs as u64, "base run", "base runs"),
        plural(row.new_runs as u64, "new run", "new runs"),
    );
    let (Some(base_series), Some(new_series)) = (runs(base), runs(new)) else {
        row.reason = Some(format!(
            "{fewer}, and the block bootstrap needs per-second values, which results keep of the {} only: \
             repeat the runs",
            in_words(&super::figures_kept_per_second())
        ));
        return;
    };
    match block_bootstrap(&base_series, &new_series, confidence) {
        Ok((shift, p)) => {
            row.method = Some(Method::BlockBootstrap);
            row.shift = Some(shift);
            row.p_value = Some(p);
            row.change = relative(row.shift, row.base);
        }
        Err(TooShort { seconds }) => {
            row.verdict = Verdict::TooLittleData;
            row.reason = Some(format!(
                "{fewer}, and a run of only {} (the block bootstrap needs {MIN_SECONDS} from every run: \
                 {MIN_BLOCKS} blocks of {MIN_BLOCK_SECONDS} s): run longer or repeat the runs",
                plural(seconds as u64, "measured second", "measured seconds"),
            ));
        }
    }
}

/// `a, b and c`.
fn in_words(items: &[&str]) -> String {
    match items.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => items.join(""),
    }
}

/// `shift` as fractions of `reference`; none when the reference is zero.
fn relative(shift: Option<Shift>, reference: f64) -> Option<Shift> {
    let shift = shift?;
    (reference != 0.0).then(|| {
        let r = reference.abs();
        Shift { estimate: shift.estimate / r, low: shift.low / r, high: shift.high / r }
    })
}

/// Holm's step-down correction over the rows that have a p-value: the i-th smallest (from
/// 0) of m is multiplied by m − i, and each adjusted value is at least the one before.
fn holm(rows: &mut [Row]) {
    let mut tested: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].p_value.is_some()).collect();
    tested.sort_by(|&a, &b| rows[a].p_value.unwrap_or(1.0).total_cmp(&rows[b].p_value.unwrap_or(1.0)));
    let m = tested.len();
    let mut running = 0.0f64;
    for (rank, &index) in tested.iter().enumerate() {
        let adjusted = (rows[index].p_value.unwrap_or(1.0) * (m - rank) as f64).min(1.0);
        running = running.max(adjusted);
        rows[index].p_holm = Some(running);
    }
}

/// Better, worse or no difference: significant after Holm, and the whole interval beyond
/// the noise band around the base value.
fn verdict(row: &Row, criteria: Criteria) -> Verdict {
    let (Some(shift), Some(p_holm)) = (row.shift, row.p_holm) else {
        return match row.method {
            Some(Method::Identical) => Verdict::NoDifference,
            _ => Verdict::Untested,
        };
    };
    let band = criteria.noise * row.base.abs();
    let up = shift.low > band;
    let down = shift.high < -band;
    match (p_holm < criteria.alpha, up, down, row.definition.better) {
        (true, true, _, Better::Higher) | (true, _, true, Better::Lower) => Verdict::Better,
        (true, true, _, Better::Lower) | (true, _, true, Better::Higher) => Verdict::Worse,
        _ => Verdict::NoDifference,
    }
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    median_of_sorted(&sorted)
}

#[cfg(test)]
#[path = "verdict_tests.rs"]
mod tests;
