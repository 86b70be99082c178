//! Parsing the units users type: durations (`300s`, `1ms`, `2m`), byte sizes (`16MiB`,
//! `104857600`) and rates (`75/s`). Errors name the input and the accepted forms.

use std::time::Duration;

/// A value the user typed could not be understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{input}` is not a valid {what}: expected {expected}")]
pub struct UnitError {
    pub input: String,
    pub what: &'static str,
    pub expected: &'static str,
}

fn split_number(input: &str) -> Option<(f64, &str)> {
    let input = input.trim();
    let end = input.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(input.len());
    let number: f64 = input[..end].parse().ok()?;
    (number.is_finite() && number >= 0.0).then_some((number, input[end..].trim()))
}

/// `1.5s`, `250ms`, `100us`, `2m`, `1h`; a bare number means seconds.
pub fn parse_duration(input: &str) -> Result<Duration, UnitError> {
    let error = || UnitError {
        input: input.to_owned(),
        what: "duration",
        expected: "a number with a unit such as 500ms, 10s, 5m",
    };
    let (number, unit) = split_number(input).ok_or_else(error)?;
    let seconds = match unit {
        "" | "s" | "sec" => number,
        "ms" => number / 1e3,
        "us" | "µs" => number / 1e6,
        "ns" => number / 1e9,
        "m" | "min" => number * 60.0,
        "h" => number * 3600.0,
        _ => return Err(error()),
    };
    Duration::try_from_secs_f64(seconds).map_err(|_| error())
}

/// `20`, `64KiB`, `16MiB`, `1GiB`, `100MB` (decimal) into bytes.
pub fn parse_bytes(input: &str) -> Result<u64, UnitError> {
    let error = || UnitError {
        input: input.to_owned(),
        what: "size",
        expected: "bytes, or a number with B, KiB, MiB, GiB, KB, MB, GB",
    };
    let (number, unit) = split_number(input).ok_or_else(error)?;
    let factor: f64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "kib" | "k" => 1024.0,
        "mib" | "m" => 1024.0 * 1024.0,
        "gib" | "g" => 1024.0 * 1024.0 * 1024.0,
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        _ => return Err(error()),
    };
    let bytes = number * factor;
    if bytes.fract() != 0.0 || bytes > u64::MAX as f64 {
        return Err(error());
    }
    Ok(bytes as u64)
}

/// `75/s`, `1000/s`, `10/ms`, or a bare number per second, into events per second.
pub fn parse_rate(input: &str) -> Result<f64, UnitError> {
    let error = || UnitError {
        input: input.to_owned(),
        what: "rate",
        expected: "a number per second such as 75/s or 10/ms",
    };
    let (number, per) = input.split_once('/').unwrap_or((input, "s"));
    let (number, rest) = split_number(number).ok_or_else(error)?;
    if !rest.is_empty() || number <= 0.0 {
        return Err(error());
    }
    let per = if per.chars().next().is_some_and(|c| c.is_ascii_digit()) {
        per.to_owned()
    } else {
        format!("1{per}")
    };
    let window = parse_duration(&per).map_err(|_| error())?;
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
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("5 parsecs").is_err());
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
        assert!(parse_rate("0/s").is_err());
        assert!(parse_rate("fast").is_err());
    }

    #[test]
    fn format_round_trips() {
        for d in [Duration::from_millis(250), Duration::from_secs(10), Duration::from_millis(1500)] {
            assert_eq!(parse_duration(&format_duration(d)), Ok(d));
        }
    }
}
