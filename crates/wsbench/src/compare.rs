//! `wsbench compare`: the same scenario against several servers of the fleet, one table.
//! Servers take turns within each repeat (interleaved, so machine drift spreads evenly over
//! them); each is started fresh, pinned to its CPU, measured with the client pinned
//! elsewhere, and stopped. A server that is not installed, fails to start or dies mid-run
//! gets a row saying so; the others are still measured. Every result file is kept. With a
//! `--transport` other than the default (`--transport h2`, `--http2`) each server gets a
//! second row over it: natively when its manifest lists the transport, else through an
//! HAProxy front (`fleet::front`, HTTP/2 to HTTP/1.1) that speaks the default one to it.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::config::{ConfigError, RunSettings};
use crate::engine::dial::{DIALS, Dial};
use crate::fleet::{self, FleetError, FleetServer, Manifest, front};
use crate::result::RunResult;
use crate::session;

/// How long a server may take to open its port (the JVM and Erlang are slow starters).
pub const START_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error(transparent)]
    Fleet(#[from] FleetError),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("cannot create {path}")]
    OutDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Result(#[from] crate::result::ResultError),
}

/// What `wsbench compare` does.
#[derive(Debug, Clone)]
pub struct CompareConfig {
    pub servers: Vec<String>,
    pub repeat: u32,
    pub fleet_dir: PathBuf,
    /// Result files go here as `SERVER-REPEAT.json`.
    pub out: Option<PathBuf>,
    /// The scenario and its flags (the target is set per server).
    pub settings: RunSettings,
}

/// How a row's WebSockets reach its server: a transport of the registry, served by the
/// server itself or, when it serves only the default one, through an HAProxy front
/// (`fleet::front`) that speaks the default transport to it.
#[derive(Debug, Clone, Copy)]
pub struct Over {
    pub transport: &'static dyn Dial,
    pub front: bool,
}

impl Over {
    /// The registry's first transport, served directly.
    pub fn default_transport() -> Over {
        Over { transport: DIALS[0], front: false }
    }

    pub fn is_default(&self) -> bool {
        self.transport.name() == DIALS[0].name()
    }
}

impl PartialEq for Over {
    fn eq(&self, other: &Over) -> bool {
        self.transport.name() == other.transport.name() && self.front == other.front
    }
}

/// What the table says under a comparison with rows through an HAProxy front.
pub const FRONT_NOTE: &str = "/h2+haproxy: WebSockets over HTTP/2 to an HAProxy front, which opens each as an \
                              HTTP/1.1 upgrade to the server; its server figures are the server's own\n";

/// One server's row.
#[derive(Debug, Clone)]
pub struct Row {
    pub manifest: Manifest,
    /// How its WebSockets reach it, and the name the table gives it (`builtin/h2`).
    pub over: Over,
    pub label: String,
    pub runs: Vec<RunResult>,
    /// What went wrong, in words (not installed, failed to start, died mid-run).
    pub problems: Vec<String>,
    /// Installed, with its toolchain present: worth starting.
    pub available: bool,
    /// Not run, and why (not a failure): e.g. no permessage-deflate for a compressed run.
    pub skipped: Option<String>,
}

/// Runs the comparison; `log` receives one line per step.
pub fn compare(
    config: &CompareConfig,
    interrupt: &AtomicBool,
    log: &mut dyn FnMut(&str),
) -> Result<Vec<Row>, CompareError> {
    refuse_what_does_not_apply(&config.settings)?;
    let fleet = fleet::load(&config.fleet_dir)?;
    let selected = fleet::select(&fleet, &config.servers)?;
    // Check the scenario once before starting anything.
    let check = RunSettings {
        target: Some("ws://127.0.0.1:1/".into()),
        server_owned: true,
        ..config.settings.clone()
    };
    check.validate()?;
    if let Some(out) = &config.out {
        // Already checked by the command when its `--html` goes into it; harmless again.
        crate::config::check_output_folder("out", out)?;
        std::fs::create_dir_all(out).map_err(|source| CompareError::OutDir { path: out.clone(), source })?;
    }
    // A transport other than the registry's first gets rows of its own, beside the first's.
    let transport = config.settings.transport_chosen()?;
    let shared = transport.name() != DIALS[0].name();
    let mut rows: Vec<Row> = Vec::new();
    for manifest in selected {
        rows.push(Row::new(manifest, Over::default_transport()));
        if shared {
            rows.push(Row::new(
                manifest,
                Over { transport, front: !manifest.serves_transport(transport.name()) },
            ));
        }
    }
    let protocol = config.settings.protocol.as_deref().unwrap_or(crate::protocol::DEFAULT);
    for row in &mut rows {
        row.require_protocol(protocol);
    }
    for feature in Feature::needed_by(&config.settings) {
        for row in &mut rows {
            row.require(feature);
        }
    }
    let (server_cpus, client_cpus) = server_and_client_cpus();
    let total = rows.iter().filter(|r| r.available).count() * config.repeat as usize;
    let mut step = 0;
    for repeat in 1..=config.repeat {
        for row in rows.iter_mut().filter(|r| r.available) {
            if interrupt.load(Ordering::Relaxed) {
                break;
            }
            step += 1;
            let mut settings = config.settings.clone();
            if row.over.is_default() {
                settings.without_transport();
            }
            if !client_cpus.is_empty() && settings.client_cpus.is_none() {
                settings.client_cpus = Some(crate::affinity::format_cpu_list(&client_cpus));
            }
            settings.json = config
                .out
                .as_ref()
                .map(|out| out.join(format!("{}-{repeat}.json", row.label.replace('/', "-"))));
            let label = format!("[{step}/{total}] {} repeat {repeat}", row.label);
            row.measure(settings, &server_cpus, interrupt, &mut |line| log(&format!("{label}: {line}")));
        }
    }
    if interrupt.load(Ordering::Relaxed) {
        for row in rows.iter_mut().filter(|r| r.available) {
            row.note_interrupted(config.repeat);
        }
    }
    Ok(rows)
}

/// The CPUs a comparison pins its servers to (the first allowed one, when there are two or
/// more) and its client to (the others).
fn server_and_client_cpus() -> (Vec<usize>, Vec<usize>) {
    let allowed = crate::affinity::allowed_cpus();
    let server: Vec<usize> = if allowed.len() >= 2 { vec![allowed[0]] } else { Vec::new() };
    let client = allowed.iter().copied().filter(|c| !server.contains(c)).collect();
    (server, client)
}

/// What `compare --sweep` found of one server: its sweep, or what went wrong, in words.
pub type SweptServer = (String, Result<crate::result::sweep::Sweep, String>);

/// `compare --sweep`: each selected server in turn started fresh, swept over `sweep`'s
/// series (its URL the target; `SERVER-sweep.json` in `--out`) and stopped. The plan is
/// checked once before any server starts; a server that is not installed, cannot start
/// or fails its sweep gets its problem instead of a sweep.
pub fn compare_sweeps(
    config: &CompareConfig,
    sweep: &crate::sweep::SweepSettings,
    interrupt: &AtomicBool,
    log: &mut dyn FnMut(&str),
) -> Result<Vec<SweptServer>, CompareError> {
    refuse_what_does_not_apply(&config.settings)?;
    if config.repeat != 1 {
        let why =
            "a sweep is measured once per server (its steps are the series): give --repeat 1 with --sweep";
        return Err(crate::config::invalid_setting("repeat", why.to_owned()).into());
    }
    let fleet = fleet::load(&config.fleet_dir)?;
    let selected = fleet::select(&fleet, &config.servers)?;
    let for_server = |target: String, json: Option<PathBuf>| crate::sweep::SweepSettings {
        settings: RunSettings { target: Some(target), json, html: None, ..config.settings.clone() },
        ..sweep.clone()
    };
    for_server("ws://127.0.0.1:1/".to_owned(), None).plan()?;
    if let Some(out) = &config.out {
        crate::config::check_output_folder("out", out)?;
        std::fs::create_dir_all(out).map_err(|source| CompareError::OutDir { path: out.clone(), source })?;
    }
    let (server_cpus, client_cpus) = server_and_client_cpus();
    let protocol = config.settings.protocol.as_deref().unwrap_or(crate::protocol::DEFAULT);
    let mut swept = Vec::new();
    for manifest in selected {
        let mut row = Row::new(manifest, Over::default_transport());
        row.require_protocol(protocol);
        Feature::needed_by(&config.settings).into_iter().for_each(|feature| row.require(feature));
        let label = row.label.clone();
        if !row.available || interrupt.load(Ordering::Relaxed) {
            let why = row.skipped.clone().or_else(|| row.problems.first().cloned());
            swept.push((
                label,
                Err(why.unwrap_or_else(|| "not measured: interrupted before its turn".to_owned())),
            ));
            continue;
        }
        let mut server = match FleetServer::start(&row.manifest, &server_cpus, START_TIMEOUT) {
            Ok(server) => server,
            Err(error) => {
                swept.push((label, Err(format!("failed to start: {error}"))));
                continue;
            }
        };
        let json = config.out.as_ref().map(|out| out.join(format!("{label}-sweep.json")));
        let mut settings = for_server(server.url(row.manifest.path(protocol)), json);
        if settings.settings.client_cpus.is_none() && !server_cpus.is_empty() {
            settings.settings.client_cpus = Some(crate::affinity::format_cpu_list(&client_cpus));
        }
        let outcome = settings.plan().map_err(session::RunError::from).and_then(|plan| {
            session::sweep::sweep(&plan, &label, interrupt, &mut |line| log(&format!("{label}: {line}")))
        });
        server.stop();
        let outcome = outcome
            .map_err(|e| crate::causes::with_causes(&e))
            .and_then(|report| report.sweep().cloned().ok_or_else(|| "the sweep gave no steps".to_owned()));
        swept.push((label, outcome));
    }
    Ok(swept)
}

/// What a run may need from a fleet server beyond echo (permessage-deflate, or what its
/// scenario needs): the manifest key that says the server has it, the environment variable
/// that turns it on when the server starts, and why a server without it is skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Feature {
    pub manifest_key: &'static str,
    pub env: &'static str,
    pub skipped: &'static str,
}

