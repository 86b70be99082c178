//! Gunther's Universal Scalability Law fitted to a closed-loop sweep: throughput at N
//! connections is X(N) = λN / (1 + σ(N − 1) + κN(N − 1)), σ the contention (the share
//! that serializes), κ the coherency delay (the cost every pair of connections adds), λ
//! the rate of one connection alone. The fit is non-linear least squares by
//! Levenberg–Marquardt (the `rmpfit` crate, MINPACK's algorithm as CMPFIT has it, with
//! σ held to [0, 1] and κ to [0, ∞) and an analytical Jacobian), on relative residuals
//! (X − X̂)/X: a geometric sweep spans decades of throughput and its noise is a share of
//! it, so every step counts alike. The `usl` crate fits the same model but asserts on
//! fewer than six points, panics when the fit fails, truncates N and gives no interval,
//! none of which a report may do.
//!
//! What it says is only what the data support: fewer than [`MIN_POINTS`] steps, a fit
//! that does not converge, an R² under [`MIN_R_SQUARED`] or no contention signal at all
//! are refusals with their reason, never numbers; the predicted peak N* = √((1 − σ)/κ)
//! is given only when κ's 95 % interval excludes 0.

use rmpfit::{MPConfig, MPFitter, MPPar, MPResult, MPSide, MPSuccess};
use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

/// The fewest steps a fit is made from (codahale/usl's minimum: six levels, 1 among them).
pub const MIN_POINTS: usize = 6;
/// A fit whose R² (on throughput) is under this does not describe the steps.
pub const MIN_R_SQUARED: f64 = 0.9;
/// The confidence of every interval given.
pub const CONFIDENCE: f64 = 0.95;

/// One measured step: N connections, X exchanges per second.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub n: f64,
    pub throughput: f64,
}

/// The model's three parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Model {
    pub sigma: f64,
    pub kappa: f64,
    pub lambda: f64,
}

impl Model {
    /// X(N), exchanges per second at `n` connections.
    pub fn rate_at(&self, n: f64) -> f64 {
        self.lambda * n / (1.0 + self.sigma * (n - 1.0) + self.kappa * n * (n - 1.0))
    }

    /// N* = √((1 − σ)/κ), where X(N) peaks; `None` when κ is 0 (no peak).
    pub fn peak(&self) -> Option<f64> {
        (self.kappa > 0.0).then(|| ((1.0 - self.sigma) / self.kappa).sqrt())
    }
}

/// A parameter with its 95 % interval. `at_bound`: the fit pressed it against its limit
/// (σ or κ at 0), where the interval is one-sided.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    pub value: f64,
    pub low: f64,
    pub high: f64,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub at_bound: bool,
}

impl Estimate {
    /// Whether the interval reaches 0: the data cannot tell the parameter from 0.
    pub fn reaches_zero(&self) -> bool {
        self.at_bound || self.low <= 0.0
    }
}

/// The predicted peak: N* with its interval (delta method) and X(N*).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Peak {
    pub connections: Estimate,
    pub throughput_per_sec: f64,
    /// N* lies beyond the largest load measured: an extrapolation.
    pub beyond_measured: bool,
}

/// A fit that the data support.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fitted {
    /// Steps the fit was made from.
    pub points: usize,
    pub sigma: Estimate,
    pub kappa: Estimate,
    /// Exchanges per second of one connection alone.
    pub lambda: Estimate,
    /// On throughput: 1 − Σ(X − X̂)² / Σ(X − X̄)².
    pub r_squared: f64,
    /// The predicted peak; `None` when κ cannot be told from 0 (`no_peak` says so).
    pub peak: Option<Peak>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_peak: Option<String>,
}

impl Fitted {
    /// The model at the fitted values.
    pub fn model(&self) -> Model {
        Model { sigma: self.sigma.value, kappa: self.kappa.value, lambda: self.lambda.value }
    }
}

/// What the fit of a sweep came to: parameters, or why there are none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Fit {
    Fitted(Fitted),
    Refused { reason: String },
}

impl Fit {
    fn refused(reason: impl Into<String>) -> Fit {
        Fit::Refused { reason: reason.into() }
    }

