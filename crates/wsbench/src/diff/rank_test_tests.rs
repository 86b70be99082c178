//! The U statistic, the p-values and the Hodges–Lehmann interval against values computed by
//! an independent implementation: scipy 1.17.1 (numpy 2.4.6, Python 3.11.7), once, with the
//! script below, its output pasted into the constants of each test.
//!
//! ```text
//! python3 -m venv /tmp/scipyenv && /tmp/scipyenv/bin/pip install scipy numpy
//! /tmp/scipyenv/bin/python reference.py
//! ```
//!
//! `reference.py`:
//!
//! ```text
//! import itertools, numpy as np
//! from scipy import stats
//! cases = {
//!   "separated_5_5": ([10.1, 10.4, 9.8, 10.0, 10.3], [10.6, 10.9, 10.5, 11.2, 10.7]),
//!   "overlapping_5_5": ([101.0, 97.0, 104.0, 99.5, 102.5], [103.0, 98.0, 106.0, 100.5, 105.5]),
//!   "uneven_6_7": ([3.2, 1.9, 4.4, 2.8, 3.9, 2.1], [4.1, 5.0, 3.5, 4.8, 2.5, 5.6, 4.6]),
//!   "ties_5_5": ([105.0, 106.0, 106.0, 107.0, 108.0], [106.0, 107.0, 108.0, 108.0, 110.0]),
//! }
//! rng = np.random.default_rng(34)
//! cases["large_40_35"] = (list(np.round(rng.normal(100, 5, 40), 1)), list(np.round(rng.normal(103, 5, 35), 1)))
//! def u_of(x, y):  # U of y against x
//!     return sum((b > a) + 0.5 * (b == a) for a in x for b in y)
//! for name, (base, new) in cases.items():
//!     n1, n2 = len(base), len(new)
//!     if name.startswith("ties"):
//!         r = stats.mannwhitneyu(new, base, method="asymptotic")
//!         perm = stats.permutation_test((new, base), lambda a, b: stats.mannwhitneyu(a, b).statistic,
//!                                       permutation_type="independent", n_resamples=np.inf, alternative="two-sided")
//!         p, how = perm.pvalue, "permutation_test exact"
//!     elif n1 + n2 > 60:
//!         r = stats.mannwhitneyu(new, base, method="asymptotic"); p, how = r.pvalue, "asymptotic"
//!     else:
//!         r = stats.mannwhitneyu(new, base, method="exact"); p, how = r.pvalue, "exact"
//!     print(f"{name}: U={r.statistic!r} p={p!r} ({how})")
//!     if n1 + n2 <= 60 and not name.startswith("ties"):
//!         d = sorted(b - a for b in new for a in base)
//!         null = [sum(c) - n2 * (n2 + 1) / 2 for c in itertools.combinations(range(1, n1 + n2 + 1), n2)]
//!         for conf in (0.95, 0.90):
//!             alpha = 1 - conf
//!             k = 0
//!             while sum(u < k + 1 for u in null) / len(null) <= alpha / 2: k += 1
//!             k = max(k, 1)
//!             print(f"  HL conf={conf}: estimate={float(np.median(d))!r} low={d[k-1]!r} high={d[len(d)-k]!r} (k={k})")
//! ```
//!
//! Its output:
//!
//! ```text
//! separated_5_5: U=np.float64(25.0) p=np.float64(0.007936507936507936) (exact)
//!   HL conf=0.95: estimate=0.5999999999999996 low=0.1999999999999993 high=1.0999999999999996 (k=3)
//!   HL conf=0.9: estimate=0.5999999999999996 low=0.29999999999999893 high=0.9000000000000004 (k=5)
//! overlapping_5_5: U=np.float64(17.0) p=np.float64(0.42063492063492064) (exact)
//!   HL conf=0.95: estimate=2.0 low=-3.5 high=6.5 (k=3)
//!   HL conf=0.9: estimate=2.0 low=-2.0 high=6.0 (k=5)
//! uneven_6_7: U=np.float64(35.0) p=np.float64(0.05128205128205128) (exact)
//!   HL conf=0.95: estimate=1.3499999999999996 low=-0.2999999999999998 high=2.6999999999999997 (k=7)
//!   HL conf=0.9: estimate=1.3499999999999996 low=0.19999999999999973 high=2.4999999999999996 (k=9)
//! ties_5_5: U=np.float64(19.5) p=np.float64(0.2222222222222222) (permutation_test exact)
//! large_40_35: U=np.float64(921.5) p=np.float64(0.018909424093720796) (asymptotic)
//! ```
//!
//! scipy's `exact` method ignores ties, so the case with ties is checked against the exact
//! permutation test of the same U (`permutation_test` over every split), which is what this
//! module computes for ties; the interval is checked against brute force over every split
//! (`itertools.combinations`), not against this module's counting.

use super::*;

const SEPARATED: ([f64; 5], [f64; 5]) = ([10.1, 10.4, 9.8, 10.0, 10.3], [10.6, 10.9, 10.5, 11.2, 10.7]);
const OVERLAPPING: ([f64; 5], [f64; 5]) =
    ([101.0, 97.0, 104.0, 99.5, 102.5], [103.0, 98.0, 106.0, 100.5, 105.5]);
