//! Inline SVG charts for the HTML report, generated here rather than by a plotting library
//! so the page needs no JavaScript, no fonts and nothing from the network, and so the same
//! input gives byte-identical output (the golden test pins it). Two chart kinds cover the
//! report: line charts (linear, logarithmic or "percentile nines" axes, HdrHistogram style),
//! small multiples of them (one panel per result, shared axes) and horizontal bar charts
//! ([`super::bars`]); a chart without data is drawn as a framed message instead.
//!
//! Every chart is an `<svg data-chart="NAME">` whose first child is its `<title>`; the
//! marks that carry data (lines, dots, bars) have the class `mark`, which the browser test
//! looks for.

use std::fmt::Write as _;

use super::escape::escape;

pub(super) const WIDTH: f64 = 640.0;
const PLOT_HEIGHT: f64 = 220.0;
pub(super) const LEFT: f64 = 72.0;
pub(super) const RIGHT: f64 = 36.0;
pub(super) const BOTTOM: f64 = 46.0;
/// Rough width of one character of the 12 px chart font, for layout without font metrics.
pub(super) const CHAR_WIDTH: f64 = 6.8;

/// How data values map onto an axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Scale {
    /// From 0 to a round number above the largest value.
    Linear,
    /// Whole decades around the values (all must be positive).
    Log,
    /// Values are quantiles `q` in [0, 1), placed at log10(1 / (1 − q)) so that 90%, 99%,
    /// 99.9% … are equally spaced, as HdrHistogram's percentile plots do.
    Nines,
}

/// One axis: its title, scale and tick-label format (the tick, and the reference tick whose
/// unit the label takes, see [`crate::units::format::tick_micros`]).
#[derive(Debug, Clone)]
pub(super) struct Axis {
    pub label: String,
    pub scale: Scale,
    pub format: fn(f64, f64) -> String,
}

/// One line of a line chart, in data units.
#[derive(Debug, Clone)]
pub(super) struct Series {
    pub label: String,
    pub color: &'static str,
    /// `stroke-dasharray`, or solid.
    pub dash: Option<&'static str>,
    pub points: Vec<(f64, f64)>,
}

/// An axis fitted to the data: the domain `[lo, hi]` and where its ticks go.
#[derive(Debug)]
pub(super) struct Fitted {
    scale: Scale,
    lo: f64,
    hi: f64,
    pub ticks: Vec<f64>,
}

/// The 1-2-5 values from the one at or below `lo` to the one at or above `hi`.
fn one_two_five(lo: f64, hi: f64) -> Vec<f64> {
    let mut values = Vec::new();
    let mut decade = 10f64.powi(lo.log10().floor() as i32);
    while values.last().is_none_or(|last| *last < hi) {
        for step in [1.0, 2.0, 5.0] {
            values.push(step * decade);
        }
        decade *= 10.0;
    }
    let first = values.iter().rposition(|v| *v <= lo * (1.0 + 1e-9)).unwrap_or(0);
    let last = values.iter().position(|v| *v >= hi * (1.0 - 1e-9)).unwrap_or(values.len() - 1);
    values[first..=last].to_vec()
}

