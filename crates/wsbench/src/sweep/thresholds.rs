//! `--threshold` on a sweep: gates on what the whole curve says (`knee_rate>50000`,
//! `usl_peak>1000`), parsed and checked against the kind of sweep before any load, judged
//! on the finished sweep. A figure the sweep could not give (no knee, a refused fit) holds
//! no bound: the threshold fails, as a latency of a run that measured none does. Any
//! failed one makes `wsbench sweep` exit 99.

use crate::config::{Comparison, ConfigError, invalid_setting};
use crate::result::ThresholdOutcome;
use crate::result::sweep::{Sweep, Varied};

/// A figure of the sweep a threshold can bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    /// Throughput at the p99 knee, /s.
    KneeRate,
    /// Throughput at the p50 knee, /s.
    KneeP50Rate,
    /// The load asked at the p99 knee's step (connections, or offered /s).
    KneeLoad,
    /// The highest throughput of a usable step, /s.
    MaxRate,
    /// N*, the USL's predicted peak, connections.
    UslPeak,
    /// X(N*), /s.
    UslPeakRate,
    /// The fit's R².
    UslR2,
    /// The hold-out's mean absolute error, %.
    HoldoutError,
}

const FIGURES: [(&str, Figure); 8] = [
    ("knee_rate", Figure::KneeRate),
    ("knee_p50_rate", Figure::KneeP50Rate),
    ("knee_load", Figure::KneeLoad),
    ("max_rate", Figure::MaxRate),
    ("usl_peak", Figure::UslPeak),
    ("usl_peak_rate", Figure::UslPeakRate),
    ("usl_r2", Figure::UslR2),
    ("holdout_error", Figure::HoldoutError),
];

/// One threshold on the sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepThreshold {
    pub expression: String,
    pub figure: Figure,
    pub comparison: Comparison,
    pub bound: f64,
}

/// Parses every `--threshold` of a sweep of `varied` loads; a figure the sweep cannot have
/// (the fit's, of an open loop; the hold-out's, without `--holdout`) is refused.
pub fn parse_all(
    texts: &[String],
    varied: Varied,
    closed_loop: bool,
    holdout: bool,
) -> Result<Vec<SweepThreshold>, ConfigError> {
    texts.iter().map(|text| parse(text, varied == Varied::Connections && closed_loop, holdout)).collect()
}

fn parse(text: &str, fitted: bool, holdout: bool) -> Result<SweepThreshold, ConfigError> {
    let names: Vec<&str> = FIGURES.iter().map(|(name, _)| *name).collect();
    let bad = |why: String| {
        invalid_setting(
            "threshold",
            format!("`{text}`: {why}; a sweep's figures are {} (e.g. 'knee_rate>50000')", names.join(", ")),
        )
    };
    let expression = text.trim();
    let at =
        expression.find(['<', '>', '=']).ok_or_else(|| bad("no comparison (<, <=, >, >=, ==)".into()))?;
    let name = expression[..at].trim();
    let (comparison, bound) = Comparison::split(&expression[at..])
        .ok_or_else(|| bad(format!("`{}` does not start with <, <=, >, >= or ==", &expression[at..])))?;
    let figure = FIGURES
        .iter()
        .find(|(known, _)| *known == name)
        .map(|(_, figure)| *figure)
        .ok_or_else(|| bad(format!("unknown figure `{name}`")))?;
    let number = bound.trim_end_matches("/s").trim_end_matches('%').trim();
    let bound = number
        .parse::<f64>()
        .ok()
        .filter(|n| n.is_finite() && *n >= 0.0)
        .ok_or_else(|| bad(format!("`{bound}` is not a number")))?;
    if matches!(figure, Figure::UslPeak | Figure::UslPeakRate | Figure::UslR2 | Figure::HoldoutError)
        && !fitted
    {
        return Err(bad(format!(
            "`{name}` needs the USL fit, which only a closed-loop connections sweep has"
        )));
    }
    if figure == Figure::HoldoutError && !holdout {
        return Err(bad("`holdout_error` needs --holdout K".to_owned()));
    }
    Ok(SweepThreshold { expression: expression.to_owned(), figure, comparison, bound })
}

/// Every threshold judged on `sweep`, in the order given.
pub fn judge(thresholds: &[SweepThreshold], sweep: &Sweep) -> Vec<ThresholdOutcome> {
    thresholds
        .iter()
        .map(|threshold| {
            let value = value_of(threshold.figure, sweep);
            ThresholdOutcome {
                expression: threshold.expression.clone(),
                value,
                passed: value.is_some_and(|value| threshold.comparison.holds(value, threshold.bound)),
            }
        })
        .collect()
}

/// The figure in its unit; `None` when the sweep has none (no knee, a refused fit).
pub fn value_of(figure: Figure, sweep: &Sweep) -> Option<f64> {
    let analysis = &sweep.analysis;
    let step = |knee: &crate::curve::knee::Knee| knee.step().and_then(|step| sweep.steps.get(step));
    let fitted = analysis.usl.fitted();
    match figure {
        Figure::KneeRate => step(&analysis.knee_p99).map(|s| s.throughput_per_sec),
        Figure::KneeP50Rate => step(&analysis.knee_p50).map(|s| s.throughput_per_sec),
        Figure::KneeLoad => step(&analysis.knee_p99).map(|s| s.load),
        Figure::MaxRate => sweep.max_throughput(),
        Figure::UslPeak => fitted?.peak.map(|peak| peak.connections.value),
        Figure::UslPeakRate => fitted?.peak.map(|peak| peak.throughput_per_sec),
        Figure::UslR2 => fitted.map(|fit| fit.r_squared),
        Figure::HoldoutError => analysis.holdout.as_ref()?.mean_absolute_error_percent,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_parse_with_their_units_and_refuse_what_the_sweep_cannot_have() {
        let parsed = parse_all(
            &["knee_rate>50000/s".into(), "usl_peak >= 1e3".into()],
            Varied::Connections,
            true,
            false,
        )
        .unwrap();
        assert_eq!(
            (parsed[0].figure, parsed[0].comparison, parsed[0].bound),
            (Figure::KneeRate, Comparison::Greater, 50_000.0)
        );
        assert_eq!((parsed[1].figure, parsed[1].bound), (Figure::UslPeak, 1_000.0));
        let error = |text: &str, varied, holdout| {
            parse_all(&[text.to_owned()], varied, true, holdout).unwrap_err().to_string()
        };
        assert!(
            error("usl_peak>10", Varied::Rate, false)
                .contains("`usl_peak` needs the USL fit, which only a closed-loop connections sweep has")
        );
        assert!(
            error("holdout_error<10%", Varied::Connections, false)
                .contains("`holdout_error` needs --holdout K")
        );
        assert!(
            error("knee>5", Varied::Connections, false).starts_with(
                "--threshold: `knee>5`: unknown figure `knee`; a sweep's figures are knee_rate,"
            )
        );
        assert!(error("knee_rate>fast", Varied::Connections, false).contains("`fast` is not a number"));
        assert!(parse_all(&["holdout_error<10%".into()], Varied::Connections, true, true).is_ok());
    }
}
