//! One client connection's state. The worker drives it; this file holds the data and the
//! small pieces of logic that belong to one connection (what to write next, in order;
//! whole queued batches coalesced into one write, each frame numbered; a message framed,
//! masked and compressed when that was agreed; which messages the socket has taken, so
//! that "sent" counts what was written, not what was queued). What a scenario keeps per
//! connection is its own.

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;
use std::time::Instant;

use super::batch::Batch;
use super::compression::ConnCompression;
use super::stream::ByteStream;
use wsbench_proto::{CloseCode, Decoder, OpCode, Reservation, write_frame};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// TCP connect in progress.
    Connecting,
    /// Upgrade request sent (after TLS, if any); waiting for `101`.
    Upgrading,
    /// Upgraded; the message protocol's own opening is under way (MQTT CONNECT sent,
    /// waiting for CONNACK).
    Opening,
    Open,
    /// We sent a close frame (end of run); waiting for the server's.
    Closing,
}

#[derive(Debug)]
pub struct ClientConn {
    /// Its own socket, or a stream of a carrier's.
    pub transport: ByteStream,
    pub state: State,
    /// When the TCP connect started (connect time runs to the end of the handshake).
    pub started: Instant,
    /// The `Sec-WebSocket-Key` sent.
    pub key: String,
    pub decoder: Decoder,
    /// Unprocessed input (an incomplete response header or frame header).
    pub input: Vec<u8>,
    /// Handshake, json-ts frames and control frames to write, and how much is written.
    pub output: Vec<u8>,
    pub output_sent: usize,
    /// Batches of the worker's pre-encoded frames still to write, and the position inside
    /// the one being written.
    pub batches_pending: u64,
    pub batch_pos: usize,
    /// The number of the first frame of the batch being written (the batches queued after
    /// it follow on).
    pub batch_number: u64,
    /// Messages queued, in the socket, and taken by it (see [`Ledger`]).
    pub ledger: Ledger,
    /// Reading stopped because more than the outbox bound waits to be written.
    pub read_paused: bool,
    /// The connection's number in the run (0-based, across workers).
    pub index: u64,
    /// The data message being put together from its frames, and whether it outgrew the
    /// workload's limit (then it is dropped as it comes).
    pub message: Vec<u8>,
    pub message_too_long: bool,
    /// What `message` and the echo being inflated are charged to the process's budget for
    /// messages still arriving (`--max-message-memory`).
    pub budget: Reservation,
    pub write_interest: bool,
    /// permessage-deflate, once the server agreed to it.
    pub compression: Option<Box<ConnCompression>>,
    /// The worker's slab key of this connection.
    pub slot: usize,
    /// The close handshake was started by the load (a workload that closes its connections),
    /// not by the end of the run.
    pub closing_by_load: bool,
    /// The message protocol's side of this connection, once upgraded.
    pub session: Option<Box<dyn crate::protocol::Session>>,
    /// The HTTP exchange its protocol makes before the upgrade, while it is under way.
    pub preflight: Option<Box<dyn crate::protocol::preflight::Preflight>>,
    /// Its messages are the workload's own, unread by the session (the session's
    /// `passthrough`, asked once): the hot path of `raw` echoes asks this field.
    pub passthrough: bool,
    /// When the engine will next wake the session (its heartbeat), if it is to.
    pub session_timer: Option<Instant>,
    /// Requests made while the session was reading a message (a reply frees room for the
    /// next request): sent through it once it has finished.
    pub deferred: Deferred,
}

/// Requests waiting for the session: sequence numbers and their payloads, end to end.
#[derive(Debug, Default)]
pub struct Deferred {
    /// The session is lent out (reading a message, or on its timer).
    pub lent: bool,
    /// Allocated by the first request that waits: a connection that never defers one (every
    /// raw one) keeps two empty lists' worth of bytes less.
    queue: Option<Box<DeferredQueue>>,
}

#[derive(Debug, Default)]
struct DeferredQueue {
    requests: Vec<(u64, usize)>,
    payloads: Vec<u8>,
}

impl ClientConn {
    pub fn new(
        transport: ByteStream,
        index: u64,
        key: String,
        decoder: Decoder,
        started: Instant,
    ) -> ClientConn {
        ClientConn {
            index,
            transport,
            state: State::Connecting,
            started,
            key,
            decoder,
            input: Vec::new(),
            output: Vec::new(),
            output_sent: 0,
            batches_pending: 0,
            batch_pos: 0,
            batch_number: 0,
            ledger: Ledger::default(),
            read_paused: false,
            message: Vec::new(),
            message_too_long: false,
            budget: Reservation::default(),
            write_interest: true,
            compression: None,
            slot: 0,
            closing_by_load: false,
            session: None,
            preflight: None,
            passthrough: true,
            session_timer: None,
            deferred: Deferred::default(),
        }
    }

