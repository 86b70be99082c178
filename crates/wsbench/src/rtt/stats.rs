//! The numbers google-benchmark reports across repeats: mean, median and (sample) standard
//! deviation, plus what one repeat measured and the per-round-trip histogram's quantiles.
//! Kept apart from the I/O so they can be checked on known numbers.

use hdrhistogram::Histogram;
use serde::Serialize;

/// Highest round trip the nanosecond histogram tracks: one minute.
pub const HISTOGRAM_MAX_NS: u64 = 60_000_000_000;

/// A histogram of single round trips, in nanoseconds (3 significant digits), so sub-µs
/// differences between protocols stay visible.
pub fn new_ns_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HISTOGRAM_MAX_NS, 3).expect("valid histogram bounds")
}

/// Arithmetic mean; 0 for no values.
pub fn mean(values: &[f64]) -> f64 {
    if values.is_empty() { 0.0 } else { values.iter().sum::<f64>() / values.len() as f64 }
}

/// Median (the mean of the two middle values for an even count); 0 for no values.
pub fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    if sorted.len().is_multiple_of(2) { (sorted[mid - 1] + sorted[mid]) / 2.0 } else { sorted[mid] }
}

/// Sample standard deviation (n − 1 in the denominator, as google-benchmark reports it);
/// 0 for fewer than two values.
pub fn stddev(values: &[f64]) -> f64 {
    if values.len() < 2 {
        return 0.0;
    }
    let m = mean(values);
    let squares: f64 = values.iter().map(|v| (v - m) * (v - m)).sum();
    (squares / (values.len() - 1) as f64).sqrt()
}

/// Mean, median and standard deviation of one quantity across repeats.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Summary {
    pub mean: f64,
    pub median: f64,
    pub stddev: f64,
}

impl Summary {
    pub fn of(values: &[f64]) -> Summary {
        Summary { mean: mean(values), median: median(values), stddev: stddev(values) }
    }
}

/// What one timed repeat of `iterations` round trips measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repeat {
    pub iterations: u64,
    /// Wall time of the whole repeat.
    pub wall_ns: u64,
    /// The measuring thread's CPU time (user + system) during the repeat.
    pub cpu_ns: u64,
}

impl Repeat {
    /// Mean wall time per round trip, in µs.
    pub fn wall_us_per_round_trip(&self) -> f64 {
        self.wall_ns as f64 / 1e3 / self.iterations.max(1) as f64
    }

    /// Client CPU time per round trip, in µs.
    pub fn cpu_us_per_round_trip(&self) -> f64 {
        self.cpu_ns as f64 / 1e3 / self.iterations.max(1) as f64
    }
}

/// Quantiles of single round trips, in µs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Quantiles {
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
}

impl Quantiles {
    pub fn of(histogram: &Histogram<u64>) -> Quantiles {
        let us = |ns: u64| ns as f64 / 1e3;
        if histogram.is_empty() {
            return Quantiles { p50_us: 0.0, p99_us: 0.0, max_us: 0.0 };
        }
        Quantiles {
            p50_us: us(histogram.value_at_quantile(0.50)),
            p99_us: us(histogram.value_at_quantile(0.99)),
            max_us: us(histogram.max()),
        }
    }
}

/// `value / baseline`, when there is a usable baseline.
pub fn ratio(value: f64, baseline: Option<f64>) -> Option<f64> {
    baseline.filter(|b| *b > 0.0).map(|b| value / b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_median_stddev_of_known_numbers() {
        let values = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert_eq!(mean(&values), 5.0);
        assert_eq!(median(&values), 4.5);
        // Sum of squared deviations is 32; 32 / 7 is the sample variance.
        assert!((stddev(&values) - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(stddev(&[1.0, 2.0, 3.0]), 1.0);
    }

    #[test]
    fn degenerate_inputs_give_zero() {
        assert_eq!(Summary::of(&[]), Summary { mean: 0.0, median: 0.0, stddev: 0.0 });
        assert_eq!(Summary::of(&[42.0]), Summary { mean: 42.0, median: 42.0, stddev: 0.0 });
        assert_eq!(Quantiles::of(&new_ns_histogram()).max_us, 0.0);
    }

    #[test]
    fn repeats_divide_by_iterations() {
        let repeat = Repeat { iterations: 2000, wall_ns: 42_000_000, cpu_ns: 10_000_000 };
        assert_eq!(repeat.wall_us_per_round_trip(), 21.0);
        assert_eq!(repeat.cpu_us_per_round_trip(), 5.0);
    }

    #[test]
    fn quantiles_are_in_microseconds() {
        let mut histogram = new_ns_histogram();
        for ns in 1..=100u64 {
            histogram.record(ns * 1000).unwrap();
        }
        let q = Quantiles::of(&histogram);
        assert!((q.p50_us - 50.0).abs() < 0.1, "{q:?}");
        assert!((q.p99_us - 99.0).abs() < 0.1, "{q:?}");
        assert!((q.max_us - 100.0).abs() < 0.1, "{q:?}");
    }

    #[test]
    fn ratio_needs_a_positive_baseline() {
        assert_eq!(ratio(30.0, Some(20.0)), Some(1.5));
        assert_eq!(ratio(30.0, Some(0.0)), None);
        assert_eq!(ratio(30.0, None), None);
    }
}
