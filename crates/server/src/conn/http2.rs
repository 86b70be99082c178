//! WebSockets over HTTP/2 (RFC 8441) for `wsbench serve`: a connection whose first bytes
//! are the HTTP/2 preface (h2c with prior knowledge on the WebSocket port, or TLS after
//! ALPN `h2`) becomes an [`H2Conn`]. Its SETTINGS carry SETTINGS_ENABLE_CONNECT_PROTOCOL;
//! each extended CONNECT with `:protocol websocket` and `sec-websocket-version: 13` is
//! answered `200` (never `101`, and no `Sec-WebSocket-Accept`), with the subprotocol and
//! permessage-deflate answer as over HTTP/1.1, and its stream then echoes exactly as an
//! HTTP/1.1 WebSocket does ([`ConnState`]). A stream's close handshake ends that stream
//! (END_STREAM), as does the client's END_STREAM or RST_STREAM; the connection and its
//! other streams go on. A plain GET is answered `200 ok`; anything else `400`/`501`.
//!
//! Like [`ConnState`] it turns input bytes into output bytes and never touches the socket:
//! the `h2` crate runs over an in-memory pipe, polled whenever bytes came. With `--pubsub`
//! each stream's commands wait in its inbox for the event loop's fan-out, which writes
//! acknowledgements and deliveries to streams by id ([`H2Conn::send_to`]).

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use slab::Slab;
use wsbench_proto::handshake::UpgradeRequest;
use wsbench_proto::{MessageMemory, Reservation};
use wsbench_transport::http2::h2::server::{self, SendResponse};
use wsbench_transport::http2::h2::{self, RecvStream, SendStream};
use wsbench_transport::http2::{OUTPUT_LIMIT, Pipe, PipeIo, Ready, context};

use super::{ConnState, Limits, Next, Phase};
use crate::compression::Compression;

/// Passes over the connection and its woken streams per call (a pass that moved nothing
/// ends it early).
const MAX_PASSES: usize = 64;
/// Streams one connection may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS).
pub const MAX_CONCURRENT_STREAMS: u32 = 1000;
/// Receive windows: an echo server reads what it is sent at once.
const STREAM_WINDOW: u32 = 1 << 20;
const CONNECTION_WINDOW: u32 = 16 << 20;

type Handshake = std::pin::Pin<Box<server::Handshake<PipeIo, Bytes>>>;

/// One WebSocket on a stream.
#[derive(Debug)]
struct Stream {
    /// Its HTTP/2 stream id (never reused on a connection).
    id: u32,
    waker: Waker,
    recv: RecvStream,
    send: SendStream<Bytes>,
    state: ConnState,
    /// An incomplete frame from earlier DATA.
    input: Vec<u8>,
    /// Our close went out with END_STREAM: the client's end is awaited, its data dropped.
    closed: bool,
}

/// An HTTP/2 connection's state: the `h2` server and its WebSocket streams.
pub struct H2Conn {
    pipe: Pipe,
    handshake: Option<Handshake>,
    connection: Option<server::Connection<PipeIo, Bytes>>,
    streams: Slab<Stream>,
    ready: Ready,
    woken: Vec<usize>,
    /// One stream's echo, before it goes out as DATA.
    echo: Vec<u8>,
    /// The limits of the last call, for output pumped between calls (pub/sub deliveries).
    limits: Limits,
    /// Some stream has pub/sub commands in its inbox.
    commands: bool,
    /// The process's budget for messages still arriving, drawn on by each stream.
    message_memory: Option<Arc<MessageMemory>>,
}

impl std::fmt::Debug for H2Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("H2Conn").field("streams", &self.streams.len()).finish_non_exhaustive()
    }
}

impl Default for H2Conn {
    fn default() -> H2Conn {
        H2Conn::new()
    }
}

impl H2Conn {
    /// A connection whose preface is about to be read: the `h2` server handshake (its
    /// SETTINGS allow extended CONNECT) waits for it.
    pub fn new() -> H2Conn {
        let pipe = Pipe::new();
        let mut builder = server::Builder::new();
        builder
            .enable_connect_protocol()
            .max_concurrent_streams(MAX_CONCURRENT_STREAMS)
            .initial_window_size(STREAM_WINDOW)
            .initial_connection_window_size(CONNECTION_WINDOW);
        H2Conn {
            handshake: Some(Box::pin(builder.handshake(pipe.io()))),
            pipe,
            connection: None,
            streams: Slab::new(),
            ready: Ready::default(),
            woken: Vec::new(),
            echo: Vec::new(),
            limits: Limits { max_message: 0, max_header_bytes: 0, deflate: false, pubsub: false },
            commands: false,
            message_memory: None,
        }
    }