    /// The handshake is over: its request's buffer (sent whole, since the server answered)
    /// and its key go, so that an open connection that holds idle keeps no buffer of it.
    /// The first frame sent allocates the output buffer again.
    pub fn release_handshake(&mut self) {
        if self.output.is_empty() {
            self.output = Vec::new();
        }
        self.key = String::new();
    }

    /// Writes pending bytes in order: a half-written batch first (frames must not be
    /// interleaved), then `output`, then further batches. Returns true when all is written.
    pub fn flush(&mut self, batch: Option<&Batch>) -> io::Result<bool> {
        if !self.transport.flush()? {
            return Ok(false);
        }
        loop {
            let output_pending = self.output_sent < self.output.len();
            let batch_next = self.batch_pos > 0 || (!output_pending && self.batches_pending > 0);
            if let Some(batch) = batch.filter(|_| batch_next) {
                // Several whole batches queued (echoes that came in together freed room for
                // several) go out in one write, from copies laid out back to back.
                let count = match self.batch_pos {
                    0 => self.batches_pending.min(batch.copies() as u64) as usize,
                    _ => 1,
                };
                let from = self.batch_pos;
                let transport = &mut self.transport;
                let written = batch.with_numbered(self.batch_number, count, from, |head, tail| {
                    taken_now(|| match (head.is_empty(), tail.is_empty()) {
                        (false, false) => {
                            transport.write_vectored(&[io::IoSlice::new(head), io::IoSlice::new(tail)])
                        }
                        (true, _) => transport.write(tail),
                        (false, true) => transport.write(head),
                    })
                })?;
                if written == 0 {
                    return Ok(false);
                }
                let whole = ((from + written) / batch.len()) as u64;
                self.batch_pos = (from + written) % batch.len();
                self.batches_pending -= whole;
                self.batch_number += whole * batch.frames();
                self.ledger.written.add_batches(batch, whole);
            } else if output_pending {
                match write_some(&mut self.transport, &self.output[self.output_sent..])? {
                    0 => return Ok(false),
                    n => self.output_sent += n,
                }
                self.ledger.output_written(self.output_sent);
                if self.output_sent == self.output.len() {
                    self.output.clear();
                    self.output_sent = 0;
                }
            } else {
                return self.transport.flush();
            }
        }
    }

    /// Queues one batch whose first frame is numbered `first`; false (nothing queued) when
    /// it does not follow on from the batches queued.
    pub fn queue_batch(&mut self, batch: &Batch, first: u64) -> bool {
        if self.batch_pos == 0 && self.batches_pending == 0 {
            self.batch_number = first;
        } else if self.batch_number + self.batches_pending * batch.frames() != first {
            return false;
        }
        self.batches_pending += 1;
        true
    }

    /// Bytes waiting to be written (on the ring, besides those of the send in flight).
    pub fn outbox_bytes(&self, batch: Option<&Batch>) -> usize {
        let batches = batch.map_or(0, |batch| (self.batches_pending as usize) * batch.len() - self.batch_pos);
        self.output.len() - self.output_sent + batches
    }

    /// Messages queued and not yet known taken by the socket (a send in flight's included).
    pub fn unsent(&self, batch: Option<&Batch>) -> u64 {
        let batches = batch.map_or(0, |batch| self.batches_pending * batch.frames());
        let ledger = &self.ledger;
        ledger.in_send.messages + ledger.marks.iter().map(|mark| mark.tally.messages).sum::<u64>() + batches
    }

    /// [`ClientConn::unsent`], forgotten, as the connection ends.
    pub fn take_unsent(&mut self, batch: Option<&Batch>) -> u64 {
        let unsent = self.unsent(batch);
        self.ledger.marks.clear();
        self.ledger.in_send = Tally::default();
        self.batches_pending = 0;
        self.batch_pos = 0;
        unsent
    }
}

/// Messages between being queued and being taken by the socket: where each run of messages
/// in `output` ends, what a send on the ring carries, and what was written since the worker
/// last asked.
#[derive(Debug, Default)]
pub struct Ledger {
    /// Messages in `output`, by the offset their bytes end at (oldest first).
    pub(super) marks: VecDeque<Mark>,
    /// Taken into a send on the ring (or a carrier) that has not finished.
    in_send: Tally,
    /// Written since [`Ledger::take_written`] was last called.
    written: Tally,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Mark {
    end: usize,
    tally: Tally,
}

/// Messages, their bytes on the wire and their payload bytes.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    pub messages: u64,
    pub wire_bytes: u64,
    pub payload_bytes: u64,
}

impl Tally {
    fn add(&mut self, other: Tally) {
        self.messages += other.messages;
        self.wire_bytes += other.wire_bytes;
        self.payload_bytes += other.payload_bytes;
    }

