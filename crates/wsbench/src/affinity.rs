//! CPU affinity: which CPUs wsbench may use, pinning its worker threads, and pinning a
//! spawned server to other CPUs.
//!
//! A benchmark whose client and server fight over the same cores measures the scheduler, not
//! the server. Pinning the load generator's workers and the built-in (or spawned) server to
//! disjoint CPU sets keeps the two apart and makes runs repeatable. Linux only
//! (`sched_getaffinity` / `sched_setaffinity`); masks are sized dynamically so machines with
//! more than 1024 CPUs work too.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;

type Word = libc::c_ulong;
const WORD_BITS: usize = Word::BITS as usize;
/// Size of glibc's `cpu_set_t` in bits; masks are never smaller than this.
const MIN_MASK_BITS: usize = 1024;
/// Highest CPU number accepted anywhere here (Linux supports at most 8192 today).
pub const MAX_CPU: usize = 65_535;

/// A CPU list that [`parse_cpu_list`] rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid CPU list {list:?}: {reason} (expected a list like `0,2-3` or `0-7:2`)")]
pub struct CpuListError {
    pub list: String,
    pub reason: String,
}

/// Parses a taskset-style CPU list: comma-separated CPU numbers and inclusive ranges, with an
/// optional stride (`0-7:2` is 0, 2, 4, 6). The result is sorted and deduplicated.
pub fn parse_cpu_list(list: &str) -> Result<Vec<usize>, CpuListError> {
    let fail = |reason: String| CpuListError { list: list.to_owned(), reason };
    let number = |text: &str| -> Result<usize, CpuListError> {
        let text = text.trim();
        let n: usize = text.parse().map_err(|_| fail(format!("{text:?} is not a CPU number")))?;
        if n > MAX_CPU {
            return Err(fail(format!("CPU {n} is above the highest supported CPU {MAX_CPU}")));
        }
        Ok(n)
    };
    if list.trim().is_empty() {
        return Err(fail("it is empty".to_owned()));
    }
    let mut cpus = Vec::new();
    for item in list.split(',') {
        let item = item.trim();
        if item.is_empty() {
            return Err(fail("it has an empty item".to_owned()));
        }
        let (range, stride) =
            match item.split_once(':') {
                Some((range, stride)) => {
                    let stride: usize =
                        stride.trim().parse().ok().filter(|&s| s > 0).ok_or_else(|| {
                            fail(format!("{stride:?} in {item:?} is not a positive stride"))
                        })?;
                    (range, stride)
                }
                None => (item, 1),
            };
        match range.split_once('-') {
            Some((low, high)) => {
                let (low, high) = (number(low)?, number(high)?);
                if low > high {
                    return Err(fail(format!("the range {item:?} runs backwards")));
                }
                cpus.extend((low..=high).step_by(stride));
            }
            None if stride != 1 => {
                return Err(fail(format!("a stride needs a range, as in 0-7:2, not {item:?}")));
            }
            None => cpus.push(number(range)?),
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// Formats CPUs as a compact list (`0-3,6`), the inverse of [`parse_cpu_list`].
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        parts.push(if start == end { start.to_string() } else { format!("{start}-{end}") });
        i += 1;
    }
    parts.join(",")
}

/// A kernel CPU mask holding `cpus`; CPUs above [`MAX_CPU`] are left out.
fn mask_of(cpus: &[usize]) -> Vec<Word> {
    let cpus = || cpus.iter().copied().filter(|&c| c <= MAX_CPU);
    let bits = cpus().map(|c| c + 1).max().unwrap_or(0).max(MIN_MASK_BITS);
    let mut mask = vec![0; bits.div_ceil(WORD_BITS)];
    for cpu in cpus() {
        mask[cpu / WORD_BITS] |= 1 << (cpu % WORD_BITS);
    }
    mask
}

fn cpus_of(mask: &[Word]) -> Vec<usize> {
    let mut cpus = Vec::new();
    for (index, &word) in mask.iter().enumerate() {
        for bit in 0..WORD_BITS {
            if word & (1 << bit) != 0 {
                cpus.push(index * WORD_BITS + bit);
            }
        }
    }
    cpus
}

/// `sched_getaffinity(tid)`, growing the mask until the kernel's fits.
fn get_affinity(tid: libc::pid_t) -> io::Result<Vec<usize>> {
    let mut words = MIN_MASK_BITS / WORD_BITS;
    loop {
        let mut mask: Vec<Word> = vec![0; words];
        // SAFETY: the buffer is `words` words long, at least sizeof(cpu_set_t), and the size
        // passed is its length in bytes; the kernel writes no more than that.
        let rc =
            unsafe { libc::sched_getaffinity(tid, size_of_val(mask.as_slice()), mask.as_mut_ptr().cast()) };
        if rc == 0 {
            return Ok(cpus_of(&mask));
        }
        let error = io::Error::last_os_error();
        if error.raw_os_error() == Some(libc::EINVAL) && words * WORD_BITS <= MAX_CPU {
            words *= 2;
            continue;
        }
        return Err(error);
    }
}

/// `sched_setaffinity(tid, mask)`. Allocation-free, so it may run between fork and exec.
fn set_affinity(tid: libc::pid_t, mask: &[Word]) -> io::Result<()> {
    // SAFETY: `mask` is a valid buffer of the size passed, at least sizeof(cpu_set_t).
    let rc = unsafe { libc::sched_setaffinity(tid, size_of_val(mask), mask.as_ptr().cast()) };
    if rc == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// The CPUs this process may run on (the main thread's affinity, which is what `taskset` or a
/// cpuset cgroup gave wsbench), sorted. Falls back to `0..available_parallelism` in the
/// unlikely case the kernel refuses to say.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() };
    match get_affinity(pid) {
        Ok(cpus) if !cpus.is_empty() => cpus,
        _ => (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect(),
    }
}

/// The CPUs the calling thread may run on, sorted.
pub fn current_thread_cpus() -> io::Result<Vec<usize>> {
    get_affinity(0)
}

/// Pins the calling thread (only it, not the process) to `cpu`. Fails with a plain message
/// when `cpu` is not one this process may use.
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    if cpu > MAX_CPU {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("CPU {cpu} is above the highest supported CPU {MAX_CPU}"),
        ));
    }
    set_affinity(0, &mask_of(&[cpu])).map_err(|error| {
        if error.raw_os_error() == Some(libc::EINVAL) {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "cannot pin a thread to CPU {cpu}: it is not one this process may use ({})",
                    format_cpu_list(&allowed_cpus())
                ),
            )
        } else {
            error
        }
    })
}