    /// A connection whose streams draw on `message_memory` (none: unbudgeted).
    pub fn with_budget(message_memory: Option<Arc<MessageMemory>>) -> H2Conn {
        H2Conn { message_memory, ..H2Conn::new() }
    }

    /// Whether a stream has pub/sub commands waiting ([`H2Conn::take_commands`]).
    pub fn has_commands(&self) -> bool {
        self.commands
    }

    /// Every stream's pub/sub commands, with its id (the inbox format of [`ConnState`]).
    pub fn take_commands(&mut self) -> Vec<(u32, Vec<u8>)> {
        self.commands = false;
        let with_commands = self.streams.iter_mut().filter(|(_, s)| !s.state.inbox.is_empty());
        with_commands.map(|(_, s)| (s.id, std::mem::take(&mut s.state.inbox))).collect()
    }

    /// Whether the WebSocket on stream `id` is still open.
    pub fn has_stream(&self, id: u32) -> bool {
        self.streams.iter().any(|(_, s)| s.id == id && !s.closed)
    }

    /// Queues `frame` (a whole WebSocket frame) on stream `id`; [`H2Conn::drain_output`]
    /// turns it into bytes.
    pub fn send_to(&mut self, id: u32, frame: &[u8]) {
        if let Some((_, stream)) = self.streams.iter_mut().find(|(_, s)| s.id == id && !s.closed) {
            let _ = stream.send.send_data(Bytes::copy_from_slice(frame), false);
        }
    }

    /// Appends what the connection has to send now (after [`H2Conn::send_to`]) to `out`.
    pub fn drain_output(&mut self, out: &mut Vec<u8>) {
        let _ = self.pump(self.limits);
        self.pipe.take_output(out);
    }

    /// Takes all of `data` (bytes from the client), appending what goes back to `out`.
    pub fn process(&mut self, data: &[u8], out: &mut Vec<u8>, limits: Limits) -> Next {
        self.limits = limits;
        self.pipe.push_input(data);
        let mut next = self.pump(limits);
        // The pipe told `h2` to wait when it held its limit: once emptied, `h2` goes on (its
        // output is bounded by the client's flow-control windows).
        for _ in 0..MAX_PASSES {
            let before = out.len();
            self.pipe.take_output(out);
            if out.len() - before < OUTPUT_LIMIT || next == Next::CloseAfterFlush {
                break;
            }
            next = self.pump(limits);
        }
        next
    }

    /// Server shutdown: every WebSocket gets a close frame with `code` and its stream ends;
    /// the connection says GOAWAY.
    pub fn close_with(&mut self, code: u16, out: &mut Vec<u8>) {
        for (_, stream) in self.streams.iter_mut().filter(|(_, s)| !s.closed) {
            self.echo.clear();
            stream.state.close_with(code, &mut self.echo);
            let _ = stream.send.send_data(Bytes::copy_from_slice(&self.echo), true);
            stream.closed = true;
        }
        if let Some(connection) = self.connection.as_mut() {
            connection.graceful_shutdown();
        }
        let _ = self.pump(Limits { max_message: 0, max_header_bytes: 0, deflate: false, pubsub: false });
        self.pipe.take_output(out);
    }

    fn pump(&mut self, limits: Limits) -> Next {
        for _ in 0..MAX_PASSES {
            if let Some(handshake) = self.handshake.as_mut() {
                match handshake.as_mut().poll(&mut context()) {
                    Poll::Pending => return Next::Continue,
                    Poll::Ready(Ok(connection)) => {
                        self.connection = Some(connection);
                        self.handshake = None;
                    }
                    Poll::Ready(Err(_)) => return Next::CloseAfterFlush,
                }
            }
            let mut moved = false;
            loop {
                let Some(connection) = self.connection.as_mut() else { return Next::CloseAfterFlush };
                match connection.poll_accept(&mut context()) {
                    Poll::Pending => break,
                    Poll::Ready(Some(Ok((request, respond)))) => {
                        moved = true;
                        self.accept(request, respond, limits);
                    }
                    // The client said GOAWAY and its streams are done, or the connection failed.
                    Poll::Ready(None | Some(Err(_))) => return Next::CloseAfterFlush,
                }
            }
            moved |= self.serve_streams(limits);
            if !moved && self.ready.is_empty() {
                return Next::Continue;
            }
        }
        Next::Continue
    }

