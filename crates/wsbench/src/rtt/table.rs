//! The terminal table of `wsbench rtt`, shaped like google-benchmark's console output (the
//! seed published one): a `Run on (…)` line, a rule, a header, one row per protocol. Times
//! are per round trip in µs with one decimal; the last column is the ratio to the raw TCP
//! round trip measured in the same run.

use std::fmt::Write;

use super::{ProtocolResult, RttResult};

const HEADERS: [&str; 9] =
    ["Benchmark", "Time (mean)", "Time (median)", "Stddev", "CPU (mean)", "p50", "p99", "max", "vs tcp"];
const GAP: &str = "   ";

fn micros(value: f64) -> String {
    format!("{value:.1} us")
}

fn cells(row: &ProtocolResult) -> [String; 9] {
    [
        row.protocol.name().to_owned(),
        micros(row.wall_us.mean),
        micros(row.wall_us.median),
        micros(row.wall_us.stddev),
        micros(row.cpu_us.mean),
        micros(row.quantiles.p50_us),
        micros(row.quantiles.p99_us),
        micros(row.quantiles.max_us),
        row.ratio_to_tcp.map_or_else(|| "-".to_owned(), |r| format!("{r:.2}x")),
    ]
}

/// The whole table, ending in a newline.
pub fn render(result: &RttResult) -> String {
    let machine = &result.machine;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Run on ({} X {} CPU s), kernel {}, wsbench {}",
        machine.cores, machine.cpu_model, machine.kernel, machine.wsbench_version
    );
    let config = &result.config;
    let placement = match (result.server_cpu, result.client_cpu) {
        (Some(server), Some(client)) => format!("built-in servers on CPU {server}, client on CPU {client}"),
        _ if config.builtin() => "built-in servers, client unpinned".to_owned(),
        _ => {
            let targets: Vec<String> =
                result.protocols.iter().map(|p| format!("{}={}", p.protocol, p.target)).collect();
            format!("targets {}", targets.join(" "))
        }
    };
    let _ = writeln!(
        out,
        "{placement}; {} repeats x {} round trips per protocol (interleaved, after 1 warm-up repeat), \
         {} B messages",
        config.repeats, config.iterations, config.payload_bytes
    );
    let rows: Vec<[String; 9]> = result.protocols.iter().map(cells).collect();
    let mut widths = HEADERS.map(str::len);
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.len());
        }
    }
    let total = widths.iter().sum::<usize>() + GAP.len() * (widths.len() - 1);
    let rule = "-".repeat(total);
    let line = |cells: &[&str]| {
        let mut text = String::new();
        for (i, (cell, width)) in cells.iter().zip(widths).enumerate() {
            if i == 0 {
                let _ = write!(text, "{cell:<width$}");
            } else {
                let _ = write!(text, "{GAP}{cell:>width$}");
            }
        }
        text.trim_end().to_owned()
    };
    let _ = writeln!(out, "{rule}");
    let _ = writeln!(out, "{}", line(&HEADERS));
    let _ = writeln!(out, "{rule}");
    for row in &rows {
        let refs: Vec<&str> = row.iter().map(String::as_str).collect();
        let _ = writeln!(out, "{}", line(&refs));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rtt::{Protocol, Quantiles, RttConfig, Summary};
    use crate::samples::MachineFacts;

    fn row(protocol: Protocol, mean: f64, ratio: Option<f64>) -> ProtocolResult {
        ProtocolResult {
            protocol,
            target: "127.0.0.1:4000".into(),
            wall_us: Summary { mean, median: mean - 0.2, stddev: 0.4 },
            cpu_us: Summary { mean: 5.1, median: 5.0, stddev: 0.1 },
            quantiles: Quantiles { p50_us: mean, p99_us: 30.25, max_us: 120.0 },
            ratio_to_tcp: ratio,
            iterations: 2000,
            repeats: 20,
            per_repeat: Vec::new(),
        }
    }

    fn result(protocols: Vec<ProtocolResult>) -> RttResult {
        RttResult {
            config: RttConfig {
                protocols: protocols.iter().map(|p| p.protocol).collect(),
                targets: Vec::new(),
                repeats: 20,
                iterations: 2000,
                payload_bytes: 20,
                insecure: true,
                json: None,
            },
            machine: MachineFacts {
                cpu_model: "AMD EPYC".into(),
                cores: 2,
                kernel: "6.8.0".into(),
                hostname: "h".into(),
                wsbench_version: "0.1.0".into(),
                open_files_limit: 1024,
            },
            started_at_unix_ms: 0,
            client_cpu: Some(1),
            server_cpu: Some(0),
            protocols,
        }
    }

    #[test]
    fn renders_like_google_benchmark() {
        let text = render(&result(vec![
            row(Protocol::Tcp, 21.3, Some(1.0)),
            row(Protocol::Ws, 24.04, Some(24.04 / 21.3)),
        ]));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "Run on (2 X AMD EPYC CPU s), kernel 6.8.0, wsbench 0.1.0");
        assert!(lines[1].starts_with("built-in servers on CPU 0, client on CPU 1; 20 repeats x 2000"));
        assert!(lines[2].chars().all(|c| c == '-'));
        assert!(lines[3].starts_with("Benchmark   Time (mean)   Time (median)"), "{}", lines[3]);
        assert!(lines[5].starts_with("tcp     "), "{}", lines[5]);
        assert!(lines[5].contains("21.3 us") && lines[5].ends_with("1.00x"), "{}", lines[5]);
        assert!(lines[6].contains("24.0 us") && lines[6].ends_with("1.13x"), "{}", lines[6]);
        assert!(lines[6].contains("30.2 us") || lines[6].contains("30.3 us"), "{}", lines[6]);
        // Columns line up: every row is as wide as the rule.
        assert_eq!(lines[3].len(), lines[2].len());
        assert_eq!(lines[5].len(), lines[2].len());
    }

    #[test]
    fn no_tcp_means_no_ratio() {
        let text = render(&result(vec![row(Protocol::Http, 40.0, None)]));
        assert!(text.lines().last().unwrap().ends_with(" -"), "{text}");
    }
}
