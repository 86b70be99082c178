//! One subscriber's delivery latencies, kept small enough to hold for every subscriber of a
//! run: counts in log-spaced buckets (four per doubling, so a bucket is at most 25 % wide)
//! from 1 µs to about 2^40 µs, and the exact maximum. Its percentiles are a bucket's upper
//! bound (`p99 ≤ X`), enough to name the slowest subscribers; the run's own latency
//! distribution stays in the lossless HDR histogram.

/// Buckets: 0–3 µs one each, then four per doubling up to 2^40 µs.
const BUCKETS: usize = 160;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LatencySketch {
    counts: Box<[u32; BUCKETS]>,
    count: u64,
    max_us: u64,
}

impl Default for LatencySketch {
    fn default() -> LatencySketch {
        LatencySketch { counts: Box::new([0; BUCKETS]), count: 0, max_us: 0 }
    }
}

impl LatencySketch {
    pub fn record(&mut self, micros: u64) {
        let bucket = &mut self.counts[bucket_of(micros)];
        *bucket = bucket.saturating_add(1);
        self.count += 1;
        self.max_us = self.max_us.max(micros);
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn max_us(&self) -> u64 {
        self.max_us
    }

    /// The upper bound of the bucket holding the `quantile` (0–1) of what was recorded (never
    /// above the maximum); 0 when nothing was.
    pub fn quantile_at_most(&self, quantile: f64) -> u64 {
        let rank = ((quantile * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0u64;
        for (bucket, &count) in self.counts.iter().enumerate() {
            seen += u64::from(count);
            if seen >= rank {
                return upper_bound(bucket).min(self.max_us);
            }
        }
        self.max_us
    }
}

fn bucket_of(micros: u64) -> usize {
    if micros < 4 {
        return micros as usize;
    }
    let exponent = 63 - micros.leading_zeros() as usize;
    let top = (micros >> (exponent - 2)) as usize; // 4..=7
    (4 * (exponent - 1) + top - 4).min(BUCKETS - 1)
}

fn upper_bound(bucket: usize) -> u64 {
    if bucket < 4 {
        return bucket as u64;
    }
    let exponent = bucket / 4 + 1;
    let top = (bucket % 4 + 4) as u64;
    ((top + 1) << (exponent - 2)) - 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_falls_in_a_bucket_whose_bounds_hold_it() {
        for micros in (0..5000).chain([65_535, 1 << 20, (1 << 39) + 12345]) {
            let bucket = bucket_of(micros);
            assert!(upper_bound(bucket) >= micros, "{micros} in {bucket}");
            if bucket > 0 {
                assert!(upper_bound(bucket - 1) < micros, "{micros} in {bucket}");
            }
            // A bucket is at most a quarter of its lower bound wide.
            let lower = if bucket == 0 { 0 } else { upper_bound(bucket - 1) + 1 };
            assert!((upper_bound(bucket) - lower) * 4 <= lower.max(1), "{micros}");
        }
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn percentiles_are_upper_bounds_within_a_quarter() {
        let mut sketch = LatencySketch::default();
        for micros in 1..=1000 {
            sketch.record(micros);
        }
        let p99 = sketch.quantile_at_most(0.99);
        assert!((990..=990 * 5 / 4).contains(&p99), "{p99}");
        assert_eq!(sketch.quantile_at_most(1.0), 1000);
        assert_eq!((sketch.count(), sketch.max_us()), (1000, 1000));
        assert_eq!(LatencySketch::default().quantile_at_most(0.99), 0);
    }
}
