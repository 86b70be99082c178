//! `stream`: S subscribers to a stream the server itself produces (a node's `eth_subscribe`
//! newHeads, a market feed, a topic published server-side), subscribed to through the run's
//! message protocol. Each delivery is identified by `--message-id` (a JSON pointer or a regex);
//! every subscriber is judged against the union of ids any subscriber saw (missing,
//! duplicated, late, the worst subscribers by connection), the spread from an id's first
//! receipt to each other subscriber's is measured, and, with `--message-time`, the latency
//! from the server's own timestamp. The ids are matched in one bounded window shared by the
//! run's workers (`window.rs`), so a stream runs in one process. What the headline counts is
//! deliveries.

mod extract;
mod figures;
mod report;
pub mod section;
mod settings;
pub mod window;
mod workload;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::{Descriptor, FiguresInput, FleetFeature, Presentation};
use crate::config::{
    ConfigError, Defaults, Exchange, LoadSpec, Pacing, RunSettings, ScenarioRules, ScenarioSettings,
};
use crate::engine::{PhasePlan, Workload};
use crate::metrics::Section;
use crate::result::{ResultError, RunResult};
use crate::units::format::{millis_tight, plural};
use figures::StreamSummary;
use section::StreamSection;
use settings::StreamSpec;
use window::Window;
use workload::StreamWorkload;

#[derive(Debug)]
pub struct Stream;

impl ScenarioRules for Stream {
    fn name(&self) -> &'static str {
        "stream"
    }
    fn defaults(&self) -> Defaults {
        Defaults::standard()
    }
    fn pacing(&self, _settings: &RunSettings) -> Result<Pacing, ConfigError> {
        Ok(Pacing::Refused("the server paces a stream; drop --rate and --interval"))
    }
    fn options(&self) -> &'static [crate::options::OptionSpec] {
        &settings::OPTIONS
    }
    fn connections(&self, settings: &RunSettings) -> Result<Option<u64>, ConfigError> {
        Ok(Some(StreamSpec::of(settings)?.subscribers))
    }
    fn settings(
        &self,
        settings: &RunSettings,
        _load: &LoadSpec,
    ) -> Result<Arc<dyn ScenarioSettings>, ConfigError> {
        Ok(Arc::new(StreamSpec::of(settings)?))
    }
}

impl Descriptor for Stream {
    fn about(&self) -> &'static str {
        "S subscribers to a stream the server produces; deliveries/s, completeness by subscriber, spread"
    }
    fn exchange(&self) -> Exchange {
        Exchange { one: "delivery", many: "deliveries" }
    }
    fn protocol_use(&self) -> crate::protocol::Use {
        crate::protocol::Use::Stream
    }
    fn phases(&self, load: &LoadSpec) -> PhasePlan {
        super::echo::after_connect(load)
    }
    fn workload(
        &self,
        load: &LoadSpec,
        _connections: &[u64],
        shared: &super::SharedState,
    ) -> Box<dyn Workload> {
        let spec =
            load.scenario_settings.get::<StreamSpec>().expect("a validated stream load has its settings");
        let window = shared
            .as_ref()
            .and_then(|shared| shared.clone().downcast::<Mutex<Window>>().ok())
            .unwrap_or_else(|| Arc::new(Mutex::new(Window::new(spec.subscribers))));
        Box::new(StreamWorkload::new(spec, window))
    }
    /// The id window every worker's subscribers feed.
    fn shared_state(&self, load: &LoadSpec) -> super::SharedState {
        let subscribers =
            load.scenario_settings.get::<StreamSpec>().map_or(load.connections, |spec| spec.subscribers);
        Some(Arc::new(Mutex::new(Window::new(subscribers))))
    }
    /// Fleet servers echo; none produces a stream of its own, so compare skips them by name.
    fn fleet_feature(&self) -> Option<FleetFeature> {
        Some(FleetFeature {
            manifest_key: "stream",
            env: "WSBENCH_STREAM",
            skipped: "skipped: produces no stream of its own (`stream = true` is not in its server.toml)",
        })
    }
    fn read_section(
        &self,
        counters: &BTreeMap<String, Value>,
        histograms: &BTreeMap<String, Value>,
    ) -> Result<Option<Box<dyn Section>>, ResultError> {
        Ok(Some(Box::new(StreamSection::read(counters, histograms)?)))
    }
    fn figures(&self, input: &FiguresInput<'_>) -> Option<(&'static str, Value)> {
        let section = input.metrics.section.as_ref()?.as_any().downcast_ref::<StreamSection>()?;
        let summary = StreamSummary::of(section, input.config, input.measured_secs);
        Some(("stream", serde_json::to_value(summary).ok()?))
    }
    fn threshold_names(&self) -> &'static [&'static str] {
        &["missing", "duplicated", "late", "silent"]
    }
    fn threshold_value(&self, name: &str, result: &RunResult) -> Option<f64> {
        let stream = result.figures::<StreamSummary>("stream")?;
        match name {
            "missing" => Some(stream.missing as f64),
            "duplicated" => Some(stream.duplicated as f64),
            "late" => Some(stream.late as f64),
            "silent" => Some(stream.silent as f64),
            _ => None,
        }
    }
}

impl Presentation for Stream {
    fn report_lines(&self, result: &RunResult) -> Vec<(&'static str, String)> {
        report::stream_lines(result)
    }
    fn load_shape(&self, result: &RunResult) -> Option<String> {
        let stream = result.figures::<StreamSummary>("stream")?;
        Some(plural(stream.subscribers, "subscriber", "subscribers"))
    }
    /// The server paces a stream: Little's law over its deliveries says nothing.
    fn littles_law(&self) -> bool {
        false
    }
    fn compare_columns(&self) -> &'static [(&'static str, usize)] {
        &[("missing", 7), ("dup", 4), ("spread p99", 11)]
    }
    fn compare_cells(&self, result: &RunResult) -> Vec<String> {
        let Some(stream) = result.figures::<StreamSummary>("stream") else { return Vec::new() };
        vec![
            stream.missing.to_string(),
            stream.duplicated.to_string(),
            millis_tight(stream.spread_us.p99 as f64),
        ]
    }
}
