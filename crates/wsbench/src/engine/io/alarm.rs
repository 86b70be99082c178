//! The worker's alarm clock, for waking at a due instant to the microsecond. `epoll_wait`
//! counts its timeout in whole milliseconds (rounded up), so a worker that slept with a
//! timeout woke up to a millisecond after an open-loop send was due, and that lateness
//! showed as send lag and in the corrected latency. The alarm is a `timerfd`
//! (`CLOCK_MONOTONIC`, the clock of `Instant`) registered in the worker's poll.
//!
//! A thread woken from a long sleep still runs some tens of microseconds after its timer
//! (more on an idle or virtual machine, whose CPUs sleep deeper). So before a long sleep the
//! alarm goes off early by the wake-up latency it has observed (a running average, at most
//! [`MAX_LEAD`]), and the worker spins the few microseconds left (`rang_early_for`). It is
//! set only when the due instant changes, so a closed loop, with nothing scheduled, makes
//! no timer calls.
//!
//! On io_uring the wait itself takes a timeout to the nanosecond, so there the alarm is a
//! deadline the wait honours ([`Alarm::use_wait_timeout`]): no timer file, and no
//! `timerfd_settime`, epoll round and `read` per wake-up. On epoll the timer file is
//! watched edge-triggered (mio), and setting it again clears its expirations, so it is
//! never read.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};

/// Most the alarm goes off ahead of the due instant.
const MAX_LEAD: Duration = Duration::from_micros(200);
/// The alarm goes off early only before a sleep this many times longer than the lead, so
/// the spinning costs at most a few percent of the time.
const SLEEP_PER_LEAD: u32 = 8;

pub struct Alarm {
    /// The timer file; `None` once the wait's own timeout serves instead.
    fd: Option<OwnedFd>,
    /// The due instant the alarm is set for, and when it goes off (up to the lead before).
    armed: Option<(Instant, Instant)>,
    /// The due instant of the alarm that last went off.
    rang_for: Option<Instant>,
    /// Running average of how late the thread woke after the alarm went off.
    lead: Duration,
}

impl Alarm {
    /// A disarmed alarm whose ringing is a readable event on `token` of `registry`.
    pub fn new(registry: &Registry, token: Token) -> io::Result<Alarm> {
        // SAFETY: plain syscall; the fd is checked and then owned.
        let fd =
            unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just created and nothing else owns it.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        registry.register(&mut SourceFd(&fd.as_raw_fd()), token, Interest::READABLE)?;
        Ok(Alarm { fd: Some(fd), armed: None, rang_for: None, lead: Duration::from_micros(50) })
    }

    /// From now on the wait honours the alarm ([`Alarm::wait_bound`]); the timer file is
    /// taken off `registry` and closed.
    pub fn use_wait_timeout(&mut self, registry: &Registry) {
        if let Some(fd) = self.fd.take() {
            let _ = registry.deregister(&mut SourceFd(&fd.as_raw_fd()));
        }
    }

    /// With the wait's own timeout: how long a wait starting now may last before the alarm
    /// goes off; `None` when no alarm is set (or the timer file rings it). The clock is read
    /// only when an alarm is set: a closed loop's turn reads none.
    pub fn wait_bound(&self) -> Option<Duration> {
        match (&self.fd, self.armed) {
            (None, Some((_, goes_off))) => Some(goes_off.saturating_duration_since(Instant::now())),
            _ => None,
        }
    }

    /// With the wait's own timeout, after a wait: rings the alarm if its time has come.
    pub fn ring_if_due(&mut self) {
        if self.fd.is_none() && self.armed.is_some_and(|(_, goes_off)| Instant::now() >= goes_off) {
            self.rang();
        }
    }

    /// Sets the alarm for `due`, unless it is already set for it: to go off the lead before
    /// it when the sleep is long and `early` (the worker then spins to `due`), else at `due`.
    pub fn set(&mut self, due: Instant, early: bool) -> io::Result<()> {
        if self.armed.is_some_and(|(armed_for, _)| armed_for == due) {
            return Ok(());
        }
        // Relative to the clock read just now (not to the loop's `now`, which is older by
        // the loop's work).
        let now = Instant::now();
        let sleep = due.saturating_duration_since(now);
        let lead = if early && sleep >= self.lead * SLEEP_PER_LEAD { self.lead } else { Duration::ZERO };
        // A zero value would disarm the timer, hence at least 1 ns.
        let after = (sleep - lead).max(Duration::from_nanos(1));
        self.armed = Some((due, now + after));
        let Some(fd) = &self.fd else { return Ok(()) };
        let value = libc::itimerspec {
            it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
            it_value: libc::timespec {
                tv_sec: after.as_secs() as libc::time_t,
                tv_nsec: after.subsec_nanos() as libc::c_long,
            },
        };
        // SAFETY: a valid timerfd and a pointer to a live itimerspec; no old value wanted.
        let result = unsafe { libc::timerfd_settime(fd.as_raw_fd(), 0, &value, std::ptr::null_mut()) };
        if result != 0 {
            self.armed = None;
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// With the timer file, when the alarm is set: sleeps until it goes off (at most
    /// `timeout`), ready sockets or not, and returns true; false (without sleeping) otherwise.
    pub fn sleep_until_it_rings(&self, timeout: Duration) -> bool {
        let (Some(fd), Some(_)) = (&self.fd, self.armed) else { return false };
        let mut watch = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        let limit = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: one live pollfd and a live timespec; no signal mask.
        unsafe { libc::ppoll(&mut watch, 1, &limit, std::ptr::null()) };
        true
    }

    /// The alarm went off: learns how late this thread woke.
    pub fn rang(&mut self) {
        if let Some((due, goes_off)) = self.armed.take() {
            let late = Instant::now().saturating_duration_since(goes_off).min(MAX_LEAD);
            self.lead = (self.lead * 7 + late) / 8;
            self.rang_for = Some(due);
        }
    }

    /// Whether the alarm already went off (early) for `due`: the worker spins until then.
    pub fn rang_early_for(&self, due: Instant) -> bool {
        self.rang_for == Some(due)
    }
}
