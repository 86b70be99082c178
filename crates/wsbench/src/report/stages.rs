//! A `--stages` run's per-stage rows, beside the whole run's figures: one table in the
//! terminal report and one on the HTML page (each result with stages gets its own). Runs
//! without stages print nothing here.

use std::fmt::Write as _;

use super::escape::escape;
use crate::result::RunResult;
use crate::units::format::{group, mib_tight, micros, rate};

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
