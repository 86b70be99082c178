//! The multi-host run on one machine: what the Kubernetes Indexed Job (`deploy/k8s/`) does
//! across nodes, done here across Linux network namespaces. One server host and three
//! client hosts, each its own network namespace with its own address, hang off a bridge in
//! a fifth "switch" namespace:
//!
//! ```text
//!   srv 10.253.0.1    c0 10.253.0.10   c1 10.253.0.11   c2 10.253.0.12
//!        eth0             eth0             eth0             eth0
//!         |                |                |                |     (veth pairs)
//!   [ p-srv ------------ p-c0 ---------- p-c1 ---------- p-c2 ]  br0 in "sw"
//! ```
//!
//! `wsbench serve` runs in `srv`; shard `i/3` of one 300-connection echo run runs in `ci`,
//! all three starting at the same `--start-at` instant; `wsbench merge` then joins their
//! result files. The test checks the merge (300 attempted and established, messages the sum
//! of the shards'), each shard's share (100), that the shards began together, and, on the
//! server's side, that each client host held its 100 connections from its own address.
//!
//! The 10.253.0.0/24 addresses exist only inside these namespaces, which the test creates
//! and always deletes (a drop guard, also on failure; namespaces left by a killed run are
//! removed by the next one). Traffic never leaves them. Needs root and a working
//! `ip netns`; otherwise it says why and skips, unless `WSBENCH_REQUIRE_PEERS=1` (as
//! `scripts/test.sh` sets it), where it fails instead.

mod support;

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader};
use std::net::Ipv4Addr;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;

const SUBNET_PREFIX: &str = "10.253.0";
const SERVER_HOST: u8 = 1;
const CLIENT_HOSTS: [u8; 3] = [10, 11, 12];
const CONNECTIONS: u64 = 300;
/// Time given to the three shard processes to start before the common start instant.
const START_DELAY: Duration = Duration::from_millis(1500);
/// Upper bound for any one child process; it is killed past it and the test fails.
const CHILD_TIMEOUT: Duration = Duration::from_secs(30);
/// Prefix of every namespace this test creates; the pid follows, so parallel runs never
/// share a namespace and leftovers of dead runs can be recognised.
const NAME_PREFIX: &str = "wsbnt";

fn wsbench() -> &'static str {
    env!("CARGO_BIN_EXE_wsbench")
}

#[test]
fn three_client_hosts_run_shards_that_merge_into_one_run() {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        support::requirement_missing("netns: needs root to create network namespaces");
        return;
    }
    remove_leftovers();
    let hosts = match Hosts::create() {
        Ok(hosts) => hosts,
        Err(why) => {
            support::requirement_missing(&format!("netns: `ip netns` does not work here: {why}"));
            return;
        }
    };
    let work = WorkDir::create();
    let server_ip = hosts.ip(SERVER_HOST);

    let server = spawn_server(&hosts.server, server_ip);
    let url = format!("ws://{server_ip}:{}", server.port);

    let start_at = unix_ms(SystemTime::now() + START_DELAY);
    let shards: Vec<Shard> = hosts
        .clients
        .iter()
        .enumerate()
        .map(|(index, netns)| Shard::spawn(netns, index, &url, start_at, &work.path))
        .collect();

    // While the shards hold their connections, count them on the server by peer address.
    let peers = established_peers_by_address(server.pid(), server.port, CONNECTIONS as usize, &shards);

    let results: Vec<Value> = shards.into_iter().map(|shard| shard.finish()).collect();
    let merged_path = work.path.join("merged.json");
    let merge = output_of(
        Command::new(wsbench())
            .arg("merge")
            .args((0..results.len()).map(|i| work.path.join(format!("shard-{i}.json"))))
            .arg("-o")
            .arg(&merged_path),
        &work.path.join("merge.log"),
    );
    assert!(merge.0.success(), "wsbench merge failed:\n{}", merge.1);
    let merged = read_json(&merged_path);

    for (index, result) in results.iter().enumerate() {
        let counters = &result["counters"];
        assert_eq!(result["config"]["shard"]["index"], index as u64, "shard-{index}.json");
        assert_eq!(result["config"]["shard"]["count"], 3, "shard-{index}.json");
        assert_eq!(counters["connections_attempted"], CONNECTIONS / 3, "shard {index} attempted");
        assert_eq!(counters["connections_established"], CONNECTIONS / 3, "shard {index} established");
        assert!(count(counters, "messages_received") > 0, "shard {index} received no echo");
        let started = count(result, "started_at_unix_ms");
        assert!(
            (start_at..start_at + 1000).contains(&started),
            "shard {index} started at {started}, not within 1 s after --start-at {start_at}"
        );
    }
    let counters = &merged["counters"];
    assert_eq!(counters["connections_attempted"], CONNECTIONS, "merged attempted");
    assert_eq!(counters["connections_established"], CONNECTIONS, "merged established");
    for key in ["messages_sent", "messages_received", "bytes_sent", "bytes_received"] {
        let sum: u64 = results.iter().map(|r| count(&r["counters"], key)).sum();
        assert_eq!(count(counters, key), sum, "merged {key} is not the sum of the shards'");
    }
    let latency_count: u64 = results.iter().map(|r| count(&r["summary"]["latency_us"], "count")).sum();
    assert_eq!(count(&merged["summary"]["latency_us"], "count"), latency_count, "merged latency samples");

    let expected: BTreeMap<Ipv4Addr, usize> =
        CLIENT_HOSTS.iter().map(|&host| (hosts.ip(host), CONNECTIONS as usize / 3)).collect();
    assert_eq!(peers, expected, "connections the server held, by client address");
}

