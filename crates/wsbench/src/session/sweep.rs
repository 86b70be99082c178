//! `wsbench sweep` run: one session (the built-in server started once, sized for the
//! largest step, or the given URL), then every step of the plan measured by
//! [`Session::measure`], the same measurement as `run` and `--find-max-rate` (with
//! `--processes N`, each step is its shards' run, merged). After each step the analysis is
//! made again and the `--json` file rewritten, so a sweep stopped by a signal or a crash
//! keeps every step it finished.

use std::sync::atomic::AtomicBool;

use super::{RunError, RunReport, Session, keep};
use crate::result::sweep::{Sweep, SweepStep, Varied, write_sweep_json};
use crate::sweep::{SweepPlan, SweepSettings, analyse, thresholds};

/// Checks `settings` into a plan (every step validated, before any load), waits for its
/// target when asked, and runs it, named after its target (`builtin` for the built-in
/// server).
pub fn run(
    settings: &SweepSettings,
    interrupt: &AtomicBool,
    log: &mut dyn FnMut(&str),
) -> Result<RunReport, RunError> {
    let plan = settings.plan()?;
    let first = &plan.steps[0].1;
    if let (Some(within), Some(target)) = (first.wait_for_target, &first.target) {
        super::target_wait::wait_for_target(&target.url, target.addr, within, interrupt)?;
    }
    let label = first
        .target
        .as_ref()
        .map_or_else(|| "builtin".to_owned(), |target| crate::config::redact_password(&target.url));
    sweep(&plan, &label, interrupt, log)
}

/// Runs `plan`, whose target (when it has one) was already waited for, as `label`;
/// `log` gets a line as each step starts.
pub fn sweep(
    plan: &SweepPlan,
    label: &str,
    interrupt: &AtomicBool,
    log: &mut dyn FnMut(&str),
) -> Result<RunReport, RunError> {
    let largest = plan
        .steps
        .iter()
        .map(|(_, config)| config)
        .max_by_key(|config| config.connections_per_process())
        .expect("a plan has steps");
    let session = Session::start(largest)?;
    let first = &plan.steps[0].1;
    let mut sweep = Sweep {
        label: label.to_owned(),
        scenario: first.load.scenario.to_owned(),
        varied: plan.varied,
        closed_loop: plan.closed_loop,
        planned: plan.loads.clone(),
        warmup_s: plan.warmup.as_secs_f64(),
        duration_s: plan.duration.as_secs_f64(),
        steps: Vec::new(),
        analysis: analyse(&[], plan.varied, plan.closed_loop, plan.holdout),
        thresholds: Vec::new(),
        interrupted: false,
    };
    let mut written = Ok(());
    for (index, ((settings, config), load)) in plan.steps.iter().zip(&plan.loads).enumerate() {
        let what = match plan.varied {
            Varied::Connections => crate::units::format::plural(*load as u64, "connection", "connections"),
            Varied::Rate => format!("{}/s offered", crate::units::format::rate(*load)),
        };
        log(&format!("sweep step {}/{}: {what}", index + 1, plan.steps.len()));
        let result = match session.measure(settings, config, interrupt) {
            Ok(result) => result,
            Err(error) => {
                session.finish();
                return Err(error);
            }
        };
        sweep.interrupted = result.interrupted;
        sweep.steps.push(SweepStep::of(*load, result));
        sweep.analysis = analyse(&sweep.steps, plan.varied, plan.closed_loop, plan.holdout);
        sweep.thresholds = thresholds::judge(&plan.thresholds, &sweep);
        if let Some(path) = &plan.json {
            written = write_sweep_json(&sweep, path).map_err(RunError::from);
        }
        if sweep.interrupted {
            break;
        }
    }
    session.finish();
    Ok(keep(RunReport::Sweep(Box::new(sweep)), written))
}
