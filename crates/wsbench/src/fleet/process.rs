//! A fleet server as a running process: started from its manifest on a free port, pinned to
//! its CPUs, in a process group of its own (start commands may be scripts that spawn the
//! real server), ready once its port accepts connections, and stopped with SIGTERM to the
//! whole group (SIGKILL after a grace period). Its output goes to a log file whose last
//! lines explain a failed start. A server started for a transport over UDP (QUIC) is ready
//! once it holds the UDP port of its port's number too, as `/proc/net/udp` tells (binding
//! the port to find out could take it from a server binding at that moment).

use std::fs::File;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use wsbench_supervisor::{Launch, Supervised};

use super::Manifest;

const STOP_GRACE: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("could not be started: {0}")]
    Spawn(String),
    #[error("exited during start-up ({status}){log}")]
    Exited { status: String, log: String },
    #[error("did not open port {port} within {seconds} s{log}")]
    NotListening { port: u16, seconds: u64, log: String },
    #[error("did not open UDP port {port} within {seconds} s (it serves no QUIC there){log}")]
    NoUdpPort { port: u16, seconds: u64, log: String },
}

#[derive(Debug)]
pub struct FleetServer {
    pub name: String,
    pub port: u16,
    process: Supervised,
    pub log: PathBuf,
}

/// A free loopback port below the kernel's ephemeral range (`ip_local_port_range`), so that
/// no client connection takes it as its source port: while a restarted server is down, the
/// clients' many attempts could otherwise connect to themselves on it (a TCP self-connection)
/// and hold it, and the server could not listen there again. The port 0 gives when none is.
fn free_port() -> std::io::Result<u16> {
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").unwrap_or_default();
    let first_ephemeral =
        range.split_whitespace().next().and_then(|n| n.parse::<u16>().ok()).unwrap_or(32_768);
    if first_ephemeral > 2_048 {
        let span = u32::from(first_ephemeral - 1_024);
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        let seed = std::process::id() ^ now.map_or(0, |since| since.subsec_nanos());
        for step in 0..512u32 {
            let port = 1_024 + (seed.wrapping_add(step.wrapping_mul(7_919)) % span) as u16;
            if TcpListener::bind(("127.0.0.1", port)).is_ok() {
                return Ok(port);
            }
        }
    }
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Whether some socket of this machine is bound to UDP port `port` (any address).
fn udp_port_bound(port: u16) -> bool {
    ["/proc/net/udp", "/proc/net/udp6"]
        .iter()
        .any(|table| std::fs::read_to_string(table).is_ok_and(|text| udp_table_has_port(&text, port)))
}

/// Whether a `/proc/net/udp` table lists a socket whose local address has port `port`.
fn udp_table_has_port(table: &str, port: u16) -> bool {
    table.lines().skip(1).any(|line| {
        let local = line.split_whitespace().nth(1).unwrap_or_default();
        let local_port = local.rsplit_once(':').and_then(|(_, hex)| u16::from_str_radix(hex, 16).ok());
        local_port == Some(port)
    })
}

/// The last lines of a log, as ": …" for error messages.
fn log_tail(path: &PathBuf) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = lines[lines.len().saturating_sub(3)..].join(" | ");
    if tail.is_empty() { String::new() } else { format!(": {tail}") }
}

impl FleetServer {
    /// Starts the server and waits (up to `timeout`) until its port accepts.
    pub fn start(manifest: &Manifest, cpus: &[usize], timeout: Duration) -> Result<FleetServer, StartError> {
        let port = free_port().map_err(|e| StartError::Spawn(crate::causes::with_causes(&e)))?;
        FleetServer::start_on(manifest, cpus, port, timeout)
    }