// ---------------------------------------------------------------------------------------------
// The hosts: network namespaces joined by a bridge.

/// The namespaces of one test run; deleted on drop, whatever happened.
struct Hosts {
    base: String,
    switch: String,
    server: String,
    clients: Vec<String>,
}

impl Hosts {
    fn create() -> Result<Hosts, String> {
        let base = format!("{NAME_PREFIX}{}", std::process::id());
        let mut hosts = Hosts {
            base: base.clone(),
            switch: format!("{base}-sw"),
            server: format!("{base}-srv"),
            clients: Vec::new(),
        };
        // Each namespace joins `hosts` as soon as it exists, so the guard deletes it.
        ip(&["netns", "add", &hosts.switch])?;
        ip(&["-n", &hosts.switch, "link", "add", "br0", "type", "bridge"])?;
        ip(&["-n", &hosts.switch, "link", "set", "br0", "up"])?;
        let server = hosts.server.clone();
        hosts.attach(&server, "p-srv", SERVER_HOST)?;
        for (i, &host) in CLIENT_HOSTS.iter().enumerate() {
            let name = format!("{base}-c{i}");
            hosts.clients.push(name.clone());
            hosts.attach(&name, &format!("p-c{i}"), host)?;
        }
        Ok(hosts)
    }

    /// Creates namespace `netns` with `eth0` at `SUBNET_PREFIX.host/24`, its veth peer
    /// `port` on the switch's bridge.
    fn attach(&self, netns: &str, port: &str, host: u8) -> Result<(), String> {
        ip(&["netns", "add", netns])?;
        let address = format!("{}/24", self.ip(host));
        ip(&[
            "-n",
            &self.switch,
            "link",
            "add",
            port,
            "type",
            "veth",
            "peer",
            "name",
            "eth0",
            "netns",
            netns,
        ])?;
        ip(&["-n", &self.switch, "link", "set", port, "master", "br0", "up"])?;
        ip(&["-n", netns, "addr", "add", &address, "dev", "eth0"])?;
        ip(&["-n", netns, "link", "set", "eth0", "up"])?;
        ip(&["-n", netns, "link", "set", "lo", "up"])?;
        Ok(())
    }

    fn ip(&self, host: u8) -> Ipv4Addr {
        format!("{SUBNET_PREFIX}.{host}").parse().unwrap()
    }

    fn all(&self) -> Vec<&str> {
        let mut all = vec![self.switch.as_str(), self.server.as_str()];
        all.extend(self.clients.iter().map(String::as_str));
        all
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for netns in self.all() {
            // Deleting a namespace that was never created fails harmlessly.
            let _ = Command::new("ip").args(["netns", "del", netns]).stderr(Stdio::null()).status();
        }
        let left: Vec<String> = list_netns().into_iter().filter(|n| n.starts_with(&self.base)).collect();
        if !left.is_empty() {
            eprintln!("netns: could not delete {left:?}");
        }
    }
}

