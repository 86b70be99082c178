//! The echo loop every request/reply scenario shares (echo, throughput, c10k, churn): each
//! connection keeps its messages outstanding — refilled when an echo returns (closed loop)
//! or sent when the pacer says they are due (open loop, with a backlog when `--in-flight`
//! caps it) — and checks every echo against what it sent: the json-ts sequence number, or
//! the bytes. Over `raw` the echoes come back in order and are checked as they stream (every
//! [`CHECK_EVERY`]th message byte for byte); over a message protocol each request goes
//! through the connection's session and its reply (matched by the request's sequence when
//! the protocol carries one, else the oldest) is checked whole (unless the protocol says its
//! replies are the server's own answers, not echoes), and an error reply frees its request
//! without being a round trip. Per-message work allocates nothing.
//!
//! The reply deadline (`--reply-timeout`): once a second (the worker's tick, never a timer
//! per message) each connection's oldest request is compared with it; requests wait in
//! the order they fell due, so only the head needs looking at. A request unanswered longer
//! than the deadline after it was due is counted `reply_timeout` and forgotten: its latency
//! is never recorded (it would be at least the deadline, a number the server did not earn),
//! and the room it held is freed, so a closed loop goes on sending over a connection that
//! still works, as a wrk user whose request timed out sees the next one go out. An open loop
//! gives up the same way the sends that fell due but were never written (held back by
//! `--in-flight`, or because the socket stopped taking bytes): both queues stay bounded by
//! the rate times the deadline whatever the server does. The deadline counts from when a
//! request was due, as its latency does (coordinated omission corrected), and is met within
//! about a second after it passes. An echo that arrives after its request was forgotten is
//! late: neither a round trip nor a mismatch. What is still in flight at the end, younger
//! than the deadline, is unanswered, not an error.

use std::collections::VecDeque;
use std::time::Instant;

use super::payload::{CHECK_EVERY, Template, json_seq};
use crate::config::LoadSpec;
use crate::engine::conn::{ClientConn, State};
use crate::engine::recorder::Counted;
use crate::engine::workload::{Assembly, Cx, Message, Workload};
use crate::protocol::Incoming;

/// Longest echo of a json-ts message worth reading (the messages are under 64 bytes): a
/// longer one is wrong already, and buffering it would let a hostile server grow the
/// client without bound (cf. CVE-2020-27813).
const MAX_JSON_ECHO: usize = 256;

/// Bytes a connection may have waiting to be written before an open loop holds its next
/// sends back (in the backlog, where the reply deadline can give them up): past it the
/// socket has stopped taking bytes.
const OUTBOX_HOLD_BYTES: usize = 1 << 20;

/// A message in flight.
#[derive(Debug, Clone, Copy)]
struct Sent {
    seq: u64,
    /// When it was meant to be sent, and when it was. In a closed loop the two are the same.
    intended: Instant,
    sent: Instant,
}

/// One connection's messages.
#[derive(Debug, Default)]
pub struct EchoConn {
    /// Messages in flight, oldest first.
    in_flight: VecDeque<Sent>,
    /// Open loop: sends that fell due while `--in-flight` messages were outstanding; they
    /// go out as echoes free room, and their latency counts from the time they were due.
    backlog: VecDeque<Instant>,
    next_seq: u64,
    /// Requests forgotten at the reply deadline whose echoes may still come, in order (over
    /// `raw`, and over a protocol whose replies carry no sequence number): the next that
    /// many echoes are theirs, late.
    late_echoes: u64,
    /// Requests numbered below this that are no longer in flight were forgotten at the reply
    /// deadline: a reply to one is late.
    forgotten_below: u64,
    /// Echoes received.
    pub echoes: u64,
    /// Requests the server answered with an error (over a message protocol).
    pub refused: u64,
    /// Requests sent and given up at the reply deadline.
    pub given_up: u64,
    /// Byte-for-byte check of the echo being received: offset reached, or None if this echo
    /// is not sampled.
    check_offset: Option<usize>,
    check_failed: bool,
    /// A round trip of this connection was measured (counted once per connection).
    in_window: bool,
}

impl EchoConn {
    /// Messages sent and not yet echoed.
    pub fn outstanding(&self) -> u64 {
        self.in_flight.len() as u64
    }

    /// Messages the server answered, with an echo or an error.
    pub fn answered(&self) -> u64 {
        self.echoes + self.refused
    }

