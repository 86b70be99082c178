//! The summary table that compares result files side by side, one row per result. It is
//! defined once here and rendered three ways: in the HTML report, as a Markdown table to
//! paste into a README (`--format md`, the same cells as the HTML) and as CSV for
//! spreadsheets and scripts (`--format csv`: the same columns, but plain numbers in fixed
//! units and empty cells for missing values).

use std::fmt::Write as _;

use crate::result::RunResult;
use crate::units::format::{bytes, group, micros, rate, seconds};

/// One column of the summary table. `group` heads several columns in the HTML table and
/// prefixes `name` in Markdown.
#[derive(Debug, Clone, Copy)]
pub(super) struct Column {
    pub group: &'static str,
    pub name: &'static str,
    /// Right-aligned.
    pub numeric: bool,
}

const fn column(group: &'static str, name: &'static str, numeric: bool) -> Column {
    Column { group, name, numeric }
}

/// The headings that name the exchanges, for round trips; [`headings`] words them as the
/// results' scenario counts.
const EXCHANGES_PER_SEC: &str = "Round trips/s";
const EXCHANGES_PER_CPU: &str = "round trips per CPU-s";

/// The columns' names, the exchanges named as `results` count them.
pub(super) fn headings(results: &[(String, RunResult)]) -> Vec<String> {
    let exchange = super::exchange_of_all(results.iter().map(|(_, result)| result));
    COLUMNS
        .iter()
        .map(|c| match c.name {
            EXCHANGES_PER_SEC => format!("{}/s", exchange.title()),
            EXCHANGES_PER_CPU => format!("{} per CPU-s", exchange.many),
            name => name.to_owned(),
        })
        .collect()
}

pub(super) const COLUMNS: [Column; 17] = [
    column("", "Result", false),
    column("", "Scenario", false),
    column("", "Target", false),
    column("Connections", "est. / att.", true),
    column("", EXCHANGES_PER_SEC, true),
    column("Latency", "mean", true),
    column("Latency", "p50", true),
    column("Latency", "p99", true),
    column("Latency", "p99.9", true),
    column("Latency", "max", true),
    column("Connect", "p50", true),
    column("Connect", "p99", true),
    column("", "Errors", true),
    column("Server", "RSS peak", true),
    column("Server", "CPU", true),
    column("Server", EXCHANGES_PER_CPU, true),
    column("", "Client-bound", false),
];

/// The CSV header: the columns above, with the connection counts split in two and the
/// unit in each name.
const CSV_HEADER: [&str; 18] = [
    "label",
    "scenario",
    "target",
    "connections_established",
    "connections_attempted",
    "echoes_per_sec",
    "latency_mean_us",
    "latency_p50_us",
    "latency_p99_us",
    "latency_p999_us",
    "latency_max_us",
    "connect_p50_us",
    "connect_p99_us",
    "errors",
    "server_rss_peak_bytes",
    "server_cpu_seconds",
    "echoes_per_server_cpu_second",
    "client_bound",
];

const NA: &str = "n/a";

/// The table's cells for one result, in human units, in the order of [`COLUMNS`].
pub(super) fn summary_row(label: &str, result: &RunResult) -> [String; 17] {
    let s = &result.summary;
    let server = &result.server;
    let latency = |us: f64| if s.latency_us.count == 0 { NA.to_owned() } else { micros(us) };
    let connect = |us: u64| if s.connect_us.count == 0 { NA.to_owned() } else { micros(us as f64) };
    let target = if result.target.builtin {
        format!("{} (built-in)", result.target.url)
    } else {
        result.target.url.clone()
    };
    [
        label.to_owned(),
        result.scenario.clone(),
        target,
        format!("{} / {}", group(s.connections.established), group(s.connections.attempted)),
        rate(s.exchanges_per_sec),
        latency(s.latency_us.mean),
        latency(s.latency_us.p50 as f64),
        latency(s.latency_us.p99 as f64),
        latency(s.latency_us.p999 as f64),
        latency(s.latency_us.max as f64),
        connect(s.connect_us.p50),
        connect(s.connect_us.p99),
        group(s.errors.values().sum()),
        server.rss_peak_bytes.map_or_else(|| NA.to_owned(), bytes),
        server.cpu_seconds.map_or_else(|| NA.to_owned(), seconds),
        server.exchanges_per_cpu_second.map_or_else(|| NA.to_owned(), rate),
        if result.client.bound { "yes" } else { "no" }.to_owned(),
    ]
}

