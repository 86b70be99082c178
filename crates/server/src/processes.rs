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
//! The server processes are re-executions of the same program, each handed its
//! [`ServeConfig`] (these ports, one process) on its stdin, which is simpler and safer than
//! `fork` in a multi-threaded Rust program. Starting, signalling and reaping them is
//! `wsbench_supervisor`'s ([`Group`]).

use std::io::Write;
use std::process::Stdio;
use std::time::Duration;

use wsbench_supervisor::{Group, Launch, TermSignals};

use crate::{ServeConfig, ServeError, listener};

/// How long a server process may take to print its `listening on` line.
pub const START_TIMEOUT: Duration = Duration::from_secs(15);
/// How long the server processes get to close their connections after the signal.
pub const STOP_TIMEOUT: Duration = Duration::from_millis(1500);

/// Runs `config.processes` server processes on `config`'s port(s) until SIGINT or SIGTERM.
/// Each is this program re-executed as `SUBCOMMAND --settings-from-stdin`, which must read
/// its [`ServeConfig`] from stdin, serve it as [`crate::serve_until_signalled`] does (with
/// `SO_REUSEPORT`, printing its `listening on` line first on stdout).
pub fn serve_processes(config: &ServeConfig, subcommand: &str) -> Result<(), ServeError> {
    // Before anything starts: a starter may signal as soon as it reads the line.
    let mut signals = TermSignals::catch()?;
    let websocket = listener::reserve(config.host, config.port)?;
    let port = local_port(&websocket)?;
    let tcp = config.tcp_port.map(|p| listener::reserve(config.host, p)).transpose()?;
    let tcp_port = tcp.as_ref().map(local_port).transpose()?;
    let one = one_process(config, port, tcp_port);

    // On an error the processes started so far are stopped as the group drops.
    let mut group = Group::new();
    let mut line = String::new();
    for index in 0..config.processes {
        let name = format!("server process {index}/{}", config.processes);
        let mut launch = Launch::this_program(name, subcommand, &one)?.grace(STOP_TIMEOUT);
        launch.command_mut().stdout(Stdio::piped()).stderr(Stdio::inherit());
        let mut process = launch.start()?;
        line = process.wait_for_line("listening on ", START_TIMEOUT)?;
        group.push(process);
    }
    // Every process listens: the reservation may go (it never received a connection).
    drop((websocket, tcp));
    let mut stdout = std::io::stdout().lock();
    // A closed stdout (the starter went away) must not stop the server.
    let _ = writeln!(stdout, "{line}");
    let _ = stdout.flush();
    drop(stdout);
    Ok(group.supervise(&mut signals, STOP_TIMEOUT)?)
}

/// What one server process of `config` serves: everything, on the reserved ports, alone.
fn one_process(config: &ServeConfig, port: u16, tcp_port: Option<u16>) -> ServeConfig {
    ServeConfig { port, tcp_port, processes: 1, ..config.clone() }
}

fn local_port(socket: &socket2::Socket) -> Result<u16, ServeError> {
    let addr = socket.local_addr()?;
    addr.as_socket().map(|a| a.port()).ok_or(ServeError::NotIp)
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

    #[test]
    fn each_process_serves_every_setting_on_the_reserved_ports_alone() {
        let config = ServeConfig {
            threads: 3,
            processes: 4,
            tcp_port: Some(0),
            tls: Some(crate::TlsSource::SelfSigned),
            max_connections: 500,
            pubsub: true,
            ..ServeConfig::default()
        };
        let one = one_process(&config, 5000, Some(5001));
        assert_eq!((one.port, one.tcp_port, one.processes), (5000, Some(5001), 1));
        assert_eq!(ServeConfig { port: config.port, tcp_port: config.tcp_port, processes: 4, ..one }, config);
    }
}
