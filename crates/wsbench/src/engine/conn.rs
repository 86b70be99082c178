//! One client connection's state. The worker drives it; this file holds the data and the
//! small pieces of logic that belong to one connection (what to write next, in order;
//! whole queued batches coalesced into one `writev`; a message framed, masked and
//! compressed when that was agreed). What a scenario keeps per connection is its own.

use std::io;
use std::time::Instant;

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
            message: Vec::new(),
            message_too_long: false,
            budget: Reservation::default(),
            write_interest: true,
            compression: None,
            slot: 0,
            closing_by_load: false,
            session: None,
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
    pub fn flush(&mut self, batch: &[u8]) -> io::Result<bool> {
        if !self.transport.flush()? {
            return Ok(false);
        }
        loop {
            let output_pending = self.output_sent < self.output.len();
            if self.batch_pos == 0 && !output_pending && self.batches_pending > 1 && !batch.is_empty() {
                // Several whole batches queued (echoes that came in together freed room for
                // several): one writev for all of them instead of a write each.
                let count = self.batches_pending.min(COALESCE_BATCHES as u64) as usize;
                let slices = [io::IoSlice::new(batch); COALESCE_BATCHES];
                match write_vectored_some(&mut self.transport, &slices[..count])? {
                    0 => return Ok(false),
                    n => {
                        self.batches_pending -= (n / batch.len()) as u64;
                        self.batch_pos = n % batch.len();
                    }
                }
            } else if self.batch_pos > 0 || (!output_pending && self.batches_pending > 0) {
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

impl ClientConn {
    /// Queues one whole message: compressed when permessage-deflate was agreed, masked with
    /// `mask`. Returns the bytes it takes on the wire.
    pub fn write_message(&mut self, opcode: OpCode, mask: [u8; 4], payload: &[u8]) -> usize {
        let before = self.output.len();
        match self.compression.as_deref_mut() {
            Some(compression) => compression.send(opcode, mask, payload, &mut self.output),
            None => write_frame(&mut self.output, true, opcode, Some(mask), payload),
        }
        self.output.len() - before
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

    /// Moves everything pending, in the order [`ClientConn::flush`] writes it, to the end
    /// of `out` (the io_uring path sends it from there in one operation).
    pub fn take_pending(&mut self, batch: &[u8], out: &mut Vec<u8>) {
        if self.batch_pos > 0 {
            out.extend_from_slice(&batch[self.batch_pos..]);
            self.batch_pos = 0;
            self.batches_pending -= 1;
        }
        out.extend_from_slice(&self.output[self.output_sent..]);
        self.output.clear();
        self.output_sent = 0;
        for _ in 0..self.batches_pending {
            out.extend_from_slice(batch);
        }
        self.batches_pending = 0;
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

/// The most queued batches one `writev` carries (well under the kernel's `IOV_MAX`).
const COALESCE_BATCHES: usize = 64;

/// [`write_some`] for several buffers at once.
fn write_vectored_some(transport: &mut ByteStream, data: &[io::IoSlice<'_>]) -> io::Result<usize> {
    taken_now(|| transport.write_vectored(data))
}

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
mod tests {
    use std::io::Read;
    use std::net::TcpListener;
    use std::time::Instant;

    use wsbench_proto::{Decoder, Role};

    use super::*;

    /// A connection whose socket is connected to a plain std peer.
    fn connected() -> (ClientConn, std::net::TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        client.set_nonblocking(true).unwrap();
        let (peer, _) = listener.accept().unwrap();
        // Small buffers, so that a few hundred kB fill the socket.
        small_buffer(&client, libc::SO_SNDBUF);
        small_buffer(&peer, libc::SO_RCVBUF);
        let transport = wsbench_transport::Transport::Plain(mio::net::TcpStream::from_std(client)).into();
        let conn =
            ClientConn::new(transport, 0, String::new(), Decoder::new(Role::Client, 1 << 20), Instant::now());
        (conn, peer)
    }

    #[test]
    fn an_open_connection_keeps_no_buffer_of_its_handshake() {
        let (mut conn, mut peer) = connected();
        conn.key = "dGhlIHNhbXBsZSBub25jZQ==".to_owned();
        conn.output.extend_from_slice(&[b'x'; 200]);
        assert!(conn.flush(&[]).unwrap(), "the request is written whole");
        let mut request = [0u8; 200];
        peer.read_exact(&mut request).unwrap();
        assert!(conn.output.capacity() >= 200);
        conn.release_handshake();
        assert_eq!((conn.output.capacity(), conn.key.capacity()), (0, 0));
        // Nor does it owe anything a deferred-request queue.
        assert!(conn.deferred.queue.is_none());
    }

    fn small_buffer(socket: &std::net::TcpStream, option: libc::c_int) {
        use std::os::fd::AsRawFd;
        let bytes: libc::c_int = 16 * 1024;
        // SAFETY: a valid socket and a c_int option value of the size given.
        let rc = unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::SOL_SOCKET,
                option,
                (&bytes as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        assert_eq!(rc, 0);
    }

    /// Reads from `peer` until `want` bytes came, flushing `conn` whenever the peer has
    /// drained what was written (the socket buffer was full).
    fn drain(conn: &mut ClientConn, peer: &mut std::net::TcpStream, batch: &[u8], want: usize) -> Vec<u8> {
        let mut got = Vec::new();
        let mut buf = vec![0u8; 1 << 16];
        while got.len() < want {
            let n = peer.read(&mut buf).unwrap();
            assert!(n > 0, "the peer saw the end of the stream after {} bytes", got.len());
            got.extend_from_slice(&buf[..n]);
            conn.flush(batch).unwrap();
        }
        got
    }

    #[test]
    fn queued_batches_go_out_whole_and_in_order_through_writev() {
        let (mut conn, mut peer) = connected();
        let batch: Vec<u8> = (0..26u8).collect();
        conn.batches_pending = 200;
        assert!(conn.flush(&batch).unwrap(), "200 small batches fit the socket buffer");
        assert_eq!(conn.batches_pending, 0);
        let got = drain(&mut conn, &mut peer, &batch, 200 * batch.len());
        assert_eq!(got, batch.repeat(200));
    }

    #[test]
    fn a_batch_cut_by_a_full_socket_is_finished_before_anything_else() {
        let (mut conn, mut peer) = connected();
        // Batches of 100,003 bytes: the socket buffer fills in the middle of one.
        let batch: Vec<u8> = (0..100_003u32).map(|i| (i % 251) as u8).collect();
        conn.batches_pending = 40;
        assert!(!conn.flush(&batch).unwrap(), "4 MB do not fit the socket buffers");
        assert!(conn.batches_pending > 0);
        // A control frame queued meanwhile goes out after the batch being written, not inside it.
        conn.output.extend_from_slice(b"PONG");
        let want = 40 * batch.len() + 4;
        let got = drain(&mut conn, &mut peer, &batch, want);
        let sent = conn.batches_pending;
        assert_eq!(sent, 0);
        let whole: usize = got.len() - 4;
        let pong_at = got.windows(4).position(|w| w == b"PONG").unwrap();
        assert_eq!(pong_at % batch.len(), 0, "the pong went out between two batches");
        let mut without_pong = got.clone();
        without_pong.drain(pong_at..pong_at + 4);
        assert_eq!(whole, without_pong.len());
        assert_eq!(without_pong, batch.repeat(40));
    }
}
