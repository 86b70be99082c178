//! The JSON the page reads. A second is the `--stream` line of it ([`super::super::stream::line`],
//! so whatever that line carries, a stage included, reaches the page too) with what only the
//! page shows: p99.9 of the second, the server's RSS and CPU time as sampled when it was
//! published, and this process's own (not in a `--processes` parent, whose shards are the
//! client). The end of the command is its final figures, read from the result as the
//! result file has them (so the page's last numbers are the file's), the report text as the
//! terminal shows it, and the HTML report's path when one was written. Pure: no I/O.

use std::path::Path;

use serde_json::{Value, json};

use crate::live::Second;
use crate::result::{LatencyStats, RunResult};
use crate::samples::ServerSample;

/// A second, as published with its measurement's number `step`, its p99.9 `p999_us`, and
/// the server (`server`) and this process (`own`) as sampled then.
pub fn second(
    second: &Second,
    step: u64,
    p999_us: u64,
    server: Option<&ServerSample>,
    own: Option<&ServerSample>,
) -> Value {
    let mut line = crate::live::stream::line(second, step);
    line["latency_us"]["p999"] = json!(p999_us);
    line["errors_total"] = json!(second.error_count());
    let process =
        |sample: &ServerSample| json!({ "rss_bytes": sample.rss_bytes, "cpu_seconds": sample.cpu_seconds });
    if let Some(server) = server {
        line["server"] = process(server);
    }
    if let Some(own) = own.filter(|_| second.shards.is_none()) {
        line["client"] = process(own);
    }
    line
}

/// What the page shows when the command ends.
#[derive(Debug, Clone, Default)]
pub struct Ending<'a> {
    /// The report as the terminal shows it (a run's, a search's table, a comparison's).
    pub report: String,
    /// A single run's result: its figures are shown one by one.
    pub result: Option<&'a RunResult>,
    /// The HTML report written by `--html`.
    pub html: Option<&'a Path>,
}

/// The final event: the figures of `ending`'s result as its file has them.
pub fn ending(ending: &Ending<'_>) -> Value {
    let mut value = json!({ "report": ending.report });
    if let Some(html) = ending.html {
        let absolute = std::path::absolute(html).unwrap_or_else(|_| html.to_owned());
        value["html"] = json!(absolute.display().to_string());
    }
    if let Some(result) = ending.result {
        value["figures"] = figures(result);
    }
    value
}

fn latency(stats: &LatencyStats) -> Value {
    json!({ "p50": stats.p50, "p99": stats.p99, "p999": stats.p999, "max": stats.max })
}

/// The result's headline figures, under the names its file uses.
fn figures(result: &RunResult) -> Value {
    let summary = &result.summary;
    json!({
        "echoes_per_sec": summary.exchanges_per_sec,
        "measured_echoes": summary.measured_exchanges,
        "latency_us": latency(&summary.latency_us),
        "latency_uncorrected_us": latency(&summary.latency_uncorrected_us),
        "send_lag_us": latency(&summary.send_lag_us),
        "connections": {
            "established": summary.connections.established,
            "failed": summary.connections.failed,
        },
        "errors": summary.errors,
        "stalls": summary.stalls,
        "server": {
            "rss_peak_bytes": result.server.rss_peak_bytes,
            "cpu_seconds": result.server.cpu_seconds,
        },
        "client": {
            "cpu_seconds": result.client.cpu_seconds,
            "bound": result.client.bound,
        },
        "measured_s": result.measured_s,
        "interrupted": result.interrupted,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Phase;
    use crate::metrics::Counters;

    fn a_second(shards: bool) -> Second {
        Second {
            second: 3,
            phase: Phase::Measured,
            stage: None,
            round_trips: 900,
            connections_open: 10,
            awaiting: false,
            reconnects: 0,
            stall_s: 0,
            p50_us: 100,
            p90_us: 200,
            p99_us: 300,
            max_us: 900,
            counters: Counters::default(),
            errors: [("reset".to_owned(), 2), ("closed_1001".to_owned(), 1)].into(),
            remaining_secs: Some(4),
            shards: shards.then_some(crate::live::ShardSpread {
                running: 2,
                behind: 0,
                rate: (400, 500),
                open: (5, 5),
            }),
        }
    }

    #[test]
    fn a_second_is_its_stream_line_with_p999_and_the_processes_as_sampled() {
        let sample =
            ServerSample { t_ms: 0, rss_bytes: 4096, cpu_seconds: 1.5, threads: 1, fds: 1, slab_bytes: 0 };
        let value = second(&a_second(false), 2, 450, Some(&sample), Some(&sample));
        assert_eq!(value["step"], 2);
        assert_eq!(value["round_trips"], 900);
        assert_eq!(value["latency_us"]["p99"], 300);
        assert_eq!(value["latency_us"]["p999"], 450);
        assert_eq!(value["errors_total"], 3);
        assert_eq!(value["server"]["rss_bytes"], 4096);
        assert_eq!(value["client"]["cpu_seconds"], 1.5);
        // A parent's own CPU is not the client's: its shards are.
        let parent = second(&a_second(true), 0, 450, None, Some(&sample));
        assert!(parent.get("client").is_none() && parent.get("server").is_none(), "{parent}");
        assert_eq!(parent["shards"]["running"], 2);
    }

    #[test]
    fn the_ending_carries_the_result_files_figures_and_the_html_path() {
        let result = RunResult::from_outcome(&crate::fixture::closed_loop());
        let file: Value = serde_json::to_value(&result).unwrap();
        let html = Path::new("/tmp/r.html");
        let value = ending(&Ending { report: "text".to_owned(), result: Some(&result), html: Some(html) });
        let figures = &value["figures"];
        assert_eq!(figures["echoes_per_sec"], file["summary"]["echoes_per_sec"]);
        assert_eq!(figures["latency_us"]["p99"], file["summary"]["latency_us"]["p99"]);
        assert_eq!(
            figures["latency_uncorrected_us"]["p999"],
            file["summary"]["latency_uncorrected_us"]["p999"]
        );
        assert_eq!(figures["server"]["rss_peak_bytes"], file["server"]["rss_peak_bytes"]);
        assert_eq!(figures["connections"]["established"], file["summary"]["connections"]["established"]);
        assert_eq!((value["report"].as_str(), value["html"].as_str()), (Some("text"), Some("/tmp/r.html")));
        let bare = ending(&Ending { report: "table".to_owned(), ..Ending::default() });
        assert!(bare.get("figures").is_none() && bare.get("html").is_none(), "{bare}");
    }
}
