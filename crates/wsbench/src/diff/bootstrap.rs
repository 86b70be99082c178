//! The block bootstrap `wsbench diff` decides with when a side has fewer than five runs.
//!
//! What it estimates is the figure the diff's columns show: the median over a side's runs of
//! each run's own value (its rate, its p50 from the whole run's histogram), new minus base.
//! How uncertain each run's value is comes from its per-second series: the series is cut
//! into consecutive blocks of seconds (a slow stretch, a GC pause, a busy neighbour stays
//! inside its block instead of being taken for independent evidence), and a resample draws
//! as many blocks, with replacement, as the run has. A run's resampled value is its own
//! value moved by how far the mean of the drawn blocks lies from the mean of all its blocks;
//! the resampled shift is the median of the new runs' resampled values minus the base runs'.
//! The random numbers come from a fixed seed: the same files give the same output.
//!
//! It refuses to say anything unless every run has [`MIN_SECONDS`] measured seconds: with
//! fewer, a run is one or two blocks, every resample draws the same ones, and the interval
//! would have no width (a confident verdict from no evidence).
//!
//! What it cannot see is the variation between runs (a server's memory layout, the machine's
//! load from one run to the next): a change it finds may be those runs' luck. The report
//! says so.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::rank_test::{Shift, median_of_sorted};

/// Resamples of each comparison.
pub const RESAMPLES: usize = 10_000;
/// The seed of every comparison's random numbers.
const SEED: u64 = 0x5753_4245_4e43_4844;
/// Points of a run's series the bootstrap cuts into blocks at most: a longer run's seconds
/// are averaged in consecutive groups first (the mean is the same, neighbours stay
/// together), so that a diff of week-long runs takes as long as one of hour-long runs.
const MAX_POINTS_PER_RUN: usize = 3_600;
/// Blocks every run's series must make: with fewer, a resample has too few ways to differ
/// from the run for its spread to mean anything.
pub const MIN_BLOCKS: usize = 5;
/// The shortest block, in seconds: neighbouring seconds stay together.
pub const MIN_BLOCK_SECONDS: usize = 2;
/// Measured seconds every run needs: [`MIN_BLOCKS`] blocks of [`MIN_BLOCK_SECONDS`] (every
/// longer series makes at least as many blocks; a test checks it).
pub const MIN_SECONDS: usize = MIN_BLOCKS * MIN_BLOCK_SECONDS;

/// One run as the bootstrap sees it: the figure's value in the run (what the diff's columns
/// take the median of) and the figure's value in each measured second.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSeries {
    pub value: f64,
    pub seconds: Vec<f64>,
}

/// Why the bootstrap said nothing: the run with the fewest measured seconds had these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooShort {
    pub seconds: usize,
}

/// The shift of the median run value from `base` to `new` with its percentile interval at
/// `confidence` (widened to hold the estimate if it does not), and the two-sided p-value of
/// "no shift" (from the share of resampled shifts on either side of zero). Refused when a
/// side is empty or a run has fewer than [`MIN_SECONDS`] measured seconds.
pub fn block_bootstrap(
    base: &[RunSeries],
    new: &[RunSeries],
    confidence: f64,
) -> Result<(Shift, f64), TooShort> {
    let fewest = match base.is_empty() || new.is_empty() {
        true => 0,
        false => base.iter().chain(new).map(|run| run.seconds.len()).min().unwrap_or(0),
    };
    if fewest < MIN_SECONDS {
        return Err(TooShort { seconds: fewest });
    }
    let (base, new): (Vec<Blocks>, Vec<Blocks>) =
        (base.iter().map(blocks).collect(), new.iter().map(blocks).collect());
    let estimate = median_value(&new, |run| run.value) - median_value(&base, |run| run.value);
    let shifts = resampled_shifts(&base, &new);
    let (low, high) = percentile_interval(&shifts, confidence);
    let at_most_zero = shifts.iter().filter(|&&s| s <= 0.0).count();
    let at_least_zero = shifts.iter().filter(|&&s| s >= 0.0).count();
    let p_value = (2.0 * (at_most_zero.min(at_least_zero) + 1) as f64 / (RESAMPLES + 1) as f64).min(1.0);
    // The resamples are of the estimate's own statistic, so the interval holds it but in a
    // freak case of a median; then it reaches to it rather than claim more than it shows.
    Ok((Shift { estimate, low: low.min(estimate), high: high.max(estimate) }, p_value))
}