fn csv_row(label: &str, result: &RunResult) -> [String; 18] {
    let s = &result.summary;
    let server = &result.server;
    let latency = |us: String| if s.latency_us.count == 0 { String::new() } else { us };
    let connect = |us: u64| if s.connect_us.count == 0 { String::new() } else { us.to_string() };
    let opt = |value: Option<String>| value.unwrap_or_default();
    [
        label.to_owned(),
        result.scenario.clone(),
        result.target.url.clone(),
        s.connections.established.to_string(),
        s.connections.attempted.to_string(),
        format!("{:.2}", s.exchanges_per_sec),
        latency(format!("{:.1}", s.latency_us.mean)),
        latency(s.latency_us.p50.to_string()),
        latency(s.latency_us.p99.to_string()),
        latency(s.latency_us.p999.to_string()),
        latency(s.latency_us.max.to_string()),
        connect(s.connect_us.p50),
        connect(s.connect_us.p99),
        s.errors.values().sum::<u64>().to_string(),
        opt(server.rss_peak_bytes.map(|b| b.to_string())),
        opt(server.cpu_seconds.map(|c| format!("{c:.3}"))),
        opt(server.exchanges_per_cpu_second.map(|e| format!("{e:.2}"))),
        result.client.bound.to_string(),
    ]
}

/// A CSV field, quoted when it holds a comma, a quote or a line break (RFC 4180).
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

/// The summary table as CSV: a header line, then one line per result.
pub fn render_csv(results: &[(String, RunResult)]) -> String {
    let mut out = CSV_HEADER.join(",");
    out.push('\n');
    for (label, result) in results {
        let fields: Vec<String> = csv_row(label, result).iter().map(|f| csv_field(f)).collect();
        out.push_str(&fields.join(","));
        out.push('\n');
    }
    out
}

/// A Markdown table cell: pipes escaped, line breaks flattened.
fn md_cell(text: &str) -> String {
    text.replace('\\', "\\\\").replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// The summary table as a GitHub-flavoured Markdown table, numbers right-aligned.
pub fn render_md(results: &[(String, RunResult)]) -> String {
    let mut out = String::new();
    let headers: Vec<String> = COLUMNS
        .iter()
        .zip(headings(results))
        .map(|(c, name)| if c.group.is_empty() { name } else { format!("{} {name}", c.group) })
        .collect();
    let _ = writeln!(out, "| {} |", headers.join(" | "));
    let rules: Vec<&str> = COLUMNS.iter().map(|c| if c.numeric { "---:" } else { ":---" }).collect();
    let _ = writeln!(out, "| {} |", rules.join(" | "));
    for (label, result) in results {
        let cells: Vec<String> = summary_row(label, result).iter().map(|c| md_cell(c)).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    fn labelled(label: &str, outcome: crate::samples::RunOutcome) -> (String, RunResult) {
        (label.to_owned(), RunResult::from_outcome(&outcome))
    }

    #[test]
    fn csv_quotes_only_what_needs_quoting() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }

    #[test]
    fn csv_rows_have_as_many_fields_as_the_header() {
        let results = [labelled("x,y", fixture::closed_loop()), labelled("n", fixture::nothing_answered())];
        let csv = render_csv(&results);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[1].starts_with("\"x,y\",echo,ws://127.0.0.1:9001/,1000,1000,"), "{}", lines[1]);
        // No latency, no samples: empty cells rather than zeros.
        assert!(lines[2].ends_with(",0,10,0.00,,,,,,,,10,,,,false"), "{}", lines[2]);
    }

    #[test]
    fn markdown_escapes_pipes_and_aligns_numbers() {
        let md = render_md(&[labelled("a|b", fixture::open_loop_troubled())]);
        let lines: Vec<&str> = md.lines().collect();
        assert!(lines[0].starts_with("| Result | Scenario | Target | Connections est. / att. |"));
        assert!(lines[1].starts_with("| :--- | :--- | :--- | ---: |"));
        assert!(
            lines[2].starts_with("| a\\|b | throughput | wss://bench.example.net:8443/echo | 485 / 500 |")
        );
        assert_eq!(lines[2].matches(" | ").count(), COLUMNS.len() - 1);
    }
}
