//! The knee of a latency curve: the load past which latency grows faster than throughput,
//! found by Kneedle (Satopää, Albrecht, Irwin and Raghavan, "Finding a 'Kneedle' in a
//! Haystack", ICDCS workshops 2011). Latency against throughput is a convex, increasing
//! curve: both axes are normalised to [0, 1], the difference curve is x − y (Kneedle's
//! y − x after flipping both axes), and a local maximum of it is the knee once the curve
//! afterwards falls below the maximum less the sensitivity times the mean spacing of x
//! (the offline form, sensitivity 1, no smoothing: a sweep has few steps). Points stay
//! in load order, so a step past saturation, whose throughput falls while latency climbs,
//! drops the difference at once, as it should.
//!
//! A knee is a step, never a point between steps: its uncertainty is the steps on either
//! side of it. Fewer than [`MIN_POINTS`] steps, a flat latency or throughput, or a curve
//! with no knee are said as such.

use serde::{Deserialize, Serialize};

/// The fewest steps a knee is looked for in.
pub const MIN_POINTS: usize = 4;
/// Kneedle's sensitivity S: how far the difference curve must fall after a maximum, in
/// mean x spacings, for the maximum to be the knee (the paper's default).
pub const SENSITIVITY: f64 = 1.0;

/// One step as the knee search sees it: its index among the sweep's steps, throughput
/// and latency.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub step: usize,
    pub throughput: f64,
    pub latency_us: f64,
}

/// Where the knee is: the step it falls on (0-based among the sweep's steps) and the
/// usable steps either side of it, which bound where the true knee lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Found {
    pub step: usize,
    pub below: Option<usize>,
    pub above: Option<usize>,
}

/// A knee, or why there is none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Knee {
    Found(Found),
    None { reason: String },
}

impl Knee {
    fn none(reason: impl Into<String>) -> Knee {
        Knee::None { reason: reason.into() }
    }

    /// The knee's step, when there is one.
    pub fn step(&self) -> Option<usize> {
        match self {
            Knee::Found(found) => Some(found.step),
            Knee::None { .. } => None,
        }
    }
}

/// Kneedle on `points`, given in load order.
pub fn find(points: &[Point]) -> Knee {
    if points.len() < MIN_POINTS {
        return Knee::none(format!(
            "too few steps: {} usable, and a knee needs at least {MIN_POINTS}",
            points.len()
        ));
    }
    let (x, y): (Vec<f64>, Vec<f64>) = points.iter().map(|p| (p.throughput, p.latency_us)).unzip();
    let (Some(xn), Some(yn)) = (normalised(&x), normalised(&y)) else {
        return Knee::none("throughput or latency was the same at every step: the curve has no bend");
    };
    let difference: Vec<f64> = xn.iter().zip(&yn).map(|(x, y)| x - y).collect();
    let spacing = xn.windows(2).map(|w| (w[1] - w[0]).abs()).sum::<f64>() / (xn.len() - 1) as f64;
    let mut candidate: Option<(usize, f64)> = None;
    for i in 1..difference.len() {
        let rising_into = difference[i] >= difference[i - 1];
        let falling_after = difference.get(i + 1).is_none_or(|next| *next < difference[i]);
        if rising_into && falling_after && i + 1 < difference.len() {
            candidate = Some((i, difference[i] - SENSITIVITY * spacing));
            continue;
        }
        if let Some((knee, threshold)) = candidate
            && difference[i] < threshold
        {
            return Knee::Found(Found {
                step: points[knee].step,
                below: Some(points[knee - 1].step),
                above: points.get(knee + 1).map(|p| p.step),
            });
        }
    }
    Knee::none(
        "no knee: latency never rose clearly faster than throughput over the steps measured (sweep to \
         higher loads)",
    )
}

/// `values` scaled to [0, 1]; `None` when they are all the same.
fn normalised(values: &[f64]) -> Option<Vec<f64>> {
    let low = values.iter().copied().fold(f64::INFINITY, f64::min);
    let high = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (high > low && high.is_finite() && low.is_finite())
        .then(|| values.iter().map(|v| (v - low) / (high - low)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn points(curve: &[(f64, f64)]) -> Vec<Point> {
        curve
            .iter()
            .enumerate()
            .map(|(step, &(throughput, latency_us))| Point { step, throughput, latency_us })
            .collect()
    }

    /// An M/M/1-like server of capacity 10,000/s at loads of 10 % to 99 %: latency 1/(μ − λ).
    fn queue(loads: &[f64]) -> Vec<Point> {
        let curve: Vec<(f64, f64)> =
            loads.iter().map(|share| (share * 10_000.0, 1e6 / (10_000.0 * (1.0 - share)))).collect();
        points(&curve)
    }

    #[test]
    fn a_queue_bends_where_latency_starts_to_climb() {
        let knee = find(&queue(&[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99]));
        // 1/(1 − ρ) is already 10× its base at 90 %: the knee is the step before it climbs.
        assert_eq!(knee, Knee::Found(Found { step: 8, below: Some(7), above: Some(9) }));
    }

    #[test]
    fn past_saturation_throughput_falls_and_the_knee_is_the_peak() {
        // Throughput rises, peaks at step 4 and falls while latency climbs.
        let curve = [
            (1_000.0, 100.0),
            (2_000.0, 110.0),
            (4_000.0, 120.0),
            (7_500.0, 150.0),
            (9_000.0, 400.0),
            (8_000.0, 2_000.0),
            (6_000.0, 9_000.0),
        ];
        let knee = find(&points(&curve));
        assert_eq!(knee, Knee::Found(Found { step: 4, below: Some(3), above: Some(5) }));
    }

    #[test]
    fn a_straight_or_flat_curve_has_no_knee() {
        let straight: Vec<(f64, f64)> =
            (1..=8).map(|i| (f64::from(i) * 1_000.0, f64::from(i) * 100.0)).collect();
        assert!(
            matches!(find(&points(&straight)), Knee::None { ref reason } if reason.starts_with("no knee"))
        );
        let flat: Vec<(f64, f64)> = (1..=8).map(|i| (f64::from(i) * 1_000.0, 250.0)).collect();
        assert!(
            matches!(find(&points(&flat)), Knee::None { ref reason } if reason.contains("the same at every step"))
        );
    }

    #[test]
    fn too_few_steps_have_no_knee() {
        let knee = find(&queue(&[0.5, 0.9, 0.99]));
        assert_eq!(
            knee,
            Knee::None { reason: "too few steps: 3 usable, and a knee needs at least 4".into() }
        );
    }

    #[test]
    fn the_knee_is_named_by_the_sweep_step_it_falls_on() {
        // Steps 0 and 2 were left out (client-bound): indices are the sweep's own.
        let mut usable = queue(&[0.1, 0.3, 0.5, 0.7, 0.9, 0.95, 0.99]);
        for (i, point) in usable.iter_mut().enumerate() {
            point.step = i * 2 + 1;
        }
        let Knee::Found(found) = find(&usable) else { panic!("no knee") };
        assert_eq!(found.below.unwrap() + 2, found.step);
        assert_eq!(found.above.unwrap(), found.step + 2);
    }
}
