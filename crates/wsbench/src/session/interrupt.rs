//! SIGINT (Ctrl-C), SIGTERM and SIGHUP as one request to stop: the first asks every running
//! loop to stop and write what it measured. Signals that follow within [`SAME_REQUEST`] are
//! the same request: `timeout` sends its signal to wsbench and then to wsbench's process
//! group, and a closing terminal or a CI runner often signals twice, so a second signal
//! close behind the first must not cost the results. Only a signal after the run has had
//! that long to write its files ends the process at once, with the interrupted exit code.
//! Installed once, by the binary, for every command that measures.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::{Duration, Instant};

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

/// Signals this long after the first are still the same request to stop.
pub const SAME_REQUEST: Duration = Duration::from_secs(2);

/// The signal that asked to stop (0 until one did).
static STOPPED_BY: AtomicI32 = AtomicI32::new(0);

/// Installs the handlers and returns the flag they set. `announce`: say on stderr, at the
/// first signal, which signal stopped the run (a shard, whose stderr is its parent's, does
/// not: the parent said it).
pub fn install(announce: bool) -> std::io::Result<Arc<AtomicBool>> {
    let interrupt = Arc::new(AtomicBool::new(false));
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    let flag = interrupt.clone();
    std::thread::Builder::new().name("signals".into()).spawn(move || {
        let mut requests = StopRequests::default();
        for signal in signals.forever() {
            match requests.receive(Instant::now()) {
                Reaction::Stop => {
                    STOPPED_BY.store(signal, Ordering::SeqCst);
                    flag.store(true, Ordering::SeqCst);
                    if announce {
                        eprintln!(
                            "wsbench: {}: stopping and writing what was measured (a signal more than {} s \
                             from now ends wsbench at once)",
                            name(signal),
                            SAME_REQUEST.as_secs()
                        );
                    }
                }
                Reaction::SameRequest => {}
                Reaction::ExitNow => {
                    eprintln!(
                        "wsbench: {} after the first stop request ({}): exiting at once",
                        name(signal),
                        name(STOPPED_BY.load(Ordering::SeqCst))
                    );
                    std::process::exit(i32::from(crate::exit::INTERRUPTED));
                }
            }
        }
    })?;
    Ok(interrupt)
}

/// The signal that stopped this process's run, by name (`SIGTERM`), if one did.
pub fn stopped_by() -> Option<&'static str> {
    match STOPPED_BY.load(Ordering::SeqCst) {
        0 => None,
        signal => Some(name(signal)),
    }
}

/// "interrupted (SIGTERM)", or "interrupted" when no signal was recorded (the flag was set
/// some other way): the wording for anything a signal cut short.
pub fn interrupted() -> String {
    match stopped_by() {
        Some(signal) => format!("interrupted ({signal})"),
        None => "interrupted".to_owned(),
    }
}

fn name(signal: i32) -> &'static str {
    match signal {
        SIGINT => "SIGINT",
        SIGTERM => "SIGTERM",
        SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}

/// What a signal means, given the ones before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reaction {
    /// The first: stop and write what was measured.
    Stop,
    /// Within [`SAME_REQUEST`] of the first: nothing more.
    SameRequest,
    /// Later: the run had its time to write; end the process.
    ExitNow,
}

#[derive(Debug, Default)]
struct StopRequests {
    first: Option<Instant>,
}

impl StopRequests {
    fn receive(&mut self, now: Instant) -> Reaction {
        match self.first {
            None => {
                self.first = Some(now);
                Reaction::Stop
            }
            Some(first) if now.saturating_duration_since(first) < SAME_REQUEST => Reaction::SameRequest,
            Some(_) => Reaction::ExitNow,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_close_behind_the_first_are_the_same_request() {
        let mut requests = StopRequests::default();
        let start = Instant::now();
        assert_eq!(requests.receive(start), Reaction::Stop);
        // timeout's second signal, to the process group, a moment later.
        assert_eq!(requests.receive(start + Duration::from_millis(1)), Reaction::SameRequest);
        assert_eq!(requests.receive(start + Duration::from_millis(1999)), Reaction::SameRequest);
        assert_eq!(requests.receive(start + SAME_REQUEST), Reaction::ExitNow);
    }

    #[test]
    fn signals_are_named() {
        assert_eq!((name(SIGINT), name(SIGTERM), name(SIGHUP)), ("SIGINT", "SIGTERM", "SIGHUP"));
    }
}
