//! One client connection's state. The worker drives it; this file holds the data and the
//! small pieces of logic that belong to one connection (what to write next, in order).

use std::collections::VecDeque;
use std::io;
use std::time::Instant;

use wsbench_proto::Decoder;
use wsbench_transport::Transport;

use super::compression::ConnCompression;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// TCP connect in progress.
    Connecting,
    /// Upgrade request sent (after TLS, if any); waiting for `101`.
    Upgrading,
    Open,
    /// We sent a close frame (end of run); waiting for the server's.
    Closing,
}

#[derive(Debug)]
pub struct ClientConn {
    pub transport: Transport,
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
    /// The connection's number in the run (0-based, across workers).
    pub index: u64,
    /// Messages in flight, oldest first (echoes come back in order): when each was meant to
    /// be sent and when it was sent. In a closed loop the two are the same.
    pub in_flight: VecDeque<(Instant, Instant)>,
    /// Open loop: sends that fell due while `--in-flight` messages were outstanding; they go
    /// out as echoes free room, and their latency counts from the time they were due.
    pub backlog: VecDeque<Instant>,
    pub next_seq: u64,
    pub echoes: u64,
    /// Partial json-ts message being reassembled.
    pub message: Vec<u8>,
    /// Byte-for-byte check of the echo being received: offset reached, or None if this
    /// echo is not sampled.
    pub check_offset: Option<usize>,
    pub check_failed: bool,
    pub write_interest: bool,
    /// permessage-deflate, once the server agreed to it.
    pub compression: Option<Box<ConnCompression>>,
    /// The worker's slab key of this connection.
    pub slot: usize,
    /// churn: we started the close handshake after the connection's K echoes.
    pub churn_closing: bool,
    /// flow: where the connection is in the program.
    pub flow: Option<Box<super::flow_state::FlowState>>,
}

impl ClientConn {
    pub fn new(
        transport: Transport,
        index: u64,
        key: String,
        decoder: Decoder,
        started: Instant,
    ) -> ClientConn {
        ClientConn {
            index,
            backlog: VecDeque::new(),
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
            in_flight: VecDeque::new(),
            next_seq: 0,
            echoes: 0,
            message: Vec::new(),
            check_offset: None,
            check_failed: false,
            write_interest: true,
            compression: None,
            slot: 0,
            churn_closing: false,
            flow: None,
        }
    }

    /// Writes pending bytes in order: a half-written batch first (frames must not be
    /// interleaved), then `output`, then further batches. Returns true when all is written.
    pub fn flush(&mut self, batch: &[u8]) -> io::Result<bool> {
        if !self.transport.flush()? {
            return Ok(false);
        }
        loop {
            let output_pending = self.output_sent < self.output.len();
            if self.batch_pos > 0 || (!output_pending && self.batches_pending > 0) {
                match write_some(&mut self.transport, &batch[self.batch_pos..])? {
                    0 => return Ok(false),
                    n => self.batch_pos += n,
                }
                if self.batch_pos == batch.len() {
                    self.batch_pos = 0;
                    self.batches_pending -= 1;
                }
            } else if output_pending {
                match write_some(&mut self.transport, &self.output[self.output_sent..])? {
                    0 => return Ok(false),
                    n => self.output_sent += n,
                }
                if self.output_sent == self.output.len() {
                    self.output.clear();
                    self.output_sent = 0;
                }
            } else {
                return self.transport.flush();
            }
        }
    }
}

/// Writes what the socket takes now; 0 means it would block.
fn write_some(transport: &mut Transport, data: &[u8]) -> io::Result<usize> {
    loop {
        match transport.write(data) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(0),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}
