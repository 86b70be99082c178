//! WebSockets over HTTP/3 (RFC 9220) for `wsbench serve --h3`: one thread with a UDP
//! socket on the WebSocket port's number and a QUIC endpoint (`wsbench_transport::quic`).
//! Its SETTINGS carry SETTINGS_ENABLE_CONNECT_PROTOCOL (left out with
//! `--h3-refuse-websockets`, to stand for a plain HTTP/3 server); each extended CONNECT with
//! `:protocol websocket` is answered `200` and its stream then echoes exactly as an
//! HTTP/1.1 WebSocket does ([`ConnState`]), its frames in DATA frames. A stream's close
//! handshake ends that stream, as does the client's end or reset; the connection and its
//! other streams go on. Echoes are counted with the event loops' ([`Shared::echoed`]).
//! A client that does not read its echoes gets the event loops' backpressure, per
//! WebSocket: past [`BACKPRESSURE_BYTES`] queued on its stream, the stream's input is left
//! unread (QUIC's flow control then stops the client) until the queue has drained, so the
//! server's memory does not grow with what such a client sends. When the server stops, its
//! QUIC connections are closed (H3_NO_ERROR), not left to time out.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use mio::net::UdpSocket;
use mio::{Events, Interest, Poll, Token, Waker};
use wsbench_transport::quic::{self, ConnectionHandle, Endpoint, Event, StreamId};

use crate::conn::{ConnState, Limits, Next};
use crate::event_loop::{BACKPRESSURE_BYTES, Shared};
use crate::{ServeConfig, ServeError};

const SOCKET: Token = Token(0);
const WAKER: Token = Token(1);
/// WebSockets one QUIC connection may have open at once.
pub const MAX_STREAMS: u32 = 1000;
/// The longest sleep: the stop flag is also looked at this often.
const TICK: Duration = Duration::from_millis(100);

/// One WebSocket on a request stream.
#[derive(Debug)]
struct Stream {
    state: ConnState,
    /// An incomplete frame from earlier DATA.
    input: Vec<u8>,
}

/// The HTTP/3 side of a server: its socket, endpoint and WebSockets.
pub struct H3Server {
    poll: Poll,
    socket: UdpSocket,
    endpoint: Endpoint,
    streams: HashMap<(ConnectionHandle, StreamId), Stream>,
    /// Streams whose input is left unread until their queued echoes have gone.
    paused: Vec<(ConnectionHandle, StreamId)>,
    limits: Limits,
    shared: Arc<Shared>,
    echoed: Arc<AtomicU64>,
    datagram: Vec<u8>,
    out: Vec<u8>,
}

impl std::fmt::Debug for H3Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("H3Server").field("streams", &self.streams.len()).finish_non_exhaustive()
    }
}

impl H3Server {
    /// Binds UDP `addr` and sets the endpoint up with `tls` (ALPN `h3` set here).
    pub fn bind(
        addr: SocketAddr,
        tls: &rustls::ServerConfig,
        config: &ServeConfig,
        shared: Arc<Shared>,
    ) -> Result<H3Server, ServeError> {
        let mut tls = tls.clone();
        tls.alpn_protocols = vec![wsbench_transport::http3::ALPN.to_vec()];
        tls.max_early_data_size = 0;
        let quic_config = quic::server_config(tls, MAX_STREAMS).map_err(ServeError::Tls)?;
        let mut socket = UdpSocket::bind(addr).map_err(|source| ServeError::Bind { addr, source })?;
        let poll = Poll::new()?;
        poll.registry().register(&mut socket, SOCKET, Interest::READABLE)?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
        shared.wakers.lock().unwrap_or_else(|e| e.into_inner()).push(waker);
        let echoed = Arc::new(AtomicU64::new(0));
        shared.echoed.lock().unwrap_or_else(|e| e.into_inner()).push(echoed.clone());
        let limits = Limits {
            max_message: config.max_message,
            max_header_bytes: config.max_header_bytes,
            deflate: false,
            pubsub: false,
        };
        Ok(H3Server {
            poll,
            socket,
            endpoint: Endpoint::server(quic_config, !config.h3_refuse_websockets),
            streams: HashMap::new(),
            paused: Vec::new(),
            limits,
            shared,
            echoed,
            datagram: vec![0; quic::MAX_DATAGRAM],
            out: Vec::new(),
        })
    }