impl Fitted {
    pub(super) fn new(scale: Scale, values: impl Iterator<Item = f64>) -> Fitted {
        let values: Vec<f64> = values.filter(|v| v.is_finite()).collect();
        match scale {
            Scale::Linear => {
                let max = values.iter().copied().fold(0.0, f64::max);
                let step = nice_step(if max > 0.0 { max / 6.0 } else { 0.2 });
                let mut steps = (max / step - 1e-9).ceil().max(1.0) as u32;
                // A top value just under the last tick would touch the frame: one more tick.
                let top = f64::from(steps) * step;
                if max < top && top - max < 0.03 * top {
                    steps += 1;
                }
                let ticks = (0..=steps).map(|i| f64::from(i) * step).collect();
                Fitted { scale, lo: 0.0, hi: f64::from(steps) * step, ticks }
            }
            Scale::Log => {
                // The domain starts at the 1-2-5 value just under the smallest datum and ends
                // at the one just over the largest: no empty decades below the data.
                let positive = || values.iter().copied().filter(|v| *v > 0.0);
                let min = positive().fold(f64::INFINITY, f64::min);
                let max = positive().fold(0.0, f64::max);
                let (min, max) = if min.is_finite() { (min.max(0.1), max.max(0.1)) } else { (1.0, 10.0) };
                let mut ticks = one_two_five(min, max.max(min * 1.5));
                let (lo, hi) = (ticks[0], ticks[ticks.len() - 1]);
                if hi / lo > 2_000.0 {
                    // Wide ranges keep the decades only (and the ends).
                    ticks.retain(|t| *t == lo || *t == hi || (t.log10().fract()).abs() < 1e-9);
                }
                Fitted { scale, lo, hi, ticks }
            }
            Scale::Nines => {
                let nines = values.iter().map(|q| nines(*q)).fold(1.0, f64::max);
                let top = (nines - 1e-9).ceil().max(1.0) as i32;
                let ticks = (0..=top).map(|n| 1.0 - 10f64.powi(-n)).collect();
                Fitted { scale, lo: 0.0, hi: 1.0 - 10f64.powi(-top), ticks }
            }
        }
    }

    /// The label of `tick` in the axis's unit: a linear axis writes every tick in the unit of
    /// its top tick, a logarithmic one each tick in its own.
    pub(super) fn label(&self, axis: &Axis, tick: f64) -> String {
        match self.scale {
            Scale::Nines => percentile_label(tick),
            Scale::Linear => (axis.format)(tick, self.hi),
            Scale::Log => (axis.format)(tick, tick),
        }
    }

    fn transform(&self, value: f64) -> f64 {
        match self.scale {
            Scale::Linear => value,
            Scale::Log => value.max(self.lo).log10(),
            Scale::Nines => nines(value),
        }
    }

    /// Where `value` falls between the domain's ends, 0 to 1 (clamped).
    pub(super) fn fraction(&self, value: f64) -> f64 {
        let (lo, hi) = (self.transform(self.lo), self.transform(self.hi));
        if hi <= lo { 0.0 } else { ((self.transform(value) - lo) / (hi - lo)).clamp(0.0, 1.0) }
    }
}

/// How many nines quantile `q` has: 0.9 → 1, 0.99 → 2.
fn nines(q: f64) -> f64 {
    -(1.0 - q.clamp(0.0, 1.0 - 1e-12)).log10()
}

/// The first of 1, 2, 5 × 10^k at or above `raw`.
fn nice_step(raw: f64) -> f64 {
    let base = 10f64.powi(raw.log10().floor() as i32);
    let fraction = raw / base;
    let nice = if fraction <= 1.0 {
        1.0
    } else if fraction <= 2.0 {
        2.0
    } else if fraction <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * base
}

/// A tick label for quantile `q`: `0%`, `90%`, `99%`, `99.9%`, `99.99%` …
pub(super) fn percentile_label(q: f64) -> String {
    match nines(q).round() as usize {
        0 => "0%".to_owned(),
        1 => "90%".to_owned(),
        2 => "99%".to_owned(),
        n => format!("99.{}%", "9".repeat(n - 2)),
    }
}

/// Opens an `<svg>` of the given height with its `<title>`; `attributes` (each with its
/// leading space) go right after its `data-chart`.
pub(super) fn open(out: &mut String, name: &str, attributes: &str, title: &str, height: f64) {
    let _ = write!(
        out,
        "<svg data-chart=\"{name}\"{attributes} class=\"chart\" viewBox=\"0 0 {WIDTH} {height:.0}\" \
         role=\"img\" aria-labelledby=\"chart-{name}-title\">\n\
         <title id=\"chart-{name}-title\">{}</title>\n",
        escape(title)
    );
}

/// `text` cut to `max` characters with an ellipsis.
pub(super) fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        let cut: String = text.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

