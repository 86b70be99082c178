//! Latency objectives as the user writes them (`--slo 'p99<10ms,p999<50ms'`): which
//! statistic, which bound. Parsed here with the rest of the configuration; judged by the
//! rate search (`find_rate`).

use serde::{Deserialize, Serialize};

use super::ConfigError;

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

#[cfg(test)]
mod tests {
    use super::*;

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
