//! Everything wsbench shows people or scripts, in one layer: `wsbench report FILE...` (a
//! compact terminal report, a self-contained HTML page with charts, a Markdown table, the
//! JSON, a CSV table) and what `run`, `rtt`, `compare`, `merge` and `--find-max-rate` print.
//! The measuring modules return data; each output is its own submodule, numbers are
//! formatted by [`crate::units::format`] alone. This module reads the files and dispatches by their kind
//! (see [`input`]).

mod awaited;
mod bars;
mod charts;
mod compare;
mod compare_recovery;
mod endpoint;
mod escape;

mod html;
pub mod input;
mod memory;
mod merge;
mod palette;
mod recovery;
mod rtt;
mod search;
mod stages;
mod svg;
mod sweep;
mod sweep_page;
mod table;
mod text;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::result::{RunResult, write_atomically};

pub use compare::{Row as CompareRow, median_results, median_run, render_compare_table, write_compare_html};
pub use html::{render_html, render_html_page};
pub use input::{Input, ReportError, read_input, read_inputs};
pub use merge::render_merge;
pub use rtt::{render_rtt, render_rtt_file};
pub use search::render_search;
pub use sweep::render_sweep;
pub use sweep_page::render_sweep_page;
pub use table::{render_csv, render_md};
pub use text::{render_text, render_text_with};

/// The scenario's own lines (`(label, text)`), shown by the terminal report and the HTML
/// page alike; none for a scenario without figures of its own.
fn scenario_lines(result: &RunResult) -> Vec<(&'static str, String)> {
    crate::scenario::of_result(result).map_or_else(Vec::new, |scenario| scenario.report_lines(result))
}

/// What the exchanges of all `results` are called: their scenario's word when they share
/// one, else "exchanges".
fn exchange_of_all<'a>(results: impl Iterator<Item = &'a RunResult>) -> crate::config::Exchange {
    let mut words = results.map(exchange);
    let first = words.next().unwrap_or(crate::config::Exchange::ROUND_TRIP);
    match words.all(|other| other == first) {
        true => first,
        false => crate::config::Exchange { one: "exchange", many: "exchanges" },
    }
}

/// What one of the result's exchanges is called (round trips for a scenario this wsbench
/// does not know).
fn exchange(result: &RunResult) -> crate::config::Exchange {
    crate::scenario::of_result(result)
        .map_or(crate::config::Exchange::ROUND_TRIP, |scenario| scenario.exchange())
}

/// How `wsbench report` renders its files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ReportFormat {
    /// The terminal report (of a run), table (of an rtt or a search).
    #[default]
    Text,
    /// The file itself, checked and pretty-printed.
    Json,
    /// The summary table as CSV, one line per result file.
    Csv,
    /// The summary table as Markdown, one row per result file.
    Md,
}

/// Reads every result file and labels it with its file stem (the whole path when two files
/// share a stem), as the HTML, CSV and Markdown tables name results. `what` names the
/// output in the error for a file of another kind.
pub fn read_labelled(files: &[PathBuf], what: &'static str) -> Result<Vec<(String, RunResult)>, ReportError> {
    let stem = |path: &Path| path.file_stem().map(|s| s.to_string_lossy().into_owned());
    let mut stems: BTreeMap<Option<String>, usize> = BTreeMap::new();
    for path in files {
        *stems.entry(stem(path)).or_default() += 1;
    }
    files
        .iter()
        .map(|path| {
            let label = match stem(path) {
                Some(stem) if stems[&Some(stem.clone())] == 1 => stem,
                _ => path.display().to_string(),
            };
            Ok((label, read_input(path)?.into_run(path, what)?))
        })
        .collect()
}

/// Renders result `files` as one HTML page (see [`render_html_page`]) whose footer names
/// `command`, and writes it to `out` atomically.
pub fn write_html_report(files: &[PathBuf], out: &Path, command: &str) -> Result<(), ReportError> {
    let inputs = read_inputs(files)?;
    if inputs.iter().all(|input| matches!(input, Input::Sweep(_))) {
        let sweeps: Vec<_> = inputs.into_iter().filter_map(Input::into_sweep).collect();
        return write_sweep_html(&sweeps, out, command);
    }
    let page = render_html_page(&read_labelled(files, "--html")?, &[], command)?;
    write_atomically(out, |writer| writer.write_all(page.as_bytes()))?;
    Ok(())
}

/// Renders `sweeps` as one page (overlaid when several, see [`render_sweep_page`]) whose
/// footer names `command`, and writes it to `out` atomically: `sweep --html`,
/// `compare --sweep --html`.
pub fn write_sweep_html(
    sweeps: &[crate::result::sweep::Sweep],
    out: &Path,
    command: &str,
) -> Result<(), ReportError> {
    let page = render_sweep_page(sweeps, command);
    write_atomically(out, |writer| writer.write_all(page.as_bytes()))?;
    Ok(())
}

/// Renders one run's `result`, labelled `label`, as the HTML page (see [`render_html_page`])
/// whose footer names `command`, and writes it to `out` atomically: `run --html`.
pub fn write_run_html(label: &str, result: &RunResult, out: &Path, command: &str) -> Result<(), ReportError> {
    let page = render_html_page(&[(label.to_owned(), result.clone())], &[], command)?;
    write_atomically(out, |writer| writer.write_all(page.as_bytes()))?;
    Ok(())
}

