//! `scalability`, uWebSockets' scalability benchmark: open the connections as
//! fast as allowed (or at `--ramp`), hold them `--hold`, send nothing; connections per
//! millisecond, and the server's RSS growth per connection (connections/MB).

use std::any::Any;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use crate::config::{ConfigError, Defaults, LoadSpec, Pacing, RunSettings, ScenarioRules, ScenarioSettings};
use crate::engine::conn::ClientConn;
use crate::engine::workload::{Cx, Message};
use crate::engine::{PhasePlan, Workload};
use crate::options::{Kind, OptionSpec};
use crate::result::RunResult;
use crate::units::format::{plural, seconds};

pub const DEFAULT_HOLD: Duration = Duration::from_secs(5);

/// `--hold`.
pub const HOLD: OptionSpec = OptionSpec {
    flag: "hold",
    key: "hold",
    kind: Kind::Text,
    value_name: "DURATION",
    default: "5s",
    bound: "at most 7 days",
    help: "how long to hold the connections open",
    scenarios: &[],
};

#[derive(Debug)]
pub struct Scalability;

/// How long the connections are held.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hold(pub Duration);

impl ScenarioSettings for Hold {
    fn to_json(&self) -> Map<String, Value> {
        Map::from_iter([("hold".to_owned(), Value::from(self.0.as_secs_f64()))])
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl ScenarioRules for Scalability {
    fn name(&self) -> &'static str {
        "scalability"
    }
    fn defaults(&self) -> Defaults {
        Defaults { warmup: Duration::ZERO, ..Defaults::standard() }
    }
    fn pacing(&self, _settings: &RunSettings) -> Result<Pacing, ConfigError> {
        Ok(Pacing::Refused("the scalability scenario sends no messages"))
    }
    fn options(&self) -> &'static [OptionSpec] {
        &[HOLD]
    }
    fn settings(
        &self,
        settings: &RunSettings,
        _: &LoadSpec,
    ) -> Result<Arc<dyn ScenarioSettings>, ConfigError> {
        Ok(Arc::new(Hold(crate::config::duration_setting(
            "hold",
            &settings.options.text(&HOLD).map(str::to_owned),
            DEFAULT_HOLD,
        )?)))
    }
}

impl super::Descriptor for Scalability {
    fn about(&self) -> &'static str {
        "open N connections, hold them; connections/ms and connections/MB (uWebSockets' scalability benchmark)"
    }
    fn phases(&self, load: &LoadSpec) -> PhasePlan {
        let hold = load.scenario_settings.get::<Hold>().map_or(DEFAULT_HOLD, |hold| hold.0);
        PhasePlan::after_connect(Duration::ZERO, hold)
    }
    fn workload(
        &self,
        _load: &LoadSpec,
        _connections: &[u64],
        _shared: &super::SharedState,
    ) -> Box<dyn Workload> {
        Box::new(Idle)
    }
}

impl super::Presentation for Scalability {
    fn report_block(&self, result: &RunResult) -> Option<String> {
        let summary = &result.summary;
        Some(format!(
            "connect phase: {} in {} ({:.1} connections/ms)\n",
            plural(summary.connections.established, "connection", "connections"),
            seconds(summary.connect_phase_s),
            summary.connections_per_ms
        ))
    }
}

/// Connections that only hold: whatever the server sends is unexpected.
#[derive(Debug)]
struct Idle;

impl Workload for Idle {
    fn on_message(&mut self, cx: &mut Cx<'_>, _conn: &mut ClientConn, message: Message<'_>, _now: Instant) {
        if !matches!(message, Message::Piece { last: false, .. }) {
            cx.rec.metrics.counters.payload_mismatches += 1;
        }
    }
}
