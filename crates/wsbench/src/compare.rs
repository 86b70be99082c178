//! `wsbench compare`: the same scenario against several servers of the fleet, one table.
//! Servers take turns within each repeat (interleaved, so machine drift spreads evenly over
//! them); each is started fresh, pinned to its CPU, measured with the client pinned
//! elsewhere, and stopped. A server that is not installed, fails to start or dies mid-run
//! gets a row saying so; the others are still measured. Every result file is kept.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::config::{ConfigError, RunSettings};
use crate::fleet::{self, FleetError, FleetServer, Manifest};
use crate::result::RunResult;
use crate::run::{RunError, Session};

/// How long a server may take to open its port (the JVM and Erlang are slow starters).
pub const START_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error(transparent)]
    Fleet(#[from] FleetError),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("cannot create {path}: {source}")]
    OutDir { path: PathBuf, source: std::io::Error },
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
    let mut rows: Vec<Row> = selected
        .iter()
        .map(|m| Row { manifest: (*m).clone(), runs: Vec::new(), problems: Vec::new(), available: true })
        .collect();
    for row in &mut rows {
        row.available = fleet::is_installed(&row.manifest);
        if !row.available {
            let missing = fleet::missing_tools(&row.manifest);
            row.problems.push(if missing.is_empty() {
                format!("not installed: run `wsbench fleet install {}`", row.manifest.name)
            } else {
                format!("unavailable: needs {}", missing.join(", "))
            });
        }
    }
    let allowed = crate::affinity::allowed_cpus();
    let server_cpus: Vec<usize> = if allowed.len() >= 2 { vec![allowed[0]] } else { Vec::new() };
    let client_cpus: Vec<String> =
        allowed.iter().filter(|c| !server_cpus.contains(c)).map(|c| c.to_string()).collect();
    let total = rows.iter().filter(|r| r.available).count() * config.repeat as usize;
    let mut step = 0;
    for repeat in 1..=config.repeat {
        for row in rows.iter_mut().filter(|r| r.available) {
            if interrupt.load(Ordering::Relaxed) {
                break;
            }
            step += 1;
            let name = row.manifest.name.clone();
            let mut server = match FleetServer::start(&row.manifest, &server_cpus, START_TIMEOUT) {
                Ok(server) => server,
                Err(error) => {
                    log(&format!("[{step}/{total}] {name} repeat {repeat}: failed to start: {error}"));
                    row.problems.push(format!("failed to start: {error}"));
                    continue;
                }
            };
            let mut settings = config.settings.clone();
            settings.target = Some(server.url());
            if !client_cpus.is_empty() && settings.client_cpus.is_none() {
                settings.client_cpus = Some(client_cpus.join(","));
            }
            settings.json = config.out.as_ref().map(|out| out.join(format!("{name}-{repeat}.json")));
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
                        "[{step}/{total}] {name} repeat {repeat}: {:.0} echoes/s, {} of {} connections",
                        result.summary.echoes_per_sec,
                        result.summary.connections.established,
                        result.summary.connections.attempted
                    ));
                    row.runs.push(result);
                }
                Err(error) => {
                    log(&format!("[{step}/{total}] {name} repeat {repeat}: {error}"));
                    row.problems.push(error.to_string());
                }
            }
            if let Some(status) = died {
                row.problems.push(format!("died mid-run ({status})"));
            }
        }
    }
    Ok(rows)
}

fn measure(settings: RunSettings, interrupt: &AtomicBool) -> Result<RunResult, RunError> {
    let config = settings.validate().map_err(|e| RunError::ServerStart(e.to_string()))?;
    let session = Session::start(&config)?;
    let outcome = session.measure(&config, interrupt);
    session.finish();
    let result = RunResult::from_outcome(&outcome?);
    if let Some(path) = &config.json {
        result.write_json(path)?;
    }
    Ok(result)
}
