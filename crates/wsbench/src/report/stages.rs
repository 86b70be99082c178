//! A `--stages` run's per-stage rows, beside the whole run's figures: one table in the
//! terminal report and one on the HTML page (each result with stages gets its own), and
//! Little's law per stage (a staged run's concurrency changes from stage to stage, so no
//! one prediction holds for the whole run). Runs without stages print nothing here.

use std::fmt::Write as _;

use super::escape::escape;
use crate::result::RunResult;
use crate::units::format::{group, mib_tight, micros, rate, sig3};

const HEADINGS: [&str; 12] = [
    "stage",
    "",
    "time",
    "rate/s",
    "p50",
    "p90",
    "p99",
    "p99.9",
    "errors",
    "open",
    "server RSS",
    "server CPU",
];

/// Each stage's cells, under [`HEADINGS`].
fn rows(result: &RunResult) -> Vec<[String; 12]> {
    result
        .stages
        .iter()
        .map(|stage| {
            let latency = |us: u64| match stage.latency_us.count {
                0 => "-".to_owned(),
                _ => micros(us as f64),
            };
            [
                stage.name.clone(),
                stage.stage.clone(),
                format!("{}-{}s", stage.start_s, stage.end_s),
                rate(stage.exchanges_per_sec),
                latency(stage.latency_us.p50),
                latency(stage.latency_us.p90),
                latency(stage.latency_us.p99),
                latency(stage.latency_us.p999),
                group(stage.errors),
                group(stage.connections_open),
                stage.server_rss_bytes.map_or("-".to_owned(), mib_tight),
                stage.server_cpu_percent.map_or("-".to_owned(), |cpu| format!("{cpu:.0}%")),
            ]
        })
        .collect()
}

/// The terminal table: a heading row and a row per stage, columns aligned; `None` without
/// stages.
pub fn text_block(result: &RunResult) -> Option<String> {
    if result.stages.is_empty() {
        return None;
    }
    let rows = rows(result);
    let mut widths = HEADINGS.map(str::len);
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::from("stages (open: connections in the stage's last second; server at its end):\n");
    let headings = HEADINGS.map(str::to_owned);
    for row in std::iter::once(&headings).chain(&rows) {
        let mut line = String::from("  ");
        for (i, (cell, width)) in row.iter().zip(widths).enumerate() {
            match i {
                0 | 1 => {
                    let _ = write!(line, "{cell:<width$}  ");
                }
                _ => {
                    let _ = write!(line, "{cell:>width$}  ");
                }
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    Some(out)
}

/// Little's law for each measured stage of a closed loop whose connections held steady:
/// the stage's connections open × `in_flight` ÷ its rate is the mean latency it predicts,
/// beside the one measured. A stage whose count changed (a ramp, connections lost) predicts
/// nothing: its per-second counts are each second's most, not the time-weighted mean the
/// law needs, and a ramp's would overstate it by half a second's worth of connections. A
/// count is steady when its mean over the stage's seconds is its last second's (a stage
/// moves one way, so only a constant count has both equal).
pub fn littles_law_block(result: &RunResult, in_flight: u64) -> String {
    let mut out = format!(
        "Little's law per stage (connections × {} in flight ÷ rate = predicted mean latency):\n",
        group(in_flight)
    );
    for stage in result.stages.iter().filter(|stage| stage.measured) {
        let open = stage.connections_open as f64;
        let text = match stage.connections_mean {
            None => "no prediction (the result predates the stages' mean connections)".to_owned(),
            Some(_) if stage.latency_us.count == 0 || stage.exchanges_per_sec <= 0.0 => {
                "no prediction (no round trips were measured)".to_owned()
            }
            Some(mean) if mean != open => format!(
                "no prediction (the connections open changed over the stage: {} a second on average, {} at its end)",
                sig3(mean),
                group(stage.connections_open)
            ),
            Some(_) => format!(
                "{} × {} ÷ {}/s = {} predicted, {} measured",
                group(stage.connections_open),
                group(in_flight),
                rate(stage.exchanges_per_sec),
                micros(open * in_flight as f64 / stage.exchanges_per_sec * 1e6),
                micros(stage.latency_us.mean)
            ),
        };
        let _ = writeln!(out, "  {:<8}{text}", stage.name);
    }
    out
}

/// The HTML section: a table per result with stages; nothing when none has any.
pub fn html_section(out: &mut String, results: &[(String, RunResult)]) {
    let staged: Vec<&(String, RunResult)> = results.iter().filter(|(_, r)| !r.stages.is_empty()).collect();
    if staged.is_empty() {
        return;
    }
    out.push_str("<section id=\"stages\">\n<h2>Stages</h2>\n");
    for (label, result) in staged {
        let _ = write!(out, "<h3>{}</h3>\n<div class=\"table-wrap\">\n<table>\n<thead>\n<tr>", escape(label));
        for (i, heading) in HEADINGS.iter().enumerate() {
            let class = if i >= 2 { " class=\"num\"" } else { "" };
            let _ = write!(out, "<th{class}>{}</th>", escape(heading));
        }
        out.push_str("</tr>\n</thead>\n<tbody>\n");
        for row in rows(result) {
            out.push_str("<tr>");
            for (i, cell) in row.iter().enumerate() {
                let class = if i >= 2 { " class=\"num\"" } else { "" };
                let _ = write!(out, "<td{class}>{}</td>", escape(cell));
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody>\n</table>\n</div>\n");
    }
    out.push_str("</section>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::{LatencyStats, StageFigures};

    fn stage(name: &str, open: u64, mean: Option<f64>, count: u64) -> StageFigures {
        StageFigures {
            name: name.into(),
            stage: "2s:10c".into(),
            start_s: 0,
            end_s: 2,
            measured: true,
            exchanges: 20_000,
            exchanges_per_sec: 10_000.0,
            latency_us: LatencyStats { count, mean: 1500.0, ..LatencyStats::default() },
            errors: 0,
            connections_open: open,
            connections_mean: mean,
            server_rss_bytes: None,
            server_cpu_percent: None,
            latency_histogram: String::new(),
        }
    }

    #[test]
    fn littles_law_is_predicted_for_each_stage_whose_connections_held_steady() {
        let mut result = RunResult::from_outcome(&crate::fixture::closed_loop());
        result.stages = vec![
            stage("stage1", 10, Some(7.5), 20_000),
            stage("stage2", 10, Some(10.0), 20_000),
            stage("stage3", 10, Some(10.0), 0),
            stage("stage4", 10, None, 20_000),
        ];
        let block = littles_law_block(&result, 2);
        let lines: Vec<&str> = block.lines().collect();
        assert_eq!(
            lines,
            [
                "Little's law per stage (connections × 2 in flight ÷ rate = predicted mean latency):",
                "  stage1  no prediction (the connections open changed over the stage: 7.50 a second on average, 10 at its end)",
                "  stage2  10 × 2 ÷ 10,000/s = 2.00 ms predicted, 1.50 ms measured",
                "  stage3  no prediction (no round trips were measured)",
                "  stage4  no prediction (the result predates the stages' mean connections)",
            ]
        );
        result.stages[1].measured = false;
        assert!(!littles_law_block(&result, 2).contains("stage2"), "a warm-up stage is not judged");
    }
}
