//! `wsbench run`: everything around the engine. It checks that the run fits this process
//! (open files), splits the CPUs between the built-in server and the client workers, starts
//! and stops the built-in server when no URL is given, finds and samples the server
//! process, runs the engine, and turns what was measured into a result file.

use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::config::RunConfig;
use crate::engine::{self, Control, LoadSpec};
use crate::find_rate::{Search, Slo, Step, search};
use crate::probe::{SAMPLE_INTERVAL, ServerProbe, pids_listening_on};
use crate::result::RunResult;
use crate::samples::RunOutcome;
use crate::target::Target;

/// Open files the client keeps for itself beyond one per connection.
pub const RESERVED_FILES: u64 = 64;
/// Exit status of a `wsbench run` that completed but counted failures (`summary.errors` is
/// not empty; docs/exit-codes.md). A shard exiting with it completed: it did not die.
pub const EXIT_RUN_FAILURES: u8 = 3;
const SERVER_START_TIMEOUT: Duration = Duration::from_secs(15);
const SERVER_STOP_TIMEOUT: Duration = Duration::from_secs(3);

#[derive(Debug, thiserror::Error)]
pub enum RunError {
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
    #[error("the engine failed: {0}")]
    Engine(#[from] std::io::Error),
    #[error(transparent)]
    Result(#[from] crate::result::ResultError),
    #[error("{0}")]
    Shards(String),
    #[error(transparent)]
    Merge(#[from] crate::merge::MergeError),
}

/// A started built-in server (`wsbench serve` as a child process), stopped on drop.
#[derive(Debug)]
pub struct BuiltinServer {
    child: Child,
    pub url: String,
    /// Every URL of the `listening on` line (`ws://H:P`, then e.g. `tcp://H:P2`).
    pub urls: Vec<String>,
}

impl BuiltinServer {
    /// Starts `wsbench serve --port 0` from this very binary, pinned to `cpus`.
    pub fn start(cpus: &[usize], extra_args: &[&str]) -> Result<BuiltinServer, RunError> {
        let exe = std::env::current_exe().map_err(|e| RunError::ServerStart(e.to_string()))?;
        let mut command = Command::new(exe);
        command
            .args(["serve", "--port", "0"])
            .args(extra_args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        if !cpus.is_empty() {
            crate::affinity::pin_command(&mut command, cpus);
        }
        // Ctrl-C in a terminal reaches wsbench only: the server keeps serving while the
        // client stops and writes its (interrupted) result, and is stopped after.
        command.process_group(0);
        // The server must not outlive wsbench, even when wsbench is killed outright.
        // SAFETY: prctl is async-signal-safe.
        unsafe {
            command.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                Ok(())
            });
        }
        let mut child = command.spawn().map_err(|e| RunError::ServerStart(e.to_string()))?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            let _ = tx.send(lines.next());
            for _ in lines {}
        });
        let line = match rx.recv_timeout(SERVER_START_TIMEOUT) {
            Ok(Some(Ok(line))) => line,
            _ => {
                let _ = child.kill();
                let status = child.wait().map(|s| s.to_string()).unwrap_or_default();
                return Err(RunError::ServerStart(format!("it printed no `listening on` line ({status})")));
            }
        };
        let urls: Vec<String> = line
            .strip_prefix("listening on ")
            .map(|rest| rest.split_whitespace().map(str::to_owned).collect())
            .unwrap_or_default();
        let url = urls
            .first()
            .ok_or_else(|| RunError::ServerStart(format!("unexpected first line {line:?}")))?
            .clone();
        Ok(BuiltinServer { child, url, urls })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Every process of the server: the one started, plus the processes it started in turn
    /// when it runs as several (`serve --processes N`), found by the port they listen on.
    pub fn pids(&self) -> Vec<u32> {
        let mut pids = vec![self.pid()];
        if let Ok(target) = Target::parse(&self.url)
            && let Ok(listening) = pids_listening_on(target.addr.port())
        {
            pids.extend(listening);
        }
        pids.sort_unstable();
        pids.dedup();
        pids
    }

    /// SIGTERM, then SIGKILL if it has not exited in time.
    pub fn stop(&mut self) {
        // SAFETY: sending a signal to our own child's pid.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
        }
        let deadline = Instant::now() + SERVER_STOP_TIMEOUT;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for BuiltinServer {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.stop();
        }
    }
}

/// Which CPUs the server and the client workers get.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuPlan {
    pub server: Vec<usize>,
    /// One worker per entry.
    pub client: Vec<Option<usize>>,
}

/// With a built-in server on a machine of two or more CPUs, the server gets the first CPU
/// and the client the rest, so neither steals the other's time.
pub fn plan_cpus(config: &RunConfig, allowed: &[usize]) -> CpuPlan {
    let builtin = config.target.is_none();
    let server = match &config.server_cpus {
        Some(cpus) => cpus.clone(),
        None if builtin && allowed.len() >= 2 => vec![allowed[0]],
        None => Vec::new(),
    };
    let client = match &config.client_cpus {
        Some(cpus) => cpus.iter().copied().map(Some).collect(),
        None => {
            let rest: Vec<Option<usize>> =
                allowed.iter().copied().filter(|cpu| !server.contains(cpu)).map(Some).collect();
            if rest.is_empty() { vec![None] } else { rest }
        }
    };
    CpuPlan { server, client }
}