/// A chart without data: a framed message saying why.
pub(super) fn empty(name: &str, title: &str, message: &str) -> String {
    let mut out = String::new();
    open(&mut out, name, " data-empty=\"true\"", title, 120.0);
    let _ = write!(
        out,
        "<rect class=\"frame-empty\" x=\"1\" y=\"1\" width=\"{}\" height=\"118\" rx=\"6\"/>\n\
         <text class=\"empty\" x=\"{}\" y=\"64\" text-anchor=\"middle\">{}</text>\n</svg>\n",
        WIDTH - 2.0,
        WIDTH / 2.0,
        escape(message)
    );
    out
}

/// Lays the legend out in rows from the left edge of the plot; returns its SVG and height.
fn legend(series: &[(&str, &'static str, Option<&'static str>)]) -> (String, f64) {
    let mut out = String::from("<g class=\"legend\">\n");
    let (mut x, mut row) = (LEFT, 0.0);
    for (label, color, dash) in series {
        let text = truncate(label, 48);
        let width = 30.0 + text.chars().count() as f64 * CHAR_WIDTH + 18.0;
        if x > LEFT && x + width > WIDTH - RIGHT {
            x = LEFT;
            row += 1.0;
        }
        let y = 16.0 + row * 18.0;
        let dash = dash.map(|d| format!(" stroke-dasharray=\"{d}\"")).unwrap_or_default();
        let _ = writeln!(
            out,
            "<g class=\"entry\" data-color=\"{color}\"><title>{}</title><line x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" \
             stroke=\"{color}\" stroke-width=\"3\"{dash}/><text x=\"{:.1}\" y=\"{:.1}\">{}</text></g>",
            escape(label),
            y - 4.0,
            x + 22.0,
            y - 4.0,
            x + 28.0,
            y,
            escape(&text)
        );
        x += width;
    }
    out.push_str("</g>\n");
    (out, 16.0 + row * 18.0 + 14.0)
}

/// A horizontal grid line at `ty` from `left` to `right`, its label `gap` left of the plot.
fn grid_row(out: &mut String, (left, right): (f64, f64), ty: f64, gap: f64, label: &str) {
    let _ = writeln!(
        out,
        "<line class=\"grid\" x1=\"{left:.1}\" y1=\"{ty:.1}\" x2=\"{right:.1}\" y2=\"{ty:.1}\"/>\
         <text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
        left - gap,
        ty + 4.0,
        escape(label)
    );
}

/// A point singled out on a chart (a knee, a predicted peak, a step left out): drawn
/// over the lines as a ring, a diamond or a hollow dot, with its own `<title>`.
#[derive(Debug, Clone)]
pub(super) struct Marker {
    /// `knee`, `peak`, `excluded`: the `data-marker` attribute.
    pub kind: &'static str,
    pub label: String,
    pub color: &'static str,
    pub at: (f64, f64),
}

/// A line chart with one polyline per series (dots too when a series is short).
pub(super) fn line_chart(name: &str, title: &str, x: Axis, y: Axis, series: &[Series]) -> String {
    marked_line_chart(name, title, x, y, series, &[])
}

