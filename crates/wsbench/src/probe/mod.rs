//! The server probe: what the server under test costs while wsbench loads it.
//!
//! The classic published benchmarks report "connections per MB" and "echoes per CPU second",
//! so the server's memory, CPU time, threads and open files have to be watched for the whole
//! run, starting before the first connection (the baseline). This module finds the server's
//! processes (by the port they listen on, when wsbench did not spawn them) and samples them
//! from `/proc` on a thread of its own. Linux only: everything is read from `/proc` directly.
//! A long run's samples are thinned to a fixed number ([`thinning`]), peaks kept. With each
//! sample goes the kernel's slab memory (`/proc/meminfo`), where the kernel keeps the sockets
//! of both ends; and the client's own memory is read here too: its resident set
//! ([`own_rss_bytes`]) and the bytes its allocator holds in use ([`own_heap_bytes`]). A
//! `wsbench serve` is also asked what it did itself ([`serve_counts`]: its TLS handshakes).

mod sampler;
mod serve_counts;
mod thinning;

use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::mpsc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::samples::{ServerReport, ServerSample};

/// How often [`ServerProbe`] samples in a real run.
pub const SAMPLE_INTERVAL: Duration = Duration::from_millis(250);

/// Name of the sampling thread (visible in `top -H` and `/proc/self/task/*/comm`).
pub const PROBE_THREAD_NAME: &str = "wsbench-probe";

#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// The process exited (or is a zombie waiting to be reaped).
    #[error("server process {0} has exited")]
    Gone(u32),
    #[error("cannot read {path}")]
    Read {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("unexpected contents in {path}: {detail}")]
    Parse { path: String, detail: String },
    #[error("no server process to sample")]
    NoPids,
}

impl ProbeError {
    fn read(path: &Path, source: io::Error) -> ProbeError {
        ProbeError::Read { path: path.display().to_string(), source }
    }

    fn parse(path: &Path, detail: impl Into<String>) -> ProbeError {
        ProbeError::Parse { path: path.display().to_string(), detail: detail.into() }
    }
}

// ---------------------------------------------------------------------------------------------
// Finding the server by its listening port
// ---------------------------------------------------------------------------------------------

/// TCP state `LISTEN` as `/proc/net/tcp` writes it.
const TCP_LISTEN: &str = "0A";

/// The pids of the processes holding a listening TCP socket that takes connections to `addr`
/// (its address, or the wildcard of its family; an IPv6 wildcard listener takes IPv4 too,
/// as dual-stack sockets do), sorted and deduplicated. Several pids are normal:
/// multi-process servers share the port with `SO_REUSEPORT` or inherit the listening socket
/// from a parent. A listener on the same port but another address (`127.0.0.1` when the
/// target is `[::1]`) is not the target's: wsbench does not reach it.
///
/// Only sockets of this network namespace are seen, and as a non-root user only processes
/// whose `/proc/PID/fd` may be read (the same user's); others are skipped, not errors. An
/// empty result means nobody visible listens there.
pub fn pids_listening_on(addr: SocketAddr) -> Result<Vec<u32>, ProbeError> {
    let mut inodes = BTreeSet::new();
    let mut read_any = false;
    let mut first_error = None;
    for (table, v6) in [("/proc/net/tcp", false), ("/proc/net/tcp6", true)] {
        let path = Path::new(table);
        match fs::read_to_string(path) {
            Ok(text) => {
                read_any = true;
                inodes.extend(parse_listen_inodes(&text, addr, v6));
            }
            // tcp6 is missing when IPv6 is disabled; only fail if neither table is readable.
            Err(e) => {
                first_error.get_or_insert(ProbeError::read(path, e));
            }
        }
    }
    if !read_any {
        return Err(first_error.unwrap_or(ProbeError::NoPids));
    }
    if inodes.is_empty() {
        return Ok(Vec::new());
    }
    let wanted: BTreeSet<String> = inodes.iter().map(|inode| format!("socket:[{inode}]")).collect();

    let proc_dir = Path::new("/proc");
    let entries = fs::read_dir(proc_dir).map_err(|e| ProbeError::read(proc_dir, e))?;
    let mut pids = BTreeSet::new();
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|name| name.parse::<u32>().ok()) else {
            continue;
        };
        // Processes of other users (EACCES) and ones that exit meanwhile (ENOENT) are skipped.
        let Ok(fds) = fs::read_dir(entry.path().join("fd")) else { continue };
        for fd in fds.flatten() {
            if let Ok(target) = fs::read_link(fd.path())
                && target.to_str().is_some_and(|t| wanted.contains(t))
            {
                pids.insert(pid);
                break;
            }
        }
    }
    Ok(pids.into_iter().collect())
}

