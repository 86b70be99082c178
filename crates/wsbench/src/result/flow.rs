//! The flow scenario's figures in the result file (issue 14): for each named step, its
//! latency (from the step's histogram, kept losslessly in `histograms.flow_steps`), the
//! replies that matched nothing while a connection was at it, and its expectations that
//! timed out. Computed from the metrics, so a merge recomputes them from merged histograms.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::ConnectStats;
use crate::metrics::Metrics;

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
}

impl FlowSummary {
    pub fn of(metrics: &Metrics) -> FlowSummary {
        let counters = &metrics.counters;
        let names: BTreeSet<&String> = metrics
            .flow_steps
            .keys()
            .chain(counters.flow_unmatched.keys())
            .chain(counters.flow_late.keys())
            .collect();
        let steps = names
            .into_iter()
            .map(|name| {
                let latency_us =
                    metrics.flow_steps.get(name).map(ConnectStats::from_histogram).unwrap_or_default();
                let count = |map: &BTreeMap<String, u64>| map.get(name).copied().unwrap_or(0);
                let step = FlowStep {
                    latency_us,
                    unmatched: count(&counters.flow_unmatched),
                    late: count(&counters.flow_late),
                };
                (name.clone(), step)
            })
            .collect();
        FlowSummary { steps }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::record_us;

    #[test]
    fn every_step_named_anywhere_has_a_row() {
        let mut metrics = Metrics::default();
        record_us(metrics.flow_step("call"), 100);
        record_us(metrics.flow_step("call"), 300);
        metrics.counters.flow_late.insert("ack".to_owned(), 2);
        let summary = FlowSummary::of(&metrics);
        assert_eq!(summary.steps["call"].latency_us.count, 2);
        assert_eq!((summary.steps["call"].unmatched, summary.steps["call"].late), (0, 0));
        assert_eq!((summary.steps["ack"].latency_us.count, summary.steps["ack"].late), (0, 2));
    }

    /// Two runs' step histograms, written to result files and merged from them, equal the
    /// two merged directly, value for value.
    #[test]
    fn step_histograms_merge_losslessly_through_result_files() {
        let mut parts = [Metrics::default(), Metrics::default()];
        for (index, part) in parts.iter_mut().enumerate() {
            for value in 1..=2_000u64 {
                record_us(
                    part.flow_step(if value % 3 == 0 { "ack" } else { "call" }),
                    value * (index as u64 + 1),
                );
            }
            part.counters.flow_unmatched.insert("call".to_owned(), index as u64 + 1);
        }
        let mut direct = parts[0].clone();
        direct.merge(&parts[1]);
        let mut via_files = Metrics::default();
        for part in &parts {
            let mut outcome = crate::result::fixture::closed_loop();
            outcome.scenario = "flow".to_owned();
            outcome.metrics = part.clone();
            let result = crate::result::RunResult::from_outcome(&outcome);
            assert!(result.flow.is_some());
            via_files.merge(&result.metrics().unwrap());
        }
        assert_eq!(via_files.flow_steps, direct.flow_steps);
        assert_eq!(via_files.counters.flow_unmatched["call"], 3);
        assert_eq!(FlowSummary::of(&via_files), FlowSummary::of(&direct));
    }
}
