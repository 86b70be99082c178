//! `wsbench compare`: the same scenario against several servers of the fleet, one table.
//! Servers take turns within each repeat (interleaved, so machine drift spreads evenly over
//! them); each is started fresh, pinned to its CPU, measured with the client pinned
//! elsewhere, and stopped. A server that is not installed, fails to start or dies mid-run
//! gets a row saying so; the others are still measured. Every result file is kept.
//!
//! With `--transport` naming transports other than the default (`--transport h2,h3`, or
//! `--http2`), each server gets a row over each of them beside its default one: natively
//! when its manifest lists the transport, else through an HAProxy front (`fleet::front`,
//! HTTP/2 to HTTP/1.1) that speaks the default one to it; a transport no front can take
//! (HTTP/3) skips the servers that lack it, in a row saying so. A row over QUIC, which is
//! always TLS, is served with a certificate the comparison makes ([`certificate`]) and the
//! client trusts that certificate alone (`--cacert`; `--insecure`, given, trusts any).

mod certificate;
mod member;
mod refusals;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::config::{ConfigError, RunSettings};
use crate::engine::dial::{DIALS, Dial};
use crate::fleet::{self, FleetError, FleetServer, Manifest, front};
use crate::result::RunResult;
use crate::session;
use certificate::Certificate;
use member::Member;
pub use refusals::REFUSED_SETTINGS;
use refusals::refuse_what_does_not_apply;

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
    #[error("cannot make the certificate of the rows over QUIC in {dir}")]
    Certificate {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
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

    /// Over `transport` to the server of `manifest`: itself when it serves it, else a front.
    pub fn to(manifest: &Manifest, transport: &'static dyn Dial) -> Over {
        Over { transport, front: !manifest.serves_transport(transport.name()) }
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
    let transports = transports_checked(&config.settings)?;
    if let Some(out) = &config.out {
        // Already checked by the command when its `--html` goes into it; harmless again.
        crate::config::check_output_folder("out", out)?;
        std::fs::create_dir_all(out).map_err(|source| CompareError::OutDir { path: out.clone(), source })?;
    }
    let mut rows = rows_of(&selected, &transports, &config.settings);
    let certificate = serve_tls(&mut rows)?;
    let (server_cpus, client_cpus) = server_and_client_cpus();
    let total = rows.iter().filter(|r| r.available).count() * config.repeat as usize;
    let mut step = 0;
    for repeat in 1..=config.repeat {
        for row in rows.iter_mut().filter(|r| r.available) {
            if interrupt.load(Ordering::Relaxed) {
                break;
            }
            step += 1;
            let mut settings = row.settings(&config.settings, certificate.as_ref());
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

/// The transports of the rows: the registry's first, then each other one `--transport`
/// lists, in its order; the scenario checked over each before anything starts.
fn transports_checked(settings: &RunSettings) -> Result<Vec<&'static dyn Dial>, ConfigError> {
    let listed = settings.transports_listed()?;
    let others = listed.into_iter().filter(|dial| dial.name() != DIALS[0].name());
    let transports: Vec<&'static dyn Dial> = std::iter::once(DIALS[0]).chain(others).collect();
    for &transport in &transports {
        let scheme = if transport.over_udp() { "wss" } else { "ws" };
        let mut check = RunSettings {
            target: Some(format!("{scheme}://127.0.0.1:1/")),
            server_owned: true,
            ..settings.clone()
        };
        // Alone, the default is checked as given: an option of a transport not in the run is refused.
        if transports.len() > 1 {
            check.over_transport(transport);
        }
        check.validate()?;
    }
    Ok(transports)
}

/// A row for each selected server over each transport, skipped where the server lacks what
/// the run needs (its protocol, a feature, the transport).
fn rows_of(selected: &[&Manifest], transports: &[&'static dyn Dial], settings: &RunSettings) -> Vec<Row> {
    let mut rows: Vec<Row> = Vec::new();
    for manifest in selected {
        rows.extend(transports.iter().map(|&transport| Row::new(manifest, Over::to(manifest, transport))));
    }
    let protocol = settings.protocol.as_deref().unwrap_or(crate::protocol::DEFAULT);
    for row in &mut rows {
        row.require_protocol(protocol);
    }
    for feature in Feature::needed_by(settings) {
        for row in &mut rows {
            row.require(feature);
        }
    }
    rows
}

/// The certificate the rows over QUIC are served with, made when there is such a row to
/// measure, and each such row's server told where it is.
fn serve_tls(rows: &mut [Row]) -> Result<Option<Certificate>, CompareError> {
    let mut quic = rows.iter_mut().filter(|row| row.available && row.over.transport.over_udp()).peekable();
    if quic.peek().is_none() {
        return Ok(None);
    }
    let certificate = Certificate::make()
        .map_err(|source| CompareError::Certificate { dir: std::env::temp_dir(), source })?;
    for row in quic {
        row.manifest.env.extend(certificate.env());
    }
    Ok(Some(certificate))
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
        let fronted = over.front && front::fronts(over.transport);
        let label = match (over.is_default(), fronted) {
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
            available: false,
            skipped: None,
        };
        if over.front && !fronted {
            let (flag, name) = (over.transport.flag_name(), over.transport.name());
            row.skipped = Some(format!(
                "skipped: does not serve {flag} (its server.toml lists no {name} among its transports, \
                 and an HAProxy front takes {} only)",
                crate::engine::dial::by_name(front::FRONTED).map_or(front::FRONTED, |dial| dial.flag_name())
            ));
            return row;
        }
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

    /// The settings of this row's runs: `base` over its transport alone; over QUIC, the
    /// comparison's `certificate` the one CA trusted (unless `--insecure` trusts any).
    fn settings(&self, base: &RunSettings, certificate: Option<&Certificate>) -> RunSettings {
        let mut settings = base.clone();
        settings.over_transport(self.over.transport);
        if self.over.transport.over_udp() && !settings.insecure {
            settings.cacert = certificate.map(|certificate| certificate.cert.clone());
        }
        settings
    }

    /// Starts the server, ready for this row's transport (its UDP port open too, for one
    /// over QUIC), and its front if it has one; the error is the row's problem.
    fn start(&self, server_cpus: &[usize]) -> Result<(FleetServer, Option<FleetServer>), String> {
        let failed = |error: fleet::StartError| format!("failed to start: {error}");
        let mut server = FleetServer::start(&self.manifest, server_cpus, START_TIMEOUT).map_err(failed)?;
        if self.over.transport.over_udp() {
            server.wait_for_udp(START_TIMEOUT).map_err(failed)?;
        }
        if !self.over.front {
            return Ok((server, None));
        }
        match start_front(&self.manifest.name, &server, server_cpus) {
            Ok(front) => Ok((server, Some(front))),
            Err(problem) => {
                server.stop();
                Err(problem)
            }
        }
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
        let (server, mut front) = match self.start(server_cpus) {
            Ok(started) => started,
            Err(problem) => {
                log(&problem);
                self.problems.push(problem);
                return;
            }
        };
        let protocol = settings.protocol.as_deref().unwrap_or(crate::protocol::DEFAULT);
        let path = self.manifest.path(protocol);
        settings.target =
            Some(front.as_ref().unwrap_or(&server).url_over(path, self.over.transport.over_udp()));
        if front.is_some() && settings.server_pid.is_none() {
            // The server measured is the one behind the front.
            settings.server_pid = server.pids().first().copied();
        }
        settings.server_owned = true;
        let member = Arc::new(Mutex::new(Member {
            manifest: self.manifest.clone(),
            cpus: server_cpus.to_vec(),
            server,
            udp: self.over.transport.over_udp(),
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

/// HAProxy before `server`, on the server's CPUs; the error is the row's problem.
fn start_front(name: &str, server: &FleetServer, cpus: &[usize]) -> Result<FleetServer, String> {
    let manifest = front::haproxy_before(name, server.port)
        .map_err(|e| format!("cannot write the HAProxy front's configuration: {e}"))?;
    FleetServer::start(&manifest, cpus, START_TIMEOUT).map_err(|e| format!("its HAProxy front {e}"))
}
