//! A worker's side of a recovery run (`--disrupt`): a disruption the session began opens a
//! recovery window; every connection this worker loses in it is followed until it is open
//! again (from the disruption, and from its own loss: [`RecoveryTally`]), and the failures
//! of the attempts to reopen it are taken out of the run's errors into the recovery's (a
//! restart refuses connections by design). The window closes once the disruption's action
//! is over, no connection is down and as many are open as before it; at the run's end one
//! still open closes then, and the connections still down are `not_reconnected`. A `drop`
//! disruption is carried out here: every open connection is cut, with no close frame (a
//! reset), as a network partition would.
//!
//! [`RecoveryTally`]: crate::metrics::RecoveryTally

use std::time::{Duration, Instant};

use super::Worker;
use crate::engine::conn::State;
use crate::engine::reconnects::Outage;
use crate::metrics::Counters;

/// What a worker has seen of the run's disruptions.
#[derive(Debug, Default)]
pub(super) struct RecoveryWatch {
    /// The latest disruption and `drop` this worker acted on.
    seen: u64,
    seen_drop: u64,
    window: Option<Window>,
}

/// A recovery under way.
#[derive(Debug)]
struct Window {
    /// The first disruption of the window, and the latest.
    began: Instant,
    latest: Instant,
    epoch: u64,
    /// The connection failures counted before it (what it counts is taken from there).
    failures_before: Counters,
    /// Connections open when it began.
    open_before: u64,
    /// The last look found it recovered: a second look a second later closes it (what a
    /// disruption does may reach this worker's sockets after its action is over).
    looked_recovered: bool,
}

impl Worker {
    /// Once per loop turn: a disruption begun since the last look opens (or extends) the
    /// window; a `drop` cuts every connection.
    pub(super) fn watch_disruptions(&mut self, now: Instant) {
        let board = &self.job.disruptions;
        let (epoch, began_us) = board.latest();
        if epoch != self.recovery.seen {
            self.recovery.seen = epoch;
            let began = self.control.start + Duration::from_micros(began_us);
            match &mut self.recovery.window {
                Some(window) => (window.epoch, window.latest) = (epoch, began),
                None => {
                    self.recovery.window = Some(Window {
                        began,
                        latest: began,
                        epoch,
                        failures_before: self.rec.metrics.counters.connection_failures(),
                        open_before: self.open,
                        looked_recovered: false,
                    })
                }
            }
        }
        let drop = board.drop_epoch();
        if drop != self.recovery.seen_drop {
            self.recovery.seen_drop = drop;
            self.drop_every_connection(now);
        }
    }

    /// A lost connection is open again (`outage`): counted in the recovery when it was lost
    /// in its window.
    pub(super) fn came_back(&mut self, outage: Outage, now: Instant) {
        let Some(window) = &self.recovery.window else { return };
        if outage.lost_at < window.began {
            return;
        }
        let from = if outage.lost_at >= window.latest { window.latest } else { window.began };
        let micros = |since: Instant| now.saturating_duration_since(since).as_micros() as u64;
        self.rec.metrics.recovery.came_back(micros(from), micros(outage.lost_at), outage.attempts);
    }

    /// Once a second: a window whose disruption is over, with every connection back at two
    /// looks in a row, closes.
    pub(super) fn check_recovered(&mut self) {
        let Some(window) = &mut self.recovery.window else { return };
        let recovered = self.job.disruptions.done(window.epoch)
            && self.pacer.reconnects.down() == 0
            && self.open >= window.open_before;
        if recovered && window.looked_recovered {
            self.close_window();
        } else {
            window.looked_recovered = recovered;
        }
    }

    /// The run is over: connections still down are `not_reconnected` (those lost in the
    /// window are the recovery's `not_back` too), and a window still open closes.
    pub(super) fn end_recovery(&mut self) {
        let down = self.pacer.reconnects.down() as u64;
        self.rec.metrics.counters.not_reconnected += down;
        if let Some(window) = &self.recovery.window {
            let reconnects = &self.pacer.reconnects;
            let not_back: Vec<u64> = reconnects
                .outages()
                .filter(|(_, outage)| outage.lost_at >= window.began)
                .map(|(&index, _)| index)
                .collect();
            let recovery = &mut self.rec.metrics.recovery;
            recovery.not_back += not_back.len() as u64;
            // Their attempts count too: every attempt made is in `attempts`, back or not.
            recovery.attempts += reconnects.attempts_made(&not_back);
        }
        self.close_window();
    }

    /// The window's failures move from the run's errors to the recovery's.
    fn close_window(&mut self) {
        let Some(window) = self.recovery.window.take() else { return };
        let failures = self.rec.metrics.counters.take_failures_since(&window.failures_before);
        let recovery = &mut self.rec.metrics.recovery;
        for (kind, count) in failures.into_iter().filter(|(_, count)| *count > 0) {
            *recovery.failures.entry(kind).or_default() += count;
        }
    }

    /// Cuts every open connection with its own socket, no close frame (the server sees a
    /// reset): each is lost, and reopened by the policy.
    fn drop_every_connection(&mut self, now: Instant) {
        let open: Vec<usize> = self
            .conns
            .iter()
            .filter(|(_, conn)| conn.state == State::Open && conn.transport.carried().is_none())
            .map(|(key, _)| key)
            .collect();
        for key in open {
            let conn = &mut self.conns[key];
            if let Some(socket) = conn.transport.socket() {
                // A reset, not a FIN: the partition gives the server no goodbye either.
                let _ = socket2::SockRef::from(&*socket).set_linger(Some(Duration::ZERO));
            }
            let conn = &self.conns[key];
            super::ending::count_unanswered(&mut self.rec.metrics.counters, self.workload.as_mut(), conn);
            self.rec.metrics.recovery.dropped += 1;
            self.drop_conn(key);
        }
        let _ = now;
    }
}
