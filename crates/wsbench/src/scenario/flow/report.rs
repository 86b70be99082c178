//! The report's lines for the flow scenario: one per named step, with its latency, the
//! replies that matched nothing while connections were at it, and its expectations that
//! timed out. Reads only the result file.

use super::figures::FlowSummary;
use crate::result::RunResult;
use crate::units::format::{group, micros};

/// `(label, text)` lines; none unless the result is a flow run.
pub fn flow_lines(result: &RunResult) -> Vec<(&'static str, String)> {
    let Some(flow) = result.figures::<FlowSummary>("flow") else { return Vec::new() };
    if flow.steps.is_empty() {
        return vec![("flow:", "no step completed".to_owned())];
    }
    flow.steps
        .iter()
        .enumerate()
        .map(|(index, (name, step))| {
            let l = &step.latency_us;
            let latency = match l.count {
                0 => "no latency recorded".to_owned(),
                _ => format!(
                    "{} × p50 {}, p90 {}, p99 {}, max {}",
                    group(l.count),
                    micros(l.p50 as f64),
                    micros(l.p90 as f64),
                    micros(l.p99 as f64),
                    micros(l.max as f64)
                ),
            };
            let text =
                format!("{name}: {latency}; unmatched {}, late {}", group(step.unmatched), group(step.late));
            (if index == 0 { "flow steps:" } else { "" }, text)
        })
        .collect()
}
