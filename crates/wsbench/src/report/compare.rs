//! What `wsbench compare` prints and writes: the terminal table shaped like the seeds'
//! tables, one row per server, and the HTML page of the comparison. A server measured
//! several times is shown by its median run (by round trips/s), with the range of its rates:
//! every figure of the row, and every bar of the page, is that one run's, so they agree.
//! `compare --repeat` is odd, so the median is one run; when fewer runs were made (a signal,
//! a server that died), an even count shows the lower of the two middle runs and says so.
//! `srv µs/rt` and `cli µs/rt` are the server's and the client's CPU time per round trip
//! (each side's CPU over every echo the client received), so rows over different transports
//! show what a round trip costs each side.

use std::fmt::Write as _;
use std::path::Path;

use crate::result::{ResultError, RunResult, write_atomically};
use crate::units::format::{group, kib_tight, mib_tight, millis_tight, sig3};

/// One server of a comparison as the table and the page show it: its runs (one per
/// repeat), or why it has none.
#[derive(Debug, Clone, Copy)]
pub struct Row<'a> {
    pub name: &'a str,
    pub language: &'a str,
    pub runs: &'a [RunResult],
    /// What went wrong, in words (not installed, failed to start, died mid-run).
    pub problems: &'a [String],
    /// Not run, and why (not a failure).
    pub skipped: Option<&'a str>,
}

/// The run with the median round trips/s, whose other figures the table and the bars show
/// (of an even count, the lower of the two middle ones).
pub fn median_run<'a>(row: &Row<'a>) -> Option<&'a RunResult> {
    let mut runs: Vec<&RunResult> = row.runs.iter().collect();
    runs.sort_by(|a, b| a.summary.exchanges_per_sec.total_cmp(&b.summary.exchanges_per_sec));
    runs.get(runs.len().saturating_sub(1) / 2).copied()
}

/// Each measured server's median run, labelled with its name, for the report renderers.
pub fn median_results(rows: &[Row]) -> Vec<(String, RunResult)> {
    rows.iter().filter_map(|row| Some((row.name.to_owned(), median_run(row)?.clone()))).collect()
}

/// Writes the HTML page of a comparison (atomically): each server's median run, its bars
/// with the range of its repeats, the footer naming `command`.
pub fn write_compare_html(rows: &[Row], path: &Path, command: &str) -> Result<(), ResultError> {
    let repeats: Vec<Vec<RunResult>> =
        rows.iter().filter(|row| median_run(row).is_some()).map(|row| row.runs.to_vec()).collect();
    let page = super::render_html_page(&median_results(rows), &repeats, command)?;
    write_atomically(path, |out| out.write_all(page.as_bytes()))
}

/// The comparison table, shaped like the seeds' tables.
pub fn render_compare_table(rows: &[Row]) -> String {
    let mut out = String::new();
    // What the scenario counts (a pubsub comparison counts deliveries), and its own columns.
    let first = rows.iter().flat_map(|row| row.runs).next();
    let what = first.map_or("round trips", |run| super::exchange(run).many);
    let scenario = first.and_then(crate::scenario::of_result);
    let columns = scenario.map_or(&[][..], |scenario| scenario.compare_columns());
    let headings: String = columns.iter().map(|(heading, width)| format!(" {heading:>width$}")).collect();
    let _ = writeln!(
        out,
        "{:<22} {:<10} {:>24} {:>9} {:>9} {:>9} {:>9} {:>11} {:>8} {:>7} {:>9} {:>8} {:>7} {:>17} {:>9} {:>9} {:>6}{}",
        "server",
        "language",
        format!("{what}/s (min–max)"),
        "mean",
        "p50",
        "p99",
        "connect",
        "conns",
        "timeouts",
        "disconn",
        "RSS",
        "RSS/conn",
        "CPU s",
        format!("{what}/CPU-s"),
        "srv µs/rt",
        "cli µs/rt",
        "client",
        headings
    );
    for row in rows {
        match median_run(row) {
            Some(run) => measured_row(&mut out, row, run),
            None => {
                let _ = writeln!(
                    out,
                    "{:<22} {:<10} {}",
                    row.name,
                    row.language,
                    row.skipped.map_or_else(|| row.problems.join("; "), str::to_owned)
                );
            }
        }
    }
    let medians: Vec<(&str, &RunResult)> =
        rows.iter().filter_map(|row| Some((row.name, median_run(row)?))).collect();
    out.push_str(&super::compare_recovery::recovery_table(&medians).unwrap_or_default());
    out
}