    /// The UDP address it listens on.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    /// Serves until the server stops.
    pub fn run(mut self) -> std::io::Result<()> {
        let mut events = Events::with_capacity(64);
        while !self.shared.stopping.load(Ordering::SeqCst) {
            self.turn(&mut events, TICK)?;
        }
        self.close();
        Ok(())
    }

    /// Ends every QUIC connection with H3_NO_ERROR, so clients learn it now rather than at
    /// their idle timeout.
    fn close(&mut self) {
        self.endpoint.close_all(Instant::now());
        self.transmit();
    }

    /// One turn: waits up to `longest` for datagrams or a timer, then takes what came,
    /// answers it and sends what is due.
    fn turn(&mut self, events: &mut Events, longest: Duration) -> std::io::Result<()> {
        let now = Instant::now();
        let timeout =
            self.endpoint.next_timeout().map_or(longest, |at| at.saturating_duration_since(now).min(longest));
        self.poll.poll(events, Some(timeout))?;
        self.receive();
        self.endpoint.on_timeout(Instant::now());
        self.serve();
        self.transmit();
        let echoed = crate::echo_count::take_echoed();
        if echoed > 0 {
            self.echoed.store(self.echoed.load(Ordering::Relaxed) + echoed, Ordering::Relaxed);
        }
        Ok(())
    }

    fn receive(&mut self) {
        while let Ok((n, from)) = self.socket.recv_from(&mut self.datagram) {
            self.endpoint.receive(Instant::now(), from, &self.datagram[..n]);
        }
    }

    fn transmit(&mut self) {
        let now = Instant::now();
        while let Some(to) = self.endpoint.transmit(now, &mut self.out) {
            if self.socket.send_to(&self.out, to).is_err() {
                // A full socket buffer drops the datagram: QUIC's loss recovery resends it.
                break;
            }
        }
    }

    /// Acts on every connection's events.
    fn serve(&mut self) {
        self.resume_drained();
        for handle in self.endpoint.handles() {
            while let Some(event) = self.endpoint.session(handle).and_then(|s| s.next_event()) {
                self.on_event(handle, event);
            }
            self.endpoint.touched(Instant::now(), handle);
        }
        let live = self.endpoint.handles();
        self.streams.retain(|(handle, _), _| live.contains(handle));
    }

    /// Reads again the paused streams whose queued echoes have all gone to QUIC; forgets
    /// those that ended.
    fn resume_drained(&mut self) {
        let now = Instant::now();
        let (endpoint, streams) = (&mut self.endpoint, &self.streams);
        self.paused.retain(|&(handle, id)| {
            let Some(session) = endpoint.session(handle) else { return false };
            if !streams.contains_key(&(handle, id)) {
                return false;
            }
            if session.pending(id) > 0 {
                return true;
            }
            session.resume_reading(now, id);
            false
        });
    }

    fn on_event(&mut self, handle: ConnectionHandle, event: Event) {
        let Some(session) = self.endpoint.session(handle) else { return };
        match event {
            Event::Request(id, request) => {
                if request.protocol != b"websocket" {
                    session.respond(id, 501);
                    return;
                }
                session.respond(id, 200);
                self.streams
                    .insert((handle, id), Stream { state: ConnState::websocket(None), input: Vec::new() });
            }
            Event::Data(id, data) => self.echo(handle, id, &data),
            Event::Finished(id) | Event::Reset(id, _) => {
                if self.streams.remove(&(handle, id)).is_some() {
                    session.finish(id);
                }
            }
            Event::Ready(_) | Event::Response(..) | Event::Closed(_) => {}
        }
    }

    /// Runs stream `id`'s WebSocket over `data` and sends what it answers.
    fn echo(&mut self, handle: ConnectionHandle, id: StreamId, data: &[u8]) {
        let Some(stream) = self.streams.get_mut(&(handle, id)) else { return };
        stream.input.extend_from_slice(data);
        self.out.clear();
        let (used, next) = stream.state.process(&mut stream.input, &mut self.out, self.limits);
        stream.input.drain(..used);
        let Some(session) = self.endpoint.session(handle) else { return };
        if !self.out.is_empty() {
            session.send_data(id, &self.out);
        }
        if next == Next::CloseAfterFlush {
            self.streams.remove(&(handle, id));
            session.finish(id);
        } else if session.pending(id) > BACKPRESSURE_BYTES && !session.is_paused(id) {
            session.pause_reading(id);
            self.paused.push((handle, id));
        }
    }
}

#[cfg(test)]
#[path = "h3_tests.rs"]
mod tests;