    /// The parameters, when the fit was made.
    pub fn fitted(&self) -> Option<&Fitted> {
        match self {
            Fit::Fitted(fitted) => Some(fitted),
            Fit::Refused { .. } => None,
        }
    }
}

/// The iteration bound of a fit (a test lowers it to see a fit that does not converge).
pub const MAX_ITERATIONS: usize = 200;

/// Fits the model to `points`, or says why it cannot.
pub fn fit(points: &[Point]) -> Fit {
    fit_within(points, MAX_ITERATIONS)
}

/// [`fit`] with at most `max_iterations` Levenberg–Marquardt iterations per start.
pub fn fit_within(points: &[Point], max_iterations: usize) -> Fit {
    let distinct = {
        let mut ns: Vec<u64> = points.iter().map(|p| p.n.to_bits()).collect();
        ns.sort_unstable();
        ns.dedup();
        ns.len()
    };
    if points.len() < MIN_POINTS || distinct < 4 {
        return Fit::refused(format!(
            "too few steps: {} usable at {distinct} different loads, and the fit needs at least \
             {MIN_POINTS} (a 1-connection step among them)",
            points.len()
        ));
    }
    if points.iter().any(|p| !(p.n >= 1.0 && p.throughput > 0.0 && p.throughput.is_finite())) {
        return Fit::refused("a step has no throughput: every step fitted must have measured exchanges");
    }
    let (found, iterations_ran_out) = match best_of_starts(points, max_iterations) {
        Ok(found) => found,
        Err(why) => return Fit::refused(format!("the fit did not converge ({why})")),
    };
    if iterations_ran_out {
        return Fit::refused(format!(
            "the fit did not converge within {max_iterations} iterations: the steps do not settle \
             on one σ, κ and λ"
        ));
    }
    judge(points, &found)
}

/// R², the intervals, the peak, and the refusals that need the fitted model.
fn judge(points: &[Point], found: &Found) -> Fit {
    let model = found.model;
    let mean = points.iter().map(|p| p.throughput).sum::<f64>() / points.len() as f64;
    let total: f64 = points.iter().map(|p| (p.throughput - mean).powi(2)).sum();
    let residual: f64 = points.iter().map(|p| (p.throughput - model.rate_at(p.n)).powi(2)).sum();
    let r_squared = if total > 0.0 { 1.0 - residual / total } else { 0.0 };
    if r_squared.is_nan() || r_squared < MIN_R_SQUARED {
        return Fit::refused(format!(
            "R² {r_squared:.2} is under {MIN_R_SQUARED:.2}: the Universal Scalability Law does not \
             describe these steps ({})",
            superlinear(points).unwrap_or_else(|| {
                "noisy steps, or a server that changes behaviour within the range".to_owned()
            })
        ));
    }
    let dof = points.len() - 3;
    let t = StudentsT::new(0.0, 1.0, dof as f64).map_or(2.0, |d| d.inverse_cdf(0.5 + CONFIDENCE / 2.0));
    // The residuals are relative; their scale is estimated from the fit itself.
    let scale = found.weighted_ssr / dof as f64;
    let variance = |i: usize, j: usize| found.covariance[i * 3 + j] * scale;
    let estimate = |i: usize, value: f64, (lo, hi): (f64, f64)| {
        let half = t * variance(i, i).max(0.0).sqrt();
        let at_bound = value <= lo;
        Estimate { value, low: (value - half).clamp(lo, hi), high: (value + half).clamp(lo, hi), at_bound }
    };
    let sigma = estimate(0, model.sigma, (0.0, 1.0));
    let kappa = estimate(1, model.kappa, (0.0, f64::INFINITY));
    let lambda = estimate(2, model.lambda, (0.0, f64::INFINITY));
    if sigma.reaches_zero() && kappa.reaches_zero() {
        return Fit::refused(
            "no contention signal: throughput grew in proportion to the connections over the whole \
             sweep (neither σ nor κ can be told from 0), so nothing about a limit can be fitted: sweep \
             to higher loads, where the server saturates",
        );
    }
    let largest = points.iter().map(|p| p.n).fold(0.0, f64::max);
    let (peak, no_peak) = match model.peak() {
        Some(n_star) if !kappa.reaches_zero() => {
            // The delta method: ∂N*/∂σ = −1/(2κN*), ∂N*/∂κ = −N*/(2κ).
            let gradient = [-1.0 / (2.0 * model.kappa * n_star), -n_star / (2.0 * model.kappa)];
            let var = gradient[0] * gradient[0] * variance(0, 0)
                + 2.0 * gradient[0] * gradient[1] * variance(0, 1)
                + gradient[1] * gradient[1] * variance(1, 1);
            let half = t * var.max(0.0).sqrt();
            let connections = Estimate {
                value: n_star,
                low: (n_star - half).max(1.0),
                high: n_star + half,
                at_bound: false,
            };
            let peak = Peak {
                connections,
                throughput_per_sec: model.rate_at(n_star),
                beyond_measured: n_star > largest,
            };
            (Some(peak), None)
        }
        _ => (
            None,
            Some(format!(
                "κ cannot be told from 0: the model levels off at λ/σ ≈ {:.0}/s without a peak",
                model.lambda / model.sigma.max(f64::MIN_POSITIVE)
            )),
        ),
    };
    Fit::Fitted(Fitted { points: points.len(), sigma, kappa, lambda, r_squared, peak, no_peak })
}

