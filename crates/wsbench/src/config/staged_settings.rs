//! What `--stages` decides of a run's settings: the connections or the rate (each the
//! plan's peak), the warm-up and the measured time, with the settings that cannot follow
//! stages refused naming the conflict. Apart from `stages` (the plan itself) so the plan
//! stays a leaf the settings can hold.

use super::error::{ConfigError, invalid};
use super::scenario::Pacing;
use super::settings::RunSettings;
use super::stages::{StageKind, StageList, StagePlan};

/// The settings `--stages` decides, with the plan: connection stages set the connections
/// (the peak), rate stages the open loop's rate (the peak; the pacer follows the plan), and
/// both the warm-up (the leading warm-up stages) and the measured time (the rest). Settings
/// the stages decide, and what cannot follow stages, are refused naming the conflict.
pub(super) fn apply(
    settings: &RunSettings,
    list: &StageList,
    pacing: &Pacing,
) -> Result<(RunSettings, StagePlan), ConfigError> {
    let plan = list.validate()?;
    let refuse = |setting: &'static str, given: bool, why: &str| match given {
        true => Err(invalid(setting, format!("does not combine with --stages: {why}"))),
        false => Ok(()),
    };
    let decided = "the stages decide it";
    refuse("duration", settings.duration.is_some(), decided)?;
    refuse("warmup", settings.warmup.is_some(), "mark the first stages :warmup instead")?;
    refuse("find-max-rate", settings.find_max_rate, "the search sets its own rate steps; give either")?;
    refuse("processes", settings.processes.is_some(), "a staged run is one client process")?;
    refuse("shard", settings.shard.is_some(), "a staged run is one client process")?;
    let mut staged = RunSettings { stages: None, ..settings.clone() };
    let warmup = plan.warmup_s();
    staged.warmup = Some(format!("{warmup}s"));
    staged.duration = Some(format!("{}s", plan.total_s() - warmup));
    match plan.kind {
        StageKind::Connections => {
            if let Pacing::Connections { .. } = pacing {
                return Err(invalid(
                    "stages",
                    "connection stages do not apply where --rate opens the connections",
                ));
            }
            refuse("connections", settings.connections.is_some(), decided)?;
            refuse("clients", settings.clients.is_some(), decided)?;
            refuse("ramp", settings.ramp.is_some(), decided)?;
            refuse("arrival", settings.arrival.is_some(), decided)?;
            refuse(
                "reconnect",
                settings.reconnect.is_some(),
                "a connection the stages closed is not reopened",
            )?;
            staged.connections = Some(plan.peak_connections());
        }
        StageKind::Rate => {
            if !matches!(pacing, Pacing::Messages { .. }) {
                return Err(invalid("stages", "rate stages apply to scenarios whose --rate paces messages"));
            }
            refuse("rate", settings.rate.is_some(), decided)?;
            refuse("interval", settings.interval.is_some(), decided)?;
            staged.rate = Some(format!("{}/s", plan.peak_rate()));
        }
    }
    Ok((staged, plan))
}
