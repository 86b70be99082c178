//! The C10K WebSocket test's statistics block: beyond percentiles, the shape of a
//! distribution: arithmetic, geometric and harmonic means, variance, skewness, kurtosis and
//! a ten-bin histogram, computed from an HdrHistogram (each recorded value weighted by its
//! count, at the histogram's 3-digit precision).

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Bins of the value histogram, as in the seed's output.
pub const HISTOGRAM_BINS: usize = 10;

/// Shape of a distribution in microseconds; all zero when nothing was recorded.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Distribution {
    pub count: u64,
    pub min: u64,
    pub max: u64,
    pub arithmetic_mean: f64,
    pub geometric_mean: f64,
    pub harmonic_mean: f64,
    pub median: u64,
    pub variance: f64,
    pub standard_deviation: f64,
    pub skewness: f64,
    /// Excess kurtosis (0 for a normal distribution).
    pub kurtosis: f64,
    pub p75: u64,
    pub p95: u64,
    pub p99: u64,
    pub p999: u64,
    /// `HISTOGRAM_BINS` equal-width bins from min to max: (upper bound, count).
    pub histogram: Vec<(u64, u64)>,
}

impl Distribution {
    pub fn from_histogram(histogram: &Histogram<u64>) -> Distribution {
        let count = histogram.len();
        if count == 0 {
            return Distribution::default();
        }
        let n = count as f64;
        let values: Vec<(f64, f64)> = histogram
            .iter_recorded()
            .map(|v| (histogram.median_equivalent(v.value_iterated_to()) as f64, v.count_at_value() as f64))
            .collect();
        let mean = values.iter().map(|(v, c)| v * c).sum::<f64>() / n;
        let moment = |k: i32| values.iter().map(|(v, c)| (v - mean).powi(k) * c).sum::<f64>() / n;
        let variance = moment(2);
        let deviation = variance.sqrt();
        let (skewness, kurtosis) = if deviation > 0.0 {
            (moment(3) / deviation.powi(3), moment(4) / variance.powi(2) - 3.0)
        } else {
            (0.0, 0.0)
        };
        let geometric_mean = (values.iter().map(|(v, c)| v.max(1.0).ln() * c).sum::<f64>() / n).exp();
        let harmonic_mean = n / values.iter().map(|(v, c)| c / v.max(1.0)).sum::<f64>();
        let (min, max) = (histogram.min(), histogram.max());
        let width = ((max - min) / HISTOGRAM_BINS as u64).max(1);
        let mut bins: Vec<(u64, u64)> = (1..=HISTOGRAM_BINS as u64).map(|i| (min + width * i, 0)).collect();
        for value in histogram.iter_recorded() {
            let at = histogram.median_equivalent(value.value_iterated_to()).clamp(min, max);
            let bin = (((at - min) / width) as usize).min(HISTOGRAM_BINS - 1);
            bins[bin].1 += value.count_at_value();
        }
        Distribution {
            count,
            min,
            max,
            arithmetic_mean: mean,
            geometric_mean,
            harmonic_mean,
            median: histogram.value_at_quantile(0.5),
            variance,
            standard_deviation: deviation,
            skewness,
            kurtosis,
            p75: histogram.value_at_quantile(0.75),
            p95: histogram.value_at_quantile(0.95),
            p99: histogram.value_at_quantile(0.99),
            p999: histogram.value_at_quantile(0.999),
            histogram: bins,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{new_histogram, record_us};

    fn histogram_of(values: &[u64]) -> Histogram<u64> {
        let mut h = new_histogram();
        for &v in values {
            record_us(&mut h, v);
        }
        h
    }

    #[test]
    fn means_of_known_values() {
        // 100 and 400: arithmetic 250, geometric 200, harmonic 160.
        let d = Distribution::from_histogram(&histogram_of(&[100, 400]));
        assert!((d.arithmetic_mean - 250.0).abs() < 0.5, "{d:?}");
        assert!((d.geometric_mean - 200.0).abs() < 0.5, "{d:?}");
        assert!((d.harmonic_mean - 160.0).abs() < 0.5, "{d:?}");
        assert!((d.variance - 22_500.0).abs() < 100.0, "{d:?}");
        assert_eq!(d.skewness, 0.0);
    }

    #[test]
    fn skew_and_kurtosis_have_the_right_sign() {
        let mut values = vec![100; 990];
        values.extend([10_000; 10]);
        let d = Distribution::from_histogram(&histogram_of(&values));
        assert!(d.skewness > 5.0, "a long right tail is positively skewed: {d:?}");
        assert!(d.kurtosis > 10.0, "rare outliers give high kurtosis: {d:?}");
        assert_eq!(d.histogram.len(), HISTOGRAM_BINS);
        assert_eq!(d.histogram.iter().map(|(_, c)| c).sum::<u64>(), 1000);
        assert_eq!(d.histogram[0].1, 990);
        assert_eq!(d.histogram[HISTOGRAM_BINS - 1].1, 10);
    }

    #[test]
    fn empty_histogram_gives_zeros() {
        assert_eq!(Distribution::from_histogram(&new_histogram()), Distribution::default());
    }
}
