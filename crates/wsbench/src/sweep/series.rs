//! The loads of a sweep as the user writes them: one value (held at every step), an
//! explicit list from lowest to highest (`--connections 1,2,4,8`, `--rate
//! 1000/s,5000/s,20000/s`) or a range spread geometrically over `--steps` steps
//! (`--connections 1..10000`, `--rate 1000/s..200000/s`). Everything is checked here,
//! before any load: a list that does not rise, a range that falls, duplicates after
//! rounding, one step, more than [`MAX_STEPS`].

use crate::config::{ConfigError, invalid_setting};
use crate::units::parse_rate;

/// The most steps a sweep may have (as `--stages` may have stages).
pub const MAX_STEPS: usize = 100;
/// Steps of a range given without `--steps`.
pub const DEFAULT_STEPS: usize = 10;

/// What a flag's value is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Whole connections (`--connections`).
    Connections,
    /// Messages per second (`--rate`), with their unit (`/s`).
    Rate,
}

/// One flag's value: held, or swept.
#[derive(Debug, Clone, PartialEq)]
pub enum Given {
    One(f64),
    Series(Vec<f64>),
}

/// Reads `text`, the value of `--connections` or `--rate` (`unit` says which); `steps` is
/// `--steps`, for a range.
pub fn parse(unit: Unit, text: &str, steps: Option<usize>) -> Result<Given, ConfigError> {
    let setting = match unit {
        Unit::Connections => "connections",
        Unit::Rate => "rate",
    };
    let bad = |problem: String| invalid_setting(setting, problem);
    let value = |part: &str| one(unit, part.trim()).map_err(|why| bad(format!("`{}`: {why}", part.trim())));
    if let Some((low, high)) = text.split_once("..") {
        let (low, high) = (value(low)?, value(high)?);
        if low >= high {
            return Err(bad(format!(
                "`{text}`: a range rises from its lowest load to its highest (e.g. {})",
                example(unit)
            )));
        }
        let steps = steps.unwrap_or(DEFAULT_STEPS);
        return geometric(unit, low, high, steps)
            .map(Given::Series)
            .map_err(|why| bad(format!("`{text}`: {why}")));
    }
    let values = text.split(',').map(value).collect::<Result<Vec<f64>, ConfigError>>()?;
    if values.len() == 1 {
        return Ok(Given::One(values[0]));
    }
    if steps.is_some() {
        return Err(invalid_setting(
            "steps",
            format!(
                "the list --{setting} {text} gives the steps: --steps is for a range such as {}",
                example(unit)
            ),
        ));
    }
    if let Some(pair) = values.windows(2).find(|pair| pair[1] <= pair[0]) {
        return Err(bad(format!(
            "`{text}` does not rise: {} comes after {}; list the loads from lowest to highest",
            shown(unit, pair[1]),
            shown(unit, pair[0])
        )));
    }
    check_count(values.len()).map_err(|why| bad(format!("`{text}`: {why}")))?;
    Ok(Given::Series(values))
}

/// One load: a whole number of connections, or a rate with its unit.
fn one(unit: Unit, text: &str) -> Result<f64, String> {
    match unit {
        Unit::Connections => match text.parse::<u64>() {
            Ok(0) => Err("a step needs at least 1 connection".to_owned()),
            Ok(n) => Ok(n as f64),
            Err(_) => Err("not a whole number of connections".to_owned()),
        },
        Unit::Rate if text.parse::<f64>().is_ok() => Err(format!("a rate has a unit: write {text}/s")),
        Unit::Rate => parse_rate(text).map_err(|e| e.problem),
    }
}

/// `steps` loads from `low` to `high`, each the previous times the same factor: whole
/// connections, or rates to three significant figures (the ends exact).
fn geometric(unit: Unit, low: f64, high: f64, steps: usize) -> Result<Vec<f64>, String> {
    check_count(steps)?;
    let ratio = (high / low).powf(1.0 / (steps - 1) as f64);
    let mut values: Vec<f64> = Vec::with_capacity(steps);
    for i in 0..steps {
        let value = match i {
            0 => low,
            i if i == steps - 1 => high,
            i => round(unit, low * ratio.powi(i as i32)),
        };
        // Whole connections crowd at the low end (1, 1.4, 2…): each step is at least one more.
        let least = values.last().map_or(value, |last| match unit {
            Unit::Connections => last + 1.0,
            Unit::Rate => *last,
        });
        values.push(value.max(least));
    }
    values.dedup();
    if values.len() < steps || values.windows(2).any(|pair| pair[1] <= pair[0]) || values[steps - 1] > high {
        let fit = match unit {
            Unit::Connections => (high - low + 1.0) as usize,
            Unit::Rate => values.len(),
        }
        .min(steps - 1);
        return Err(format!(
            "{steps} steps do not fit: only {fit} different loads lie between its ends; give --steps {fit} or fewer"
        ));
    }
    Ok(values)
}

