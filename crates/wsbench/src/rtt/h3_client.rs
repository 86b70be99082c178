//! The `wss-h3` round-trip client of `wsbench rtt`: one WebSocket opened as an RFC 9220
//! extended CONNECT on a request stream of a QUIC connection (TLS 1.3, ALPN `h3`), and one
//! masked binary frame of N bytes echoed per round trip, as `WsEcho` does over HTTP/1.1 and
//! `WsH2Echo` over HTTP/2. QUIC and HTTP/3 are what `--transport h3`'s carriers run on
//! (`wsbench_transport::quic`: quinn-proto's connection under wsbench's HTTP/3 layer),
//! driven here by one blocking UDP socket; the frame is encoded once, so a round trip costs
//! what QUIC and HTTP/3 add to WebSocket framing. Dropped, it closes the connection
//! (H3_NO_ERROR).

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::ClientConfig;
use wsbench_proto::{Decoder, OpCode, Role, write_frame};
use wsbench_transport::http3::Settings;
use wsbench_transport::quic::{self, Cause, ConnectionHandle, Endpoint, Event, StreamId};

use super::config::RttTarget;
use super::h2_client::echo_complete;

/// WebSocket echo over an HTTP/3 request stream.
pub struct WsH3Echo {
    socket: UdpSocket,
    server: SocketAddr,
    endpoint: Endpoint,
    handle: ConnectionHandle,
    /// The WebSocket's request stream, once opened.
    stream: Option<StreamId>,
    /// The whole masked frame, encoded once.
    frame: Vec<u8>,
    payload: Vec<u8>,
    decoder: Decoder,
    /// Echo bytes not yet decoded.
    input: Vec<u8>,
    datagram: Vec<u8>,
    out: Vec<u8>,
    /// The socket's read timeout now (set again only when it changes).
    read_timeout: Duration,
    /// The longest wait for the handshake, the answer or an echo.
    timeout: Duration,
}

impl std::fmt::Debug for WsH3Echo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WsH3Echo").field("payload", &self.payload.len()).finish_non_exhaustive()
    }
}

fn invalid(message: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.into())
}

impl WsH3Echo {
    /// Connects to `server` (`host` checked against its certificate): the QUIC handshake
    /// and the server's SETTINGS, each waited for at most `timeout`. The WebSocket opens
    /// with [`WsH3Echo::upgrade`].
    pub fn handshake(
        server: SocketAddr,
        host: &str,
        payload: Vec<u8>,
        tls: &ClientConfig,
        timeout: Duration,
    ) -> io::Result<(WsH3Echo, Settings)> {
        let local: SocketAddr =
            if server.is_ipv4() { ([0, 0, 0, 0], 0).into() } else { ([0u16; 8], 0).into() };
        let socket = UdpSocket::bind(local)?;
        socket.connect(server)?;
        let mut tls = tls.clone();
        tls.alpn_protocols = vec![wsbench_transport::http3::ALPN.to_vec()];
        let config = quic::client_config(Arc::new(tls), 1).map_err(io::Error::other)?;
        let mut endpoint = Endpoint::client();
        let handle = endpoint.connect(Instant::now(), config, server, host).map_err(io::Error::other)?;
        let mut frame = Vec::new();
        write_frame(&mut frame, true, OpCode::Binary, Some(rand::random()), &payload);
        let mut echo = WsH3Echo {
            socket,
            server,
            endpoint,
            handle,
            stream: None,
            frame,
            decoder: Decoder::new(Role::Client, payload.len() as u64),
            payload,
            input: Vec::new(),
            datagram: vec![0; quic::MAX_DATAGRAM],
            out: Vec::new(),
            read_timeout: Duration::ZERO,
            timeout,
        };
        let deadline = Instant::now() + timeout;
        loop {
            if let Event::Ready(settings) = echo.next_event(deadline)? {
                return Ok((echo, settings));
            }
        }
    }

