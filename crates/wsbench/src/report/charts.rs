//! The HTML report's charts: turns result files (their timeline, server samples and decoded
//! histograms) into series and bars for [`super::svg`]. Each function returns one finished
//! `<svg>`, or the "no data" placeholder explaining why there is nothing to draw. Each result
//! keeps its [`Style`] (colour and dash) in every chart.

use hdrhistogram::Histogram;

use super::bars::{self, Bar};
use super::palette::{SECONDARY_DASH, Style};
use super::svg::{self, Axis, Panel, Scale, Series};
use crate::config::Exchange;
use crate::metrics::Metrics;
use crate::result::RunResult;
use crate::units::format::{self, tick_mib, tick_micros, tick_percent, tick_rate, tick_seconds};

/// One result as the charts need it: label, style, the file, and its decoded histograms.
#[derive(Debug)]
pub(super) struct Charted<'a> {
    pub label: &'a str,
    pub style: Style,
    pub result: &'a RunResult,
    pub metrics: Metrics,
    /// Every repeat of this result (`compare --repeat N`), `result` being the median one;
    /// empty for a single run.
    pub repeats: &'a [RunResult],
}

/// More lines than this in one chart become small multiples.
const MAX_LINES: usize = 6;

/// Highest percentile the spectrum plots: 99.9999%.
const MAX_NINES: f64 = 6.0;
/// Spectrum points per decade of nines.
const STEPS_PER_NINE: u32 = 20;
/// Timeline seconds covering less of a second than this (the run's end) are not plotted.
const MIN_PARTIAL_SECOND: f64 = 0.25;

const MIB: f64 = 1024.0 * 1024.0;

/// Logarithmic when the values span more than a factor of 20 (latency tails), else linear.
fn auto_scale<'v>(values: impl Iterator<Item = &'v f64>) -> Scale {
    let (min, max) =
        values.filter(|v| **v > 0.0).fold((f64::INFINITY, 0.0f64), |(lo, hi), v| (lo.min(*v), hi.max(*v)));
    if min.is_finite() && max / min > 20.0 { Scale::Log } else { Scale::Linear }
}

/// Exchanges per second, second by second (the last, partial second scaled up to a rate).
pub(super) fn rate_over_time(charted: &[Charted]) -> String {
    let (name, title) = ("rate-over-time", "Throughput over time");
    let exchange = super::exchange_of_all(charted.iter().map(|c| c.result));
    let series: Vec<Series> = charted
        .iter()
        .filter(|c| !c.result.timeline.is_empty())
        .map(|c| {
            let points = c
                .result
                .timeline
                .iter()
                .filter_map(|point| {
                    let second = point.second as f64;
                    let covered = (c.result.elapsed_s - second).clamp(0.0, 1.0);
                    (covered >= MIN_PARTIAL_SECOND)
                        .then(|| (second + covered / 2.0, point.exchanges as f64 / covered))
                })
                .collect();
            Series { label: c.label.to_owned(), color: c.style.color, dash: c.style.dash, points }
        })
        .filter(|s| !s.points.is_empty())
        .collect();
    if series.is_empty() {
        return svg::empty(name, title, "No timeline: the runs recorded no whole second.");
    }
    let x = Axis { label: "time since start".to_owned(), scale: Scale::Linear, format: tick_seconds };
    let y = Axis { label: format!("{} / s", exchange.many), scale: Scale::Linear, format: tick_rate };
    svg::line_chart(name, title, x, y, &series)
}

/// p50 (dashed) and p99 latency second by second, from the timeline; one panel per result
/// when there would be more than [`MAX_LINES`] lines.
pub(super) fn latency_over_time(charted: &[Charted]) -> String {
    let exchange = super::exchange_of_all(charted.iter().map(|c| c.result));
    let (name, title) = ("latency-over-time", "Latency over time");
    let mut panels = Vec::new();
    for c in charted {
        let mut series = Vec::new();
        for (percentile, dashed) in [("p99", false), ("p50", true)] {
            let points: Vec<(f64, f64)> = c
                .result
                .timeline
                .iter()
                .filter_map(|point| {
                    let second = point.second as f64;
                    let covered = (c.result.elapsed_s - second).clamp(0.0, 1.0);
                    let value = if dashed { point.p50_us } else { point.p99_us };
                    (covered >= MIN_PARTIAL_SECOND && value > 0)
                        .then(|| (second + covered / 2.0, value as f64))
                })
                .collect();
            if !points.is_empty() {
                let label = format!("{} {percentile}", c.label);
                // p99 solid, p50 dashed: in panels the colour names the result already.
                let dash = dashed.then_some(SECONDARY_DASH);
                series.push(Series { label, color: c.style.color, dash, points });
            }
        }
        if !series.is_empty() {
            panels.push(Panel { label: c.label.to_owned(), color: c.style.color, series });
        }
    }
    let lines: Vec<&Series> = panels.iter().flat_map(|p| &p.series).collect();
    if lines.is_empty() {
        return svg::empty(name, title, &format!("No {} were recorded in any second.", exchange.many));
    }
    let scale = auto_scale(lines.iter().flat_map(|s| s.points.iter().map(|p| &p.1)));
    let x = Axis { label: "time since start".to_owned(), scale: Scale::Linear, format: tick_seconds };
    let y = Axis { label: format!("{} latency", exchange.one), scale, format: tick_micros };
    if lines.len() > MAX_LINES {
        return svg::small_multiples(name, title, x, y, &panels);
    }
    let series: Vec<Series> = lines.into_iter().cloned().collect();
    svg::line_chart(name, title, x, y, &series)
}

