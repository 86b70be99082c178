//! `wsbench report --html`: one self-contained HTML page comparing result files: the summary
//! table, notes on anything that qualifies the numbers, charts over time and of the
//! distributions, and (for two or more results) comparison bars. The page must open offline
//! and stay that way in an archive or a README: no scripts, no web fonts, nothing fetched
//! (a Content-Security-Policy forbids it), charts as inline SVG from [`super::svg`]. The same
//! input always gives the same bytes, so the page is golden-tested.

use std::fmt::Write as _;

use super::charts::{self, Charted};
use super::escape::escape;
use super::palette;
use super::table::{COLUMNS, headings, summary_row};
use crate::result::{ResultError, RunResult};
use crate::units::format::{group, seconds};

const STYLE: &str = r#"
:root { color-scheme: light; --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --soft: #eaeef2; --panel: #f6f8fa; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--panel); color: var(--fg);
  font: 14px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1400px; margin: 0 auto; padding: 28px 28px 40px; }
h1 { font-size: 26px; margin: 0 0 2px; letter-spacing: -0.01em; }
h2 { font-size: 18px; margin: 0 0 12px; padding-bottom: 6px; border-bottom: 1px solid var(--line); }
h3 { font-size: 15px; margin: 0; }
.sub { color: var(--muted); margin: 0; }
section { margin-top: 30px; }
.table-wrap { overflow-x: auto; background: #fff; border: 1px solid var(--line); border-radius: 8px; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
th, td { padding: 6px 6px; text-align: left; white-space: nowrap; border-bottom: 1px solid var(--soft); }
table.summary { font-size: 12.5px; }
table.summary th { white-space: normal; }
td.target { white-space: normal; min-width: 8em; max-width: 13em; }
th { background: var(--panel); font-size: 12px; font-weight: 600; color: #32383f; vertical-align: bottom; }
th.group { text-align: center; border-bottom: 1px solid var(--line); }
th.num, td.num { text-align: right; }
tbody tr:last-child td { border-bottom: none; }
tbody tr:nth-child(even) { background: #fbfcfd; }
td.bad { color: #b42318; font-weight: 600; }
td.warn { color: #9a6700; font-weight: 600; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 7px; }
.notes { margin: 12px 0 0; padding: 0; list-style: none; }
.notes li { margin: 5px 0; padding: 6px 12px; border-radius: 6px; background: #fff8c5; border: 1px solid #eed888; }
.notes li.bad { background: #ffebe9; border-color: #ffc1bc; }
.notes li.info { background: #fff; border-color: var(--line); color: var(--muted); }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(540px, 1fr)); gap: 16px; }
figure { margin: 0; padding: 14px 16px 10px; background: #fff; border: 1px solid var(--line); border-radius: 8px; }
figcaption p { margin: 2px 0 8px; color: var(--muted); font-size: 12.5px; }
svg.chart { display: block; width: 100%; height: auto; font-family: inherit; font-size: 12px; }
svg .grid { stroke: var(--soft); }
svg .axis { stroke: #8c959f; fill: none; }
svg .tick { fill: var(--muted); font-size: 11px; }
svg .axis-label { fill: #32383f; }
svg .legend text, svg .value, svg .bar-label { fill: var(--fg); }
svg .line { fill: none; stroke-width: 2; stroke-linejoin: round; stroke-linecap: round; }
svg .na { fill: #8c959f; font-style: italic; }
svg .whisker { stroke: #32383f; stroke-width: 1.5; fill: none; }
svg .whisker-halo { stroke: #fff; stroke-width: 4; fill: none; }
svg .panel-title { font-weight: 600; }
svg .frame-empty { fill: var(--panel); stroke: var(--line); stroke-dasharray: 4 4; }
svg .empty { fill: var(--muted); font-size: 13px; }
dl.scenario { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 6px 0 14px;
  padding: 10px 14px; background: #fff; border: 1px solid var(--line); border-radius: 8px; }
dl.scenario dt { color: var(--muted); }
dl.scenario dd { margin: 0; font-variant-numeric: tabular-nums; }
footer { margin-top: 32px; color: var(--muted); font-size: 12px; }
"#;

/// The page for `results`, each with its label (the file stem in `wsbench report`), its
/// footer naming `wsbench report --html`. See [`render_html_page`].
pub fn render_html(results: &[(String, RunResult)]) -> Result<String, ResultError> {
    render_html_page(results, &[], "wsbench report --html")
}

/// The page for `results`; `repeats[i]`, when given, holds every repeat of result `i`
/// (`compare --repeat N`: the comparison bars show their median and range); the footer
/// names `command`, the command line that made the page.
pub fn render_html_page(
    results: &[(String, RunResult)],
    repeats: &[Vec<RunResult>],
    command: &str,
) -> Result<String, ResultError> {
    let charted = results
        .iter()
        .enumerate()
        .map(|(index, (label, result))| {
            let repeats = repeats.get(index).map_or(&[][..], Vec::as_slice);
            Ok(Charted {
                label,
                style: palette::style(index),
                result,
                metrics: result.common_metrics()?,
                repeats,
            })
        })
        .collect::<Result<Vec<_>, ResultError>>()?;
    let labels: Vec<&str> = results.iter().map(|(label, _)| label.as_str()).collect();

    let mut out = String::new();
    open_page(&mut out, &format!("wsbench report: {}", labels.join(", ")));
    let _ = writeln!(
        out,
        "<header>\n<h1>wsbench report</h1>\n<p class=\"sub\">{}</p>\n</header>",
        escape(&subtitle(results))
    );
    summary_section(&mut out, results);
    charts_section(&mut out, &charted);
    if charted.len() >= 2 {
        out.push_str("<section id=\"compare\">\n<h2>Comparison</h2>\n<div class=\"charts\">\n");
        for comparison in charts::comparisons(&charted) {
            figure(&mut out, &comparison.title, &comparison.better, &comparison.svg);
        }
        out.push_str("</div>\n</section>\n");
    }
    super::stages::html_section(&mut out, results);
    lines_section(&mut out, results, ("scenario", "Scenario figures"), super::scenario_lines);
    lines_section(&mut out, results, ("memory", "Memory per connection"), super::memory::memory_lines);
    runs_section(&mut out, results);
    close_page(&mut out, command);
    Ok(out)
}

/// The page's head (its offline-only policy and style) titled `title`, up to `<main>`.
pub(super) fn open_page(out: &mut String, title: &str) {
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n\
         <meta name=\"generator\" content=\"wsbench report\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n",
        escape(title)
    );
}

/// The footer naming `command`, and the end of the page.
pub(super) fn close_page(out: &mut String, command: &str) {
    let _ = write!(
        out,
        "<footer>Generated by <code>{}</code>. Self-contained: no scripts, no external \
         resources.</footer>\n</main>\n</body>\n</html>\n",
        escape(command)
    );
}

/// "2 results: echo against ws://…, …"
fn subtitle(results: &[(String, RunResult)]) -> String {
    let mut scenarios: Vec<&str> = Vec::new();
    for (_, result) in results {
        if !scenarios.contains(&result.scenario.as_str()) {
            scenarios.push(&result.scenario);
        }
    }
    let count = match results.len() {
        1 => "1 result".to_owned(),
        n => format!("{n} results"),
    };
    let noun = if scenarios.len() == 1 { "scenario" } else { "scenarios" };
    let partial: Vec<String> = results
        .iter()
        .filter_map(|(label, result)| {
            let partial = result.partial.as_ref()?.describe();
            Some(if results.len() == 1 { partial } else { format!("{label}: {partial}") })
        })
        .collect();
    let mut subtitle = format!("{count} · {noun} {}", scenarios.join(", "));
    if !partial.is_empty() {
        subtitle.push_str(&format!(" · {}", partial.join("; ")));
    }
    subtitle
}

fn summary_section(out: &mut String, results: &[(String, RunResult)]) {
    out.push_str("<section id=\"summary\">\n<h2>Summary</h2>\n<div class=\"table-wrap\">\n<table class=\"summary\">\n<thead>\n<tr>");
    // First header row: group names spanning their columns; ungrouped headers span both rows.
    let names = headings(results);
    let mut index = 0;
    while index < COLUMNS.len() {
        let column = COLUMNS[index];
        let numeric = if column.numeric { " class=\"num\"" } else { "" };
        if column.group.is_empty() {
            let _ = write!(out, "<th rowspan=\"2\"{numeric}>{}</th>", escape(&names[index]));
            index += 1;
        } else {
            let span = COLUMNS[index..].iter().take_while(|c| c.group == column.group).count();
            let _ = write!(out, "<th colspan=\"{span}\" class=\"group\">{}</th>", escape(column.group));
            index += span;
        }
    }
    out.push_str("</tr>\n<tr>");
    for (_, name) in COLUMNS.iter().zip(&names).filter(|(c, _)| !c.group.is_empty()) {
        let _ = write!(out, "<th class=\"num\">{}</th>", escape(name));
    }
    out.push_str("</tr>\n</thead>\n<tbody>\n");
    for (index, (label, result)) in results.iter().enumerate() {
        out.push_str("<tr>");
        for (column, cell) in COLUMNS.iter().zip(summary_row(label, result)) {
            let mut classes = Vec::new();
            if column.numeric {
                classes.push("num");
            }
            match column.name {
                "Target" => classes.push("target"),
                "Errors" if cell != "0" => classes.push("bad"),
                "Client-bound" if cell == "yes" => classes.push("warn"),
                _ => {}
            }
            let class =
                if classes.is_empty() { String::new() } else { format!(" class=\"{}\"", classes.join(" ")) };
            let swatch = if column.name == "Result" {
                format!("<span class=\"swatch\" style=\"background:{}\"></span>", palette::style(index).color)
            } else {
                String::new()
            };
            let text = if column.name == "Target" { breakable_url(&cell) } else { escape(&cell) };
            let _ = write!(out, "<td{class}>{swatch}{text}</td>");
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n</div>\n<ul class=\"notes\">\n");
    let notes = notes(results);
    if notes.is_empty() {
        out.push_str("<li class=\"info\">No errors, no interruptions, no client-bound runs.</li>\n");
    }
    for (class, label, text) in notes {
        let _ =
            writeln!(out, "<li class=\"{class}\"><strong>{}</strong>: {}</li>", escape(label), escape(&text));
    }
    out.push_str("</ul>\n</section>\n");
}

/// A URL escaped for HTML, with line-break opportunities before its port and path.
fn breakable_url(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let rest = escape(rest).replace(':', "<wbr>:").replace('/', "<wbr>/");
    if scheme.is_empty() { rest } else { format!("{}://{rest}", escape(scheme)) }
}

/// Everything that qualifies a result's numbers: (css class, label, sentence).
fn notes(results: &[(String, RunResult)]) -> Vec<(&'static str, &str, String)> {
    let mut notes = Vec::new();
    for (label, result) in results {
        if let Some(early) = &result.ended_early {
            notes.push((
                "bad",
                label.as_str(),
                format!(
                    "ended early: {}, {:.1} s into the {:.1} s measured window; its rates are over that.",
                    early.reason, result.measured_s, early.planned_measured_s
                ),
            ));
        }
        if let Some(partial) = &result.partial {
            let text = format!("{}: the figures cover those shards only.", partial.describe());
            notes.push(("bad", label.as_str(), text));
        }
        if result.interrupted {
            notes.push(("bad", label.as_str(), "interrupted; the numbers cover only what ran.".to_owned()));
        }
        if let Some(reason) = crate::result::no_request_answered_reason(result) {
            notes.push(("bad", label.as_str(), format!("{reason}.")));
        }
        if !result.summary.errors.is_empty() {
            let errors: Vec<String> = result
                .summary
                .errors
                .iter()
                .map(|(kind, n)| super::text::error_with_detail(result, kind, *n))
                .collect();
            notes.push(("bad", label.as_str(), format!("errors: {}.", errors.join(", "))));
        }
        let recovery = super::recovery::recovery_lines(result);
        if !recovery.is_empty() {
            let text: Vec<String> = recovery.into_iter().map(|(_, text)| text).collect();
            let class = if result.recovery.as_ref().is_some_and(|r| r.not_back > 0) { "bad" } else { "info" };
            notes.push((class, label.as_str(), format!("recovery: {}.", text.join("; "))));
        }
        if let Some(stalls) = super::awaited::stalls_text(result) {
            notes.push(("bad", label.as_str(), format!("stalls: {stalls}.")));
        }
        for warning in super::awaited::warnings(result) {
            notes.push(("warn", label.as_str(), format!("{warning}.")));
        }
        if let Some(warning) = result.client.machine_network.as_ref().and_then(|n| n.warning.as_ref()) {
            notes.push(("warn", label.as_str(), format!("{warning}.")));
        }
        if result.client.bound {
            let reason = result.client.bound_reason.as_deref().unwrap_or("a client worker was saturated");
            notes.push(("warn", label.as_str(), format!("client-bound: {reason}")));
        }
        if !result.server.probed {
            let reason = result.server.unprobed_reason.as_deref().unwrap_or("no samples were taken");
            notes.push(("info", label.as_str(), format!("server not probed: {reason}.")));
        }
    }
    notes
}

pub(super) fn figure(out: &mut String, title: &str, caption: &str, svg: &str) {
    let _ = write!(
        out,
        "<figure>\n<figcaption><h3>{}</h3><p>{}</p></figcaption>\n{svg}</figure>\n",
        escape(title),
        escape(caption)
    );
}

fn charts_section(out: &mut String, charted: &[Charted]) {
    let exchange = super::exchange_of_all(charted.iter().map(|c| c.result));
    out.push_str("<section id=\"charts\">\n<h2>Charts</h2>\n<div class=\"charts\">\n");
    figure(
        out,
        "Throughput over time",
        &format!(
            "{} completed in each second of the run, warm-up included (a final partial second is scaled \
             to a rate).",
            exchange.title()
        ),
        &charts::rate_over_time(charted),
    );
    figure(
        out,
        "Latency over time",
        &format!(
            "Median (dashed) and 99th-percentile {} latency in each second, warm-up included.",
            exchange.one
        ),
        &charts::latency_over_time(charted),
    );
    let dashed =
        charted.iter().any(|c| c.result.summary.latency_uncorrected_us != c.result.summary.latency_us);
    figure(
        out,
        "Latency by percentile",
        if dashed {
            "Round-trip latency at each percentile after warm-up, HdrHistogram style. Dashed: \
             measured from the actual send time, without the coordinated-omission correction."
        } else {
            "Round-trip latency at each percentile after warm-up, HdrHistogram style: each step \
             right is ten times rarer."
        },
        &charts::latency_spectrum(charted),
    );
    figure(
        out,
        "Connection time",
        "Share of connections that finished the TCP connect and WebSocket handshake within a time.",
        &charts::connect_time(charted),
    );
    figure(
        out,
        "Server memory",
        "Resident set size of the server process(es), as sampled by the probe.",
        &charts::server_rss(charted),
    );
    figure(
        out,
        "Server CPU",
        "CPU time the server used per wall-clock second between samples; 100% is one busy core.",
        &charts::server_cpu(charted),
    );
    out.push_str("</div>\n</section>\n");
}

/// The scenario figures of the results that have them, as the terminal report words them.
/// A section (`id`, heading) of each result's `(label, text)` lines, when any result has
/// some; a line without a label continues the one before it.
fn lines_section(
    out: &mut String,
    results: &[(String, RunResult)],
    (id, heading): (&str, &str),
    lines_of: fn(&RunResult) -> Vec<(&'static str, String)>,
) {
    let with_lines: Vec<(&String, Vec<(&str, String)>)> = results
        .iter()
        .map(|(label, result)| (label, lines_of(result)))
        .filter(|(_, lines)| !lines.is_empty())
        .collect();
    if with_lines.is_empty() {
        return;
    }
    let _ = writeln!(out, "<section id=\"{id}\">\n<h2>{heading}</h2>");
    for (label, lines) in with_lines {
        let _ = writeln!(out, "<h3>{}</h3>\n<dl class=\"scenario\">", escape(label));
        for (term, text) in lines {
            let term = escape(term.trim_end_matches(':'));
            let _ = writeln!(out, "<dt>{term}</dt><dd>{}</dd>", escape(&text));
        }
        out.push_str("</dl>\n");
    }
    out.push_str("</section>\n");
}

fn runs_section(out: &mut String, results: &[(String, RunResult)]) {
    out.push_str(
        "<section id=\"runs\">\n<h2>Runs</h2>\n<div class=\"table-wrap\">\n<table>\n<thead>\n<tr>\
         <th>Result</th><th>Started (UTC)</th><th class=\"num\">Elapsed</th><th class=\"num\">Measured</th>\
         <th>Load</th><th>Client machine</th><th>wsbench</th></tr>\n</thead>\n<tbody>\n",
    );
    for (index, (label, result)) in results.iter().enumerate() {
        let law = &result.summary.littles_law;
        let in_flight = if law.in_flight == u64::MAX { "uncapped".to_owned() } else { group(law.in_flight) };
        let machine = &result.machine;
        let cells = [
            utc(result.started_at_unix_ms),
            seconds(result.elapsed_s),
            seconds(result.measured_s),
            format!("{} connections × {in_flight} in flight", group(law.connections)),
            format!("{}, {} cores, {}", machine.cpu_model, machine.cores, machine.kernel),
            result.wsbench_version.clone(),
        ];
        let _ = write!(
            out,
            "<tr><td><span class=\"swatch\" style=\"background:{}\"></span>{}</td>",
            palette::style(index).color,
            escape(label)
        );
        for (i, cell) in cells.iter().enumerate() {
            let class = if i == 1 || i == 2 { " class=\"num\"" } else { "" };
            let _ = write!(out, "<td{class}>{}</td>", escape(cell));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n</div>\n</section>\n");
}

/// `2025-01-01 00:00:00` from Unix milliseconds (proleptic Gregorian calendar, UTC).
fn utc(unix_ms: u64) -> String {
    let secs = unix_ms / 1000;
    let (days, rest) = ((secs / 86_400) as i64, secs % 86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}", rest / 3600, rest / 60 % 60, rest % 60)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    #[test]
    fn utc_dates_are_civil() {
        assert_eq!(utc(0), "1970-01-01 00:00:00");
        assert_eq!(utc(1_735_689_600_000), "2025-01-01 00:00:00");
        assert_eq!(utc(951_825_600_000), "2000-02-29 12:00:00");
    }

    #[test]
    fn labels_and_urls_are_escaped() {
        let mut result = RunResult::from_outcome(&fixture::closed_loop());
        result.target.url = "ws://x/<script>".to_owned();
        let page = render_html(&[("<b>run</b>".to_owned(), result)]).unwrap();
        assert!(!page.contains("<script>") && !page.contains("<b>run</b>"));
        assert!(page.contains("&lt;b&gt;run&lt;/b&gt;") && page.contains("ws://x<wbr>/&lt;script&gt;"));
    }

    #[test]
    fn one_result_has_no_comparison_and_charts_say_when_empty() {
        let result = RunResult::from_outcome(&fixture::open_loop_troubled());
        let page = render_html(&[("t".to_owned(), result)]).unwrap();
        assert!(!page.contains("data-chart=\"compare-"));
        assert!(page.contains("<svg data-chart=\"server-rss\" data-empty=\"true\""));
        assert!(page.contains("Server not probed (t: the target is on another host)."));
        assert!(page.contains("<svg data-chart=\"rate-over-time\" class=\"chart\""));
    }

    #[test]
    fn page_loads_nothing_from_elsewhere() {
        let results: Vec<(String, RunResult)> = fixture::all()
            .into_iter()
            .map(|(name, outcome)| (name.to_owned(), RunResult::from_outcome(&outcome)))
            .collect();
        let page = render_html(&results).unwrap();
        for forbidden in ["<script", "<link", "src=", "@import", "http://", "https://"] {
            assert!(!page.contains(forbidden), "the page contains {forbidden}");
        }
        // `url(#id)` names a pattern inside the page (the hatching); any other url( loads.
        assert!(!page.replace("url(#hatch-", "").contains("url("), "the page loads a url()");
        assert_eq!(page.matches("<svg data-chart=\"compare-").count(), 4);
    }
}