    /// [`FleetServer::start`] on `port` (a restart: where it listened before).
    pub fn start_on(
        manifest: &Manifest,
        cpus: &[usize],
        port: u16,
        timeout: Duration,
    ) -> Result<FleetServer, StartError> {
        let log = std::env::temp_dir().join(format!(
            "wsbench-fleet-{}-{}-{port}.log",
            manifest.name,
            std::process::id()
        ));
        let output = File::create(&log).map_err(|e| StartError::Spawn(format!("{}: {e}", log.display())))?;
        let errors = output.try_clone().map_err(|e| StartError::Spawn(crate::causes::with_causes(&e)))?;
        let start = manifest.start.replace("{port}", &port.to_string());
        let mut launch = Launch::shell(format!("fleet server {}", manifest.name), &start).grace(STOP_GRACE);
        let command = launch.command_mut();
        command.current_dir(&manifest.dir).envs(&manifest.env);
        command.stdin(Stdio::null()).stdout(output).stderr(errors);
        crate::affinity::pin_command(command, cpus);
        let process = launch.start().map_err(|e| StartError::Spawn(crate::causes::with_causes(&e)))?;
        let mut server = FleetServer { name: manifest.name.clone(), port, process, log };
        let deadline = Instant::now() + timeout;
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        loop {
            if let Some(status) = server.exited() {
                return Err(StartError::Exited { status: status.to_string(), log: log_tail(&server.log) });
            }
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return Ok(server);
            }
            if Instant::now() >= deadline {
                let log = log_tail(&server.log);
                server.stop();
                return Err(StartError::NotListening { port, seconds: timeout.as_secs(), log });
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Its URL at `path` (`/` for a plain echo server).
    pub fn url(&self, path: &str) -> String {
        self.url_over(path, false)
    }

    /// Its URL at `path`, `wss://` when `tls`.
    pub fn url_over(&self, path: &str, tls: bool) -> String {
        format!("{}://127.0.0.1:{}{path}", if tls { "wss" } else { "ws" }, self.port)
    }

    /// Waits (up to `timeout`) until the server holds the UDP port of its port's number; if
    /// it does not, or exits first, it is stopped and the error says so.
    pub fn wait_for_udp(&mut self, timeout: Duration) -> Result<(), StartError> {
        let deadline = Instant::now() + timeout;
        loop {
            if udp_port_bound(self.port) {
                return Ok(());
            }
            if let Some(status) = self.exited() {
                self.stop();
                return Err(StartError::Exited { status: status.to_string(), log: log_tail(&self.log) });
            }
            if Instant::now() >= deadline {
                let log = log_tail(&self.log);
                self.stop();
                return Err(StartError::NoUdpPort { port: self.port, seconds: timeout.as_secs(), log });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The processes to measure: whatever listens on the port (the real server even when
    /// the start command is a script), else the started process.
    pub fn pids(&self) -> Vec<u32> {
        match crate::probe::pids_listening_on(std::net::SocketAddr::from(([127, 0, 0, 1], self.port))) {
            Ok(pids) if !pids.is_empty() => pids,
            _ => vec![self.process.pid()],
        }
    }

    /// The exit status, if the server has exited.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.process.exited()
    }

    /// The exit status, waiting up to `grace` for the server to exit.
    pub fn exited_within(&mut self, grace: Duration) -> Option<ExitStatus> {
        self.process.exited_within(grace)
    }

    /// SIGTERM to the process group, SIGKILL after the grace period.
    pub fn stop(&mut self) {
        self.process.stop();
    }

    /// SIGKILL to the process group (a crash).
    pub fn kill(&mut self) {
        self.process.kill();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bound_udp_port_is_found_in_the_kernel_table() {
        let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let port = socket.local_addr().unwrap().port();
        assert!(udp_port_bound(port));
        drop(socket);
        assert!(!udp_port_bound(port));
        let table = "  sl  local_address rem_address   st\n  12: 0100007F:1F90 00000000:0000 07\n";
        assert!(udp_table_has_port(table, 8080));
        assert!(!udp_table_has_port(table, 8081));
    }
}
