//! Facts about the machine the client ran on, and the open-file limit it needs.
//!
//! A benchmark number means little without the hardware and kernel it came from, so every
//! result file records them ([`machine_facts`]). Holding tens of thousands of connections
//! also needs as many file descriptors, so the engine raises the soft `RLIMIT_NOFILE` to the
//! hard limit before it starts ([`raise_open_file_limit`]). Linux only.

use std::fs;
use std::io;

use crate::samples::MachineFacts;

/// What the result file says when a fact cannot be read.
const UNKNOWN: &str = "unknown";

/// The machine's description, best effort: a fact that cannot be read is `unknown` (or 0).
/// The wall clock in milliseconds since the Unix epoch (0 if the clock is before it): the
/// instant shards agree on and results are stamped with.
pub fn unix_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

pub fn machine_facts() -> MachineFacts {
    MachineFacts {
        cpu_model: fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|text| cpu_model(&text))
            .unwrap_or_else(|| UNKNOWN.to_owned()),
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        kernel: read_trimmed("/proc/sys/kernel/osrelease").unwrap_or_else(|| UNKNOWN.to_owned()),
        hostname: read_trimmed("/proc/sys/kernel/hostname")
            .or_else(gethostname)
            .unwrap_or_else(|| UNKNOWN.to_owned()),
        wsbench_version: env!("CARGO_PKG_VERSION").to_owned(),
        open_files_limit: open_file_limits().map_or(0, |(soft, _)| soft),
    }
}

fn read_trimmed(path: &str) -> Option<String> {
    let text = fs::read_to_string(path).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

/// The CPU model from `/proc/cpuinfo`: x86's `model name`, else the fields other
/// architectures use.
fn cpu_model(cpuinfo: &str) -> Option<String> {
    ["model name", "Hardware", "Model", "cpu model", "cpu"].iter().find_map(|key| {
        cpuinfo.lines().find_map(|line| {
            let (name, value) = line.split_once(':')?;
            let value = value.trim();
            (name.trim() == *key && !value.is_empty()).then(|| value.to_owned())
        })
    })
}

fn gethostname() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its full length, which is what is passed.
    if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } != 0 {
        return None;
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    let name = String::from_utf8_lossy(&buf[..end]).trim().to_owned();
    (!name.is_empty()).then_some(name)
}

// rlim_t is u64 on 64-bit Linux but not on every target.
#[allow(clippy::unnecessary_cast)]
fn as_u64(limit: libc::rlim_t) -> u64 {
    if limit == libc::RLIM_INFINITY { u64::MAX } else { limit as u64 }
}

/// The (soft, hard) open-file limits; `u64::MAX` stands for unlimited.
pub fn open_file_limits() -> io::Result<(u64, u64)> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `limit` is a valid rlimit to write to.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((as_u64(limit.rlim_cur), as_u64(limit.rlim_max)))
}

/// Raises the soft open-file limit to the hard limit and returns the new soft limit. An
/// unlimited hard limit is not a valid soft one for `RLIMIT_NOFILE`, so then the kernel's
/// ceiling (`/proc/sys/fs/nr_open`) is used. Never lowers the limit.
pub fn raise_open_file_limit() -> io::Result<u64> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `limit` is a valid rlimit to write to.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let mut target = limit.rlim_max;
    if target == libc::RLIM_INFINITY {
        let nr_open = read_trimmed("/proc/sys/fs/nr_open").and_then(|n| n.parse::<libc::rlim_t>().ok());
        target = nr_open.unwrap_or(1 << 20);
    }
    if limit.rlim_cur != libc::RLIM_INFINITY && target > limit.rlim_cur {
        let raised = libc::rlimit { rlim_cur: target, rlim_max: limit.rlim_max };
        // SAFETY: `raised` is a valid rlimit.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    open_file_limits().map(|(soft, _)| soft)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_are_filled_in() {
        let facts = machine_facts();
        assert!(facts.cores >= 1);
        assert_eq!(facts.wsbench_version, env!("CARGO_PKG_VERSION"));
        assert_ne!(facts.kernel, UNKNOWN);
        assert_eq!(facts.kernel, fs::read_to_string("/proc/sys/kernel/osrelease").unwrap().trim());
        assert_ne!(facts.hostname, UNKNOWN);
        assert!(!facts.cpu_model.is_empty());
        assert!(facts.open_files_limit > 0);
    }

    #[test]
    fn cpu_model_is_read_from_cpuinfo() {
        let x86 = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel\t\t: 85\n\
                   model name\t: Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz\nprocessor\t: 1\n";
        assert_eq!(cpu_model(x86).as_deref(), Some("Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz"));
        let arm = "processor\t: 0\nBogoMIPS\t: 50.00\nCPU part\t: 0xd0c\n\nHardware\t: BCM2835\n";
        assert_eq!(cpu_model(arm).as_deref(), Some("BCM2835"));
        assert_eq!(cpu_model("processor\t: 0\nmodel name\t:\n"), None);
    }

    #[test]
    fn open_file_limit_is_raised_to_the_hard_limit() {
        let (soft_before, hard) = open_file_limits().unwrap();
        let soft = raise_open_file_limit().unwrap();
        assert!(soft >= soft_before);
        assert_eq!(open_file_limits().unwrap().0, soft);
        if hard != u64::MAX {
            assert_eq!(soft, hard);
        }
        assert_eq!(machine_facts().open_files_limit, soft);
        // Idempotent.
        assert_eq!(raise_open_file_limit().unwrap(), soft);
    }
}