/// Socket inodes of the `LISTEN` rows that take connections to `addr`, in the text of
/// `/proc/net/tcp` (`v6` false) or `/proc/net/tcp6` (same layout; only the address width
/// differs).
fn parse_listen_inodes(table: &str, addr: SocketAddr, v6: bool) -> Vec<u64> {
    let mut inodes = Vec::new();
    for line in table.lines().skip(1) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
        if fields.len() < 10 || fields[3] != TCP_LISTEN {
            continue;
        }
        let Some((ip_hex, port_hex)) = fields[1].rsplit_once(':') else { continue };
        if u16::from_str_radix(port_hex, 16).ok() != Some(addr.port()) {
            continue;
        }
        let Some(local) = parse_proc_ip(ip_hex, v6) else { continue };
        if !takes_connections_to(local, addr.ip()) {
            continue;
        }
        if let Ok(inode) = fields[9].parse::<u64>()
            && inode != 0
        {
            inodes.push(inode);
        }
    }
    inodes
}

/// An address as `/proc/net/tcp*` writes it: hex of each 32-bit word as the machine stores
/// it (8 digits for IPv4, 32 for IPv6).
fn parse_proc_ip(hex: &str, v6: bool) -> Option<IpAddr> {
    let words: Vec<u32> = (0..hex.len() / 8)
        .map(|i| u32::from_str_radix(hex.get(i * 8..i * 8 + 8)?, 16).ok())
        .collect::<Option<_>>()?;
    let bytes: Vec<u8> = words.iter().flat_map(|word| word.to_ne_bytes()).collect();
    match (v6, bytes.len()) {
        (false, 4) => Some(IpAddr::from(<[u8; 4]>::try_from(bytes).ok()?)),
        (true, 16) => Some(IpAddr::from(<[u8; 16]>::try_from(bytes).ok()?)),
        _ => None,
    }
}

/// Whether a socket listening on `local` accepts a connection to `target`.
fn takes_connections_to(local: IpAddr, target: IpAddr) -> bool {
    let target = match target {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(target, IpAddr::V4),
        v4 => v4,
    };
    match (local, target) {
        (IpAddr::V4(local), IpAddr::V4(target)) => local.is_unspecified() || local == target,
        (IpAddr::V6(local), IpAddr::V6(target)) => local.is_unspecified() || local == target,
        // A dual-stack IPv6 listener: the wildcard, or the IPv4 address mapped.
        (IpAddr::V6(local), IpAddr::V4(target)) => {
            local.is_unspecified() || local.to_ipv4_mapped() == Some(target)
        }
        (IpAddr::V4(_), IpAddr::V6(_)) => false,
    }
}

// ---------------------------------------------------------------------------------------------
// Sampling
// ---------------------------------------------------------------------------------------------

/// The fields wsbench uses from `/proc/PID/stat` or `/proc/PID/task/TID/stat`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ProcStat {
    /// Field 2 without its parentheses (the kernel truncates it to 15 bytes).
    pub comm: String,
    /// Field 3: `R`, `S`, `D`, `Z`, …
    pub state: char,
    /// Fields 14 + 15, in clock ticks.
    pub cpu_ticks: u64,
    /// Field 20.
    pub threads: u64,
}

