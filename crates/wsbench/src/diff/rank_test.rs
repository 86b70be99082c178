//! The Mann–Whitney U test and the Hodges–Lehmann estimate of the shift between two sets of
//! repeated runs, with its confidence interval: what `wsbench diff` decides with when each
//! side has enough runs. Nothing here assumes a distribution of the runs' figures; the only
//! distribution needed is the normal one of large samples, taken from `statrs`.
//!
//! The p-value is exact for small samples: the null distribution of the rank sum over every
//! way of splitting the pooled runs into the two sides, counted by dynamic programming over
//! (doubled) mid-ranks, so ties are handled as the permutation test handles them; without
//! ties it is the classic exact distribution of U. Larger samples use the normal
//! approximation with the tie and continuity corrections (as scipy's `mannwhitneyu` does).

use statrs::distribution::{ContinuousCDF, Normal};

/// Pooled sample sizes up to this get the exact p-value and interval; above, the normal
/// approximation (the counting table grows with the cube of the pooled size).
const MAX_EXACT_POOLED: usize = 60;

/// Two values closer than this (relative) are the same value of U.
const U_TOLERANCE: f64 = 1e-9;

/// The outcome of one test of `new` against `base`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RankTest {
    /// U of `new`: the pairs (base, new) where new is larger, ties counting one half.
    pub u: f64,
    /// Two-sided p-value of "no shift".
    pub p_value: f64,
    /// Whether `p_value` is exact (else the normal approximation).
    pub exact: bool,
}

/// The Mann–Whitney U test of `new` against `base` (two-sided). Both must be non-empty.
pub fn mann_whitney(base: &[f64], new: &[f64]) -> RankTest {
    let u = u_statistic(base, new);
    let pooled: Vec<f64> = base.iter().chain(new).copied().collect();
    let ranks = doubled_mid_ranks(&pooled);
    let (n_base, n_new) = (base.len(), new.len());
    if pooled.len() > MAX_EXACT_POOLED {
        return RankTest { u, p_value: normal_p_value(u, n_base, n_new, &ranks), exact: false };
    }
    let counts = rank_sum_counts(&ranks, n_new);
    // U = R − n(n+1)/2, so with doubled ranks 2U = 2R − n(n+1).
    let offset = (n_new * (n_new + 1)) as f64;
    let total: f64 = counts.iter().sum();
    let (mut at_most, mut at_least) = (0.0, 0.0);
    for (doubled_sum, count) in counts.iter().enumerate().filter(|(_, c)| **c > 0.0) {
        let value = (doubled_sum as f64 - offset) / 2.0;
        let tolerance = U_TOLERANCE * (1.0 + u.abs());
        if value <= u + tolerance {
            at_most += count;
        }
        if value >= u - tolerance {
            at_least += count;
        }
    }
    let p_value = (2.0 * at_most.min(at_least) / total).min(1.0);
    RankTest { u, p_value, exact: true }
}

/// U of `new` against `base`: pairs where the new value is larger, plus half the ties.
pub fn u_statistic(base: &[f64], new: &[f64]) -> f64 {
    let mut u = 0.0;
    for b in base {
        for n in new {
            u += match n.partial_cmp(b) {
                Some(std::cmp::Ordering::Greater) => 1.0,
                Some(std::cmp::Ordering::Equal) => 0.5,
                _ => 0.0,
            };
        }
    }
    u
}

/// The Hodges–Lehmann estimate of the shift from `base` to `new` (the median of every
/// difference new − base) with its confidence interval at `confidence`, from the order
/// statistics of those differences that the U distribution picks (the interval R's
/// `wilcox.test(conf.int = TRUE)` gives). `None` for an empty side.
pub fn hodges_lehmann(base: &[f64], new: &[f64], confidence: f64) -> Option<Shift> {
    if base.is_empty() || new.is_empty() {
        return None;
    }
    let mut differences: Vec<f64> = new.iter().flat_map(|n| base.iter().map(move |b| n - b)).collect();
    differences.sort_by(f64::total_cmp);
    let pairs = differences.len();
    let estimate = median_of_sorted(&differences);
    let k = interval_rank(base.len(), new.len(), 1.0 - confidence);
    Some(Shift { estimate, low: differences[k - 1], high: differences[pairs - k] })
}

