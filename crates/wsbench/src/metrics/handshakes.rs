//! TLS handshakes by kind, full or resumed, with the CPU time each kind cost, as one side
//! counted them: the client's in `counters.tls_handshakes` (what rustls told each client
//! connection, and how many were allowed to offer a stored session), the server's in
//! `server.tls_handshakes` (what a `wsbench serve` says it did: not what the client hoped).
//! Totals only, so that they add up over workers, shards and files; the per-handshake
//! figures are divided out where they are shown.

use serde::{Deserialize, Serialize};
use wsbench_transport::HandshakeTally;

/// Completed TLS handshakes by kind and their CPU time, ns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TlsHandshakes {
    pub full: u64,
    pub resumed: u64,
    /// Client side: of all, those whose connection was allowed to offer a stored session
    /// (`--tls-resume`'s share); one that found none stored still did a full handshake.
    #[serde(default)]
    pub tried: u64,
    pub full_cpu_ns: u64,
    pub resumed_cpu_ns: u64,
}

impl TlsHandshakes {
    /// No handshake counted.
    pub fn is_empty(&self) -> bool {
        self.full + self.resumed == 0
    }

    /// Mean CPU µs per full and per resumed handshake (`None` for a kind with none).
    pub fn cpu_us_each(&self) -> (Option<f64>, Option<f64>) {
        let each = |ns: u64, n: u64| (n > 0).then(|| ns as f64 / n as f64 / 1000.0);
        (each(self.full_cpu_ns, self.full), each(self.resumed_cpu_ns, self.resumed))
    }

    /// The counts of `later` since `self`, when `later` follows on from it (a server that
    /// restarted between them starts again from zero: `None`).
    pub fn until(&self, later: &TlsHandshakes) -> Option<TlsHandshakes> {
        Some(TlsHandshakes {
            full: later.full.checked_sub(self.full)?,
            resumed: later.resumed.checked_sub(self.resumed)?,
            tried: later.tried.checked_sub(self.tried)?,
            full_cpu_ns: later.full_cpu_ns.checked_sub(self.full_cpu_ns)?,
            resumed_cpu_ns: later.resumed_cpu_ns.checked_sub(self.resumed_cpu_ns)?,
        })
    }
}

impl From<HandshakeTally> for TlsHandshakes {
    fn from(t: HandshakeTally) -> TlsHandshakes {
        let HandshakeTally { full, resumed, tried, full_cpu_ns, resumed_cpu_ns } = t;
        TlsHandshakes { full, resumed, tried, full_cpu_ns, resumed_cpu_ns }
    }
}

impl std::ops::AddAssign for TlsHandshakes {
    fn add_assign(&mut self, other: TlsHandshakes) {
        self.full += other.full;
        self.resumed += other.resumed;
        self.tried += other.tried;
        self.full_cpu_ns += other.full_cpu_ns;
        self.resumed_cpu_ns += other.resumed_cpu_ns;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_divide_and_follow_on() {
        let mut a = TlsHandshakes { full: 2, resumed: 0, tried: 0, full_cpu_ns: 900_000, resumed_cpu_ns: 0 };
        a += TlsHandshakes { full: 1, resumed: 4, tried: 5, full_cpu_ns: 300_000, resumed_cpu_ns: 400_000 };
        assert_eq!((a.full, a.resumed, a.tried), (3, 4, 5));
        assert_eq!(a.cpu_us_each(), (Some(400.0), Some(100.0)));
        assert_eq!(TlsHandshakes::default().cpu_us_each(), (None, None));
        let before = TlsHandshakes { full: 1, resumed: 1, tried: 0, full_cpu_ns: 1, resumed_cpu_ns: 1 };
        assert_eq!(before.until(&a).map(|d| (d.full, d.resumed)), Some((2, 3)));
        assert_eq!(a.until(&before), None, "a server that started again");
    }
}
