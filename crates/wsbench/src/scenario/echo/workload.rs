//! The echo loop every request/reply scenario shares (echo, throughput, c10k, churn): each
//! connection keeps its messages outstanding — refilled when an echo returns (closed loop)
//! or sent when the pacer says they are due (open loop, with a backlog when `--in-flight`
//! caps it) — and matches every echo to the request it answers by the number it carries
//! (json-ts's `"seq"`, a fixed payload's first 8 bytes): a message that answers no request
//! in flight is `unexpected`, an error and never a round trip. An echo may answer any
//! request in flight, not only the oldest (a server that answers out of order still
//! answers): over `raw` they come back in order, so the one answered is the oldest and
//! the lookup costs nothing. A payload too short to carry a number (and a line of a file)
//! answers the oldest request and is checked whole. Over `raw` the echoes are checked as
//! they stream (the number on every echo, the rest of the payload byte for byte on every
//! [`CHECK_EVERY`]th); over a message protocol each request goes
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
//! late (its number is below every request still in flight, or, without a number, it is
//! the next in order): neither a round trip, a mismatch nor unexpected. What is still in
//! flight at the end, younger than the deadline, is unanswered, not an error.

use std::collections::VecDeque;
use std::time::Instant;

use super::payload::{CHECK_EVERY, Template, json_seq};
use crate::config::LoadSpec;
use crate::engine::batch::{Batch, NUMBER_BYTES, decode_number, wrapped};
use crate::engine::capacity;
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

/// The longest the end of a run waits for echoes still in flight (and no longer than
/// their reply deadline): as long as pub/sub waits for its deliveries.
const LONGEST_DRAIN: std::time::Duration = std::time::Duration::from_secs(5);

/// A message in flight.
#[derive(Debug, Clone, Copy)]
struct Sent {
    seq: u64,
    /// When it was meant to be sent, and when it was. In a closed loop the two are the same.
    intended: Instant,
    sent: Instant,
}

/// One connection's messages. Kept within 128 bytes: every hook moves it out of its slot
/// and back, which the compiler does in registers up to that size and by a call to
/// `memcpy` past it (a test holds it there).
#[derive(Debug, Default)]
pub struct EchoConn {
    /// Messages in flight, oldest first.
    in_flight: VecDeque<Sent>,
    /// Open loop: sends that fell due while `--in-flight` messages were outstanding; they
    /// go out as echoes free room, and their latency counts from the time they were due.
    backlog: VecDeque<Instant>,
    next_seq: u64,
    /// Requests forgotten at the reply deadline whose echoes may still come, in order (an
    /// echo without a number: a short payload, a line of a file, a protocol's reply without
    /// a request id): the next that many such echoes are theirs, late.
    late_echoes: u32,
    /// Requests numbered below this that are no longer in flight were forgotten at the reply
    /// deadline: a reply to one is late.
    forgotten_below: u64,
    /// Echoes received.
    pub echoes: u64,
    /// Requests the server answered with an error (over a message protocol).
    pub refused: u64,
    /// Requests sent and given up at the reply deadline.
    pub given_up: u64,
    /// The echo being received: its bytes so far, its first [`NUMBER_BYTES`] (its
    /// number), whether the rest is compared byte for byte, and whether that differed.
    echo_len: u32,
    echo_head: [u8; NUMBER_BYTES],
    sampled: bool,
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
        self.late_echoes = self.late_echoes.saturating_add(u32::try_from(in_flight).unwrap_or(u32::MAX));
        self.given_up += in_flight;
        (in_flight, unsent)
    }

    /// Whether the next echo without a number answers a request already forgotten at the
    /// reply deadline; it is then taken as that late echo.
    #[inline]
    fn late_echo(&mut self) -> bool {
        let late = self.late_echoes > 0;
        self.late_echoes -= u32::from(late);
        late
    }

    /// Whether a reply numbered `seq` that answers nothing in flight answers a request
    /// forgotten at the reply deadline.
    fn forgotten(&self, seq: u64) -> bool {
        seq < self.forgotten_below
    }

    /// The number of the request the next echo in order answers.
    #[inline]
    fn next_echo_seq(&self) -> u64 {
        self.in_flight.front().map_or(self.next_seq, |sent| sent.seq)
    }

    /// Takes the request a reply answers: the one numbered `seq` (as far as an echo's
    /// number carries it: [`wrapped`]), or the oldest.
    fn take(&mut self, seq: Option<u64>) -> Option<Sent> {
        match seq {
            None => self.in_flight.pop_front(),
            Some(seq) => {
                let seq = wrapped(seq);
                // Over raw the echoes come back in order: the oldest, taken from the front.
                if self.in_flight.front().is_some_and(|sent| wrapped(sent.seq) == seq) {
                    return self.in_flight.pop_front();
                }
                let at = self.in_flight.iter().position(|sent| wrapped(sent.seq) == seq)?;
                self.in_flight.remove(at)
            }
        }
    }
}