/// Renders every file in turn, without colours. See [`report_command_with`].
pub fn report_command(files: &[PathBuf], format: ReportFormat) -> Result<String, ReportError> {
    report_command_with(files, format, false)
}

/// Renders every file in turn; stops at the first file that cannot be read. The files must
/// be of one kind (result, rtt or search files, see [`input`]).
///
/// Text: one report or table per file, each headed `==> FILE <==` when there are several.
/// Json: each file parsed and pretty-printed back in the file's field order (fields this
/// wsbench does not know are dropped), one document after another, as `jq` reads them.
/// `color` adds ANSI colours to the reports of runs.
/// Csv and Md (result files only): one table with a row per file, labelled by
/// [`read_labelled`].
pub fn report_command_with(
    files: &[PathBuf],
    format: ReportFormat,
    color: bool,
) -> Result<String, ReportError> {
    match format {
        ReportFormat::Csv => return Ok(render_csv(&read_labelled(files, "--format csv")?)),
        ReportFormat::Md => return Ok(render_md(&read_labelled(files, "--format md")?)),
        ReportFormat::Text | ReportFormat::Json => {}
    }
    let inputs = read_inputs(files)?;
    let mut out = String::new();
    for (index, (path, input)) in files.iter().zip(&inputs).enumerate() {
        if format == ReportFormat::Json {
            out.push_str(&input.to_json());
            continue;
        }
        if files.len() > 1 {
            if index > 0 {
                out.push('\n');
            }
            out.push_str(&format!("==> {} <==\n", path.display()));
        }
        out.push_str(&match input {
            Input::Run(result) => render_text_with(result, color),
            Input::Rtt(file) => render_rtt_file(file),
            Input::Search(file) => render_search(&file.search),
            Input::Sweep(file) => render_sweep(&file.sweep),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;
    use crate::result::SCHEMA_VERSION;

    fn written(name: &str) -> (PathBuf, RunResult) {
        let dir = std::env::temp_dir().join(format!("wsbench-report-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let result = RunResult::from_outcome(&fixture::closed_loop());
        let path = dir.join(name);
        result.write_json(&path).unwrap();
        (path, result)
    }

    #[test]
    fn json_format_prints_the_file_back() {
        let (path, result) = written("json-back.json");
        let out = report_command(std::slice::from_ref(&path), ReportFormat::Json).unwrap();
        let parsed: RunResult = serde_json::from_str(&out).unwrap();
        assert_eq!(parsed, result);
        assert!(out.starts_with(&format!("{{\n  \"schema_version\": {SCHEMA_VERSION},")), "{}", &out[..40]);
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    #[test]
    fn text_format_heads_each_of_several_files() {
        let (first, result) = written("several-1.json");
        let (second, _) = written("several-2.json");
        let out = report_command(&[first.clone(), second.clone()], ReportFormat::Text).unwrap();
        assert!(out.starts_with(&format!("==> {} <==\n", first.display())));
        assert!(out.contains(&format!("\n\n==> {} <==\n", second.display())));
        assert_eq!(out.matches(&render_text(&result)).count(), 2);
        let single = report_command(std::slice::from_ref(&first), ReportFormat::Text).unwrap();
        assert_eq!(single, render_text(&result));
        std::fs::remove_dir_all(first.parent().unwrap()).unwrap();
        std::fs::remove_dir_all(second.parent().unwrap()).unwrap();
    }

    #[test]
    fn labels_are_file_stems_unless_two_files_share_one() {
        let (first, _) = written("label-a.json");
        let (second, _) = written("label-b.json");
        let labels: Vec<String> = read_labelled(&[first.clone(), second.clone()], "md")
            .unwrap()
            .into_iter()
            .map(|(l, _)| l)
            .collect();
        assert_eq!(labels, ["label-a", "label-b"]);
        let same = read_labelled(&[first.clone(), first.clone()], "md").unwrap();
        assert_eq!(same[0].0, first.display().to_string());
        let md = report_command(std::slice::from_ref(&first), ReportFormat::Md).unwrap();
        assert!(md.lines().nth(2).unwrap().starts_with("| label-a | echo |"), "{md}");
        let csv = report_command(std::slice::from_ref(&second), ReportFormat::Csv).unwrap();
        assert!(csv.lines().nth(1).unwrap().starts_with("label-b,echo,"), "{csv}");
        std::fs::remove_dir_all(first.parent().unwrap()).unwrap();
        std::fs::remove_dir_all(second.parent().unwrap()).unwrap();
    }

    #[test]
    fn html_report_is_written_atomically() {
        let (path, _) = written("html-src.json");
        let out = path.with_file_name("report.html");
        write_html_report(std::slice::from_ref(&path), &out, "wsbench report --html x").unwrap();
        let page = std::fs::read_to_string(&out).unwrap();
        assert!(page.starts_with("<!DOCTYPE html>") && page.contains("html-src"));
        let leftovers: Vec<_> = std::fs::read_dir(out.parent().unwrap())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().contains(".tmp-"))
            .collect();
        assert!(leftovers.is_empty());
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    #[test]
    fn unreadable_file_is_named_in_the_error() {
        let missing = PathBuf::from("/nonexistent/wsbench/result.json");
        let error = report_command(std::slice::from_ref(&missing), ReportFormat::Text).unwrap_err();
        assert!(error.to_string().contains("/nonexistent/wsbench/result.json"), "{error}");
    }
}