/// Past this, throughput per connection at a higher load than the lowest step's is growth
/// the law (σ ≥ 0) cannot give: superlinear.
const SUPERLINEAR: f64 = 1.2;

/// Where throughput grew faster than the connections, in words: the step whose rate per
/// connection most exceeds the lowest step's, when by more than [`SUPERLINEAR`].
fn superlinear(points: &[Point]) -> Option<String> {
    let lowest = points.iter().min_by(|a, b| a.n.total_cmp(&b.n))?;
    let base = lowest.throughput / lowest.n;
    let (point, ratio) =
        points.iter().map(|p| (p, p.throughput / p.n / base)).max_by(|a, b| a.1.total_cmp(&b.1))?;
    (ratio > SUPERLINEAR).then(|| {
        format!(
            "throughput grew faster than the connections: per connection, {ratio:.1}× at {} what it was at {}, \
             a gain the law does not model (with few connections every round trip waits for an idle \
             process to wake; more connections keep the processes awake)",
            point.n, lowest.n
        )
    })
}

/// A converged fit: the model, the sum of squared relative residuals, and the unscaled
/// covariance of (σ, κ, λ), row-major.
#[derive(Debug, Clone)]
struct Found {
    model: Model,
    weighted_ssr: f64,
    covariance: Vec<f64>,
}

/// The best of several starts (σ and κ spread over their plausible range; κ scaled to the
/// sweep's largest N), and whether the best one ran out of iterations. An error when no
/// start gave finite parameters.
fn best_of_starts(points: &[Point], max_iterations: usize) -> Result<(Found, bool), String> {
    let largest = points.iter().map(|p| p.n).fold(1.0, f64::max);
    let lambda = points.iter().map(|p| p.throughput / p.n).fold(0.0, f64::max);
    let mut best: Option<(Found, bool)> = None;
    let mut last_error = String::from("no start converged");
    for sigma in [0.01, 0.2, 0.7] {
        for reach in [0.01, 1.0, 100.0] {
            let mut start = [sigma, reach / (largest * largest), lambda];
            let mut problem = Problem::new(points, max_iterations);
            match problem.mpfit(&mut start) {
                Ok(status) if start.iter().all(|v| v.is_finite()) => {
                    let ran_out = matches!(status.success, MPSuccess::MaxIter | MPSuccess::NotDone);
                    let found = Found {
                        model: Model { sigma: start[0], kappa: start[1], lambda: start[2] },
                        weighted_ssr: status.best_norm,
                        covariance: status.covar,
                    };
                    if best.as_ref().is_none_or(|(b, _)| found.weighted_ssr < b.weighted_ssr) {
                        best = Some((found, ran_out));
                    }
                }
                Ok(_) => last_error = "the parameters went to infinity".to_owned(),
                Err(error) => last_error = error.to_string(),
            }
        }
    }
    best.ok_or(last_error)
}

