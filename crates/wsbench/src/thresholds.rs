//! `--threshold`: the pass/fail criteria of a run, judged on its finished result (a pure
//! function of the [`RunResult`]), so CI can fail a build on `p99<10ms` the way k6 users
//! expect. The session judges the one result that is written: the run's, or the merged
//! result of a `--processes` run (shards are not given thresholds). A failed threshold
//! makes `wsbench run` exit 99 (`exit::THRESHOLDS_FAILED`).

use crate::config::{BackShare, Metric, RecoveryFigure, Statistic, Threshold};
use crate::result::{ConnectStats, LatencyStats, RunResult, ThresholdOutcome};

/// Every threshold judged on `result`, in the order given.
pub fn judge(thresholds: &[Threshold], result: &RunResult) -> Vec<ThresholdOutcome> {
    thresholds
        .iter()
        .map(|threshold| {
            let value = match threshold.stage {
                Some(stage) => stage_value(&threshold.metric, result.stages.get(stage)),
                None => value_of(&threshold.metric, result),
            };
            ThresholdOutcome {
                expression: threshold.expression.clone(),
                value,
                // A latency of a run that measured none holds no bound.
                passed: value.is_some_and(|value| threshold.comparison.holds(value, threshold.bound)),
            }
        })
        .collect()
}

/// Whether any judged threshold of `result` failed.
pub fn any_failed(result: &RunResult) -> bool {
    result.summary.thresholds.iter().any(|t| !t.passed)
}

/// The figure `metric` names, in its unit; `None` when a time has no sample to bound.
fn value_of(metric: &Metric, result: &RunResult) -> Option<f64> {
    let summary = &result.summary;
    match *metric {
        Metric::Latency(_) if summary.latency_us.count == 0 => None,
        Metric::Latency(statistic) => Some(latency_value(statistic, &summary.latency_us)),
        Metric::Connect(_) if summary.connect_us.count == 0 => None,
        Metric::Connect(statistic) => Some(connect_value(statistic, &summary.connect_us)),
        Metric::Errors => Some(summary.errors.values().sum::<u64>() as f64),
        Metric::RoundTripsPerSec => Some(summary.exchanges_per_sec),
        Metric::Stalls => Some(summary.stalls.count as f64),
        Metric::LongestStall => Some(summary.stalls.longest_s() as f64 * 1e6),
        Metric::Recovery(figure) => recovery_value(figure, result.recovery.as_ref()?),
        Metric::Scenario(ref name) => crate::scenario::of_result(result)?.threshold_value(name, result),
    }
}

/// The figure `metric` names in one stage; `None` when the result has no such stage or
/// the stage measured no latency.
fn stage_value(metric: &Metric, stage: Option<&crate::result::StageFigures>) -> Option<f64> {
    let stage = stage?;
    match *metric {
        Metric::Latency(_) if stage.latency_us.count == 0 => None,
        Metric::Latency(statistic) => Some(latency_value(statistic, &stage.latency_us)),
        Metric::Errors => Some(stage.errors as f64),
        Metric::RoundTripsPerSec => Some(stage.exchanges_per_sec),
        Metric::Connect(_)
        | Metric::Scenario(_)
        | Metric::Stalls
        | Metric::LongestStall
        | Metric::Recovery(_) => None,
    }
}

/// A recovery's figure: a time in µs (`None`: that share never came back, which fails the
/// threshold), attempts per connection, connections not back.
fn recovery_value(figure: RecoveryFigure, recovery: &crate::result::RecoveryFigures) -> Option<f64> {
    let after = &recovery.back_after;
    let seconds = match figure {
        RecoveryFigure::AttemptsPerConnection => return recovery.attempts_per_connection,
        RecoveryFigure::NotBack => return Some(recovery.not_back as f64),
        RecoveryFigure::BackAfter(BackShare::First) => after.first_s,
        RecoveryFigure::BackAfter(BackShare::P50) => after.p50_s,
        RecoveryFigure::BackAfter(BackShare::P90) => after.p90_s,
        RecoveryFigure::BackAfter(BackShare::P99) => after.p99_s,
        RecoveryFigure::BackAfter(BackShare::All) => after.all_s,
    };
    seconds.map(|s| s * 1e6)
}