    /// Gives up the requests (in flight, or due and not yet sent) that fell due at or before
    /// `deadline`: how many were in flight, and how many not sent.
    fn expire(&mut self, deadline: Instant) -> (u64, u64) {
        let mut in_flight = 0;
        while let Some(sent) = self.in_flight.front()
            && sent.intended <= deadline
        {
            self.forgotten_below = self.forgotten_below.max(sent.seq + 1);
            self.in_flight.pop_front();
            in_flight += 1;
        }
        let mut unsent = 0;
        while self.backlog.front().is_some_and(|&due| due <= deadline) {
            self.backlog.pop_front();
            unsent += 1;
        }
        self.late_echoes += in_flight;
        self.given_up += in_flight;
        (in_flight, unsent)
    }

    /// Whether the next echo (replies in order, no sequence number) answers a request
    /// already forgotten at the reply deadline; it is then taken as that late echo.
    #[inline]
    fn late_echo(&mut self) -> bool {
        let late = self.late_echoes > 0;
        self.late_echoes -= u64::from(late);
        late
    }

    /// The number of the request the next echo in order answers.
    #[inline]
    fn next_echo_seq(&self) -> u64 {
        self.in_flight.front().map_or(self.next_seq, |sent| sent.seq)
    }

    /// Takes the request a reply answers: the one numbered `seq`, or the oldest.
    fn take(&mut self, seq: Option<u64>) -> Option<Sent> {
        match seq {
            None => self.in_flight.pop_front(),
            Some(seq) => {
                let at = self.in_flight.iter().position(|sent| sent.seq == seq)?;
                self.in_flight.remove(at)
            }
        }
    }
}

#[derive(Debug)]
pub struct EchoWorkload {
    template: Template,
    frames_per_send: u64,
    /// `--in-flight`: messages a connection may have outstanding.
    in_flight_cap: u64,
    open_loop: bool,
    /// Messages each connection sends in all (`None`: until the run ends).
    limit: Option<u64>,
    /// Replies over a message protocol carry the payload back and are checked (not when the
    /// protocol says a reply is the server's own answer).
    check_replies: bool,
    /// By slot.
    conns: Vec<Option<EchoConn>>,
    /// Messages outstanding over every connection.
    outstanding: u64,
    /// `--reply-timeout`.
    reply_timeout: std::time::Duration,
}

impl EchoWorkload {
    /// `limit`: messages each connection sends in all, if not unlimited.
    pub fn new(load: &LoadSpec, limit: Option<u64>) -> EchoWorkload {
        EchoWorkload {
            template: Template::new(&load.payload, load.message, load.frames_per_send),
            frames_per_send: load.frames_per_send,
            in_flight_cap: load.in_flight,
            open_loop: load.message_interval.is_some(),
            limit,
            check_replies: crate::protocol::by_name(load.protocol)
                .is_none_or(|protocol| protocol.replies_echo(&load.protocol_options)),
            conns: Vec::new(),
            outstanding: 0,
            reply_timeout: load.reply_timeout,
        }
    }

    /// The messages of the connection at `slot`.
    pub fn conn(&self, slot: usize) -> Option<&EchoConn> {
        self.conns.get(slot)?.as_ref()
    }

    fn has_room(&self, state: &EchoConn) -> bool {
        (state.in_flight.len() as u64).saturating_add(self.frames_per_send) <= self.in_flight_cap
    }

    /// Closed loop: sends batches until the connection has its messages outstanding (and no
    /// more than its limit in all).
    fn fill(&mut self, cx: &mut Cx<'_>, conn: &mut ClientConn, now: Instant) {
        if !cx.rec.sending_allowed(now) {
            return;
        }
        let Some(mut state) = self.conns.get_mut(conn.slot).and_then(Option::take) else { return };
        while conn.state == State::Open
            && self.has_room(&state)
            && self.limit.is_none_or(|limit| state.next_seq < limit)
        {
            self.send_batch(cx, conn, &mut state, now, now);
        }
        self.conns[conn.slot] = Some(state);
    }