/// The least-squares problem as `rmpfit` sees it.
struct Problem<'a> {
    points: &'a [Point],
    config: MPConfig,
    parameters: [MPPar; 3],
}

impl<'a> Problem<'a> {
    fn new(points: &'a [Point], max_iterations: usize) -> Problem<'a> {
        let bounded = |low: f64, high: Option<f64>| MPPar {
            limited_low: true,
            limit_low: low,
            limited_up: high.is_some(),
            limit_up: high.unwrap_or(0.0),
            side: MPSide::User,
            ..MPPar::new()
        };
        Problem {
            points,
            config: MPConfig { max_iter: max_iterations, ..MPConfig::new() },
            parameters: [bounded(0.0, Some(1.0)), bounded(0.0, None), bounded(f64::MIN_POSITIVE, None)],
        }
    }
}

impl MPFitter for Problem<'_> {
    fn eval(&mut self, params: &[f64], deviates: &mut [f64]) -> MPResult<()> {
        let model = Model { sigma: params[0], kappa: params[1], lambda: params[2] };
        for (deviate, point) in deviates.iter_mut().zip(self.points) {
            *deviate = (point.throughput - model.rate_at(point.n)) / point.throughput;
        }
        Ok(())
    }

    fn number_of_points(&self) -> usize {
        self.points.len()
    }

    fn config(&self) -> &MPConfig {
        &self.config
    }

    fn parameters(&self) -> &[MPPar] {
        &self.parameters
    }

    fn jacobian(
        &mut self,
        params: &[f64],
        deviates: &mut [f64],
        derivs: &mut [Option<Vec<f64>>],
    ) -> MPResult<()> {
        self.eval(params, deviates)?;
        let (sigma, kappa, lambda) = (params[0], params[1], params[2]);
        for (i, point) in self.points.iter().enumerate() {
            let n = point.n;
            let denominator = 1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0);
            let x_hat = lambda * n / denominator;
            // d(deviate)/dp = −(∂X̂/∂p) / X.
            let partials =
                [-x_hat * (n - 1.0) / denominator, -x_hat * n * (n - 1.0) / denominator, n / denominator];
            for (column, partial) in derivs.iter_mut().zip(partials) {
                if let Some(column) = column {
                    column[i] = -partial / point.throughput;
                }
            }
        }
        Ok(())
    }
}

/// How far a fit on the first steps predicted the last ones.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Holdout {
    /// Steps held out (the last usable ones).
    pub held_out: usize,
    /// The fit on the steps before them.
    pub fit: Fit,
    /// Per step held out: N, what was measured, what the fit predicted, the error in %
    /// of the measured value. Empty when the fit was refused.
    pub predictions: Vec<Prediction>,
    /// The mean of the absolute errors, %; `None` when the fit was refused.
    pub mean_absolute_error_percent: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    pub connections: f64,
    pub measured_per_sec: f64,
    pub predicted_per_sec: f64,
    pub error_percent: f64,
}

/// Fits the points but the last `k` and predicts those.
pub fn holdout(points: &[Point], k: usize) -> Holdout {
    let split = points.len().saturating_sub(k);
    let fit = fit(&points[..split]);
    let predictions: Vec<Prediction> = match fit.fitted() {
        Some(fitted) => points[split..]
            .iter()
            .map(|point| {
                let predicted = fitted.model().rate_at(point.n);
                Prediction {
                    connections: point.n,
                    measured_per_sec: point.throughput,
                    predicted_per_sec: predicted,
                    error_percent: (predicted - point.throughput) / point.throughput * 100.0,
                }
            })
            .collect(),
        None => Vec::new(),
    };
    let mean = (!predictions.is_empty())
        .then(|| predictions.iter().map(|p| p.error_percent.abs()).sum::<f64>() / predictions.len() as f64);
    Holdout { held_out: k, fit, predictions, mean_absolute_error_percent: mean }
}

#[cfg(test)]
mod tests;