/// The value of `statistic` in `stats`, in µs.
pub fn latency_value(statistic: Statistic, stats: &LatencyStats) -> f64 {
    match statistic {
        Statistic::Mean => stats.mean,
        Statistic::P50 => stats.p50 as f64,
        Statistic::P75 => stats.p75 as f64,
        Statistic::P90 => stats.p90 as f64,
        Statistic::P95 => stats.p95 as f64,
        Statistic::P99 => stats.p99 as f64,
        Statistic::P999 => stats.p999 as f64,
        Statistic::Max => stats.max as f64,
    }
}

/// The value of `statistic` in the connect times, in µs (the parser only lets through the
/// statistics they keep; the others read as the nearest kept above).
fn connect_value(statistic: Statistic, stats: &ConnectStats) -> f64 {
    match statistic {
        Statistic::Mean => stats.mean,
        Statistic::P50 => stats.p50 as f64,
        Statistic::P75 | Statistic::P90 => stats.p90 as f64,
        Statistic::P95 | Statistic::P99 => stats.p99 as f64,
        Statistic::P999 | Statistic::Max => stats.max as f64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    fn judged(texts: &[&str], result: &RunResult) -> Vec<(String, Option<f64>, bool)> {
        let thresholds: Vec<Threshold> = texts.iter().map(|t| t.parse().unwrap()).collect();
        judge(&thresholds, result).into_iter().map(|o| (o.expression, o.value, o.passed)).collect()
    }

    #[test]
    fn stalls_are_judged_by_their_count_and_the_longest_one() {
        let mut result = RunResult::from_outcome(&fixture::closed_loop());
        let healthy = judged(&["stalls==0", "longest_stall<1s"], &result);
        assert_eq!(
            healthy.iter().map(|(_, value, passed)| (*value, *passed)).collect::<Vec<_>>(),
            [(Some(0.0), true), (Some(0.0), true)]
        );
        let stall = crate::result::Stall { from_s: 3, seconds: 2 };
        result.summary.stalls =
            crate::result::Stalls { count: 1, seconds: 2, longest: Some(stall), first: vec![stall] };
        let stalled = judged(&["stalls==0", "longest_stall<1s", "longest_stall<=2s"], &result);
        assert_eq!(
            stalled.iter().map(|(_, value, passed)| (*value, *passed)).collect::<Vec<_>>(),
            [(Some(1.0), false), (Some(2_000_000.0), false), (Some(2_000_000.0), true)]
        );
    }

    #[test]
    fn each_threshold_is_judged_on_its_figure() {
        let mut result = RunResult::from_outcome(&fixture::closed_loop());
        result.summary.latency_us.p99 = 9_000;
        result.summary.connect_us.p99 = 700;
        result.summary.exchanges_per_sec = 5_000.0;
        result.summary.errors.clear();
        let got = judged(
            &["p99<10ms", "p99<9ms", "p99<=9ms", "connect_p99>1ms", "errors==0", "echoes_per_sec>=5000"],
            &result,
        );
        let passed: Vec<bool> = got.iter().map(|(_, _, passed)| *passed).collect();
        assert_eq!(passed, [true, false, true, false, true, true]);
        assert_eq!(got[0], ("p99<10ms".to_owned(), Some(9_000.0), true));
        assert_eq!(got[3].1, Some(700.0));
        result.summary.errors.insert("reset".into(), 2);
        result.summary.errors.insert("closed_1001".into(), 3);
        let got = judged(&["errors==0", "errors<5", "errors<6"], &result);
        assert_eq!(
            got.iter().map(|g| (g.1, g.2)).collect::<Vec<_>>(),
            [(Some(5.0), false), (Some(5.0), false), (Some(5.0), true)]
        );
    }

    #[test]
    fn a_latency_bound_fails_when_nothing_was_measured() {
        let result = RunResult::from_outcome(&fixture::nothing_answered());
        assert_eq!(result.summary.latency_us.count, 0);
        let got = judged(&["p99<10s", "max>=0us"], &result);
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(got.iter().all(|(_, value, passed)| value.is_none() && !passed), "{got:?}");
    }
}
