//! One QUIC connection speaking HTTP/3 for WebSockets (RFC 9220): quinn's sans-I/O
//! connection with the HTTP/3 layer on top, for either side. It opens this side's control
//! stream with SETTINGS once the handshake completes, reads the peer's control stream (its
//! SETTINGS, whether it enables extended CONNECT, GOAWAY), drains QPACK streams (unused with
//! a zero-capacity table) and turns request streams into [`Event`]s: a client's extended
//! CONNECT (server side), the answer's status (client side), DATA payloads, a stream's end or
//! reset, the connection's end with its cause. WebSocket bytes go out as DATA frames, held
//! per stream while QUIC's flow control holds them back. A stream's input can be left
//! unread ([`Session::pause_reading`]): QUIC's flow control then holds the peer back, as a
//! TCP window does for a socket that is not read.

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::Instant;

use bytes::Bytes;
use quinn_proto::{Connection, ConnectionError, Dir, ReadError, StreamEvent, StreamId, VarInt};

use crate::http3::{self, Code, FrameReader, Piece, Settings, StreamRole, frame, qpack, varint};

/// What happened on a session, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The peer's SETTINGS came: WebSockets may be opened if it enables extended CONNECT.
    Ready(Settings),
    /// (Server) an extended CONNECT on `stream`.
    Request(StreamId, http3::ConnectRequest),
    /// (Client) the answer to the CONNECT on `stream`: its status and fields.
    Response(StreamId, u16, Vec<qpack::Field>),
    /// DATA payload bytes on `stream`.
    Data(StreamId, Vec<u8>),
    /// The peer ended `stream` cleanly.
    Finished(StreamId),
    /// The peer reset `stream` (or stopped reading it) with an application error code.
    Reset(StreamId, u64),
    /// The connection ended.
    Closed(Cause),
}

/// Why a connection ended, as failures are counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cause {
    /// This side found an HTTP/3 error (and closed the connection with its code).
    H3(http3::Error),
    /// The peer closed with an application (HTTP/3) error code.
    PeerApplication(u64, String),
    /// QUIC's transport layer ended it (either side), with its transport error code.
    Transport(u64, String),
    TimedOut,
    Reset,
    VersionMismatch,
    LocallyClosed,
}

impl Cause {
    /// A short lower-case name for counting (`h3_frame_error`, `quic_timed_out`, …).
    pub fn name(&self) -> String {
        match self {
            Cause::H3(error) => error.code.name().to_string(),
            Cause::PeerApplication(code, _) => match Code::from_value(*code) {
                Some(Code::NoError) => "h3_peer_closed".to_string(),
                Some(code) => format!("{}_from_peer", code.name()),
                None => format!("h3_peer_error_{code:#x}"),
            },
            Cause::Transport(code, _) => format!("quic_transport_error_{code:#x}"),
            Cause::TimedOut => "quic_timed_out".to_string(),
            Cause::Reset => "quic_stateless_reset".to_string(),
            Cause::VersionMismatch => "quic_version_mismatch".to_string(),
            Cause::LocallyClosed => "quic_closed".to_string(),
        }
    }

    fn of(error: ConnectionError) -> Cause {
        match error {
            ConnectionError::ApplicationClosed(close) => Cause::PeerApplication(
                close.error_code.into_inner(),
                String::from_utf8_lossy(&close.reason).into_owned(),
            ),
            ConnectionError::ConnectionClosed(close) => {
                Cause::Transport(close.error_code.into(), String::from_utf8_lossy(&close.reason).into_owned())
            }
            ConnectionError::TransportError(error) => {
                Cause::Transport(error.code.into(), error.reason.clone())
            }
            ConnectionError::TimedOut => Cause::TimedOut,
            ConnectionError::Reset => Cause::Reset,
            ConnectionError::VersionMismatch => Cause::VersionMismatch,
            ConnectionError::LocallyClosed | ConnectionError::CidsExhausted => Cause::LocallyClosed,
        }
    }
}

/// A peer's unidirectional stream: its type not yet read, or what it is.
#[derive(Debug)]
enum UniIn {
    Untyped(Vec<u8>),
    Control(FrameReader, Vec<u8>),
    Drained,
}

/// A request stream's input.
#[derive(Debug)]
struct RequestIn {
    reader: FrameReader,
    buf: Vec<u8>,
    headers_seen: bool,
}

/// The packets this side sent on a connection since it began, and of those the ones
/// QUIC's loss detection declared lost (and so resent what they carried).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PacketStats {
    pub sent: u64,
    pub lost: u64,
}

