//! The head-of-line test's network: two namespaces joined by a veth pair (the server's at
//! [`SERVER_IP`], the client's at [`CLIENT_IP`]), `wsbench serve` started in the server's, a
//! client run on a thread that entered the client's, and the nftables table that drops a share
//! of the packets on the server's side, both ways. Everything is removed on drop, also on
//! failure; namespaces left by a killed run are removed by the next one.

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::clients::{Echo, Loss};
use crate::support::requirement_missing;

pub const SERVER_IP: &str = "10.254.0.1";
pub const CLIENT_IP: &str = "10.254.0.2";
/// Prefix of every namespace this test creates; the test's pid follows.
const PREFIX: &str = "wsbhol";
/// The nftables table of the loss.
const TABLE: &str = "wsbench_loss";

/// The two namespaces of one run; deleted on drop.
pub struct Pair {
    server: String,
    client: String,
    scratch: PathBuf,
}

impl Pair {
    /// The namespaces, or `None` after saying why they cannot be made here.
    pub fn create_or_skip() -> Option<Pair> {
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            requirement_missing("head of line: needs root to create network namespaces");
            return None;
        }
        remove_leftovers();
        let base = format!("{PREFIX}{}", std::process::id());
        let scratch = std::env::temp_dir().join(&base);
        let _ = std::fs::remove_dir_all(&scratch);
        std::fs::create_dir_all(&scratch).expect("create the scratch folder");
        let pair = Pair { server: format!("{base}-s"), client: format!("{base}-c"), scratch };
        if let Err(why) = pair.build() {
            requirement_missing(&format!("head of line: `ip netns` does not work here: {why}"));
            return None;
        }
        if let Err(why) = NftLoss::new(&pair, 0).apply() {
            requirement_missing(&format!("head of line: nftables does not work here: {why}"));
            return None;
        }
        let _ = run("ip", &["netns", "exec", &pair.server, "nft", "delete", "table", "inet", TABLE], None);
        Some(pair)
    }

    fn build(&self) -> Result<(), String> {
        let (server, client) = (self.server.as_str(), self.client.as_str());
        run("ip", &["netns", "add", server], None)?;
        run("ip", &["netns", "add", client], None)?;
        run(
            "ip",
            &["-n", server, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0", "netns", client],
            None,
        )?;
        for (netns, ip) in [(server, SERVER_IP), (client, CLIENT_IP)] {
            run("ip", &["-n", netns, "addr", "add", &format!("{ip}/24"), "dev", "eth0"], None)?;
            run("ip", &["-n", netns, "link", "set", "eth0", "up"], None)?;
            run("ip", &["-n", netns, "link", "set", "lo", "up"], None)?;
        }
        Ok(())
    }

    /// A folder of this run's files, removed with the pair.
    pub fn scratch(&self) -> PathBuf {
        self.scratch.clone()
    }

    /// `wsbench serve ARGS…` on a free port of [`SERVER_IP`] in the server's namespace.
    pub fn serve(&self, args: &[&str]) -> Serve {
        let mut command = Command::new("ip");
        command.args(["netns", "exec", &self.server, env!("CARGO_BIN_EXE_wsbench"), "serve"]);
        command.args(["--host", SERVER_IP, "--port", "0"]).args(args);
        // SAFETY: prctl is async-signal-safe; the server dies with the test's thread.
        unsafe {
            command.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let mut child = command.stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().expect("spawn serve");
        let stdout = child.stdout.take().unwrap();
        let mut serve = Serve { child, addr: SocketAddr::from(([0, 0, 0, 0], 0)) };
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let line =
            rx.recv_timeout(Duration::from_secs(20)).expect("wsbench serve printed no `listening on` line");
        let port = line
            .split_whitespace()
            .nth(2)
            .and_then(|url| url.rsplit(':').next())
            .and_then(|port| port.trim_end_matches('/').parse::<u16>().ok())
            .unwrap_or_else(|| panic!("unexpected first line of wsbench serve: {line:?}"));
        serve.addr = SocketAddr::new(SERVER_IP.parse().unwrap(), port);
        serve
    }

    /// Runs `client` on a thread inside the client's namespace with `loss` to start and stop;
    /// returns its echoes and the packets the loss dropped.
    pub fn client<F>(&self, mut loss: NftLoss, client: F) -> (Vec<Echo>, u64)
    where
        F: FnOnce(&mut dyn Loss) -> Result<Vec<Echo>, String> + Send + 'static,
    {
        let netns = format!("/run/netns/{}", self.client);
        let thread = std::thread::spawn(move || {
            let file = std::fs::File::open(&netns).unwrap_or_else(|e| panic!("open {netns}: {e}"));
            // SAFETY: setns on a namespace file this thread holds open; only this thread
            // moves, and every socket it makes is the client namespace's.
            let entered = unsafe { libc::setns(std::os::fd::AsRawFd::as_raw_fd(&file), libc::CLONE_NEWNET) };
            assert_eq!(entered, 0, "setns into {netns}: {}", std::io::Error::last_os_error());
            let echoes = client(&mut loss);
            (echoes, loss)
        });
        let (echoes, loss) = thread.join().expect("the client thread");
        (echoes.unwrap_or_else(|e| panic!("the client failed: {e}")), loss.dropped)
    }
}

impl Pair {
    /// TCP segments retransmitted in both namespaces so far (`RetransSegs` of
    /// `/proc/net/snmp`): a data segment was lost and sent again, not only an ACK.
    pub fn tcp_retransmitted(&self) -> u64 {
        [&self.server, &self.client]
            .iter()
            .map(|netns| {
                let snmp = run("ip", &["netns", "exec", netns, "cat", "/proc/net/snmp"], None)
                    .unwrap_or_else(|e| panic!("reading the TCP counters: {e}"));
                retransmitted_segments(&snmp)
            })
            .sum()
    }
}

/// `RetransSegs` from the two `Tcp:` lines of `/proc/net/snmp` (names, then values).
fn retransmitted_segments(snmp: &str) -> u64 {
    let mut tcp = snmp.lines().filter(|line| line.starts_with("Tcp:"));
    let (Some(names), Some(values)) = (tcp.next(), tcp.next()) else { return 0 };
    names
        .split_whitespace()
        .zip(values.split_whitespace())
        .find(|(name, _)| *name == "RetransSegs")
        .and_then(|(_, value)| value.parse().ok())
        .unwrap_or(0)
}

impl Drop for Pair {
    fn drop(&mut self) {
        for netns in [&self.server, &self.client] {
            let _ = run("ip", &["netns", "del", netns], None);
        }
        let _ = std::fs::remove_dir_all(&self.scratch);
    }
}

/// A `wsbench serve` in the server's namespace, killed on drop.
pub struct Serve {
    child: Child,
    pub addr: SocketAddr,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// nftables dropping `percent` % of the packets through the server's `eth0`, both ways.
pub struct NftLoss {
    netns: String,
    percent: u32,
    applied: bool,
    pub dropped: u64,
}

impl NftLoss {
    pub fn new(pair: &Pair, percent: u32) -> NftLoss {
        NftLoss { netns: pair.server.clone(), percent, applied: false, dropped: 0 }
    }

    fn nft(&self, args: &[&str], stdin: Option<&str>) -> Result<String, String> {
        let mut all = vec!["netns", "exec", &self.netns, "nft"];
        all.extend_from_slice(args);
        run("ip", &all, stdin)
    }

    fn apply(&mut self) -> Result<(), String> {
        let percent = self.percent;
        let rule = format!("numgen random mod 100 < {percent} counter drop");
        let table = format!(
            "table inet {TABLE} {{\n\
             chain output {{ type filter hook output priority 0; policy accept; oifname \"eth0\" {rule}; }}\n\
             chain input {{ type filter hook input priority 0; policy accept; iifname \"eth0\" {rule}; }}\n}}\n"
        );
        self.nft(&["-f", "-"], Some(&table))?;
        self.applied = true;
        Ok(())
    }

    /// The packets the table's counters dropped.
    fn counted(&self) -> Result<u64, String> {
        let listing = self.nft(&["list", "table", "inet", TABLE], None)?;
        Ok(listing
            .split("counter packets ")
            .skip(1)
            .filter_map(|rest| rest.split_whitespace().next()?.parse::<u64>().ok())
            .sum())
    }
}

impl Loss for NftLoss {
    fn start(&mut self) {
        self.apply().unwrap_or_else(|e| panic!("adding the loss: {e}"));
    }

    fn stop(&mut self) {
        self.dropped = self.counted().unwrap_or_else(|e| panic!("reading the loss's counters: {e}"));
        self.nft(&["delete", "table", "inet", TABLE], None)
            .unwrap_or_else(|e| panic!("removing the loss: {e}"));
        self.applied = false;
    }
}

impl Drop for NftLoss {
    fn drop(&mut self) {
        if self.applied {
            let _ = self.nft(&["delete", "table", "inet", TABLE], None);
        }
    }
}

/// Runs `program ARGS…` (feeding `stdin`); its stdout, or an error carrying its stderr.
fn run(program: &str, args: &[&str], stdin: Option<&str>) -> Result<String, String> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run `{program}`: {e}"))?;
    if let Some(text) = stdin {
        child.stdin.take().unwrap().write_all(text.as_bytes()).map_err(|e| e.to_string())?;
    }
    drop(child.stdin.take());
    let output = child.wait_with_output().map_err(|e| e.to_string())?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(format!("`{program} {}`: {}", args.join(" "), String::from_utf8_lossy(&output.stderr).trim()))
    }
}

/// Deletes the namespaces of earlier runs whose process is gone (killed before its guard ran).
fn remove_leftovers() {
    let Ok(entries) = std::fs::read_dir("/run/netns") else { return };
    for name in entries.filter_map(|e| e.ok()?.file_name().into_string().ok()) {
        let Some(rest) = name.strip_prefix(PREFIX) else { continue };
        let pid: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if !pid.is_empty() && !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = run("ip", &["netns", "del", &name], None);
        }
    }
}

#[test]
fn retransmitted_segments_are_read_from_the_tcp_lines() {
    let snmp = "Ip: Forwarding\nIp: 1\nTcp: RtoMin OutSegs RetransSegs InErrs\nTcp: 200 90 7 0\nUdp: InDatagrams\nUdp: 3\n";
    assert_eq!(retransmitted_segments(snmp), 7);
    assert_eq!(retransmitted_segments("Ip: 1\n"), 0);
}
