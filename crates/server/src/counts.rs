//! What a running `wsbench serve` says it has done, for a benchmark to set beside what its
//! client saw: messages echoed, connections open and, when it serves TLS, the handshakes
//! it completed, full and resumed, with the CPU its event loops spent on each kind. One
//! line of text, written and read here only: printed on SIGUSR1 and when the server stops,
//! and answered to anyone on this machine who connects to the server's abstract Unix
//! socket `wsbench-serve-PID` (so a client that found the server's process by its port,
//! as wsbench's probe does, reads the counts without a signal and without a request that
//! would itself count as a handshake).

use std::io::{self, Write};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::time::Duration;

use wsbench_transport::HandshakeTally;

/// What a running server has done so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerCounts {
    /// Text and binary messages echoed (pongs, closes and pub/sub deliveries are not
    /// counted), each counted before its echo is written.
    pub echoed: u64,
    /// Connections open now.
    pub connections: usize,
    /// TLS handshakes completed, by kind as the server did them, with their CPU (served
    /// over TLS only).
    pub tls: Option<HandshakeTally>,
}

impl ServerCounts {
    /// The line `wsbench serve` prints on SIGUSR1 and when it stops, e.g. `echoed 6
    /// messages, 2 connections open` and, over TLS, `, TLS handshakes 3 full 9 resumed, CPU
    /// ns 2400000 full 3100000 resumed`.
    pub fn line(&self) -> String {
        let mut line = format!("echoed {} messages, {} connections open", self.echoed, self.connections);
        if let Some(tls) = &self.tls {
            line.push_str(&format!(
                ", TLS handshakes {} full {} resumed, CPU ns {} full {} resumed",
                tls.full, tls.resumed, tls.full_cpu_ns, tls.resumed_cpu_ns
            ));
        }
        line
    }

    /// Reads a [`ServerCounts::line`] back; `None` if it is not one.
    pub fn parse(line: &str) -> Option<ServerCounts> {
        let mut parts = line.trim_end().split(", ");
        let echoed = parts.next()?.strip_prefix("echoed ")?.strip_suffix(" messages")?.parse().ok()?;
        let connections = parts.next()?.strip_suffix(" connections open")?.parse().ok()?;
        let tls = match (parts.next(), parts.next()) {
            (None, _) => None,
            (Some(kinds), Some(cpu)) => {
                let [full, resumed] = two_numbers(kinds.strip_prefix("TLS handshakes ")?)?;
                let [full_cpu_ns, resumed_cpu_ns] = two_numbers(cpu.strip_prefix("CPU ns ")?)?;
                Some(HandshakeTally { full, resumed, tried: 0, full_cpu_ns, resumed_cpu_ns })
            }
            (Some(_), None) => return None,
        };
        parts.next().is_none().then_some(ServerCounts { echoed, connections, tls })
    }
}

/// `A full B resumed` → `[A, B]`.
fn two_numbers(text: &str) -> Option<[u64; 2]> {
    let (full, resumed) = text.strip_suffix(" resumed")?.split_once(" full ")?;
    Some([full.parse().ok()?, resumed.parse().ok()?])
}

/// The abstract socket name of the server process `pid`.
fn socket_name(pid: u32) -> String {
    format!("wsbench-serve-{pid}")
}

/// Answers every connection to this process's abstract socket with `counts()`'s line, on
/// a thread of its own, for as long as the process runs.
pub fn answer_on_socket(counts: impl Fn() -> ServerCounts + Send + 'static) -> io::Result<()> {
    let address = SocketAddr::from_abstract_name(socket_name(std::process::id()))?;
    let listener = UnixListener::bind_addr(&address)?;
    std::thread::Builder::new().name("serve-counts".into()).spawn(move || {
        for mut asker in listener.incoming().flatten() {
            let _ = asker.set_write_timeout(Some(Duration::from_secs(1)));
            let _ = writeln!(asker, "{}", counts().line());
        }
    })?;
    Ok(())
}

/// The counts of the `wsbench serve` process `pid` on this machine, from its socket;
/// `None` when no such server answers (another program, a remote one, an older version).
pub fn ask(pid: u32) -> Option<ServerCounts> {
    use std::io::Read;
    let address = SocketAddr::from_abstract_name(socket_name(pid)).ok()?;
    let stream = UnixStream::connect_addr(&address).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    let mut line = String::new();
    stream.take(4096).read_to_string(&mut line).ok()?;
    ServerCounts::parse(&line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_reads_back_with_and_without_tls() {
        let plain = ServerCounts { echoed: 6, connections: 2, tls: None };
        assert_eq!(plain.line(), "echoed 6 messages, 2 connections open");
        assert_eq!(ServerCounts::parse(&plain.line()), Some(plain));
        let tls = HandshakeTally { full: 3, resumed: 9, tried: 0, full_cpu_ns: 2_400, resumed_cpu_ns: 3_100 };
        let with_tls = ServerCounts { tls: Some(tls), ..plain };
        assert_eq!(
            with_tls.line(),
            "echoed 6 messages, 2 connections open, TLS handshakes 3 full 9 resumed, CPU ns 2400 full 3100 resumed"
        );
        assert_eq!(ServerCounts::parse(&format!("{}\n", with_tls.line())), Some(with_tls));
        for bad in ["", "echoed x messages, 1 connections open", "echoed 1 messages, 1 connections open, TLS"]
        {
            assert_eq!(ServerCounts::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_process_answers_its_counts_on_its_socket() {
        assert_eq!(ask(std::process::id()), None, "nothing answers before it is set up");
        answer_on_socket(|| ServerCounts { echoed: 4, connections: 1, tls: None }).unwrap();
        assert_eq!(ask(std::process::id()), Some(ServerCounts { echoed: 4, connections: 1, tls: None }));
    }
}