/// One HTTP/3 connection.
#[derive(Debug)]
pub struct Session {
    pub conn: Connection,
    server: bool,
    enable_connect: bool,
    control_opened: bool,
    peer_control: bool,
    peer_settings: Option<Settings>,
    uni: HashMap<StreamId, UniIn>,
    requests: HashMap<StreamId, RequestIn>,
    /// Bytes written by this side not yet taken by QUIC, per stream.
    pending: HashMap<StreamId, Vec<u8>>,
    /// Streams to end once their pending bytes have gone.
    finishing: Vec<StreamId>,
    /// Streams whose input is left unread for now.
    paused: HashSet<StreamId>,
    events: VecDeque<Event>,
    closed: bool,
}

impl Session {
    /// A session over `conn`; `server` with `enable_connect` advertises extended CONNECT.
    pub fn new(conn: Connection, server: bool, enable_connect: bool) -> Session {
        Session {
            conn,
            server,
            enable_connect,
            control_opened: false,
            peer_control: false,
            peer_settings: None,
            uni: HashMap::new(),
            requests: HashMap::new(),
            pending: HashMap::new(),
            finishing: Vec::new(),
            paused: HashSet::new(),
            events: VecDeque::new(),
            closed: false,
        }
    }

    /// The peer's SETTINGS, once they came.
    pub fn peer_settings(&self) -> Option<Settings> {
        self.peer_settings
    }

    /// The next thing that happened.
    pub fn next_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Whether events wait to be read.
    pub fn has_events(&self) -> bool {
        !self.events.is_empty()
    }

    /// The packets sent and lost on the connection so far (quinn-proto's path statistics).
    pub fn packet_stats(&self) -> PacketStats {
        let path = self.conn.stats().path;
        PacketStats { sent: path.sent_packets, lost: path.lost_packets }
    }

    /// Whether the connection is over (its [`Event::Closed`] given).
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Takes QUIC's events (after datagrams or a timeout were handed to `conn`).
    pub fn process(&mut self, now: Instant) {
        while let Some(event) = self.conn.poll() {
            match event {
                quinn_proto::Event::Connected => self.open_control(),
                quinn_proto::Event::ConnectionLost { reason } if !self.closed => {
                    self.closed = true;
                    self.events.push_back(Event::Closed(Cause::of(reason)));
                }
                quinn_proto::Event::Stream(event) => self.stream_event(now, event),
                _ => {}
            }
        }
    }

    fn stream_event(&mut self, now: Instant, event: StreamEvent) {
        match event {
            StreamEvent::Opened { dir } => {
                while let Some(id) = self.conn.streams().accept(dir) {
                    self.accept_stream(now, id, dir);
                }
            }
            StreamEvent::Readable { id } => self.read_stream(now, id),
            StreamEvent::Writable { id } => self.flush(id),
            StreamEvent::Stopped { id, error_code } => {
                self.pending.remove(&id);
                self.paused.remove(&id);
                self.events.push_back(Event::Reset(id, error_code.into_inner()));
            }
            _ => {}
        }
    }

    fn accept_stream(&mut self, now: Instant, id: StreamId, dir: Dir) {
        match dir {
            Dir::Uni => {
                self.uni.insert(id, UniIn::Untyped(Vec::new()));
            }
            Dir::Bi if self.server => {
                let reader = FrameReader::new(StreamRole::Request);
                self.requests.insert(id, RequestIn { reader, buf: Vec::new(), headers_seen: false });
            }
            Dir::Bi => {
                let what = "the server opened a bidirectional stream";
                self.fail(now, http3::Error::new(Code::StreamCreationError, what));
                return;
            }
        }
        self.read_stream(now, id);
    }

    /// Opens this side's control stream with its SETTINGS.
    fn open_control(&mut self) {
        if self.control_opened {
            return;
        }
        self.control_opened = true;
        if let Some(id) = self.conn.streams().open(Dir::Uni) {
            let opening = http3::control_stream_opening(self.server && self.enable_connect);
            self.queue(id, &opening);
        }
    }

    /// Reads what `id` has: every chunk, then the pieces they complete.
    fn read_stream(&mut self, now: Instant, id: StreamId) {
        if self.paused.contains(&id) {
            return;
        }
        let mut input = Vec::new();
        let mut finished = false;
        let mut reset = None;
        {
            let mut stream = self.conn.recv_stream(id);
            let Ok(mut chunks) = stream.read(true) else { return };
            loop {
                match chunks.next(usize::MAX) {
                    Ok(Some(chunk)) => input.extend_from_slice(&chunk.bytes),
                    Ok(None) => {
                        finished = true;
                        break;
                    }
                    Err(ReadError::Blocked) => break,
                    Err(ReadError::Reset(code)) => {
                        reset = Some(code.into_inner());
                        break;
                    }
                }
            }
            let _ = chunks.finalize();
        }
        let result = if self.uni.contains_key(&id) {
            self.uni_input(id, &input, finished || reset.is_some())
        } else {
            self.request_input(id, &input, finished, reset)
        };
        if let Err(error) = result {
            self.fail(now, error);
        }
    }