/// A shift with its confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Shift {
    pub estimate: f64,
    pub low: f64,
    pub high: f64,
}

/// The median of sorted, non-empty `values`.
pub fn median_of_sorted(values: &[f64]) -> f64 {
    let middle = values.len() / 2;
    match values.len() % 2 {
        1 => values[middle],
        _ => (values[middle - 1] + values[middle]) / 2.0,
    }
}

/// The 1-based rank k of the lower end of the interval (the upper end is the k-th largest
/// difference): the largest k with P(U < k) ≤ α/2 under "no shift", at least 1 (then the
/// interval is the whole range of differences, wider than asked).
fn interval_rank(n_base: usize, n_new: usize, alpha: f64) -> usize {
    let pairs = n_base * n_new;
    let pooled = n_base + n_new;
    if pooled > MAX_EXACT_POOLED {
        let sd = (pairs as f64 * (pooled + 1) as f64 / 12.0).sqrt();
        let z = standard_normal().inverse_cdf(1.0 - alpha / 2.0);
        let k = (pairs as f64 / 2.0 - z * sd).floor();
        return (k as usize).clamp(1, pairs.div_ceil(2));
    }
    let ranks: Vec<u64> = (1..=pooled as u64).map(|r| 2 * r).collect();
    let counts = rank_sum_counts(&ranks, n_new);
    let total: f64 = counts.iter().sum();
    // Without ties every doubled sum is even: U = (sum − n(n+1)) / 2.
    let offset = n_new * (n_new + 1);
    let mut below = 0.0;
    let mut k = 0;
    for u in 0..=pairs {
        below += counts.get(2 * u + offset).copied().unwrap_or(0.0);
        if below / total > alpha / 2.0 {
            break;
        }
        k = u + 1;
    }
    k.clamp(1, pairs.div_ceil(2))
}

/// Mid-ranks (1-based) of `values`, doubled so that ties' halves stay integers.
fn doubled_mid_ranks(values: &[f64]) -> Vec<u64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut ranks = vec![0; values.len()];
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && values[order[end]] == values[order[start]] {
            end += 1;
        }
        // Ranks start+1 ..= end share their mean; doubled: start + 1 + end.
        for &index in &order[start..end] {
            ranks[index] = (start + 1 + end) as u64;
        }
        start = end;
    }
    ranks
}

/// How many ways of choosing `k` of `doubled_ranks` give each sum (index: the doubled sum),
/// as f64 (the counts outgrow u64 long before the precision matters).
fn rank_sum_counts(doubled_ranks: &[u64], k: usize) -> Vec<f64> {
    let max_sum: usize = doubled_ranks.iter().map(|&r| r as usize).sum();
    // ways[j][s]: subsets of size j of the ranks seen so far with doubled sum s.
    let mut ways = vec![vec![0.0f64; max_sum + 1]; k + 1];
    ways[0][0] = 1.0;
    for &rank in doubled_ranks {
        let rank = rank as usize;
        for j in (1..=k).rev() {
            let (smaller, larger) = ways.split_at_mut(j);
            for s in (rank..=max_sum).rev() {
                larger[0][s] += smaller[j - 1][s - rank];
            }
        }
    }
    ways.swap_remove(k)
}

/// The two-sided p-value of `u` from the normal approximation, with the tie correction of
/// the variance and a continuity correction of one half.
fn normal_p_value(u: f64, n_base: usize, n_new: usize, doubled_ranks: &[u64]) -> f64 {
    let (n1, n2) = (n_base as f64, n_new as f64);
    let n = n1 + n2;
    let mut tie_term = 0.0;
    let mut sorted = doubled_ranks.to_vec();
    sorted.sort_unstable();
    for group in sorted.chunk_by(|a, b| a == b) {
        let t = group.len() as f64;
        tie_term += t * t * t - t;
    }
    let variance = n1 * n2 / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
    if variance <= 0.0 {
        return 1.0;
    }
    let distance = ((u - n1 * n2 / 2.0).abs() - 0.5).max(0.0);
    (2.0 * (1.0 - standard_normal().cdf(distance / variance.sqrt()))).min(1.0)
}

fn standard_normal() -> Normal {
    Normal::standard()
}

#[cfg(test)]
#[path = "rank_test_tests.rs"]
mod tests;
