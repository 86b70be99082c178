//! The block bootstrap against an independent implementation: scipy 1.17.1's
//! `scipy.stats.bootstrap` (numpy 2.4.6, Python 3.11.7), given each run's block means as one
//! sample and the diff's figure (median of the new runs' moved values minus the base runs')
//! as the statistic, with 400,000 resamples, once, with the script below; its output is
//! pasted into the tests. This module's 10,000 resamples agree with it within a few of their
//! own Monte Carlo errors (a tenth of the bootstrap's standard error, which is about five).
//!
//! ```text
//! python3 -m venv /tmp/scipyenv && /tmp/scipyenv/bin/pip install scipy numpy
//! /tmp/scipyenv/bin/python bootstrap_reference.py
//! ```
//!
//! `bootstrap_reference.py`:
//!
//! ```text
//! import numpy as np
//! from scipy import stats
//!
//! def series(level, n, seed):  # a run's per-second values: jitter and a slow step every 4 seconds
//!     return [level + (s * 37 + seed * 11) % 29 - 14 + 10 * (((s + seed) // 4) % 3) for s in range(n)]
//!
//! def block_means(seconds):  # blocks of round(cbrt(n)) seconds, at least 2; the first n % b left out
//!     n = len(seconds)
//!     b = max(2, int(round(n ** (1 / 3))))
//!     return np.asarray(seconds[n % b:], dtype=float).reshape(-1, b).mean(axis=1)
//!
//! cases = {  # (value, per-second series) of each base run, then of each new run
//!     "one_run_a_side_12s": ([(1000.0, series(1000, 12, 0))], [(1008.0, series(1008, 12, 1))]),
//!     "three_runs_a_side_20s": (
//!         [(980.0, series(985, 20, 2)), (1010.0, series(1012, 20, 3)), (995.0, series(990, 20, 4))],
//!         [(1000.0, series(1003, 20, 5)), (985.0, series(987, 20, 6)), (1012.0, series(1015, 20, 7))],
//!     ),
//!     "two_runs_10s_and_30s": (
//!         [(250.0, series(250, 10, 8)), (262.0, series(260, 30, 9))],
//!         [(255.0, series(257, 30, 10)), (270.0, series(268, 10, 11))],
//!     ),
//! }
//! for name, (base, new) in cases.items():
//!     samples = [block_means(s) for _, s in base + new]
//!     values = [v for v, _ in base + new]
//!     nb = len(base)
//!     def shift(*resampled, axis=-1):  # median of the new runs' moved values minus the base runs'
//!         moved = [v + r.mean(axis=axis) - s.mean() for v, r, s in zip(values, resampled, samples)]
//!         return np.median(moved[nb:], axis=0) - np.median(moved[:nb], axis=0)
//!     res = stats.bootstrap(tuple(samples), shift, n_resamples=400_000, confidence_level=0.9, method="percentile",
//!                           vectorized=True, batch=20_000, rng=np.random.default_rng(41))
//!     d = res.bootstrap_distribution
//!     p = min(1.0, 2 * (min((d <= 0).sum(), (d >= 0).sum()) + 1) / (len(d) + 1))
//!     estimate = float(np.median(values[nb:]) - np.median(values[:nb]))
//!     print(f"{name}: estimate={estimate!r} low={float(res.confidence_interval.low)!r} "
//!           f"high={float(res.confidence_interval.high)!r} standard_error={float(res.standard_error)!r} p={float(p)!r}")
//! ```
//!
//! Its output:
//!
//! ```text
//! one_run_a_side_12s: estimate=8.0 low=-0.5833333333332575 high=17.333333333333258 standard_error=5.445896829306043 p=0.12727468181329546
//! three_runs_a_side_20s: estimate=5.0 low=-2.333333333333144 high=12.333333333333371 standard_error=4.476251970314358 p=0.2657343356641608
//! two_runs_10s_and_30s: estimate=6.5 low=1.1333333333333826 high=11.799999999999983 standard_error=3.2393267719149534 p=0.046774883062792344
//! ```

