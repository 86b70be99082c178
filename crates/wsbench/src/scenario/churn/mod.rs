//! `churn`: an open loop of new connections. At `--rate` new connections per second for
//! `--duration`, each connects, upgrades, exchanges `--messages-per-connection` echoes and
//! closes; connections per second sustained, handshake time from each connection's due
//! time (coordinated omission), closes answered, and the server's descriptors and RSS
//! before, at the peak of and after the run (a leak shows). The warm-up is a run of its
//! own before the measured one, so the server's baseline is that of a server that has
//! served.

mod figures;
mod report;
mod workload;

use std::any::Any;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use super::{Descriptor, FiguresInput, Presentation};
use crate::config::{
    ConfigError, Defaults, LoadSpec, Pacing, RunSettings, ScenarioRules, ScenarioSettings, bounds,
    invalid_setting,
};
use crate::engine::timers::CLOSE_TIMEOUT;
use crate::engine::{PhasePlan, Workload};
use crate::metrics::Section;
use crate::options::{Kind, OptionSpec};
use crate::result::{ResultError, RunResult};
use figures::ChurnSummary;
use workload::{ChurnSection, ChurnWorkload};

/// New connections per second, and echoes per connection, when not given.
pub const DEFAULT_RATE: f64 = 100.0;
pub const DEFAULT_MESSAGES_PER_CONNECTION: u64 = 1;

/// `--messages-per-connection`.
pub const MESSAGES_PER_CONNECTION: OptionSpec = OptionSpec {
    flag: "messages-per-connection",
    key: "messages-per-connection",
    kind: Kind::Count,
    value_name: "K",
    default: "1",
    bound: "1 to 1,000,000",
    help: "echoes each connection exchanges between its handshake and its close",
    scenarios: &[],
};
/// How long a cycle's echoes and close take at most, for planning file descriptors (the
/// close waits 2 s at most; a server that stalls echoes longer makes connects fail with
/// `connect_error` once the descriptors run out, rather than the run refusing to start).
pub const CYCLE_BOUND: Duration = Duration::from_secs(3);
/// How long the probe samples the server after the run, while it releases the closed
/// connections: its last sample is the "after" of the drift.
const SETTLE: Duration = Duration::from_millis(1000);

#[derive(Debug)]
pub struct Churn;

/// Echoes per connection before it closes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessagesPerConnection(pub u64);

impl ScenarioSettings for MessagesPerConnection {
    fn to_json(&self) -> Map<String, Value> {
        Map::from_iter([("messages_per_connection".to_owned(), Value::from(self.0))])
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl ScenarioRules for Churn {
    fn name(&self) -> &'static str {
        "churn"
    }
    fn defaults(&self) -> Defaults {
        Defaults::standard()
    }
    fn pacing(&self, _settings: &RunSettings) -> Result<Pacing, ConfigError> {
        Ok(Pacing::Connections { default_rate: DEFAULT_RATE })
    }
    fn options(&self) -> &'static [OptionSpec] {
        &[MESSAGES_PER_CONNECTION]
    }
    /// `--rate` × `--duration` connections (at least 1); `--connections`, `--ramp` and
    /// `--interval` have no meaning here.
    fn connections(&self, settings: &RunSettings) -> Result<Option<u64>, ConfigError> {
        let given = [
            ("connections", settings.connections.is_some() || settings.clients.is_some()),
            ("ramp", settings.ramp.is_some() || settings.arrival.is_some()),
            ("interval", settings.interval.is_some()),
        ];
        if let Some((flag, _)) = given.iter().find(|(_, given)| *given) {
            return Err(invalid_setting(
                flag,
                "churn opens --rate new connections per second for --duration; drop it",
            ));
        }
        let rate = match settings.rate.as_deref() {
            Some(text) => {
                let rate = crate::units::parse_rate(text).map_err(|e| invalid_setting("rate", e.problem))?;
                bounds::rate("rate", rate)?
            }
            None => DEFAULT_RATE,
        };
        let duration =
            crate::config::duration_setting("duration", &settings.duration, crate::config::DEFAULT_DURATION)?;
        let connections = (rate * duration.as_secs_f64()).round().max(1.0) as u64;
        Ok(Some(bounds::connections("rate", "--rate × --duration", connections)?))
    }
    fn settings(
        &self,
        settings: &RunSettings,
        _: &LoadSpec,
    ) -> Result<Arc<dyn ScenarioSettings>, ConfigError> {
        let count =
            settings.options.count(&MESSAGES_PER_CONNECTION).unwrap_or(DEFAULT_MESSAGES_PER_CONNECTION);
        if count == 0 {
            return Err(invalid_setting("messages-per-connection", "must be at least 1"));
        }
        let count = bounds::at_most(
            "messages-per-connection",
            count,
            bounds::MAX_MESSAGES_PER_CONNECTION,
            "messages",
        )?;
        Ok(Arc::new(MessagesPerConnection(count)))
    }
    /// Each connection lives for one cycle: at most `--rate` × ([`CYCLE_BOUND`] +
    /// `--connect-timeout`) are open at once.
    fn open_at_once(&self, load: &LoadSpec) -> u64 {
        let lifetime = (CYCLE_BOUND + load.connect_timeout).as_secs_f64();
        let rate = load.ramp_per_sec.unwrap_or(DEFAULT_RATE);
        load.connections.min((rate * lifetime).ceil() as u64)
    }
}

