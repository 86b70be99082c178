//! Inline SVG charts for the HTML report, generated here rather than by a plotting library
//! so the page needs no JavaScript, no fonts and nothing from the network, and so the same
//! input gives byte-identical output (the golden test pins it). Two chart kinds cover the
//! report: line charts (linear, logarithmic or "percentile nines" axes, HdrHistogram style)
//! and horizontal bar charts; a chart without data is drawn as a framed message instead.
//!
//! Every chart is an `<svg data-chart="NAME">` whose first child is its `<title>`; the
//! marks that carry data (lines, dots, bars) have the class `mark`, which the browser test
//! looks for.

use std::fmt::Write as _;

use super::escape::escape;

const WIDTH: f64 = 640.0;
const PLOT_HEIGHT: f64 = 220.0;
const LEFT: f64 = 72.0;
const RIGHT: f64 = 36.0;
const BOTTOM: f64 = 46.0;
/// Rough width of one character of the 12 px chart font, for layout without font metrics.
const CHAR_WIDTH: f64 = 6.8;

/// Colour-blind-safe series colours (Okabe–Ito, darkened for white backgrounds).
const PALETTE: [&str; 8] =
    ["#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000", "#8c6d1f"];

/// The colour of the `index`-th result, the same in every chart.
pub(super) fn color(index: usize) -> &'static str {
    PALETTE[index % PALETTE.len()]
}

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

/// One axis: its title, scale and tick-label format.
#[derive(Debug, Clone, Copy)]
pub(super) struct Axis {
    pub label: &'static str,
    pub scale: Scale,
    pub format: fn(f64) -> String,
}

/// One line of a line chart, in data units.
#[derive(Debug, Clone)]
pub(super) struct Series {
    pub label: String,
    pub color: &'static str,
    pub dashed: bool,
    pub points: Vec<(f64, f64)>,
}

/// One bar of a bar chart; `None` is drawn as "n/a".
#[derive(Debug, Clone)]
pub(super) struct Bar {
    pub label: String,
    pub color: &'static str,
    pub value: Option<f64>,
}

/// An axis fitted to the data: the domain `[lo, hi]` and where its ticks go.
#[derive(Debug)]
struct Fitted {
    scale: Scale,
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
}

