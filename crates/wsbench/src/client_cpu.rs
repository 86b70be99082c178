//! The client self-check: did wsbench itself run out of CPU?
//!
//! A load generator whose worker threads are saturated reports its own limit, not the
//! server's. Every worker therefore reads its own CPU time just before it exits
//! ([`thread_cpu_seconds_self`]), and the report says so plainly when a worker came close to
//! a full core ([`client_bound`]).

use crate::samples::WorkerCpu;
use crate::units::format::percent;

/// A worker using at least this fraction of one core bounds the result.
pub const CLIENT_BOUND_SHARE: f64 = 0.9;

/// CPU seconds (user + system) the calling thread has used since it started
/// (`CLOCK_THREAD_CPUTIME_ID`, nanosecond resolution); 0 if the clock cannot be read.
pub fn thread_cpu_seconds_self() -> f64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `now` is a valid timespec to write to.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) } == 0 {
        now.tv_sec as f64 + now.tv_nsec as f64 / 1e9
    } else {
        0.0
    }
}

/// User and system CPU seconds the calling thread has used since it started
/// (`getrusage(RUSAGE_THREAD)`, microsecond resolution); zeros if it cannot be read.
pub fn thread_cpu_self() -> ThreadCpu {
    // SAFETY: an all-zero rusage is a valid value for getrusage to overwrite.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid rusage to write to.
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) } != 0 {
        return ThreadCpu::default();
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    ThreadCpu { user_seconds: secs(usage.ru_utime), system_seconds: secs(usage.ru_stime) }
}

/// One thread's CPU time, split as the kernel accounts it: user (wsbench's own code:
/// framing, checking, recording) and system (the socket calls).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ThreadCpu {
    pub user_seconds: f64,
    pub system_seconds: f64,
}

impl ThreadCpu {
    pub fn total(self) -> f64 {
        self.user_seconds + self.system_seconds
    }
}

/// Client CPU µs per round trip: every worker's CPU seconds over every echo received
/// (the whole run on both sides, as the server's figure is); `None` without echoes.
pub fn cpu_us_per_round_trip(cpu_seconds: f64, round_trips: u64) -> Option<f64> {
    (round_trips > 0 && cpu_seconds.is_finite()).then(|| cpu_seconds * 1e6 / round_trips as f64)
}