/// Runs `ip ARGS…`; the error carries its stderr.
fn ip(args: &[&str]) -> Result<(), String> {
    let output = Command::new("ip").args(args).output().map_err(|e| format!("cannot run `ip`: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!("`ip {}`: {}", args.join(" "), String::from_utf8_lossy(&output.stderr).trim()))
    }
}

fn list_netns() -> Vec<String> {
    let Ok(entries) = fs::read_dir("/run/netns") else { return Vec::new() };
    entries.filter_map(|e| e.ok()?.file_name().into_string().ok()).collect()
}

/// Deletes the namespaces of earlier runs of this test whose process is gone (killed
/// before its guard ran).
fn remove_leftovers() {
    for name in list_netns() {
        let Some(rest) = name.strip_prefix(NAME_PREFIX) else { continue };
        let pid: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if !pid.is_empty() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = Command::new("ip").args(["netns", "del", &name]).status();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The processes.

/// `cmd` run inside network namespace `netns`, killed if the test process dies.
fn in_netns(netns: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", netns, wsbench()]).args(args);
    // SAFETY: prctl is async-signal-safe; it asks the kernel to kill the child when the
    // thread that forked it exits (`ip netns exec` execs wsbench in the same process).
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    cmd
}

/// A child process killed on drop.
struct Guarded(Child);

impl Drop for Guarded {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

struct Server {
    child: Guarded,
    port: u16,
}

impl Server {
    fn pid(&self) -> u32 {
        self.child.0.id()
    }
}

fn spawn_server(netns: &str, ip: Ipv4Addr) -> Server {
    let host = ip.to_string();
    let mut child = in_netns(netns, &["serve", "--host", &host, "--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn wsbench serve in the server namespace");
    let stdout = child.stdout.take().unwrap();
    let child = Guarded(child);
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut lines = BufReader::new(stdout).lines();
        if let Some(Ok(first)) = lines.next() {
            let _ = tx.send(first);
        }
        for _ in lines {}
    });
    let line =
        rx.recv_timeout(Duration::from_secs(20)).expect("wsbench serve printed no `listening on` line");
    let prefix = format!("listening on ws://{host}:");
    let port = line
        .strip_prefix(&prefix)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|port| port.parse().ok())
        .unwrap_or_else(|| panic!("unexpected first line of wsbench serve: {line:?}"));
    Server { child, port }
}

/// One `wsbench run --shard I/3` in a client namespace; its output goes to files.
struct Shard {
    index: usize,
    child: Guarded,
    started: Instant,
    result: PathBuf,
    log: PathBuf,
}

impl Shard {
    fn spawn(netns: &str, index: usize, url: &str, start_at: u64, dir: &Path) -> Shard {
        let result = dir.join(format!("shard-{index}.json"));
        let log = dir.join(format!("shard-{index}.log"));
        let args = [
            "run",
            "echo",
            url,
            "--connections",
            &CONNECTIONS.to_string(),
            "--shard",
            &format!("{index}/3"),
            "--start-at",
            &start_at.to_string(),
            "--duration",
            "2s",
            "--json",
            result.to_str().unwrap(),
        ]
        .map(str::to_owned);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = fs::File::create(&log).unwrap();
        let child = in_netns(netns, &args)
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap_or_else(|e| panic!("spawn shard {index}: {e}"));
        Shard { index, child: Guarded(child), started: Instant::now(), result, log }
    }

    /// Waits for the shard and returns its result file.
    fn finish(mut self) -> Value {
        let status = loop {
            if let Some(status) = self.child.0.try_wait().expect("wait for a shard") {
                break status;
            }
            assert!(
                self.started.elapsed() < CHILD_TIMEOUT,
                "shard {} still running after {CHILD_TIMEOUT:?}:\n{}",
                self.index,
                fs::read_to_string(&self.log).unwrap_or_default()
            );
            thread::sleep(Duration::from_millis(50));
        };
        let log = fs::read_to_string(&self.log).unwrap_or_default();
        assert!(status.success(), "shard {} failed ({status}):\n{log}", self.index);
        read_json(&self.result)
    }
}

/// Counts the server's established connections on `port` by peer address, as the server's
/// own namespace sees them (`/proc/PID/net/tcp` is the table of PID's namespace). Polls
/// until `wanted` connections are up in two reads in a row that agree (one read of the
/// table is not atomic: while connections come and go, it can see one twice and miss
/// another), or until the shards are done; then returns the fullest agreeing read.
fn established_peers_by_address(
    server_pid: u32,
    port: u16,
    wanted: usize,
    shards: &[Shard],
) -> BTreeMap<Ipv4Addr, usize> {
    // The shards are only borrowed; their liveness is read through /proc instead.
    let shard_pids: Vec<u32> = shards.iter().map(|s| s.child.0.id()).collect();
    let deadline = Instant::now() + CHILD_TIMEOUT;
    let mut previous = BTreeMap::new();
    let mut best = BTreeMap::new();
    loop {
        let table =
            fs::read_to_string(format!("/proc/{server_pid}/net/tcp")).expect("read the server's TCP table");
        let peers = established_by_peer(&table, port);
        let total = peers.values().sum::<usize>();
        if peers == previous && total > best.values().sum::<usize>() {
            best = peers.clone();
        }
        previous = peers;
        let shards_alive = shard_pids.iter().any(|pid| is_running(*pid));
        if best.values().sum::<usize>() >= wanted || !shards_alive || Instant::now() > deadline {
            return best;
        }
        thread::sleep(Duration::from_millis(20));
    }
}

/// Whether `pid` is alive and not yet a zombie.
fn is_running(pid: u32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| stat.rsplit_once(") ").map(|(_, rest)| !rest.starts_with('Z')))
        .unwrap_or(false)
}

/// Parses `/proc/net/tcp`: ESTABLISHED (state 01) sockets whose local port is `port`, by
/// remote IPv4 address.
fn established_by_peer(table: &str, port: u16) -> BTreeMap<Ipv4Addr, usize> {
    let mut peers = BTreeMap::new();
    for line in table.lines().skip(1) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 4 || fields[3] != "01" {
            continue;
        }
        let (Some(local), Some(remote)) = (parse_hex_addr(fields[1]), parse_hex_addr(fields[2])) else {
            continue;
        };
        if local.1 == port {
            *peers.entry(remote.0).or_insert(0) += 1;
        }
    }
    peers
}

