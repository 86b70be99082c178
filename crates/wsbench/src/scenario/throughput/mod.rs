//! `throughput`, uWebSockets' throughput benchmark: `--frames-per-send` frames of
//! `--payload-bytes` written in one send, the echoes of all of them awaited before the next
//! send, as fast as the server echoes; reported in echoes per millisecond as the seed does.

use std::sync::Arc;

use super::echo::workload::EchoWorkload;
use crate::config::{
    ConfigError, Defaults, LoadSpec, NoSettings, Pacing, Payload, RunSettings, ScenarioRules,
    ScenarioSettings,
};
use crate::engine::{PhasePlan, Workload};
use crate::result::RunResult;
use crate::units::format::sig3;

/// The seed's payload and frames per send.
pub const DEFAULT_PAYLOAD_BYTES: u64 = 20;
pub const DEFAULT_FRAMES_PER_SEND: u64 = 10;

#[derive(Debug)]
pub struct Throughput;

impl ScenarioRules for Throughput {
    fn name(&self) -> &'static str {
        "throughput"
    }
    fn defaults(&self) -> Defaults {
        Defaults {
            payload: Payload::Bytes(DEFAULT_PAYLOAD_BYTES),
            frames_per_send: Some(DEFAULT_FRAMES_PER_SEND),
            rate_search: true,
            ..Defaults::standard()
        }
    }
    fn pacing(&self, _settings: &RunSettings) -> Result<Pacing, ConfigError> {
        Ok(Pacing::Messages { senders: None, default: None })
    }
    fn own_settings(&self) -> &'static [&'static str] {
        &["frames-per-send"]
    }
    fn settings(&self, _: &RunSettings, _: &LoadSpec) -> Result<Arc<dyn ScenarioSettings>, ConfigError> {
        Ok(Arc::new(NoSettings))
    }
}

impl super::Descriptor for Throughput {
    fn about(&self) -> &'static str {
        "--frames-per-send frames per send, as fast as echoed; echoes/ms (uWebSockets' throughput benchmark)"
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
        Box::new(EchoWorkload::new(load, None))
    }
}

impl super::Presentation for Throughput {
    fn headline_suffix(&self, result: &RunResult) -> Option<String> {
        // Seed 004 (uWebSockets) reports throughput in echoes per millisecond.
        Some(format!(" = {} echoes/ms", sig3(result.summary.exchanges_per_sec / 1e3)))
    }
}