    fn add_batches(&mut self, batch: &Batch, count: u64) {
        self.messages += count * batch.frames();
        self.wire_bytes += count * batch.len() as u64;
        self.payload_bytes += count * batch.payload_bytes();
    }
}

impl Ledger {
    /// `tally` was queued in `output`, its bytes ending at `end`.
    fn queued(&mut self, end: usize, tally: Tally) {
        match self.marks.back_mut() {
            Some(last) if last.end == end => last.tally.add(tally),
            _ => self.marks.push_back(Mark { end, tally }),
        }
    }

    /// `output` is written up to `sent`.
    fn output_written(&mut self, sent: usize) {
        while let Some(mark) = self.marks.front().filter(|mark| mark.end <= sent) {
            self.written.add(mark.tally);
            self.marks.pop_front();
        }
    }

    /// All of `output` went into a send.
    fn output_taken(&mut self) {
        while let Some(mark) = self.marks.pop_front() {
            self.in_send.add(mark.tally);
        }
    }

    /// The send in flight finished: its messages were written.
    pub fn send_done(&mut self) {
        self.written.add(std::mem::take(&mut self.in_send));
    }

    /// What was written since the last call.
    #[inline]
    pub fn take_written(&mut self) -> Tally {
        std::mem::take(&mut self.written)
    }
}

impl ClientConn {
    /// Queues one whole message: compressed when permessage-deflate was agreed, masked with
    /// `mask`. Returns the bytes it takes on the wire.
    pub fn write_message(&mut self, opcode: OpCode, mask: [u8; 4], payload: &[u8]) -> usize {
        let before = self.output.len();
        match self.compression.as_deref_mut() {
            Some(compression) => compression.send(opcode, mask, payload, &mut self.output),
            None => write_frame(&mut self.output, true, opcode, Some(mask), payload),
        }
        let wire = self.output.len() - before;
        self.counts_as_sent(1, wire, payload.len());
        wire
    }

    /// The last `wire_bytes` queued in `output` are `messages` messages (of `payload_bytes`)
    /// that count as sent once written: every message written with
    /// [`ClientConn::write_message`] is; a control frame that a scenario counts as its
    /// message (a ping) is said so here.
    pub fn counts_as_sent(&mut self, messages: u64, wire_bytes: usize, payload_bytes: usize) {
        let tally = Tally { messages, wire_bytes: wire_bytes as u64, payload_bytes: payload_bytes as u64 };
        self.ledger.queued(self.output.len(), tally);
    }

    /// Queues a control frame (never compressed).
    pub fn write_control(&mut self, opcode: OpCode, payload: &[u8]) {
        write_frame(&mut self.output, true, opcode, Some(rand::random()), payload);
    }

    /// Starts the close handshake: close 1000 queued, the connection closing. `by_load`: the
    /// workload closes it as part of its load, not because the run ends.
    pub fn start_close(&mut self, by_load: bool) {
        self.state = State::Closing;
        self.closing_by_load = by_load;
        write_frame(&mut self.output, true, OpCode::Close, Some([0; 4]), &CloseCode::NORMAL.to_be_bytes());
    }

    /// Moves what is pending, in the order [`ClientConn::flush`] writes it, to the end of
    /// `out` (the io_uring path sends it from there in one operation; a carrier frames it):
    /// the rest of a batch begun, `output`, then whole batches up to [`SEND_BYTES`] in all
    /// (at least one); the batches left stay queued for the next send. What it moved counts
    /// as written once [`Ledger::send_done`] says so.
    pub fn take_pending(&mut self, batch: Option<&Batch>, out: &mut Vec<u8>) {
        if let Some(tail) = self.take_pending_shared(batch, out) {
            out.extend_from_slice(&tail);
        }
    }

    /// [`ClientConn::take_pending`], except that a whole large frame's shared tail
    /// ([`Batch::tail`]) is not copied into `out` but returned, to be sent after it.
    pub fn take_pending_shared(&mut self, batch: Option<&Batch>, out: &mut Vec<u8>) -> Option<Arc<[u8]>> {
        if let Some(batch) = batch.filter(|_| self.batch_pos > 0) {
            batch.append_numbered(self.batch_number, 1, self.batch_pos, out);
            self.batch_pos = 0;
            self.batches_pending -= 1;
            self.batch_number += batch.frames();
            self.ledger.in_send.add_batches(batch, 1);
        }
        out.extend_from_slice(&self.output[self.output_sent..]);
        self.ledger.output_taken();
        self.output.clear();
        self.output_sent = 0;
        let batch = batch.filter(|batch| !batch.is_empty() && self.batches_pending > 0)?;
        let shared = !batch.tail().is_empty();
        let room = SEND_BYTES.saturating_sub(out.len()) / batch.len();
        let count = self.batches_pending.min(if shared { 1 } else { room.max(1) as u64 });
        if shared {
            batch.with_numbered(self.batch_number, 1, 0, |head, _| out.extend_from_slice(head));
        } else {
            batch.append_numbered(self.batch_number, count as usize, 0, out);
        }
        self.batches_pending -= count;
        self.batch_number += count * batch.frames();
        self.ledger.in_send.add_batches(batch, count);
        shared.then(|| batch.tail().clone())
    }

