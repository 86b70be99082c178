//! The built-in server as a child process: `wsbench serve --port 0` from this very binary,
//! pinned to its CPUs, ready once it prints its `listening on` line (which names the port
//! it got), stopped through its [`Supervised`] handle.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use super::RunError;
use super::supervisor::Supervised;
use crate::config::Target;
use crate::probe::pids_listening_on;

const START_TIMEOUT: Duration = Duration::from_secs(15);
const STOP_GRACE: Duration = Duration::from_secs(3);

/// A started built-in server, stopped on drop.
#[derive(Debug)]
pub struct BuiltinServer {
    process: Supervised,
    pub url: String,
    /// Every URL of the `listening on` line (`ws://H:P`, then e.g. `tcp://H:P2`).
    pub urls: Vec<String>,
}

impl BuiltinServer {
    /// Starts `wsbench serve --port 0 EXTRA_ARGS`, pinned to `cpus` (none: unpinned).
    pub fn start(cpus: &[usize], extra_args: &[&str]) -> Result<BuiltinServer, RunError> {
        let exe =
            std::env::current_exe().map_err(|e| RunError::ServerStart(crate::causes::with_causes(&e)))?;
        let mut command = Command::new(exe);
        command
            .args(["serve", "--port", "0"])
            .args(extra_args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        if !cpus.is_empty() {
            crate::affinity::pin_command(&mut command, cpus);
        }
        let mut process = Supervised::spawn(command, STOP_GRACE)
            .map_err(|e| RunError::ServerStart(crate::causes::with_causes(&e)))?;
        let stdout = process.child_mut().stdout.take().expect("stdout is piped");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            let _ = tx.send(lines.next());
            for _ in lines {}
        });
        let line = match rx.recv_timeout(START_TIMEOUT) {
            Ok(Some(Ok(line))) => line,
            _ => {
                let status = process.stop();
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
        Ok(BuiltinServer { process, url, urls })
    }

    pub fn pid(&self) -> u32 {
        self.process.pid()
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
        self.process.stop();
    }
}
