//! A connection's message protocol, driven by the worker: the session made when the upgrade
//! is accepted and its own opening sent (the connection counts as established once the
//! session is ready: MQTT's CONNACK, graphql-ws's connection_ack), every whole message from
//! the server read by it, its heartbeats woken on its schedule, its errors counted by
//! cause (and the connection closed when one is fatal), and what the protocol sends before
//! the close at the end. What the session reads for the load goes to the workload.

use std::time::Instant;

use wsbench_proto::{CloseCode, OpCode};

use super::Worker;
use crate::engine::conn::{ClientConn, State};
use crate::engine::recorder::Recorder;
use crate::engine::workload::{Cx, Workload};
use crate::protocol::{Incoming, Outbox, Sink};

/// What the worker does after a session has had its say.
#[derive(Debug, Clone, Copy, Default)]
struct After {
    ready: bool,
    fatal: bool,
}

/// A connection, the workload and the worker's recorder as the session's sink.
struct EngineSink<'a> {
    conn: &'a mut ClientConn,
    workload: &'a mut dyn Workload,
    cx: Cx<'a>,
    now: Instant,
    after: After,
}

impl EngineSink<'_> {
    fn send(&mut self, opcode: OpCode, payload: &[u8]) {
        self.conn.write_message(opcode, rand::random(), payload);
    }
}

impl Outbox for EngineSink<'_> {
    fn text(&mut self, payload: &[u8]) {
        self.send(OpCode::Text, payload);
    }
    fn binary(&mut self, payload: &[u8]) {
        self.send(OpCode::Binary, payload);
    }
}

impl Sink for EngineSink<'_> {
    fn incoming(&mut self, incoming: Incoming<'_>) {
        match incoming {
            Incoming::Ready => self.after.ready = true,
            Incoming::Error { cause, detail, fatal, .. } => {
                self.cx.rec.metrics.counters.count_protocol_error(cause, detail);
                self.after.fatal |= fatal;
            }
            Incoming::Message { error: Some((cause, detail)), .. } => {
                self.cx.rec.metrics.counters.count_protocol_error(cause, detail);
            }
            _ => {}
        }
        let for_workload = !matches!(incoming, Incoming::Ready | Incoming::Other);
        if for_workload && self.conn.state == State::Open {
            self.workload.on_incoming(&mut self.cx, self.conn, incoming, self.now);
        }
    }
}

impl Worker {
    /// The upgrade was accepted: the connection's session is made and sends its opening.
    /// Returns whether it is ready at once (then the connection opens now).
    pub(super) fn start_session(&mut self, key: usize, now: Instant) -> bool {
        let session = self.job.plan.session(self.conns[key].index);
        self.conns[key].passthrough = session.passthrough();
        self.conns[key].session = Some(session);
        let after = self.with_session(key, now, |session, now, sink| session.open(now, sink));
        let ready = after.ready || self.conns[key].session.as_ref().is_some_and(|s| s.ready());
        if !ready {
            self.conns[key].state = State::Opening;
        }
        // Its opening may have a deadline of its own (a server that never answers).
        self.arm_session(key);
        ready
    }

    /// A whole message from the server, read by the connection's session.
    pub(super) fn deliver_to_session(&mut self, key: usize, message: &[u8], binary: bool, now: Instant) {
        let after =
            self.with_session(key, now, |session, now, sink| session.receive(message, binary, now, sink));
        self.after_session(key, after, now);
    }

    /// The session's timer came (a heartbeat to send, or one missed).
    pub(super) fn session_timer(&mut self, key: usize, now: Instant) {
        let Some(conn) = self.conns.get_mut(key) else { return };
        conn.session_timer = None;
        let due = conn.session.as_ref().and_then(|s| s.next_timer()).is_some_and(|at| at <= now);
        let after = match due {
            true => self.with_session(key, now, |session, now, sink| session.on_timer(now, sink)),
            false => After::default(),
        };
        self.after_session(key, after, now);
        self.arm_session(key);
    }

    /// The run ends: what the protocol sends before the close frame.
    pub(super) fn close_session(&mut self, key: usize, now: Instant) {
        self.with_session(key, now, |session, _, sink| session.close(sink));
    }

    /// The server ended a connection whose session was still opening: the session says
    /// why, as its protocol reads it (`close`: the server's close code and reason).
    pub(super) fn session_ended_early(&mut self, key: usize, close: Option<(u16, &str)>) {
        if self.conns.get(key).is_some_and(|conn| conn.state == State::Opening) {
            let explain = |session: &mut dyn crate::protocol::Session, _, sink: &mut EngineSink<'_>| {
                session.ended_while_opening(close, sink)
            };
            self.with_session(key, Instant::now(), explain);
        }
    }

    /// Wakes the session when it asks to be woken next.
    pub(super) fn arm_session(&mut self, key: usize) {
        let Some(conn) = self.conns.get_mut(key) else { return };
        let next = conn.session.as_ref().and_then(|session| session.next_timer());
        if let Some(at) = next
            && conn.session_timer.is_none_or(|armed| at < armed)
        {
            conn.session_timer = Some(at);
            self.timers.session(conn.slot, conn.started, at);
        }
    }

    /// Runs `act` on connection `key`'s session with the connection as its sink.
    fn with_session(
        &mut self,
        key: usize,
        now: Instant,
        act: impl FnOnce(&mut dyn crate::protocol::Session, Instant, &mut EngineSink<'_>),
    ) -> After {
        let Some(conn) = self.conns.get_mut(key) else { return After::default() };
        let Some(mut session) = conn.session.take() else { return After::default() };
        conn.deferred.lent = true;
        let cx = Cx { rec: &mut self.rec, pacer: &mut self.pacer, timers: &mut self.timers };
        let mut sink =
            EngineSink { conn, workload: self.workload.as_mut(), cx, now, after: After::default() };
        act(session.as_mut(), now, &mut sink);
        let after = sink.after;
        conn.session = Some(session);
        conn.deferred.lent = false;
        conn.send_deferred();
        after
    }

    /// A session that became ready opens its connection; one whose error is fatal closes it.
    fn after_session(&mut self, key: usize, after: After, now: Instant) {
        let Some(conn) = self.conns.get_mut(key) else { return };
        if after.fatal {
            if conn.state == State::Open {
                self.rec.metrics.counters.closed_on_protocol_error += 1;
            }
            count_unanswered(&mut self.rec, self.workload.as_mut(), conn);
            conn.write_control(OpCode::Close, &CloseCode::NORMAL.to_be_bytes());
            self.flush(key);
            self.drop_conn(key);
            return;
        }
        if after.ready && conn.state == State::Opening {
            self.on_open(key, now);
        }
        self.arm_session(key);
        self.flush(key);
    }
}

/// What an open connection had outstanding is unanswered.
fn count_unanswered(rec: &mut Recorder, workload: &mut dyn Workload, conn: &ClientConn) {
    if conn.state == State::Open {
        super::ending::count_unanswered(&mut rec.metrics.counters, workload, conn);
    }
}
