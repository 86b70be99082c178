//! Numbers in units for people, in one place so every renderer writes a latency, a count or a
//! size the same way: durations in µs/ms/s, counts with thousands separators, bytes in binary
//! units, rates, percentages, and the short labels of chart axes. Parsing what users type
//! is [`super::parse`]; this module only formats.

/// Three significant digits: `1.23`, `12.3`, `123`, `1234`.
pub fn sig3(x: f64) -> String {
    if x < 9.995 {
        format!("{x:.2}")
    } else if x < 99.95 {
        format!("{x:.1}")
    } else {
        format!("{x:.0}")
    }
}

/// Microseconds in the unit that reads best: `850 µs`, `19.4 ms`, `1.60 s`.
pub fn micros(us: f64) -> String {
    if us < 999.5 {
        format!("{us:.0} µs")
    } else if us < 999_500.0 {
        format!("{} ms", sig3(us / 1e3))
    } else {
        format!("{} s", sig3(us / 1e6))
    }
}

/// Microseconds with one decimal, as google-benchmark prints them: `21.3 us`.
pub fn micros_fixed(us: f64) -> String {
    format!("{us:.1} us")
}

/// Microseconds as milliseconds with two decimals: `1.23 ms`.
pub fn millis_fixed(us: f64) -> String {
    format!("{:.2} ms", us / 1e3)
}

/// Microseconds as milliseconds with two decimals, unspaced for narrow columns: `1.23ms`.
pub fn millis_tight(us: f64) -> String {
    format!("{:.2}ms", us / 1e3)
}

/// Bytes in mebibytes with one decimal, unspaced for narrow columns: `12.0MiB`.
pub fn mib_tight(bytes: u64) -> String {
    format!("{:.1}MiB", bytes as f64 / 1_048_576.0)
}

/// Bytes (possibly a fraction, e.g. per connection) in kibibytes with one decimal,
/// unspaced for narrow columns: `2.5KiB`.
pub fn kib_tight(bytes: f64) -> String {
    format!("{:.1}KiB", bytes / 1024.0)
}

/// A share of one core (or of anything), as a whole percentage capped at 100: `97%`.
/// Tick rounding can push a saturated thread a little past 100%; that reads as 100%.
pub fn percent(share: f64) -> String {
    format!("{:.0}%", (share * 100.0).min(100.0))
}

/// Wall-clock seconds: `35.0 s`, `0.30 s`.
pub fn seconds(s: f64) -> String {
    if s < 10.0 { format!("{s:.2} s") } else { format!("{s:.1} s") }
}

/// Bytes in binary units: `12.0 MiB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64;
    let mut unit = "B";
    for next in UNITS {
        if value < 1023.5 {
            break;
        }
        value /= 1024.0;
        unit = next;
    }
    format!("{} {unit}", sig3(value))
}

/// Mebibytes with three significant digits: `12.0 MiB`.
pub fn mib(mib: f64) -> String {
    format!("{} MiB", sig3(mib))
}

/// An event rate, rounded, with thousands separators: `52,314`.
pub fn rate(per_sec: f64) -> String {
    group(per_sec.round().max(0.0) as u64)
}

/// A count and its noun, singular or plural as English wants: `1 connection`,
/// `2 connections`, `1,000 connections`. Every "N things" a report prints goes through here.
pub fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", group(n), if n == 1 { one } else { many })
}

/// A transfer rate in binary units per second: `1.98 MiB/s`, `512 B/s`.
pub fn bytes_per_sec(per_sec: f64) -> String {
    format!("{}/s", bytes(per_sec.round().max(0.0) as u64))
}

/// `wsbench` and `args` as a shell would take them back: arguments with spaces or shell
/// characters single-quoted. `wsbench compare --servers 'a b'`.
pub fn command_line(args: impl Iterator<Item = String>) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./:=,@%+".contains(c);
    let mut line = "wsbench".to_owned();
    for arg in args {
        line.push(' ');
        if !arg.is_empty() && arg.chars().all(safe) {
            line.push_str(&arg);
        } else {
            line.push_str(&format!("'{}'", arg.replace('\'', "'\\''")));
        }
    }
    line
}