/// [`line_chart`] with `markers` drawn over the lines (the axes cover them too).
pub(super) fn marked_line_chart(
    name: &str,
    title: &str,
    x: Axis,
    y: Axis,
    series: &[Series],
    markers: &[Marker],
) -> String {
    let all = || series.iter().flat_map(|s| s.points.iter().copied()).chain(markers.iter().map(|m| m.at));
    let fx = Fitted::new(x.scale, all().map(|p| p.0));
    let fy = Fitted::new(y.scale, all().map(|p| p.1));
    let entries: Vec<(&str, &'static str, Option<&'static str>)> =
        series.iter().map(|s| (s.label.as_str(), s.color, s.dash)).collect();
    let (legend, top) = legend(&entries);
    let height = top + PLOT_HEIGHT + BOTTOM;
    let (left, right, bottom) = (LEFT, WIDTH - RIGHT, top + PLOT_HEIGHT);
    let px = |v: f64| left + fx.fraction(v) * (right - left);
    let py = |v: f64| bottom - fy.fraction(v) * PLOT_HEIGHT;

    let mut out = String::new();
    open(&mut out, name, "", title, height);
    out.push_str(&legend);
    out.push_str("<g class=\"axes\">\n");
    for &tick in &fy.ticks {
        grid_row(&mut out, (left, right), py(tick), 8.0, &fy.label(&y, tick));
    }
    for &tick in &fx.ticks {
        let tx = px(tick);
        let label = fx.label(&x, tick);
        let _ = writeln!(
            out,
            "<line class=\"grid\" x1=\"{tx:.1}\" y1=\"{top:.1}\" x2=\"{tx:.1}\" y2=\"{bottom:.1}\"/>\
             <text class=\"tick\" x=\"{tx:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            bottom + 18.0,
            escape(&label)
        );
    }
    let _ = writeln!(
        out,
        "<path class=\"axis\" d=\"M{left:.1} {top:.1}V{bottom:.1}H{right:.1}\"/>\n\
         <text class=\"axis-label\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>\n\
         <text class=\"axis-label\" transform=\"translate(16 {:.1}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n</g>",
        (left + right) / 2.0,
        height - 6.0,
        escape(&x.label),
        top + PLOT_HEIGHT / 2.0,
        escape(&y.label)
    );
    for s in series {
        let points: Vec<String> =
            s.points.iter().map(|&(vx, vy)| format!("{:.1},{:.1}", px(vx), py(vy))).collect();
        let dash = s.dash.map(|d| format!(" stroke-dasharray=\"{d}\"")).unwrap_or_default();
        let _ =
            write!(out, "<g class=\"series\" data-color=\"{}\"><title>{}</title>", s.color, escape(&s.label));
        let _ = write!(
            out,
            "<polyline class=\"mark line\" stroke=\"{}\"{dash} points=\"{}\"/>",
            s.color,
            points.join(" ")
        );
        if s.points.len() <= 24 {
            for point in &points {
                let (cx, cy) = point.split_once(',').unwrap_or(("0", "0"));
                let _ = write!(
                    out,
                    "<circle class=\"mark dot\" fill=\"{}\" cx=\"{cx}\" cy=\"{cy}\" r=\"3\"/>",
                    s.color
                );
            }
        }
        out.push_str("</g>\n");
    }
    for marker in markers {
        draw_marker(&mut out, marker, (px(marker.at.0), py(marker.at.1)));
    }
    out.push_str("</svg>\n");
    out
}

/// `marker` at `(cx, cy)` on the plot: a diamond for a peak, a hollow dot for a step left
/// out, a ring for a knee.
fn draw_marker(out: &mut String, marker: &Marker, (cx, cy): (f64, f64)) {
    let shape = match marker.kind {
        "peak" => format!(
            "<path class=\"mark marker\" stroke=\"{0}\" fill=\"#fff\" d=\"M{cx:.1} {1:.1}L{2:.1} {cy:.1}L{cx:.1} {3:.1}L{4:.1} {cy:.1}Z\"/>",
            marker.color,
            cy - 7.0,
            cx + 7.0,
            cy + 7.0,
            cx - 7.0
        ),
        "excluded" => format!(
            "<circle class=\"mark marker\" stroke=\"{}\" fill=\"#fff\" cx=\"{cx:.1}\" cy=\"{cy:.1}\" r=\"4\"/>",
            marker.color
        ),
        _ => format!(
            "<circle class=\"mark marker\" stroke=\"{}\" fill=\"none\" stroke-width=\"2.5\" cx=\"{cx:.1}\" cy=\"{cy:.1}\" r=\"8\"/>",
            marker.color
        ),
    };
    let _ = writeln!(
        out,
        "<g class=\"marker\" data-marker=\"{}\" data-color=\"{}\"><title>{}</title>{shape}</g>",
        marker.kind,
        marker.color,
        escape(&marker.label)
    );
}

/// One panel of [`small_multiples`]: a result's label and colour, and its lines.
#[derive(Debug, Clone)]
pub(super) struct Panel {
    pub label: String,
    pub color: &'static str,
    pub series: Vec<Series>,
}