    /// A new stream: an extended CONNECT for a WebSocket is answered 200 and its stream
    /// kept; anything else gets its answer and ends.
    fn accept(&mut self, request: Request<RecvStream>, mut respond: SendResponse<Bytes>, limits: Limits) {
        let protocol = request.extensions().get::<h2::ext::Protocol>().map(|p| p.as_str().to_owned());
        let header = |name: &str| request.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or("");
        let status = match (request.method(), protocol.as_deref()) {
            (&Method::GET | &Method::HEAD, None) => {
                let response =
                    Response::builder().header("content-type", "text/plain").body(()).unwrap_or_default();
                if let Ok(mut send) = respond.send_response(response, false) {
                    let _ = send.send_data(Bytes::from_static(b"ok\n"), true);
                }
                return;
            }
            (&Method::CONNECT, Some(p)) if p.eq_ignore_ascii_case("websocket") => {
                match header("sec-websocket-version") {
                    "13" => StatusCode::OK,
                    _ => StatusCode::BAD_REQUEST,
                }
            }
            (&Method::CONNECT, Some(_)) => StatusCode::NOT_IMPLEMENTED,
            _ => StatusCode::BAD_REQUEST,
        };
        if status != StatusCode::OK {
            let response = Response::builder().status(status).header("sec-websocket-version", "13");
            let _ = respond.send_response(response.body(()).unwrap_or_default(), true);
            return;
        }
        let list = |name: &str| -> Vec<String> {
            request
                .headers()
                .get_all(name)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .flat_map(|v| v.split(','))
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
                .collect()
        };
        let upgrade = UpgradeRequest {
            path: request.uri().path().to_owned(),
            key: String::new(),
            protocols: list("sec-websocket-protocol"),
            extensions: request
                .headers()
                .get_all("sec-websocket-extensions")
                .iter()
                .filter_map(|v| v.to_str().ok())
                .map(str::to_owned)
                .collect(),
        };
        let mut response = Response::builder().status(StatusCode::OK);
        if let Some(protocol) = upgrade.protocols.first() {
            response = response.header("sec-websocket-protocol", protocol.as_str());
        }
        let mut compression = None;
        if limits.deflate
            && let Some((state, answer)) = Compression::negotiate(&upgrade, limits.max_message)
        {
            response = response.header("sec-websocket-extensions", answer);
            compression = Some(state);
        }
        let id = respond.stream_id().as_u32();
        let Ok(send) = respond.send_response(response.body(()).unwrap_or_default(), false) else { return };
        let slot = self.streams.vacant_key();
        let waker = self.ready.waker(slot);
        let mut state = ConnState::websocket(compression);
        if let Some(budget) = &self.message_memory {
            state.reservation = Reservation::new(budget.clone());
        }
        self.streams.insert(Stream {
            id,
            waker,
            recv: request.into_body(),
            send,
            state,
            input: Vec::new(),
            closed: false,
        });
        self.woken.push(slot);
    }

    /// Reads the streams `h2` woke and echoes what they carry. Whether anything came.
    fn serve_streams(&mut self, limits: Limits) -> bool {
        self.ready.take(&mut self.woken);
        let mut moved = false;
        while let Some(slot) = self.woken.pop() {
            let Some(stream) = self.streams.get_mut(slot) else { continue };
            let waker = stream.waker.clone();
            let mut cx = Context::from_waker(&waker);
            loop {
                match stream.recv.poll_data(&mut cx) {
                    Poll::Pending => break,
                    Poll::Ready(Some(Ok(data))) => {
                        moved = true;
                        let _ = stream.recv.flow_control().release_capacity(data.len());
                        if !stream.closed {
                            stream.echo(&data, &mut self.echo, limits);
                            self.commands |= !stream.state.inbox.is_empty();
                        }
                    }
                    // The client ended its side (or reset the stream): the WebSocket is over.
                    Poll::Ready(None | Some(Err(_))) => {
                        moved = true;
                        if !stream.closed {
                            let _ = stream.send.send_data(Bytes::new(), true);
                        }
                        self.streams.remove(slot);
                        break;
                    }
                }
            }
        }
        moved
    }
}

impl Stream {
    /// Echoes the frames in `data` (after what is left of earlier DATA); a finished close
    /// handshake or a protocol error ends our side of the stream.
    fn echo(&mut self, data: &[u8], out: &mut Vec<u8>, limits: Limits) {
        out.clear();
        self.input.extend_from_slice(data);
        let mut input = std::mem::take(&mut self.input);
        let (used, next) = self.state.process(&mut input, out, limits);
        input.drain(..used);
        self.input = input;
        let end = next == Next::CloseAfterFlush;
        if !out.is_empty() || end {
            // A large echo is handed over rather than copied (and not kept for the next one).
            let echo = if out.len() > 1 << 20 {
                Bytes::from(std::mem::take(out))
            } else {
                Bytes::copy_from_slice(out)
            };
            let _ = self.send.send_data(echo, end);
        }
        if end {
            self.closed = true;
            self.input = Vec::new();
            self.state.phase = Phase::Closing;
        }
    }
}
