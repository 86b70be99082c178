//! `wsbench compare`: the same scenario against several servers of the fleet, one table.
//! Servers take turns within each repeat (interleaved, so machine drift spreads evenly over
//! them); each is started fresh, pinned to its CPU, measured with the client pinned
//! elsewhere, and stopped. A server that is not installed, fails to start or dies mid-run
//! gets a row saying so; the others are still measured. Every result file is kept.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::config::{ConfigError, RunSettings};
use crate::fleet::{self, FleetError, FleetServer, Manifest};
use crate::result::RunResult;
use crate::session::{self, RunError};

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

/// One server's row.
#[derive(Debug, Clone)]
pub struct Row {
    pub manifest: Manifest,
    pub runs: Vec<RunResult>,
    /// What went wrong, in words (not installed, failed to start, died mid-run).
    pub problems: Vec<String>,
    /// Installed, with its toolchain present: worth starting.
    pub available: bool,
}

impl Row {
    /// The run with the median echoes/s, whose other figures the table shows.
    pub fn median_run(&self) -> Option<&RunResult> {
        let mut runs: Vec<&RunResult> = self.runs.iter().collect();
        runs.sort_by(|a, b| a.summary.echoes_per_sec.total_cmp(&b.summary.echoes_per_sec));
        runs.get(runs.len().saturating_sub(1) / 2).copied()
    }
}

/// Runs the comparison; `log` receives one line per step.
pub fn compare(
    config: &CompareConfig,
    interrupt: &AtomicBool,
    log: &mut dyn FnMut(&str),
) -> Result<Vec<Row>, CompareError> {
    let fleet = fleet::load(&config.fleet_dir)?;
    let selected = fleet::select(&fleet, &config.servers)?;
    // Check the scenario once before starting anything.
    RunSettings { target: Some("ws://127.0.0.1:1/".into()), ..config.settings.clone() }.validate()?;
    if let Some(out) = &config.out {
        std::fs::create_dir_all(out).map_err(|source| CompareError::OutDir { path: out.clone(), source })?;
    }
    let mut rows: Vec<Row> = selected.iter().map(|manifest| Row::new(manifest)).collect();
    let allowed = crate::affinity::allowed_cpus();
    let server_cpus: Vec<usize> = if allowed.len() >= 2 { vec![allowed[0]] } else { Vec::new() };
    let client_cpus: Vec<usize> = allowed.iter().copied().filter(|c| !server_cpus.contains(c)).collect();
    let total = rows.iter().filter(|r| r.available).count() * config.repeat as usize;
    let mut step = 0;
    for repeat in 1..=config.repeat {
        for row in rows.iter_mut().filter(|r| r.available) {
            if interrupt.load(Ordering::Relaxed) {
                break;
            }
            step += 1;
            let mut settings = config.settings.clone();
            if !client_cpus.is_empty() && settings.client_cpus.is_none() {
                settings.client_cpus = Some(crate::affinity::format_cpu_list(&client_cpus));
            }
            settings.json =
                config.out.as_ref().map(|out| out.join(format!("{}-{repeat}.json", row.manifest.name)));
            let label = format!("[{step}/{total}] {} repeat {repeat}", row.manifest.name);
            row.measure(settings, &server_cpus, interrupt, &mut |line| log(&format!("{label}: {line}")));
        }
    }
    Ok(rows)
}

impl Row {
    /// A row for `manifest`, saying so if the server is not installed or cannot run here.
    fn new(manifest: &Manifest) -> Row {
        let mut row =
            Row { manifest: manifest.clone(), runs: Vec::new(), problems: Vec::new(), available: true };
        row.available = fleet::is_installed(manifest);
        if !row.available {
            let missing = fleet::missing_tools(manifest);
            row.problems.push(if missing.is_empty() {
                format!("not installed: run `wsbench fleet install {}`", manifest.name)
            } else {
                format!("unavailable: needs {}", missing.join(", "))
            });
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
        settings.target = Some(server.url());
        let measured = measure(settings, interrupt);
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
                log(&format!(
                    "{:.0} echoes/s, {} of {} connections",
                    result.summary.echoes_per_sec,
                    result.summary.connections.established,
                    result.summary.connections.attempted
                ));
                self.runs.push(result);
            }
            Err(error) => {
                log(&error.to_string());
                self.problems.push(error.to_string());
            }
        }
        if let Some(status) = died {
            self.problems.push(format!("died mid-run ({status})"));
        }
    }
}

