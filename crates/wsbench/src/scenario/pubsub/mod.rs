//! `pubsub`: S subscribers over T topics and P publishers at an open-loop `--rate`, in the
//! terms of the run's message protocol (`raw`: the small JSON protocol of
//! docs/protocols.md; MQTT topics, STOMP destinations, Socket.IO rooms); latency per
//! delivery from the publish's due time, completeness per subscriber (lost, duplicated, out
//! of order, each named by connection), the slowest subscribers, and the spread of each
//! publish from its first subscriber to its last. What the headline counts is deliveries.

pub mod figures;
mod marker;
mod receipts;
mod report;
pub mod section;
mod settings;
mod share;
mod sketch;
mod workload;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use super::{Descriptor, FiguresInput, FleetFeature, Presentation};
use crate::config::{
    ConfigError, Defaults, Exchange, LoadSpec, Pace, Pacing, RunSettings, ScenarioRules, ScenarioSettings,
};
use crate::engine::{PhasePlan, Workload};
use crate::metrics::Section;
use crate::result::{ResultError, RunResult};
use crate::units::format::{millis_tight, plural};
use figures::PubSubSummary;
use section::PubSubSection;
use settings::PubSubSpec;
use share::WorkersShare;
use workload::PubSub as PubSubWorkload;

/// The fan-out's shape from a validated load (none: no connection has a role).
fn spec_of(load: &LoadSpec) -> PubSubSpec {
    load.scenario_settings.get::<PubSubSpec>().copied().unwrap_or(PubSubSpec {
        subscribers: 0,
        topics: 1,
        publishers: 0,
    })
}

/// Publishes per second over all publishers, when `--rate` is not given.
pub const DEFAULT_RATE: f64 = 100.0;

#[derive(Debug)]
pub struct PubSub;

impl ScenarioRules for PubSub {
    fn name(&self) -> &'static str {
        "pubsub"
    }
    fn defaults(&self) -> Defaults {
        Defaults::standard()
    }
    /// `--rate` is the publishers' total, `--interval` each publisher's own.
    fn pacing(&self, settings: &RunSettings) -> Result<Pacing, ConfigError> {
        let spec = PubSubSpec::of(settings)?;
        Ok(Pacing::Messages { senders: Some(spec.publishers), default: Some(Pace::Rate(DEFAULT_RATE)) })
    }
    fn options(&self) -> &'static [crate::options::OptionSpec] {
        &settings::OPTIONS
    }
    fn connections(&self, settings: &RunSettings) -> Result<Option<u64>, ConfigError> {
        Ok(Some(PubSubSpec::of(settings)?.connections()))
    }
    fn settings(
        &self,
        settings: &RunSettings,
        load: &LoadSpec,
    ) -> Result<Arc<dyn ScenarioSettings>, ConfigError> {
        settings::check_payload(&load.payload)?;
        Ok(Arc::new(PubSubSpec::of(settings)?))
    }
    /// The built-in pub/sub server runs one event loop (one topic table).
    fn single_server_process(&self) -> bool {
        true
    }
}

impl Descriptor for PubSub {
    fn about(&self) -> &'static str {
        "S subscribers over T topics, P publishers at --rate; latency per delivery, completeness"
    }
    fn exchange(&self) -> Exchange {
        Exchange { one: "delivery", many: "deliveries" }
    }
    fn protocol_use(&self) -> crate::protocol::Use {
        crate::protocol::Use::PubSub
    }
    fn phases(&self, load: &LoadSpec) -> PhasePlan {
        super::echo::after_connect(load)
    }
    fn workload(
        &self,
        load: &LoadSpec,
        connections: &[u64],
        shared: &super::SharedState,
    ) -> Box<dyn Workload> {
        let shared = shared.as_ref().and_then(|shared| shared.clone().downcast::<WorkersShare>().ok());
        let (receipts, published) = match shared {
            Some(shared) => (shared.receipts.clone(), shared.published.clone()),
            None => (Arc::default(), None),
        };
        Box::new(PubSubWorkload::new(load, spec_of(load), connections, receipts, published))
    }
    /// What the workers of a run share: the receipts of every worker's subscribers, for the
    /// spread of each publish; and the measured publishes per topic, counted by the
    /// publishers of every worker, so that the end of a run waits for the deliveries it
    /// knows are still due (only when every publisher is in this process, not a shard of
    /// `--processes`).
    fn shared_state(&self, load: &LoadSpec) -> super::SharedState {
        let topics = spec_of(load).topics;
        let published = load.shard.is_none().then(|| Arc::new(share::Published::new(topics)));
        Some(Arc::new(WorkersShare { receipts: Arc::default(), published }))
    }
    /// The pub/sub protocol of docs/protocols.md (one event-loop thread).
    fn configure_server(&self, serve: &mut wsbench_server::ServeConfig) {
        serve.pubsub = true;
    }
    fn fleet_feature(&self) -> Option<FleetFeature> {
        Some(FleetFeature {
            manifest_key: "pubsub",
            env: "WSBENCH_PUBSUB",
            skipped: "skipped: no pub/sub (`pubsub = true` is not in its server.toml)",
        })
    }
    fn read_section(
        &self,
        counters: &BTreeMap<String, Value>,
        histograms: &BTreeMap<String, Value>,
    ) -> Result<Option<Box<dyn Section>>, ResultError> {
        Ok(Some(Box::new(PubSubSection::read(counters, histograms)?)))
    }
    fn figures(&self, input: &FiguresInput<'_>) -> Option<(&'static str, Value)> {
        let section = input.metrics.section.as_ref()?.as_any().downcast_ref::<PubSubSection>()?;
        let summary = PubSubSummary::of(section, input.config, input.measured_secs);
        Some(("pubsub", serde_json::to_value(summary).ok()?))
    }
    fn threshold_names(&self) -> &'static [&'static str] {
        &["lost", "duplicated", "out_of_order"]
    }
    fn threshold_value(&self, name: &str, result: &RunResult) -> Option<f64> {
        let pubsub = result.figures::<PubSubSummary>("pubsub")?;
        match name {
            "lost" => Some(pubsub.lost as f64),
            "duplicated" => Some(pubsub.duplicated as f64),
            "out_of_order" => Some(pubsub.out_of_order as f64),
            _ => None,
        }
    }
}

impl Presentation for PubSub {
    fn report_lines(&self, result: &RunResult) -> Vec<(&'static str, String)> {
        report::pubsub_lines(result)
    }
    fn load_shape(&self, result: &RunResult) -> Option<String> {
        let pubsub = result.figures::<PubSubSummary>("pubsub")?;
        Some(format!(
            "{} + {}",
            plural(pubsub.subscribers, "subscriber", "subscribers"),
            plural(pubsub.publishers, "publisher", "publishers")
        ))
    }
    /// A fan-out's deliveries are no round trips: Little's law over them says nothing.
    fn littles_law(&self) -> bool {
        false
    }
    fn compare_columns(&self) -> &'static [(&'static str, usize)] {
        &[("lost", 5), ("dup", 4), ("spread p99", 11)]
    }
    fn compare_cells(&self, result: &RunResult) -> Vec<String> {
        let Some(pubsub) = result.figures::<PubSubSummary>("pubsub") else { return Vec::new() };
        vec![
            pubsub.lost.to_string(),
            pubsub.duplicated.to_string(),
            millis_tight(pubsub.spread_us.p99 as f64),
        ]
    }
}