/// Checks the open-file limit (after raising the soft limit) against the connections.
pub fn check_file_limit(connections: u64) -> Result<u64, RunError> {
    let limit = crate::machine::raise_open_file_limit().unwrap_or(1024);
    let needed = connections + RESERVED_FILES;
    if needed > limit {
        return Err(RunError::TooManyConnections {
            wanted: connections,
            needed,
            limit,
            fits: limit.saturating_sub(RESERVED_FILES),
        });
    }
    Ok(limit)
}

/// Checks that the built-in server's processes can hold `connections` (the server inherits
/// the client's open-file limit), allowing 10% for `SO_REUSEPORT`'s uneven spread.
pub fn check_server_processes(connections: u64, processes: u64, limit: u64) -> Result<(), RunError> {
    let per_process = limit.saturating_sub(RESERVED_FILES).max(1);
    let with_spread = connections + connections / 10;
    if processes > 1 && with_spread.div_ceil(processes) > per_process
        || processes == 1 && connections > per_process
    {
        return Err(RunError::ServerTooSmall {
            connections,
            processes,
            limit,
            needed: with_spread.div_ceil(per_process).max(2),
        });
    }
    Ok(())
}

/// The target of one or more measured runs: the built-in server (started once, pinned)
/// or the given URL, and the CPUs the client's workers use.
#[derive(Debug)]
pub struct Session {
    pub(crate) cpus: CpuPlan,
    pub(crate) builtin: Option<BuiltinServer>,
    pub(crate) target: Target,
}

impl Session {
    /// Checks that `config` fits this process and starts the built-in server if needed.
    pub fn start(config: &RunConfig) -> Result<Session, RunError> {
        let limit = check_file_limit(config.connections_per_process())?;
        if config.target.is_none() {
            check_server_processes(config.connections, config.server_processes, limit)?;
        }
        let cpus = plan_cpus(config, &crate::affinity::allowed_cpus());
        let server_processes = config.server_processes.to_string();
        let extra_args: &[&str] =
            if config.server_processes > 1 { &["--processes", &server_processes] } else { &[] };
        let builtin = match config.target {
            Some(_) => None,
            None => Some(BuiltinServer::start(&cpus.server, extra_args)?),
        };
        let target = match (&config.target, &builtin) {
            (Some(target), _) => target.clone(),
            (None, Some(server)) => {
                Target::parse(&server.url).map_err(|e| RunError::ServerStart(e.to_string()))?
            }
            (None, None) => unreachable!("a built-in server was started"),
        };
        Ok(Session { cpus, builtin, target })
    }

    /// One measured run of `config` against this session's target.
    pub fn measure(&self, config: &RunConfig, interrupt: &AtomicBool) -> Result<RunOutcome, RunError> {
        // Shards given --start-at begin then (the engine waits): their timelines and server
        // samples count from that instant, so merged shards line up.
        let (started_at_unix_ms, run_start) = start_instant(config.start_at_unix_ms);
        let probe = start_probe(config, &self.target, self.builtin.as_ref(), run_start);
        let spec = LoadSpec::from_config(config, self.target.clone());
        let mut progress = Progress::new();
        let output = engine::run(spec, &self.cpus.client, interrupt, &mut |control| progress.update(control));
        progress.finish();
        let server = match probe {
            Ok(probe) => probe.stop(),
            Err(report) => report,
        };
        let output = output?;
        Ok(RunOutcome {
            scenario: config.scenario.name().to_owned(),
            target_url: self.target.url.clone(),
            target_builtin: self.builtin.is_some(),
            config: serde_json::to_value(config).unwrap_or_default(),
            started_at_unix_ms,
            elapsed_secs: output.elapsed_secs,
            measured_secs: output.measured_secs,
            measured_echoes: output.measured_echoes,
            connect_phase_secs: output.connect_phase_secs,
            interrupted: output.interrupted,
            connections: output.metrics.counters.connections_established,
            in_flight: config.in_flight,
            metrics: output.metrics,
            server,
            client_workers: output.workers,
            machine: crate::machine::machine_facts(),
        })
    }

    /// Stops the built-in server, if this session started one.
    pub fn finish(mut self) {
        if let Some(server) = self.builtin.as_mut() {
            server.stop();
        }
    }
}

/// The wall-clock start of a run (ms since the Unix epoch) and the same instant as an
/// [`Instant`]: now, or `start_at_unix_ms` when that is later.
pub(crate) fn start_instant(start_at_unix_ms: Option<u64>) -> (u64, Instant) {
    let now = Instant::now();
    let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0);
    let start_ms = start_at_unix_ms.map_or(now_ms, |at| at.max(now_ms));
    (start_ms, now + Duration::from_millis(start_ms - now_ms))
}