impl Fitted {
    fn new(scale: Scale, values: impl Iterator<Item = f64>) -> Fitted {
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
                let positive = || values.iter().copied().filter(|v| *v > 0.0);
                let min = positive().fold(f64::INFINITY, f64::min);
                let max = positive().fold(0.0, f64::max);
                let (mut lo, mut hi) = if min.is_finite() {
                    (min.log10().floor() as i32, max.log10().ceil() as i32)
                } else {
                    (0, 1)
                };
                if hi <= lo {
                    hi = lo + 1;
                }
                lo = lo.max(-1);
                let mut ticks = Vec::new();
                for decade in lo..=hi {
                    let base = 10f64.powi(decade);
                    ticks.push(base);
                    if hi - lo <= 2 && decade < hi {
                        ticks.extend([2.0 * base, 5.0 * base]);
                    }
                }
                Fitted { scale, lo: 10f64.powi(lo), hi: 10f64.powi(hi), ticks }
            }
            Scale::Nines => {
                let nines = values.iter().map(|q| nines(*q)).fold(1.0, f64::max);
                let top = (nines - 1e-9).ceil().max(1.0) as i32;
                let ticks = (0..=top).map(|n| 1.0 - 10f64.powi(-n)).collect();
                Fitted { scale, lo: 0.0, hi: 1.0 - 10f64.powi(-top), ticks }
            }
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
    fn fraction(&self, value: f64) -> f64 {
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

/// Opens an `<svg>` of the given height with its `<title>`.
fn open(out: &mut String, name: &str, title: &str, height: f64, empty: bool) {
    let _ = write!(
        out,
        "<svg data-chart=\"{name}\"{} class=\"chart\" viewBox=\"0 0 {WIDTH} {height:.0}\" \
         role=\"img\" aria-labelledby=\"chart-{name}-title\">\n\
         <title id=\"chart-{name}-title\">{}</title>\n",
        if empty { " data-empty=\"true\"" } else { "" },
        escape(title)
    );
}

/// `text` cut to `max` characters with an ellipsis.
fn truncate(text: &str, max: usize) -> String {
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
    open(&mut out, name, title, 120.0, true);
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
fn legend(series: &[(&str, &'static str, bool)]) -> (String, f64) {
    let mut out = String::from("<g class=\"legend\">\n");
    let (mut x, mut row) = (LEFT, 0.0);
    for (label, color, dashed) in series {
        let text = truncate(label, 48);
        let width = 30.0 + text.chars().count() as f64 * CHAR_WIDTH + 18.0;
        if x > LEFT && x + width > WIDTH - RIGHT {
            x = LEFT;
            row += 1.0;
        }
        let y = 16.0 + row * 18.0;
        let dash = if *dashed { " stroke-dasharray=\"5 3\"" } else { "" };
        let _ = writeln!(
            out,
            "<g><title>{}</title><line x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" \
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

/// A line chart with one polyline per series (dots too when a series is short).
pub(super) fn line_chart(name: &str, title: &str, x: Axis, y: Axis, series: &[Series]) -> String {
    let fx = Fitted::new(x.scale, series.iter().flat_map(|s| s.points.iter().map(|p| p.0)));
    let fy = Fitted::new(y.scale, series.iter().flat_map(|s| s.points.iter().map(|p| p.1)));
    let entries: Vec<(&str, &'static str, bool)> =
        series.iter().map(|s| (s.label.as_str(), s.color, s.dashed)).collect();
    let (legend, top) = legend(&entries);
    let height = top + PLOT_HEIGHT + BOTTOM;
    let (left, right, bottom) = (LEFT, WIDTH - RIGHT, top + PLOT_HEIGHT);
    let px = |v: f64| left + fx.fraction(v) * (right - left);
    let py = |v: f64| bottom - fy.fraction(v) * PLOT_HEIGHT;

    let mut out = String::new();
    open(&mut out, name, title, height, false);
    out.push_str(&legend);
    out.push_str("<g class=\"axes\">\n");
    for &tick in &fy.ticks {
        let ty = py(tick);
        let _ = writeln!(
            out,
            "<line class=\"grid\" x1=\"{left:.1}\" y1=\"{ty:.1}\" x2=\"{right:.1}\" y2=\"{ty:.1}\"/>\
             <text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            left - 8.0,
            ty + 4.0,
            escape(&(y.format)(tick))
        );
    }
    for &tick in &fx.ticks {
        let tx = px(tick);
        let label = if x.scale == Scale::Nines { percentile_label(tick) } else { (x.format)(tick) };
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
        escape(x.label),
        top + PLOT_HEIGHT / 2.0,
        escape(y.label)
    );
    for s in series {
        let points: Vec<String> =
            s.points.iter().map(|&(vx, vy)| format!("{:.1},{:.1}", px(vx), py(vy))).collect();
        let dash = if s.dashed { " stroke-dasharray=\"6 4\"" } else { "" };
        let _ = write!(out, "<g class=\"series\"><title>{}</title>", escape(&s.label));
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
    out.push_str("</svg>\n");
    out
}

/// Horizontal bars, one per result, each labelled with its value in `value`'s format.
pub(super) fn bar_chart(
    name: &str,
    title: &str,
    axis: Axis,
    value: fn(f64) -> String,
    bars: &[Bar],
) -> String {
    let fitted = Fitted::new(Scale::Linear, bars.iter().filter_map(|b| b.value));
    let longest = bars.iter().map(|b| truncate(&b.label, 26).chars().count()).max().unwrap_or(0);
    let left = (longest as f64 * CHAR_WIDTH + 20.0).max(LEFT);
    // Room on the right for the value printed after the longest bar.
    let right = WIDTH - RIGHT - 56.0;
    let (top, row) = (12.0, 30.0);
    let bottom = top + row * bars.len() as f64;
    let height = bottom + BOTTOM;
    let px = |v: f64| left + fitted.fraction(v) * (right - left);

    let mut out = String::new();
    open(&mut out, name, title, height, false);
    out.push_str("<g class=\"axes\">\n");
    for &tick in &fitted.ticks {
        let tx = px(tick);
        let _ = writeln!(
            out,
            "<line class=\"grid\" x1=\"{tx:.1}\" y1=\"{top:.1}\" x2=\"{tx:.1}\" y2=\"{bottom:.1}\"/>\
             <text class=\"tick\" x=\"{tx:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            bottom + 18.0,
            escape(&(axis.format)(tick))
        );
    }
    let _ = writeln!(
        out,
        "<path class=\"axis\" d=\"M{left:.1} {top:.1}V{bottom:.1}\"/>\n\
         <text class=\"axis-label\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>\n</g>",
        (left + right) / 2.0,
        height - 6.0,
        escape(axis.label)
    );
    for (index, bar) in bars.iter().enumerate() {
        let y = top + row * index as f64;
        let _ = write!(
            out,
            "<g class=\"bar\"><title>{}</title><text class=\"bar-label\" x=\"{:.1}\" y=\"{:.1}\" \
             text-anchor=\"end\">{}</text>",
            escape(&bar.label),
            left - 8.0,
            y + 19.0,
            escape(&truncate(&bar.label, 26))
        );
        match bar.value {
            Some(number) => {
                let end = px(number);
                let _ = write!(
                    out,
                    "<rect class=\"mark\" fill=\"{}\" x=\"{left:.1}\" y=\"{:.1}\" width=\"{:.1}\" \
                     height=\"18\" rx=\"2\"/><text class=\"value\" x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                    bar.color,
                    y + 6.0,
                    (end - left).max(1.0),
                    end.max(left + 1.0) + 6.0,
                    y + 19.0,
                    escape(&value(number))
                );
            }
            None => {
                let _ = write!(
                    out,
                    "<text class=\"value na\" x=\"{:.1}\" y=\"{:.1}\">n/a</text>",
                    left + 6.0,
                    y + 19.0
                );
            }
        }
        out.push_str("</g>\n");
    }
    out.push_str("</svg>\n");
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
    fn log_axis_spans_whole_decades() {
        let fitted = Fitted::new(Scale::Log, [308.0, 13_000.0].into_iter());
        assert_eq!((fitted.lo, fitted.hi), (100.0, 100_000.0));
        assert_eq!(fitted.ticks, [100.0, 1_000.0, 10_000.0, 100_000.0]);
        assert!((fitted.fraction(1_000.0) - 1.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn nines_axis_spaces_percentiles_evenly() {
        let fitted = Fitted::new(Scale::Nines, [0.0, 0.5, 0.9991].into_iter());
        let labels: Vec<String> = fitted.ticks.iter().map(|q| percentile_label(*q)).collect();
        assert_eq!(labels, ["0%", "90%", "99%", "99.9%", "99.99%"]);
        assert!((fitted.fraction(0.99) - 0.5).abs() < 1e-9);
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