/// A plain sentence when any worker used at least [`CLIENT_BOUND_SHARE`] of a core, e.g.
/// "worker wsbench-w0 used 97% of a core: the result is bounded by the client, not the
/// server"; `None` when every worker had room to spare.
pub fn client_bound(workers: &[WorkerCpu]) -> Option<String> {
    let mut busy: Vec<&WorkerCpu> = workers.iter().filter(|w| w.share >= CLIENT_BOUND_SHARE).collect();
    let share = |w: &WorkerCpu| percent(w.share);
    let consequence = "the result is bounded by the client, not the server";
    match busy.as_mut_slice() {
        [] => None,
        [one] => Some(format!("worker {} used {} of a core: {consequence}", one.name, share(one))),
        many => {
            many.sort_by(|a, b| b.share.total_cmp(&a.share));
            let listed: Vec<String> = many.iter().map(|w| format!("{} ({})", w.name, share(w))).collect();
            Some(format!(
                "{} workers used at least {} of a core each: {}: {consequence}",
                many.len(),
                percent(CLIENT_BOUND_SHARE),
                listed.join(", ")
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    /// Keeps the CPU busy (user time) until `cpu_used` says this thread has used `seconds`
    /// more, however long a loaded machine makes that take (a busy thread on a shared CPU
    /// gets only part of the wall time); returns the wall time it took.
    fn spin_until(seconds: f64, cpu_used: fn() -> f64) -> Duration {
        let (started, from) = (Instant::now(), cpu_used());
        let mut x = 1u64;
        while cpu_used() - from < seconds {
            for _ in 0..10_000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        }
        started.elapsed()
    }

    #[test]
    fn a_busy_thread_counts_its_cpu_and_a_sleeping_one_does_not() {
        // Spun until getrusage says 0.1 s: the thread clock, a separate interface, must agree,
        // and cannot exceed the wall time the spinning took.
        let busy = std::thread::spawn(|| {
            let wall = spin_until(0.1, || thread_cpu_self().total());
            (thread_cpu_seconds_self(), wall)
        });
        let idle = std::thread::spawn(|| {
            std::thread::sleep(Duration::from_millis(200));
            thread_cpu_seconds_self()
        });
        let ((busy, wall), idle) = (busy.join().unwrap(), idle.join().unwrap());
        assert!(busy >= 0.099, "busy thread: {busy} s of CPU after getrusage said 0.1 s");
        assert!(busy <= wall.as_secs_f64() + 0.01, "busy thread: {busy} s of CPU in {wall:?} of wall time");
        assert!(idle < 0.02, "sleeping thread: {idle} s");
    }

    #[test]
    fn rusage_splits_user_and_system_time() {
        let worker = std::thread::spawn(|| {
            spin_until(0.15, thread_cpu_seconds_self);
            let after_user = thread_cpu_self();
            // System time: a syscall that does real work in the kernel, many times, until
            // the thread has used another 0.15 s and the kernel has counted some of it as
            // system time (it splits a thread's time by the clock ticks that found it in the
            // kernel: on a busy machine, where the thread runs in short slices, that may take
            // more than 0.15 s), or 5 s of the thread's time have passed.
            let file = std::fs::File::open("/proc/self/stat").unwrap();
            let mut buf = [0u8; 4096];
            let from = thread_cpu_seconds_self();
            loop {
                for _ in 0..1_000 {
                    let _ = std::os::unix::fs::FileExt::read_at(&file, &mut buf, 0);
                }
                let used = thread_cpu_seconds_self() - from;
                let counted = thread_cpu_self().system_seconds > after_user.system_seconds;
                if (used >= 0.15 && counted) || used >= 5.0 {
                    break;
                }
            }
            (after_user, thread_cpu_self())
        });
        let (after_user, after_system) = worker.join().unwrap();
        assert!(after_user.user_seconds > 0.05, "spinning counted as user time: {after_user:?}");
        assert!(after_user.user_seconds > after_user.system_seconds, "{after_user:?}");
        assert!(after_system.system_seconds > after_user.system_seconds, "{after_system:?}");
        assert!((after_system.total() - thread_cpu_seconds_self()).abs() < 0.5);
    }

    #[test]
    fn cpu_per_round_trip_needs_round_trips() {
        assert_eq!(cpu_us_per_round_trip(2.0, 1_000_000), Some(2.0));
        assert_eq!(cpu_us_per_round_trip(2.0, 0), None);
        assert_eq!(cpu_us_per_round_trip(f64::NAN, 10), None);
    }

    #[test]
    fn client_bound_names_the_saturated_workers() {
        let w = |name: &str, share: f64| WorkerCpu {
            name: name.to_owned(),
            cpu_seconds: share * 10.0,
            share,
            ..WorkerCpu::default()
        };
        assert_eq!(client_bound(&[]), None);
        assert_eq!(client_bound(&[w("wsbench-w0", 0.5), w("wsbench-w1", 0.89)]), None);
        assert_eq!(
            client_bound(&[w("wsbench-w0", 0.5), w("wsbench-w1", 0.97)]).as_deref(),
            Some("worker wsbench-w1 used 97% of a core: the result is bounded by the client, not the server")
        );
        assert_eq!(
            client_bound(&[w("wsbench-w0", 1.02)]).as_deref(),
            Some(
                "worker wsbench-w0 used 100% of a core: the result is bounded by the client, not the server"
            )
        );
        let many =
            client_bound(&[w("wsbench-w0", 0.9), w("wsbench-w1", 0.2), w("wsbench-w2", 0.99)]).unwrap();
        assert_eq!(
            many,
            "2 workers used at least 90% of a core each: wsbench-w2 (99%), wsbench-w0 (90%): \
             the result is bounded by the client, not the server"
        );
    }
}
