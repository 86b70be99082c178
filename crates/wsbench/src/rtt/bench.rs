//! The measuring loop of `wsbench rtt`, on one client thread: connect each protocol's
//! client, then repeat rounds of `iterations` sequential round trips per protocol,
//! interleaved (round 1: tcp, http, https, ws, wss; round 2: …) so that drift of the machine
//! (frequency, other load) spreads evenly over the protocols. Round 0 is the untimed warm-up
//! and connects each client just before it is used, so no connection sits idle long enough
//! for a server's handshake timeout.
//!
//! Per repeat it takes the wall time of the whole loop and the thread's CPU time
//! (`getrusage(RUSAGE_THREAD)`, user + system); every single round trip also goes into a
//! nanosecond HdrHistogram. One `Instant::now()` per round trip is the only timing overhead.

use std::io;
use std::sync::Arc;
use std::time::Instant;

use hdrhistogram::Histogram;
use rustls::ClientConfig;

use super::RttError;
use super::clients::{self, RoundTrip};
use super::config::{Protocol, RttTarget};
use super::stats::{Repeat, new_ns_histogram};

/// What was measured for one protocol.
#[derive(Debug)]
pub struct Measured {
    pub target: RttTarget,
    /// The timed repeats, in order.
    pub repeats: Vec<Repeat>,
    /// Every timed round trip, in nanoseconds.
    pub histogram: Histogram<u64>,
}

/// The calling thread's CPU time (user + system) in nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    // SAFETY: an all-zero rusage is a valid value for getrusage to overwrite.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable rusage.
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) } != 0 {
        return 0;
    }
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    ns(usage.ru_utime) + ns(usage.ru_stime)
}

/// Runs `iterations` round trips; records each into `histogram` when given.
pub fn run_repeat(
    client: &mut dyn RoundTrip,
    iterations: u64,
    mut histogram: Option<&mut Histogram<u64>>,
) -> io::Result<Repeat> {
    let cpu_start = thread_cpu_ns();
    let start = Instant::now();
    let mut last = start;
    for _ in 0..iterations {
        client.round_trip()?;
        let now = Instant::now();
        if let Some(histogram) = histogram.as_deref_mut() {
            histogram.saturating_record(((now - last).as_nanos() as u64).max(1));
        }
        last = now;
    }
    let cpu_ns = thread_cpu_ns().saturating_sub(cpu_start);
    Ok(Repeat { iterations, wall_ns: (last - start).as_nanos() as u64, cpu_ns })
}

/// Connects to every target and measures them, interleaved: one warm-up round, then
/// `repeats` timed rounds.
pub fn measure(
    targets: &[RttTarget],
    repeats: u32,
    iterations: u64,
    payload_bytes: usize,
    tls: Option<&Arc<ClientConfig>>,
) -> Result<Vec<Measured>, RttError> {
    let mut clients: Vec<Box<dyn RoundTrip + Send>> = Vec::with_capacity(targets.len());
    let mut measured: Vec<Measured> = targets
        .iter()
        .map(|target| Measured {
            target: target.clone(),
            repeats: Vec::with_capacity(repeats as usize),
            histogram: new_ns_histogram(),
        })
        .collect();
    for round in 0..=repeats {
        for (index, target) in targets.iter().enumerate() {
            let failed =
                |error| RttError::RoundTrip { protocol: target.protocol, target: target.authority(), error };
            if round == 0 {
                let client = clients::connect(target, payload_bytes, tls).map_err(|e| RttError::Connect {
                    protocol: target.protocol,
                    target: target.authority(),
                    stage: e.stage,
                    error: e.source,
                })?;
                clients.push(client);
                run_repeat(clients[index].as_mut(), iterations, None).map_err(failed)?;
            } else {
                let entry = &mut measured[index];
                let repeat = run_repeat(clients[index].as_mut(), iterations, Some(&mut entry.histogram))
                    .map_err(failed)?;
                entry.repeats.push(repeat);
            }
        }
    }
    Ok(measured)
}

/// The protocols that need a TLS client configuration.
pub fn needs_tls(targets: &[RttTarget]) -> bool {
    targets.iter().any(|t| Protocol::is_tls(t.protocol))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Sleepy;
    impl RoundTrip for Sleepy {
        fn round_trip(&mut self) -> io::Result<()> {
            std::hint::black_box((0..100).sum::<u64>());
            Ok(())
        }
    }

    #[test]
    fn a_repeat_records_every_round_trip() {
        let mut histogram = new_ns_histogram();
        let repeat = run_repeat(&mut Sleepy, 50, Some(&mut histogram)).unwrap();
        assert_eq!(repeat.iterations, 50);
        assert_eq!(histogram.len(), 50);
        assert!(repeat.wall_ns > 0);
    }

    #[test]
    fn thread_cpu_time_advances() {
        // Spin until the counter moves (it has µs resolution); a busy machine only delays it.
        let before = thread_cpu_ns();
        let until = Instant::now() + std::time::Duration::from_secs(10);
        while thread_cpu_ns() == before && Instant::now() < until {
            std::hint::black_box((0..1000).sum::<u64>());
        }
        assert!(thread_cpu_ns() > before);
    }
}
