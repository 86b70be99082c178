//! The report's lines for the churn scenario: connections per second sustained, the
//! handshake time from each connection's due time, how the closes ended, and the server's
//! descriptors and RSS before, at the peak of and after the run. Reads only the result
//! file.

use super::figures::{ChurnSummary, Drift};
use crate::result::RunResult;
use crate::units::format::{bytes, group, micros, plural, rate};

/// `(label, text)` lines; none unless the result is a churn run.
pub fn churn_lines(result: &RunResult) -> Vec<(&'static str, String)> {
    let Some(churn) = result.figures::<ChurnSummary>("churn") else { return Vec::new() };
    let connect = &result.summary.connect_us;
    let mut lines = vec![
        (
            "churn:",
            format!(
                "{} completed ({} connections/s sustained), {} attempted",
                plural(churn.cycles, "cycle", "cycles"),
                rate(churn.connections_per_sec),
                group(result.counters.connections_attempted)
            ),
        ),
        (
            "",
            format!(
                "handshake from due time: p50 {}, p90 {}, p99 {}, max {}",
                micros(connect.p50 as f64),
                micros(connect.p90 as f64),
                micros(connect.p99 as f64),
                micros(connect.max as f64)
            ),
        ),
        (
            "",
            format!(
                "closes answered {}, unanswered {}",
                group(churn.closes_answered),
                group(churn.closes_unanswered)
            ),
        ),
    ];
    if let Some(drift) = &churn.server_drift {
        lines.push(("server fds:", drift_text(&drift.fds, &group)));
        let mut rss = drift_text(&drift.rss_bytes, &bytes);
        if let Some(growth) = drift.rss_bytes.after.checked_sub(drift.rss_bytes.baseline).filter(|&g| g > 0)
            && churn.cycles > 0
        {
            // A leak grows with the cycles; a server's one-off growth does not.
            let per_cycle = growth as f64 / churn.cycles as f64;
            rss.pop();
            rss += &format!(", {per_cycle:.1} B per cycle)");
        }
        lines.push(("server RSS:", rss));
    }
    lines
}

/// `before B → peak P → after A (back to baseline | +N)`.
fn drift_text(drift: &Drift, show: &dyn Fn(u64) -> String) -> String {
    let verdict = match drift.after.checked_sub(drift.baseline) {
        Some(0) => "back to baseline".to_owned(),
        Some(up) => format!("+{} over baseline", show(up)),
        None => format!("-{} under baseline", show(drift.baseline - drift.after)),
    };
    format!(
        "before {} → peak {} → after {} ({verdict})",
        show(drift.baseline),
        show(drift.peak),
        show(drift.after)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drift_says_whether_the_figure_came_back() {
        let back = Drift { baseline: 12, peak: 530, after: 12 };
        assert_eq!(drift_text(&back, &group), "before 12 → peak 530 → after 12 (back to baseline)");
        let leak = Drift { baseline: 12, peak: 530, after: 15 };
        assert_eq!(drift_text(&leak, &group), "before 12 → peak 530 → after 15 (+3 over baseline)");
    }
}