fn round(unit: Unit, value: f64) -> f64 {
    match unit {
        Unit::Connections => value.round(),
        Unit::Rate => {
            let scale = 10f64.powi(value.log10().floor() as i32 - 2);
            (value / scale).round() * scale
        }
    }
}

fn check_count(steps: usize) -> Result<(), String> {
    match steps {
        0 | 1 => Err("a sweep has at least 2 steps (for one load, use `wsbench run`)".to_owned()),
        n if n > MAX_STEPS => Err(format!("{n} steps are more than the {MAX_STEPS} a sweep may have")),
        _ => Ok(()),
    }
}

fn example(unit: Unit) -> &'static str {
    match unit {
        Unit::Connections => "1..10000",
        Unit::Rate => "1000/s..200000/s",
    }
}

/// A load as the user would write it.
pub fn shown(unit: Unit, value: f64) -> String {
    match unit {
        Unit::Connections => format!("{value}"),
        Unit::Rate => format!("{value}/s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(unit: Unit, text: &str, steps: Option<usize>) -> Vec<f64> {
        match parse(unit, text, steps) {
            Ok(Given::Series(values)) => values,
            other => panic!("{text}: {other:?}"),
        }
    }

    fn error(unit: Unit, text: &str, steps: Option<usize>) -> String {
        parse(unit, text, steps).unwrap_err().to_string()
    }

    #[test]
    fn ranges_are_geometric_lists_are_kept_and_one_value_is_held() {
        assert_eq!(series(Unit::Connections, "1..10000", Some(5)), [1.0, 10.0, 100.0, 1_000.0, 10_000.0]);
        assert_eq!(
            series(Unit::Connections, "1..1024", Some(11)),
            [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0]
        );
        assert_eq!(series(Unit::Connections, "1..10000", None).len(), DEFAULT_STEPS);
        // Whole connections at the crowded low end are each one more than the last.
        assert_eq!(
            series(Unit::Connections, "1..100", Some(8)),
            [1.0, 2.0, 4.0, 7.0, 14.0, 27.0, 52.0, 100.0]
        );
        assert_eq!(series(Unit::Connections, "1..5", Some(5)), [1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_eq!(series(Unit::Rate, "1000/s..200000/s", Some(4)), [1_000.0, 5_850.0, 34_200.0, 200_000.0]);
        assert_eq!(series(Unit::Connections, "1, 2,4,8", None), [1.0, 2.0, 4.0, 8.0]);
        assert_eq!(series(Unit::Rate, "500/s,2/ms", None), [500.0, 2_000.0]);
        assert_eq!(parse(Unit::Connections, "100", None).unwrap(), Given::One(100.0));
        assert_eq!(parse(Unit::Rate, "20000/s", None).unwrap(), Given::One(20_000.0));
    }

    #[test]
    fn bad_series_are_one_line_naming_the_flag_and_what_to_write() {
        let cases = [
            (
                Unit::Connections,
                "1,8,4",
                None,
                "--connections: `1,8,4` does not rise: 4 comes after 8; list the loads from lowest to highest",
            ),
            (
                Unit::Connections,
                "100..10",
                None,
                "--connections: `100..10`: a range rises from its lowest load to its highest (e.g. 1..10000)",
            ),
            (Unit::Rate, "5000/s..5000/s", None, "--rate: `5000/s..5000/s`: a range rises"),
            (
                Unit::Connections,
                "1..4",
                Some(12),
                "--connections: `1..4`: 12 steps do not fit: only 4 different loads lie between its ends; give --steps 4 or fewer",
            ),
            (Unit::Connections, "1..100", Some(1), "--connections: `1..100`: a sweep has at least 2 steps"),
            (Unit::Connections, "1..100000", Some(101), "101 steps are more than the 100 a sweep may have"),
            (Unit::Connections, "0,5", None, "--connections: `0`: a step needs at least 1 connection"),
            (Unit::Connections, "1,many", None, "--connections: `many`: not a whole number of connections"),
            (Unit::Rate, "1000..2000/s", None, "--rate: `1000`: a rate has a unit: write 1000/s"),
            (Unit::Connections, "1,2,4", Some(3), "--steps: the list --connections 1,2,4 gives the steps"),
        ];
        for (unit, text, steps, expected) in cases {
            let message = error(unit, text, steps);
            assert!(message.starts_with(expected) || message.contains(expected), "{text}: {message}");
            assert!(!message.contains('\n'), "{message}");
        }
    }
}
