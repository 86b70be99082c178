//! The probe's sampling loop, on its thread: a sample of the server's processes every
//! interval, on a fixed grid, until told to stop. A server that exits ends the sampling
//! there, unless it is being followed (a run that restarts its server, `--disrupt restart`):
//! then the processes listening on its address are looked for each interval, and once the
//! new server listens, its samples go on from where the old one's ended, its CPU time counted
//! on top of the old one's last sample (so the series stays monotone; what the old process
//! used between its last sample and its exit, at most an interval, is not seen).

use std::net::SocketAddr;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use super::{ProbeError, pids_listening_on, sample, thinning};
use crate::samples::ServerSample;

/// What the loop ends with: its samples (the final one taken when told to stop included),
/// what ended them early (if anything), and the processes it sampled last.
pub(super) type Sampled = (Vec<ServerSample>, Option<ProbeError>, Vec<u32>);

/// Samples `pids` every `interval` into `samples` (allocated whole by the caller) until
/// `stop` says so (or is dropped); with `follow`, a server that exits is found again on that
/// address.
pub(super) fn sample_until_stopped(
    mut samples: thinning::Thinned,
    mut pids: Vec<u32>,
    stop: &Receiver<()>,
    (interval, run_start): (Duration, Instant),
    follow: Option<SocketAddr>,
) -> Sampled {
    let mut next = Instant::now() + interval;
    let mut cpu_offset = 0.0;
    let mut last_cpu = 0.0;
    loop {
        match stop.recv_timeout(next.saturating_duration_since(Instant::now())) {
            Err(RecvTimeoutError::Timeout) => {}
            Ok(()) | Err(RecvTimeoutError::Disconnected) => {
                // The final sample, taken as every other (the offset of a restart included).
                return match sample(&pids, super::ms_since(run_start)) {
                    Ok(mut last) => {
                        last.cpu_seconds += cpu_offset;
                        samples.push(last);
                        (samples.into_samples(), None, pids)
                    }
                    Err(e) => (samples.into_samples(), Some(e), pids),
                };
            }
        }
        match sample(&pids, super::ms_since(run_start)) {
            Ok(mut one) => {
                one.cpu_seconds += cpu_offset;
                last_cpu = one.cpu_seconds;
                samples.push(one);
            }
            Err(ProbeError::Gone(pid)) if follow.is_some() => {
                // The server is restarting: sample it again once it listens.
                let found =
                    follow.and_then(|addr| pids_listening_on(addr).ok()).filter(|found| !found.is_empty());
                match found {
                    Some(found) if !found.contains(&pid) => {
                        pids = found;
                        cpu_offset = last_cpu;
                    }
                    _ => {}
                }
            }
            Err(e) => return (samples.into_samples(), Some(e), pids),
        }
        // Keep to the grid; if a sample took longer than an interval, skip ticks.
        next += interval;
        let now = Instant::now();
        while next <= now {
            next += interval;
        }
    }
}
