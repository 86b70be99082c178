//! The verdicts on made-up sides: result files of one fixture run whose figures are set
//! per run, so each test controls exactly what differs.

use super::*;
use crate::fixture;

const CRITERIA: Criteria = Criteria { alpha: 0.10, noise: 0.02 };

/// A run whose rate and latency p50 are the given values (the other figures as the
/// fixture has them, the same in every run).
fn run(rate: f64, p50_us: u64) -> RunResult {
    let mut result = RunResult::from_outcome(&fixture::closed_loop());
    result.summary.exchanges_per_sec = rate;
    result.summary.latency_us.p50 = p50_us;
    result.summary.latency_uncorrected_us.p50 = p50_us;
    result
}

fn row<'a>(rows: &'a [Row], figure: &str) -> &'a Row {
    rows.iter().find(|row| row.figure == figure).unwrap_or_else(|| panic!("no {figure} in {rows:?}"))
}

fn decided(base: &[RunResult], new: &[RunResult]) -> Vec<Row> {
    decided_with(base, new, CRITERIA)
}

fn decided_with(base: &[RunResult], new: &[RunResult], criteria: Criteria) -> Vec<Row> {
    decide(&base.iter().collect::<Vec<_>>(), &new.iter().collect::<Vec<_>>(), criteria)
}

#[test]
fn interleaved_sides_are_no_difference_and_constant_figures_are_not_tested() {
    let base: Vec<RunResult> = [(1000.0, 100), (1010.0, 102), (990.0, 99), (1005.0, 101), (995.0, 98)]
        .map(|(rate, p50)| run(rate, p50))
        .into();
    let new: Vec<RunResult> = [(1002.0, 100), (1008.0, 103), (992.0, 97), (1001.0, 100), (997.0, 99)]
        .map(|(rate, p50)| run(rate, p50))
        .into();
    let rows = decided(&base, &new);
    assert!(rows.iter().all(|row| row.verdict == Verdict::NoDifference), "{rows:#?}");
    assert_eq!(row(&rows, "round_trips_per_sec").method, Some(Method::MannWhitney));
    assert_eq!(row(&rows, "p99").method, Some(Method::Identical));
    assert!(row(&rows, "p99").p_value.is_none());
    // The closed loop's uncorrected latencies are the corrected ones: not figures of their own.
    assert!(rows.iter().all(|row| !row.figure.ends_with("_uncorrected")), "{rows:#?}");
}

#[test]
fn a_slower_server_is_worse_in_latency_and_rate_and_nothing_else() {
    let base: Vec<RunResult> = (0..5).map(|i| run(1000.0 + i as f64, 100 + i)).collect();
    let new: Vec<RunResult> = (0..5).map(|i| run(700.0 + i as f64, 300 + i)).collect();
    let rows = decided(&base, &new);
    assert_eq!(row(&rows, "p50").verdict, Verdict::Worse);
    assert_eq!(row(&rows, "round_trips_per_sec").verdict, Verdict::Worse);
    let p50 = row(&rows, "p50");
    assert_eq!(p50.shift.unwrap().estimate, 200.0);
    assert!((p50.change.unwrap().estimate - 200.0 / 102.0).abs() < 1e-12, "{p50:?}");
    // Two figures tested, each p = 2/252: Holm doubles the smaller.
    assert!((p50.p_holm.unwrap() - 2.0 * 2.0 / 252.0).abs() < 1e-12, "{p50:?}");
    let changed: Vec<&str> =
        rows.iter().filter(|row| row.verdict != Verdict::NoDifference).map(|row| row.figure).collect();
    assert_eq!(changed, ["round_trips_per_sec", "p50"]);
    let faster = decided(&new, &base);
    assert_eq!(row(&faster, "p50").verdict, Verdict::Better);
    assert_eq!(row(&faster, "round_trips_per_sec").verdict, Verdict::Better);
}

#[test]
fn a_significant_change_inside_the_noise_band_does_not_count() {
    let base: Vec<RunResult> = (0..5).map(|i| run(1000.0 + i as f64, 100)).collect();
    let new: Vec<RunResult> = (0..5).map(|i| run(1010.0 + i as f64, 100)).collect();
    let rows = decided(&base, &new);
    let rate = row(&rows, "round_trips_per_sec");
    assert!(rate.p_holm.unwrap() < CRITERIA.alpha, "{rate:?}");
    assert_eq!(rate.verdict, Verdict::NoDifference, "{rate:?}");
    let wide = decided_with(&base, &new, Criteria { noise: 0.0, ..CRITERIA });
    assert_eq!(row(&wide, "round_trips_per_sec").verdict, Verdict::Better);
}