/// At most `max` of `ticks`, evenly spaced and counted back from the last one (which is
/// always kept, and never crowded by a neighbour added after the spacing).
fn thin(ticks: &[f64], max: usize) -> Vec<f64> {
    let every = ticks.len().div_ceil(max.max(1)).max(1);
    let offset = ticks.len().saturating_sub(1) % every;
    ticks.iter().copied().skip(offset).step_by(every).collect()
}

/// One small chart per panel, three to a row, all on the same axes so they compare at a
/// glance: for many results, where one chart of every line would be a tangle.
pub(super) fn small_multiples(name: &str, title: &str, x: Axis, y: Axis, panels: &[Panel]) -> String {
    const COLUMNS: usize = 3;
    const PANEL_WIDTH: f64 = WIDTH / COLUMNS as f64;
    const PANEL_HEIGHT: f64 = 150.0;
    const PLOT: (f64, f64, f64, f64) = (54.0, 22.0, 10.0, 30.0); // left, top, right, bottom
    let all = || panels.iter().flat_map(|p| p.series.iter().flat_map(|s| s.points.iter()));
    let fx = Fitted::new(x.scale, all().map(|p| p.0));
    let fy = Fitted::new(y.scale, all().map(|p| p.1));
    let rows = panels.len().div_ceil(COLUMNS);
    let height = rows as f64 * PANEL_HEIGHT + 24.0;
    let mut out = String::new();
    open(&mut out, name, "", title, height);
    for (index, panel) in panels.iter().enumerate() {
        let (ox, oy) = ((index % COLUMNS) as f64 * PANEL_WIDTH, (index / COLUMNS) as f64 * PANEL_HEIGHT);
        let (left, top) = (ox + PLOT.0, oy + PLOT.1);
        let (right, bottom) = (ox + PANEL_WIDTH - PLOT.2, oy + PANEL_HEIGHT - PLOT.3);
        let px = |v: f64| left + fx.fraction(v) * (right - left);
        let py = |v: f64| bottom - fy.fraction(v) * (bottom - top);
        let _ = writeln!(
            out,
            "<g class=\"panel\"><title>{}</title><text class=\"panel-title\" x=\"{left:.1}\" y=\"{:.1}\" \
             fill=\"{}\">{}</text>",
            escape(&panel.label),
            top - 8.0,
            panel.color,
            escape(&truncate(&panel.label, 26))
        );
        for tick in thin(&fy.ticks, 4) {
            grid_row(&mut out, (left, right), py(tick), 4.0, &fy.label(&y, tick));
        }
        for tick in thin(&fx.ticks, 3) {
            let _ = writeln!(
                out,
                "<text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                px(tick),
                bottom + 14.0,
                escape(&fx.label(&x, tick))
            );
        }
        let _ = writeln!(out, "<path class=\"axis\" d=\"M{left:.1} {top:.1}V{bottom:.1}H{right:.1}\"/>");
        for s in &panel.series {
            let points: Vec<String> =
                s.points.iter().map(|&(vx, vy)| format!("{:.1},{:.1}", px(vx), py(vy))).collect();
            let dash = s.dash.map(|d| format!(" stroke-dasharray=\"{d}\"")).unwrap_or_default();
            let _ = writeln!(
                out,
                "<g class=\"series\" data-color=\"{}\"><title>{}</title><polyline class=\"mark line\" \
                 stroke=\"{}\"{dash} points=\"{}\"/></g>",
                s.color,
                escape(&s.label),
                s.color,
                points.join(" ")
            );
        }
        out.push_str("</g>\n");
    }
    let _ = writeln!(
        out,
        "<text class=\"axis-label\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{} (x), {} (y)</text>\n</svg>",
        WIDTH / 2.0,
        height - 6.0,
        escape(&x.label),
        escape(&y.label)
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_steps_are_one_two_five() {
        assert_eq!(nice_step(0.7), 1.0);
        assert_eq!(nice_step(13.0), 20.0);
        assert_eq!(nice_step(2_600.0), 5_000.0);
        assert_eq!(nice_step(7_000.0), 10_000.0);
    }

    #[test]
    fn linear_axis_starts_at_zero_and_covers_the_data() {
        let fitted = Fitted::new(Scale::Linear, [3.0, 52_066.0].into_iter());
        assert_eq!(fitted.lo, 0.0);
        assert_eq!(fitted.hi, 60_000.0);
        assert_eq!(fitted.ticks, [0.0, 10_000.0, 20_000.0, 30_000.0, 40_000.0, 50_000.0, 60_000.0]);
        assert_eq!(fitted.fraction(30_000.0), 0.5);
        // Percentages end at 100%; a value just under a tick gets headroom.
        assert_eq!(Fitted::new(Scale::Linear, [100.0].into_iter()).hi, 100.0);
        assert_eq!(Fitted::new(Scale::Linear, [9_950.0].into_iter()).hi, 12_000.0);
    }

    #[test]
    fn log_axis_starts_at_the_data() {
        let fitted = Fitted::new(Scale::Log, [308.0, 13_000.0].into_iter());
        assert_eq!((fitted.lo, fitted.hi), (200.0, 20_000.0));
        assert_eq!(fitted.ticks, [200.0, 500.0, 1_000.0, 2_000.0, 5_000.0, 10_000.0, 20_000.0]);
        assert!((fitted.fraction(2_000.0) - 0.5).abs() < 1e-12);
        // A latency spectrum from 1.2 ms to 40 ms does not reach down to µs.
        let fitted = Fitted::new(Scale::Log, [1_200.0, 40_000.0].into_iter());
        assert_eq!((fitted.lo, fitted.hi), (1_000.0, 50_000.0));
        // Very wide ranges tick at decades only.
        let fitted = Fitted::new(Scale::Log, [3.0, 2_000_000.0].into_iter());
        assert_eq!(fitted.ticks, [2.0, 10.0, 100.0, 1e3, 1e4, 1e5, 1e6, 2e6]);
    }

    #[test]
    fn tick_labels_use_the_axis_unit() {
        let axis =
            Axis { label: String::new(), scale: Scale::Linear, format: crate::units::format::tick_micros };
        let fitted = Fitted::new(Scale::Linear, [1_700.0].into_iter());
        let labels: Vec<String> = fitted.ticks.iter().map(|t| fitted.label(&axis, *t)).collect();
        assert_eq!(labels, ["0 ms", "0.5 ms", "1 ms", "1.5 ms", "2 ms"]);
    }

    #[test]
    fn nines_axis_spaces_percentiles_evenly() {
        let fitted = Fitted::new(Scale::Nines, [0.0, 0.5, 0.9991].into_iter());
        let labels: Vec<String> = fitted.ticks.iter().map(|q| percentile_label(*q)).collect();
        assert_eq!(labels, ["0%", "90%", "99%", "99.9%", "99.99%"]);
        assert!((fitted.fraction(0.99) - 0.5).abs() < 1e-9);
    }

    #[test]
    fn thinned_ticks_keep_the_last_and_even_spacing() {
        assert_eq!(thin(&[0.0, 50.0, 100.0, 150.0, 200.0, 250.0], 4), [50.0, 150.0, 250.0]);
        assert_eq!(thin(&[0.0, 1.0, 2.0], 4), [0.0, 1.0, 2.0]);
        assert_eq!(thin(&[0.0, 1.0, 2.0, 3.0, 4.0], 3), [0.0, 2.0, 4.0]);
    }

    #[test]
    fn empty_chart_says_why() {
        let svg = empty("server-rss", "Server RSS", "server not probed: <remote>");
        assert!(svg.starts_with("<svg data-chart=\"server-rss\" data-empty=\"true\""), "{svg}");
        assert!(svg.contains("<title id=\"chart-server-rss-title\">Server RSS</title>"));
        assert!(svg.contains("server not probed: &lt;remote&gt;"));
    }

    #[test]
    fn long_labels_are_truncated_with_an_ellipsis() {
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("abc", 4), "abc");
    }
}
