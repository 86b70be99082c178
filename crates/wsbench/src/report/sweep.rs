//! What `wsbench sweep` prints (and `wsbench report` of a sweep file): a row per step
//! (load, throughput, p50/p90/p99/p99.9, errors, the server's CPU and memory, and why a
//! step was left out of the analysis), then the knees, the Universal Scalability Law fit
//! or why there is none, the hold-out, and the thresholds. The HTML page of the same file
//! is `sweep_page`.

use std::fmt::Write as _;

use crate::curve::knee::Knee;
use crate::curve::usl::{Estimate, Fit, Fitted, Holdout};
use crate::result::sweep::{Sweep, SweepStep, Varied};
use crate::units::format::{group, mib_tight, millis_fixed, rate};

/// What one of the sweep's exchanges is called, many of them.
pub(super) fn exchanges(sweep: &Sweep) -> &'static str {
    crate::scenario::by_name(&sweep.scenario).map_or("exchanges", |scenario| scenario.exchange().many)
}

/// A step's load as words: `1,000 connections`, `20,000/s offered`.
pub(super) fn load_words(varied: Varied, load: f64) -> String {
    match varied {
        Varied::Connections => crate::units::format::plural(load as u64, "connection", "connections"),
        Varied::Rate => format!("{}/s offered", rate(load)),
    }
}

/// The first line: what was swept, over which loads, how each step ran.
pub(super) fn headline(sweep: &Sweep) -> String {
    let (first, last) =
        (sweep.planned.first().copied().unwrap_or(0.0), sweep.planned.last().copied().unwrap_or(0.0));
    let loop_kind = match (sweep.varied, sweep.closed_loop) {
        (Varied::Rate, _) => "open loop",
        (Varied::Connections, true) => "closed loop",
        (Varied::Connections, false) => "each connection at its interval",
    };
    format!(
        "sweep of {} against {}: {} to {} in {} steps ({loop_kind}; each step {} s warm-up + {} s measured)",
        sweep.scenario,
        sweep.label,
        load_words(sweep.varied, first),
        load_words(sweep.varied, last),
        sweep.planned.len(),
        sweep.warmup_s,
        sweep.duration_s
    )
}

/// The table, the analysis and the thresholds, for the terminal.
pub fn render_sweep(sweep: &Sweep) -> String {
    let mut out = headline(sweep);
    out.push('\n');
    let load = match sweep.varied {
        Varied::Connections => "connections",
        Varied::Rate => "offered/s",
    };
    let _ = writeln!(
        out,
        "{:>4}  {:>11}  {:>13}  {:>9}  {:>9}  {:>9}  {:>9}  {:>7}  {:>10}  {:>10}",
        "step",
        load,
        format!("{}/s", exchanges(sweep)),
        "p50",
        "p90",
        "p99",
        "p99.9",
        "errors",
        "server CPU",
        "server RSS"
    );
    for (index, step) in sweep.steps.iter().enumerate() {
        out.push_str(&row(index, step, sweep.varied));
    }
    if let Some(busy) = busy_machine(sweep) {
        let _ = writeln!(out, "{busy}");
    }
    if !sweep.steps.is_empty() && sweep.usable().next().is_none() {
        out.push_str(
            "every step failed: none measured an exchange the analysis could use (see each step's errors)\n",
        );
    }
    if sweep.steps.len() < sweep.planned.len() {
        let _ = writeln!(out, "[{} of {} steps measured]", sweep.steps.len(), sweep.planned.len());
    }
    for (statistic, knee) in [("p99", &sweep.analysis.knee_p99), ("p50", &sweep.analysis.knee_p50)] {
        let _ = writeln!(out, "knee of {statistic}: {}", knee_words(sweep, knee, statistic));
    }
    out.push_str(&fit_lines(sweep, &sweep.analysis.usl));
    if let Some(holdout) = &sweep.analysis.holdout {
        let _ = writeln!(out, "{}", holdout_words(holdout));
    }
    for threshold in &sweep.thresholds {
        let value = threshold
            .value
            .map_or_else(|| "no value".to_owned(), |v| format!("{}", (v * 1000.0).round() / 1000.0));
        let verdict = if threshold.passed { "passed" } else { "FAILED" };
        let _ = writeln!(out, "threshold {}: {verdict} ({value})", threshold.expression);
    }
    if sweep.interrupted {
        out.push_str("[INTERRUPTED: the sweep ended early]\n");
    }
    out
}

/// How busy the machine was during the steps, when other processes took more than wsbench
/// tolerates during any of them.
pub(super) fn busy_machine(sweep: &Sweep) -> Option<String> {
    let loads: Vec<f64> = sweep
        .steps
        .iter()
        .filter_map(|step| step.result.client.machine_load.as_ref())
        .filter(|load| load.busy.is_some())
        .map(|load| load.others_cores)
        .collect();
    let low = loads.iter().copied().reduce(f64::min)?;
    let high = loads.iter().copied().fold(low, f64::max);
    Some(format!(
        "the machine was busy during {} of {} steps: other processes used {low:.2} to {high:.2} cores; \
         the figures include that contention",
        loads.len(),
        sweep.steps.len()
    ))
}