/// [`RESAMPLES`] resampled shifts from `base` to `new`, sorted.
fn resampled_shifts(base: &[Blocks], new: &[Blocks]) -> Vec<f64> {
    let mut rng = StdRng::seed_from_u64(SEED);
    let mut shifts: Vec<f64> =
        (0..RESAMPLES).map(|_| resampled_median(new, &mut rng) - resampled_median(base, &mut rng)).collect();
    shifts.sort_by(f64::total_cmp);
    shifts
}

/// The percentile interval at `confidence` of sorted `shifts`.
fn percentile_interval(shifts: &[f64], confidence: f64) -> (f64, f64) {
    let alpha = 1.0 - confidence;
    let count = shifts.len() as f64;
    let low = shifts[((alpha / 2.0) * count).floor() as usize];
    let high = shifts[(((1.0 - alpha / 2.0) * count).ceil() as usize).min(shifts.len()) - 1];
    (low, high)
}

/// A run cut into blocks: its value, its blocks' means, and their mean.
struct Blocks {
    value: f64,
    means: Vec<f64>,
    mean: f64,
}

/// The run's series (coarsened to at most [`MAX_POINTS_PER_RUN`] points) cut into blocks of
/// [`block_length`] consecutive points; the first points that do not fill a block (those
/// nearest the warm-up) are left out.
fn blocks(run: &RunSeries) -> Blocks {
    let points = coarsened(&run.seconds);
    let length = block_length(points.len());
    let means: Vec<f64> = points[points.len() % length..]
        .chunks(length)
        .map(|block| block.iter().sum::<f64>() / length as f64)
        .collect();
    let mean = means.iter().sum::<f64>() / means.len() as f64;
    Blocks { value: run.value, means, mean }
}

/// The series with at most [`MAX_POINTS_PER_RUN`] points: groups of consecutive seconds
/// averaged (the last group may be shorter).
fn coarsened(series: &[f64]) -> Vec<f64> {
    let group = series.len().div_ceil(MAX_POINTS_PER_RUN).max(1);
    series.chunks(group).map(|c| c.iter().sum::<f64>() / c.len() as f64).collect()
}

/// Points per block for a series of `points`: the cube root rule for a mean's variance
/// (rounded), at least [`MIN_BLOCK_SECONDS`].
pub fn block_length(points: usize) -> usize {
    ((points as f64).cbrt().round() as usize).max(MIN_BLOCK_SECONDS)
}

/// The median over `runs` of `value`.
fn median_value(runs: &[Blocks], value: impl Fn(&Blocks) -> f64) -> f64 {
    let mut values: Vec<f64> = runs.iter().map(value).collect();
    values.sort_by(f64::total_cmp);
    median_of_sorted(&values)
}

/// The median over `runs` of one resample of each: the run's value moved by the mean of as
/// many blocks as it has, drawn with replacement, less the mean of its blocks.
fn resampled_median(runs: &[Blocks], rng: &mut StdRng) -> f64 {
    let mut values: Vec<f64> = runs
        .iter()
        .map(|run| {
            let drawn: f64 =
                (0..run.means.len()).map(|_| run.means[rng.random_range(0..run.means.len())]).sum();
            run.value + drawn / run.means.len() as f64 - run.mean
        })
        .collect();
    values.sort_by(f64::total_cmp);
    median_of_sorted(&values)
}

#[cfg(test)]
#[path = "bootstrap_tests.rs"]
mod tests;
