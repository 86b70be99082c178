//! Latency objectives as the user writes them (`--slo 'p99<10ms,p999<50ms'`): which
//! statistic, which bound. Parsed here with the rest of the configuration; judged by the
//! rate search (`find_rate`). The statistic names and the latency limits are shared with
//! `--threshold` (`threshold.rs`), so both flags read `p99<10ms` the same way.

use serde::{Deserialize, Serialize};

use super::ConfigError;

/// Which latency figure an objective bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Statistic {
    Mean,
    P50,
    P75,
    P90,
    P95,
    P99,
    P999,
    Max,
}

impl Statistic {
    /// The names users write, for messages.
    pub const NAMES: &'static str = "mean, p50, p75, p90, p95, p99, p99.9, max";

    /// `p99`, `p99.9` (or `p999`), `median`, `mean`, `max`…
    pub fn from_name(name: &str) -> Option<Statistic> {
        Some(match name {
            "mean" => Statistic::Mean,
            "p50" | "median" => Statistic::P50,
            "p75" => Statistic::P75,
            "p90" => Statistic::P90,
            "p95" => Statistic::P95,
            "p99" => Statistic::P99,
            "p99.9" | "p999" => Statistic::P999,
            "max" => Statistic::Max,
            _ => return None,
        })
    }
}

/// A latency bound as typed (`10ms`, `1.5s`, `800us`) in µs. The unit is required: a bare
/// `10` could mean seconds or milliseconds, and a wrong guess passes every CI run.
pub(crate) fn latency_limit_us(text: &str) -> Result<f64, String> {
    if text.parse::<f64>().is_ok() {
        return Err(format!("`{text}` has no unit: add one, e.g. {text}ms or {text}s"));
    }
    let limit = crate::units::parse_duration(text).map_err(|e| e.to_string())?;
    Ok(limit.as_secs_f64() * 1e6)
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
            let statistic = Statistic::from_name(name.trim())
                .ok_or_else(|| bad(format!("unknown statistic `{}` ({})", name.trim(), Statistic::NAMES)))?;
            let limit_us = latency_limit_us(limit.trim().trim_start_matches('=')).map_err(bad)?;
            objectives.push(Objective { statistic, limit_us });
        }
        if objectives.is_empty() {
            return Err(bad("no objective".into()));
        }
        Ok(Slo { text: text.to_owned(), objectives })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objectives_parse_and_bad_ones_say_how_to_write_them() {
        let slo: Slo = "p99<10ms, p99.9<50ms,mean<2ms".parse().unwrap();
        assert_eq!(slo.objectives.len(), 3);
        assert_eq!(slo.objectives[0], Objective { statistic: Statistic::P99, limit_us: 10_000.0 });
        for bad in ["p99>10ms", "p42<1ms", "p99<soon", "p99<10", ""] {
            let error = bad.parse::<Slo>().unwrap_err().to_string();
            assert!(error.contains("p99<10ms"), "{error}");
        }
    }
}