/// Parses one `stat` line. The comm field may itself contain spaces and parentheses, so the
/// numeric fields are taken after the *last* `)`.
fn parse_stat(text: &str) -> Option<ProcStat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    if close < open {
        return None;
    }
    let comm = text[open + 1..close].to_owned();
    // Fields 3.. follow the comm; index 0 here is field 3.
    let rest: Vec<&str> = text[close + 1..].split_whitespace().collect();
    let field = |n: usize| rest.get(n - 3).copied();
    let state = field(3)?.chars().next()?;
    let utime: u64 = field(14)?.parse().ok()?;
    let stime: u64 = field(15)?.parse().ok()?;
    let threads: u64 = field(20)?.parse().ok()?;
    Some(ProcStat { comm, state, cpu_ticks: utime + stime, threads })
}

/// Clock ticks per second (`USER_HZ`), the unit of the CPU times in `stat`.
fn clock_ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 { ticks as f64 } else { 100.0 }
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 { size as u64 } else { 4096 }
}

/// Resident pages (second field) of `/proc/PID/statm`.
fn parse_statm_resident_pages(text: &str) -> Option<u64> {
    text.split_whitespace().nth(1)?.parse().ok()
}

/// The `field` line of `/proc/meminfo` text (`Slab:   123456 kB`), in bytes.
fn parse_meminfo_bytes(text: &str, field: &str) -> Option<u64> {
    let line = text.lines().find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))?;
    let mut words = line.split_whitespace();
    let value: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => Some(value * 1024),
        None => Some(value),
        Some(_) => None,
    }
}

/// The kernel's slab memory now (0 where `/proc/meminfo` cannot be read).
fn slab_bytes() -> u64 {
    fs::read_to_string("/proc/meminfo").ok().and_then(|text| parse_meminfo_bytes(&text, "Slab")).unwrap_or(0)
}

/// This process's resident memory now (`/proc/self/statm`); `None` where it cannot be read.
pub fn own_rss_bytes() -> Option<u64> {
    let text = fs::read_to_string("/proc/self/statm").ok()?;
    Some(parse_statm_resident_pages(&text)? * page_size())
}

/// The bytes this process's allocator holds in use now (glibc `mallinfo2`: every arena's
/// allocated chunks plus its mmapped ones); `None` with another C library. Unlike the RSS,
/// what earlier runs of the same process freed is not counted until it is in use again, so
/// the growth between two reads is what was allocated and kept in between.
#[cfg(target_env = "gnu")]
pub fn own_heap_bytes() -> Option<u64> {
    // SAFETY: mallinfo2 takes no arguments and only reads the allocator's statistics.
    let info = unsafe { libc::mallinfo2() };
    Some(info.uordblks as u64 + info.hblkhd as u64)
}

/// The bytes this process's allocator holds in use: known with glibc only.
#[cfg(not(target_env = "gnu"))]
pub fn own_heap_bytes() -> Option<u64> {
    None
}

/// Reads a file under `/proc/PID`, mapping "the process is gone" to [`ProbeError::Gone`].
fn read_proc(pid: u32, path: &Path) -> Result<String, ProbeError> {
    fs::read_to_string(path).map_err(|e| classify(pid, path, e))
}

fn classify(pid: u32, path: &Path, e: io::Error) -> ProbeError {
    if e.kind() == io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ESRCH) {
        ProbeError::Gone(pid)
    } else {
        ProbeError::read(path, e)
    }
}

/// How many files process `pid` has open. Linux 6.2 and later give the count as the size of
/// `/proc/PID/fd`: one `stat`, whatever the count. Listing the directory instead costs a
/// name per file: 60 server processes holding a million connections took a whole core at
/// four samples a second, and starved the run it measured. Older kernels say 0: then the
/// directory is listed.
fn open_files(pid: u32, fd_path: &Path) -> Result<u64, ProbeError> {
    let size = fs::metadata(fd_path).map_err(|e| classify(pid, fd_path, e))?.len();
    if size > 0 {
        return Ok(size);
    }
    Ok(fs::read_dir(fd_path).map_err(|e| classify(pid, fd_path, e))?.count() as u64)
}