/// The scenario's own columns of a run (pubsub: lost, duplicated, spread), right-aligned
/// under their headings.
fn scenario_cells(run: &RunResult) -> String {
    let Some(scenario) = crate::scenario::of_result(run) else { return String::new() };
    let cells = scenario.compare_cells(run);
    scenario
        .compare_columns()
        .iter()
        .zip(&cells)
        .map(|((_, width), cell)| format!(" {cell:>width$}"))
        .collect()
}

/// One measured server's line: its median run's figures and the range of its rates.
fn measured_row(out: &mut String, row: &Row, run: &RunResult) {
    let rates: Vec<f64> = row.runs.iter().map(|r| r.summary.exchanges_per_sec).collect();
    let min = rates.iter().copied().fold(f64::INFINITY, f64::min);
    let max = rates.iter().copied().fold(0.0, f64::max);
    let s = &run.summary;
    // Per connection only where the count makes it meaningful (`memory::MIN_CONNECTIONS`).
    let per_conn = match (run.server.rss_peak_bytes, run.server.rss_baseline_bytes) {
        (Some(peak), Some(base)) if s.connections.established >= super::memory::MIN_CONNECTIONS => {
            kib_tight(peak.saturating_sub(base) as f64 / s.connections.established as f64)
        }
        _ => "-".to_owned(),
    };
    let _ = writeln!(
        out,
        "{:<22} {:<10} {:>24} {:>9} {:>9} {:>9} {:>9} {:>11} {:>8} {:>7} {:>9} {:>8} {:>7} {:>17} {:>9} {:>9} {:>6}{}",
        row.name,
        row.language,
        format!("{} ({}–{})", whole(s.exchanges_per_sec), whole(min), whole(max)),
        millis_tight(s.latency_us.mean),
        millis_tight(s.latency_us.p50 as f64),
        millis_tight(s.latency_us.p99 as f64),
        millis_tight(s.connect_us.p50 as f64),
        format!("{}/{}", s.connections.established, s.connections.attempted),
        s.errors.get("connect_timeout").copied().unwrap_or(0),
        s.disconnections,
        run.server.rss_peak_bytes.map_or("-".to_owned(), mib_tight),
        per_conn,
        run.server.cpu_seconds.map_or("-".to_owned(), |c| format!("{c:.2}")),
        run.server.exchanges_per_cpu_second.map_or("-".to_owned(), |e| format!("{e:.0}")),
        run.server.cpu_us_per_round_trip.map_or("-".to_owned(), sig3),
        run.client.cpu_us_per_round_trip.map_or("-".to_owned(), sig3),
        if run.client.bound { "BOUND" } else { "ok" },
        scenario_cells(run),
    );
    // The table shows the median run: what went wrong in any run is said beside it.
    let mut notes: Vec<String> = row.problems.to_vec();
    if row.runs.len().is_multiple_of(2) {
        notes.push(format!("the lower middle of {} runs shown", row.runs.len()));
    }
    for (repeat, other) in row.runs.iter().enumerate().filter(|(_, other)| !other.summary.errors.is_empty()) {
        let errors: Vec<String> =
            other.summary.errors.iter().map(|(kind, n)| format!("{kind} {}", group(*n))).collect();
        notes.push(format!("repeat {}: {}", repeat + 1, errors.join(", ")));
    }
    if !notes.is_empty() {
        out.pop();
        let _ = writeln!(out, "  ({})", notes.join("; "));
    }
}