/// The environment variable a fleet server reads to turn permessage-deflate on.
pub const DEFLATE_ENV: &str = "WSBENCH_DEFLATE";

/// permessage-deflate, for `--compression` other than `none`.
const DEFLATE: Feature = Feature {
    manifest_key: "deflate",
    env: DEFLATE_ENV,
    skipped: "skipped: no permessage-deflate (`deflate = true` is not in its server.toml)",
};

impl Feature {
    /// The features `settings` need. A scenario's feature is that of its default protocol
    /// (the pub/sub of docs/protocols.md): a server that speaks the run's own protocol has
    /// what the protocol has (a broker's pub/sub).
    pub fn needed_by(settings: &RunSettings) -> Vec<Feature> {
        let compresses = settings.compression.as_deref().is_some_and(|c| !matches!(c.trim(), "none" | "off"));
        let default_protocol = settings.protocol.as_deref().is_none_or(|p| p == crate::protocol::DEFAULT);
        let scenario =
            settings.scenario.as_deref().and_then(crate::scenario::by_name).filter(|_| default_protocol);
        let of_scenario = scenario.and_then(|scenario| scenario.fleet_feature()).map(|feature| Feature {
            manifest_key: feature.manifest_key,
            env: feature.env,
            skipped: feature.skipped,
        });
        compresses.then_some(DEFLATE).into_iter().chain(of_scenario).collect()
    }
}

