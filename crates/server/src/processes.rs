//! `wsbench serve --processes N`: the built-in server as N processes sharing one port.
//!
//! One process may open only so many files (20,000 on the project's machines, a hard limit),
//! so serving more connections takes several processes, each with its own limit. The
//! supervisor (the process the user started) reserves the port (bound with `SO_REUSEPORT`
//! but never listening, so `--port 0` works and the kernel never queues a connection on
//! it), starts N server processes that bind the same port with `SO_REUSEPORT` and listen,
//! releases its reservation once all of them listen, and prints one `listening on …` line.
//! The kernel spreads new connections over the N listeners. Only the N server processes
//! hold a listening socket, so a probe that finds the server by its port sees exactly them.
//!
//! SIGINT or SIGTERM is forwarded to every server process; the supervisor returns when all
//! have exited (killing any still running after [`STOP_TIMEOUT`]). A server process that
//! exits on its own is an error: the others are stopped and the supervisor fails, naming it.
//! The server processes are re-executions of the same program (the caller says how to start
//! one), which is simpler and safer than `fork` in a multi-threaded Rust program.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use crate::{ServeConfig, ServeError, listener};

/// How long a server process may take to print its `listening on` line.
pub const START_TIMEOUT: Duration = Duration::from_secs(15);
/// How long the server processes get to close their connections after the signal.
pub const STOP_TIMEOUT: Duration = Duration::from_millis(1500);
const POLL: Duration = Duration::from_millis(20);

/// Runs `processes` server processes on `config`'s port(s) until SIGINT or SIGTERM.
/// `command(port, tcp_port)` builds the command line of one server process that listens on
/// exactly those ports (with `SO_REUSEPORT`, as [`crate::start`] does) and prints its
/// `listening on` line first on stdout.
pub fn serve_processes(
    config: &ServeConfig,
    processes: usize,
    command: &dyn Fn(u16, Option<u16>) -> Command,
) -> Result<(), ServeError> {
    // Before anything starts: a starter may signal as soon as it reads the line.
    let mut signals = Signals::new([SIGINT, SIGTERM])?;
    let websocket = listener::reserve(config.host, config.port)?;
    let port = local_port(&websocket)?;
    let tcp = config.tcp_port.map(|p| listener::reserve(config.host, p)).transpose()?;
    let tcp_port = tcp.as_ref().map(local_port).transpose()?;

    let mut children: Vec<Child> = Vec::with_capacity(processes);
    let mut line = String::new();
    for index in 0..processes {
        match start_one(command(port, tcp_port), index, processes) {
            Ok((child, listening)) => {
                children.push(child);
                line = listening;
            }
            Err(e) => {
                stop_all(&mut children, SIGTERM);
                return Err(e);
            }
        }
    }
    // Every process listens: the reservation may go (it never received a connection).
    drop((websocket, tcp));
    let mut stdout = std::io::stdout().lock();
    // A closed stdout (the starter went away) must not stop the server.
    let _ = writeln!(stdout, "{line}");
    let _ = stdout.flush();
    drop(stdout);

    loop {
        if let Some(signal) = signals.pending().next() {
            stop_all(&mut children, signal);
            return Ok(());
        }
        for (index, child) in children.iter_mut().enumerate() {
            if let Ok(Some(status)) = child.try_wait() {
                let pid = child.id();
                stop_all(&mut children, SIGTERM);
                return Err(ServeError::Process(format!(
                    "server process {index}/{processes} (pid {pid}) exited: {}",
                    describe(status)
                )));
            }
        }
        std::thread::sleep(POLL);
    }
}

fn local_port(socket: &socket2::Socket) -> Result<u16, ServeError> {
    let addr = socket.local_addr()?;
    addr.as_socket().map(|a| a.port()).ok_or_else(|| ServeError::Process("reserved a non-IP socket".into()))
}

/// Starts one server process and waits for its `listening on` line.
fn start_one(mut command: Command, index: usize, processes: usize) -> Result<(Child, String), ServeError> {
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::inherit());
    // Signals come from the supervisor only (a terminal's Ctrl-C reaches it, it forwards).
    command.process_group(0);
    // SAFETY: prctl is async-signal-safe. A server process must not outlive its supervisor.
    unsafe {
        command.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
    let name = format!("server process {index}/{processes}");
    let mut child = command.spawn().map_err(|e| ServeError::Process(format!("cannot start {name}: {e}")))?;
    let stdout = child.stdout.take().expect("stdout is piped");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stdout).lines();
        let _ = tx.send(lines.next());
        for _ in lines {}
    });
    match rx.recv_timeout(START_TIMEOUT) {
        Ok(Some(Ok(line))) if line.starts_with("listening on ") => Ok((child, line)),
        other => {
            let _ = child.kill();
            let status = child.wait().map(describe).unwrap_or_default();
            let why = match other {
                Ok(Some(Ok(line))) => format!("printed {line:?} instead of `listening on …`"),
                _ => format!("printed no `listening on` line ({status})"),
            };
            Err(ServeError::Process(format!("{name} (pid {}) {why}", child.id())))
        }
    }
}

/// Sends `signal` to every child, waits for all of them up to [`STOP_TIMEOUT`], then kills
/// the rest.
fn stop_all(children: &mut [Child], signal: i32) {
    for child in children.iter_mut() {
        if let Ok(None) = child.try_wait() {
            // SAFETY: signalling our own child, not yet reaped.
            unsafe {
                libc::kill(child.id() as libc::pid_t, signal);
            }
        }
    }
    let deadline = Instant::now() + STOP_TIMEOUT;
    while Instant::now() < deadline && children.iter_mut().any(|c| matches!(c.try_wait(), Ok(None))) {
        std::thread::sleep(POLL);
    }
    for child in children.iter_mut() {
        if let Ok(None) = child.try_wait() {
            let _ = child.kill();
        }
        let _ = child.wait();
    }
}

fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(signal)) => format!("signal {signal}"),
        _ => status.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reserved_port_is_shared_but_never_accepts() {
        let host = std::net::IpAddr::from([127, 0, 0, 1]);
        let reservation = listener::reserve(host, 0).unwrap();
        let port = local_port(&reservation).unwrap();
        // Nobody listens yet: connecting is refused, the reservation queues nothing.
        assert!(std::net::TcpStream::connect((host, port)).is_err());
        // Server processes bind the same port and listen.
        let listeners = listener::bind_group(host, port, 2).unwrap();
        drop(reservation);
        for _ in 0..20 {
            std::net::TcpStream::connect((host, port)).unwrap();
        }
        let pending = listeners.iter().filter(|l| l.accept().is_ok()).count();
        assert!(pending >= 1);
    }
}
