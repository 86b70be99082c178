//! `echo`, the closed loop of seeds 000/002: each connection keeps `--in-flight` messages
//! outstanding, sending the next when an echo returns (or, with `--rate`/`--interval`, on
//! an open-loop schedule). Its loop ([`workload`]) and payloads ([`payload`]) are shared by
//! the other request/reply scenarios.

pub mod payload;
pub mod workload;

use std::sync::Arc;

use crate::config::{
    ConfigError, Defaults, LoadSpec, NoSettings, Pacing, RunSettings, ScenarioRules, ScenarioSettings,
};
use crate::engine::{PhasePlan, Workload};
use workload::EchoWorkload;

#[derive(Debug)]
pub struct Echo;

impl ScenarioRules for Echo {
    fn name(&self) -> &'static str {
        "echo"
    }
    fn defaults(&self) -> Defaults {
        Defaults { rate_search: true, ..Defaults::standard() }
    }
    fn pacing(&self, _settings: &RunSettings) -> Result<Pacing, ConfigError> {
        Ok(Pacing::Messages { senders: None, default: None })
    }
    fn settings(&self, _: &RunSettings, _: &LoadSpec) -> Result<Arc<dyn ScenarioSettings>, ConfigError> {
        Ok(Arc::new(NoSettings))
    }
}

impl super::Descriptor for Echo {
    fn about(&self) -> &'static str {
        "closed loop: each connection keeps --in-flight messages outstanding (the IncludeOS vs node.js round-trip test)"
    }
    fn phases(&self, load: &LoadSpec) -> PhasePlan {
        after_connect(load)
    }
    fn workload(
        &self,
        load: &LoadSpec,
        _connections: &[u64],
        _shared: &super::SharedState,
    ) -> Box<dyn Workload> {
        Box::new(EchoWorkload::new(load, None))
    }
}

impl super::Presentation for Echo {}

/// The usual phases: the ramp, then `--warmup`, then `--duration` measured; traffic once
/// every connection is up (or with a ramp, as each opens).
pub fn after_connect(load: &LoadSpec) -> PhasePlan {
    PhasePlan::after_connect(load.warmup, load.duration)
}
