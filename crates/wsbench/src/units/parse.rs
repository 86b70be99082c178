//! Parsing the units users type: durations (`300s`, `1ms`, `2m`), byte sizes (`16MiB`,
//! `104857600`) and rates (`75/s`). Errors name the input and the accepted forms.

use std::time::Duration;

/// A value the user typed could not be understood: what is wrong with it, in words that
/// follow the flag's name (`--duration: `8d`: …`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{problem}")]
pub struct UnitError {
    pub input: String,
    pub problem: String,
}

impl UnitError {
    fn new(input: &str, problem: String) -> UnitError {
        UnitError { input: input.to_owned(), problem }
    }
}

/// A number (digits and one `.`) at the start of `input`, and what follows it.
fn split_number(input: &str) -> Option<(f64, &str)> {
    let input = input.trim();
    let end = input.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(input.len());
    let number: f64 = input[..end].parse().ok()?;
    number.is_finite().then_some((number, input[end..].trim()))
}

/// `1.5s`, `250ms`, `100us`, `2m`, `1h`; `0` needs no unit, other numbers do.
pub fn parse_duration(input: &str) -> Result<Duration, UnitError> {
    let example = "write a number and a unit, e.g. 500ms, 10s, 5m, 2h";
    if input.trim().starts_with('-') {
        return Err(UnitError::new(input, format!("`{input}` is negative: {example}")));
    }
    let Some((number, unit)) = split_number(input) else {
        return Err(UnitError::new(input, format!("`{input}` is not a duration: {example}")));
    };
    let seconds = match unit {
        "" if number == 0.0 => 0.0,
        "" => {
            return Err(UnitError::new(
                input,
                format!("`{input}` has no unit: write {input}s (or {input}ms, {input}m, {input}h)"),
            ));
        }
        "s" | "sec" => number,
        "ms" => number / 1e3,
        "us" | "µs" => number / 1e6,
        "ns" => number / 1e9,
        "m" | "min" => number * 60.0,
        "h" => number * 3600.0,
        _ => {
            return Err(UnitError::new(
                input,
                format!(
                    "`{input}`: `{unit}` is not a unit of time: use ns, us, ms, s, m or h (7 days is 168h)"
                ),
            ));
        }
    };
    Duration::try_from_secs_f64(seconds)
        .map_err(|_| UnitError::new(input, format!("`{input}` is too long: at most 168h")))
}

/// `20`, `64KiB`, `16MiB`, `1GiB`, `100MB` (decimal) into bytes.
pub fn parse_bytes(input: &str) -> Result<u64, UnitError> {
    let example = "give bytes, or a number with B, KiB, MiB, GiB, KB, MB or GB, e.g. 20 or 16KiB";
    if input.trim().starts_with('-') {
        return Err(UnitError::new(input, format!("`{input}` is negative: {example}")));
    }
    let bad = || UnitError::new(input, format!("`{input}` is not a size: {example}"));
    let (number, unit) = split_number(input).ok_or_else(bad)?;
    let factor: f64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "kib" | "k" => 1024.0,
        "mib" | "m" => 1024.0 * 1024.0,
        "gib" | "g" => 1024.0 * 1024.0 * 1024.0,
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        _ => return Err(bad()),
    };
    let bytes = number * factor;
    if bytes.fract() != 0.0 {
        return Err(UnitError::new(input, format!("`{input}` is not a whole number of bytes")));
    }
    if bytes > u64::MAX as f64 {
        return Err(UnitError::new(input, format!("`{input}` is too large")));
    }
    Ok(bytes as u64)
}

/// `75/s`, `1000/s`, `10/ms`, or a bare number per second, into events per second (above
/// zero).
pub fn parse_rate(input: &str) -> Result<f64, UnitError> {
    let example = "give a number per second, e.g. 75/s or 10/ms";
    if input.trim().starts_with('-') {
        return Err(UnitError::new(input, format!("`{input}` is negative: {example}")));
    }
    let bad = || UnitError::new(input, format!("`{input}` is not a rate: {example}"));
    let (number, per) = input.split_once('/').unwrap_or((input, "s"));
    let (number, rest) = split_number(number).ok_or_else(bad)?;
    if !rest.is_empty() {
        return Err(bad());
    }
    let per = if per.chars().next().is_some_and(|c| c.is_ascii_digit()) {
        per.to_owned()
    } else {
        format!("1{per}")
    };
    let window = parse_duration(&per).map_err(|_| bad())?;
    if number == 0.0 {
        return Err(UnitError::new(input, format!("`{input}` is zero: {example}, above zero")));
    }
    if window.is_zero() {
        return Err(bad());
    }
    Ok(number / window.as_secs_f64())
}

/// Formats a duration the way the CLI accepts it (`1.5s`, `250ms`).
pub fn format_duration(duration: Duration) -> String {
    if duration.as_secs_f64() >= 1.0 {
        format!("{}s", duration.as_secs_f64())
    } else {
        format!("{}ms", duration.as_secs_f64() * 1e3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("300s"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("1ms"), Ok(Duration::from_millis(1)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO), "zero needs no unit");
        let problem = |text: &str| parse_duration(text).unwrap_err().problem;
        assert_eq!(problem("10"), "`10` has no unit: write 10s (or 10ms, 10m, 10h)");
        assert!(problem("soon").starts_with("`soon` is not a duration: "));
        assert!(problem("-1s").starts_with("`-1s` is negative: "));
        assert!(problem("8d").starts_with("`8d`: `d` is not a unit of time: "), "{}", problem("8d"));
        assert!(problem("5 parsecs").contains("is not a unit of time"));
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_bytes("20"), Ok(20));
        assert_eq!(parse_bytes("16MiB"), Ok(16 << 20));
        assert_eq!(parse_bytes("100MB"), Ok(100_000_000));
        assert!(parse_bytes("1.5B").is_err());
        assert!(parse_bytes("lots").is_err());
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("75/s"), Ok(75.0));
        assert_eq!(parse_rate("10/ms"), Ok(10_000.0));
        assert_eq!(parse_rate("100"), Ok(100.0));
        assert!(parse_rate("0/s").unwrap_err().problem.starts_with("`0/s` is zero: "));
        assert!(parse_rate("-5/s").unwrap_err().problem.starts_with("`-5/s` is negative: "));
        assert!(parse_rate("fast").unwrap_err().problem.starts_with("`fast` is not a rate: "));
    }

    #[test]
    fn format_round_trips() {
        for d in [Duration::from_millis(250), Duration::from_secs(10), Duration::from_millis(1500)] {
            assert_eq!(parse_duration(&format_duration(d)), Ok(d));
        }
    }
}