    /// Opens the WebSocket on `target`'s path: the extended CONNECT (when `settings`, the
    /// server's, allow it) and its 2xx answer.
    pub fn upgrade(&mut self, target: &RttTarget, settings: Settings) -> io::Result<()> {
        if !settings.enable_connect_protocol {
            return Err(invalid(
                "the server does not allow WebSockets over HTTP/3 (no SETTINGS_ENABLE_CONNECT_PROTOCOL)",
            ));
        }
        let session = self.endpoint.session(self.handle).ok_or_else(|| invalid("the connection is gone"))?;
        let stream = session
            .open_websocket("https", &target.authority(), &target.path)
            .ok_or_else(|| invalid("the server allows no request stream"))?;
        self.stream = Some(stream);
        self.send();
        let deadline = Instant::now() + self.timeout;
        loop {
            match self.next_event(deadline)? {
                Event::Response(id, status, _) if id == stream && (200..300).contains(&status) => {
                    return Ok(());
                }
                Event::Response(id, status, _) if id == stream => {
                    return Err(invalid(format!("the server answered the CONNECT with {status}")));
                }
                event => self.stream_ended(&event)?,
            }
        }
    }

    /// An error when `event` ends the WebSocket's stream.
    fn stream_ended(&self, event: &Event) -> io::Result<()> {
        match event {
            Event::Finished(id) if Some(*id) == self.stream => {
                Err(invalid("the server ended the WebSocket's stream"))
            }
            Event::Reset(id, code) if Some(*id) == self.stream => {
                Err(invalid(format!("the server reset the WebSocket's stream (code {code:#x})")))
            }
            _ => Ok(()),
        }
    }

    /// The connection's next event, reading datagrams and running QUIC's timers until one
    /// comes; a `TimedOut` error once `deadline` passes, an error when the connection ends.
    fn next_event(&mut self, deadline: Instant) -> io::Result<Event> {
        loop {
            let session =
                self.endpoint.session(self.handle).ok_or_else(|| invalid("the connection is gone"))?;
            match session.next_event() {
                Some(Event::Closed(cause)) => return Err(invalid(ended(&cause))),
                Some(event) => return Ok(event),
                None => {}
            }
            self.transmit();
            let now = Instant::now();
            if now >= deadline {
                return Err(io::Error::from(io::ErrorKind::TimedOut));
            }
            let wake = self.endpoint.next_timeout().map_or(deadline, |at| at.min(deadline));
            self.wait_for_datagram(wake.saturating_duration_since(now))?;
            let now = Instant::now();
            self.endpoint.on_timeout(now);
            self.endpoint.touched(now, self.handle);
        }
    }

    /// One datagram read into the endpoint, waiting at most `wait`.
    fn wait_for_datagram(&mut self, wait: Duration) -> io::Result<()> {
        let wait = wait.max(Duration::from_micros(100));
        if wait != self.read_timeout {
            self.socket.set_read_timeout(Some(wait))?;
            self.read_timeout = wait;
        }
        match self.socket.recv(&mut self.datagram) {
            Ok(n) => {
                self.endpoint.receive(Instant::now(), self.server, &self.datagram[..n]);
                Ok(())
            }
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Lets the connection frame what was written and sends its datagrams.
    fn send(&mut self) {
        self.endpoint.touched(Instant::now(), self.handle);
        self.transmit();
    }

    fn transmit(&mut self) {
        let now = Instant::now();
        while self.endpoint.transmit(now, &mut self.out).is_some() {
            if self.socket.send(&self.out).is_err() {
                // A full socket buffer drops the datagram: QUIC's loss recovery resends it.
                break;
            }
        }
    }

    /// One round trip: the frame sent, its echo read and checked.
    pub fn echo(&mut self) -> io::Result<()> {
        let stream = self.stream.ok_or_else(|| invalid("no WebSocket is open"))?;
        if let Some(session) = self.endpoint.session(self.handle) {
            session.send_data(stream, &self.frame);
        }
        self.send();
        let deadline = Instant::now() + self.timeout;
        loop {
            match self.next_event(deadline)? {
                Event::Data(id, data) if id == stream => {
                    self.input.extend_from_slice(&data);
                    if let Some(result) = echo_complete(&mut self.decoder, &mut self.input, &self.payload) {
                        return result;
                    }
                }
                event => self.stream_ended(&event)?,
            }
        }
    }
}

/// Why the connection ended, with the reason the closing side gave (a TLS alert names a
/// certificate problem there).
fn ended(cause: &Cause) -> String {
    match cause {
        Cause::Transport(_, reason) | Cause::PeerApplication(_, reason) if !reason.is_empty() => {
            format!("the QUIC connection ended ({}: {reason})", cause.name())
        }
        _ => format!("the QUIC connection ended ({})", cause.name()),
    }
}

/// Closes the QUIC connection (H3_NO_ERROR) rather than leaving it to the server's idle
/// timeout.
impl Drop for WsH3Echo {
    fn drop(&mut self) {
        self.endpoint.close_all(Instant::now());
        self.transmit();
    }
}
