//! How a worker's connections come and go: opened when the pacer says they are due (at
//! most [`MAX_CONNECTING`] at a time), timed out, upgraded, broken or dropped, and with
//! `--reconnect` scheduled to be opened again. The event loop in `worker.rs` calls in here
//! whenever a connection changes state; the per-message work is the workload's.

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::{MAX_CONNECTING, Worker};
use crate::engine::conn::State;
use crate::engine::dial;
use crate::engine::handshake_failure::HandshakeFailure;
use crate::metrics::record_us;

impl Worker {
    /// Opens the connections, and reopens the lost ones, due by `now` (no more than
    /// [`MAX_CONNECTING`] connecting at once); once every connection has been tried, tells
    /// the coordinator this worker is connected.
    pub(super) fn open_due_connections(&mut self, now: Instant) {
        while self.connecting < MAX_CONNECTING && !self.control.stopping() {
            let Some(index) = self.pacer.pop_due_connection(now) else { break };
            self.rec.metrics.counters.connections_attempted += 1;
            let started = match self.phases.connect_from_due {
                true => self.pacer.connection_due(index).min(now),
                false => now,
            };
            self.connect(index, started);
        }
        while self.connecting < MAX_CONNECTING && !self.control.stopping() {
            let Some(index) = self.pacer.reconnects.pop_due(now) else { break };
            self.rec.reconnect_attempt(now);
            self.rec.metrics.counters.connections_attempted += 1;
            self.connect(index, now);
        }
        if !self.reported_connected
            && self.pacer.all_connections_started()
            && self.connecting == 0
            && self.workload.settled()
        {
            self.reported_connected = true;
            self.control.workers_connected.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Connection stages: the connections whose close fell due are closed cleanly, as the
    /// load's own closes (close 1000; the server's answer counted as `closes_answered`, or
    /// its absence past the close timeout as `close_unanswered`). Replies already on their
    /// way still count: they arrive before the server's close frame.
    pub(super) fn close_due_connections(&mut self, now: Instant) {
        let mut closing = Vec::new();
        while let Some(index) = self.pacer.pop_due_close(now) {
            closing.push(index);
        }
        if closing.is_empty() {
            return;
        }
        let keys: Vec<usize> = self
            .conns
            .iter()
            .filter(|(_, conn)| conn.state == State::Open && closing.contains(&conn.index))
            .map(|(key, _)| key)
            .collect();
        for key in keys {
            self.close_session(key, now);
            let conn = &mut self.conns[key];
            conn.start_close(true);
            self.timers.close_deadline(conn.slot, conn.started, now);
            self.flush(key);
        }
    }

    /// Starts connection `index`; a failed start is counted and, with `--reconnect`, retried.
    fn connect(&mut self, index: u64, now: Instant) {
        let key = self.conns.vacant_key();
        let registered =
            self.dial.open(&self.job, index, now, key, &mut self.carriers).and_then(|mut conn| {
                conn.slot = key;
                if let Some(socket) = conn.transport.socket() {
                    self.io.register(key, socket)?;
                }
                Ok(self.conns.insert(conn))
            });
        self.watch_new_carriers();
        match registered {
            Ok(key) => {
                self.connecting += 1;
                self.pacer.watch_connect(key, now);
            }
            Err(error) => {
                dial::count_error(&mut self.rec.metrics.counters, &error);
                self.reconnect_later(index);
            }
        }
    }

    /// A readiness event on a connection still connecting. Returns true once the TCP
    /// connect has completed (the connection moves on to the upgrade); false while it is
    /// in progress, or when it failed (then it is counted and dropped).
    pub(super) fn finish_connect(&mut self, key: usize) -> bool {
        match self.dial.connected(&mut self.conns[key]) {
            Ok(true) => {
                self.conns[key].state = State::Upgrading;
                self.rec.metrics.counters.tcp_connections += 1;
                true
            }
            Ok(false) => false,
            Err(error) => {
                dial::count_error(&mut self.rec.metrics.counters, &error);
                self.drop_conn(key);
                false
            }
        }
    }

    /// Drops connect attempts still unfinished at their deadline: a TCP connect counts as a
    /// connect timeout, a TLS or upgrade handshake as a handshake failure.
    pub(super) fn expire_connects(&mut self, now: Instant) {
        while let Some((key, started)) = self.pacer.pop_expired_connect(now) {
            let Some(conn) = self.conns.get(key).filter(|c| c.started == started) else { continue };
            match conn.state {
                State::Connecting => {
                    self.rec.metrics.counters.connect_timeouts += 1;
                    self.drop_conn(key);
                }
                State::Upgrading => {
                    let failure = match &conn.preflight {
                        Some(preflight) => {
                            HandshakeFailure::of_preflight(preflight.unanswered(&conn.input, false))
                        }
                        None => HandshakeFailure::timed_out(&conn.input, &conn.key),
                    };
                    self.on_refused(key, failure);
                }
                // Upgraded, but the message protocol's own opening did not finish in time.
                State::Opening => self.on_refused(key, HandshakeFailure::of("protocol_timeout")),
                State::Open | State::Closing => {}
            }
        }
    }

    /// The server accepted the upgrade: the connection is open and may start sending.
    pub(super) fn on_open(&mut self, key: usize, now: Instant) {
        let conn = &mut self.conns[key];
        conn.state = State::Open;
        conn.release_handshake();
        let started = conn.started;
        self.connecting -= 1;
        self.open += 1;
        self.control.open_connections.fetch_add(1, Ordering::Relaxed);
        self.rec.metrics.counters.connections_established += 1;
        if let Some(outage) = self.pacer.reconnects.reopened(conn.index) {
            self.came_back(outage, now);
        }
        record_us(&mut self.rec.metrics.connect, now.duration_since(started).as_micros() as u64);
        self.hook(key, |workload, cx, conn| workload.on_open(cx, conn, now));
        // Once the worker has started traffic; until then the loop starts it for every open
        // connection at once (asking the flag here as well started some connections twice).
        if self.traffic_started {
            self.start_traffic(key, now);
        }
        self.io.opened(key);
    }

    /// The handshake failed: counted by its cause, and the connection dropped.
    pub(super) fn on_refused(&mut self, key: usize, failure: HandshakeFailure) {
        if let (Some(pause), Some(conn)) = (failure.retry_after, self.conns.get(key)) {
            // The server asked for a pause before the next attempt (503 with Retry-After).
            let now = Instant::now();
            let pause = pause.min(crate::engine::reconnects::MAX_RETRY_AFTER);
            self.pacer.reconnects.not_before(conn.index, now + pause, now);
        }
        let counters = &mut self.rec.metrics.counters;
        counters.count_handshake_failure(&failure.cause, failure.response.as_deref());
        self.drop_conn(key);
    }

    /// The connection ended without a close frame from the server.
    pub(super) fn on_broken(&mut self, key: usize) {
        let Some(conn) = self.conns.get(key) else { return };
        let counters = &mut self.rec.metrics.counters;
        match conn.state {
            State::Connecting => counters.connect_errors += 1,
            State::Upgrading => {
                let failure = match &conn.preflight {
                    Some(preflight) => {
                        HandshakeFailure::of_preflight(preflight.unanswered(&conn.input, true))
                    }
                    None => HandshakeFailure::ended(&conn.input, &conn.key),
                };
                return self.on_refused(key, failure);
            }
            State::Opening => {
                self.session_ended_early(key, None);
                return self.on_refused(key, HandshakeFailure::of("protocol_closed"));
            }
            State::Open => {
                counters.resets += 1;
                super::ending::count_unanswered(counters, self.workload.as_mut(), conn);
            }
            State::Closing if conn.closing_by_load => {
                counters.closes_unanswered += 1;
                self.workload.on_closed(conn, false);
            }
            State::Closing => {}
        }
        self.drop_conn(key);
    }

    /// The upgrade goes on a new connection to the server (the one its protocol's request
    /// went on closes): the old socket is let go, a new one connects (its connect timeout
    /// the same, from the first connect on), and the upgrade request queued goes out once
    /// it is connected; a connect that fails at once is counted by its cause.
    pub(super) fn redial(&mut self, key: usize) {
        let Some(conn) = self.conns.get_mut(key) else { return };
        self.io.forget(key, conn.transport.socket());
        let reopened = self.dial.redial(&self.job, conn).and_then(|()| match conn.transport.socket() {
            Some(socket) => self.io.register(key, socket),
            None => Ok(()),
        });
        match reopened {
            Ok(()) => {
                conn.state = State::Connecting;
                conn.input.clear();
            }
            Err(error) => {
                dial::count_error(&mut self.rec.metrics.counters, &error);
                self.drop_conn(key);
            }
        }
    }

    /// With `--reconnect`, schedules connection `index` to be opened again.
    pub(super) fn reconnect_later(&mut self, index: u64) {
        if !self.control.stopping() {
            self.pacer.reconnects.lost(index, Instant::now());
        }
    }

    /// Forgets a connection (its socket closes as it drops) and, unless we closed it at
    /// the end of the run, schedules it to be reopened.
    pub(super) fn drop_conn(&mut self, key: usize) {
        if let Some(mut conn) = self.conns.try_remove(key) {
            self.io.forget(key, conn.transport.socket());
            if let Some((carrier, stream)) = conn.transport.carried() {
                self.let_go(carrier, stream, &mut conn);
            }
            self.rec.sent(conn.ledger.take_written());
            let unsent = conn.take_unsent(self.workload.batch());
            self.rec.metrics.counters.messages_unsent += unsent;
            if matches!(conn.state, State::Open | State::Closing) {
                let held_back = self.workload.held_back(&conn);
                self.rec.metrics.counters.messages_unsent += held_back;
                self.rec.metrics.counters.unsent_requests += held_back;
                self.workload.on_drop(&conn);
            }
            if conn.state != State::Closing {
                // Lost, not closed by us at the end of the run.
                self.reconnect_later(conn.index);
            }
            match conn.state {
                State::Connecting | State::Upgrading | State::Opening => self.connecting -= 1,
                State::Open | State::Closing => {
                    self.open -= 1;
                    self.control.open_connections.fetch_sub(1, Ordering::Relaxed);
                    if conn.closing_by_load {
                        self.control.closed_by_load.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }
    }
}
