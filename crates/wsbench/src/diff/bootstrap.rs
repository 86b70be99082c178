//! The block bootstrap `wsbench diff` decides with when a side has fewer than five runs: it
//! resamples each run's per-second values in blocks of consecutive seconds (circularly), so
//! that the autocorrelation of neighbouring seconds (a GC pause, a busy neighbour) stays
//! inside the resampled series instead of being taken for independent evidence. The random
//! numbers come from a fixed seed: the same files give the same output.
//!
//! What it cannot see is the variance between runs (a server's memory layout, the machine's
//! load from one run to the next): with one run a side, a change it finds may be that run's
//! luck. The report says so.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::rank_test::Shift;

/// Resamples of each comparison.
pub const RESAMPLES: usize = 2_000;
/// The seed of every comparison's random numbers.
const SEED: u64 = 0x5753_4245_4e43_4844;
/// Points of a run's series the bootstrap resamples at most: a longer run's seconds are
/// averaged in consecutive groups first (the mean is the same, neighbours stay together), so
/// that a diff of week-long runs takes as long as one of hour-long runs.
const MAX_POINTS_PER_RUN: usize = 3_600;

/// The shift of the mean per-second value from `base` to `new` (each a side's runs, each
/// run its per-second series) with its percentile interval at `confidence`, and the
/// two-sided p-value of "no shift" (from the share of resampled shifts on either side of
/// zero). `None` when a side has no second.
pub fn block_bootstrap(base: &[Vec<f64>], new: &[Vec<f64>], confidence: f64) -> Option<(Shift, f64)> {
    let estimate = pooled_mean(new)? - pooled_mean(base)?;
    let (base, new) = (&coarsened(base), &coarsened(new));
    let mut rng = StdRng::seed_from_u64(SEED);
    let mut shifts: Vec<f64> =
        (0..RESAMPLES).map(|_| resampled_mean(new, &mut rng) - resampled_mean(base, &mut rng)).collect();
    shifts.sort_by(f64::total_cmp);
    let alpha = 1.0 - confidence;
    let low = shifts[((alpha / 2.0) * RESAMPLES as f64).floor() as usize];
    let high = shifts[(((1.0 - alpha / 2.0) * RESAMPLES as f64).ceil() as usize).min(RESAMPLES) - 1];
    let at_most_zero = shifts.iter().filter(|&&s| s <= 0.0).count();
    let at_least_zero = shifts.iter().filter(|&&s| s >= 0.0).count();
    let p_value = (2.0 * (at_most_zero.min(at_least_zero) + 1) as f64 / (RESAMPLES + 1) as f64).min(1.0);
    Some((Shift { estimate, low, high }, p_value))
}

/// Each run's series with at most [`MAX_POINTS_PER_RUN`] points: groups of consecutive
/// seconds averaged (the last group may be shorter).
fn coarsened(runs: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let group = |series: &Vec<f64>| series.len().div_ceil(MAX_POINTS_PER_RUN).max(1);
    runs.iter()
        .map(|series| series.chunks(group(series)).map(|c| c.iter().sum::<f64>() / c.len() as f64).collect())
        .collect()
}

/// Seconds per block for a series of `seconds`: the cube root rule for a mean's
/// variance, at least two so that neighbouring seconds stay together.
fn block_length(seconds: usize) -> usize {
    ((seconds as f64).cbrt().ceil() as usize).max(2).min(seconds.max(1))
}

/// The mean over every second of every run; `None` when there is none.
fn pooled_mean(runs: &[Vec<f64>]) -> Option<f64> {
    let seconds: usize = runs.iter().map(Vec::len).sum();
    (seconds > 0).then(|| runs.iter().flatten().sum::<f64>() / seconds as f64)
}

/// The mean of one resample: each run's series rebuilt to its length from blocks starting
/// at random seconds (wrapping around its end).
fn resampled_mean(runs: &[Vec<f64>], rng: &mut StdRng) -> f64 {
    let (mut sum, mut seconds) = (0.0, 0usize);
    for series in runs.iter().filter(|series| !series.is_empty()) {
        let length = block_length(series.len());
        let mut taken = 0;
        while taken < series.len() {
            let start = rng.random_range(0..series.len());
            for offset in 0..length.min(series.len() - taken) {
                sum += series[(start + offset) % series.len()];
            }
            taken += length;
        }
        seconds += series.len();
    }
    sum / seconds.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A series with a slow wave and a little noise, as a run's per-second rate looks.
    fn wavy(level: f64, seconds: usize, phase: f64) -> Vec<f64> {
        (0..seconds).map(|s| level + 50.0 * ((s as f64 + phase) / 3.0).sin() + (s % 3) as f64).collect()
    }

    #[test]
    fn the_same_files_give_the_same_interval() {
        let (base, new) = (vec![wavy(1000.0, 30, 0.0)], vec![wavy(1000.0, 30, 1.0)]);
        assert_eq!(block_bootstrap(&base, &new, 0.9), block_bootstrap(&base, &new, 0.9));
    }

    #[test]
    fn a_clear_shift_is_found_and_its_interval_holds_it() {
        let base = vec![wavy(1000.0, 30, 0.0), wavy(1000.0, 30, 2.0)];
        let new = vec![wavy(900.0, 30, 1.0), wavy(900.0, 30, 4.0)];
        let (shift, p) = block_bootstrap(&base, &new, 0.9).unwrap();
        assert!(p < 0.01, "{p}");
        assert!(shift.low < -100.0 + 30.0 && shift.high > -100.0 - 30.0 && shift.high < 0.0, "{shift:?}");
    }

    #[test]
    fn the_same_wave_is_no_evidence() {
        let base = vec![wavy(1000.0, 30, 0.0)];
        let new = vec![wavy(1000.0, 30, 0.0)];
        let (shift, p) = block_bootstrap(&base, &new, 0.9).unwrap();
        assert_eq!(shift.estimate, 0.0);
        assert!(p > 0.1 && shift.low < 0.0 && shift.high > 0.0, "{shift:?} p {p}");
    }

    #[test]
    fn a_week_of_seconds_is_resampled_as_an_hour_of_groups() {
        let week: Vec<f64> = (0..604_800).map(|s| 1000.0 + (s % 7) as f64).collect();
        let grouped = coarsened(std::slice::from_ref(&week));
        assert_eq!(grouped[0].len(), MAX_POINTS_PER_RUN);
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        assert!((mean(&grouped[0]) - mean(&week)).abs() < 1e-9);
        let weeks = [week];
        let (shift, _) = block_bootstrap(&weeks, &weeks, 0.9).unwrap();
        assert_eq!(shift.estimate, 0.0);
    }

    #[test]
    fn no_seconds_no_answer() {
        assert_eq!(block_bootstrap(&[vec![]], &[vec![1.0]], 0.9), None);
    }
}