/// A rate as a whole number with thousands separators: `165,348`.
fn whole(rate: f64) -> String {
    group(rate.round().max(0.0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    #[test]
    fn errors_of_any_repeat_are_said_beside_the_median_run() {
        let clean = RunResult::from_outcome(&fixture::closed_loop());
        let mut broken = clean.clone();
        broken.summary.errors.insert("reset".to_owned(), 1_234);
        let runs = [clean.clone(), broken, clean];
        let problems = Vec::new();
        let row = Row { name: "srv", language: "C", runs: &runs, problems: &problems, skipped: None };
        let table = render_compare_table(&[row]);
        let line = table.lines().find(|line| line.starts_with("srv")).unwrap();
        assert!(line.ends_with("  (repeat 2: reset 1,234)"), "{table}");
    }

    #[test]
    fn each_row_shows_the_server_and_client_cpu_per_round_trip() {
        let mut run = RunResult::from_outcome(&fixture::closed_loop());
        run.server.cpu_us_per_round_trip = Some(12.34);
        run.client.cpu_us_per_round_trip = Some(45.67);
        let mut unprobed = run.clone();
        unprobed.server.cpu_us_per_round_trip = None;
        let (problems, runs, others) = (Vec::new(), [run], [unprobed]);
        let row = Row { name: "srv", language: "C", runs: &runs, problems: &problems, skipped: None };
        let other = Row { name: "other", language: "C", runs: &others, problems: &problems, skipped: None };
        let table = render_compare_table(&[row, other]);
        let heading = table.lines().next().unwrap();
        assert!(heading.contains("srv µs/rt cli µs/rt"), "{table}");
        let line = table.lines().find(|line| line.starts_with("srv")).unwrap();
        assert!(line.contains(" 12.3      45.7 "), "{table}");
        let line = table.lines().find(|line| line.starts_with("other")).unwrap();
        assert!(line.contains("         -      45.7 "), "{table}");
    }

    #[test]
    fn rss_per_connection_only_from_the_connections_that_make_it_meaningful() {
        let problems = Vec::new();
        let cell = |established: u64| {
            let mut run = RunResult::from_outcome(&fixture::closed_loop());
            run.summary.connections.established = established;
            let runs = [run];
            let row = Row { name: "srv", language: "C", runs: &runs, problems: &problems, skipped: None };
            let table = render_compare_table(&[row]);
            let line = table.lines().find(|line| line.starts_with("srv")).unwrap().to_owned();
            line.split_whitespace().nth(12).unwrap().to_owned()
        };
        assert_ne!(cell(super::super::memory::MIN_CONNECTIONS), "-");
        assert_eq!(cell(super::super::memory::MIN_CONNECTIONS - 1), "-");
    }

    #[test]
    fn the_row_is_the_median_run_with_grouped_rates_and_an_even_count_says_which() {
        let run = |rate: f64| {
            let mut run = RunResult::from_outcome(&fixture::closed_loop());
            run.summary.exchanges_per_sec = rate;
            run
        };
        let problems = Vec::new();
        let three = [run(193_233.0), run(165_348.4), run(170_002.0)];
        let row = Row { name: "srv", language: "C", runs: &three, problems: &problems, skipped: None };
        assert_eq!(median_run(&row).unwrap().summary.exchanges_per_sec, 170_002.0);
        let table = render_compare_table(&[row]);
        assert!(table.contains("170,002 (165,348–193,233)"), "{table}");
        assert!(!table.contains("lower middle"), "{table}");
        let two = [run(193_233.0), run(165_348.0)];
        let row = Row { name: "srv", language: "C", runs: &two, problems: &problems, skipped: None };
        let table = render_compare_table(&[row]);
        assert!(table.contains("165,348 (165,348–193,233)"), "{table}");
        assert!(table.contains("(the lower middle of 2 runs shown)"), "{table}");
    }
}