/// A step's cells after its number, as both the table and the page show them: load,
/// throughput, p50, p90, p99, p99.9, errors, server CPU, server RSS.
pub(super) fn cells(step: &SweepStep, varied: Varied) -> [String; 9] {
    let ms = |us: u64| millis_fixed(us as f64);
    let load = match varied {
        Varied::Connections => group(step.load as u64),
        Varied::Rate => rate(step.load),
    };
    [
        load,
        rate(step.throughput_per_sec),
        ms(step.latency_us.p50),
        ms(step.latency_us.p90),
        ms(step.latency_us.p99),
        ms(step.latency_us.p999),
        group(step.errors),
        step.server_cpu_percent.map_or_else(|| "-".to_owned(), |cpu| format!("{cpu:.0}%")),
        step.server_rss_bytes.map_or_else(|| "-".to_owned(), mib_tight),
    ]
}

fn row(index: usize, step: &SweepStep, varied: Varied) -> String {
    let [load, per_sec, p50, p90, p99, p999, errors, cpu, rss] = cells(step, varied);
    let note = step.excluded.as_deref().map(|why| format!("  left out: {why}")).unwrap_or_default();
    format!(
        "{:>4}  {load:>11}  {per_sec:>13}  {p50:>9}  {p90:>9}  {p99:>9}  {p999:>9}  {errors:>7}  {cpu:>10}  {rss:>10}{note}\n",
        index + 1
    )
}

/// `step 6 (1,000 connections, 85,432 round trips/s, p99 1.20 ms), between steps 5 and 7
/// (500 and 2,000 connections)`, or why there is no knee.
pub(super) fn knee_words(sweep: &Sweep, knee: &Knee, statistic: &str) -> String {
    let found = match knee {
        Knee::Found(found) => found,
        Knee::None { reason } => return format!("none: {reason}"),
    };
    let step = &sweep.steps[found.step];
    let latency = if statistic == "p50" { step.latency_us.p50 } else { step.latency_us.p99 };
    let mut text = format!(
        "step {} ({}, {} {}/s, {statistic} {})",
        found.step + 1,
        load_words(sweep.varied, step.load),
        rate(step.throughput_per_sec),
        exchanges(sweep),
        millis_fixed(latency as f64)
    );
    let neighbour = |i: Option<usize>| i.map(|i| (i + 1, load_words(sweep.varied, sweep.steps[i].load)));
    match (neighbour(found.below), neighbour(found.above)) {
        (Some((b, bl)), Some((a, al))) => {
            let _ = write!(text, "; it lies between steps {b} and {a} ({bl} and {al})");
        }
        (Some((b, bl)), None) => {
            let _ = write!(text, "; it lies above step {b} ({bl}), at the last step measured");
        }
        _ => {}
    }
    text
}

/// `0.0213 [0.0150, 0.0276]`.
fn estimate(e: &Estimate, digits: fn(f64) -> String) -> String {
    let bound = if e.at_bound { " (at its bound)" } else { "" };
    format!("{}{bound} [{}, {}]", digits(e.value), digits(e.low), digits(e.high))
}

/// The fit's lines: its parameters, R² and peak, or why it was not made.
pub(super) fn fit_lines(sweep: &Sweep, fit: &Fit) -> String {
    let fitted: &Fitted = match fit {
        Fit::Fitted(fitted) => fitted,
        Fit::Refused { reason } => return format!("USL fit: {reason}\n"),
    };
    let sci = |v: f64| format!("{v:.3e}");
    let fixed = |v: f64| format!("{v:.4}");
    let per_sec = |v: f64| format!("{}/s", rate(v));
    let left_out = sweep.steps.len() - fitted.points;
    let mut out = format!(
        "USL fit ({} steps{}; 95 % intervals): σ {}, κ {}, λ {}, R² {:.3}\n",
        fitted.points,
        if left_out > 0 { format!(", {left_out} left out") } else { String::new() },
        estimate(&fitted.sigma, fixed),
        estimate(&fitted.kappa, sci),
        estimate(&fitted.lambda, per_sec),
        fitted.r_squared
    );
    match (&fitted.peak, &fitted.no_peak) {
        (Some(peak), _) => {
            let n = &peak.connections;
            let _ = writeln!(
                out,
                "  predicted peak: N* {} connections [{}, {}], {} {}/s{}",
                group(n.value.round() as u64),
                group(n.low.round() as u64),
                group(n.high.round() as u64),
                rate(peak.throughput_per_sec),
                exchanges(sweep),
                if peak.beyond_measured {
                    " (beyond the largest step measured: an extrapolation)"
                } else {
                    ""
                }
            );
        }
        (None, Some(why)) => {
            let _ = writeln!(out, "  predicted peak: none: {why}");
        }
        (None, None) => {}
    }
    out
}

/// The hold-out in one line.
pub(super) fn holdout_words(holdout: &Holdout) -> String {
    let head = format!("hold-out of the last {} steps:", holdout.held_out);
    match (&holdout.fit, holdout.mean_absolute_error_percent) {
        (Fit::Refused { reason }, _) => {
            format!("{head} the fit on the steps before them was refused: {reason}")
        }
        (Fit::Fitted(_), Some(mean)) => {
            let each: Vec<String> = holdout
                .predictions
                .iter()
                .map(|p| {
                    format!(
                        "{} at {} connections (measured {}, {:+.1} %)",
                        rate(p.predicted_per_sec),
                        group(p.connections as u64),
                        rate(p.measured_per_sec),
                        p.error_percent
                    )
                })
                .collect();
            format!("{head} predicted {}; mean |error| {mean:.1} %", each.join(", "))
        }
        (Fit::Fitted(_), None) => format!("{head} nothing to predict"),
    }
}
