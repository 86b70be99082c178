//! Where the session's disruptions (`--disrupt`) meet the workers. The session acts on the
//! server at the planned times (restarts it, has it close its connections, runs the
//! operator's command) and says so here: each disruption is an epoch, with the instant it
//! began and, once its action is over (the server listening again, the command exited),
//! that it is done. A `drop` is the workers' own act: they cut every open connection when
//! they see its epoch. Workers read this once per loop turn (a few relaxed loads) and keep
//! their own recovery windows; nothing here is on the per-message path.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use crate::config::DisruptionKind;
pub use crate::samples::DisruptionEvent;

/// No disruption yet.
const NONE: u64 = u64::MAX;

/// The run's disruptions as the workers see them.
#[derive(Debug, Default)]
pub struct Disruptions {
    /// When the run and its load began (every connection up): disruption times count from
    /// the load's start, their events from the run's.
    started: OnceLock<(Instant, Instant)>,
    /// The latest disruption's number (from 1) and its start, µs since the run's start.
    epoch: AtomicU64,
    began_us: AtomicU64,
    /// The latest disruption whose action is over.
    done: AtomicU64,
    /// The latest `drop`'s epoch: workers cut every connection once for it.
    drop_epoch: AtomicU64,
    events: Mutex<Vec<DisruptionEvent>>,
}

impl Disruptions {
    pub fn new() -> Disruptions {
        Disruptions { began_us: AtomicU64::new(NONE), ..Disruptions::default() }
    }

    /// The run began at `run` and its load at `load` (the first call counts).
    pub fn load_began(&self, run: Instant, load: Instant) {
        let _ = self.started.set((run, load));
    }

    /// When the run and its load began, once the load has.
    pub fn started(&self) -> Option<(Instant, Instant)> {
        self.started.get().copied()
    }

    /// A disruption of `kind` begins at `at_us` (µs since the run's start): its epoch.
    pub fn begin(&self, kind: DisruptionKind, at_us: u64) -> u64 {
        self.began_us.store(at_us, Ordering::SeqCst);
        let epoch = self.epoch.fetch_add(1, Ordering::SeqCst) + 1;
        if kind == DisruptionKind::Drop {
            self.drop_epoch.store(epoch, Ordering::SeqCst);
        }
        epoch
    }

    /// Disruption `epoch`'s action is over; what happened is kept as its event.
    pub fn end(&self, epoch: u64, event: DisruptionEvent) {
        self.events.lock().unwrap_or_else(PoisonError::into_inner).push(event);
        self.done.fetch_max(epoch, Ordering::SeqCst);
    }

    /// The latest disruption: its epoch (0: none yet) and start (µs since the run's start).
    #[inline]
    pub fn latest(&self) -> (u64, u64) {
        (self.epoch.load(Ordering::Relaxed), self.began_us.load(Ordering::Relaxed))
    }

    /// Whether the action of disruption `epoch` is over.
    pub fn done(&self, epoch: u64) -> bool {
        self.done.load(Ordering::Relaxed) >= epoch
    }

    /// The latest `drop`'s epoch (0: none).
    #[inline]
    pub fn drop_epoch(&self) -> u64 {
        self.drop_epoch.load(Ordering::Relaxed)
    }

    /// Every disruption that happened, in order.
    pub fn events(&self) -> Vec<DisruptionEvent> {
        self.events.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// An event's `took_s` from a duration.
pub fn seconds(duration: Duration) -> f64 {
    duration.as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_disruption_is_an_epoch_and_a_drop_is_one_the_workers_act_on() {
        let board = Disruptions::new();
        assert_eq!(board.latest(), (0, NONE));
        let restart = board.begin(DisruptionKind::Restart, 5_000_000);
        assert_eq!((restart, board.latest()), (1, (1, (5_000_000))));
        assert_eq!(board.drop_epoch(), 0);
        assert!(!board.done(restart));
        let event = DisruptionEvent {
            kind: "restart".into(),
            at_s: 5.0,
            took_s: Some(0.2),
            start_s: Some(0.1),
            failed: None,
        };
        board.end(restart, event.clone());
        assert!(board.done(restart));
        let drop = board.begin(DisruptionKind::Drop, 9_000_000);
        assert_eq!(board.drop_epoch(), drop);
        assert!(!board.done(drop), "a later disruption is not done with an earlier one");
        assert_eq!(board.events(), [event]);
    }
}