/// What a whole message from the server answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    /// The request numbered `seq` (None: the oldest), and whether it came back different.
    Request { seq: Option<u64>, mismatch: bool },
    /// Nothing: it carries no number an echo would.
    Nothing,
}

#[derive(Debug)]
pub struct EchoWorkload {
    template: Template,
    /// A message written one at a time (json-ts, a numbered payload compressed or through
    /// a protocol): kept for its capacity.
    scratch: Vec<u8>,
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
    /// Seconds counted, for [`crate::engine::capacity::look_at`].
    seconds: u64,
}

impl EchoWorkload {
    /// `limit`: messages each connection sends in all, if not unlimited.
    pub fn new(load: &LoadSpec, limit: Option<u64>) -> EchoWorkload {
        EchoWorkload {
            template: Template::new(&load.payload, load.message, load.frames_per_send),
            scratch: Vec::new(),
            frames_per_send: load.frames_per_send,
            in_flight_cap: load.in_flight,
            open_loop: load.message_interval.is_some(),
            limit,
            check_replies: crate::protocol::by_name(load.protocol)
                .is_none_or(|protocol| protocol.replies_echo(&load.protocol_options)),
            conns: Vec::new(),
            outstanding: 0,
            reply_timeout: load.reply_timeout,
            seconds: 0,
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

    /// Queues one batch (`frames_per_send` messages) that was due at `intended`; they count
    /// as sent once the socket takes them.
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
        match (&self.template, conn.writes_as_is()) {
            (Template::Fixed { batch, .. }, true)
                if conn.compression.is_none() && conn.queue_batch(batch, first_seq) =>
            {
                state.next_seq += frames;
            }
            (template, false) => {
                for _ in 0..frames {
                    let seq = state.next_seq;
                    conn.request(seq, template.message(seq, &mut self.scratch));
                    state.next_seq += 1;
                }
            }
            (template, true) => {
                let (mask, opcode) = template.mask_opcode();
                for _ in 0..frames {
                    conn.write_message(opcode, mask, template.message(state.next_seq, &mut self.scratch));
                    state.next_seq += 1;
                }
            }
        }
        state.in_flight.extend((first_seq..state.next_seq).map(|seq| Sent { seq, intended, sent: now }));
        self.outstanding += frames;
        if self.open_loop {
            cx.rec.send_lag(intended, now);
        }
    }

    /// A piece of a message from the server: checked; on its last piece, what it answers.
    fn check(&self, state: &mut EchoConn, message: Message<'_>) -> Option<Answer> {
        match (message, &self.template) {
            (Message::Piece { data, first, last }, Template::Fixed { payload: expected, numbered, .. }) => {
                if first {
                    state.sampled = state.echoes.is_multiple_of(CHECK_EVERY) || !numbered;
                }
                check_piece(state, expected, *numbered, first, last, data)
            }
            (Message::Piece { data, first, last }, Template::Lines { lines, .. }) => {
                if first {
                    state.sampled = true;
                }
                let expected = &lines[(state.next_echo_seq() % lines.len() as u64) as usize];
                check_piece(state, expected, false, first, last, data)
            }
            (Message::Whole(data), _) => Some(match json_seq(data) {
                Some(seq) => Answer::Request { seq: Some(seq), mismatch: false },
                None => Answer::Nothing,
            }),
            (Message::Piece { last, .. }, Template::JsonTs { .. }) => last.then_some(Answer::Nothing),
            (Message::TooLong, _) => Some(Answer::Nothing),
        }
    }

    /// Whether a whole reply over a message protocol carries what request `seq` sent.
    fn reply_matches(&self, seq: u64, reply: &[u8]) -> bool {
        self.template.carries(seq, reply)
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
            // It answers nothing in flight: a late reply to a request forgotten at the
            // deadline, or unexpected (never sent, or answered already).
            if seq.is_none_or(|seq| !state.forgotten(seq)) {
                cx.rec.metrics.counters.unexpected_messages += 1;
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
        let batch = self.batch();
        let hold = OUTBOX_HOLD_BYTES.max(batch.map_or(0, Batch::len));
        self.has_room(state) && conn.outbox_bytes(batch) <= hold
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
    fn batch(&self) -> Option<&Batch> {
        match &self.template {
            Template::Fixed { batch, .. } => Some(batch),
            Template::JsonTs { .. } | Template::Lines { .. } => None,
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
        cx.rec.metrics.counters.sends_due += self.frames_per_send;
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
        let counters = &mut cx.rec.metrics.counters;
        counters.reply_timeouts += in_flight + unsent_batches * self.frames_per_send;
        counters.reply_timeouts_unsent += unsent_batches * self.frames_per_send;
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
            Some(Answer::Request { seq: None, .. }) if state.late_echo() => {
                self.conns[conn.slot] = Some(state)
            }
            Some(Answer::Request { seq, mismatch }) => {
                // An echo of nothing in flight is unexpected (counted there), not a mismatch.
                if self.on_echo(cx, conn, state, seq, now).is_some() && mismatch {
                    cx.rec.metrics.counters.payload_mismatches += 1;
                }
            }
            Some(Answer::Nothing) => {
                cx.rec.metrics.counters.unexpected_messages += 1;
                self.conns[conn.slot] = Some(state);
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
                    cx.rec.metrics.counters.requests_refused += 1;
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

    fn held_back(&mut self, conn: &ClientConn) -> u64 {
        let Some(state) = self.conns.get_mut(conn.slot).and_then(Option::as_mut) else { return 0 };
        let batches = state.backlog.len() as u64;
        state.backlog.clear();
        batches * self.frames_per_send
    }

    fn on_drop(&mut self, conn: &ClientConn) {
        if let Some(state) = self.conns.get_mut(conn.slot).and_then(Option::take) {
            self.outstanding -= state.outstanding();
        }
    }

    #[inline]
    fn awaiting(&self, _now: Instant) -> bool {
        self.outstanding > 0
    }

    fn busy(&self, _now: Instant) -> bool {
        self.outstanding > 0
    }

    /// Every few seconds, the queues a burst grew give their room back (four requests kept).
    fn each_second(&mut self, _now: Instant) {
        self.seconds += 1;
        for state in self.conns.iter_mut().flatten().filter(|_| capacity::look_at(self.seconds)) {
            capacity::give_back(&mut state.in_flight, 4);
            capacity::give_back(&mut state.backlog, 4);
        }
    }

    /// A reply may still come until its request's deadline: the end of the run waits for
    /// those in flight that long, up to [`LONGEST_DRAIN`] (a fifth of it when interrupted), so
    /// that a server slowed by a busy machine is not charged with replies it was still
    /// allowed to send.
    fn drain(&self) -> std::time::Duration {
        self.reply_timeout.min(LONGEST_DRAIN)
    }
}

/// One piece of an echo: its number gathered (when `numbered`: its first
/// [`NUMBER_BYTES`]), the rest compared with `expected` byte for byte when the echo is
/// sampled; on the last piece, what it answers. A numbered echo without a valid number
/// answers nothing.
fn check_piece(
    state: &mut EchoConn,
    expected: &[u8],
    numbered: bool,
    first: bool,
    last: bool,
    payload: &[u8],
) -> Option<Answer> {
    if first {
        state.echo_len = 0;
        state.check_failed = false;
    }
    // Messages are at most `--max-message` (1 GiB at most): their length fits in 32 bits.
    let offset = state.echo_len as usize;
    let skip = match numbered {
        true => NUMBER_BYTES.saturating_sub(offset).min(payload.len()),
        false => 0,
    };
    state.echo_head[offset.min(NUMBER_BYTES)..offset.min(NUMBER_BYTES) + skip]
        .copy_from_slice(&payload[..skip]);
    if state.sampled {
        let from = offset + skip;
        state.check_failed |= expected.get(from..offset + payload.len()) != Some(&payload[skip..]);
    }
    let echo_len = offset + payload.len();
    state.echo_len = u32::try_from(echo_len).unwrap_or(u32::MAX);
    if !last {
        return None;
    }
    let mismatch = state.check_failed || echo_len != expected.len();
    if !numbered {
        return Some(Answer::Request { seq: None, mismatch });
    }
    match decode_number(&state.echo_head).filter(|_| echo_len >= NUMBER_BYTES) {
        Some(seq) => Some(Answer::Request { seq: Some(seq), mismatch }),
        None => Some(Answer::Nothing),
    }
}

#[cfg(test)]
#[path = "workload_tests.rs"]
mod tests;