fn measure(settings: RunSettings, interrupt: &AtomicBool) -> Result<RunResult, RunError> {
    session::measure_once(&settings.validate()?, interrupt)
}

/// Each measured server's median run, labelled with its name, for the report renderers.
pub fn median_results(rows: &[Row]) -> Vec<(String, RunResult)> {
    rows.iter().filter_map(|row| Some((row.manifest.name.clone(), row.median_run()?.clone()))).collect()
}

/// Writes the HTML page of a comparison (atomically).
pub fn write_html(rows: &[Row], path: &std::path::Path) -> Result<(), CompareError> {
    let page = crate::report::render_html(&median_results(rows))?;
    crate::result::write_atomically(path, |out| out.write_all(page.as_bytes()))?;
    Ok(())
}

/// The comparison table, shaped like the seeds' tables.
pub fn render_table(rows: &[Row]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<22} {:<10} {:>22} {:>9} {:>9} {:>9} {:>9} {:>11} {:>8} {:>7} {:>9} {:>8} {:>7} {:>11} {:>6}",
        "server",
        "language",
        "echoes/s (min–max)",
        "mean",
        "p50",
        "p99",
        "connect",
        "conns",
        "timeouts",
        "disconn",
        "RSS",
        "RSS/conn",
        "CPU s",
        "echoes/CPUs",
        "client"
    );
    for row in rows {
        let name = &row.manifest.name;
        let Some(run) = row.median_run() else {
            let _ = writeln!(out, "{name:<22} {:<10} {}", row.manifest.language, row.problems.join("; "));
            continue;
        };
        let rates: Vec<f64> = row.runs.iter().map(|r| r.summary.echoes_per_sec).collect();
        let min = rates.iter().copied().fold(f64::INFINITY, f64::min);
        let max = rates.iter().copied().fold(0.0, f64::max);
        let s = &run.summary;
        let ms = |us: f64| format!("{:.2}ms", us / 1e3);
        let mib = |b: Option<u64>| b.map_or("-".to_owned(), |b| format!("{:.1}MiB", b as f64 / 1048576.0));
        let per_conn = match (run.server.rss_peak_bytes, run.server.rss_baseline_bytes) {
            (Some(peak), Some(base)) if s.connections.established > 0 => {
                format!(
                    "{:.1}KiB",
                    peak.saturating_sub(base) as f64 / 1024.0 / s.connections.established as f64
                )
            }
            _ => "-".to_owned(),
        };
        let _ = writeln!(
            out,
            "{name:<22} {:<10} {:>22} {:>9} {:>9} {:>9} {:>9} {:>11} {:>8} {:>7} {:>9} {:>8} {:>7} {:>11} {:>6}{}",
            row.manifest.language,
            format!("{:.0} ({:.0}–{:.0})", s.echoes_per_sec, min, max),
            ms(s.latency_us.mean),
            ms(s.latency_us.p50 as f64),
            ms(s.latency_us.p99 as f64),
            ms(s.connect_us.p50 as f64),
            format!("{}/{}", s.connections.established, s.connections.attempted),
            s.errors.get("connect_timeout").copied().unwrap_or(0),
            s.disconnections,
            mib(run.server.rss_peak_bytes),
            per_conn,
            run.server.cpu_seconds.map_or("-".to_owned(), |c| format!("{c:.2}")),
            run.server.echoes_per_cpu_second.map_or("-".to_owned(), |e| format!("{e:.0}")),
            if run.client.bound { "BOUND" } else { "ok" },
            if row.problems.is_empty() { String::new() } else { format!("  ({})", row.problems.join("; ")) },
        );
    }
    out
}
