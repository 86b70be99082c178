//! The end of a worker's run: the drain (replies still in flight get their time, up to the
//! workload's drain), then close 1000 on every connection, and what each connection leaves
//! counted once: requests still awaited are unanswered (`unanswered_at_end`), requests
//! still queued or held back are unsent, a close the load started and the server never
//! answered is `close_unanswered`.

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::{CLOSE_WAIT, Worker};
use crate::engine::conn::{ClientConn, State};
use crate::engine::workload::Workload;
use crate::metrics::Counters;

/// `conn`'s requests in flight will not be answered (its connection went, or the run
/// ended): the workload forgets them, and they count as unanswered but for those still
/// queued, which the socket never took: those are unsent requests (the socket's
/// `messages_unsent` counts them when the connection goes, with anything else queued).
/// Requests are queued in the order they are made, so the queued ones are the newest in
/// flight. Returns the unanswered ones.
pub(super) fn count_unanswered(
    counters: &mut Counters,
    workload: &mut dyn Workload,
    conn: &ClientConn,
) -> u64 {
    let queued = conn.unsent(workload.batch());
    let in_flight = workload.unanswered(conn);
    let unsent = queued.min(in_flight);
    counters.unsent_requests += unsent;
    counters.messages_unanswered += in_flight - unsent;
    in_flight - unsent
}

impl Worker {
    /// A connection still there when the worker stops: what it had outstanding is
    /// unanswered, and a close the load started was not answered.
    pub(super) fn count_left_open(&mut self, key: usize) {
        let conn = &mut self.conns[key];
        let written = conn.ledger.take_written();
        self.rec.sent(written);
        if !matches!(conn.state, State::Open | State::Closing) {
            self.rec.metrics.counters.messages_unsent += conn.take_unsent(self.workload.batch());
            return;
        }
        self.count_unanswered_at_end(key);
        let conn = &mut self.conns[key];
        let counters = &mut self.rec.metrics.counters;
        let held_back = self.workload.held_back(conn);
        counters.messages_unsent += conn.take_unsent(self.workload.batch()) + held_back;
        counters.unsent_requests += held_back;
        if conn.state == State::Closing && conn.closing_by_load {
            self.rec.metrics.counters.closes_unanswered += 1;
            self.workload.on_closed(conn, false);
        }
    }

    /// Handles the end of the run. Returns true when the worker is done.
    pub(super) fn finish_phase(&mut self, now: Instant) -> bool {
        if !self.control.stopping() {
            return false;
        }
        let draining_since = *self.draining_since.get_or_insert(now);
        let busy = self.workload.busy(now);
        let drain = self.workload.drain();
        let drain = if self.control.interrupted.load(Ordering::Relaxed) { drain / 5 } else { drain };
        if self.closing_since.is_none() && (!busy || now >= draining_since + drain) {
            self.cut_off = busy.then_some(now);
            self.closing_since = Some(now);
            let keys: Vec<usize> = self.conns.iter().map(|(k, _)| k).collect();
            for key in keys {
                self.start_close(key);
            }
        }
        match self.closing_since {
            Some(since) => self.conns.is_empty() || now >= since + CLOSE_WAIT,
            None => false,
        }
    }

    /// End of run: count what is unanswered and send close 1000.
    fn start_close(&mut self, key: usize) {
        let conn = &mut self.conns[key];
        if conn.state != State::Open {
            if matches!(conn.state, State::Connecting | State::Upgrading | State::Opening) {
                self.rec.metrics.counters.connects_unfinished += 1;
                self.drop_conn(key);
            }
            return;
        }
        self.count_unanswered_at_end(key);
        self.close_session(key, Instant::now());
        self.conns[key].start_close(false);
        self.flush(key);
    }

    /// The run ended with `key` open: what it had sent and still awaited is unanswered, an
    /// error of its own (the drain gave the server its time).
    fn count_unanswered_at_end(&mut self, key: usize) {
        let counters = &mut self.rec.metrics.counters;
        counters.unanswered_at_end += count_unanswered(counters, self.workload.as_mut(), &self.conns[key]);
    }
}