    fn uni_input(&mut self, id: StreamId, input: &[u8], ended: bool) -> Result<(), http3::Error> {
        let Some(state) = self.uni.get_mut(&id) else { return Ok(()) };
        if let UniIn::Untyped(buf) = state {
            buf.extend_from_slice(input);
            let Some((kind, n)) = varint::get(buf) else { return Ok(()) };
            let rest = buf.split_off(n);
            let typed = self.typed_uni(kind, id, rest)?;
            self.uni.insert(id, typed);
        } else if let UniIn::Control(_, buf) = state {
            buf.extend_from_slice(input);
        }
        if matches!(self.uni.get(&id), Some(UniIn::Control(..))) {
            self.read_control(id)?;
            if ended {
                let what = "the peer closed its control stream";
                return Err(http3::Error::new(Code::ClosedCriticalStream, what));
            }
        }
        Ok(())
    }

    fn typed_uni(&mut self, kind: u64, id: StreamId, rest: Vec<u8>) -> Result<UniIn, http3::Error> {
        match kind {
            http3::STREAM_CONTROL if self.peer_control => {
                Err(http3::Error::new(Code::StreamCreationError, "a second control stream"))
            }
            http3::STREAM_CONTROL => {
                self.peer_control = true;
                Ok(UniIn::Control(FrameReader::new(StreamRole::Control), rest))
            }
            http3::STREAM_PUSH => {
                Err(http3::Error::new(Code::IdError, "a push stream though no push was allowed"))
            }
            http3::STREAM_QPACK_ENCODER | http3::STREAM_QPACK_DECODER => Ok(UniIn::Drained),
            _ => {
                let _ = self
                    .conn
                    .recv_stream(id)
                    .stop(VarInt::from_u32(Code::StreamCreationError.value() as u32));
                Ok(UniIn::Drained)
            }
        }
    }

    fn read_control(&mut self, id: StreamId) -> Result<(), http3::Error> {
        let Some(UniIn::Control(reader, buf)) = self.uni.get_mut(&id) else { return Ok(()) };
        let mut used = 0;
        while let Some((piece, n)) = reader.next(&buf[used..])? {
            used += n;
            match piece {
                Piece::Settings(settings) => {
                    self.peer_settings = Some(settings);
                    self.events.push_back(Event::Ready(settings));
                }
                Piece::Goaway(_) | Piece::Skipped | Piece::Data(_) | Piece::Headers(_) => {}
            }
        }
        buf.drain(..used);
        Ok(())
    }

    fn request_input(
        &mut self,
        id: StreamId,
        input: &[u8],
        finished: bool,
        reset: Option<u64>,
    ) -> Result<(), http3::Error> {
        let Some(state) = self.requests.get_mut(&id) else { return Ok(()) };
        state.buf.extend_from_slice(input);
        let mut used = 0;
        while let Some((piece, n)) = state.reader.next(&state.buf[used..])? {
            used += n;
            match piece {
                Piece::Headers(block) if !state.headers_seen => {
                    state.headers_seen = true;
                    let fields = qpack::decode(block, http3::MAX_FIELD_SECTION as usize)?;
                    self.events.push_back(if self.server {
                        Event::Request(id, http3::connect_request(&fields)?)
                    } else {
                        Event::Response(id, http3::status(&fields)?, fields)
                    });
                }
                Piece::Data(bytes) if !state.headers_seen => {
                    let _ = bytes;
                    return Err(http3::Error::new(Code::FrameUnexpected, "DATA before HEADERS"));
                }
                Piece::Data(bytes) if !bytes.is_empty() => {
                    self.events.push_back(Event::Data(id, bytes.to_vec()))
                }
                _ => {}
            }
        }
        state.buf.drain(..used);
        if let Some(code) = reset {
            self.requests.remove(&id);
            self.paused.remove(&id);
            self.events.push_back(Event::Reset(id, code));
        } else if finished {
            self.requests.remove(&id);
            self.paused.remove(&id);
            self.events.push_back(Event::Finished(id));
        }
        Ok(())
    }

