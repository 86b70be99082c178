//! Was the machine quiet while the run ran? A benchmark on a machine that something else
//! keeps busy measures the contention as much as the server, and a local server sharing a
//! CPU with the client takes time from it. So each run reads the kernel's CPU clock
//! (`/proc/stat`: every CPU's busy and stolen time) before and after its load, subtracts what
//! this process and the server it probed used, and records what is left: the CPU other
//! processes used, and the hypervisor's steal. The report warns past [`BUSY_CORES`] or
//! [`BUSY_STEAL`], and when the server and the client were allowed onto the same CPU.
//! Reading never fails a run: an unreadable clock records nothing.

use std::time::Instant;

use serde::{Deserialize, Serialize};

/// Other processes using more than this many cores on average over the run make it busy:
/// a quarter of a core is more than a quiet machine's daemons use, and enough to move a
/// closed loop's latency.
pub const BUSY_CORES: f64 = 0.25;
/// The hypervisor stealing more than this share of the CPU time makes the run busy.
pub const BUSY_STEAL: f64 = 0.05;

/// What the machine did besides the run, over the run's load (from its first connection
/// to its end).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineLoad {
    /// The wall time the figures cover, s.
    pub window_s: f64,
    /// CPUs the kernel accounted for.
    pub cpus: u64,
    /// CPU seconds stolen by the hypervisor over every CPU, as a share of the CPU time.
    pub steal_share: f64,
    /// CPU seconds every CPU was busy, less this process's and the probed server's.
    pub others_cpu_seconds: f64,
    /// `others_cpu_seconds` / `window_s`: the cores other processes kept busy on average.
    pub others_cores: f64,
    /// A sentence when the machine was busier than [`BUSY_CORES`] or [`BUSY_STEAL`].
    pub busy: Option<String>,
    /// A sentence when the server and the client were allowed onto the same CPU.
    pub shared_cpus: Option<String>,
}

/// The CPU clock at one instant: the whole machine's, and this process's own.
#[derive(Debug, Clone, Copy)]
pub struct CpuClock {
    at: Instant,
    busy_ticks: u64,
    steal_ticks: u64,
    total_ticks: u64,
    cpus: u64,
    own_seconds: f64,
}

impl CpuClock {
    /// Reads `/proc/stat` and this process's CPU time; `None` where they cannot be read.
    pub fn now() -> Option<CpuClock> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let (busy_ticks, steal_ticks, total_ticks, cpus) = parse_stat(&stat)?;
        Some(CpuClock {
            at: Instant::now(),
            busy_ticks,
            steal_ticks,
            total_ticks,
            cpus,
            own_seconds: own_cpu(),
        })
    }

    /// What happened between `self` and `later`, given what the server used meanwhile
    /// (`None`: not probed) and the sentence on shared CPUs, if any.
    pub fn until(
        &self,
        later: &CpuClock,
        server_cpu_seconds: Option<f64>,
        shared: Option<String>,
    ) -> MachineLoad {
        let per_second = ticks_per_second();
        let window_s = later.at.duration_since(self.at).as_secs_f64();
        let busy = later.busy_ticks.saturating_sub(self.busy_ticks) as f64 / per_second;
        let steal = later.steal_ticks.saturating_sub(self.steal_ticks) as f64;
        let total = later.total_ticks.saturating_sub(self.total_ticks) as f64;
        let own = (later.own_seconds - self.own_seconds).max(0.0);
        let others = (busy - own - server_cpu_seconds.unwrap_or(0.0)).max(0.0);
        let steal_share = if total > 0.0 { steal / total } else { 0.0 };
        let others_cores = if window_s > 0.0 { others / window_s } else { 0.0 };
        MachineLoad {
            window_s,
            cpus: later.cpus,
            steal_share,
            others_cpu_seconds: others,
            others_cores,
            busy: busy_sentence(others_cores, steal_share),
            shared_cpus: shared,
        }
    }
}

/// The warning for a machine past the bounds, naming what was past them.
pub fn busy_sentence(others_cores: f64, steal_share: f64) -> Option<String> {
    let mut what = Vec::new();
    if others_cores > BUSY_CORES {
        what.push(format!(
            "other processes used {others_cores:.2} cores on average (more than the {BUSY_CORES} of a core \
             wsbench tolerates)"
        ));
    }
    if steal_share > BUSY_STEAL {
        what.push(format!(
            "the hypervisor stole {:.1}% of the CPU time (more than the {:.0}% wsbench tolerates)",
            steal_share * 100.0,
            BUSY_STEAL * 100.0
        ));
    }
    (!what.is_empty()).then(|| {
        format!("the machine was busy: {}; the figures include that contention", what.join(", and "))
    })
}

