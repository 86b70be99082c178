//! The worker's side of WebSockets that share a connection (a `dial::Carrier`, e.g. an
//! HTTP/2 or HTTP/3 connection): the carrier's readiness handed to it, the output its WebSockets
//! wrote this turn handed to it once before the wait (one socket write for all of them), its
//! timers run when due,
//! and what it reports acted on exactly as for a WebSocket with a socket of its own —
//! upgraded, refused by cause, bytes to decode, ended (by the server, or by a stream reset
//! or lost connection, counted by cause). Names no transport.

use std::time::Instant;

use super::Worker;
use crate::engine::conn::{ClientConn, State};
use crate::engine::dial::{self, Carrier, CarrierCx, StreamEvent};
use crate::engine::handshake_failure::{HandshakeFailure, Upgrade};

/// Rounds of carrier flushes before a wait: what one round's events wrote goes out in the
/// next.
const FLUSH_ROUNDS: usize = 8;

impl Worker {
    /// Carrier `key`'s socket is ready.
    pub(super) fn on_carrier(&mut self, key: usize) {
        self.watch_new_carriers();
        self.with_carrier(key, |carrier, cx, events| carrier.on_ready(cx, events));
    }

    /// Runs the carriers' timers that fell due by `now` (each carrier once a turn).
    pub(super) fn fire_carrier_timers(&mut self, now: Instant) {
        if self.carriers.is_empty() {
            return;
        }
        for key in self.carriers.keys() {
            if self.carriers.get_mut(key).and_then(|c| c.next_timer()).is_some_and(|at| at <= now) {
                self.with_carrier(key, |carrier, cx, events| carrier.on_timer(cx, events));
            }
        }
    }

    /// Lets carrier `key` work (`work`), then acts on what it said and drops it if over.
    fn with_carrier(
        &mut self,
        key: usize,
        work: impl FnOnce(&mut dyn Carrier, &mut CarrierCx<'_>, &mut Vec<StreamEvent>),
    ) {
        let mut events = std::mem::take(&mut self.carrier_events);
        if let Some(carrier) = self.carriers.get_mut(key) {
            let mut cx = CarrierCx {
                job: &self.job,
                conns: &mut self.conns,
                counters: &mut self.rec.metrics.counters,
                batch: self.workload.batch(),
                now: Instant::now(),
            };
            work(carrier, &mut cx, &mut events);
        }
        self.on_stream_events(&mut events);
        self.carrier_events = events;
        if self.carriers.get_mut(key).is_some_and(|c| c.has_work_left()) {
            self.carriers.touch(key);
        }
        self.drop_carrier_if_over(key);
    }

    /// Hands the output the carried WebSockets wrote to their carriers, which send it.
    pub(super) fn flush_carriers(&mut self) {
        self.watch_new_carriers();
        let mut dirty = Vec::new();
        for _ in 0..FLUSH_ROUNDS {
            self.carriers.take_dirty(&mut dirty);
            if dirty.is_empty() {
                return;
            }
            for key in dirty.drain(..) {
                self.with_carrier(key, |carrier, cx, events| carrier.flush(cx, events));
            }
        }
    }

    /// Watches the sockets of carriers opened since the last call.
    pub(super) fn watch_new_carriers(&mut self) {
        while let Some(key) = self.carriers.take_unwatched() {
            let Some(carrier) = self.carriers.get_mut(key) else { continue };
            if self.io.register_carrier(key, carrier.socket()).is_err() {
                // Its WebSockets time out connecting, as on a socket that never connects.
                continue;
            }
        }
    }

    /// WebSocket `conn`, carried on stream `stream` of carrier `carrier`, is gone: what it
    /// still had to send (its close frame) goes out and its stream ends.
    pub(super) fn let_go(&mut self, carrier: usize, stream: usize, conn: &mut ClientConn) {
        let mut last = Vec::new();
        conn.take_pending(self.workload.batch(), &mut last);
        while conn.has_pending() {
            conn.take_pending(self.workload.batch(), &mut last);
        }
        conn.ledger.send_done();
        if let Some(c) = self.carriers.get_mut(carrier) {
            c.detach(stream, &last);
            self.carriers.touch(carrier);
        }
    }

    /// Drops carrier `key` once it is over.
    fn drop_carrier_if_over(&mut self, key: usize) {
        if self.carriers.get_mut(key).is_some_and(|c| c.is_over())
            && let Some(mut carrier) = self.carriers.remove(key)
        {
            self.io.forget_carrier(carrier.socket());
        }
    }

    /// Acts on what carriers said about their WebSockets.
    fn on_stream_events(&mut self, events: &mut Vec<StreamEvent>) {
        let now = Instant::now();
        for event in events.drain(..) {
            match event {
                StreamEvent::Upgrading(key) => {
                    if let Some(conn) = self.conns.get_mut(key).filter(|c| c.state == State::Connecting) {
                        conn.state = State::Upgrading;
                    }
                }
                StreamEvent::Answered(key, Upgrade::Accepted(_)) if self.conns.contains(key) => {
                    if self.start_session(key, now) {
                        self.on_open(key, now);
                    }
                    self.flush(key);
                }
                StreamEvent::Answered(key, Upgrade::Refused(failure))
                | StreamEvent::Refused(key, failure)
                    if self.conns.contains(key) =>
                {
                    self.on_refused(key, failure)
                }
                StreamEvent::Data(key, data) if self.conns.contains(key) => self.carried_data(key, &data),
                StreamEvent::Ended(key, None) => self.on_broken(key),
                StreamEvent::Ended(key, Some(cause)) => self.on_lost(key, &cause),
                StreamEvent::ConnectFailed(key, error) if self.conns.contains(key) => {
                    dial::count_error(&mut self.rec.metrics.counters, &error);
                    self.drop_conn(key);
                }
                _ => {}
            }
        }
    }

    /// Bytes of a carried WebSocket's frames: decoded as if read from its own socket.
    fn carried_data(&mut self, key: usize, data: &[u8]) {
        let mut buf = std::mem::take(&mut self.read_buf);
        for piece in data.chunks(buf.len()) {
            buf[..piece.len()].copy_from_slice(piece);
            if !self.received(key, &mut buf[..piece.len()], None) {
                break;
            }
        }
        self.read_buf = buf;
        self.flush(key);
    }

    /// A carried WebSocket ended by `cause` (its stream reset, its connection lost): before
    /// it opened, a failed handshake by that cause; after, an error of that kind.
    fn on_lost(&mut self, key: usize, cause: &str) {
        let Some(conn) = self.conns.get(key) else { return };
        match conn.state {
            State::Connecting | State::Upgrading | State::Opening => {
                self.on_refused(key, HandshakeFailure::of(cause));
            }
            State::Open => {
                let counters = &mut self.rec.metrics.counters;
                *counters.transport_errors_by_cause.entry(cause.to_owned()).or_default() += 1;
                super::ending::count_unanswered(counters, self.workload.as_mut(), conn);
                self.drop_conn(key);
            }
            State::Closing => self.on_broken(key),
        }
    }
}