const UNEVEN: ([f64; 6], [f64; 7]) = ([3.2, 1.9, 4.4, 2.8, 3.9, 2.1], [4.1, 5.0, 3.5, 4.8, 2.5, 5.6, 4.6]);
const TIES: ([f64; 5], [f64; 5]) = ([105.0, 106.0, 106.0, 107.0, 108.0], [106.0, 107.0, 108.0, 108.0, 110.0]);
const LARGE_BASE: [f64; 40] = [
    99.8, 93.7, 112.9, 102.4, 103.2, 99.0, 100.3, 101.7, 101.0, 97.0, 103.1, 102.5, 99.4, 96.4, 95.6, 95.0,
    101.4, 98.2, 104.4, 95.6, 103.6, 100.1, 97.2, 105.2, 100.8, 104.0, 105.5, 102.5, 97.6, 100.9, 105.0,
    96.9, 102.7, 99.0, 97.6, 97.2, 94.6, 98.7, 101.9, 90.1,
];
const LARGE_NEW: [f64; 35] = [
    101.0, 104.0, 101.0, 106.7, 98.9, 106.5, 107.0, 104.9, 99.2, 111.7, 101.7, 105.4, 98.1, 99.4, 104.8,
    96.0, 105.1, 111.5, 95.9, 101.4, 107.1, 101.1, 106.9, 103.7, 94.5, 90.0, 101.6, 107.3, 98.6, 108.9, 94.9,
    106.0, 101.8, 102.2, 101.0,
];

/// Base, new, confidence, and the estimate, low and high end reference.py printed.
type IntervalCase<'a> = (&'a [f64], &'a [f64], f64, [f64; 3]);

fn close(got: f64, want: f64) -> bool {
    (got - want).abs() <= 1e-9 * (1.0 + want.abs())
}

#[test]
fn u_and_exact_p_values_match_scipy() {
    let cases: [(&[f64], &[f64], f64, f64); 3] = [
        (&SEPARATED.0, &SEPARATED.1, 25.0, 0.007936507936507936),
        (&OVERLAPPING.0, &OVERLAPPING.1, 17.0, 0.42063492063492064),
        (&UNEVEN.0, &UNEVEN.1, 35.0, 0.05128205128205128),
    ];
    for (base, new, u, p) in cases {
        let test = mann_whitney(base, new);
        assert!(test.exact, "{test:?}");
        assert_eq!(test.u, u, "{base:?} {new:?}");
        assert!(close(test.p_value, p), "{test:?}, scipy p = {p}");
    }
}

#[test]
fn ties_get_the_exact_permutation_p_value() {
    let test = mann_whitney(&TIES.0, &TIES.1);
    assert_eq!(test.u, 19.5);
    assert!(test.exact);
    assert!(close(test.p_value, 0.2222222222222222), "{test:?}");
}

#[test]
fn large_samples_get_scipys_normal_approximation() {
    let test = mann_whitney(&LARGE_BASE, &LARGE_NEW);
    assert!(!test.exact);
    assert_eq!(test.u, 921.5);
    assert!(close(test.p_value, 0.018909424093720796), "{test:?}");
}

#[test]
fn hodges_lehmann_intervals_match_brute_force() {
    // (base, new, confidence, estimate, low, high) as reference.py printed them.
    let cases: [IntervalCase; 6] = [
        (&SEPARATED.0, &SEPARATED.1, 0.95, [0.5999999999999996, 0.1999999999999993, 1.0999999999999996]),
        (&SEPARATED.0, &SEPARATED.1, 0.90, [0.5999999999999996, 0.29999999999999893, 0.9000000000000004]),
        (&OVERLAPPING.0, &OVERLAPPING.1, 0.95, [2.0, -3.5, 6.5]),
        (&OVERLAPPING.0, &OVERLAPPING.1, 0.90, [2.0, -2.0, 6.0]),
        (&UNEVEN.0, &UNEVEN.1, 0.95, [1.3499999999999996, -0.2999999999999998, 2.6999999999999997]),
        (&UNEVEN.0, &UNEVEN.1, 0.90, [1.3499999999999996, 0.19999999999999973, 2.4999999999999996]),
    ];
    for (base, new, confidence, [estimate, low, high]) in cases {
        let shift = hodges_lehmann(base, new, confidence).unwrap();
        let want = Shift { estimate, low, high };
        let near = close(shift.estimate, estimate) && close(shift.low, low) && close(shift.high, high);
        assert!(near, "{base:?} {new:?} at {confidence}: {shift:?}, want {want:?}");
    }
}

#[test]
fn identical_sides_are_no_evidence_and_a_shift_of_zero() {
    let same = [5.0; 5];
    let test = mann_whitney(&same, &same);
    assert_eq!((test.u, test.p_value), (12.5, 1.0));
    let shift = hodges_lehmann(&same, &same, 0.9).unwrap();
    assert_eq!(shift, Shift { estimate: 0.0, low: 0.0, high: 0.0 });
    assert_eq!(hodges_lehmann(&[], &same, 0.9), None);
}

#[test]
fn too_few_runs_give_the_whole_range_of_differences() {
    // 2 vs 2: the smallest two-sided p is 1/3, so no narrower interval has 90 % confidence.
    let shift = hodges_lehmann(&[1.0, 2.0], &[4.0, 7.0], 0.9).unwrap();
    assert_eq!((shift.low, shift.high), (2.0, 6.0));
    assert!(close(mann_whitney(&[1.0, 2.0], &[4.0, 7.0]).p_value, 1.0 / 3.0));
}
