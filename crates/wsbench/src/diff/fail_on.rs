//! `--fail-on FIGURE:±N%`: a CI gate on a diff, as `--threshold` is on a run. `p99:+5%`
//! fails when p99 got worse by more than 5 %, `round_trips_per_sec:-3%` when the rate
//! dropped by more than 3 %; only a change the diff counts (significant and outside the noise
//! band) can fail a gate, judged on its estimate. A failed gate makes `diff` exit 99.

use serde::Serialize;

use super::DiffError;
use super::figures::by_key;
use super::verdict::{Row, Verdict};

/// The largest change a gate may name, in percent.
pub const MAX_PERCENT: f64 = 10_000.0;

/// One parsed `--fail-on`.
#[derive(Debug, Clone, PartialEq)]
pub struct Gate {
    pub expression: String,
    pub figure: &'static str,
    /// The signed limit as a fraction: +0.05 fails on a rise above 5 %.
    pub limit: f64,
}

/// A gate judged on a diff.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateOutcome {
    pub expression: String,
    /// The figure's estimated change as a fraction, when the diff has one.
    pub change: Option<f64>,
    /// The figure's verdict, when the diff has the figure.
    pub verdict: Option<Verdict>,
    pub failed: bool,
}

impl std::str::FromStr for Gate {
    type Err = DiffError;
    fn from_str(text: &str) -> Result<Gate, DiffError> {
        let bad = |problem: String| DiffError::FailOn { expression: text.to_owned(), problem };
        let (key, limit) = text.split_once(':').ok_or_else(|| {
            bad("give FIGURE:+N% or FIGURE:-N%, e.g. p99:+5% or round_trips_per_sec:-3%".to_owned())
        })?;
        let figure = by_key(key.trim()).ok_or_else(|| {
            let keys: Vec<&str> = super::figures::FIGURES.iter().map(|f| f.key).collect();
            bad(format!("no figure `{}`; the figures are {}", key.trim(), keys.join(", ")))
        })?;
        let limit = limit.trim();
        let sign = match limit.chars().next() {
            Some('+') => 1.0,
            Some('-') => -1.0,
            _ => return Err(bad("the change needs its sign: +N% fails on a rise, -N% on a drop".to_owned())),
        };
        let number =
            limit[1..].strip_suffix('%').ok_or_else(|| bad("give the change in percent (N%)".to_owned()))?;
        let percent: f64 = number.trim().parse().map_err(|_| bad(format!("`{number}` is not a number")))?;
        if !(percent.is_finite() && (0.0..=MAX_PERCENT).contains(&percent)) {
            return Err(bad(format!("give a change from 0% to {MAX_PERCENT}%")));
        }
        Ok(Gate { expression: text.to_owned(), figure: figure.key, limit: sign * percent / 100.0 })
    }
}

/// Every gate judged on `rows`: failed when its figure's change counts (better or worse) and
/// its estimate goes past the limit in the limit's direction. A gate on a figure the diff
/// does not have holds (nothing measured it), and says so by its empty change.
pub fn judge(gates: &[Gate], rows: &[Row]) -> Vec<GateOutcome> {
    gates
        .iter()
        .map(|gate| {
            let row = rows.iter().find(|row| row.figure == gate.figure);
            let change = row.and_then(|row| row.change).map(|change| change.estimate);
            let counts = row.is_some_and(|row| matches!(row.verdict, Verdict::Better | Verdict::Worse));
            let past = change.is_some_and(|c| match gate.limit >= 0.0 {
                true => c > gate.limit,
                false => c < gate.limit,
            });
            let verdict = row.map(|row| row.verdict);
            GateOutcome { expression: gate.expression.clone(), change, verdict, failed: counts && past }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gates_parse_with_their_sign() {
        let gate: Gate = "p99:+5%".parse().unwrap();
        assert_eq!((gate.figure, gate.limit), ("p99", 0.05));
        let gate: Gate = "round_trips_per_sec:-3%".parse().unwrap();
        assert_eq!((gate.figure, gate.limit), ("round_trips_per_sec", -0.03));
    }

    #[test]
    fn bad_gates_say_what_to_give() {
        let cases = [
            ("p99+5%", "give FIGURE:+N%"),
            ("p98:+5%", "no figure `p98`; the figures are round_trips_per_sec, p50"),
            ("p99:5%", "needs its sign"),
            ("p99:+5", "in percent"),
            ("p99:+x%", "`x` is not a number"),
            ("p99:+20000%", "from 0% to 10000%"),
        ];
        for (text, expected) in cases {
            let error = text.parse::<Gate>().unwrap_err().to_string();
            assert!(error.contains(expected) && error.contains(text), "{text}: {error}");
        }
    }
}