    /// Queues one batch (`frames_per_send` messages) that was due at `intended`.
    fn send_batch(
        &mut self,
        cx: &mut Cx<'_>,
        conn: &mut ClientConn,
        state: &mut EchoConn,
        intended: Instant,
        now: Instant,
    ) {
        let frames = self.frames_per_send;
        let first_seq = state.next_seq;
        let (messages, bytes, payload_bytes) = match (&self.template, conn.writes_as_is()) {
            (Template::Fixed { batch, payload, .. }, true) if conn.compression.is_none() => {
                conn.batches_pending += 1;
                state.next_seq += frames;
                (frames, batch.len(), payload.len() * frames as usize)
            }
            (template, false) => {
                let (mut messages, mut bytes, mut payload_bytes) = (0, 0, 0);
                let mut scratch = [0u8; 64];
                for _ in 0..frames {
                    let seq = state.next_seq;
                    let message = template.message(seq, &mut scratch);
                    let (m, b, p) = conn.request(seq, message);
                    (messages, bytes, payload_bytes) =
                        (messages + m, bytes + b as usize, payload_bytes + p as usize);
                    state.next_seq += 1;
                }
                (messages, bytes, payload_bytes)
            }
            (template, true) => {
                let (mask, opcode) = template.mask_opcode();
                let (mut bytes, mut payload_bytes) = (0, 0);
                let mut scratch = [0u8; 64];
                for _ in 0..frames {
                    let message = template.message(state.next_seq, &mut scratch);
                    payload_bytes += message.len();
                    bytes += conn.write_message(opcode, mask, message);
                    state.next_seq += 1;
                }
                (frames, bytes, payload_bytes)
            }
        };
        state.in_flight.extend((first_seq..state.next_seq).map(|seq| Sent { seq, intended, sent: now }));
        self.outstanding += frames;
        cx.rec.sent(messages, bytes as u64, payload_bytes as u64);
        if self.open_loop {
            cx.rec.send_lag(intended, now);
        }
    }

    /// A piece of an echo: checked; on its last piece, the echo is whole. Returns whether
    /// it differed from what was sent, once whole.
    fn check(&self, state: &mut EchoConn, message: Message<'_>) -> Option<bool> {
        match (message, &self.template) {
            (Message::Piece { data, first, last }, Template::Fixed { payload: expected, .. }) => {
                let sampled = state.echoes.is_multiple_of(CHECK_EVERY);
                check_piece(state, expected, sampled, first, last, data)
            }
            (Message::Piece { data, first, last }, Template::Lines { lines, .. }) => {
                let expected = &lines[(state.next_echo_seq() % lines.len() as u64) as usize];
                check_piece(state, expected, true, first, last, data)
            }
            (Message::Whole(data), _) => Some(json_seq(data) != Some(state.next_echo_seq())),
            (Message::Piece { last, .. }, Template::JsonTs { .. }) => last.then_some(true),
            (Message::TooLong, _) => Some(true),
        }
    }

    /// Whether a whole reply over a message protocol carries what request `seq` sent.
    fn reply_matches(&self, seq: u64, reply: &[u8]) -> bool {
        match &self.template {
            Template::JsonTs { .. } => json_seq(reply) == Some(seq),
            template => template.message(seq, &mut [0; 64]) == reply,
        }
    }

    /// A whole echo arrived (answering request `seq`, or the oldest): records its round trip
    /// and sends what may follow.
    fn on_echo(
        &mut self,
        cx: &mut Cx<'_>,
        conn: &mut ClientConn,
        mut state: EchoConn,
        seq: Option<u64>,
        now: Instant,
    ) -> Option<u64> {
        let Some(Sent { seq, intended, sent }) = state.take(seq) else {
            // A late reply to a request forgotten at the deadline, or an echo of nothing we sent.
            if seq.is_none_or(|seq| seq >= state.forgotten_below) {
                cx.rec.metrics.counters.payload_mismatches += 1;
            }
            self.conns[conn.slot] = Some(state);
            return None;
        };
        state.echoes += 1;
        self.outstanding -= 1;
        // Latency counts from when the message was due (coordinated omission corrected);
        // the uncorrected figure from when it actually went out is kept beside it.
        let latency = now.duration_since(intended).as_micros() as u64;
        let uncorrected = self.open_loop.then(|| now.duration_since(sent).as_micros() as u64);
        let counted = cx.rec.counted_at(now);
        if !state.in_window && counted == Counted::Measured {
            state.in_window = true;
            cx.rec.metrics.counters.connections_in_window += 1;
        }
        cx.rec.exchange(now, latency, uncorrected, counted);
        self.send_more(cx, conn, state, now);
        Some(seq)
    }

    /// Open loop: the sends held back go out, oldest first, while the connection can take
    /// them.
    fn send_backlog(&mut self, cx: &mut Cx<'_>, conn: &mut ClientConn, state: &mut EchoConn, now: Instant) {
        while self.can_send(state, conn)
            && let Some(due) = state.backlog.pop_front()
        {
            self.send_batch(cx, conn, state, due, now);
        }
    }