impl Row {
    /// A run that needs `feature`: servers without it are skipped (with the reason); the
    /// others are started with its environment variable set.
    fn require(&mut self, feature: Feature) {
        if self.manifest.offers(feature.manifest_key) {
            self.manifest.env.insert(feature.env.to_owned(), "1".to_owned());
        } else if self.skipped.is_none() {
            self.available = false;
            self.problems.clear();
            self.skipped = Some(feature.skipped.to_owned());
        }
    }

    /// A run in `protocol`: a server that does not speak it is skipped, saying what it speaks.
    fn require_protocol(&mut self, protocol: &str) {
        if !self.manifest.speaks(protocol) && self.skipped.is_none() {
            self.available = false;
            self.problems.clear();
            self.skipped = Some(format!(
                "skipped: does not speak --protocol {protocol} (it speaks {})",
                self.manifest.protocols.join(", ")
            ));
        }
    }

    /// A signal ended the comparison: a row whose runs were cut short or not all made says
    /// so (naming the signal), so that it does not read like a complete one.
    fn note_interrupted(&mut self, repeats: u32) {
        let cut_short = self.runs.iter().filter(|run| run.interrupted).count();
        let whole = self.runs.len() - cut_short;
        let interrupted = crate::session::interrupt::interrupted();
        if whole < repeats as usize {
            self.problems.push(match (whole, cut_short) {
                (0, 0) => format!("not measured: {interrupted} before its turn"),
                (0, _) => format!("{interrupted}: its run was cut short, the figures cover what ran"),
                (whole, _) => format!(
                    "{interrupted}: {whole} of {repeats} repeats complete{}",
                    if cut_short > 0 { ", one cut short" } else { "" }
                ),
            });
        }
    }

