//! A diff as people and tools read it: a benchstat-like terminal table, a Markdown table for
//! a pull-request comment, and JSON (`schema/diff.schema.json`). Every renderer reads the
//! same [`Diff`]; numbers go through the project's one unit formatter.

use super::Diff;
use super::figures::Unit;
use super::verdict::{Method, Row, Verdict};
use crate::units::format;

/// The terminal table: one line per figure, then how it was decided.
pub fn text(diff: &Diff) -> String {
    let mut out = String::new();
    for warning in &diff.warnings {
        out.push_str(&format!("warning: {warning} (compared anyway: --force)\n"));
    }
    out.push_str(&format!("{}\n\n", headline(diff)));
    let header = ["", "base", "new", "change", &interval_title(diff), "p", "verdict"];
    let mut lines: Vec<[String; 7]> = vec![header.map(str::to_owned)];
    lines.extend(diff.rows.iter().map(|row| cells(diff, row)));
    let widths: Vec<usize> =
        (0..7).map(|c| lines.iter().map(|l| l[c].chars().count()).max().unwrap_or(0)).collect();
    for line in &lines {
        let mut text = format!("{:<w$}", line[0], w = widths[0]);
        for (column, cell) in line.iter().enumerate().skip(1) {
            let pad = widths[column] - cell.chars().count();
            match column {
                6 => text.push_str(&format!("   {cell}")),
                _ => text.push_str(&format!("  {}{cell}", " ".repeat(pad))),
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    }
    out.push('\n');
    for note in notes(diff) {
        out.push_str(&note);
        out.push('\n');
    }
    out.push_str(&gates(diff));
    out
}

/// A Markdown table for a pull-request comment.
pub fn markdown(diff: &Diff) -> String {
    let mut out = format!("**wsbench diff**: {}\n\n", headline(diff));
    for warning in &diff.warnings {
        out.push_str(&format!("> **warning**: {warning} (compared anyway: `--force`)\n\n"));
    }
    out.push_str(&format!("| figure | base | new | change | {} | p | verdict |\n", interval_title(diff)));
    out.push_str("|---|---:|---:|---:|---:|---:|---|\n");
    for row in &diff.rows {
        let [label, base, new, change, interval, p, verdict] = cells(diff, row);
        let verdict = match row.verdict {
            Verdict::Better | Verdict::Worse => format!("**{verdict}**"),
            _ => verdict,
        };
        out.push_str(&format!("| {label} | {base} | {new} | {change} | {interval} | {p} | {verdict} |\n"));
    }
    out.push('\n');
    for note in notes(diff) {
        out.push_str(&format!("{note}  \n"));
    }
    out.push_str(&gates(diff));
    out
}

/// The diff as pretty JSON, with a closing newline.
pub fn json(diff: &Diff) -> String {
    let mut text = serde_json::to_string_pretty(diff).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    text.push('\n');
    text
}

fn headline(diff: &Diff) -> String {
    format!(
        "{} vs {} of {}",
        format::plural(diff.base.len() as u64, "base run", "base runs"),
        format::plural(diff.new.len() as u64, "new run", "new runs"),
        diff.scenario,
    )
}

fn interval_title(diff: &Diff) -> String {
    format!("{:.0}% interval", (1.0 - diff.alpha) * 100.0)
}

/// The cells of one figure's line: label, base, new, change, interval, p (Holm), verdict.
fn cells(diff: &Diff, row: &Row) -> [String; 7] {
    let unit = row.definition.unit;
    let label = label(diff, row);
    let (change, interval) = match (row.change, row.shift) {
        (Some(change), _) => (
            signed_percent(change.estimate),
            format!("[{}, {}]", signed_percent(change.low), signed_percent(change.high)),
        ),
        (None, Some(shift)) => (
            signed(unit, shift.estimate),
            format!("[{}, {}]", signed(unit, shift.low), signed(unit, shift.high)),
        ),
        (None, None) if row.verdict == Verdict::TooLittleData => (String::new(), String::new()),
        (None, None) => ("?".to_owned(), String::new()),
    };
    let p = match (row.method, row.p_holm) {
        (Some(Method::Identical), _) => "=".to_owned(),
        (_, Some(p)) => format!("{p:.3}"),
        (_, None) => String::new(),
    };
    let verdict = verdict_word(row.verdict);
    [label, value(unit, row.base), value(unit, row.new), change, interval, p, verdict.to_owned()]
}

/// How the table names a figure: the rate by what the scenario's exchanges are called.
fn label(diff: &Diff, row: &Row) -> String {
    match row.figure {
        "round_trips_per_sec" => format!("{}/s", diff.exchanges),
        _ => row.definition.label.to_owned(),
    }
}

fn verdict_word(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Better => "better",
        Verdict::Worse => "worse",
        Verdict::NoDifference => "no difference",
        Verdict::Untested => "untested",
        Verdict::TooLittleData => "too little data",
    }
}

/// A value in its figure's unit.
pub fn value(unit: Unit, x: f64) -> String {
    match unit {
        Unit::PerSec => format::rate(x),
        Unit::Micros if x.abs() < 100.0 => format!("{} µs", format::sig3(x.abs())),
        Unit::Micros => format::micros(x.abs()),
        Unit::PerMillion => format::sig3(x.abs()),
        Unit::Bytes => format::bytes(x.abs().round() as u64),
    }
}

fn signed(unit: Unit, x: f64) -> String {
    format!("{}{}", if x < 0.0 { "-" } else { "+" }, value(unit, x))
}

fn signed_percent(fraction: f64) -> String {
    let percent = fraction * 100.0;
    match percent.abs() < 9.95 {
        true => format!("{percent:+.1}%"),
        false => format!("{percent:+.0}%"),
    }
}

/// How the verdicts were reached, and what was left untested.
fn notes(diff: &Diff) -> Vec<String> {
    let tested = diff.rows.iter().filter(|row| row.p_value.is_some()).count();
    let used = |method| diff.rows.iter().any(|row| row.method == Some(method));
    let mut notes = vec![match tested {
        0 => "no figure was tested, so no change counts".to_owned(),
        _ => format!(
            "a change counts when p < {} (Holm-corrected over {}) and its whole interval lies outside the \
             noise band of ±{}% of base",
            diff.alpha,
            format::plural(tested as u64, "figure", "figures"),
            diff.noise * 100.0
        ),
    }];
    if used(Method::MannWhitney) {
        notes.push(
            "p: Mann–Whitney U over the runs; interval: Hodges–Lehmann shift; base, new: medians".to_owned(),
        );
    }
    if used(Method::BlockBootstrap) {
        notes.push(format!(
            "p, interval: block bootstrap of each run's per-second values ({} resamples, fixed seed) around the \
             medians; with fewer than {} runs a side the variation from run to run is not seen: repeat the runs \
             for a verdict that covers it",
            format::group(super::bootstrap::RESAMPLES as u64),
            super::verdict::MIN_RUNS_FOR_RANK_TEST
        ));
    }
    for verdict in [Verdict::TooLittleData, Verdict::Untested] {
        let undecided = diff.rows.iter().filter(|row| row.verdict == verdict);
        let mut reasons: Vec<(&str, Vec<String>)> = Vec::new();
        for row in undecided {
            let reason = row.reason.as_deref().unwrap_or("");
            match reasons.iter_mut().find(|(known, _)| *known == reason) {
                Some((_, labels)) => labels.push(label(diff, row)),
                None => reasons.push((reason, vec![label(diff, row)])),
            }
        }
        for (reason, labels) in reasons {
            notes.push(format!("{} ({}): {reason}", verdict_word(verdict), labels.join(", ")));
        }
    }
    notes
}

fn gates(diff: &Diff) -> String {
    let mut out = String::new();
    for gate in &diff.fail_on {
        let status = if gate.failed { "FAILED" } else { "passed" };
        let why = match (gate.change, gate.verdict) {
            (Some(change), Some(verdict)) => {
                format!("change {}, {}", signed_percent(change), verdict_word(verdict))
            }
            (None, Some(verdict @ (Verdict::TooLittleData | Verdict::Untested))) => {
                format!("not judged: {}", verdict_word(verdict))
            }
            _ => "not measured by these runs".to_owned(),
        };
        out.push_str(&format!("--fail-on {}: {status} ({why})\n", gate.expression));
    }
    out
}
