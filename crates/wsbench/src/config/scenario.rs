//! What the configuration needs from a scenario, as an interface the scenarios implement
//! (in `crate::scenario`, each in its own folder): its defaults, which settings are its own,
//! what `--rate` paces, how many connections it opens, and its own checked settings. The
//! checks every scenario shares live in `validate.rs`; nothing here names a scenario.

use std::any::Any;
use std::fmt::Debug;
use std::time::Duration;

use serde_json::{Map, Value};

use super::error::ConfigError;
use super::{LoadSpec, Payload, RunSettings};
use crate::options::OptionSpec;

/// What one exchange of a scenario is called, singular and plural ("round trip", "round
/// trips"; "delivery", "deliveries"): the headline, the live view, the charts and the
/// tables count in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exchange {
    pub one: &'static str,
    pub many: &'static str,
}

impl Exchange {
    pub const ROUND_TRIP: Exchange = Exchange { one: "round trip", many: "round trips" };

    /// "Round trips", for a title.
    pub fn title(&self) -> String {
        let mut chars = self.many.chars();
        chars
            .next()
            .map_or_else(String::new, |first| first.to_uppercase().collect::<String>() + chars.as_str())
    }
}

/// The defaults a scenario gives the settings it shares with the others.
#[derive(Debug, Clone)]
pub struct Defaults {
    pub duration: Duration,
    pub warmup: Duration,
    /// The payload when none is given.
    pub payload: Payload,
    /// The scenario takes `--frames-per-send`, with this default (otherwise 1).
    pub frames_per_send: Option<u64>,
    /// New connections per second when neither `--ramp` nor `--arrival` is given.
    pub ramp_per_sec: Option<f64>,
    /// `--find-max-rate` can search this scenario's open-loop rate.
    pub rate_search: bool,
}

impl Defaults {
    /// The echo loop's defaults, which most scenarios start from.
    pub fn standard() -> Defaults {
        Defaults {
            duration: super::DEFAULT_DURATION,
            warmup: super::DEFAULT_WARMUP,
            payload: Payload::JsonTs,
            frames_per_send: None,
            ramp_per_sec: None,
            rate_search: false,
        }
    }
}

/// What `--rate` and `--interval` pace in a scenario.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pacing {
    /// Messages, sent on an open-loop schedule by `senders` connections (`None`: every
    /// connection); without `--rate` or `--interval` the loop is closed, unless a default
    /// pace is given.
    Messages { senders: Option<u64>, default: Option<Pace> },
    /// New connections per second (`--rate`, else `default_rate`); the scenario derives its
    /// connections from it.
    Connections { default_rate: f64 },
    /// Nothing: `--rate` and `--interval` are refused, for this reason.
    Refused(&'static str),
}

/// A default open-loop pace.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pace {
    /// Messages per second over all senders.
    Rate(f64),
    /// Each sender's interval.
    Interval(Duration),
}

/// A scenario's own settings once checked (churn's messages per connection, a flow's
/// program, a fan-out's shape), carried in [`LoadSpec`] to the scenario's workload and
/// written into the result's `config` under the scenario's own keys.
pub trait ScenarioSettings: Debug + Send + Sync {
    /// The keys and values it adds to `config` in the result file.
    fn to_json(&self) -> Map<String, Value>;
    fn as_any(&self) -> &dyn Any;
}

/// A scenario without settings of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoSettings;

impl ScenarioSettings for NoSettings {
    fn to_json(&self) -> Map<String, Value> {
        Map::new()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// What a scenario decides about its settings. The scenario's descriptor implements it.
pub trait ScenarioRules: Sync + Debug {
    /// The name users give (`echo`, `pubsub`, …).
    fn name(&self) -> &'static str;
    fn defaults(&self) -> Defaults;
    fn pacing(&self, settings: &RunSettings) -> Result<Pacing, ConfigError>;
    /// The shared settings (flag names, without `--`) that only this scenario reads:
    /// another scenario refuses them with a message naming this one.
    fn own_settings(&self) -> &'static [&'static str] {
        &[]
    }
    /// The options it declares, its own: `crate::members` makes them flags and scenario-file
    /// keys and refuses them in a run of another scenario; the scenario reads them from
    /// `RunSettings::options`.
    fn options(&self) -> &'static [OptionSpec] {
        &[]
    }
    /// The connections of the run, when the scenario decides them (from its own settings);
    /// `None`: `--connections` (or `--clients`) does.
    fn connections(&self, _settings: &RunSettings) -> Result<Option<u64>, ConfigError> {
        Ok(None)
    }
    /// Checks `load` (defaults applied) and `settings` together, and gives the scenario's
    /// own checked settings.
    fn settings(
        &self,
        settings: &RunSettings,
        load: &LoadSpec,
    ) -> Result<std::sync::Arc<dyn ScenarioSettings>, ConfigError>;
    /// The most connections open at the same moment (all of them, unless connections live
    /// briefly, as churn's do): what the open-file limit is planned for.
    fn open_at_once(&self, load: &LoadSpec) -> u64 {
        load.connections
    }
    /// The built-in server runs as one process for this scenario (its state is not shared
    /// between processes).
    fn single_server_process(&self) -> bool {
        false
    }
}

/// `localhost:8080`, `10.0.0.2:9001`: a server address given without `ws://`.
pub fn looks_like_host_port(word: &str) -> bool {
    word.rsplit_once(':').is_some_and(|(host, port)| {
        !host.is_empty() && !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit())
    })
}
