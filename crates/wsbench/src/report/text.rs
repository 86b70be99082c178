//! The terminal report: what a person reads after `wsbench run`, compact like wrk's or
//! oha's. Numbers in human units (µs/ms/s, MiB, thousands separators), problems (errors,
//! interruption, a client-bound run) impossible to miss. Plain text unless colour is asked
//! for; the golden files in `tests/golden/` pin the layout.

use std::fmt::Write as _;

use crate::result::{LatencyStats, RunResult};

const LABEL: usize = 14;
const COLUMN: usize = 10;
const WIDTH: usize = 100;

const BOLD: &str = "1";
const RED: &str = "1;31";
const YELLOW: &str = "1;33";

/// The report, without colours.
pub fn render_text(result: &RunResult) -> String {
    render_text_with(result, false)
}

/// The report; `color` adds ANSI colours (for a terminal).
pub fn render_text_with(result: &RunResult, color: bool) -> String {
    let paint = |style: &str, text: &str| -> String {
        if color { format!("\x1b[{style}m{text}\x1b[0m") } else { text.to_owned() }
    };
    let summary = &result.summary;
    let mut out = String::new();

    // Header.
    let kind = if result.target.builtin { " (built-in server)" } else { "" };
    let _ =
        write!(out, "{}", paint(BOLD, &format!("wsbench {} → {}{kind}", result.scenario, result.target.url)));
    if result.interrupted {
        let _ = write!(out, "  {}", paint(RED, "[INTERRUPTED: partial results]"));
    }
    out.push('\n');
    let _ = writeln!(
        out,
        "{} elapsed, {} measured after warm-up; {} connections × {} in flight",
        seconds(result.elapsed_s),
        seconds(result.measured_s),
        group(summary.littles_law.connections),
        if summary.littles_law.in_flight == u64::MAX {
            "uncapped".to_owned()
        } else {
            group(summary.littles_law.in_flight)
        },
    );
    out.push('\n');

    // Headline and the warning that qualifies it.
    let _ = writeln!(
        out,
        "{}",
        paint(BOLD, &format!("Round trips/s (after warm-up): {}", rate(summary.echoes_per_sec)))
    );
    if let (true, Some(reason)) = (result.client.bound, &result.client.bound_reason) {
        for line in wrap(&format!("WARNING: {reason}"), WIDTH, "         ") {
            let _ = writeln!(out, "{}", paint(YELLOW, &line));
        }
    }
    out.push('\n');

    // Latency table.
    if summary.latency_us.count == 0 {
        line(&mut out, "latency:", "no round trips measured");
    } else {
        let headings = ["min", "mean", "p50", "p90", "p99", "p99.9", "max"];
        let header: String = headings.iter().map(|h| format!("{h:<COLUMN$}")).collect();
        line(&mut out, "", &header);
        line(&mut out, "latency", &latency_row(&summary.latency_us));
        if summary.latency_uncorrected_us != summary.latency_us {
            line(&mut out, "uncorrected", &latency_row(&summary.latency_uncorrected_us));
        }
        if summary.send_lag_us.count > 0 {
            line(&mut out, "send lag", &latency_row(&summary.send_lag_us));
        }
    }

    // Connections, errors, messages.
    let connect = &summary.connect_us;
    if connect.count == 0 {
        line(&mut out, "connect:", "no connection established");
    } else {
        line(
            &mut out,
            "connect:",
            &format!(
                "p50 {}, p99 {}, max {}",
                micros(connect.p50 as f64),
                micros(connect.p99 as f64),
                micros(connect.max as f64)
            ),
        );
    }
    let connections = &summary.connections;
    line(
        &mut out,
        "connections:",
        &format!(
            "{} attempted, {} established, {} failed{}",
            group(connections.attempted),
            group(connections.established),
            group(connections.failed),
            match result.counters.reconnections {
                0 => String::new(),
                n => format!(" ({} reconnections)", group(n)),
            }
        ),
    );
    if summary.errors.is_empty() {
        line(&mut out, "errors:", "none");
    } else {
        let errors: Vec<String> =
            summary.errors.iter().map(|(kind, n)| format!("{kind} {}", group(*n))).collect();
        line(&mut out, "errors:", &paint(RED, &errors.join(", ")));
    }
    let messages = &summary.messages;
    line(
        &mut out,
        "messages:",
        &format!(
            "{} sent, {} received, {} unanswered",
            group(messages.sent),
            group(messages.received),
            group(messages.unanswered)
        ),
    );

    // Server.
    let server = &result.server;
    match (server.probed, server.rss_baseline_bytes, server.rss_peak_bytes, server.cpu_seconds) {
        (true, Some(baseline), Some(peak), Some(cpu)) => {
            let pids: Vec<String> = server.pids.iter().map(u32::to_string).collect();
            let mut first = format!("RSS {} → {}", bytes(baseline), bytes(peak));
            let _ = write!(first, " (pid {}", pids.join(", "));
            if let Some(found_by) = &server.found_by {
                let _ = write!(first, ", {found_by}");
            }
            first.push(')');
            if let (Some(threads), Some(fds)) = (server.threads_peak, server.fds_peak) {
                let _ = write!(first, ", peak {} threads, {} fds", group(threads), group(fds));
            }
            line(&mut out, "server:", &first);
            let per_mb = match server.connections_per_mb {
                Some(per_mb) => format!("{} connections/MB", sig3(per_mb)),
                None => "connections/MB n/a (RSS did not grow)".to_owned(),
            };
            let per_cpu = match server.echoes_per_cpu_second {
                Some(per_cpu) => format!("{} echoes/CPU-second", rate(per_cpu)),
                None => "echoes/CPU-second n/a (no CPU used)".to_owned(),
            };
            line(&mut out, "", &format!("CPU {}, {per_mb}, {per_cpu}", seconds(cpu)));
        }
        _ => {
            let reason = server.unprobed_reason.as_deref().unwrap_or("no samples were taken");
            let _ = writeln!(out, "server: not probed ({reason})");
        }
    }

    // A merged result: which shards it is made of, and which of them died.
    if !result.shards.is_empty() {
        let mut hosts: Vec<&str> = result.shards.iter().map(|s| s.host.as_str()).collect();
        hosts.sort_unstable();
        hosts.dedup();
        let rates: Vec<String> = result.shards.iter().map(|s| rate(s.echoes_per_sec)).collect();
        line(
            &mut out,
            "shards:",
            &format!(
                "{} merged (on {}), round trips/s {}",
                result.shards.len(),
                hosts.join(", "),
                rates.join(" + ")
            ),
        );
        for shard in &result.shards {
            if let Some(died) = &shard.died {
                let name = shard.shard.as_deref().unwrap_or(&shard.file);
                line(&mut out, "", &paint(RED, &format!("shard {name} died ({died}): partial result")));
            }
        }
    }

    // Little's law holds for a closed loop; an open loop's concurrency is not fixed.
    let law = &summary.littles_law;
    let open_loop = result.config.get("message_interval").is_some_and(|v| !v.is_null());
    match law.predicted_mean_latency_us {
        _ if open_loop => {}
        Some(predicted) => {
            let _ = writeln!(
                out,
                "Little's law: {} connections × {} in flight ÷ {}/s = {} predicted mean, {} measured",
                law.connections,
                law.in_flight,
                rate(law.throughput_per_sec),
                micros(predicted),
                micros(law.measured_mean_latency_us)
            );
        }
        None => {
            let _ = writeln!(out, "Little's law: no prediction (no round trips were measured)");
        }
    }
    if result.scenario == "scalability" {
        let _ = writeln!(
            out,
            "connect phase: {} connections in {} ({:.1} connections/ms)",
            group(summary.connections.established),
            seconds(summary.connect_phase_s),
            summary.connections_per_ms
        );
    }
    if result.scenario == "c10k" {
        render_c10k_block(&mut out, result);
    }
    out
}