/// Thousands separators: `1,569,000`.
pub fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A tick number with at most two decimals, trailing zeros dropped: `5`, `2.5`, `0.25`.
pub fn tick_number(value: f64) -> String {
    let text = format!("{value:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// An axis tick in seconds: `0.25 s`. Every tick formatter takes the tick and the axis's
/// reference tick (its top on a linear axis, the tick itself on a logarithmic one) and
/// writes the tick in the reference's unit, so one axis reads in one unit.
pub fn tick_seconds(s: f64, _reference: f64) -> String {
    format!("{} s", tick_number(s))
}

/// An axis tick for a rate, scaled as the reference is: `50k`, `1.5M`, `0`.
pub fn tick_rate(value: f64, reference: f64) -> String {
    if value == 0.0 {
        "0".to_owned()
    } else if reference >= 1e6 {
        format!("{}M", tick_number(value / 1e6))
    } else if reference >= 1e3 {
        format!("{}k", tick_number(value / 1e3))
    } else {
        tick_number(value)
    }
}

/// An axis tick for a latency given in µs, in the reference's unit: `100 µs`, `2.5 ms`,
/// `0 ms` (on an axis whose top is in ms), `1 s`.
pub fn tick_micros(us: f64, reference: f64) -> String {
    if reference >= 1e6 {
        format!("{} s", tick_number(us / 1e6))
    } else if reference >= 1e3 {
        format!("{} ms", tick_number(us / 1e3))
    } else {
        format!("{} µs", tick_number(us))
    }
}

/// An axis tick in MiB: `64 MiB`.
pub fn tick_mib(mib: f64, _reference: f64) -> String {
    format!("{} MiB", tick_number(mib))
}

/// An axis tick in percent: `100%`.
pub fn tick_percent(percent: f64, _reference: f64) -> String {
    format!("{}%", tick_number(percent))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micros_picks_the_readable_unit() {
        assert_eq!(micros(45.0), "45 µs");
        assert_eq!(micros(999.4), "999 µs");
        assert_eq!(micros(999.6), "1.00 ms");
        assert_eq!(micros(19_412.0), "19.4 ms");
        assert_eq!(micros(150_000.0), "150 ms");
        assert_eq!(micros(1_600_000.0), "1.60 s");
        assert_eq!(micros_fixed(21.34), "21.3 us");
        assert_eq!(millis_fixed(1_234.0), "1.23 ms");
        assert_eq!(millis_tight(1_234.0), "1.23ms");
    }

    #[test]
    fn numbers_get_thousands_separators() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1_000), "1,000");
        assert_eq!(group(1_569_000), "1,569,000");
        assert_eq!(rate(52_313.6), "52,314");
    }

    #[test]
    fn counts_take_the_singular_only_for_one() {
        assert_eq!(plural(0, "connection", "connections"), "0 connections");
        assert_eq!(plural(1, "connection", "connections"), "1 connection");
        assert_eq!(plural(2, "connection", "connections"), "2 connections");
        assert_eq!(plural(1_000, "process", "processes"), "1,000 processes");
        assert_eq!(bytes_per_sec(2_076_180.4), "1.98 MiB/s");
        assert_eq!(bytes_per_sec(512.0), "512 B/s");
    }

    #[test]
    fn command_lines_quote_what_the_shell_would_split() {
        let args = ["compare", "--servers", "a b", "--duration", "3s", "it's"].map(String::from);
        assert_eq!(
            command_line(args.into_iter()),
            "wsbench compare --servers 'a b' --duration 3s 'it'\\''s'"
        );
    }

    #[test]
    fn bytes_use_binary_units() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(12 * 1024 * 1024), "12.0 MiB");
        assert_eq!(bytes(1536), "1.50 KiB");
        assert_eq!(mib(12.0), "12.0 MiB");
        assert_eq!(mib_tight(12 * 1024 * 1024), "12.0MiB");
        assert_eq!(kib_tight(2560.0), "2.5KiB");
    }

    #[test]
    fn tick_labels_are_short() {
        assert_eq!(tick_rate(50_000.0, 50_000.0), "50k");
        assert_eq!(tick_rate(1_500_000.0, 1_500_000.0), "1.5M");
        assert_eq!(tick_rate(500_000.0, 1_500_000.0), "0.5M");
        assert_eq!(tick_rate(0.0, 1_500_000.0), "0");
        assert_eq!(tick_micros(2_500.0, 2_500.0), "2.5 ms");
        assert_eq!(tick_micros(100.0, 100.0), "100 µs");
        assert_eq!(tick_seconds(0.25, 1.0), "0.25 s");
        assert_eq!(tick_percent(100.0, 100.0), "100%");
    }

    #[test]
    fn ticks_of_one_axis_share_its_unit() {
        // No "0 µs" or "500 µs" on an axis that ends at 2 ms.
        let ticks: Vec<String> = [0.0, 500.0, 2_000.0].iter().map(|us| tick_micros(*us, 2_000.0)).collect();
        assert_eq!(ticks, ["0 ms", "0.5 ms", "2 ms"]);
    }
}
