//! The report's lines for the flow scenario: one per named step, with its latency, the
//! replies that matched nothing while connections were at it, those that failed their checks
//! or were error replies, and its expectations that timed out; then the opening of the first
//! message that matched nothing at each step, so that what the server said is seen. Reads
//! only the result file.

use super::figures::FlowSummary;
use crate::result::RunResult;
use crate::units::format::{group, micros};

/// `(label, text)` lines; none unless the result is a flow run.
pub fn flow_lines(result: &RunResult) -> Vec<(&'static str, String)> {
    let Some(flow) = result.figures::<FlowSummary>("flow") else { return Vec::new() };
    if flow.steps.is_empty() {
        return vec![("flow:", "no step completed".to_owned())];
    }
    let mut lines: Vec<(&'static str, String)> = flow
        .steps
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
            let mut text =
                format!("{name}: {latency}; unmatched {}, late {}", group(step.unmatched), group(step.late));
            if step.mismatched > 0 {
                text += &format!(", failed checks {}", group(step.mismatched));
            }
            if step.refused > 0 {
                text += &format!(", error replies {}", group(step.refused));
            }
            if step.capture_missing > 0 {
                text += &format!(", captures missing {}", group(step.capture_missing));
            }
            if step.capture_too_long > 0 {
                text += &format!(", captures too long {}", group(step.capture_too_long));
            }
            (if index == 0 { "flow steps:" } else { "" }, text)
        })
        .collect();
    let samples = flow.steps.iter().filter_map(|(name, step)| Some((name, step.unmatched_sample.as_ref()?)));
    for (index, (name, sample)) in samples.enumerate() {
        lines.push((if index == 0 { "unmatched:" } else { "" }, format!("at {name}: {sample:?}")));
    }
    lines
}
