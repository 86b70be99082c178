//! The terminal table of `wsbench rtt` (and of `wsbench report` given an rtt file), shaped
//! like google-benchmark's console output (the seed published one): a `Run on (…)` line, a
//! rule, a header, one row per protocol. Times are per round trip in µs with one decimal;
//! the last column is the ratio to the raw TCP round trip measured in the same run.

use std::fmt::Write;

use crate::rtt::RttResult;
use crate::rtt::json::{ProtocolFigures, RttFile};
use crate::units::format::micros_fixed;

const HEADERS: [&str; 9] =
    ["Benchmark", "Time (mean)", "Time (median)", "Stddev", "CPU (mean)", "p50", "p99", "max", "vs tcp"];
const GAP: &str = "   ";

fn cells(name: &str, row: &ProtocolFigures) -> [String; 9] {
    [
        name.to_owned(),
        micros_fixed(row.mean_us),
        micros_fixed(row.median_us),
        micros_fixed(row.stddev_us),
        micros_fixed(row.cpu_us),
        micros_fixed(row.p50_us),
        micros_fixed(row.p99_us),
        micros_fixed(row.max_us),
        row.ratio_to_tcp.map_or_else(|| "-".to_owned(), |r| format!("{r:.2}x")),
    ]
}

/// The table of a measurement, ending in a newline.
pub fn render_rtt(result: &RttResult) -> String {
    render_rtt_file(&RttFile::new(result))
}

/// The table of an rtt file (as `wsbench rtt --json` writes it), ending in a newline.
pub fn render_rtt_file(file: &RttFile) -> String {
    let machine = &file.machine;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Run on ({} X {} CPU s), kernel {}, wsbench {}",
        machine.cores, machine.cpu_model, machine.kernel, machine.wsbench_version
    );
    let config = &file.config;
    let placement = match (config.server_cpu, config.client_cpu) {
        (Some(server), Some(client)) => format!("built-in servers on CPU {server}, client on CPU {client}"),
        _ if config.builtin_servers => "built-in servers, client unpinned".to_owned(),
        _ => {
            let targets: Vec<String> =
                file.protocols.0.iter().map(|(name, p)| format!("{name}={}", p.target)).collect();
            format!("targets {}", targets.join(" "))
        }
    };
    let _ = writeln!(
        out,
        "{placement}; {} repeats x {} round trips per protocol (interleaved, after 1 warm-up repeat), \
         {} B messages",
        config.repeats, config.iterations, config.payload_bytes
    );
    let rows: Vec<[String; 9]> = file.protocols.0.iter().map(|(name, p)| cells(name, p)).collect();
    table(&mut out, &rows);
    out
}

/// The rule, the header and the rows, columns as wide as their widest cell.
fn table(out: &mut String, rows: &[[String; 9]]) {
    let mut widths = HEADERS.map(str::len);
    for row in rows {
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
    for row in rows {
        let refs: Vec<&str> = row.iter().map(String::as_str).collect();
        let _ = writeln!(out, "{}", line(&refs));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rtt::{Protocol, ProtocolResult, Quantiles, RttConfig, Summary};
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
        let text = render_rtt(&result(vec![
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
        let text = render_rtt(&result(vec![row(Protocol::Http, 40.0, None)]));
        assert!(text.lines().last().unwrap().ends_with(" -"), "{text}");
    }

    #[test]
    fn a_file_read_back_renders_the_same_table() {
        let result =
            result(vec![row(Protocol::Tcp, 21.3, Some(1.0)), row(Protocol::Wss, 1e-7 + 1.0 / 3.0, None)]);
        let text = crate::rtt::json::to_json(&result);
        let file: RttFile = serde_json::from_str(&text).unwrap();
        assert_eq!(render_rtt_file(&file), render_rtt(&result));
    }
}
