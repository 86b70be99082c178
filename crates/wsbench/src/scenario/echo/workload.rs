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

use std::collections::VecDeque;
use std::time::Instant;

use super::payload::{CHECK_EVERY, Template, json_seq};
use crate::config::LoadSpec;
use crate::engine::batch::{Batch, NUMBER_BYTES, decode_number, wrapped};
use crate::engine::conn::{ClientConn, State};
use crate::engine::recorder::Counted;
use crate::engine::workload::{Assembly, Cx, Message, Workload};
use crate::protocol::Incoming;

/// Longest echo of a json-ts message worth reading (the messages are under 64 bytes): a
/// longer one is wrong already, and buffering it would let a hostile server grow the
/// client without bound (cf. CVE-2020-27813).
const MAX_JSON_ECHO: usize = 256;

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
    /// Echoes received.
    pub echoes: u64,
    /// Requests the server answered with an error (over a message protocol).
    pub refused: u64,
    /// The echo being received: its bytes so far, its first [`NUMBER_BYTES`] (its
    /// number), whether the rest is compared byte for byte, and whether that differed.
    echo_len: usize,
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

    /// Takes the request a reply answers: the one numbered `seq` (as far as an echo's
    /// number carries it: [`wrapped`]), or the oldest.
    fn take(&mut self, seq: Option<u64>) -> Option<Sent> {
        match seq {
            None => self.in_flight.pop_front(),
            Some(seq) => {
                let seq = wrapped(seq);
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
                let oldest = state.in_flight.front().map_or(0, |sent| sent.seq);
                let expected = &lines[(oldest % lines.len() as u64) as usize];
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
            // It answers nothing in flight: never sent, or answered already.
            cx.rec.metrics.counters.unexpected_messages += 1;
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

    /// A request was answered (room freed): sends what may follow.
    fn send_more(&mut self, cx: &mut Cx<'_>, conn: &mut ClientConn, mut state: EchoConn, now: Instant) {
        if self.open_loop {
            while self.has_room(&state)
                && let Some(due) = state.backlog.pop_front()
            {
                self.send_batch(cx, conn, &mut state, due, now);
            }
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
        if self.has_room(&state) {
            self.send_batch(cx, conn, &mut state, due, now);
        } else {
            state.backlog.push_back(due);
        }
        self.conns[conn.slot] = Some(state);
    }

    #[inline]
    fn on_message(&mut self, cx: &mut Cx<'_>, conn: &mut ClientConn, message: Message<'_>, now: Instant) {
        if conn.state != State::Open {
            return;
        }
        let Some(mut state) = self.conns.get_mut(conn.slot).and_then(Option::take) else { return };
        match self.check(&mut state, message) {
            None => self.conns[conn.slot] = Some(state),
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
    let offset = state.echo_len;
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
    state.echo_len = offset + payload.len();
    if !last {
        return None;
    }
    let mismatch = state.check_failed || state.echo_len != expected.len();
    if !numbered {
        return Some(Answer::Request { seq: None, mismatch });
    }
    match decode_number(&state.echo_head).filter(|_| state.echo_len >= NUMBER_BYTES) {
        Some(seq) => Some(Answer::Request { seq: Some(seq), mismatch }),
        None => Some(Answer::Nothing),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::batch::encode_number;

    /// An echo of message `seq` of `rest`, as a server would return it.
    fn echo(seq: u64, rest: &[u8]) -> Vec<u8> {
        [&encode_number(seq)[..], rest].concat()
    }

    /// Feeds `message` to [`check_piece`] in pieces cut at `cuts`.
    fn pieces(
        state: &mut EchoConn,
        expected: &[u8],
        numbered: bool,
        message: &[u8],
        cuts: &[usize],
    ) -> Answer {
        let mut bounds = vec![0];
        bounds.extend_from_slice(cuts);
        bounds.push(message.len());
        let mut answer = None;
        for (index, pair) in bounds.windows(2).enumerate() {
            let last = index == bounds.len() - 2;
            answer = check_piece(state, expected, numbered, index == 0, last, &message[pair[0]..pair[1]]);
            assert_eq!(answer.is_some(), last);
        }
        answer.unwrap()
    }

    #[test]
    fn an_echo_answers_the_request_its_number_names_even_cut_inside_the_number() {
        let expected = echo(0, b"the rest of it");
        let mut state = EchoConn { sampled: true, ..EchoConn::default() };
        let message = echo(41, b"the rest of it");
        for cuts in [&[][..], &[3], &[3, 5, 12], &[8]] {
            let answer = pieces(&mut state, &expected, true, &message, cuts);
            assert_eq!(answer, Answer::Request { seq: Some(41), mismatch: false }, "cut at {cuts:?}");
        }
        let altered = echo(41, b"the rest of iT");
        assert_eq!(
            pieces(&mut state, &expected, true, &altered, &[4]),
            Answer::Request { seq: Some(41), mismatch: true }
        );
        // Not sampled: only the number is checked.
        state.sampled = false;
        assert_eq!(
            pieces(&mut state, &expected, true, &altered, &[4]),
            Answer::Request { seq: Some(41), mismatch: false }
        );
    }

    #[test]
    fn a_message_without_a_number_answers_nothing() {
        let expected = echo(0, b"the rest of it");
        let mut state = EchoConn { sampled: true, ..EchoConn::default() };
        let flood = vec![0xffu8; 64 * 1024];
        assert_eq!(pieces(&mut state, &expected, true, &flood, &[4096]), Answer::Nothing);
        assert_eq!(pieces(&mut state, &expected, true, b"short", &[]), Answer::Nothing);
    }

    #[test]
    fn a_payload_too_short_for_a_number_is_checked_whole_against_the_oldest() {
        let mut state = EchoConn { sampled: true, ..EchoConn::default() };
        assert_eq!(
            pieces(&mut state, b"abcd", false, b"abcd", &[1]),
            Answer::Request { seq: None, mismatch: false }
        );
        assert_eq!(
            pieces(&mut state, b"abcd", false, b"abce", &[]),
            Answer::Request { seq: None, mismatch: true }
        );
    }

    #[test]
    fn only_a_request_in_flight_is_answered_once() {
        let mut state = EchoConn::default();
        let now = Instant::now();
        state.in_flight.extend((5..8).map(|seq| Sent { seq, intended: now, sent: now }));
        assert_eq!(state.take(Some(6)).map(|sent| sent.seq), Some(6), "out of order still answers");
        assert!(state.take(Some(6)).is_none(), "answered already");
        assert!(state.take(Some(9)).is_none(), "never sent");
        assert_eq!(state.take(Some(5 + (1 << 48))).map(|sent| sent.seq), Some(5), "numbers wrap at 2^48");
        assert_eq!(state.take(None).map(|sent| sent.seq), Some(7));
    }
}