    /// This row as the report shows it.
    pub fn view(&self) -> crate::report::CompareRow<'_> {
        crate::report::CompareRow {
            name: &self.label,
            language: &self.manifest.language,
            runs: &self.runs,
            problems: &self.problems,
            skipped: self.skipped.as_deref(),
        }
    }

    /// Whether anything of this server failed: a problem (not installed, failed to start,
    /// died), or a run that counted errors or failed a `--threshold`.
    pub fn failed(&self) -> bool {
        !self.problems.is_empty()
            || self
                .runs
                .iter()
                .any(|run| !run.summary.errors.is_empty() || crate::thresholds::any_failed(run))
    }

    /// A row for `manifest` over `over`, saying so if the server is not installed or cannot
    /// run here (or needs an HAProxy front that is not installed).
    fn new(manifest: &Manifest, over: Over) -> Row {
        let label = match (over.is_default(), over.front) {
            (true, _) => manifest.name.clone(),
            (false, false) => format!("{}/{}", manifest.name, over.transport.flag_name()),
            (false, true) => format!("{}/{}+haproxy", manifest.name, over.transport.flag_name()),
        };
        let mut row = Row {
            manifest: manifest.clone(),
            over,
            label,
            runs: Vec::new(),
            problems: Vec::new(),
            available: true,
            skipped: None,
        };
        row.available = fleet::is_installed(manifest);
        if !row.available {
            let missing = fleet::missing_tools(manifest);
            row.problems.push(if missing.is_empty() {
                format!("not installed: run `wsbench fleet install {}`", manifest.name)
            } else {
                format!("unavailable: needs {}", missing.join(", "))
            });
        }
        if row.available && over.front && !front::available() {
            row.available = false;
            row.skipped = Some(format!(
                "skipped: no HTTP/2 of its own, and no HAProxy for a front ({} is missing: apt-get install haproxy)",
                front::HAPROXY
            ));
        }
        row
    }

    /// Starts the server fresh, measures it with `settings` (their target set to it), stops
    /// it, and records the run or what went wrong.
    fn measure(
        &mut self,
        mut settings: RunSettings,
        server_cpus: &[usize],
        interrupt: &AtomicBool,
        log: &mut dyn FnMut(&str),
    ) {
        let mut server = match FleetServer::start(&self.manifest, server_cpus, START_TIMEOUT) {
            Ok(server) => server,
            Err(error) => {
                log(&format!("failed to start: {error}"));
                self.problems.push(format!("failed to start: {error}"));
                return;
            }
        };
        let protocol = settings.protocol.as_deref().unwrap_or(crate::protocol::DEFAULT);
        let mut front = match self.over.front {
            true => match start_front(&self.manifest.name, &server, server_cpus) {
                Ok(front) => Some(front),
                Err(problem) => {
                    server.stop();
                    log(&problem);
                    self.problems.push(problem);
                    return;
                }
            },
            false => None,
        };
        settings.target = Some(front.as_ref().unwrap_or(&server).url(self.manifest.path(protocol)));
        if front.is_some() && settings.server_pid.is_none() {
            // The server measured is the one behind the front.
            settings.server_pid = server.pids().first().copied();
        }
        settings.server_owned = true;
        let member = Arc::new(Mutex::new(Member {
            manifest: self.manifest.clone(),
            cpus: server_cpus.to_vec(),
            server,
        }));
        let measured = session::measure_and_write_owning(&settings, interrupt, Some(member.clone()));
        if let Some(front) = front.as_mut() {
            front.stop();
        }
        let mut member = member.lock().unwrap_or_else(PoisonError::into_inner);
        let server = &mut member.server;
        // A server that closed every connection is usually on its way out: give it a
        // moment to exit so the row can say it died rather than look merely slow.
        let lost_all = measured.as_ref().is_ok_and(|r| {
            r.summary.connections.established > 0
                && r.summary.disconnections >= r.summary.connections.established
        });
        let died = server.exited_within(if lost_all { Duration::from_secs(2) } else { Duration::ZERO });
        server.stop();
        match measured {
            Ok(result) => {
                let what = crate::scenario::of_result(&result).map_or("round trips", |s| s.exchange().many);
                log(&format!(
                    "{:.0} {what}/s, {} of {} connections",
                    result.summary.exchanges_per_sec,
                    result.summary.connections.established,
                    result.summary.connections.attempted
                ));
                self.runs.push(result);
            }
            Err(error) => {
                let problem = crate::causes::with_causes(&error);
                log(&problem);
                self.problems.push(problem);
            }
        }
        if let Some(status) = died {
            self.problems.push(format!("died mid-run ({status})"));
        }
    }
}

