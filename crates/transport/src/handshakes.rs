//! The TLS handshakes this thread completed, full or resumed as rustls says it did them
//! (`handshake_kind`), and the CPU time they cost this thread: the clock of the thread
//! (`CLOCK_THREAD_CPUTIME_ID`) read around every rustls call a [`crate::Transport`] makes while
//! its handshake runs (setting the session up, reading, processing and writing records), so
//! what the figure holds is the handshake's own work on this side, the socket calls
//! included, and nothing of the other side or of other connections.
//!
//! Counted per thread, as the echo server counts its echoes: each side's event loop takes
//! the tally ([`take_handshakes`]) into its own counts when it likes, and counting costs no
//! shared write per handshake. A handshake that fails is not counted.

use std::cell::Cell;

/// Completed handshakes by kind, and their CPU time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HandshakeTally {
    /// Full handshakes (with a HelloRetryRequest too: still a full one).
    pub full: u64,
    /// Resumed handshakes (a TLS 1.3 PSK or a TLS 1.2 session ticket or id accepted).
    pub resumed: u64,
    /// Of all, those whose client was allowed to offer a stored session (client side):
    /// a try finds nothing to offer while no session is stored yet.
    pub tried: u64,
    pub full_cpu_ns: u64,
    pub resumed_cpu_ns: u64,
}

impl HandshakeTally {
    /// No handshake counted.
    pub fn is_empty(&self) -> bool {
        self.full + self.resumed == 0
    }
}

impl std::ops::AddAssign for HandshakeTally {
    fn add_assign(&mut self, other: HandshakeTally) {
        self.full += other.full;
        self.resumed += other.resumed;
        self.tried += other.tried;
        self.full_cpu_ns += other.full_cpu_ns;
        self.resumed_cpu_ns += other.resumed_cpu_ns;
    }
}

thread_local! {
    static TALLY: Cell<HandshakeTally> = const {
        Cell::new(HandshakeTally { full: 0, resumed: 0, tried: 0, full_cpu_ns: 0, resumed_cpu_ns: 0 })
    };
}

/// The handshakes this thread completed since the last call.
pub fn take_handshakes() -> HandshakeTally {
    TALLY.with(|tally| tally.replace(HandshakeTally::default()))
}

/// One handshake in progress: the CPU it has cost so far and whether its client may resume.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HandshakeClock {
    pub cpu_ns: u64,
    pub tried: bool,
}

impl HandshakeClock {
    /// Counts the handshake, done, as `resumed` or full.
    pub(crate) fn count(self, resumed: bool) {
        TALLY.with(|tally| {
            let mut t = tally.get();
            match resumed {
                true => (t.resumed, t.resumed_cpu_ns) = (t.resumed + 1, t.resumed_cpu_ns + self.cpu_ns),
                false => (t.full, t.full_cpu_ns) = (t.full + 1, t.full_cpu_ns + self.cpu_ns),
            }
            t.tried += u64::from(self.tried);
            tally.set(t);
        });
    }
}

/// This thread's CPU time, ns (0 if the clock cannot be read).
pub(crate) fn thread_cpu_ns() -> u64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec into memory we own.
    match unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) } {
        0 => now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tally_counts_by_kind_and_is_taken_once() {
        take_handshakes();
        HandshakeClock { cpu_ns: 300, tried: false }.count(false);
        HandshakeClock { cpu_ns: 100, tried: true }.count(true);
        HandshakeClock { cpu_ns: 50, tried: true }.count(false);
        let taken = take_handshakes();
        assert_eq!(
            taken,
            HandshakeTally { full: 2, resumed: 1, tried: 2, full_cpu_ns: 350, resumed_cpu_ns: 100 }
        );
        assert!(take_handshakes().is_empty());
        let before = thread_cpu_ns();
        let spin: u64 = (0..200_000u64).map(std::hint::black_box).sum();
        assert!(spin > 0 && thread_cpu_ns() > before, "the thread's clock moves with its work");
    }
}
