//! `wsbench run echo --find-max-rate --slo 'p99<10ms'`: the highest open-loop message rate
//! a server sustains while a latency objective holds (what tcpkali's `-r @latency` tried).
//! The rate doubles until the objective breaks, then bisects between the last rate that
//! held and the first that broke until they are within 5 %. A step also fails when the
//! server did not deliver the offered rate, when anything failed, or when the client could
//! not keep its schedule: a rate is only "sustained" if all of it was measured honestly.
//! What a search found, and its `--json` file, are result types (`result::search`): the
//! report reads them without this algorithm.

use crate::config::Slo;
use crate::result::RunResult;
use crate::result::search::{CUT_SHORT, PRECISION, Search, Step};
use crate::units::format::{micros, rate};

/// Most steps one search measures.
pub const MAX_STEPS: usize = 24;
/// A step must deliver at least this share of the offered rate.
pub const DELIVERED_SHARE: f64 = 0.95;

impl Step {
    /// Judges one measured run at `offered` messages/s against `slo`.
    pub fn judge(offered: f64, result: &RunResult, slo: &Slo) -> Step {
        let summary = &result.summary;
        let mut broken = Vec::new();
        for objective in &slo.objectives {
            let value = crate::thresholds::latency_value(objective.statistic, &summary.latency_us);
            if summary.latency_us.count == 0 || value >= objective.limit_us {
                broken.push(format!(
                    "{} {}",
                    format!("{:?}", objective.statistic).to_lowercase(),
                    micros(value)
                ));
            }
        }
        if summary.exchanges_per_sec < offered * DELIVERED_SHARE {
            broken.push(format!("delivered {}/s of {}/s", rate(summary.exchanges_per_sec), rate(offered)));
        }
        if !summary.errors.is_empty() {
            broken.push(format!("errors {:?}", summary.errors));
        }
        if result.client.bound {
            broken.push("client-bound".to_owned());
        }
        Step {
            offered_per_sec: offered,
            achieved_per_sec: summary.exchanges_per_sec,
            latency_us: summary.latency_us,
            errors: summary.errors.clone(),
            held: broken.is_empty(),
            broken_by: (!broken.is_empty()).then(|| broken.join(", ")),
        }
    }
}

/// Runs the search from `start` messages/s; `measure` runs one step at a rate. Stops early
/// (keeping what was measured, the last step [`CUT_SHORT`]) when `measure` says the run
/// was interrupted.
pub fn search<E>(
    slo: Slo,
    start: f64,
    mut measure: impl FnMut(f64) -> Result<(Step, bool), E>,
) -> Result<Search, E> {
    let mut steps = Vec::new();
    let (mut good, mut bad): (Option<f64>, Option<f64>) = (None, None);
    let mut rate = start;
    let mut interrupted = false;
    while steps.len() < MAX_STEPS {
        let (mut step, stop) = measure(rate)?;
        if stop {
            // A step that ended early measured less than its window (often nothing):
            // neither its latency nor its delivered rate says anything of the rate.
            (step.held, step.broken_by) = (false, Some(CUT_SHORT.to_owned()));
            steps.push(step);
            interrupted = true;
            break;
        }
        let held = step.held;
        steps.push(step);
        if held {
            good = Some(rate);
        } else {
            bad = Some(rate);
        }
        rate = match (good, bad) {
            (Some(good), None) => good * 2.0,
            (None, Some(bad)) if bad > start / 1024.0 => bad / 2.0,
            (None, Some(_)) => break,
            (Some(good), Some(bad)) if (bad - good) / good > PRECISION => (good + bad) / 2.0,
            _ => break,
        };
    }
    Ok(Search { slo, steps, max_rate_per_sec: good, broke_at_per_sec: bad, interrupted })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::result::LatencyStats;

    fn step_at(rate: f64, capacity: f64) -> Step {
        let held = rate <= capacity;
        Step {
            offered_per_sec: rate,
            achieved_per_sec: rate.min(capacity),
            latency_us: LatencyStats::default(),
            errors: BTreeMap::new(),
            held,
            broken_by: (!held).then(|| "p99".to_owned()),
        }
    }

    fn slo() -> Slo {
        "p99<10ms".parse().unwrap()
    }

    #[test]
    fn finds_a_capacity_within_the_precision() {
        for capacity in [730.0, 1000.0, 12_345.0, 99_000.0] {
            let search = search(slo(), 1000.0, |rate| Ok::<_, ()>((step_at(rate, capacity), false))).unwrap();
            let found = search.max_rate_per_sec.unwrap();
            assert!(found <= capacity && found >= capacity * (1.0 - PRECISION), "{capacity}: {found}");
            assert!(search.steps.len() < MAX_STEPS);
        }
    }

    #[test]
    fn reports_none_when_nothing_holds() {
        let search = search(slo(), 1000.0, |rate| Ok::<_, ()>((step_at(rate, 0.1), false))).unwrap();
        assert_eq!(search.max_rate_per_sec, None);
    }

    #[test]
    fn interruption_keeps_the_steps_measured() {
        let mut calls = 0;
        let search = search(slo(), 1000.0, |rate| {
            calls += 1;
            Ok::<_, ()>((step_at(rate, 1e9), calls == 3))
        })
        .unwrap();
        assert_eq!(search.steps.len(), 3);
        assert!(search.interrupted);
        // The step cut short held at 1e9/s capacity, but is not judged: the search's answer
        // is the last step that ran whole.
        assert_eq!((search.steps[2].held, search.steps[2].broken_by.as_deref()), (false, Some(CUT_SHORT)));
        assert_eq!(search.max_rate_per_sec, Some(2000.0));
    }
}