/// The C10K seed's statistics block (µs), connection time and latency, then its counters.
fn render_c10k_block(out: &mut String, result: &RunResult) {
    let summary = &result.summary;
    let _ = writeln!(out, "\nstatistics (µs, as the C10K seed reports them):");
    for (name, d) in
        [("connection_time", &summary.connect_distribution), ("latency", &summary.latency_distribution)]
    {
        let _ = writeln!(
            out,
            "  {name}: min {} max {} arithmetic_mean {:.1} geometric_mean {:.1} harmonic_mean {:.1} median {}",
            d.min, d.max, d.arithmetic_mean, d.geometric_mean, d.harmonic_mean, d.median
        );
        let _ = writeln!(
            out,
            "    variance {:.1} standard_deviation {:.1} skewness {:.3} kurtosis {:.3}",
            d.variance, d.standard_deviation, d.skewness, d.kurtosis
        );
        let _ = writeln!(out, "    percentile 75 {}, 95 {}, 99 {}, 99.9 {}", d.p75, d.p95, d.p99, d.p999);
        let bins: Vec<String> =
            d.histogram.iter().map(|(upper, count)| format!("≤{upper}: {count}")).collect();
        let _ = writeln!(out, "    histogram {}", bins.join(", "));
    }
    let timeouts = summary.errors.get("connect_timeout").copied().unwrap_or(0);
    // The seed counts as crashes the clients that died of anything but a timeout or the server.
    let crashes: Vec<(&String, &u64)> = summary
        .errors
        .iter()
        .filter(|(kind, _)| *kind != "connect_timeout" && !kind.starts_with("closed_") && *kind != "reset")
        .collect();
    let crash_count: u64 = crashes.iter().map(|(_, count)| **count).sum();
    let crashes: Vec<String> = crashes.iter().map(|(kind, count)| format!("{kind} {count}")).collect();
    let _ = writeln!(
        out,
        "  connections {}, disconnections {}, messages {}, connection_timeouts {timeouts}, crashes {crash_count}{}",
        summary.connections.established,
        summary.disconnections,
        summary.messages.received,
        if crashes.is_empty() { String::new() } else { format!(" ({})", crashes.join(", ")) }
    );
}

