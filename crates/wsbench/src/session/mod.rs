//! Orchestration: everything around the engine, for every command that measures. A
//! [`Session`] checks that a run fits this machine ([`cpus`]), starts the built-in server
//! when no URL is given ([`builtin`], through the one child-process crate, `wsbench_supervisor`),
//! finds and samples the server process, and runs the engine; [`Session::measure_in_this_process`] is
//! the one measurement that `run`, `--find-max-rate` and `compare` all use. [`shards`]
//! splits a run over child processes; [`target_wait`] waits for a server that is
//! still starting; [`interrupt`] turns SIGINT, SIGTERM and SIGHUP into a flag every loop
//! checks. Results come back as [`RunResult`]s; files are written by [`write_outputs`].

pub mod cpus;
pub mod disruptor;
pub mod interrupt;
pub mod shards;
pub mod sweep;
pub mod target_wait;

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use crate::builtin::BuiltinServer;
pub use cpus::{CpuPlan, RESERVED_FILES, check_file_limit, check_server_processes, plan_cpus};
pub use disruptor::Disruptor;

use crate::config::Slo;
use crate::config::Target;
use crate::config::{Mode, Outputs, RunConfig, RunSettings};
use crate::engine::{self, Job};
use crate::find_rate::search;
use crate::hlog::HlogWriter;
use crate::probe::{SAMPLE_INTERVAL, ServerProbe, pids_listening_on};
use crate::result::search::{Search, Step, write_search_json};
use crate::result::{EndedEarly, RunResult};
use crate::samples::{RunOutcome, ServerReport};