/// Makes a child spawned from `cmd` run on `cpus` only (set between fork and exec, so the
/// program starts pinned and every thread it creates inherits the set). An empty `cpus`
/// leaves `cmd` unchanged. If the kernel refuses the set (no CPU of it is allowed), `spawn`
/// fails with that error (`EINVAL`).
pub fn pin_command(cmd: &mut Command, cpus: &[usize]) {
    if cpus.is_empty() {
        return;
    }
    let mask = mask_of(cpus);
    // SAFETY: the closure only makes the sched_setaffinity system call on a buffer allocated
    // before the fork; it allocates nothing and takes no locks, so it is safe after fork.
    unsafe {
        cmd.pre_exec(move || set_affinity(0, &mask));
    }
}

#[cfg(test)]
mod tests {
    use std::process::Stdio;

    use super::*;

    #[test]
    fn cpu_lists_parse_like_taskset() {
        assert_eq!(parse_cpu_list("0").unwrap(), [0]);
        assert_eq!(parse_cpu_list("0,2-3").unwrap(), [0, 2, 3]);
        assert_eq!(parse_cpu_list(" 3 , 1-2,2 ").unwrap(), [1, 2, 3]);
        assert_eq!(parse_cpu_list("0-7:2").unwrap(), [0, 2, 4, 6]);
        assert_eq!(parse_cpu_list("4-4").unwrap(), [4]);
        assert_eq!(parse_cpu_list("1000-1001").unwrap(), [1000, 1001]);
    }