/// One labelled line; an empty label continues the previous one.
fn line(out: &mut String, label: &str, text: &str) {
    let _ = writeln!(out, "{}", format!("{label:<LABEL$}{text}").trim_end());
}

fn latency_row(stats: &LatencyStats) -> String {
    [stats.min as f64, stats.mean, stats.p50 as f64, stats.p90 as f64, stats.p99 as f64, stats.p999 as f64]
        .iter()
        .chain(std::iter::once(&(stats.max as f64)))
        .map(|us| format!("{:<COLUMN$}", micros(*us)))
        .collect()
}

/// Three significant digits: `1.23`, `12.3`, `123`, `1234`.
pub(super) fn sig3(x: f64) -> String {
    if x < 9.995 {
        format!("{x:.2}")
    } else if x < 99.95 {
        format!("{x:.1}")
    } else {
        format!("{x:.0}")
    }
}

/// Microseconds in the unit that reads best: `850 µs`, `19.4 ms`, `1.60 s`.
pub(super) fn micros(us: f64) -> String {
    if us < 999.5 {
        format!("{us:.0} µs")
    } else if us < 999_500.0 {
        format!("{} ms", sig3(us / 1e3))
    } else {
        format!("{} s", sig3(us / 1e6))
    }
}

/// Wall-clock seconds: `35.0 s`, `0.30 s`.
pub(super) fn seconds(s: f64) -> String {
    if s < 10.0 { format!("{s:.2} s") } else { format!("{s:.1} s") }
}

/// Bytes in binary units: `12.0 MiB`.
pub(super) fn bytes(n: u64) -> String {
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

/// An event rate, rounded, with thousands separators: `52,314`.
pub(super) fn rate(per_sec: f64) -> String {
    group(per_sec.round().max(0.0) as u64)
}

/// Thousands separators: `1,569,000`.
pub(super) fn group(n: u64) -> String {
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

/// Word-wraps `text` to `width` columns, continuing lines after `indent`.
fn wrap(text: &str, width: usize, indent: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut current = String::new();
    for word in text.split_whitespace() {
        let prefix = if lines.is_empty() { "" } else { indent };
        if !current.is_empty() && prefix.len() + current.chars().count() + 1 + word.chars().count() > width {
            lines.push(format!("{prefix}{current}"));
            current.clear();
        }
        if !current.is_empty() {
            current.push(' ');
        }
        current.push_str(word);
    }
    if !current.is_empty() {
        let prefix = if lines.is_empty() { "" } else { indent };
        lines.push(format!("{prefix}{current}"));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::fixture;

    #[test]
    fn micros_picks_the_readable_unit() {
        assert_eq!(micros(45.0), "45 µs");
        assert_eq!(micros(999.4), "999 µs");
        assert_eq!(micros(999.6), "1.00 ms");
        assert_eq!(micros(19_412.0), "19.4 ms");
        assert_eq!(micros(150_000.0), "150 ms");
        assert_eq!(micros(1_600_000.0), "1.60 s");
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
    fn bytes_use_binary_units() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(12 * 1024 * 1024), "12.0 MiB");
        assert_eq!(bytes(1536), "1.50 KiB");
    }

    fn report(outcome: crate::samples::RunOutcome, color: bool) -> String {
        render_text_with(&RunResult::from_outcome(&outcome), color)
    }

    #[test]
    fn plain_report_has_no_escape_codes() {
        for (_, outcome) in fixture::all() {
            assert!(!report(outcome, false).contains('\x1b'));
        }
    }

    #[test]
    fn color_report_highlights_warning_errors_and_interruption() {
        let text = report(fixture::open_loop_troubled(), true);
        assert!(text.contains("\x1b[1;33mWARNING: worker w0 used 97% of a core"), "{text}");
        assert!(text.contains("\x1b[1;31m[INTERRUPTED: partial results]\x1b[0m"), "{text}");
        assert!(text.contains("errors:       \x1b[1;31mclosed_1001 4"), "{text}");
        assert_eq!(
            text.replace("\x1b[1;33m", "")
                .replace("\x1b[1;31m", "")
                .replace("\x1b[1m", "")
                .replace("\x1b[0m", ""),
            { report(fixture::open_loop_troubled(), false) }
        );
    }

    #[test]
    fn uncorrected_latency_shown_only_when_it_differs() {
        assert!(!report(fixture::closed_loop(), false).contains("uncorrected"));
        assert!(report(fixture::open_loop_troubled(), false).contains("\nuncorrected   "));
    }

    #[test]
    fn client_bound_warning_only_when_bound() {
        assert!(!report(fixture::closed_loop(), false).contains("WARNING"));
        let text = report(fixture::open_loop_troubled(), false);
        assert!(text.contains("\nWARNING: worker w0 used 97% of a core"), "{text}");
    }

    #[test]
    fn long_warnings_wrap_under_their_label() {
        let lines = wrap("WARNING: aaa bbb ccc ddd", 12, "  ");
        assert_eq!(lines, ["WARNING: aaa", "  bbb ccc", "  ddd"]);
    }
}