    /// Open loop: whether a send may go out now: room under `--in-flight`, and a socket
    /// that took what was written before (no more than [`OUTBOX_HOLD_BYTES`], or one batch,
    /// still waiting).
    fn can_send(&self, state: &EchoConn, conn: &ClientConn) -> bool {
        let batch = self.batch().len();
        let waiting = conn.output.len().saturating_sub(conn.output_sent)
            + (conn.batches_pending as usize).saturating_mul(batch);
        self.has_room(state) && waiting <= OUTBOX_HOLD_BYTES.max(batch)
    }

    /// A request was answered (room freed): sends what may follow.
    fn send_more(&mut self, cx: &mut Cx<'_>, conn: &mut ClientConn, mut state: EchoConn, now: Instant) {
        if self.open_loop {
            self.send_backlog(cx, conn, &mut state, now);
            self.conns[conn.slot] = Some(state);
        } else {
            self.conns[conn.slot] = Some(state);
            self.fill(cx, conn, now);
        }
    }
}

impl Workload for EchoWorkload {
    fn assembly(&self) -> Assembly {
        match self.template {
            Template::JsonTs { .. } => Assembly::Whole { max: MAX_JSON_ECHO },
            Template::Fixed { .. } | Template::Lines { .. } => Assembly::Pieces,
        }
    }

    #[inline]
    fn batch(&self) -> &[u8] {
        match &self.template {
            Template::Fixed { batch, .. } => batch,
            Template::JsonTs { .. } | Template::Lines { .. } => &[],
        }
    }

    fn on_open(&mut self, _cx: &mut Cx<'_>, conn: &mut ClientConn, _now: Instant) {
        if self.conns.len() <= conn.slot {
            self.conns.resize_with(conn.slot + 1, || None);
        }
        self.conns[conn.slot] = Some(EchoConn::default());
    }

    fn start(&mut self, cx: &mut Cx<'_>, conn: &mut ClientConn, now: Instant) {
        match self.open_loop {
            true => cx.pacer.start_sends(conn.slot, conn.index, conn.started, now),
            false => self.fill(cx, conn, now),
        }
    }

    fn on_due(&mut self, cx: &mut Cx<'_>, conn: &mut ClientConn, due: Instant, now: Instant) {
        let Some(mut state) = self.conns.get_mut(conn.slot).and_then(Option::take) else { return };
        if state.backlog.is_empty() && self.can_send(&state, conn) {
            self.send_batch(cx, conn, &mut state, due, now);
        } else {
            state.backlog.push_back(due);
            self.send_backlog(cx, conn, &mut state, now);
        }
        self.conns[conn.slot] = Some(state);
    }

    /// Requests due longer than `--reply-timeout` ago, answered or sent or not, are given
    /// up (see the module doc); the room they held is used.
    fn expire_requests(&mut self, cx: &mut Cx<'_>, conn: &mut ClientConn, now: Instant) {
        let Some(deadline) = now.checked_sub(self.reply_timeout) else { return };
        let Some(state) = self.conns.get_mut(conn.slot).and_then(Option::as_mut) else { return };
        let late = |at: Option<Instant>| at.is_some_and(|at| at <= deadline);
        if !late(state.in_flight.front().map(|sent| sent.intended)) && !late(state.backlog.front().copied()) {
            return;
        }
        let (in_flight, unsent_batches) = state.expire(deadline);
        self.outstanding -= in_flight;
        cx.rec.metrics.counters.reply_timeouts += in_flight + unsent_batches * self.frames_per_send;
        let Some(state) = self.conns.get_mut(conn.slot).and_then(Option::take) else { return };
        match conn.state {
            State::Open => self.send_more(cx, conn, state, now),
            _ => self.conns[conn.slot] = Some(state),
        }
    }

    #[inline]
    fn on_message(&mut self, cx: &mut Cx<'_>, conn: &mut ClientConn, message: Message<'_>, now: Instant) {
        if conn.state != State::Open {
            return;
        }
        let Some(mut state) = self.conns.get_mut(conn.slot).and_then(Option::take) else { return };
        match self.check(&mut state, message) {
            None => self.conns[conn.slot] = Some(state),
            Some(_) if state.late_echo() => self.conns[conn.slot] = Some(state),
            Some(mismatch) => {
                if mismatch {
                    cx.rec.metrics.counters.payload_mismatches += 1;
                }
                self.on_echo(cx, conn, state, None, now);
            }
        }
    }

