//! The HTML page of one sweep or of several overlaid (`compare --sweep`, or `wsbench
//! report --html` of sweep files): a table of steps per sweep, then two charts, each sweep
//! in its own colour: the rate of exchanges against load with the measured steps, the USL curve
//! fitted to them (dashed) and its predicted peak (a diamond); and latency (p99 solid,
//! p50 dashed) against that rate with each knee ringed. Steps left out of the analysis
//! (client-bound) are hollow dots. Then the analysis in words, as the terminal has it.
//! Self-contained and deterministic like the report page (`html`), with whose style it is
//! drawn.

use std::fmt::Write as _;

use super::escape::escape;
use super::html::{close_page, figure, open_page};
use super::palette::{self, SECONDARY_DASH};
use super::svg::{Axis, Marker, Scale, Series, empty, marked_line_chart};
use super::sweep::{cells, exchanges, fit_lines, headline, holdout_words, knee_words, load_words};
use crate::curve::knee::Knee;
use crate::result::LatencyStats;
use crate::result::sweep::{Sweep, Varied};
use crate::units::format::{group, rate, tick_micros, tick_rate};

/// Points of a fitted curve drawn between its ends.
const CURVE_POINTS: usize = 64;

/// The page of `sweeps` (one or more, overlaid), its footer naming `command`.
pub fn render_sweep_page(sweeps: &[Sweep], command: &str) -> String {
    let labels: Vec<&str> = sweeps.iter().map(|s| s.label.as_str()).collect();
    let mut out = String::new();
    open_page(&mut out, &format!("wsbench sweep: {}", labels.join(", ")));
    let sub = match sweeps {
        [one] => headline(one),
        _ => format!("{} servers swept, each in its own colour: {}", sweeps.len(), labels.join(", ")),
    };
    let _ =
        writeln!(out, "<header>\n<h1>wsbench sweep</h1>\n<p class=\"sub\">{}</p>\n</header>", escape(&sub));
    out.push_str("<section id=\"curves\">\n<h2>Curves</h2>\n<div class=\"charts\">\n");
    let what = sweeps.first().map_or("exchanges", exchanges);
    figure(
        &mut out,
        &format!("{} per second against load", capitalised(what)),
        &format!(
            "{what} per second at each step (dots; hollow: left out of the fit), the Universal Scalability Law \
             fitted to them (dashed) and its predicted peak N* (diamond)."
        ),
        &rate_chart(sweeps),
    );
    figure(
        &mut out,
        &format!("Latency against {what}/s"),
        &format!(
            "p99 (solid) and p50 (dashed) of each step against its {what} per second; the knee Kneedle finds on \
             each is ringed."
        ),
        &latency_chart(sweeps),
    );
    out.push_str("</div>\n</section>\n");
    for (index, sweep) in sweeps.iter().enumerate() {
        steps_section(&mut out, index, sweep);
    }
    close_page(&mut out, command);
    out
}

/// `round trips` → `Round trips`.
fn capitalised(words: &str) -> String {
    let mut chars = words.chars();
    chars.next().map_or_else(String::new, |first| first.to_uppercase().chain(chars).collect())
}

fn load_axis(sweeps: &[Sweep]) -> Axis {
    let label = match sweeps.first().map(|s| s.varied) {
        Some(Varied::Rate) => "offered rate (/s)",
        _ => "connections",
    };
    Axis { label: label.to_owned(), scale: Scale::Log, format: tick_rate }
}

fn rate_chart(sweeps: &[Sweep]) -> String {
    let mut series = Vec::new();
    let mut markers = Vec::new();
    for (index, sweep) in sweeps.iter().enumerate() {
        let style = palette::style(index);
        let points: Vec<(f64, f64)> = sweep.steps.iter().map(|s| (s.load, s.throughput_per_sec)).collect();
        series.push(Series {
            label: format!("{} measured", sweep.label),
            color: style.color,
            dash: style.dash,
            points,
        });
        for step in sweep.steps.iter().filter(|s| s.excluded.is_some()) {
            markers.push(Marker {
                kind: "excluded",
                label: format!(
                    "{}: {} left out ({})",
                    sweep.label,
                    load_words(sweep.varied, step.load),
                    step.excluded.as_deref().unwrap_or("")
                ),
                color: style.color,
                at: (step.load, step.throughput_per_sec),
            });
        }
        let Some(fitted) = sweep.analysis.usl.fitted() else { continue };
        let model = fitted.model();
        let low = sweep.steps.iter().map(|s| s.load).fold(f64::INFINITY, f64::min).max(1.0);
        let measured_top = sweep.steps.iter().map(|s| s.load).fold(1.0, f64::max);
        // The curve runs past the steps to its peak, when that is near (within 4×).
        let top =
            fitted.peak.map_or(measured_top, |p| p.connections.value.clamp(measured_top, measured_top * 4.0));
        let curve: Vec<(f64, f64)> = (0..CURVE_POINTS)
            .map(|i| low * (top / low).powf(i as f64 / (CURVE_POINTS - 1) as f64))
            .map(|n| (n, model.rate_at(n)))
            .collect();
        series.push(Series {
            label: format!("{} USL fit", sweep.label),
            color: style.color,
            dash: Some(SECONDARY_DASH),
            points: curve,
        });
        if let Some(peak) = fitted.peak.filter(|p| p.connections.value <= measured_top * 4.0) {
            markers.push(Marker {
                kind: "peak",
                label: format!(
                    "{}: predicted peak N* ≈ {} connections, {}/s",
                    sweep.label,
                    group(peak.connections.value.round() as u64),
                    rate(peak.throughput_per_sec)
                ),
                color: style.color,
                at: (peak.connections.value, peak.throughput_per_sec),
            });
        }
    }
    if series.iter().all(|s| s.points.is_empty()) {
        return empty("sweep-rate", "Rate against load", "no step was measured");
    }
    let y = Axis {
        label: format!("{}/s", sweeps.first().map_or("exchanges", exchanges)),
        scale: Scale::Linear,
        format: tick_rate,
    };
    marked_line_chart("sweep-rate", "Rate against load", load_axis(sweeps), y, &series, &markers)
}