/// Latency at each percentile, HdrHistogram style; one line per result, plus a dashed
/// uncorrected line where coordinated-omission correction changed the numbers.
pub(super) fn latency_spectrum(charted: &[Charted]) -> String {
    let (name, title) = ("latency-spectrum", "Latency by percentile");
    let mut series = Vec::new();
    for c in charted {
        series.extend(spectrum(c.label.to_owned(), c.style, false, &c.metrics.latency));
        if c.result.summary.latency_uncorrected_us != c.result.summary.latency_us {
            let label = format!("{} (uncorrected)", c.label);
            series.extend(spectrum(label, c.style, true, &c.metrics.latency_uncorrected));
        }
    }
    let exchange = super::exchange_of_all(charted.iter().map(|c| c.result));
    if series.is_empty() {
        return svg::empty(name, title, &format!("No {} were measured.", exchange.many));
    }
    floor_at_p10(&mut series);
    let scale = auto_scale(series.iter().flat_map(|s| s.points.iter().map(|p| &p.1)));
    let x =
        Axis { label: "percentile".to_owned(), scale: Scale::Nines, format: |q, _| svg::percentile_label(q) };
    let y = Axis { label: format!("{} latency", exchange.one), scale, format: tick_micros };
    svg::line_chart(name, title, x, y, &series)
}

/// Raises every latency below the lowest p10 of all lines to that p10, so the axis starts
/// where the lines are: one freak fast round trip (the 0% point) would otherwise stretch a
/// log axis decades below every line. The cut lines run along the axis floor.
fn floor_at_p10(series: &mut [Series]) {
    let p10 = |s: &Series| s.points.iter().find(|(q, _)| *q >= 0.1).map(|p| p.1);
    let floor = series.iter().filter_map(p10).fold(f64::INFINITY, f64::min);
    if floor.is_finite() {
        for point in series.iter_mut().flat_map(|s| s.points.iter_mut()) {
            point.1 = point.1.max(floor);
        }
    }
}

fn spectrum(label: String, style: Style, uncorrected: bool, histogram: &Histogram<u64>) -> Option<Series> {
    if histogram.is_empty() {
        return None;
    }
    // Beyond log10(count) nines there is less than one value per step.
    let top = (histogram.len() as f64).log10().clamp(1.0, MAX_NINES);
    let steps = (top * f64::from(STEPS_PER_NINE)).floor() as u32;
    let points = (0..=steps)
        .map(|step| {
            let q = 1.0 - 10f64.powf(-f64::from(step) / f64::from(STEPS_PER_NINE));
            (q, histogram.value_at_quantile(q) as f64)
        })
        .collect();
    let dash = if uncorrected { Some(SECONDARY_DASH) } else { style.dash };
    Some(Series { label, color: style.color, dash, points })
}

/// The connect times' cumulative distribution: x = time, y = share of connections.
pub(super) fn connect_time(charted: &[Charted]) -> String {
    let (name, title) = ("connect-time", "Connection time (CDF)");
    let series: Vec<Series> = charted
        .iter()
        .filter(|c| !c.metrics.connect.is_empty())
        .map(|c| {
            let histogram = &c.metrics.connect;
            let points = (0..=200u32)
                .map(|i| {
                    let q = f64::from(i) / 200.0;
                    (histogram.value_at_quantile(q) as f64, q * 100.0)
                })
                .collect();
            Series { label: c.label.to_owned(), color: c.style.color, dash: c.style.dash, points }
        })
        .collect();
    if series.is_empty() {
        return svg::empty(name, title, "No connection was established.");
    }
    let scale = auto_scale(series.iter().flat_map(|s| s.points.iter().map(|p| &p.0)));
    let x = Axis { label: "TCP connect + WebSocket handshake".to_owned(), scale, format: tick_micros };
    let y = Axis { label: "connections".to_owned(), scale: Scale::Linear, format: tick_percent };
    svg::line_chart(name, title, x, y, &series)
}

