//! `c10k`, the C10K WebSocket test: a new client every `--arrival` (1 ms) up to
//! `--clients`, each sending one timestamped message every `--interval` (1 s) for
//! `--duration` (300 s) on an open-loop schedule, whatever the replies; measured from the
//! first client on, latency from each message's due time. Reports the seed's statistics
//! block.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use super::echo::workload::EchoWorkload;
use crate::config::{
    ConfigError, Defaults, LoadSpec, NoSettings, Pace, Pacing, RunSettings, ScenarioRules, ScenarioSettings,
};
use crate::engine::{PhasePlan, Workload};
use crate::result::RunResult;

/// The seed: a new client every 1 ms, one message per client per second, 300 s.
pub const DEFAULT_ARRIVAL: Duration = Duration::from_millis(1);
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(1);
pub const DEFAULT_DURATION: Duration = Duration::from_secs(300);

#[derive(Debug)]
pub struct C10k;

impl ScenarioRules for C10k {
    fn name(&self) -> &'static str {
        "c10k"
    }
    fn defaults(&self) -> Defaults {
        Defaults {
            duration: DEFAULT_DURATION,
            warmup: Duration::ZERO,
            ramp_per_sec: Some(1.0 / DEFAULT_ARRIVAL.as_secs_f64()),
            ..Defaults::standard()
        }
    }
    fn pacing(&self, _settings: &RunSettings) -> Result<Pacing, ConfigError> {
        Ok(Pacing::Messages { senders: None, default: Some(Pace::Interval(DEFAULT_INTERVAL)) })
    }
    fn settings(&self, _: &RunSettings, _: &LoadSpec) -> Result<Arc<dyn ScenarioSettings>, ConfigError> {
        Ok(Arc::new(NoSettings))
    }
}

impl super::Descriptor for C10k {
    fn about(&self) -> &'static str {
        "open loop: a new client every --arrival, each sending every --interval (the C10K WebSocket test)"
    }
    fn phases(&self, load: &LoadSpec) -> PhasePlan {
        PhasePlan::from_start(load.duration)
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

impl super::Presentation for C10k {
    fn report_block(&self, result: &RunResult) -> Option<String> {
        Some(statistics_block(result))
    }
}

/// The C10K seed's statistics block (µs), connection time and latency, then its counters.
fn statistics_block(result: &RunResult) -> String {
    let summary = &result.summary;
    let mut out = String::new();
    let _ = writeln!(out, "\nstatistics (µs, as the C10K seed reports them):");
    for (name, d) in
        [("connection_time", &summary.connect_distribution), ("latency", &summary.latency_distribution)]
    {
        let _ = writeln!(
            out,
            "  {name}: min {} max {} arithmetic_mean {:.1} geometric_mean {:.1} harmonic_mean {:.1} median {}",
            d.min, d.max, d.arithmetic_mean, d.geometric_mean, d.harmonic_mean, d.median
        );
        let _ = writeln!(
            out,
            "    variance {:.1} standard_deviation {:.1} skewness {:.3} kurtosis {:.3}",
            d.variance, d.standard_deviation, d.skewness, d.kurtosis
        );
        let _ = writeln!(out, "    percentile 75 {}, 95 {}, 99 {}, 99.9 {}", d.p75, d.p95, d.p99, d.p999);
        let bins: Vec<String> =
            d.histogram.iter().map(|(upper, count)| format!("≤{upper}: {count}")).collect();
        let _ = writeln!(out, "    histogram {}", bins.join(", "));
    }
    let timeouts = summary.errors.get("connect_timeout").copied().unwrap_or(0);
    // The seed counts as crashes the clients that died of anything but a timeout or the server.
    let crashes: Vec<(&String, &u64)> = summary
        .errors
        .iter()
        .filter(|(kind, _)| *kind != "connect_timeout" && !kind.starts_with("closed_") && *kind != "reset")
        .collect();
    let crash_count: u64 = crashes.iter().map(|(_, count)| **count).sum();
    let crashes: Vec<String> = crashes.iter().map(|(kind, count)| format!("{kind} {count}")).collect();
    let _ = writeln!(
        out,
        "  connections {}, disconnections {}, messages {}, connection_timeouts {timeouts}, crashes {crash_count}{}",
        summary.connections.established,
        summary.disconnections,
        summary.messages.received,
        if crashes.is_empty() { String::new() } else { format!(" ({})", crashes.join(", ")) }
    );
    out
}
