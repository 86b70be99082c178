//! The flow scenario's figures in the result file: for each named step, its latency (from
//! the step's histogram, kept losslessly in `histograms.flow_steps`), the replies that
//! matched nothing while a connection was at it (and the first one's opening), its replies
//! that failed their checks or were error replies, and its expectations that timed out.
//! Computed from the flow's section, so a merge recomputes them from merged histograms.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::section::FlowSection;
use crate::result::ConnectStats;

/// `flow` in the result file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlowSummary {
    pub steps: BTreeMap<String, FlowStep>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlowStep {
    /// Latency in µs (count, min, mean, p50, p90, p99, max).
    pub latency_us: ConnectStats,
    pub unmatched: u64,
    pub late: u64,
    /// Replies that failed `check-json`/`check-regex`.
    #[serde(default)]
    pub mismatched: u64,
    /// Replies the message protocol read as errors.
    #[serde(default)]
    pub refused: u64,
    /// Matched messages in which a capture found nothing, and sends lacking a variable.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub capture_missing: u64,
    /// Matched messages whose captured value was longer than the bound.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub capture_too_long: u64,
    /// The opening of the first message that matched nothing at this step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unmatched_sample: Option<String>,
}

impl FlowSummary {
    pub fn of(section: &FlowSection) -> FlowSummary {
        let names: BTreeSet<&String> = section
            .steps
            .keys()
            .chain(section.unmatched.keys())
            .chain(section.late.keys())
            .chain(section.mismatched.keys())
            .chain(section.refused.keys())
            .chain(section.capture_missing.keys())
            .chain(section.capture_too_long.keys())
            .collect();
        let steps = names
            .into_iter()
            .map(|name| {
                let latency_us =
                    section.steps.get(name).map(ConnectStats::from_histogram).unwrap_or_default();
                let count = |map: &BTreeMap<String, u64>| map.get(name).copied().unwrap_or(0);
                let step = FlowStep {
                    latency_us,
                    unmatched: count(&section.unmatched),
                    late: count(&section.late),
                    mismatched: count(&section.mismatched),
                    refused: count(&section.refused),
                    capture_missing: count(&section.capture_missing),
                    capture_too_long: count(&section.capture_too_long),
                    unmatched_sample: section.unmatched_samples.get(name).cloned(),
                };
                (name.clone(), step)
            })
            .collect();
        FlowSummary { steps }
    }
}

fn is_zero(count: &u64) -> bool {
    *count == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{Section, record_us};

    #[test]
    fn every_step_named_anywhere_has_a_row() {
        let mut section = FlowSection::default();
        record_us(section.step("call"), 100);
        record_us(section.step("call"), 300);
        section.late.insert("ack".to_owned(), 2);
        let summary = FlowSummary::of(&section);
        assert_eq!(summary.steps["call"].latency_us.count, 2);
        assert_eq!((summary.steps["call"].unmatched, summary.steps["call"].late), (0, 0));
        assert_eq!((summary.steps["ack"].latency_us.count, summary.steps["ack"].late), (0, 2));
    }

    /// Two runs' step histograms, written to result files and merged from them, equal the
    /// two merged directly, value for value.
    #[test]
    fn step_histograms_merge_losslessly_through_result_files() {
        let mut parts = [FlowSection::default(), FlowSection::default()];
        for (index, part) in parts.iter_mut().enumerate() {
            for value in 1..=2_000u64 {
                record_us(part.step(if value % 3 == 0 { "ack" } else { "call" }), value * (index as u64 + 1));
            }
            part.unmatched.insert("call".to_owned(), index as u64 + 1);
        }
        let mut direct = parts[0].clone();
        direct.merge(&parts[1]);
        let mut via_files = FlowSection::default();
        for part in &parts {
            let mut outcome = crate::fixture::closed_loop();
            outcome.scenario = "flow".to_owned();
            outcome.metrics.section = Some(part.boxed());
            let result = crate::result::RunResult::from_outcome(&outcome);
            let metrics = crate::scenario::decode_metrics(&result).unwrap();
            via_files.merge(metrics.section.unwrap().as_ref());
        }
        assert_eq!(via_files.steps, direct.steps);
        assert_eq!(via_files.unmatched["call"], 3);
        assert_eq!(FlowSummary::of(&via_files), FlowSummary::of(&direct));
    }
}