/// Why no result has server samples, for the placeholder.
fn unprobed_message(charted: &[Charted]) -> String {
    let reasons: Vec<String> = charted
        .iter()
        .map(|c| {
            let reason = c.result.server.unprobed_reason.as_deref().unwrap_or("no samples were taken");
            format!("{}: {reason}", c.label)
        })
        .collect();
    format!("Server not probed ({}).", reasons.join("; "))
}

/// One series per probed result, each point computed from the server samples.
fn server_series(
    charted: &[Charted],
    points: impl Fn(&[crate::samples::ServerSample]) -> Vec<(f64, f64)>,
) -> Vec<Series> {
    charted
        .iter()
        .map(|c| Series {
            label: c.label.to_owned(),
            color: c.style.color,
            dash: c.style.dash,
            points: points(&c.result.server.samples),
        })
        .filter(|s| !s.points.is_empty())
        .collect()
}

/// The server's resident memory, sample by sample.
pub(super) fn server_rss(charted: &[Charted]) -> String {
    let (name, title) = ("server-rss", "Server memory (RSS) over time");
    let series = server_series(charted, |samples| {
        samples.iter().map(|s| (s.t_ms as f64 / 1e3, s.rss_bytes as f64 / MIB)).collect()
    });
    if series.is_empty() {
        return svg::empty(name, title, &unprobed_message(charted));
    }
    let x = Axis { label: "time since start".to_owned(), scale: Scale::Linear, format: tick_seconds };
    let y = Axis { label: "resident memory".to_owned(), scale: Scale::Linear, format: tick_mib };
    svg::line_chart(name, title, x, y, &series)
}

/// The server's CPU use between consecutive samples, in % of one core.
pub(super) fn server_cpu(charted: &[Charted]) -> String {
    let (name, title) = ("server-cpu", "Server CPU over time");
    let series = server_series(charted, |samples| {
        samples
            .windows(2)
            .filter_map(|pair| {
                let dt = pair[1].t_ms.saturating_sub(pair[0].t_ms) as f64 / 1e3;
                let cpu = (pair[1].cpu_seconds - pair[0].cpu_seconds).max(0.0);
                (dt > 0.0).then(|| ((pair[0].t_ms + pair[1].t_ms) as f64 / 2e3, cpu / dt * 100.0))
            })
            .collect()
    });
    if series.is_empty() {
        return svg::empty(name, title, &unprobed_message(charted));
    }
    let x = Axis { label: "time since start".to_owned(), scale: Scale::Linear, format: tick_seconds };
    let y = Axis { label: "CPU (% of one core)".to_owned(), scale: Scale::Linear, format: tick_percent };
    svg::line_chart(name, title, x, y, &series)
}

/// One comparison chart: its title, what "better" means (and what the marks mean), and the
/// chart.
#[derive(Debug)]
pub(super) struct Comparison {
    pub title: String,
    pub better: String,
    pub svg: String,
}

/// What one comparison chart shows: which number of a result, and how it is labelled.
#[derive(Debug)]
struct Metric {
    name: &'static str,
    title: String,
    higher_is_better: bool,
    axis: Axis,
    value: fn(f64) -> String,
    pick: fn(&RunResult) -> Option<f64>,
}

/// The comparison charts of results whose exchanges are called `exchange`; with `recovery`
/// (a result of a `--disrupt` run), how soon each server had its connections back too.
fn metrics(exchange: Exchange, recovery: bool) -> Vec<Metric> {
    let recovered = Metric {
        name: "compare-recovery-p99",
        title: "Time to 99 % of the lost connections back".to_owned(),
        higher_is_better: false,
        axis: Axis { label: "after the disruption".to_owned(), scale: Scale::Linear, format: tick_micros },
        value: format::micros,
        pick: |r| r.recovery.as_ref().and_then(|r| r.back_after.p99_s).map(|s| s * 1e6),
    };
    let mut metrics = vec![
        Metric {
            name: "compare-echoes-per-sec",
            title: format!("{} per second", exchange.title()),
            higher_is_better: true,
            axis: Axis {
                label: format!("{} / s (after warm-up)", exchange.many),
                scale: Scale::Linear,
                format: tick_rate,
            },
            value: format::rate,
            pick: |r| Some(r.summary.exchanges_per_sec),
        },
        Metric {
            name: "compare-p99-latency",
            title: "p99 latency".to_owned(),
            higher_is_better: false,
            axis: Axis {
                label: format!("99th percentile {} latency", exchange.one),
                scale: Scale::Linear,
                format: tick_micros,
            },
            value: format::micros,
            pick: |r| (r.summary.latency_us.count > 0).then_some(r.summary.latency_us.p99 as f64),
        },
        Metric {
            name: "compare-rss-peak",
            title: "Server RSS peak".to_owned(),
            higher_is_better: false,
            axis: Axis { label: "peak resident memory".to_owned(), scale: Scale::Linear, format: tick_mib },
            value: format::mib,
            pick: |r| r.server.rss_peak_bytes.map(|b| b as f64 / MIB),
        },
        Metric {
            name: "compare-echoes-per-cpu-second",
            title: format!("{} per server CPU-second", exchange.title()),
            higher_is_better: true,
            axis: Axis {
                label: format!("{} / server CPU-second", exchange.many),
                scale: Scale::Linear,
                format: tick_rate,
            },
            value: format::rate,
            pick: |r| r.server.exchanges_per_cpu_second,
        },
    ];
    if recovery {
        metrics.push(recovered);
    }
    metrics
}

