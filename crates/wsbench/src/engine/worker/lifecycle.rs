//! How a worker's connections come and go: opened when the pacer says they are due (at
//! most [`MAX_CONNECTING`] at a time), timed out, upgraded, broken or dropped, and with
//! `--reconnect` scheduled to be opened again. The event loop in `worker.rs` calls in here
//! whenever a connection changes state; the per-message work is in `traffic.rs`.

use std::sync::atomic::Ordering;
use std::time::Instant;

use mio::{Interest, Token};

use super::{MAX_CONNECTING, Worker};
use crate::config::Scenario;
use crate::engine::conn::State;
use crate::engine::connect;
use crate::engine::handshake_failure::HandshakeFailure;
use crate::metrics::record_us;

impl Worker {
    /// Opens the connections, and reopens the lost ones, due by `now` (no more than
    /// [`MAX_CONNECTING`] connecting at once); once every connection has been tried, tells
    /// the coordinator this worker is connected.
    pub(super) fn open_due_connections(&mut self, now: Instant) {
        while self.connecting < MAX_CONNECTING && !self.control.stopping() {
            let Some(index) = self.pacer.pop_due_connection(now) else { break };
            self.traffic.metrics.counters.connections_attempted += 1;
            // churn: connect time counts from when the connection was due.
            let started = match self.spec.load.scenario {
                Scenario::Churn => self.pacer.connection_due(index).min(now),
                _ => now,
            };
            self.connect(index, started);
        }
        while self.connecting < MAX_CONNECTING && !self.control.stopping() {
            let Some(index) = self.pacer.pop_due_reconnect(now) else { break };
            self.traffic.metrics.counters.reconnections += 1;
            self.traffic.metrics.counters.connections_attempted += 1;
            self.connect(index, now);
        }
        let subscribing = self.traffic.pubsub.as_ref().is_some_and(|p| p.awaiting > 0);
        if !self.reported_connected
            && self.pacer.all_connections_started()
            && self.connecting == 0
            && !subscribing
        {
            self.reported_connected = true;
            self.control.workers_connected.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Starts connection `index`; a failed start is counted and, with `--reconnect`, retried.
    fn connect(&mut self, index: u64, now: Instant) {
        let registered = connect::open(&self.spec, index, now).and_then(|mut conn| {
            let entry = self.conns.vacant_entry();
            let key = entry.key();
            conn.slot = key;
            let interest = Interest::READABLE | Interest::WRITABLE;
            self.poll.registry().register(conn.transport.socket(), Token(key), interest)?;
            entry.insert(conn);
            Ok(key)
        });
        match registered {
            Ok(key) => {
                self.connecting += 1;
                self.pacer.watch_connect(key, now);
            }
            Err(error) => {
                connect::count_error(&mut self.traffic.metrics.counters, &error);
                self.reconnect_later(index);
            }
        }
    }

    /// A readiness event on a connection still connecting. Returns true once the TCP
    /// connect has completed (the connection moves on to the upgrade); false while it is
    /// in progress, or when it failed (then it is counted and dropped).
    pub(super) fn finish_connect(&mut self, key: usize) -> bool {
        match connect::connected(self.conns[key].transport.socket()) {
            Ok(true) => {
                self.conns[key].state = State::Upgrading;
                true
            }
            Ok(false) => false,
            Err(error) => {
                connect::count_error(&mut self.traffic.metrics.counters, &error);
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
                    self.traffic.metrics.counters.connect_timeouts += 1;
                    self.drop_conn(key);
                }
                State::Upgrading => {
                    let failure = HandshakeFailure::timed_out(&conn.input, &conn.key);
                    self.on_refused(key, failure);
                }
                State::Open | State::Closing => {}
            }
        }
    }

    /// The server accepted the upgrade: the connection is open and may start sending.
    pub(super) fn on_open(&mut self, key: usize, now: Instant) {
        let conn = &mut self.conns[key];
        conn.state = State::Open;
        self.connecting -= 1;
        self.open += 1;
        self.control.open_connections.fetch_add(1, Ordering::Relaxed);
        self.traffic.metrics.counters.connections_established += 1;
        record_us(&mut self.traffic.metrics.connect, now.duration_since(conn.started).as_micros() as u64);
        if let Some(pubsub) = self.traffic.pubsub.as_mut() {
            pubsub.on_open(conn, now);
        }
        // Once the worker has started traffic; until then the loop starts it for every open
        // connection at once (asking the flag here as well started some connections twice).
        if self.traffic_started {
            self.start_traffic(key, now);
        }
        if self.ring.is_some() {
            self.opened.push(key);
        }
    }

    /// The handshake failed: counted by its cause, and the connection dropped.
    pub(super) fn on_refused(&mut self, key: usize, failure: HandshakeFailure) {
        let counters = &mut self.traffic.metrics.counters;
        counters.count_handshake_failure(&failure.cause, failure.response.as_deref());
        self.drop_conn(key);
    }

    /// The connection ended without a close frame from the server.
    pub(super) fn on_broken(&mut self, key: usize) {
        let Some(conn) = self.conns.get(key) else { return };
        let counters = &mut self.traffic.metrics.counters;
        match conn.state {
            State::Connecting => counters.connect_errors += 1,
            State::Upgrading => return self.on_refused(key, HandshakeFailure::ended(&conn.input, &conn.key)),
            State::Open => {
                counters.resets += 1;
                counters.messages_unanswered += conn.in_flight.len() as u64;
            }
            State::Closing if conn.churn_closing => counters.closes_unanswered += 1,
            State::Closing => {}
        }
        self.drop_conn(key);
    }

    /// flow: connections whose sleep or expectation ended go on with their steps.
    pub(super) fn wake_flows(&mut self, now: Instant) {
        while let Some((key, started)) = self.traffic.flow_timers.pop_due(now) {
            let Some(conn) = self.conns.get_mut(key).filter(|c| c.started == started) else { continue };
            if conn.state != State::Open {
                continue;
            }
            if let Some(mut flow) = self.traffic.flow_context(now) {
                flow.wake(conn, now);
            }
            self.flush(key);
        }
    }

    /// churn: closes the server has not answered in time are counted and dropped.
    pub(super) fn expire_closes(&mut self, now: Instant) {
        while let Some((key, started)) = self.traffic.closes.pop_expired(now) {
            let Some(conn) = self.conns.get(key).filter(|c| c.started == started) else { continue };
            if conn.state == State::Closing && conn.churn_closing {
                self.traffic.metrics.counters.closes_unanswered += 1;
                self.drop_conn(key);
            }
        }
    }

    /// pubsub: subscriptions the server has not acknowledged in time fail.
    pub(super) fn expire_subscriptions(&mut self, now: Instant) {
        if let Some(pubsub) = self.traffic.pubsub.as_mut() {
            pubsub.expire(now, &mut self.traffic.metrics.counters.pubsub);
        }
    }

    /// With `--reconnect`, schedules connection `index` to be opened again.
    pub(super) fn reconnect_later(&mut self, index: u64) {
        if self.spec.load.reconnect && !self.control.stopping() {
            self.pacer.reconnect_later(index, Instant::now());
        }
    }

    /// Forgets a connection (its socket closes as it drops) and, unless we closed it at
    /// the end of the run, schedules it to be reopened.
    pub(super) fn drop_conn(&mut self, key: usize) {
        if let Some(mut conn) = self.conns.try_remove(key) {
            if let Some(ring) = self.ring.as_mut() {
                ring.forget(key);
            }
            let _ = self.poll.registry().deregister(conn.transport.socket());
            if let Some(pubsub) = self.traffic.pubsub.as_mut() {
                pubsub.on_drop(conn.index);
            }
            if conn.state != State::Closing {
                // Lost, not closed by us at the end of the run.
                self.reconnect_later(conn.index);
            }
            match conn.state {
                State::Connecting | State::Upgrading => self.connecting -= 1,
                State::Open | State::Closing => {
                    self.open -= 1;
                    self.control.open_connections.fetch_sub(1, Ordering::Relaxed);
                }
            }
        }
    }
}