fn sample_one(pid: u32, ticks_per_second: f64, page_size: u64) -> Result<ServerSample, ProbeError> {
    let base = Path::new("/proc").join(pid.to_string());

    let stat_path = base.join("stat");
    let stat_text = read_proc(pid, &stat_path)?;
    let stat = parse_stat(&stat_text).ok_or_else(|| ProbeError::parse(&stat_path, stat_text.trim()))?;
    // A zombie still has a /proc entry but no memory, fds or future: it has exited.
    if matches!(stat.state, 'Z' | 'X' | 'x') {
        return Err(ProbeError::Gone(pid));
    }

    let statm_path = base.join("statm");
    let statm_text = read_proc(pid, &statm_path)?;
    let pages = parse_statm_resident_pages(&statm_text)
        .ok_or_else(|| ProbeError::parse(&statm_path, statm_text.trim()))?;

    let fd_path = base.join("fd");
    let fds = open_files(pid, &fd_path)?;

    Ok(ServerSample {
        t_ms: 0,
        rss_bytes: pages * page_size,
        cpu_seconds: stat.cpu_ticks as f64 / ticks_per_second,
        threads: stat.threads,
        fds,
        slab_bytes: 0,
    })
}

/// One sample of `pids`, summed: resident memory (`statm` resident pages × page size), user +
/// system CPU time since each process started, threads and open file descriptors.
///
/// A pid that has exited (or is a zombie) gives [`ProbeError::Gone`]. Other users' processes
/// can be sampled only by root (their `fd` directory is unreadable otherwise).
pub fn sample(pids: &[u32], t_ms: u64) -> Result<ServerSample, ProbeError> {
    if pids.is_empty() {
        return Err(ProbeError::NoPids);
    }
    let ticks = clock_ticks_per_second();
    let page = page_size();
    let mut total =
        ServerSample { t_ms, rss_bytes: 0, cpu_seconds: 0.0, threads: 0, fds: 0, slab_bytes: slab_bytes() };
    for &pid in pids {
        let one = sample_one(pid, ticks, page)?;
        total.rss_bytes += one.rss_bytes;
        total.cpu_seconds += one.cpu_seconds;
        total.threads += one.threads;
        total.fds += one.fds;
    }
    Ok(total)
}

// ---------------------------------------------------------------------------------------------
// The sampling thread
// ---------------------------------------------------------------------------------------------

/// Samples the server on its own thread (`wsbench-probe`) for the length of a run.
///
/// [`ServerProbe::start`] takes the baseline sample at once, on the calling thread, so call it
/// before the first connection opens; it then samples every `interval` until
/// [`ServerProbe::stop`], which takes a final sample. If a server process exits mid-run,
/// sampling ends there and the samples taken so far are kept. Dropping the probe without
/// stopping it ends the thread too.
#[derive(Debug)]
pub struct ServerProbe {
    pids: Vec<u32>,
    found_by: String,
    run_start: Instant,
    /// Set when the baseline could not be taken; nothing is sampled then.
    unprobed_reason: Option<String>,
    baseline: Option<ServerSample>,
    /// The TLS handshakes a `wsbench serve` had done when the probe started.
    handshakes_before: Option<crate::metrics::TlsHandshakes>,
    stop_tx: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<sampler::Sampled>>,
    /// The server's address, when it is followed across restarts.
    follow: Option<SocketAddr>,
}

fn ms_since(run_start: Instant) -> u64 {
    Instant::now().saturating_duration_since(run_start).as_millis() as u64
}