    #[test]
    fn bad_cpu_lists_say_what_is_wrong() {
        for (list, says) in [
            ("", "empty"),
            ("1,,2", "empty item"),
            ("a", "\"a\" is not a CPU number"),
            ("-1", "\"\" is not a CPU number"),
            ("3-1", "runs backwards"),
            ("0-7:0", "positive stride"),
            ("4:2", "needs a range"),
            ("99999999", "above the highest"),
        ] {
            let error = parse_cpu_list(list).expect_err(list).to_string();
            assert!(error.contains(says), "{list:?} gave {error:?}");
            assert!(error.contains("0,2-3"), "{error}");
        }
    }

    #[test]
    fn cpu_lists_format_compactly() {
        assert_eq!(format_cpu_list(&[0, 1, 2, 3, 6]), "0-3,6");
        assert_eq!(format_cpu_list(&[5, 1, 3, 2]), "1-3,5");
        assert_eq!(format_cpu_list(&[]), "");
        let cpus = [0, 2, 3, 4, 9, 64, 65, 1030];
        assert_eq!(parse_cpu_list(&format_cpu_list(&cpus)).unwrap(), cpus);
    }

    #[test]
    fn masks_round_trip_beyond_1024_cpus() {
        let cpus = [0, 63, 64, 1023, 1024, 4000];
        assert_eq!(cpus_of(&mask_of(&cpus)), cpus);
        assert_eq!(mask_of(&[]).len() * WORD_BITS, MIN_MASK_BITS);
    }

    #[test]
    fn allowed_cpus_match_proc_status() {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let listed = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).unwrap();
        assert_eq!(allowed_cpus(), parse_cpu_list(listed).unwrap());
    }

    #[test]
    fn pinning_a_thread_changes_only_that_thread() {
        let allowed = allowed_cpus();
        let cpu = *allowed.last().unwrap();
        let seen = std::thread::spawn(move || {
            pin_current_thread(cpu).unwrap();
            current_thread_cpus().unwrap()
        })
        .join()
        .unwrap();
        assert_eq!(seen, [cpu]);
        assert_eq!(allowed_cpus(), allowed, "the process mask must not change");

        let not_allowed = (0..=MAX_CPU).find(|c| !allowed.contains(c)).unwrap();
        let error = std::thread::spawn(move || pin_current_thread(not_allowed)).join().unwrap().unwrap_err();
        assert!(error.to_string().contains("not one this process may use"), "{error}");
    }

    #[test]
    fn pinned_command_starts_on_those_cpus() {
        let cpu = *allowed_cpus().last().unwrap();
        let mut cmd = Command::new("grep");
        cmd.args(["^Cpus_allowed_list:", "/proc/self/status"]).stdout(Stdio::piped());
        pin_command(&mut cmd, &[cpu]);
        let output = cmd.output().expect("run grep");
        assert!(output.status.success());
        let line = String::from_utf8(output.stdout).unwrap();
        let listed = line.trim().strip_prefix("Cpus_allowed_list:").unwrap().trim();
        assert_eq!(parse_cpu_list(listed).unwrap(), [cpu]);

        // A set with no allowed CPU makes the spawn itself fail.
        let not_allowed = (0..=MAX_CPU).find(|c| !allowed_cpus().contains(c)).unwrap();
        let mut cmd = Command::new("true");
        pin_command(&mut cmd, &[not_allowed]);
        let error = cmd.status().expect_err("spawn must fail");
        assert_eq!(error.raw_os_error(), Some(libc::EINVAL));
    }
}