fn latency_chart(sweeps: &[Sweep]) -> String {
    let mut series = Vec::new();
    let mut markers = Vec::new();
    for (index, sweep) in sweeps.iter().enumerate() {
        let style = palette::style(index);
        let line = |latency: fn(&LatencyStats) -> u64| -> Vec<(f64, f64)> {
            let measured = sweep.steps.iter().filter(|s| s.latency_us.count > 0);
            measured.map(|s| (s.throughput_per_sec, latency(&s.latency_us) as f64)).collect()
        };
        series.push(Series {
            label: format!("{} p99", sweep.label),
            color: style.color,
            dash: style.dash,
            points: line(|l| l.p99),
        });
        series.push(Series {
            label: format!("{} p50", sweep.label),
            color: style.color,
            dash: Some(SECONDARY_DASH),
            points: line(|l| l.p50),
        });
        for (statistic, knee) in [("p99", &sweep.analysis.knee_p99), ("p50", &sweep.analysis.knee_p50)] {
            let Knee::Found(found) = knee else { continue };
            let step = &sweep.steps[found.step];
            let latency = if statistic == "p99" { step.latency_us.p99 } else { step.latency_us.p50 };
            markers.push(Marker {
                kind: "knee",
                label: format!(
                    "{}: knee of {statistic}, {}",
                    sweep.label,
                    knee_words(sweep, knee, statistic)
                ),
                color: style.color,
                at: (step.throughput_per_sec, latency as f64),
            });
        }
    }
    if series.iter().all(|s| s.points.is_empty()) {
        return empty("sweep-latency", "Latency against rate", "no step measured a latency");
    }
    let x = Axis {
        label: format!("{}/s", sweeps.first().map_or("exchanges", exchanges)),
        scale: Scale::Linear,
        format: tick_rate,
    };
    let y = Axis { label: "latency".to_owned(), scale: Scale::Log, format: tick_micros };
    marked_line_chart("sweep-latency", "Latency against rate", x, y, &series, &markers)
}

/// One sweep's table of steps (`table.summary`, a row per step) and its analysis in words.
fn steps_section(out: &mut String, index: usize, sweep: &Sweep) {
    let style = palette::style(index);
    let _ = writeln!(
        out,
        "<section class=\"sweep\" data-sweep=\"{}\">\n<h2><span class=\"swatch\" style=\"background:{}\"></span>{}</h2>\n<p class=\"sub\">{}</p>",
        escape(&sweep.label),
        style.color,
        escape(&sweep.label),
        escape(&headline(sweep))
    );
    let load = match sweep.varied {
        Varied::Connections => "connections",
        Varied::Rate => "offered/s",
    };
    let _ = writeln!(
        out,
        "<div class=\"table-wrap\"><table class=\"summary\">\n<thead><tr><th class=\"num\">step</th><th class=\"num\">{load}</th>\
         <th class=\"num\">{}/s</th><th class=\"num\">p50</th><th class=\"num\">p90</th><th class=\"num\">p99</th>\
         <th class=\"num\">p99.9</th><th class=\"num\">errors</th><th class=\"num\">server CPU</th>\
         <th class=\"num\">server RSS</th><th>note</th></tr></thead>\n<tbody>",
        escape(exchanges(sweep))
    );
    for (i, step) in sweep.steps.iter().enumerate() {
        let _ = write!(out, "<tr><td class=\"num\">{}</td>", i + 1);
        for (column, cell) in cells(step, sweep.varied).iter().enumerate() {
            let class = if column == 6 && step.errors > 0 { "num bad" } else { "num" };
            let _ = write!(out, "<td class=\"{class}\">{}</td>", escape(cell));
        }
        let note = step.excluded.as_deref().map(|why| format!("left out: {why}")).unwrap_or_default();
        let _ = writeln!(out, "<td>{}</td></tr>", escape(&note));
    }
    out.push_str("</tbody></table></div>\n<ul class=\"notes analysis\">\n");
    let mut lines: Vec<String> = super::sweep::busy_machine(sweep).into_iter().collect();
    lines.extend(
        [("p99", &sweep.analysis.knee_p99), ("p50", &sweep.analysis.knee_p50)]
            .iter()
            .map(|(statistic, knee)| format!("knee of {statistic}: {}", knee_words(sweep, knee, statistic))),
    );
    lines.extend(fit_lines(sweep, &sweep.analysis.usl).lines().map(|line| line.trim().to_owned()));
    lines.extend(sweep.analysis.holdout.as_ref().map(holdout_words));
    lines.extend(
        sweep
            .thresholds
            .iter()
            .map(|t| format!("threshold {}: {}", t.expression, if t.passed { "passed" } else { "FAILED" })),
    );
    for line in lines {
        let _ = writeln!(out, "<li class=\"info\">{}</li>", escape(&line));
    }
    out.push_str("</ul>\n</section>\n");
}
