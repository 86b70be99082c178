//! The scenarios of `wsbench run`, one folder each behind one interface ([`Descriptor`]),
//! and the registry that lists them ([`SCENARIOS`]). A scenario owns everything that makes
//! it itself: its name and what one of its exchanges is called, its settings (defaults,
//! checks, its own section of the configuration), its phase plan, the built-in server's
//! mode and the fleet feature it needs, its per-worker workload, its metrics section, its
//! figures in the result file and its lines in the report. The layers it plugs into
//! (config, engine, metrics, result, report, live, merge, compare, session) name none:
//! they call through the registry. Adding a scenario is a folder and a line in
//! [`SCENARIOS`] (docs/architecture.md says how).

mod c10k;
mod churn;
mod echo;
mod flow;
mod glue;
mod ping;
mod presentation;
pub mod pubsub;
mod scalability;
pub mod stream;
mod throughput;

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use crate::config::{Exchange, LoadSpec, ScenarioRules};
use crate::engine::{PhasePlan, Workload};
use crate::metrics::{Metrics, Section};
use crate::result::{ResultError, RunResult};
use crate::samples::ServerReport;

pub use flow::{MAX_MIX_WEIGHT, escape_template};
pub use glue::{
    check_thresholds, decode_metrics, figures_for, figures_of, names, or_list, plan_of, settle_protocol,
    unknown_scenario,
};
pub use presentation::Presentation;
/// How long `scalability` holds its connections without `--hold` (for `--help`).
pub use scalability::DEFAULT_HOLD;

/// The scenario a run has when none is given.
pub const DEFAULT: &str = "echo";

/// Every scenario, in the order `--help` lists them.
pub static SCENARIOS: &[&dyn Descriptor] = &[
    &echo::Echo,
    &throughput::Throughput,
    &scalability::Scalability,
    &c10k::C10k,
    &churn::Churn,
    &flow::Flow,
    &pubsub::PubSub,
    &ping::Ping,
    &stream::Stream,
];

/// The scenario called `name`.
pub fn by_name(name: &str) -> Option<&'static dyn Descriptor> {
    SCENARIOS.iter().copied().find(|scenario| scenario.name() == name)
}

/// The scenario of a validated load (its name comes from the registry).
pub fn of(load: &LoadSpec) -> &'static dyn Descriptor {
    by_name(load.scenario).unwrap_or(SCENARIOS[0])
}

/// The scenario a result file names; `None` for a scenario this wsbench does not know.
pub fn of_result(result: &RunResult) -> Option<&'static dyn Descriptor> {
    by_name(&result.scenario)
}

/// The figures a scenario adds to a result file under its own key, computed from what was
/// measured (after a merge, from the merged metrics).
#[derive(Debug)]
pub struct FiguresInput<'a> {
    pub metrics: &'a Metrics,
    /// The run's configuration as the result records it.
    pub config: &'a Value,
    pub measured_secs: f64,
    pub server: &'a ServerReport,
}

/// A capability a fleet server must have for the scenario: the manifest key that says it
/// does, and the environment variable that turns it on when the server starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FleetFeature {
    pub manifest_key: &'static str,
    pub env: &'static str,
    /// Why a server without it is skipped.
    pub skipped: &'static str,
}

/// What the workers of one run share within a process, if their scenario needs anything.
pub type SharedState = Option<std::sync::Arc<dyn std::any::Any + Send + Sync>>;

/// Everything a scenario is. [`ScenarioRules`] is its settings side, [`Presentation`] how
/// the report shows its runs.
pub trait Descriptor: ScenarioRules + Presentation {
    /// One line for `wsbench run --help`.
    fn about(&self) -> &'static str;
    /// What one exchange is called: the headline rate, the live view and the charts count
    /// in it.
    fn exchange(&self) -> Exchange {
        Exchange::ROUND_TRIP
    }
    fn phases(&self, load: &LoadSpec) -> PhasePlan;
    /// The work of one worker that opens `connections` (global indices); `shared` is what
    /// [`Descriptor::shared_state`] made for this run's workers.
    fn workload(&self, load: &LoadSpec, connections: &[u64], shared: &SharedState) -> Box<dyn Workload>;
    /// State the workers of one run share in this process (made once per run).
    fn shared_state(&self, _load: &LoadSpec) -> SharedState {
        None
    }
    /// What the scenario asks of the connection's message protocol.
    fn protocol_use(&self) -> crate::protocol::Use {
        crate::protocol::Use::Requests
    }
    /// What the built-in server must do for this scenario (it echoes by default).
    fn configure_server(&self, _serve: &mut wsbench_server::ServeConfig) {}
    fn fleet_feature(&self) -> Option<FleetFeature> {
        None
    }
    /// Its metrics section, read back from a result file's `counters` and `histograms`.
    fn read_section(
        &self,
        _counters: &BTreeMap<String, Value>,
        _histograms: &BTreeMap<String, Value>,
    ) -> Result<Option<Box<dyn Section>>, ResultError> {
        Ok(None)
    }
    /// Its figures in the result file: the key and the value.
    fn figures(&self, _input: &FiguresInput<'_>) -> Option<(&'static str, Value)> {
        None
    }
    /// Its own `--threshold` figures: names, and each one's value in a result.
    fn threshold_names(&self) -> &'static [&'static str] {
        &[]
    }
    fn threshold_value(&self, _name: &str, _result: &RunResult) -> Option<f64> {
        None
    }
    /// An unmeasured run of the same load before the measured one (for a baseline of a
    /// server that has served), and how long the probe samples after the run.
    fn warmup_run(&self, _load: &LoadSpec) -> Option<LoadSpec> {
        None
    }
    fn settle(&self) -> Duration {
        Duration::ZERO
    }
}
