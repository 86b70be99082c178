//! The churn scenario's figures in the result file: cycles completed per second,
//! how the close handshakes ended, and the server's file descriptors and RSS before, at the
//! peak of and after the run, so a server that leaks a descriptor or memory per connection
//! shows it. Computed from the counters and the probe's samples, so a merge recomputes them
//! from merged inputs.

use serde::{Deserialize, Serialize};

use crate::metrics::Counters;
use crate::samples::ServerSample;

/// churn's counter in the result file's `counters`.
pub const CYCLES_KEY: &str = "churn_cycles";

/// `churn` in the result file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChurnSummary {
    /// Connections that went connect → upgrade → K echoes → close answered.
    pub cycles: u64,
    /// `cycles` / `measured_s`: connections per second sustained.
    pub connections_per_sec: f64,
    pub closes_answered: u64,
    pub closes_unanswered: u64,
    /// The server's descriptors and memory over the run; absent when it was not probed.
    pub server_drift: Option<ServerDrift>,
}

/// A figure of the server before the load (the first sample), its peak, and after the run
/// once the connections were closed (the last sample).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Drift {
    pub baseline: u64,
    pub peak: u64,
    pub after: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerDrift {
    pub fds: Drift,
    pub rss_bytes: Drift,
}

impl ChurnSummary {
    /// From the cycles completed, the closes counted, the measured time and the probe's
    /// samples.
    pub fn of(
        cycles: u64,
        counters: &Counters,
        measured_secs: f64,
        samples: &[ServerSample],
    ) -> ChurnSummary {
        let per_sec = if measured_secs > 0.0 { cycles as f64 / measured_secs } else { 0.0 };
        ChurnSummary {
            cycles,
            connections_per_sec: if per_sec.is_finite() { per_sec } else { 0.0 },
            closes_answered: counters.closes_answered,
            closes_unanswered: counters.closes_unanswered,
            server_drift: ServerDrift::of(samples),
        }
    }
}

impl ServerDrift {
    /// `None` without samples.
    pub fn of(samples: &[ServerSample]) -> Option<ServerDrift> {
        let drift = |figure: fn(&ServerSample) -> u64| {
            Some(Drift {
                baseline: figure(samples.first()?),
                peak: samples.iter().map(figure).max()?,
                after: figure(samples.last()?),
            })
        };
        Some(ServerDrift { fds: drift(|s| s.fds)?, rss_bytes: drift(|s| s.rss_bytes)? })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(t_ms: u64, fds: u64, rss_bytes: u64) -> ServerSample {
        ServerSample { t_ms, rss_bytes, cpu_seconds: 0.0, threads: 1, fds, slab_bytes: 0 }
    }

    #[test]
    fn drift_is_first_peak_and_last_sample() {
        let samples = [sample(0, 10, 100), sample(250, 510, 900), sample(500, 11, 300)];
        let drift = ServerDrift::of(&samples).unwrap();
        assert_eq!(drift.fds, Drift { baseline: 10, peak: 510, after: 11 });
        assert_eq!(drift.rss_bytes, Drift { baseline: 100, peak: 900, after: 300 });
        assert_eq!(ServerDrift::of(&[]), None);
    }

    #[test]
    fn connections_per_sec_counts_completed_cycles() {
        let counters = Counters { closes_answered: 1000, ..Counters::default() };
        let churn = ChurnSummary::of(1000, &counters, 2.0, &[]);
        assert_eq!(churn.connections_per_sec, 500.0);
        assert_eq!(churn.server_drift, None);
        assert_eq!(ChurnSummary::of(1000, &counters, 0.0, &[]).connections_per_sec, 0.0);
    }
}
