//! `wsbench run echo --find-max-rate --slo 'p99<10ms'`: the highest open-loop message rate
//! a server sustains while a latency objective holds (what tcpkali's `-r @latency` tried).
//! The rate doubles until the objective breaks, then bisects between the last rate that
//! held and the first that broke until they are within 5 %. A step also fails when the
//! server did not deliver the offered rate, when anything failed, or when the client could
//! not keep its schedule: a rate is only "sustained" if all of it was measured honestly.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::config::ConfigError;
use crate::result::{LatencyStats, RunResult};

/// Bisection stops when the bracket is narrower than this fraction of the rate that held.
pub const PRECISION: f64 = 0.05;
/// Most steps one search measures.
pub const MAX_STEPS: usize = 24;
/// A step must deliver at least this share of the offered rate.
pub const DELIVERED_SHARE: f64 = 0.95;

/// Which latency figure an objective bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Statistic {
    Mean,
    P50,
    P90,
    P99,
    P999,
    Max,
}

impl Statistic {
    fn of(self, stats: &LatencyStats) -> f64 {
        match self {
            Statistic::Mean => stats.mean,
            Statistic::P50 => stats.p50 as f64,
            Statistic::P90 => stats.p90 as f64,
            Statistic::P99 => stats.p99 as f64,
            Statistic::P999 => stats.p999 as f64,
            Statistic::Max => stats.max as f64,
        }
    }
}

/// One bound, e.g. `p99<10ms`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Objective {
    pub statistic: Statistic,
    pub limit_us: f64,
}

/// A latency objective: every bound must hold (`p99<10ms,p999<50ms`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Slo {
    pub text: String,
    pub objectives: Vec<Objective>,
}

impl std::str::FromStr for Slo {
    type Err = ConfigError;
    fn from_str(text: &str) -> Result<Slo, ConfigError> {
        let bad = |why: String| ConfigError::Invalid {
            setting: "slo",
            problem: format!("`{text}`: {why}; write e.g. 'p99<10ms' or 'p99<10ms,p999<50ms'"),
        };
        let mut objectives = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, limit) = part.split_once('<').ok_or_else(|| bad(format!("`{part}` has no `<`")))?;
            let statistic = match name.trim() {
                "mean" => Statistic::Mean,
                "p50" | "median" => Statistic::P50,
                "p90" => Statistic::P90,
                "p99" => Statistic::P99,
                "p99.9" | "p999" => Statistic::P999,
                "max" => Statistic::Max,
                other => {
                    return Err(bad(format!(
                        "unknown statistic `{other}` (mean, p50, p90, p99, p99.9, max)"
                    )));
                }
            };
            let limit = crate::units::parse_duration(limit.trim().trim_start_matches('='))
                .map_err(|e| bad(e.to_string()))?;
            objectives.push(Objective { statistic, limit_us: limit.as_secs_f64() * 1e6 });
        }
        if objectives.is_empty() {
            return Err(bad("no objective".into()));
        }
        Ok(Slo { text: text.to_owned(), objectives })
    }
}

/// What one step measured and whether the objective held.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub offered_per_sec: f64,
    pub achieved_per_sec: f64,
    pub latency_us: LatencyStats,
    pub errors: BTreeMap<String, u64>,
    pub held: bool,
    /// Why the step failed, in words.
    pub broken_by: Option<String>,
}

impl Step {
    /// Judges one measured run at `offered` messages/s against `slo`.
    pub fn judge(offered: f64, result: &RunResult, slo: &Slo) -> Step {
        let summary = &result.summary;
        let mut broken = Vec::new();
        for objective in &slo.objectives {
            let value = objective.statistic.of(&summary.latency_us);
            if summary.latency_us.count == 0 || value >= objective.limit_us {
                broken.push(format!("{:?} {:.2} ms", objective.statistic, value / 1e3).to_lowercase());
            }
        }
        if summary.echoes_per_sec < offered * DELIVERED_SHARE {
            broken.push(format!("delivered {:.0}/s of {:.0}/s", summary.echoes_per_sec, offered));
        }
        if !summary.errors.is_empty() {
            broken.push(format!("errors {:?}", summary.errors));
        }
        if result.client.bound {
            broken.push("client-bound".to_owned());
        }
        Step {
            offered_per_sec: offered,
            achieved_per_sec: summary.echoes_per_sec,
            latency_us: summary.latency_us,
            errors: summary.errors.clone(),
            held: broken.is_empty(),
            broken_by: (!broken.is_empty()).then(|| broken.join(", ")),
        }
    }
}

/// The whole search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Search {
    pub slo: Slo,
    pub steps: Vec<Step>,
    /// The highest rate that held; `None` if even the lowest tried broke the objective.
    pub max_rate_per_sec: Option<f64>,
    /// The lowest rate that broke it (the bracket's top), if any did.
    pub broke_at_per_sec: Option<f64>,
    pub interrupted: bool,
}

/// Runs the search from `start` messages/s; `measure` runs one step at a rate. Stops early
/// (keeping what was measured) when `measure` says the run was interrupted.
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
        let (step, stop) = measure(rate)?;
        let held = step.held;
        steps.push(step);
        if stop {
            interrupted = true;
            break;
        }
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
    use super::*;

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
    }

    #[test]
    fn objectives_parse_and_bad_ones_say_how_to_write_them() {
        let slo: Slo = "p99<10ms, p99.9<50ms,mean<2ms".parse().unwrap();
        assert_eq!(slo.objectives.len(), 3);
        assert_eq!(slo.objectives[0], Objective { statistic: Statistic::P99, limit_us: 10_000.0 });
        for bad in ["p99>10ms", "p42<1ms", "p99<soon", ""] {
            let error = bad.parse::<Slo>().unwrap_err().to_string();
            assert!(error.contains("p99<10ms"), "{error}");
        }
    }
}