/// `0100FD0A:1F90` → (10.253.0.1, 8080) on a little-endian machine.
fn parse_hex_addr(text: &str) -> Option<(Ipv4Addr, u16)> {
    let (addr, port) = text.split_once(':')?;
    let addr = u32::from_str_radix(addr, 16).ok()?;
    let port = u16::from_str_radix(port, 16).ok()?;
    // The kernel prints the network-order address as a native u32.
    Some((Ipv4Addr::from(addr.to_ne_bytes()), port))
}

#[test]
fn proc_net_tcp_addresses_parse() {
    assert_eq!(parse_hex_addr("0100FD0A:1F90"), Some(("10.253.0.1".parse().unwrap(), 8080)));
    let table = "  sl  local_address rem_address   st\n\
                 0: 0100FD0A:1F90 0A00FD0A:9C40 01 0\n\
                 1: 0100FD0A:1F90 0B00FD0A:9C41 01 0\n\
                 2: 0100FD0A:1F90 0B00FD0A:9C42 06 0\n\
                 3: 0100FD0A:0016 0B00FD0A:9C43 01 0\n";
    let peers = established_by_peer(table, 8080);
    assert_eq!(peers.len(), 2);
    assert_eq!(peers[&"10.253.0.10".parse::<Ipv4Addr>().unwrap()], 1);
    assert_eq!(peers[&"10.253.0.11".parse::<Ipv4Addr>().unwrap()], 1);
}

// ---------------------------------------------------------------------------------------------
// Small helpers.

/// A scratch folder for the result files; removed on drop.
struct WorkDir {
    path: PathBuf,
}

impl WorkDir {
    fn create() -> WorkDir {
        let path = std::env::temp_dir().join(format!("wsbench-netns-{}", std::process::id()));
        let _ = fs::remove_dir_all(&path);
        fs::create_dir_all(&path).expect("create the scratch folder");
        WorkDir { path }
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}

fn unix_ms(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).unwrap().as_millis() as u64
}

fn read_json(path: &Path) -> Value {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

fn count(value: &Value, key: &str) -> u64 {
    value[key].as_u64().unwrap_or_else(|| panic!("`{key}` is not a count in {value}"))
}

/// Runs a command to its end (bounded by [`CHILD_TIMEOUT`]) with its output going to
/// `log` (a file never fills up and blocks the child as a pipe can); returns its status and
/// that output.
fn output_of(cmd: &mut Command, log: &Path) -> (ExitStatus, String) {
    let out = fs::File::create(log).expect("create a log file");
    let mut child = Guarded(cmd.stdout(out.try_clone().unwrap()).stderr(out).spawn().expect("spawn"));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.0.try_wait().expect("wait") {
            break status;
        }
        assert!(started.elapsed() < CHILD_TIMEOUT, "{cmd:?} still running after {CHILD_TIMEOUT:?}");
        thread::sleep(Duration::from_millis(20));
    };
    (status, fs::read_to_string(log).unwrap_or_default())
}