/// A fleet member a comparison started, as its recovery runs (`--disrupt restart|kill`)
/// restart it: on the same port, by the start command of its manifest.
#[derive(Debug)]
struct Member {
    manifest: Manifest,
    cpus: Vec<usize>,
    server: FleetServer,
}

impl session::disruptor::OwnedServer for Member {
    fn stop_for_restart(&mut self, kill: bool) -> Duration {
        let stopping = Instant::now();
        match kill {
            true => self.server.kill(),
            false => self.server.stop(),
        }
        // The start command's shell may end before the server it started has let go of the
        // port (closing ten thousand connections takes a while): stopped means the port is free.
        let deadline = stopping + START_TIMEOUT;
        while std::net::TcpListener::bind(("127.0.0.1", self.server.port)).is_err()
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        stopping.elapsed()
    }

    fn start_again(&mut self) -> Result<Duration, String> {
        let started = std::time::Instant::now();
        self.server = FleetServer::start_on(&self.manifest, &self.cpus, self.server.port, START_TIMEOUT)
            .map_err(|e| crate::causes::with_causes(&e))?;
        Ok(started.elapsed())
    }

    fn close_every_connection(&mut self) -> Result<(), String> {
        Err(format!("{} cannot be told to close its connections", self.manifest.name))
    }
}

/// The flags of `wsbench run` that a comparison takes but has no use for, refused before
/// any server starts: each of its runs is one server's, started by the comparison, with its
/// result file in `--out`. Taken silently, they did nothing (`--find-max-rate`, `--json`)
/// or kept only the last run's (`--stream`).
fn refuse_what_does_not_apply(settings: &RunSettings) -> Result<(), ConfigError> {
    match refusals(settings).into_iter().find(|(given, ..)| *given) {
        Some((_, setting, what_to_do)) => {
            Err(crate::config::invalid_setting(setting, format!("does not apply to compare: {what_to_do}")))
        }
        None => Ok(()),
    }
}

/// The settings of `wsbench run` that compare refuses (`compare --help` does not list them).
pub const REFUSED_SETTINGS: [&str; 9] = [
    "find-max-rate",
    "json",
    "print-result",
    "hlog",
    "stream",
    "metrics-addr",
    "shard",
    "start-at",
    "server-pid",
];

/// Each refused setting: whether `settings` give it, its name, and what to do instead.
fn refusals(settings: &RunSettings) -> [(bool, &'static str, &'static str); REFUSED_SETTINGS.len()] {
    const ONE_RUN: &str = "follows one run, and compare makes one per server and repeat: watch its progress \
                           lines, or give each server its own `wsbench run`";
    [
        (
            settings.find_max_rate,
            "find-max-rate",
            "compare measures every server at the same load: search one server with `wsbench run URL \
             --find-max-rate`",
        ),
        (
            settings.json.is_some(),
            "json",
            "compare writes a result file per server and repeat: give --out DIR",
        ),
        (
            settings.print_result,
            "print-result",
            "the result files are in --out DIR; compare prints its table",
        ),
        (
            settings.hlog.is_some(),
            "hlog",
            "give --out DIR: each run's result file there holds its histograms",
        ),
        (settings.stream.is_some(), "stream", ONE_RUN),
        (settings.metrics_addr.is_some(), "metrics-addr", ONE_RUN),
        (settings.shard.is_some(), "shard", "compare splits each run itself: give --processes N"),
        (settings.start_at.is_some(), "start-at", "compare starts each run once its server is up"),
        (
            settings.server_pid.is_some(),
            "server-pid",
            "compare starts each server and samples the process it started",
        ),
    ]
}

/// HAProxy before `server`, on the server's CPUs; the error is the row's problem.
fn start_front(name: &str, server: &FleetServer, cpus: &[usize]) -> Result<FleetServer, String> {
    let manifest = front::haproxy_before(name, server.port)
        .map_err(|e| format!("cannot write the HAProxy front's configuration: {e}"))?;
    FleetServer::start(&manifest, cpus, START_TIMEOUT).map_err(|e| format!("its HAProxy front {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refused_settings_listed_are_the_ones_refused() {
        let named: Vec<&str> = refusals(&RunSettings::default()).iter().map(|(_, name, _)| *name).collect();
        assert_eq!(named, REFUSED_SETTINGS);
        assert!(refusals(&RunSettings::default()).iter().all(|(given, ..)| !given));
    }
}
