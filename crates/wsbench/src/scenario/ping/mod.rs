//! `ping`: the heartbeat path. Each connection sends WebSocket pings (RFC 6455 §5.5.2) on
//! the open-loop schedule (`--rate` over all connections, or `--interval` each; one a
//! second by default), and the ping → pong latency is measured from each ping's due time
//! (coordinated omission corrected, as c10k's messages are). Servers often handle control
//! frames apart from data, and this path decides when clients think a server is dead.

mod workload;

use std::any::Any;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use super::{Descriptor, FiguresInput, Presentation};
use crate::config::{
    ConfigError, Defaults, Exchange, LoadSpec, Pace, Pacing, Payload, RunSettings, ScenarioRules,
    ScenarioSettings, invalid_setting,
};
use crate::engine::{PhasePlan, Workload};
use crate::metrics::Section;
use crate::result::{ResultError, RunResult};
use crate::units::format::group;
use workload::{PingSection, PingWorkload};

/// A ping a second per connection, as heartbeats go.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(1);
/// A ping's payload: at least its 8-byte sequence number, at most a control frame's 125.
const PAYLOAD_BYTES: std::ops::RangeInclusive<u64> = 8..=125;

#[derive(Debug)]
pub struct Ping;

/// The bytes of each ping's payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PingPayload(u64);

impl ScenarioSettings for PingPayload {
    fn to_json(&self) -> Map<String, Value> {
        Map::new()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl ScenarioRules for Ping {
    fn name(&self) -> &'static str {
        "ping"
    }
    fn defaults(&self) -> Defaults {
        Defaults { payload: Payload::Bytes(*PAYLOAD_BYTES.start()), ..Defaults::standard() }
    }
    fn pacing(&self, _settings: &RunSettings) -> Result<Pacing, ConfigError> {
        Ok(Pacing::Messages { senders: None, default: Some(Pace::Interval(DEFAULT_INTERVAL)) })
    }
    fn settings(&self, _: &RunSettings, load: &LoadSpec) -> Result<Arc<dyn ScenarioSettings>, ConfigError> {
        match load.payload {
            Payload::Bytes(bytes) if PAYLOAD_BYTES.contains(&bytes) => Ok(Arc::new(PingPayload(bytes))),
            _ => Err(invalid_setting(
                "payload",
                "a ping carries 8 to 125 bytes (a control frame's limit): give --payload-bytes 8 to 125",
            )),
        }
    }
}

impl Descriptor for Ping {
    fn about(&self) -> &'static str {
        "WebSocket pings on an open-loop schedule; ping → pong latency (the heartbeat path)"
    }
    fn exchange(&self) -> Exchange {
        Exchange { one: "ping round trip", many: "ping round trips" }
    }
    fn phases(&self, load: &LoadSpec) -> PhasePlan {
        super::echo::after_connect(load)
    }
    fn workload(
        &self,
        load: &LoadSpec,
        _connections: &[u64],
        _shared: &super::SharedState,
    ) -> Box<dyn Workload> {
        let bytes = load.scenario_settings.get::<PingPayload>().map_or(*PAYLOAD_BYTES.start(), |p| p.0);
        Box::new(PingWorkload::new(bytes as usize))
    }
    fn read_section(
        &self,
        counters: &BTreeMap<String, Value>,
        _histograms: &BTreeMap<String, Value>,
    ) -> Result<Option<Box<dyn Section>>, ResultError> {
        Ok(Some(Box::new(PingSection::read(counters))))
    }
    fn figures(&self, input: &FiguresInput<'_>) -> Option<(&'static str, Value)> {
        let section = input.metrics.section.as_ref()?.as_any().downcast_ref::<PingSection>()?;
        Some(("ping", serde_json::to_value(section).ok()?))
    }
    fn threshold_names(&self) -> &'static [&'static str] {
        &["unanswered"]
    }
    fn threshold_value(&self, name: &str, result: &RunResult) -> Option<f64> {
        let ping = result.figures::<PingSection>("ping")?;
        (name == "unanswered").then_some(ping.unanswered as f64)
    }
}

impl Presentation for Ping {
    fn report_lines(&self, result: &RunResult) -> Vec<(&'static str, String)> {
        let Some(ping) = result.figures::<PingSection>("ping") else { return Vec::new() };
        let mut text = format!(
            "{} sent, {} answered by their pong, {} unanswered",
            group(ping.pings),
            group(ping.pongs),
            group(ping.unanswered)
        );
        if ping.superseded > 0 {
            text += &format!(", {} superseded by a later pong", group(ping.superseded));
        }
        if ping.unexpected > 0 {
            text += &format!(", {} pongs or messages that answered no ping", group(ping.unexpected));
        }
        vec![("pings:", text)]
    }
    /// Pings go out on a schedule, whatever is outstanding.
    fn littles_law(&self) -> bool {
        false
    }
}