/// Why a measurement could not be made or kept.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    #[error(
        "{wanted} connections need {needed} open files, but this process may open only {limit} \
         (hard limit): run at most {fits} connections per process, or split the run over \
         processes with --processes N (or --shard I/N)"
    )]
    TooManyConnections { wanted: u64, needed: u64, limit: u64, fits: u64 },
    #[error(
        "{connections} connections do not fit in {processes} built-in server process(es) of \
         {limit} open files each: add --server-processes {needed}"
    )]
    ServerTooSmall { connections: u64, processes: u64, limit: u64, needed: u64 },
    #[error("cannot start the built-in server: {0}")]
    ServerStart(String),
    #[error(transparent)]
    Builtin(#[from] crate::builtin::BuiltinError),
    #[error("the engine failed")]
    Engine(#[source] std::io::Error),
    /// The target does not speak the run's transport (checked before any load): the cause
    /// and what to do, in one line.
    #[error(transparent)]
    Transport(#[from] crate::engine::dial::CheckError),
    #[error(transparent)]
    Result(#[from] crate::result::ResultError),
    #[error("{0}")]
    Shards(String),
    #[error(transparent)]
    Merge(#[from] crate::merge::MergeError),
    #[error(transparent)]
    Live(#[from] crate::live::LiveError),
    /// A child process (the built-in server, a shard) could not be started or made ready.
    #[error(transparent)]
    Child(#[from] wsbench_supervisor::Error),
    /// `--wait-for-target` ran out before the server accepted a connection, or a signal
    /// stopped the wait.
    #[error(transparent)]
    TargetWait(#[from] target_wait::WaitError),
}

/// What a `wsbench run` or `wsbench sweep` produced: one result, a rate search, or a sweep.
#[derive(Debug)]
pub enum RunReport {
    /// One result, written where asked.
    Once(Box<RunResult>),
    Search(Search),
    Sweep(Box<crate::result::sweep::Sweep>),
    /// A result or a search whose file could not be written where asked (`error`): it was
    /// written to `fallback` instead (`None`: not even there). The report is still shown.
    Unsaved {
        report: Box<RunReport>,
        error: RunError,
        fallback: Option<PathBuf>,
    },
}

impl RunReport {
    /// The one run's result, when this is one run (written or not), not a search.
    pub fn result(&self) -> Option<&RunResult> {
        match self {
            RunReport::Once(result) => Some(result),
            RunReport::Search(_) | RunReport::Sweep(_) => None,
            RunReport::Unsaved { report, .. } => report.result(),
        }
    }

    /// The sweep, when this is one (written or not).
    pub fn sweep(&self) -> Option<&crate::result::sweep::Sweep> {
        match self {
            RunReport::Sweep(sweep) => Some(sweep),
            RunReport::Unsaved { report, .. } => report.sweep(),
            RunReport::Once(_) | RunReport::Search(_) => None,
        }
    }

    /// Writes the result or the search as its JSON file at `path`.
    pub fn write_json(&self, path: &std::path::Path) -> Result<(), crate::result::ResultError> {
        match self {
            RunReport::Once(result) => result.write_json(path),
            RunReport::Search(search) => write_search_json(search, path),
            RunReport::Sweep(sweep) => crate::result::sweep::write_sweep_json(sweep, path),
            RunReport::Unsaved { report, .. } => report.write_json(path),
        }
    }
}

/// Validates `settings` and runs them to a result, or a search: in this process, or split
/// over `--processes N` children whose results are merged. `interrupt` (a signal) ends the
/// run early; the result says so and is still written.
pub fn run(settings: &RunSettings, interrupt: &AtomicBool) -> Result<RunReport, RunError> {
    let config = settings.validate()?;
    if let (Some(within), Some(target)) = (config.wait_for_target, &config.target) {
        target_wait::wait_for_target(&target.url, target.addr, within, interrupt)?;
    }
    if let Mode::FindMaxRate(slo) = &config.mode {
        let report = RunReport::Search(find_max_rate(settings, &config, slo, interrupt)?);
        let written = config.outputs.json.as_deref().map_or(Ok(()), |path| Ok(report.write_json(path)?));
        return Ok(keep(report, written));
    }
    let mut result = measure_in_own_session(settings, &config, interrupt)?;
    let written = write_outputs(&mut result, &config);
    Ok(keep(RunReport::Once(Box::new(result)), written))
}

/// One measured run of `settings`, from start to written result, as [`run`] measures it
/// (in this process, or as `--processes N` shards merged) but with no search: how each
/// run of a comparison is measured.
pub fn measure_and_write(settings: &RunSettings, interrupt: &AtomicBool) -> Result<RunResult, RunError> {
    measure_and_write_owning(settings, interrupt, None)
}

/// [`measure_and_write`] against a server the caller started, which a recovery run's
/// disruptions may restart (`owned`: a comparison's fleet member).
pub fn measure_and_write_owning(
    settings: &RunSettings,
    interrupt: &AtomicBool,
    owned: Option<disruptor::SharedServer>,
) -> Result<RunResult, RunError> {
    let config = settings.validate()?;
    let mut session = Session::start(&config)?;
    session.owned = owned;
    let result = session.measure(settings, &config, interrupt);
    session.finish();
    let mut result = result?;
    write_outputs(&mut result, &config)?;
    Ok(result)
}

/// One measured run of `config` (validated from `settings`) in its own session (the
/// built-in server started and stopped), split over its `--processes` when it has more
/// than one; no file written.
fn measure_in_own_session(
    settings: &RunSettings,
    config: &RunConfig,
    interrupt: &AtomicBool,
) -> Result<RunResult, RunError> {
    let session = Session::start(config)?;
    let result = session.measure(settings, config, interrupt);
    session.finish();
    result
}

/// `report`, whose files were `written`; when that failed (the folder was removed during
/// the run, the disk is full), it goes to a fallback file in the temporary folder instead
/// (`$TMPDIR/wsbench-result-PID-MS.json`), so a finished run is never lost.
pub(crate) fn keep(report: RunReport, written: Result<(), RunError>) -> RunReport {
    let Err(error) = written else { return report };
    let unix_ms = crate::machine::unix_ms();
    let path = std::env::temp_dir().join(format!("wsbench-result-{}-{unix_ms}.json", std::process::id()));
    let fallback = report.write_json(&path).ok().map(|()| path);
    RunReport::Unsaved { report: Box::new(report), error, fallback }
}

/// Judges the run's `--threshold`s on its finished result (recorded in
/// `summary.thresholds`), then writes the result file, where asked (the interval log is
/// written as the run goes). Every run's written result goes through here: a single run's
/// and a merged one.
pub fn write_outputs(result: &mut RunResult, config: &RunConfig) -> Result<(), RunError> {
    result.summary.thresholds = crate::thresholds::judge(&config.thresholds, result);
    if let Some(path) = &config.outputs.json {
        result.write_json(path)?;
    }
    Ok(())
}

/// The target of one or more measured runs: the built-in server (started once, pinned)
/// or the given URL, and the CPUs the client's workers use.
#[derive(Debug)]
pub struct Session {
    pub(crate) cpus: CpuPlan,
    /// Shared with a recovery run's disruptor, which may restart it.
    pub(crate) builtin: Option<Arc<Mutex<BuiltinServer>>>,
    /// A server the caller started and the disruptor may restart (a comparison's fleet
    /// member); the built-in server otherwise.
    pub(crate) owned: Option<disruptor::SharedServer>,
    pub(crate) target: Target,
    /// The live view, metrics endpoint and stream of every measurement of this session.
    pub(crate) live: crate::live::Live,
}

impl Session {
    /// Checks that `config` fits this process and starts the built-in server if needed.
    pub fn start(config: &RunConfig) -> Result<Session, RunError> {
        let limit = check_file_limit(config.connections_per_process())?;
        let live = crate::live::Live::start(&config.live)?;
        let server_processes = config.placement.server_processes;
        if config.target.is_none() {
            check_server_processes(config.connections_open_at_once(), server_processes, limit)?;
        }
        let cpus = plan_cpus(config, &crate::affinity::allowed_cpus());
        let (builtin, target) = match &config.target {
            Some(target) => (None, target.clone()),
            None => {
                let mut serve = wsbench_server::ServeConfig {
                    processes: server_processes as usize,
                    ..BuiltinServer::config()
                };
                crate::scenario::of(&config.load).configure_server(&mut serve);
                if let Some(code) = config.recovery.close_code() {
                    serve.close_code = code;
                }
                let server = BuiltinServer::start(&cpus.server, &serve)?;
                let target = Target::parse(&server.url)
                    .map_err(|e| RunError::ServerStart(crate::causes::with_causes(&e)))?;
                (Some(Arc::new(Mutex::new(server))), target)
            }
        };
        Ok(Session { cpus, builtin, target, live, owned: None })
    }

    /// One measured run of `config` (validated from `settings`) against this session's
    /// target: in this process, or as its `--processes` shards, merged.
    pub fn measure(
        &self,
        settings: &RunSettings,
        config: &RunConfig,
        interrupt: &AtomicBool,
    ) -> Result<RunResult, RunError> {
        match config.placement.processes {
            1 => self.measure_in_this_process(config, interrupt),
            _ => shards::run(self, settings, config, interrupt),
        }
    }

    /// One measured run of `config` against this session's target, in this process.
    pub fn measure_in_this_process(
        &self,
        config: &RunConfig,
        interrupt: &AtomicBool,
    ) -> Result<RunResult, RunError> {
        let scenario = crate::scenario::of(&config.load);
        self.warmup_run(config, interrupt)?;
        // Shards given --start-at begin then (the engine waits): their timelines and server
        // samples count from that instant, so merged shards line up.
        let (started_at_unix_ms, run_start) = start_instant(config.load.start_at_unix_ms);
        let probe = start_probe(config, &self.target, self.builtin(), run_start);
        let plan = crate::scenario::plan_of(&config.load);
        let phases = plan.phases();
        let job = Job::new(config.load.clone(), self.target.clone(), plan).map_err(RunError::Engine)?;
        engine::check(&job)?;
        let board = job.disruptions.clone();
        let disruptor = self.disruptor(config, &board);
        let pids = probe.as_ref().map_or(Vec::new(), |probe| probe.pids().to_vec());
        let hlog = config.outputs.hlog.as_deref().map(|path| HlogWriter::create(path, started_at_unix_ms));
        let hlog = hlog.transpose()?;
        let shared = self.shared_cpus(&pids);
        let mut tracker = self.live.track(&config.load, &phases, scenario.exchange(), pids, hlog);
        let clock = crate::machine_load::CpuClock::now();
        let net = crate::machine_net::NetCounters::now();
        let output = engine::run(job, &self.cpus.client, interrupt, &mut |control, seen| {
            tracker.update(control, seen)
        });
        if let Some(disruptor) = disruptor {
            disruptor.stop();
        }
        let clock = clock.zip(crate::machine_load::CpuClock::now());
        let net = net.zip(crate::machine_net::NetCounters::now());
        // The probe samples on while the server releases the closed connections (a scenario
        // that measures the server's drift says how long).
        std::thread::sleep(scenario.settle());
        let server = match probe {
            Ok(probe) => probe.stop(),
            Err(report) => report,
        };
        let output = output.map_err(RunError::Engine)?;
        tracker.finish(&output);
        let config_json = serde_json::to_value(config).unwrap_or_default();
        let figures = crate::scenario::figures_for(
            scenario.name(),
            &output.metrics,
            &config_json,
            output.measured_secs,
            &server,
        );
        let mut result = RunResult::from_outcome(&RunOutcome {
            scenario: scenario.name().to_owned(),
            target_url: self.target.url.clone(),
            target_builtin: self.builtin.is_some(),
            config: config_json,
            started_at_unix_ms,
            elapsed_secs: output.elapsed_secs,
            measured_secs: output.measured_secs,
            measured_exchanges: output.measured_exchanges,
            connect_phase_secs: output.connect_phase_secs,
            drain_secs: output.drain_secs,
            interrupted: output.interrupted,
            // Reopened connections are established again: the run's connections are fewer.
            connections: output.metrics.counters.connections_established.min(config.load.connections),
            in_flight: config.load.in_flight,
            metrics: output.metrics,
            figures,
            server,
            client_workers: output.workers,
            client_memory: output.client_memory,
            machine: crate::machine::machine_facts(),
            disruptions: board.events(),
        });
        result.run_id = Some(config.run_id.clone());
        result.client.machine_load =
            clock.map(|(before, after)| before.until(&after, result.server.cpu_seconds, shared));
        result.client.machine_network = net.map(|(before, after)| before.until(&after));
        result.ended_early = output.ended_early.map(|planned| EndedEarly::new(planned, &result.counters));
        Ok(result)
    }

    /// The built-in server, locked for a look (its pids, its URL).
    pub(crate) fn builtin(&self) -> Option<std::sync::MutexGuard<'_, BuiltinServer>> {
        self.builtin.as_ref().map(|server| server.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// The thread that carries out `config`'s disruptions on `board`, if it has any.
    fn disruptor(
        &self,
        config: &RunConfig,
        board: &Arc<engine::disruption::Disruptions>,
    ) -> Option<Disruptor> {
        let builtin = || self.builtin.clone().map(|server| server as disruptor::SharedServer);
        let server = self.owned.clone().or_else(builtin);
        let load = config.load.warmup + config.load.duration;
        Disruptor::start(&config.recovery, load, board.clone(), server)
    }

    /// The sentence on a local server allowed onto the client's CPUs, if it was.
    fn shared_cpus(&self, server_pids: &[u32]) -> Option<String> {
        let builtin = self.builtin.is_some().then_some(self.cpus.server.as_slice());
        crate::machine_load::shared_cpus(builtin, server_pids, &self.cpus.client)
    }

    /// An unmeasured run before the measured one, when the scenario has one (churn's
    /// warm-up: the server's baseline is then that of a server that has served, its code
    /// paged in, its allocator's arenas made, so a leak shows as growth over it). Nothing of
    /// it is kept; the live view shows it as warm-up.
    fn warmup_run(&self, config: &RunConfig, interrupt: &AtomicBool) -> Result<(), RunError> {
        let scenario = crate::scenario::of(&config.load);
        let Some(warmup) = scenario.warmup_run(&config.load) else { return Ok(()) };
        let plan = crate::scenario::plan_of(&warmup);
        let mut tracker = self.live.track_warmup(&warmup, scenario.exchange());
        let job = Job::new(warmup, self.target.clone(), plan).map_err(RunError::Engine)?;
        engine::check(&job)?;
        let output = engine::run(job, &self.cpus.client, interrupt, &mut |control, seen| {
            tracker.update(control, seen)
        })
        .map_err(RunError::Engine)?;
        tracker.finish(&output);
        // The server releases the warm-up's connections before the baseline is sampled.
        std::thread::sleep(scenario.settle());
        Ok(())
    }

    /// Stops the built-in server, if this session started one.
    pub fn finish(mut self) {
        if let Some(server) = self.builtin.take() {
            server.lock().unwrap_or_else(std::sync::PoisonError::into_inner).stop();
        }
    }
}

/// The wall-clock start of a run (ms since the Unix epoch) and the same instant as an
/// [`Instant`]: now, or `start_at_unix_ms` when that is later.
pub(crate) fn start_instant(start_at_unix_ms: Option<u64>) -> (u64, Instant) {
    let now = Instant::now();
    let now_ms = crate::machine::unix_ms();
    let start_ms = start_at_unix_ms.map_or(now_ms, |at| at.max(now_ms));
    (start_ms, now + Duration::from_millis(start_ms - now_ms))
}

/// Message rate of the first step of `--find-max-rate` when `--rate` does not give one.
pub const DEFAULT_SEARCH_START_RATE: f64 = 1000.0;

/// `--find-max-rate`: measures open-loop steps against one server until the search ends
/// (its file is written by [`run`]), each step in this process or, with `--processes N`,
/// as N shards whose results are merged before the step is judged.
fn find_max_rate(
    settings: &RunSettings,
    config: &RunConfig,
    slo: &Slo,
    interrupt: &AtomicBool,
) -> Result<Search, RunError> {
    let session = Session::start(config)?;
    let connections = config.load.connections as f64;
    let start =
        config.load.message_interval.map_or(DEFAULT_SEARCH_START_RATE, |i| connections / i.as_secs_f64());
    let search = search(slo.clone(), start, |rate| {
        let mut step = config.clone();
        step.load.message_interval = Some(Duration::from_secs_f64(connections / rate));
        step.outputs = Outputs::default();
        session.live.step_started(rate);
        // Shards read the step's rate from their settings.
        let step_settings = RunSettings { rate: Some(format!("{rate}/s")), ..settings.clone() };
        let result = session.measure(&step_settings, &step, interrupt)?;
        Ok::<_, RunError>((Step::judge(rate, &result, slo), result.interrupted))
    });
    session.finish();
    search
}

/// Finds the server process: the spawned built-in server, `--server-pid`, or whatever
/// listens on the target's port on this machine. The error is the report saying why the
/// server is not sampled.
pub(crate) fn start_probe(
    config: &RunConfig,
    target: &Target,
    builtin: Option<std::sync::MutexGuard<'_, BuiltinServer>>,
    run_start: Instant,
) -> Result<ServerProbe, ServerReport> {
    if config.sampling.no_probe {
        return Err(ServerProbe::unprobed("--no-probe: this process did not sample the server"));
    }
    let (pids, found_by) = if let Some(server) = builtin {
        (server.pids(), "spawned")
    } else if let Some(pid) = config.sampling.server_pid {
        (vec![pid], "--server-pid")
    } else if target.addr.ip().is_loopback() {
        match pids_listening_on(target.addr) {
            Ok(pids) if !pids.is_empty() => (pids, "listening-port"),
            Ok(_) => {
                return Err(ServerProbe::unprobed(&format!(
                    "no process of this machine visibly listens on {} (give --server-pid)",
                    target.addr
                )));
            }
            Err(e) => {
                return Err(ServerProbe::unprobed(&format!("finding the listening process failed: {e}")));
            }
        }
    } else {
        return Err(ServerProbe::unprobed("remote target: the probe only sees processes on this machine"));
    };
    // A run that restarts the server follows it to its new processes.
    let follow = (!config.recovery.is_empty()).then_some(target.addr);
    Ok(ServerProbe::following(pids, found_by, SAMPLE_INTERVAL, run_start, follow))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    #[test]
    fn a_report_that_cannot_be_written_goes_to_a_fallback_file() {
        let mut result = RunResult::from_outcome(&fixture::closed_loop());
        let mut config = RunSettings::default().validate().unwrap();
        config.outputs = Outputs { json: Some("/nonexistent-wsbench/r.json".into()), hlog: None };
        let written = write_outputs(&mut result, &config);
        let RunReport::Unsaved { report, error, fallback } = keep(RunReport::Once(Box::new(result)), written)
        else {
            panic!("a failed write must keep the report");
        };
        assert!(error.to_string().starts_with("cannot write /nonexistent-wsbench/r.json"), "{error}");
        let fallback = fallback.expect("the temporary folder takes the result");
        assert!(fallback.file_name().unwrap().to_string_lossy().starts_with("wsbench-result-"));
        let back = RunResult::read_json(&fallback).unwrap();
        std::fs::remove_file(&fallback).unwrap();
        assert!(matches!(*report, RunReport::Once(ref kept) if **kept == back));
    }
}