impl Descriptor for Churn {
    fn about(&self) -> &'static str {
        "--rate new connections/s, each: handshake → K echoes → close; leaks show"
    }
    fn exchange(&self) -> crate::config::Exchange {
        crate::config::Exchange::ROUND_TRIP
    }
    /// Measured from the first connection on, for `--duration` and the tail in which the
    /// last connections finish their cycles.
    fn phases(&self, load: &LoadSpec) -> PhasePlan {
        let window = load.duration + load.connect_timeout + CLOSE_TIMEOUT;
        PhasePlan { connect_from_due: true, ..PhasePlan::from_start(window) }
    }
    fn workload(
        &self,
        load: &LoadSpec,
        _connections: &[u64],
        _shared: &super::SharedState,
    ) -> Box<dyn Workload> {
        let per_connection = load.scenario_settings.get::<MessagesPerConnection>().map_or(1, |m| m.0);
        Box::new(ChurnWorkload::new(load, per_connection))
    }
    fn read_section(
        &self,
        counters: &BTreeMap<String, Value>,
        _histograms: &BTreeMap<String, Value>,
    ) -> Result<Option<Box<dyn Section>>, ResultError> {
        Ok(Some(Box::new(ChurnSection::read(counters))))
    }
    fn figures(&self, input: &FiguresInput<'_>) -> Option<(&'static str, Value)> {
        let cycles = input.metrics.section.as_ref()?.as_any().downcast_ref::<ChurnSection>()?.cycles;
        let summary =
            ChurnSummary::of(cycles, &input.metrics.counters, input.measured_secs, &input.server.samples);
        Some(("churn", serde_json::to_value(summary).ok()?))
    }
    /// `--warmup` of the same churn, unmeasured, before the measured run and before the
    /// probe's first sample (shards, which start together at `--start-at`, skip it).
    fn warmup_run(&self, load: &LoadSpec) -> Option<LoadSpec> {
        let rate = load.ramp_per_sec?;
        if load.warmup.is_zero() || load.start_at_unix_ms.is_some() || load.shard.is_some() {
            return None;
        }
        let mut warmup = load.clone();
        warmup.duration = load.warmup;
        warmup.connections = ((rate * load.warmup.as_secs_f64()).ceil() as u64).max(1);
        Some(warmup)
    }
    fn settle(&self) -> Duration {
        SETTLE
    }
}

impl Presentation for Churn {
    fn report_lines(&self, result: &RunResult) -> Vec<(&'static str, String)> {
        report::churn_lines(result)
    }
    /// Connections live for a moment: Little's law over them says nothing.
    fn littles_law(&self) -> bool {
        false
    }
}