#[test]
fn holm_multiplies_by_the_figures_left_and_never_decreases() {
    let mut rows = decided(&[run(1.0, 1)], &[run(1.0, 1)]);
    rows.truncate(3);
    for (row, p) in rows.iter_mut().zip([0.04, 0.01, 0.03]) {
        row.p_value = Some(p);
    }
    holm(&mut rows);
    let adjusted: Vec<f64> = rows.iter().map(|row| row.p_holm.unwrap()).collect();
    // 0.01 × 3, 0.03 × 2 = 0.06, 0.04 × 1 = 0.04 → raised to 0.06.
    let want = [0.06, 0.03, 0.06];
    assert!(adjusted.iter().zip(want).all(|(a, w)| (a - w).abs() < 1e-12), "{adjusted:?}");
}

#[test]
fn fewer_runs_use_the_per_second_series_or_stay_untested() {
    let with_timeline = |rate: u64, p50: u64| {
        let mut result = run(rate as f64, p50);
        result.config["warmup"] = 0.into();
        for (second, point) in result.timeline.iter_mut().enumerate() {
            point.exchanges = rate + (second as u64 % 4) * 10;
            point.p50_us = p50 + second as u64 % 3;
        }
        result
    };
    let rows = decided(&[with_timeline(1000, 100)], &[with_timeline(800, 150)]);
    let rate = row(&rows, "round_trips_per_sec");
    assert_eq!((rate.method, rate.verdict), (Some(Method::BlockBootstrap), Verdict::Worse), "{rate:?}");
    assert_eq!(row(&rows, "p50").verdict, Verdict::Worse);
    assert_eq!(row(&rows, "p90").verdict, Verdict::NoDifference, "identical p90: nothing to test");
    let mut other = with_timeline(1000, 100);
    other.summary.latency_us.p90 += 50;
    let rows = decided(&[with_timeline(1000, 100)], &[other]);
    assert_eq!(row(&rows, "p90").verdict, Verdict::Untested);
    assert_eq!(row(&rows, "round_trips_per_sec").verdict, Verdict::NoDifference);
}

#[test]
fn runs_too_short_for_the_bootstrap_have_too_little_data_and_no_p_value() {
    // Three runs a side whose rates differ clearly, each of three measured seconds: the old
    // bootstrap gave a zero-width interval and a confident verdict.
    let short = |rate: u64| {
        let mut result = run(rate as f64, 100);
        result.config["warmup"] = 0.into();
        result.timeline.truncate(4); // the last, partial second is left out: three remain
        for point in &mut result.timeline {
            point.exchanges = rate;
        }
        result
    };
    let base: Vec<RunResult> = [1000, 1010, 990].map(short).into();
    let new: Vec<RunResult> = [1200, 1210, 1190].map(short).into();
    let rows = decided(&base, &new);
    let rate = row(&rows, "round_trips_per_sec");
    assert_eq!(rate.verdict, Verdict::TooLittleData, "{rate:?}");
    assert_eq!(
        (rate.method, rate.shift, rate.change, rate.p_value, rate.p_holm),
        (None, None, None, None, None)
    );
    let reason = rate.reason.as_deref().unwrap_or_default();
    assert!(reason.starts_with("3 base runs and 3 new runs (the rank test needs 5 a side), and a run of only 3 measured seconds (the block bootstrap needs 10 from every run"), "{reason}");
    // Not tested, so not counted in Holm's correction of the others.
    assert!(rows.iter().all(|row| row.p_holm.is_none()), "{rows:#?}");
}

#[test]
fn the_bootstraps_change_is_that_of_the_medians_the_columns_show() {
    let with_timeline = |rate: u64, level: u64| {
        let mut result = run(rate as f64, 100);
        result.config["warmup"] = 0.into();
        for (second, point) in result.timeline.iter_mut().enumerate() {
            point.exchanges = level + (second as u64 % 4) * 10;
        }
        result
    };
    // Runs whose per-second values lie far from their headline (a slow first run): the
    // pooled seconds would say +20 %, the medians of the runs say -1 %.
    let base = [with_timeline(1000, 500), with_timeline(1000, 1000), with_timeline(1010, 1010)];
    let new = [with_timeline(990, 1200), with_timeline(990, 1200), with_timeline(995, 1200)];
    let rows = decided(&base, &new);
    let rate = row(&rows, "round_trips_per_sec");
    assert_eq!(rate.method, Some(Method::BlockBootstrap), "{rate:?}");
    assert_eq!((rate.base, rate.new), (1000.0, 990.0));
    let (shift, change) = (rate.shift.unwrap(), rate.change.unwrap());
    assert_eq!(shift.estimate, -10.0, "{rate:?}");
    assert_eq!(change.estimate, -0.01, "{rate:?}");
    assert!(change.low <= change.estimate && change.estimate <= change.high, "{rate:?}");
}
