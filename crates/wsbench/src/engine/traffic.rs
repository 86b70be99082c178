//! The messages of an open connection: queueing batches (the closed loop's refills and the
//! open loop's scheduled sends), decoding what comes back, checking each echo, and
//! recording every round trip in the worker's [`Metrics`]. Per-message work happens here,
//! so it allocates nothing per message and touches only the one connection it is given.

use std::sync::Arc;
use std::time::Instant;

use wsbench_proto::{CloseCode, OpCode, parse_close_payload, write_frame};

use super::conn::{ClientConn, State};
use super::payload::{CHECK_EVERY, Template, json_seq};
use super::pubsub::{self, PubSub};
use super::{Control, Job, churn, flow};
use crate::config::Scenario;
use crate::metrics::{Metrics, record_us};

/// Longest echo of a json-ts message worth reading (the messages are under 64 bytes).
const MAX_JSON_ECHO: usize = 256;

#[derive(Debug)]
pub struct Traffic {
    spec: Arc<Job>,
    control: Arc<Control>,
    template: Template,
    pub metrics: Metrics,
    /// Round trips received inside the measured window.
    pub measured_echoes: u64,
    /// This worker's index, and the first second it has not yet published to the live board.
    worker: usize,
    published: u64,
    /// churn: closes we started, watched until answered or timed out.
    pub closes: churn::Closes,
    /// flow: when connections wake (sleeps, expect timeouts).
    pub flow_timers: flow::Timers,
    /// pubsub: this worker's subscriptions, sequence numbers and tallies.
    pub pubsub: Option<PubSub>,
}

impl Traffic {
    /// `connections`: the indices of the connections this worker opens.
    pub fn new(spec: Arc<Job>, control: Arc<Control>, worker: usize, connections: &[u64]) -> Traffic {
        let template = Template::new(&spec.load.payload, spec.load.message, spec.load.frames_per_send);
        Traffic {
            pubsub: PubSub::new(&spec.load, connections),
            spec,
            control,
            template,
            metrics: Metrics::default(),
            measured_echoes: 0,
            worker,
            published: 0,
            closes: churn::Closes::default(),
            flow_timers: flow::Timers::default(),
        }
    }

    /// The pre-encoded batch connections write from (empty for json-ts).
    #[inline]
    pub fn batch(&self) -> &[u8] {
        match &self.template {
            Template::Fixed { batch, .. } => batch,
            Template::JsonTs { .. } | Template::Lines { .. } => &[],
        }
    }

    /// Once per loop: notes the connections open in this second, and when a new second
    /// begins, publishes the finished ones to the live board (once a second, off the
    /// per-message path: every echo of a published second is already counted in it).
    pub fn tick(&mut self, now: Instant, open: u64) {
        let second = self.control.micros_since_start(now) / 1_000_000;
        if second > self.published {
            self.control.live.publish(self.worker, &self.metrics, self.published..second);
            self.published = second;
        }
        let interval = self.metrics.interval(second);
        interval.connections_open = interval.connections_open.max(open);
    }

    /// The worker's figures at its end (pubsub: and the spread of each publish it saw);
    /// its last seconds go to the live board too.
    pub fn finish(mut self) -> (Metrics, u64, pubsub::Spread) {
        let spread = match self.pubsub.take() {
            Some(pubsub) => pubsub.finish(&mut self.metrics.counters.pubsub),
            None => pubsub::Spread::new(),
        };
        let last = self.metrics.intervals.len() as u64;
        self.control.live.publish(self.worker, &self.metrics, self.published..last);
        self.control.live.worker_done(self.worker);
        if self.spec.load.message_interval.is_none() {
            self.metrics.latency_uncorrected = self.metrics.latency.clone();
        }
        (self.metrics, self.measured_echoes, spread)
    }

    /// Whether one more batch fits under `--in-flight`.
    #[inline]
    pub fn has_room(&self, conn: &ClientConn) -> bool {
        (conn.in_flight.len() as u64).saturating_add(self.spec.load.frames_per_send)
            <= self.spec.load.in_flight
    }

    /// Closed loop: sends batches until the connection has `in_flight` messages outstanding.
    pub fn fill_in_flight(&mut self, conn: &mut ClientConn, now: Instant) {
        if self.spec.load.scenario == Scenario::Scalability
            || !self.control.sending_allowed(self.control.micros_since_start(now))
        {
            return;
        }
        if self.spec.load.scenario == Scenario::Churn {
            return self.churn_step(conn, now);
        }
        if let Some(mut flow) = self.flow_context(now) {
            return flow.advance(conn, now);
        }
        while conn.state == State::Open && self.has_room(conn) {
            self.send_batch(conn, now, now);
        }
    }