    /// Closes the connection with `error`'s code and reports it.
    fn fail(&mut self, now: Instant, error: http3::Error) {
        if self.closed {
            return;
        }
        let code = VarInt::from_u64(error.code.value()).unwrap_or(VarInt::from_u32(0x102));
        self.conn.close(now, code, Bytes::from_static(error.what.as_bytes()));
        self.closed = true;
        self.events.push_back(Event::Closed(Cause::H3(error)));
    }

    /// Ends the connection as HTTP/3 does when it is done (an application CONNECTION_CLOSE
    /// with H3_NO_ERROR), so the peer lets it go at once instead of at its idle timeout.
    /// What goes out next carries the close.
    pub fn close(&mut self, now: Instant) {
        if self.closed {
            return;
        }
        let code = VarInt::from_u64(Code::NoError.value()).unwrap_or(VarInt::from_u32(0x100));
        self.conn.close(now, code, Bytes::new());
        self.closed = true;
    }

    /// (Client) opens a WebSocket: a request stream carrying an extended CONNECT. `None`
    /// while the peer allows no more streams.
    pub fn open_websocket(&mut self, scheme: &str, authority: &str, path: &str) -> Option<StreamId> {
        self.open_request(&http3::websocket_request(scheme, authority, path, &[]))
    }

    /// (Client) opens a request stream and sends `headers` (a whole HEADERS frame) on it.
    pub fn open_request(&mut self, headers: &[u8]) -> Option<StreamId> {
        let id = self.conn.streams().open(Dir::Bi)?;
        let reader = FrameReader::new(StreamRole::Request);
        self.requests.insert(id, RequestIn { reader, buf: Vec::new(), headers_seen: false });
        self.queue(id, headers);
        Some(id)
    }

    /// (Server) answers the request on `stream` with `status` (2xx accepts the WebSocket;
    /// any other status also ends the stream).
    pub fn respond(&mut self, stream: StreamId, status: u16) {
        let status = status.to_string();
        self.queue(stream, &http3::headers_frame(&[(":status", status.as_str())]));
        if !(200..300).contains(&status.parse::<u16>().unwrap_or(0)) {
            self.finish(stream);
        }
    }

    /// Sends `payload` on `stream` as one DATA frame.
    pub fn send_data(&mut self, stream: StreamId, payload: &[u8]) {
        let mut out = Vec::with_capacity(payload.len() + 9);
        frame::put_head(frame::DATA, payload.len() as u64, &mut out);
        out.extend_from_slice(payload);
        self.queue(stream, &out);
    }

    /// Ends this side of `stream` once what is queued has gone.
    pub fn finish(&mut self, stream: StreamId) {
        if self.pending.get(&stream).is_none_or(Vec::is_empty) {
            let _ = self.conn.send_stream(stream).finish();
        } else if !self.finishing.contains(&stream) {
            self.finishing.push(stream);
        }
    }

    /// Leaves `stream`'s input unread until [`Session::resume_reading`]: what the peer sent
    /// stays in QUIC's receive buffer, whose flow-control window then stops the peer.
    pub fn pause_reading(&mut self, stream: StreamId) {
        if self.requests.contains_key(&stream) {
            self.paused.insert(stream);
        }
    }

    /// Reads `stream` again, starting with what waited.
    pub fn resume_reading(&mut self, now: Instant, stream: StreamId) {
        if self.paused.remove(&stream) {
            self.read_stream(now, stream);
        }
    }

    /// Whether `stream`'s input is left unread.
    pub fn is_paused(&self, stream: StreamId) -> bool {
        self.paused.contains(&stream)
    }

    /// Bytes queued on `stream` that QUIC has not taken yet.
    pub fn pending(&self, stream: StreamId) -> usize {
        self.pending.get(&stream).map_or(0, Vec::len)
    }

    fn queue(&mut self, id: StreamId, bytes: &[u8]) {
        let pending = self.pending.entry(id).or_default();
        pending.extend_from_slice(bytes);
        self.flush(id);
    }

    fn flush(&mut self, id: StreamId) {
        let Some(pending) = self.pending.get_mut(&id) else { return };
        let mut sent = 0;
        while sent < pending.len() {
            match self.conn.send_stream(id).write(&pending[sent..]) {
                Ok(n) if n > 0 => sent += n,
                _ => break,
            }
        }
        pending.drain(..sent);
        if pending.is_empty() {
            self.pending.remove(&id);
            if let Some(at) = self.finishing.iter().position(|s| *s == id) {
                self.finishing.swap_remove(at);
                let _ = self.conn.send_stream(id).finish();
            }
        }
    }
}