/// Runs a validated configuration to its result. Progress goes to stderr when stdout is
/// a terminal; `interrupt` (Ctrl-C) ends the run early and the result says so. With
/// `--processes N` the run is split into N child processes whose results are merged
/// ([`crate::processes`]).
pub fn run(config: RunConfig, interrupt: &AtomicBool) -> Result<RunResult, RunError> {
    if config.processes > 1 {
        return crate::processes::run(&config, interrupt);
    }
    let session = Session::start(&config)?;
    let hook = crate::processes::TestHook::armed(&config);
    let outcome = std::thread::scope(|scope| {
        if let Some(hook) = hook {
            scope.spawn(move || hook.fire(interrupt));
        }
        session.measure(&config, interrupt)
    });
    session.finish();
    let outcome = outcome?;
    let result = RunResult::from_outcome(&outcome);
    if let Some(path) = &config.json {
        result.write_json(path)?;
    }
    if let Some(path) = &config.hlog {
        crate::hlog::write_hlog(path, outcome.started_at_unix_ms, &outcome.metrics.intervals)?;
    }
    if let Some(hook) = hook {
        hook.exit_after_result();
    }
    Ok(result)
}

/// Message rate of the first step of `--find-max-rate` when `--rate` does not give one.
pub const DEFAULT_SEARCH_START_RATE: f64 = 1000.0;

/// `--find-max-rate`: measures open-loop steps against one server until the search ends.
pub fn find_max_rate(config: RunConfig, slo: Slo, interrupt: &AtomicBool) -> Result<Search, RunError> {
    let session = Session::start(&config)?;
    let connections = config.connections as f64;
    let start = config.message_interval.map_or(DEFAULT_SEARCH_START_RATE, |i| connections / i.as_secs_f64());
    let judge = slo.clone();
    let search = search(slo, start, |rate| {
        let mut step = config.clone();
        step.message_interval = Some(Duration::from_secs_f64(connections / rate));
        step.json = None;
        step.hlog = None;
        if !std::io::stdout().is_terminal() {
            eprintln!("wsbench: step at {rate:.0} messages/s");
        }
        let result = RunResult::from_outcome(&session.measure(&step, interrupt)?);
        Ok::<_, RunError>((Step::judge(rate, &result, &judge), result.interrupted))
    });
    session.finish();
    let search = search?;
    if let Some(path) = &config.json {
        search.write_json(path)?;
    }
    Ok(search)
}

/// Finds the server process: the spawned built-in server, `--server-pid`, or whatever
/// listens on the target's port on this machine.
pub(crate) fn start_probe(
    config: &RunConfig,
    target: &Target,
    builtin: Option<&BuiltinServer>,
    run_start: Instant,
) -> Result<ServerProbe, crate::samples::ServerReport> {
    if config.no_probe {
        return Err(ServerProbe::unprobed("--no-probe: this process did not sample the server"));
    }
    let (pids, found_by) = if let Some(server) = builtin {
        (server.pids(), "spawned")
    } else if let Some(pid) = config.server_pid {
        (vec![pid], "--server-pid")
    } else if is_local(target) {
        match pids_listening_on(target.addr.port()) {
            Ok(pids) if !pids.is_empty() => (pids, "listening-port"),
            Ok(_) => {
                return Err(ServerProbe::unprobed(&format!(
                    "no process of this machine visibly listens on port {} (give --server-pid)",
                    target.addr.port()
                )));
            }
            Err(e) => {
                return Err(ServerProbe::unprobed(&format!("finding the listening process failed: {e}")));
            }
        }
    } else {
        return Err(ServerProbe::unprobed("remote target: the probe only sees processes on this machine"));
    };
    Ok(ServerProbe::start(pids, found_by, SAMPLE_INTERVAL, run_start))
}

fn is_local(target: &Target) -> bool {
    target.addr.ip().is_loopback()
}

/// The live progress line: on stderr, only when stdout is a terminal.
struct Progress {
    enabled: bool,
    last_echoes: u64,
    last_at: Instant,
    shown: bool,
}

impl Progress {
    fn new() -> Progress {
        Progress {
            enabled: std::io::stdout().is_terminal(),
            last_echoes: 0,
            last_at: Instant::now(),
            shown: false,
        }
    }

    fn update(&mut self, control: &Control) {
        if !self.enabled || self.last_at.elapsed() < Duration::from_millis(500) {
            return;
        }
        let echoes = control.echoes.load(Ordering::Relaxed);
        let rate = (echoes - self.last_echoes) as f64 / self.last_at.elapsed().as_secs_f64();
        self.last_echoes = echoes;
        self.last_at = Instant::now();
        let open = control.open_connections.load(Ordering::Relaxed);
        let p99 = control.last_p99_us.load(Ordering::Relaxed);
        let elapsed = control.start.elapsed().as_secs_f64();
        let mut stderr = std::io::stderr().lock();
        let _ = write!(
            stderr,
            "\r\x1b[2K{elapsed:6.1}s  {open} connections open  {rate:.0} echoes/s  p99 {:.2} ms",
            p99 as f64 / 1e3
        );
        let _ = stderr.flush();
        self.shown = true;
    }

    fn finish(&mut self) {
        if self.shown {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
        }
    }
}