impl ServerProbe {
    /// Takes the baseline sample of `pids` now and starts sampling every `interval`
    /// ([`SAMPLE_INTERVAL`] in real runs). `found_by` is recorded as is (`spawned`,
    /// `--server-pid`, `listening-port`); `run_start` is the instant sample times count from.
    ///
    /// Never fails: if the baseline cannot be taken (the process is gone, `/proc` is not
    /// readable), the report says why in `unprobed_reason` and holds no samples.
    pub fn start(pids: Vec<u32>, found_by: &str, interval: Duration, run_start: Instant) -> ServerProbe {
        ServerProbe::following(pids, found_by, interval, run_start, None)
    }

    /// As [`ServerProbe::start`]; with `follow`, a server that exits is sampled again once a
    /// process listens on that address (a run that restarts its server).
    pub fn following(
        pids: Vec<u32>,
        found_by: &str,
        interval: Duration,
        run_start: Instant,
        follow: Option<SocketAddr>,
    ) -> ServerProbe {
        let handshakes_before = serve_counts::tls_handshakes(&pids);
        let mut probe = ServerProbe {
            pids,
            handshakes_before,
            found_by: found_by.to_owned(),
            run_start,
            unprobed_reason: None,
            baseline: None,
            stop_tx: None,
            thread: None,
            follow,
        };
        let baseline = match sample(&probe.pids, ms_since(run_start)) {
            Ok(baseline) => baseline,
            Err(e) => {
                probe.unprobed_reason =
                    Some(format!("the baseline sample failed: {}", crate::causes::with_causes(&e)));
                return probe;
            }
        };
        probe.baseline = Some(baseline);

        let (stop_tx, stop_rx) = mpsc::channel::<()>();
        let pids = probe.pids.clone();
        let interval = interval.max(Duration::from_millis(1));
        let follow = probe.follow;
        // Allocated whole here, before the engine measures its own baseline.
        let samples = thinning::Thinned::new();
        let spawned = thread::Builder::new().name(PROBE_THREAD_NAME.to_owned()).spawn(move || {
            sampler::sample_until_stopped(samples, pids, &stop_rx, (interval, run_start), follow)
        });
        // Without a thread (out of threads?) the report still gets the baseline and final.
        if let Ok(handle) = spawned {
            probe.stop_tx = Some(stop_tx);
            probe.thread = Some(handle);
        }
        probe
    }

    /// A report for a server that cannot be probed (e.g. a remote target).
    pub fn unprobed(reason: &str) -> ServerReport {
        ServerReport {
            pids: Vec::new(),
            found_by: None,
            unprobed_reason: Some(reason.to_owned()),
            samples: Vec::new(),
            tls_handshakes: None,
        }
    }

    /// The pids being sampled.
    pub fn pids(&self) -> &[u32] {
        &self.pids
    }

    /// Stops sampling, takes a final sample (unless a process already exited) and returns all
    /// samples, the baseline first.
    pub fn stop(self) -> ServerReport {
        self.stop_with_reason().0
    }

    /// As [`ServerProbe::stop`], also returning the error that ended sampling early, if any
    /// (typically [`ProbeError::Gone`]: the server died during the run).
    pub fn stop_with_reason(mut self) -> (ServerReport, Option<ProbeError>) {
        let mut report = ServerReport {
            pids: self.pids.clone(),
            found_by: Some(self.found_by.clone()),
            unprobed_reason: self.unprobed_reason.take(),
            samples: Vec::new(),
            tls_handshakes: None,
        };
        let Some(baseline) = self.baseline else {
            return (report, None);
        };
        report.samples.push(baseline);
        drop(self.stop_tx.take());
        let mut ended_by = None;
        let sampled_by_thread = self.thread.is_some();
        if let Some(handle) = self.thread.take() {
            match handle.join() {
                Ok((samples, error, pids)) => {
                    report.samples.extend(samples);
                    ended_by = error;
                    self.pids = pids;
                }
                Err(_) => {
                    ended_by = Some(ProbeError::Parse {
                        path: "/proc".to_owned(),
                        detail: "the probe thread panicked".to_owned(),
                    })
                }
            }
        }
        // Without a sampling thread the final sample is taken here.
        if ended_by.is_none() && !sampled_by_thread {
            match sample(&self.pids, ms_since(self.run_start)) {
                Ok(last) => report.samples.push(last),
                Err(e) => ended_by = Some(e),
            }
        }
        report.tls_handshakes = serve_counts::during(self.handshakes_before, &self.pids).map(Box::new);
        (report, ended_by)
    }
}

