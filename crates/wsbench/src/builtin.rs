//! The built-in server as a child process: `wsbench serve` from this very binary, handed its
//! [`ServeConfig`] on stdin (never as flags), on a free port, pinned to its CPUs, ready once
//! it prints its `listening on` line (which names the port it got), stopped through its
//! [`Supervised`] handle. A recovery run (`--disrupt`) restarts it on the same port, kills
//! it and starts it again, or has it close every connection (SIGUSR2) as a graceful
//! restart would.

use std::process::Stdio;
use std::time::{Duration, Instant};

use wsbench_server::ServeConfig;
use wsbench_supervisor::{Launch, Supervised};

use crate::config::Target;
use crate::probe::pids_listening_on;

/// Why the built-in server could not be started.
#[derive(Debug, thiserror::Error)]
pub enum BuiltinError {
    #[error("cannot start the built-in server: {0}")]
    Start(String),
    #[error(transparent)]
    Child(#[from] wsbench_supervisor::Error),
}

const START_TIMEOUT: Duration = Duration::from_secs(15);
const STOP_GRACE: Duration = Duration::from_secs(3);

/// A started built-in server, stopped on drop.
#[derive(Debug)]
pub struct BuiltinServer {
    process: Supervised,
    /// What it was started with, to start it again the same way.
    cpus: Vec<usize>,
    config: ServeConfig,
    pub url: String,
    /// Every URL of the `listening on` line (`ws://H:P`, then e.g. `tcp://H:P2`).
    pub urls: Vec<String>,
}

impl BuiltinServer {
    /// The server's defaults on a free port: what [`BuiltinServer::start`] is given, with the
    /// changes a caller needs (`pubsub`, `tcp_port`, `tls`, `processes`).
    pub fn config() -> ServeConfig {
        ServeConfig { port: 0, ..ServeConfig::default() }
    }

    /// Starts `wsbench serve` on `config`, pinned to `cpus` (none: unpinned).
    pub fn start(cpus: &[usize], config: &ServeConfig) -> Result<BuiltinServer, BuiltinError> {
        let (process, urls) = launch(cpus, config)?;
        let url = urls.first().cloned().unwrap_or_default();
        Ok(BuiltinServer { process, cpus: cpus.to_vec(), config: config.clone(), url, urls })
    }

    /// Stops the server (SIGTERM, as a deploy does: it closes its connections with 1001;
    /// or, when `kill`, SIGKILL: they are cut), for [`BuiltinServer::start_again`]: how long
    /// it took to exit.
    pub fn stop_for_restart(&mut self, kill: bool) -> Duration {
        let stopping = Instant::now();
        match kill {
            true => self.process.kill(),
            false => self.process.stop(),
        };
        stopping.elapsed()
    }

    /// Starts the stopped server again on its port: how long the new one took from its start
    /// to listening. (A child dies with the thread that started it: call this from one that
    /// lives as long as the server must.)
    pub fn start_again(&mut self) -> Result<Duration, BuiltinError> {
        let port = Target::parse(&self.url).map(|target| target.addr.port()).unwrap_or(self.config.port);
        let config = ServeConfig { port, ..self.config.clone() };
        let started = Instant::now();
        let (process, _) = launch(&self.cpus, &config)?;
        let took = started.elapsed();
        self.process = process;
        Ok(took)
    }

    /// Has the server close every connection with its close code (`close_code` of its
    /// configuration), going on (SIGUSR2; a server of one process).
    pub fn close_every_connection(&mut self) {
        self.process.signal(libc::SIGUSR2);
    }

    /// The configuration it runs with.
    pub fn serve_config(&self) -> &ServeConfig {
        &self.config
    }

    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// Every process of the server: the one started, plus the processes it started in turn
    /// when it runs as several (`serve --processes N`), found by the port they listen on.
    pub fn pids(&self) -> Vec<u32> {
        let mut pids = vec![self.pid()];
        if let Ok(target) = Target::parse(&self.url)
            && let Ok(listening) = pids_listening_on(target.addr)
        {
            pids.extend(listening);
        }
        pids.sort_unstable();
        pids.dedup();
        pids
    }

    /// SIGTERM, then SIGKILL if it has not exited in time.
    pub fn stop(&mut self) {
        self.process.stop();
    }
}

/// Starts `wsbench serve` on `config`, pinned to `cpus`, and waits for its `listening on`
/// line: the process and every URL it named.
fn launch(cpus: &[usize], config: &ServeConfig) -> Result<(Supervised, Vec<String>), BuiltinError> {
    let mut launch = Launch::this_program("the built-in server", "serve", config)?.grace(STOP_GRACE);
    launch.command_mut().stdout(Stdio::piped()).stderr(Stdio::inherit());
    crate::affinity::pin_command(launch.command_mut(), cpus);
    let mut process = launch.start()?;
    let line = process.wait_for_line("listening on ", START_TIMEOUT)?;
    let urls: Vec<String> = line["listening on ".len()..].split_whitespace().map(str::to_owned).collect();
    if urls.is_empty() {
        return Err(BuiltinError::Start(format!("unexpected first line {line:?}")));
    }
    Ok((process, urls))
}
