//! The comparison bar chart: one horizontal bar per result, best first, so the order of the
//! bars is the ranking. A result measured several times is drawn at its median with a
//! min–max whisker; a client-bound result is hatched and says so after its value, because
//! its bar measures the client rather than the server. Each bar carries its number in
//! `data-value` and the chart its order in `data-order`, which the browser test checks.

use std::cmp::Ordering;
use std::fmt::Write as _;

use super::escape::escape;
use super::svg::{self, Axis, BOTTOM, CHAR_WIDTH, Fitted, LEFT, RIGHT, Scale, WIDTH};

/// One bar; a `None` value is drawn as "n/a", after every measured bar.
#[derive(Debug, Clone)]
pub(super) struct Bar {
    pub label: String,
    pub color: &'static str,
    pub value: Option<f64>,
    /// The lowest and highest of the repeats, when there were several.
    pub range: Option<(f64, f64)>,
    /// Why the client, not the server, was the limit (hatched and marked when set).
    pub client_bound: Option<String>,
}

/// `bars` best first: highest first when `higher_is_better`, else lowest first; a tie keeps
/// the given order, results without the number go last.
pub(super) fn ranked(mut bars: Vec<Bar>, higher_is_better: bool) -> Vec<Bar> {
    bars.sort_by(|a, b| match (a.value, b.value) {
        (Some(x), Some(y)) if higher_is_better => y.total_cmp(&x),
        (Some(x), Some(y)) => x.total_cmp(&y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    });
    bars
}

/// The chart; `value` writes a bar's number after it.
pub(super) fn bar_chart(
    name: &str,
    title: &str,
    axis: Axis,
    value: fn(f64) -> String,
    bars: Vec<Bar>,
    higher_is_better: bool,
) -> String {
    let bars = ranked(bars, higher_is_better);
    let reach = |b: &Bar| b.range.map_or(b.value, |(_, max)| Some(max.max(b.value.unwrap_or(0.0))));
    let fitted = Fitted::new(Scale::Linear, bars.iter().filter_map(reach));
    let longest = bars.iter().map(|b| svg::truncate(&b.label, 26).chars().count()).max().unwrap_or(0);
    let left = (longest as f64 * CHAR_WIDTH + 20.0).max(LEFT);
    // Room on the right for the value (and the client-bound mark) after the longest bar.
    let right = WIDTH - RIGHT - 110.0;
    let (top, row) = (12.0, 30.0);
    let bottom = top + row * bars.len() as f64;
    let height = bottom + BOTTOM;
    let px = |v: f64| left + fitted.fraction(v) * (right - left);

    let mut out = String::new();
    let order = if higher_is_better { " data-order=\"descending\"" } else { " data-order=\"ascending\"" };
    svg::open(&mut out, name, order, title, height);
    let _ = writeln!(
        out,
        "<defs><pattern id=\"hatch-{name}\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" \
         patternTransform=\"rotate(45)\"><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#fff\" \
         stroke-width=\"2.5\"/></pattern></defs>"
    );
    axes(&mut out, &fitted, &axis, (left, right, top, bottom), height);
    let place = Place { name, left, px: &px, value };
    for (index, bar) in bars.iter().enumerate() {
        draw_bar(&mut out, bar, &place, top + row * index as f64);
    }
    out.push_str("</svg>\n");
    out
}

/// Where bars go: the chart's name (for its hatch pattern), the bars' left edge, the
/// value → x mapping and the value format.
struct Place<'a> {
    name: &'a str,
    left: f64,
    px: &'a dyn Fn(f64) -> f64,
    value: fn(f64) -> String,
}