use super::*;

/// [`series`] of reference.py: `n` seconds around `level`.
fn series(level: i64, n: i64, seed: i64) -> Vec<f64> {
    (0..n).map(|s| (level + (s * 37 + seed * 11) % 29 - 14 + 10 * (((s + seed) / 4) % 3)) as f64).collect()
}

fn run(value: f64, level: i64, n: i64, seed: i64) -> RunSeries {
    RunSeries { value, seconds: series(level, n, seed) }
}

/// What scipy printed for one case: estimate, low, high, standard error, p.
struct Reference {
    estimate: f64,
    low: f64,
    high: f64,
    standard_error: f64,
    p: f64,
}

fn assert_matches(name: &str, base: &[RunSeries], new: &[RunSeries], want: Reference) {
    let (shift, p) = block_bootstrap(base, new, 0.9).unwrap();
    let near = |got: f64, reference: f64| (got - reference).abs() <= 0.1 * want.standard_error;
    assert_eq!(shift.estimate, want.estimate, "{name}: {shift:?}");
    assert!(
        near(shift.low, want.low) && near(shift.high, want.high),
        "{name}: {shift:?}, scipy [{}, {}]",
        want.low,
        want.high
    );
    assert!((p - want.p).abs() <= 0.03, "{name}: p {p}, scipy {}", want.p);
}

#[test]
fn one_run_a_side_matches_scipy() {
    let reference = Reference {
        estimate: 8.0,
        low: -0.5833333333332575,
        high: 17.333333333333258,
        standard_error: 5.445896829306043,
        p: 0.12727468181329546,
    };
    assert_matches("one_run_a_side_12s", &[run(1000.0, 1000, 12, 0)], &[run(1008.0, 1008, 12, 1)], reference);
}

#[test]
fn the_median_of_three_runs_a_side_matches_scipy() {
    let base = [run(980.0, 985, 20, 2), run(1010.0, 1012, 20, 3), run(995.0, 990, 20, 4)];
    let new = [run(1000.0, 1003, 20, 5), run(985.0, 987, 20, 6), run(1012.0, 1015, 20, 7)];
    let reference = Reference {
        estimate: 5.0,
        low: -2.333333333333144,
        high: 12.333333333333371,
        standard_error: 4.476251970314358,
        p: 0.2657343356641608,
    };
    assert_matches("three_runs_a_side_20s", &base, &new, reference);
}

#[test]
fn runs_of_different_lengths_match_scipy() {
    let base = [run(250.0, 250, 10, 8), run(262.0, 260, 30, 9)];
    let new = [run(255.0, 257, 30, 10), run(270.0, 268, 10, 11)];
    let reference = Reference {
        estimate: 6.5,
        low: 1.1333333333333826,
        high: 11.799999999999983,
        standard_error: 3.2393267719149534,
        p: 0.046774883062792344,
    };
    assert_matches("two_runs_10s_and_30s", &base, &new, reference);
}

#[test]
fn the_same_files_give_the_same_interval() {
    let (base, new) = ([run(1000.0, 1000, 30, 0)], [run(1000.0, 1000, 30, 1)]);
    assert_eq!(block_bootstrap(&base, &new, 0.9), block_bootstrap(&base, &new, 0.9));
}

#[test]
fn the_estimate_is_the_change_of_the_median_run_not_of_the_pooled_seconds() {
    // The runs' own values disagree with their seconds' pooled mean (a slow first run of
    // each side): the diff's columns show the medians, and so does the change.
    let base = [run(500.0, 500, 12, 0), run(1000.0, 1000, 12, 1), run(1010.0, 1010, 12, 2)];
    let new = [run(600.0, 600, 12, 3), run(990.0, 990, 12, 4), run(995.0, 995, 12, 5)];
    let (shift, _) = block_bootstrap(&base, &new, 0.9).unwrap();
    assert_eq!(shift.estimate, 990.0 - 1000.0);
    assert!(shift.low <= shift.estimate && shift.estimate <= shift.high, "{shift:?}");
    assert!(shift.low < shift.high, "{shift:?}");
}