    /// A reply or an error reply, as the connection's protocol read it.
    fn on_incoming(&mut self, cx: &mut Cx<'_>, conn: &mut ClientConn, incoming: Incoming<'_>, now: Instant) {
        let Some(mut state) = self.conns.get_mut(conn.slot).and_then(Option::take) else { return };
        match incoming {
            Incoming::Reply { seq: None, .. } if state.late_echo() => self.conns[conn.slot] = Some(state),
            Incoming::Reply { seq, payload } => {
                if let Some(seq) = self.on_echo(cx, conn, state, seq, now)
                    && self.check_replies
                    && !self.reply_matches(seq, payload)
                {
                    cx.rec.metrics.counters.payload_mismatches += 1;
                }
            }
            // The error was counted by its cause; the request it answers is no round trip.
            Incoming::Error { seq: Some(seq), .. } => match state.take(Some(seq)) {
                Some(_) => {
                    state.refused += 1;
                    self.outstanding -= 1;
                    self.send_more(cx, conn, state, now);
                }
                None => self.conns[conn.slot] = Some(state),
            },
            _ => self.conns[conn.slot] = Some(state),
        }
    }

    fn unanswered(&mut self, conn: &ClientConn) -> u64 {
        let Some(state) = self.conns.get_mut(conn.slot).and_then(Option::as_mut) else { return 0 };
        let count = state.outstanding();
        state.in_flight.clear();
        self.outstanding -= count;
        count
    }

    fn on_drop(&mut self, conn: &ClientConn) {
        if let Some(state) = self.conns.get_mut(conn.slot).and_then(Option::take) {
            self.outstanding -= state.outstanding();
        }
    }

    fn busy(&self, _now: Instant) -> bool {
        self.outstanding > 0
    }
}

/// Byte-for-byte check of one piece of an echo against `expected` (when `sampled`); on the
/// last piece, whether the echo differed.
fn check_piece(
    state: &mut EchoConn,
    expected: &[u8],
    sampled: bool,
    first: bool,
    last: bool,
    payload: &[u8],
) -> Option<bool> {
    if first {
        state.check_offset = sampled.then_some(0);
        state.check_failed = false;
    }
    if let Some(offset) = state.check_offset {
        state.check_failed |= expected.get(offset..offset + payload.len()) != Some(payload);
        state.check_offset = Some(offset + payload.len());
    }
    last.then(|| state.check_failed || state.check_offset.is_some_and(|end| end != expected.len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A connection with requests 0..4 in flight, due one second apart from `start`, and two
    /// sends held back, due at 4 s and 5 s.
    fn connection(start: Instant) -> EchoConn {
        let at = |secs: u64| start + Duration::from_secs(secs);
        let mut state = EchoConn::default();
        state.in_flight.extend((0..4).map(|seq| Sent { seq, intended: at(seq), sent: at(seq) }));
        state.backlog.extend([at(4), at(5)]);
        state.next_seq = 4;
        state
    }

    #[test]
    fn the_deadline_gives_up_what_fell_due_by_it_oldest_first_sent_or_not() {
        let start = Instant::now();
        let mut state = connection(start);
        assert_eq!(state.expire(start + Duration::from_millis(1500)), (2, 0));
        assert_eq!(state.in_flight.iter().map(|sent| sent.seq).collect::<Vec<_>>(), [2, 3]);
        assert_eq!(state.backlog.len(), 2);
        assert_eq!(state.forgotten_below, 2);
        assert_eq!(state.expire(start + Duration::from_secs(4)), (2, 1), "due exactly at the deadline");
        assert_eq!(state.backlog.len(), 1);
        assert_eq!(state.expire(start + Duration::from_secs(4)), (0, 0), "nothing twice");
        assert_eq!(state.next_echo_seq(), 4, "nothing in flight: the next one sent");
    }

    #[test]
    fn echoes_of_forgotten_requests_are_late_and_the_next_is_checked_against_its_own() {
        let start = Instant::now();
        let mut state = connection(start);
        state.expire(start + Duration::from_secs(1));
        assert_eq!(state.next_echo_seq(), 2);
        assert!(state.late_echo() && state.late_echo(), "the two forgotten echoes, in order");
        assert!(!state.late_echo(), "then the one in flight");
        assert_eq!(state.take(None).map(|sent| sent.seq), Some(2));
    }
}