/// One bar in the row whose top is `y`: label, bar, hatching, whisker and value.
fn draw_bar(out: &mut String, bar: &Bar, place: &Place, y: f64) {
    let (name, left, px, value) = (place.name, place.left, place.px, place.value);
    let data = bar.value.map(|v| format!(" data-value=\"{v}\"")).unwrap_or_default();
    let _ = write!(
        out,
        "<g class=\"bar\"{data}><title>{}</title><text class=\"bar-label\" x=\"{:.1}\" y=\"{:.1}\" \
         text-anchor=\"end\">{}</text>",
        escape(&tooltip(bar, value)),
        left - 8.0,
        y + 19.0,
        escape(&svg::truncate(&bar.label, 26))
    );
    let Some(number) = bar.value else {
        let _ = writeln!(
            out,
            "<text class=\"value na\" x=\"{:.1}\" y=\"{:.1}\">n/a</text></g>",
            left + 6.0,
            y + 19.0
        );
        return;
    };
    let (end, width) = (px(number), (px(number) - left).max(1.0));
    let _ = write!(
        out,
        "<rect class=\"mark\" fill=\"{}\" x=\"{left:.1}\" y=\"{:.1}\" width=\"{width:.1}\" height=\"18\" rx=\"2\"/>",
        bar.color,
        y + 6.0,
    );
    if bar.client_bound.is_some() {
        let _ = write!(
            out,
            "<rect class=\"hatch\" fill=\"url(#hatch-{name})\" x=\"{left:.1}\" y=\"{:.1}\" width=\"{width:.1}\" \
             height=\"18\" rx=\"2\"/>",
            y + 6.0
        );
    }
    let mut text_at = end.max(left + 1.0);
    if let Some((min, max)) = bar.range {
        let (x0, x1, cy) = (px(min), px(max), y + 15.0);
        let d = format!(
            "M{x0:.1} {cy:.1}H{x1:.1}M{x0:.1} {:.1}V{:.1}M{x1:.1} {:.1}V{:.1}",
            cy - 5.0,
            cy + 5.0,
            cy - 5.0,
            cy + 5.0
        );
        // A white halo under the whisker keeps it visible across dark bars.
        let _ = write!(out, "<path class=\"whisker-halo\" d=\"{d}\"/><path class=\"whisker\" d=\"{d}\"/>");
        text_at = text_at.max(x1);
    }
    let mark = if bar.client_bound.is_some() { " · client-bound" } else { "" };
    let _ = writeln!(
        out,
        "<text class=\"value\" x=\"{:.1}\" y=\"{:.1}\">{}{mark}</text></g>",
        text_at + 6.0,
        y + 19.0,
        escape(&value(number))
    );
}

/// The bar's hover text: label, value, range, and the client-bound reason.
fn tooltip(bar: &Bar, value: fn(f64) -> String) -> String {
    let mut text = bar.label.clone();
    if let Some(number) = bar.value {
        let _ = write!(text, ": {}", value(number));
    }
    if let Some((min, max)) = bar.range {
        let _ = write!(text, " (the median run; repeats {}–{})", value(min), value(max));
    }
    if let Some(reason) = &bar.client_bound {
        let _ = write!(text, "; client-bound: {reason}");
    }
    text
}

/// Grid lines, tick labels, the axis line and its title.
fn axes(
    out: &mut String,
    fitted: &Fitted,
    axis: &Axis,
    (left, right, top, bottom): (f64, f64, f64, f64),
    height: f64,
) {
    out.push_str("<g class=\"axes\">\n");
    for &tick in &fitted.ticks {
        let tx = left + fitted.fraction(tick) * (right - left);
        let _ = writeln!(
            out,
            "<line class=\"grid\" x1=\"{tx:.1}\" y1=\"{top:.1}\" x2=\"{tx:.1}\" y2=\"{bottom:.1}\"/>\
             <text class=\"tick\" x=\"{tx:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            bottom + 18.0,
            escape(&fitted.label(axis, tick))
        );
    }
    let _ = writeln!(
        out,
        "<path class=\"axis\" d=\"M{left:.1} {top:.1}V{bottom:.1}\"/>\n\
         <text class=\"axis-label\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>\n</g>",
        (left + right) / 2.0,
        height - 6.0,
        escape(&axis.label)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bar(label: &str, value: Option<f64>) -> Bar {
        Bar { label: label.to_owned(), color: "#000000", value, range: None, client_bound: None }
    }

    fn labels(bars: &[Bar]) -> Vec<&str> {
        bars.iter().map(|b| b.label.as_str()).collect()
    }

    #[test]
    fn bars_are_ranked_best_first_with_missing_values_last() {
        let bars = vec![bar("a", Some(2.0)), bar("b", None), bar("c", Some(5.0)), bar("d", Some(1.0))];
        assert_eq!(labels(&ranked(bars.clone(), true)), ["c", "a", "d", "b"]);
        assert_eq!(labels(&ranked(bars, false)), ["d", "a", "c", "b"]);
    }

    #[test]
    fn client_bound_bars_are_hatched_and_repeats_get_whiskers() {
        let axis =
            Axis { label: "rate".to_owned(), scale: Scale::Linear, format: crate::units::format::tick_rate };
        let mut bound = bar("bound", Some(10.0));
        bound.client_bound = Some("worker w0 used 97% of a core".to_owned());
        let mut repeated = bar("repeated", Some(8.0));
        repeated.range = Some((6.0, 12.0));
        let svg = bar_chart("c", "t", axis, crate::units::format::rate, vec![repeated, bound], true);
        assert!(svg.starts_with("<svg data-chart=\"c\" data-order=\"descending\""), "{svg}");
        assert_eq!(svg.matches("fill=\"url(#hatch-c)\"").count(), 1);
        assert!(svg.contains("10 · client-bound</text>"), "{svg}");
        assert!(svg.contains("client-bound: worker w0 used 97% of a core"), "{svg}");
        assert_eq!(svg.matches("class=\"whisker\"").count(), 1);
        assert!(svg.find("data-value=\"10\"").unwrap() < svg.find("data-value=\"8\"").unwrap());
    }
}