    /// flow: the interpreter's view of this worker at `now` (`None` in other scenarios).
    pub fn flow_context(&mut self, now: Instant) -> Option<flow::Context<'_>> {
        let now_us = self.control.micros_since_start(now);
        let (measure_start, end) = self.control.window();
        Some(flow::Context {
            program: self.spec.load.flow.as_ref()?,
            sending: self.control.sending_allowed(now_us),
            measured: now_us >= measure_start && now_us <= end,
            second: now_us / 1_000_000,
            metrics: &mut self.metrics,
            timers: &mut self.flow_timers,
            matched: &mut self.measured_echoes,
        })
    }

    /// churn: the next echo of the connection's K, or once they are done, the close.
    fn churn_step(&mut self, conn: &mut ClientConn, now: Instant) {
        if churn::cycle_done(conn, &self.spec.load) {
            churn::start_close(conn);
            self.closes.watch(conn.slot, conn.started, now);
            return;
        }
        let limit = self.spec.load.messages_per_connection;
        while conn.state == State::Open
            && self.has_room(conn)
            && conn.echoes + (conn.in_flight.len() as u64) < limit
        {
            self.send_batch(conn, now, now);
        }
    }

    /// Open loop: sends what fell due while the connection had no room, now that it has.
    pub fn send_backlog(&mut self, conn: &mut ClientConn, now: Instant) {
        while self.has_room(conn)
            && let Some(due) = conn.backlog.pop_front()
        {
            self.send_batch(conn, due, now);
        }
    }

    /// Queues one batch (`frames_per_send` messages) that was due at `intended`.
    pub fn send_batch(&mut self, conn: &mut ClientConn, intended: Instant, now: Instant) {
        if self.pubsub.is_some() {
            return self.publish(conn, intended, now);
        }
        let frames = self.spec.load.frames_per_send;
        let (bytes, payload_bytes) = match (&self.template, conn.compression.as_deref_mut()) {
            (Template::Fixed { batch, payload, .. }, None) => {
                conn.batches_pending += 1;
                (batch.len(), payload.len() * frames as usize)
            }
            (template, mut compression) => {
                let (mask, opcode) = template.mask_opcode();
                let (before, mut payload_bytes) = (conn.output.len(), 0);
                let mut scratch = [0u8; 64];
                for _ in 0..frames {
                    let message = template.message(conn.next_seq, &mut scratch);
                    payload_bytes += message.len();
                    match compression.as_deref_mut() {
                        Some(compression) => compression.send(opcode, mask, message, &mut conn.output),
                        None => write_frame(&mut conn.output, true, opcode, Some(mask), message),
                    }
                    conn.next_seq += 1;
                }
                (conn.output.len() - before, payload_bytes)
            }
        };
        conn.in_flight.extend(std::iter::repeat_n((intended, now), frames as usize));
        self.metrics.counters.messages_sent += frames;
        self.metrics.counters.bytes_sent += bytes as u64;
        self.metrics.counters.payload_bytes_sent += payload_bytes as u64;
        if self.spec.load.message_interval.is_some() {
            let (measure_start, end) = self.control.window();
            let due_us = self.control.micros_since_start(intended);
            if due_us >= measure_start && due_us <= end {
                record_us(&mut self.metrics.send_lag, now.duration_since(intended).as_micros() as u64);
            }
        }
    }

    /// pubsub: publisher `conn`'s publish due at `intended`, counted as measured when it
    /// was due inside the measured window.
    fn publish(&mut self, conn: &mut ClientConn, intended: Instant, now: Instant) {
        let Some(pubsub) = self.pubsub.as_mut() else { return };
        let (measure_start, end) = self.control.window();
        let due_us = self.control.micros_since_start(intended);
        let measured = due_us >= measure_start && due_us <= end;
        let before = conn.output.len();
        let payload_bytes = pubsub.publish(conn, intended, now, measured);
        let counters = &mut self.metrics.counters;
        counters.messages_sent += 1;
        counters.bytes_sent += (conn.output.len() - before) as u64;
        counters.payload_bytes_sent += payload_bytes as u64;
        if measured {
            pubsub.count_published(conn.index, &mut counters.pubsub);
            record_us(&mut self.metrics.send_lag, now.duration_since(intended).as_micros() as u64);
        }
    }

    /// pubsub: a piece of a message to `conn`; a delivery is recorded like a round trip,
    /// its latency from the publish's due time.
    fn on_pubsub_data(
        &mut self,
        conn: &mut ClientConn,
        first: bool,
        last: bool,
        payload: &[u8],
        now: Instant,
    ) {
        let Some(pubsub) = self.pubsub.as_mut() else { return };
        let Some(delivery) = pubsub.on_message(conn, first, last, payload, now, &mut self.metrics.counters)
        else {
            return;
        };
        self.metrics.counters.messages_received += 1;
        let interval = self.metrics.interval(self.control.micros_since_start(now) / 1_000_000);
        interval.echoes += 1;
        record_us(&mut interval.latency, delivery.latency_us);
        if delivery.measured {
            record_us(&mut self.metrics.latency, delivery.latency_us);
            record_us(&mut self.metrics.latency_uncorrected, delivery.uncorrected_us);
            self.measured_echoes += 1;
        } else {
            self.metrics.counters.warmup_messages += 1;
        }
    }

    /// Handles the frames in `data[used..]`. Returns the bytes used, or `None` when the
    /// connection is over (the server closed it or broke the protocol; our close frame is
    /// already written) and the caller drops it.
    pub fn frames(
        &mut self,
        conn: &mut ClientConn,
        data: &mut [u8],
        mut used: usize,
        now: Instant,
    ) -> Option<usize> {
        loop {
            let chunk = match conn.decoder.decode(&mut data[used..]) {
                Ok(Some(chunk)) => chunk,
                Ok(None) => return Some(used),
                Err(error) => return self.fail(conn, error.close_code()),
            };
            let payload = used + chunk.payload.start..used + chunk.payload.end;
            used += chunk.consumed;
            match chunk.opcode {
                OpCode::Text | OpCode::Binary if chunk.compressed => {
                    if let Err(code) = self.on_compressed(conn, chunk.first, chunk.last, &data[payload], now)
                    {
                        return self.fail(conn, code);
                    }
                }
                OpCode::Text | OpCode::Binary => {
                    self.on_data(conn, chunk.first, chunk.last, &data[payload], now)
                }
                OpCode::Ping => {
                    write_frame(&mut conn.output, true, OpCode::Pong, Some([0; 4]), &data[payload]);
                }
                OpCode::Close => {
                    self.on_close(conn, &data[payload]);
                    return None;
                }
                OpCode::Pong | OpCode::Continuation => {}
            }
        }
    }

    /// The server broke the protocol (or sent a message that does not inflate): close with
    /// `code`; the connection is over.
    fn fail(&mut self, conn: &mut ClientConn, code: u16) -> Option<usize> {
        self.metrics.counters.protocol_errors += 1;
        self.metrics.counters.messages_unanswered += conn.in_flight.len() as u64;
        conn.in_flight.clear();
        write_frame(&mut conn.output, true, OpCode::Close, Some([0; 4]), &code.to_be_bytes());
        let _ = conn.flush(&[]);
        None
    }

    /// A piece of a compressed echo: inflated, and checked as a whole on its last piece.
    /// The error is the close code that fails the connection.
    fn on_compressed(
        &mut self,
        conn: &mut ClientConn,
        first: bool,
        last: bool,
        payload: &[u8],
        now: Instant,
    ) -> Result<(), u16> {
        let Some(compression) = conn.compression.as_mut() else { return Err(CloseCode::PROTOCOL_ERROR) };
        if first {
            self.metrics.counters.compressed_messages_received += 1;
        }
        compression.receive(payload, last)?;
        if last {
            let echo = std::mem::take(&mut compression.inflated);
            self.on_data(conn, true, true, &echo, now);
            if let Some(compression) = conn.compression.as_mut() {
                compression.recycle(echo);
            }
        }
        Ok(())
    }

    /// The server's close frame: answered (with its code) unless we are closing already.
    fn on_close(&mut self, conn: &mut ClientConn, payload: &[u8]) {
        if conn.state != State::Open {
            if conn.churn_closing {
                self.metrics.counters.closes_answered += 1;
                self.metrics.counters.churn_cycles += 1;
            }
            return;
        }
        let code = parse_close_payload(payload).ok().flatten().map_or(0, |(code, _)| code);
        *self.metrics.counters.closed_by_server.entry(code).or_default() += 1;
        self.metrics.counters.messages_unanswered += conn.in_flight.len() as u64;
        conn.in_flight.clear();
        let reply = if code == 0 { Vec::new() } else { code.to_be_bytes().to_vec() };
        write_frame(&mut conn.output, true, OpCode::Close, Some([0; 4]), &reply);
        let _ = conn.flush(&[]);
    }

    /// A piece of an echoed message arrived: check it, and on its last piece count the
    /// round trip.
    fn on_data(&mut self, conn: &mut ClientConn, first: bool, last: bool, payload: &[u8], now: Instant) {
        self.metrics.counters.payload_bytes_received += payload.len() as u64;
        if self.pubsub.is_some() {
            return self.on_pubsub_data(conn, first, last, payload, now);
        }
        if conn.state == State::Closing {
            // Echoes that crossed our close at the end of the run: already counted as
            // unanswered, and not round trips of the run.
            return;
        }
        if let Some(mut flow) = self.flow_context(now) {
            return flow.on_data(conn, first, last, payload, now);
        }
        let mismatch = match &self.template {
            Template::Fixed { payload: expected, .. } => {
                let sampled = conn.echoes.is_multiple_of(CHECK_EVERY);
                check_piece(conn, expected, sampled, first, last, payload)
            }
            Template::Lines { lines, .. } => {
                let expected = &lines[(conn.echoes % lines.len() as u64) as usize];
                check_piece(conn, expected, true, first, last, payload)
            }
            Template::JsonTs { .. } => {
                if first {
                    conn.check_failed = false;
                }
                // An echo longer than any json-ts message is wrong already; buffering it would
                // let a hostile server grow the client without bound (cf. CVE-2020-27813).
                if conn.message.len() + payload.len() > MAX_JSON_ECHO {
                    conn.check_failed = true;
                    conn.message = Vec::new();
                } else if !(conn.check_failed || first && last) {
                    conn.message.extend_from_slice(payload);
                }
                if !last {
                    return;
                }
                let message = if first { payload } else { &conn.message[..] };
                let mismatch = conn.check_failed || json_seq(message) != Some(conn.echoes);
                if !first {
                    conn.message = Vec::new();
                }
                mismatch
            }
        };
        if mismatch {
            self.metrics.counters.payload_mismatches += 1;
        }
        if last {
            self.on_echo(conn, now);
        }
    }

    /// A whole echo arrived: records its round trip and sends what may follow.
    fn on_echo(&mut self, conn: &mut ClientConn, now: Instant) {
        let Some((intended, sent)) = conn.in_flight.pop_front() else {
            // An echo of nothing we sent.
            self.metrics.counters.payload_mismatches += 1;
            return;
        };
        conn.echoes += 1;
        // Latency counts from when the message was due (coordinated omission corrected);
        // the uncorrected figure from when it actually went out is kept beside it.
        let latency = now.duration_since(intended).as_micros() as u64;
        let latency_uncorrected = now.duration_since(sent).as_micros() as u64;
        let now_us = self.control.micros_since_start(now);
        self.metrics.counters.messages_received += 1;
        let interval = self.metrics.interval(now_us / 1_000_000);
        interval.echoes += 1;
        record_us(&mut interval.latency, latency);
        let (measure_start, end) = self.control.window();
        if now_us >= measure_start && now_us <= end {
            record_us(&mut self.metrics.latency, latency);
            // A closed loop sends when it means to: the two figures are one, copied at the end.
            if self.spec.load.message_interval.is_some() {
                record_us(&mut self.metrics.latency_uncorrected, latency_uncorrected);
            }
            self.measured_echoes += 1;
        } else if now_us < measure_start {
            self.metrics.counters.warmup_messages += 1;
        }
        if self.spec.load.message_interval.is_none() {
            return self.fill_in_flight(conn, now);
        }
        self.send_backlog(conn, now);
    }
}

/// Byte-for-byte check of one piece of an echo against `expected` (when `sampled`); on the
/// last piece, whether the echo differed.
fn check_piece(
    conn: &mut ClientConn,
    expected: &[u8],
    sampled: bool,
    first: bool,
    last: bool,
    payload: &[u8],
) -> bool {
    if first {
        conn.check_offset = sampled.then_some(0);
        conn.check_failed = false;
    }
    if let Some(offset) = conn.check_offset {
        conn.check_failed |= expected.get(offset..offset + payload.len()) != Some(payload);
        conn.check_offset = Some(offset + payload.len());
    }
    last && (conn.check_failed || conn.check_offset.is_some_and(|end| end != expected.len()))
}