    /// Whether the workload writes its messages as they are now (no protocol session wraps
    /// them, and none is reading a message).
    pub fn writes_as_is(&self) -> bool {
        self.passthrough && !self.deferred.lent
    }

    /// Whether anything waits to be written.
    pub fn has_pending(&self) -> bool {
        self.batches_pending > 0 || self.output_sent < self.output.len()
    }
}

/// A connection as a protocol's outbox: each message framed, masked (and compressed when
/// agreed) into the connection's output, and counted for the recorder.
#[derive(Debug)]
pub struct Sending<'a> {
    pub conn: &'a mut ClientConn,
    pub messages: u64,
    pub wire_bytes: u64,
    pub payload_bytes: u64,
}

impl<'a> Sending<'a> {
    pub fn new(conn: &'a mut ClientConn) -> Sending<'a> {
        Sending { conn, messages: 0, wire_bytes: 0, payload_bytes: 0 }
    }

    fn send(&mut self, opcode: OpCode, payload: &[u8]) {
        self.wire_bytes += self.conn.write_message(opcode, rand::random(), payload) as u64;
        self.payload_bytes += payload.len() as u64;
        self.messages += 1;
    }
}

impl ClientConn {
    /// Lets the connection's protocol session write (a request, a subscription, a publish):
    /// what it wrote, counted (messages, bytes on the wire and of payload); nothing without a
    /// session.
    pub fn through_session(
        &mut self,
        write: impl FnOnce(&mut dyn crate::protocol::Session, &mut Sending<'_>),
    ) -> (u64, u64, u64) {
        let Some(mut session) = self.session.take() else { return (0, 0, 0) };
        let mut out = Sending::new(self);
        write(session.as_mut(), &mut out);
        let written = (out.messages, out.wire_bytes, out.payload_bytes);
        self.session = Some(session);
        written
    }
}

impl ClientConn {
    /// An echo request `seq` carrying `payload`, wrapped by the session: what it wrote,
    /// counted as [`ClientConn::through_session`] does. While the session is reading a
    /// message the request waits, and [`ClientConn::send_deferred`] counts it.
    pub fn request(&mut self, seq: u64, payload: &[u8]) -> (u64, u64, u64) {
        if self.deferred.lent {
            let queue = self.deferred.queue.get_or_insert_default();
            queue.payloads.extend_from_slice(payload);
            queue.requests.push((seq, queue.payloads.len()));
            return (0, 0, 0);
        }
        self.through_session(|session, out| session.request(seq, payload, out))
    }

    /// Sends the requests that waited for the session; what was written, counted.
    pub fn send_deferred(&mut self) -> (u64, u64, u64) {
        let Some(mut deferred) = self.deferred.queue.take_if(|queue| !queue.requests.is_empty()) else {
            return (0, 0, 0);
        };
        let mut start = 0;
        let mut written = (0, 0, 0);
        for &(seq, end) in &deferred.requests {
            let payload = &deferred.payloads[start..end];
            let (messages, wire, bytes) =
                self.through_session(|session, out| session.request(seq, payload, out));
            written = (written.0 + messages, written.1 + wire, written.2 + bytes);
            start = end;
        }
        deferred.requests.clear();
        deferred.payloads.clear();
        self.deferred.queue = Some(deferred);
        written
    }
}

impl crate::protocol::Outbox for Sending<'_> {
    fn text(&mut self, payload: &[u8]) {
        self.send(OpCode::Text, payload);
    }
    fn binary(&mut self, payload: &[u8]) {
        self.send(OpCode::Binary, payload);
    }
}

/// The most bytes of queued batches one send on the ring copies and carries (a batch
/// longer than this goes whole): the rest wait for its completion.
pub const SEND_BYTES: usize = 256 * 1024;

/// Writes what the socket takes now; 0 means it would block.
fn write_some(transport: &mut ByteStream, data: &[u8]) -> io::Result<usize> {
    taken_now(|| transport.write(data))
}

/// What one write call took: retried when interrupted, 0 when the socket is full, an error
/// when it took nothing.
#[inline]
fn taken_now(mut write: impl FnMut() -> io::Result<usize>) -> io::Result<usize> {
    loop {
        match write() {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(0),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
#[path = "conn_tests.rs"]
mod tests;