#[test]
fn the_same_run_is_no_evidence() {
    let same = [run(1000.0, 1000, 30, 0)];
    let (shift, p) = block_bootstrap(&same, &same, 0.9).unwrap();
    assert_eq!(shift.estimate, 0.0);
    assert!(p > 0.1 && shift.low < 0.0 && shift.high > 0.0, "{shift:?} p {p}");
}

#[test]
fn runs_of_fewer_than_ten_seconds_are_refused() {
    // Two seconds a run (a 2 s run): one block, every resample the same, an interval of no
    // width. Nine: four blocks.
    for seconds in [0, 1, 2, 6, 9] {
        let short = run(1000.0, 1000, seconds, 0);
        let long = run(1000.0, 1000, 60, 0);
        let refused = block_bootstrap(std::slice::from_ref(&short), std::slice::from_ref(&long), 0.9);
        assert_eq!(refused, Err(TooShort { seconds: seconds as usize }));
        let refused = block_bootstrap(&[long.clone(), long.clone()], &[long, short], 0.9);
        assert_eq!(refused, Err(TooShort { seconds: seconds as usize }));
    }
    assert!(block_bootstrap(&[run(1.0, 1000, 10, 0)], &[run(2.0, 1000, 10, 1)], 0.9).is_ok());
    assert_eq!(block_bootstrap(&[], &[run(1.0, 1000, 10, 0)], 0.9), Err(TooShort { seconds: 0 }));
}

#[test]
fn every_series_of_ten_seconds_or_more_makes_five_blocks() {
    for points in MIN_SECONDS..=MAX_POINTS_PER_RUN {
        let blocks = points / block_length(points);
        assert!(blocks >= MIN_BLOCKS, "{points} points: {blocks} blocks of {}", block_length(points));
    }
    for seconds in [3_601, 86_400, 604_800] {
        let points = coarsened(&vec![1.0; seconds]).len();
        assert!(points <= MAX_POINTS_PER_RUN && points / block_length(points) >= MIN_BLOCKS, "{seconds}");
    }
}

#[test]
fn a_week_of_seconds_is_resampled_as_an_hour_of_groups() {
    let week: Vec<f64> = (0..604_800).map(|s| 1000.0 + (s % 7) as f64).collect();
    let grouped = coarsened(&week);
    assert_eq!(grouped.len(), MAX_POINTS_PER_RUN);
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    assert!((mean(&grouped) - mean(&week)).abs() < 1e-9);
    let weeks = [RunSeries { value: 1003.0, seconds: week }];
    let (shift, _) = block_bootstrap(&weeks, &weeks, 0.9).unwrap();
    assert_eq!(shift.estimate, 0.0);
}

#[test]
fn the_resamples_are_of_the_estimates_own_figure() {
    // Runs whose seconds are far apart and of different lengths: a median of runs and a mean
    // of pooled seconds differ here, and the interval of the one would miss the other. The
    // raw percentile interval (before it is widened to reach the estimate) holds it.
    for shift_of_new in [-300, -30, 0, 30, 300] {
        let base = [run(900.0, 900, 10, 0), run(1100.0, 1100, 40, 1), run(1000.0, 1000, 10, 2)];
        let new = [run(1000.0 + shift_of_new as f64, 1000 + shift_of_new, 10, 3), run(950.0, 950, 25, 4)];
        let (shift, _) = block_bootstrap(&base, &new, 0.9).unwrap();
        let (base, new): (Vec<Blocks>, Vec<Blocks>) =
            (base.iter().map(blocks).collect(), new.iter().map(blocks).collect());
        let (low, high) = percentile_interval(&resampled_shifts(&base, &new), 0.9);
        assert!(
            low < shift.estimate && shift.estimate < high,
            "{shift_of_new}: {shift:?}, raw [{low}, {high}]"
        );
        assert_eq!((shift.low, shift.high), (low, high));
    }
}