/// The sentence for a local server and a client allowed onto the same CPUs.
pub fn shared_sentence(server: &[usize], client: &[usize]) -> Option<String> {
    let shared: Vec<usize> = client.iter().copied().filter(|cpu| server.contains(cpu)).collect();
    (!shared.is_empty()).then(|| {
        format!(
            "the server and the client shared CPU {}: each took time from the other (pin them apart with \
             --server-cpus and --client-cpus, or taskset for a server of your own)",
            crate::affinity::format_cpu_list(&shared)
        )
    })
}

/// Whether a local server and the client could run on the same CPU: the server's CPUs are
/// the built-in server's pinning (or every allowed CPU when unpinned) or those the first
/// probed process may use; a client worker without a CPU may use every allowed one. A remote
/// server (no probed process) shares nothing.
pub fn shared_cpus(
    builtin_server_cpus: Option<&[usize]>,
    server_pids: &[u32],
    client_cpus: &[Option<usize>],
) -> Option<String> {
    let allowed = crate::affinity::allowed_cpus;
    let server = match builtin_server_cpus {
        Some([]) => allowed(),
        Some(cpus) => cpus.to_vec(),
        None => cpus_of_process(*server_pids.first()?)?,
    };
    let client: Vec<usize> = match client_cpus.iter().copied().collect::<Option<Vec<usize>>>() {
        Some(pinned) => pinned,
        None => allowed(),
    };
    shared_sentence(&server, &client)
}

/// The CPUs process `pid` may run on (`Cpus_allowed_list` of its status).
pub fn cpus_of_process(pid: u32) -> Option<Vec<usize>> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let list = status.lines().find_map(|line| line.strip_prefix("Cpus_allowed_list:"))?;
    crate::affinity::parse_cpu_list(list.trim()).ok()
}

/// `(busy, steal, total, cpus)` ticks from `/proc/stat`: busy is user, nice, system, irq and
/// softirq (guest time is inside user); total adds idle, iowait and steal.
fn parse_stat(text: &str) -> Option<(u64, u64, u64, u64)> {
    let all = text.lines().find(|line| line.starts_with("cpu "))?;
    let fields: Vec<u64> = all.split_whitespace().skip(1).map(|f| f.parse().unwrap_or(0)).collect();
    let field = |i: usize| fields.get(i).copied().unwrap_or(0);
    let (user, nice, system, idle, iowait, irq, softirq, steal) =
        (field(0), field(1), field(2), field(3), field(4), field(5), field(6), field(7));
    let busy = user + nice + system + irq + softirq;
    let cpus = text.lines().filter(|line| line.starts_with("cpu") && !line.starts_with("cpu ")).count();
    Some((busy, steal, busy + idle + iowait + steal, cpus as u64))
}

/// This process's CPU seconds, every thread's (`getrusage(RUSAGE_SELF)`); 0 if unreadable.
fn own_cpu() -> f64 {
    // SAFETY: an all-zero rusage is a valid value for getrusage to overwrite.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid rusage to write to.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return 0.0;
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

fn ticks_per_second() -> f64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 { ticks as f64 } else { 100.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stat_line_splits_into_busy_steal_and_total() {
        let text = "cpu  100 10 50 800 20 5 5 10 30 0\ncpu0 50 5 25 400 10 2 3 5 15 0\ncpu1 50 5 25 400 10 3 2 5 15 0\nintr 1\n";
        assert_eq!(parse_stat(text), Some((170, 10, 1000, 2)));
        assert_eq!(parse_stat("intr 1\n"), None);
    }

    #[test]
    fn the_warnings_name_what_passed_its_bound() {
        assert_eq!(busy_sentence(0.1, 0.01), None);
        let busy = busy_sentence(0.93, 0.0).unwrap();
        assert!(
            busy.contains(
                "other processes used 0.93 cores on average (more than the 0.25 of a core wsbench tolerates)"
            ),
            "{busy}"
        );
        let stolen = busy_sentence(0.0, 0.12).unwrap();
        assert!(
            stolen.contains("stole 12.0% of the CPU time (more than the 5% wsbench tolerates)"),
            "{stolen}"
        );
        assert_eq!(shared_sentence(&[0], &[1]), None);
        assert!(
            shared_sentence(&[0, 1], &[1]).unwrap().starts_with("the server and the client shared CPU 1:")
        );
    }

    #[test]
    fn a_window_of_this_process_alone_counts_no_one_else_beyond_the_machine() {
        let before = CpuClock::now().unwrap();
        let spin = Instant::now();
        while spin.elapsed().as_millis() < 200 {
            std::hint::black_box(spin.elapsed());
        }
        let load = before.until(&CpuClock::now().unwrap(), None, None);
        assert!(load.window_s >= 0.2 && load.cpus >= 1, "{load:?}");
        assert!((0.0..=1.0).contains(&load.steal_share), "{load:?}");
        // What others used cannot exceed the machine's CPUs over the window.
        assert!(load.others_cores >= 0.0 && load.others_cores <= load.cpus as f64 + 0.1, "{load:?}");
        assert_eq!(load.busy.is_some(), load.others_cores > BUSY_CORES || load.steal_share > BUSY_STEAL);
    }
}
