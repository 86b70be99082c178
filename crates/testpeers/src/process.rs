//! One started server: its process (a [`Supervised`] child of the workspace's supervisor
//! crate, in a process group of its own), its ports, its temporary folder, and how it is
//! stopped: an optional graceful stop command first (RabbitMQ's `rabbitmqctl stop`), then
//! SIGTERM to the group and SIGKILL after a grace period, then an optional clean-up command
//! (`epmd -kill` for the epmd RabbitMQ daemonised on a port of its own).

use std::fs::File;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use wsbench_supervisor::{Launch, Supervised};

use crate::PeerError;

/// How long a graceful stop or a clean-up command may take.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// A running server, stopped on drop.
#[derive(Debug)]
pub struct Peer {
    name: &'static str,
    /// The main port first, then the others by name.
    ports: Vec<(&'static str, u16)>,
    process: Supervised,
    dir: PathBuf,
    graceful_stop: Option<Launch>,
    clean_up: Option<Launch>,
}

/// A fresh, empty folder for one peer's configuration, data and log.
pub(crate) fn temp_dir(peer: &'static str) -> Result<PathBuf, PeerError> {
    static COUNT: AtomicUsize = AtomicUsize::new(0);
    let n = COUNT.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("wsbench-{peer}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)
        .map_err(|source| io(peer, format!("creating {}", dir.display()), source))?;
    Ok(dir)
}

pub(crate) fn io(peer: &'static str, context: String, source: std::io::Error) -> PeerError {
    PeerError::Io { peer, context, error: source }
}

/// `N` distinct loopback ports nobody listens on at the moment of asking (all are held
/// open together while they are chosen, so no two are the same).
pub(crate) fn free_ports<const N: usize>(peer: &'static str) -> Result<[u16; N], PeerError> {
    let context = || "finding a free port".to_string();
    let mut listeners = Vec::with_capacity(N);
    let mut ports = [0u16; N];
    for port in &mut ports {
        let listener = TcpListener::bind("127.0.0.1:0").map_err(|source| io(peer, context(), source))?;
        *port = listener.local_addr().map_err(|source| io(peer, context(), source))?.port();
        listeners.push(listener);
    }
    Ok(ports)
}

/// Fails with `NotInstalled` unless `path` exists.
pub(crate) fn installed(peer: &'static str, path: &Path) -> Result<(), PeerError> {
    if path.exists() {
        Ok(())
    } else {
        Err(PeerError::NotInstalled { peer, missing: path.display().to_string() })
    }
}

impl Peer {
    /// Starts `launch` (in a process group of its own, dying with the test process) with
    /// stdout and stderr in `dir/NAME.log`.
    pub(crate) fn spawn(name: &'static str, mut launch: Launch, dir: PathBuf) -> Result<Peer, PeerError> {
        let log_path = dir.join(format!("{name}.log"));
        let log = File::create(&log_path).map_err(|source| io(name, "creating the log".into(), source))?;
        let log_err = log.try_clone().map_err(|source| io(name, "opening the log".into(), source))?;
        launch.command_mut().stdin(Stdio::null()).stdout(log).stderr(log_err);
        let process = launch
            .grace(Duration::from_secs(5))
            .start()
            .map_err(|error| PeerError::Start { peer: name, error })?;
        Ok(Peer { name, ports: Vec::new(), process, dir, graceful_stop: None, clean_up: None })
    }

    pub(crate) fn with_port(mut self, which: &'static str, port: u16) -> Self {
        self.ports.push((which, port));
        self
    }

    pub(crate) fn with_graceful_stop(mut self, launch: Launch) -> Self {
        self.graceful_stop = Some(launch);
        self
    }

    pub(crate) fn with_clean_up(mut self, launch: Launch) -> Self {
        self.clean_up = Some(launch);
        self
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The process id of the server (the leader of its process group).
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// The main port: the WebSocket port of a broker's first protocol.
    pub fn port(&self) -> u16 {
        self.ports.first().map_or(0, |(_, port)| *port)
    }

    /// Another port by name (e.g. RabbitMQ's `mqtt`), if this peer has it.
    pub fn port_of(&self, which: &str) -> Option<u16> {
        self.ports.iter().find(|(name, _)| *name == which).map(|(_, port)| *port)
    }

    /// `ws://127.0.0.1:PORT{path}` on the main port.
    pub fn url(&self, path: &str) -> String {
        format!("ws://127.0.0.1:{}{path}", self.port())
    }

    /// What the server has written to stdout and stderr so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join(format!("{}.log", self.name))).unwrap_or_default()
    }

    /// The server's folder (configuration, data, log).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn exited(&mut self) -> Option<String> {
        let status = self.process.exited()?;
        Some(format!("exited ({}); its log:\n{}", wsbench_supervisor::describe(status), self.log()))
    }

    /// Waits until `ready` finds what it wants in the log (e.g. the port a program
    /// printed), failing if the server exits or `timeout` passes.
    pub(crate) fn wait_for_log<T>(
        &mut self,
        timeout: Duration,
        ready: impl Fn(&str) -> Option<T>,
    ) -> Result<T, PeerError> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(found) = ready(&self.log()) {
                return Ok(found);
            }
            self.check_alive(deadline, "its ready line")?;
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until every port of this peer accepts TCP connections.
    pub(crate) fn wait_for_ports(&mut self, timeout: Duration) -> Result<(), PeerError> {
        let deadline = Instant::now() + timeout;
        for (_, port) in self.ports.clone() {
            while TcpStream::connect(("127.0.0.1", port)).is_err() {
                self.check_alive(deadline, "its ports")?;
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Ok(())
    }

    pub(crate) fn check_alive(&mut self, deadline: Instant, waiting_for: &str) -> Result<(), PeerError> {
        if let Some(reason) = self.exited() {
            return Err(PeerError::DidNotStart { peer: self.name, reason });
        }
        if Instant::now() > deadline {
            let reason = format!("no sign of {waiting_for} in time; its log:\n{}", self.log());
            return Err(PeerError::DidNotStart { peer: self.name, reason });
        }
        Ok(())
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        if let Some(stop) = self.graceful_stop.take() {
            let _ = quiet(stop).run_to_completion(COMMAND_TIMEOUT);
            self.process.exited_within(Duration::from_secs(20));
        }
        // SIGTERM to the group, SIGKILL after the grace period; what of the group outlived
        // the leader is killed too.
        self.process.stop();
        if let Some(clean_up) = self.clean_up.take() {
            let _ = quiet(clean_up).run_to_completion(COMMAND_TIMEOUT);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `launch` with its output discarded.
fn quiet(mut launch: Launch) -> Launch {
    launch.command_mut().stdout(Stdio::null()).stderr(Stdio::null());
    launch
}