// ---------------------------------------------------------------------------------------------
// Derived figures
// ---------------------------------------------------------------------------------------------

const MIB: f64 = 1024.0 * 1024.0;

impl ServerReport {
    /// Highest resident memory seen.
    pub fn rss_peak_bytes(&self) -> Option<u64> {
        self.samples.iter().map(|s| s.rss_bytes).max()
    }

    /// Resident memory before any load (the first sample).
    pub fn rss_baseline_bytes(&self) -> Option<u64> {
        self.samples.first().map(|s| s.rss_bytes)
    }

    /// CPU seconds the server used during the run: last sample minus the baseline. `None`
    /// with fewer than two samples.
    pub fn cpu_seconds(&self) -> Option<f64> {
        match self.samples.as_slice() {
            [first, .., last] => Some((last.cpu_seconds - first.cpu_seconds).max(0.0)),
            _ => None,
        }
    }

    pub fn threads_peak(&self) -> Option<u64> {
        self.samples.iter().map(|s| s.threads).max()
    }

    pub fn fds_peak(&self) -> Option<u64> {
        self.samples.iter().map(|s| s.fds).max()
    }

    /// `connections` / (peak RSS − baseline RSS, in MiB). `None` when memory did not grow.
    pub fn connections_per_mb(&self, connections: u64) -> Option<f64> {
        let growth = self.rss_peak_bytes()?.checked_sub(self.rss_baseline_bytes()?)?;
        if growth == 0 {
            return None;
        }
        Some(connections as f64 / (growth as f64 / MIB))
    }

    /// RSS growth (peak − baseline) per connection, in bytes. `None` with no connection or
    /// no samples.
    pub fn bytes_per_connection(&self, connections: u64) -> Option<f64> {
        let growth = self.rss_peak_bytes()?.saturating_sub(self.rss_baseline_bytes()?);
        per_connection(growth, connections)
    }

    /// Growth of the kernel's slab memory over the run: its highest sample minus the first
    /// (0 when it shrank). `None` without samples, or with a first sample that has none
    /// (older files). Machine-wide: whatever else the machine does moves it too.
    pub fn kernel_slab_delta_bytes(&self) -> Option<u64> {
        let first = self.samples.first().map(|s| s.slab_bytes).filter(|&slab| slab > 0)?;
        let peak = self.samples.iter().map(|s| s.slab_bytes).max()?;
        Some(peak.saturating_sub(first))
    }

    /// [`ServerReport::kernel_slab_delta_bytes`] per connection: with both ends on this
    /// machine, the kernel's share of a client socket and a server socket together.
    pub fn kernel_bytes_per_connection(&self, connections: u64) -> Option<f64> {
        per_connection(self.kernel_slab_delta_bytes()?, connections)
    }

    /// `echoes` / server CPU seconds. `None` when no CPU time was measured.
    pub fn exchanges_per_cpu_second(&self, echoes: u64) -> Option<f64> {
        let cpu = self.cpu_seconds()?;
        if cpu <= 0.0 {
            return None;
        }
        Some(echoes as f64 / cpu)
    }
}

/// `bytes` ÷ `connections`; `None` with no connection.
pub fn per_connection(bytes: u64, connections: u64) -> Option<f64> {
    (connections > 0).then(|| bytes as f64 / connections as f64)
}

#[cfg(test)]
mod tests;