/// The lowest and highest of `values`; `None` when there are none.
fn range(values: impl IntoIterator<Item = f64>) -> Option<(f64, f64)> {
    values.into_iter().fold(None, |range, value| match range {
        None => Some((value, value)),
        Some((low, high)) => Some((f64::min(low, value), f64::max(high, value))),
    })
}

/// One result's bar for `metric`: its value (with repeats, that of the median run, the one
/// the table shows, so the bar and the table never disagree) and the range over the repeats.
fn bar(c: &Charted, metric: &Metric) -> Bar {
    let value = (metric.pick)(c.result);
    let range = (c.repeats.len() >= 2).then(|| range(c.repeats.iter().filter_map(metric.pick))).flatten();
    let client_bound = c.result.client.bound.then(|| {
        c.result.client.bound_reason.clone().unwrap_or_else(|| "a client worker was saturated".to_owned())
    });
    Bar { label: c.label.to_owned(), color: c.style.color, value, range, client_bound }
}

/// Bar charts comparing the results on the headline numbers (for two or more results), best
/// first.
pub(super) fn comparisons(charted: &[Charted]) -> Vec<Comparison> {
    let repeated = charted.iter().map(|c| c.repeats.len()).max().unwrap_or(0);
    let bound = charted.iter().any(|c| c.result.client.bound);
    let exchange = super::exchange_of_all(charted.iter().map(|c| c.result));
    let recovery = charted.iter().any(|c| c.result.recovery.is_some());
    metrics(exchange, recovery)
        .into_iter()
        .map(|metric| {
            let bars: Vec<Bar> = charted.iter().map(|c| bar(c, &metric)).collect();
            let svg = if bars.iter().all(|b| b.value.is_none()) {
                svg::empty(metric.name, &metric.title, "No result has this number.")
            } else {
                bars::bar_chart(
                    metric.name,
                    &metric.title,
                    metric.axis.clone(),
                    metric.value,
                    bars,
                    metric.higher_is_better,
                )
            };
            let mut better =
                if metric.higher_is_better { "Higher is better" } else { "Lower is better" }.to_owned();
            better.push_str("; best first.");
            if repeated >= 2 {
                better.push_str(
                    &format!(" Bars: the run with the median {}/s (the one the table shows), whiskers: the lowest and highest of this number over the repeats.", exchange.many),
                );
            }
            if bound {
                better.push_str(" Hatched: client-bound, the client was the limit, not the server.");
            }
            Comparison { title: metric.title, better, svg }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_ranges_get_a_log_scale() {
        assert_eq!(auto_scale([300.0, 13_000.0].iter()), Scale::Log);
        assert_eq!(auto_scale([300.0, 900.0].iter()), Scale::Linear);
        assert_eq!(auto_scale([].iter()), Scale::Linear);
    }

    #[test]
    fn the_spectrum_axis_starts_at_the_lowest_p10() {
        let line =
            |points: Vec<(f64, f64)>| Series { label: String::new(), color: "#000", dash: None, points };
        let mut series = [
            line(vec![(0.0, 20.0), (0.1, 9_000.0), (0.9, 12_000.0)]),
            line(vec![(0.0, 5.0), (0.2, 15_000.0)]),
        ];
        floor_at_p10(&mut series);
        assert_eq!(series[0].points, [(0.0, 9_000.0), (0.1, 9_000.0), (0.9, 12_000.0)]);
        assert_eq!(series[1].points, [(0.0, 9_000.0), (0.2, 15_000.0)]);
    }

    #[test]
    fn repeats_give_their_range() {
        assert_eq!(range(vec![3.0, 1.0, 2.0]), Some((1.0, 3.0)));
        assert_eq!(range(vec![4.0]), Some((4.0, 4.0)));
        assert_eq!(range(vec![]), None);
    }
}
