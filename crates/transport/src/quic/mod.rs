//! QUIC (RFC 9000) for WebSockets over HTTP/3, from quinn's sans-I/O core (`quinn-proto`):
//! an [`Endpoint`] routes the datagrams of one UDP socket to its connections, each a
//! [`Session`] with the HTTP/3 layer on top. Like [`crate::http2`], nothing here owns a
//! socket or a runtime: the caller's event loop hands in datagrams with [`Endpoint::receive`],
//! sends what [`Endpoint::transmit`] gives, and calls [`Endpoint::on_timeout`] when
//! [`Endpoint::next_timeout`] falls due.
//!
//! quinn-proto rather than tokio-quiche or quinn itself: it is the only mature QUIC stack
//! in Rust usable without an async runtime (quinn and tokio-quiche both need tokio; quiche
//! itself builds BoringSSL with cmake), it uses the rustls the rest of wsbench uses, and it
//! built here in 10 s (its own new dependencies: lru-slab, tinyvec, slab, rustc-hash).

pub mod session;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use quinn_proto::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use quinn_proto::{DatagramEvent, EndpointConfig, TransportConfig, VarInt};

pub use quinn_proto::{ClientConfig, ConnectionHandle, ServerConfig, StreamId};
pub use session::{Cause, Event, PacketStats, Session};

/// The largest UDP payload handed in or out.
pub const MAX_DATAGRAM: usize = 65_527;

/// The QUIC side of a client from its rustls configuration (TLS 1.3 with ALPN `h3` set by
/// the caller), allowing `streams` concurrent WebSockets per connection.
pub fn client_config(tls: Arc<rustls::ClientConfig>, streams: u32) -> Result<ClientConfig, String> {
    let crypto = QuicClientConfig::try_from(tls).map_err(|e| format!("TLS for QUIC: {e}"))?;
    let mut config = ClientConfig::new(Arc::new(crypto));
    config.transport_config(Arc::new(transport(streams)));
    Ok(config)
}

/// The QUIC side of a server from its rustls configuration.
pub fn server_config(tls: rustls::ServerConfig, streams: u32) -> Result<Arc<ServerConfig>, String> {
    let crypto = QuicServerConfig::try_from(tls).map_err(|e| format!("TLS for QUIC: {e}"))?;
    let mut config = ServerConfig::with_crypto(Arc::new(crypto));
    config.transport_config(Arc::new(transport(streams)));
    Ok(Arc::new(config))
}

fn transport(streams: u32) -> TransportConfig {
    let mut config = TransportConfig::default();
    config.max_concurrent_bidi_streams(VarInt::from_u32(streams));
    // The peer's control stream and up to two QPACK streams.
    config.max_concurrent_uni_streams(VarInt::from_u32(3));
    config.keep_alive_interval(Some(Duration::from_secs(5)));
    config
}

/// A UDP socket's QUIC endpoint and its connections.
#[derive(Debug)]
pub struct Endpoint {
    quic: quinn_proto::Endpoint,
    sessions: HashMap<ConnectionHandle, Session>,
    server: Option<Arc<ServerConfig>>,
    enable_connect: bool,
    /// Datagrams to send that belong to no connection (stateless answers), with their
    /// destinations.
    stateless: Vec<(SocketAddr, Vec<u8>)>,
}

impl Endpoint {
    /// A client endpoint.
    pub fn client() -> Endpoint {
        Endpoint::new(None, false)
    }

    /// A server endpoint; `enable_connect` advertises extended CONNECT (a server without it
    /// refuses WebSockets, as a plain HTTP/3 server does).
    pub fn server(config: Arc<ServerConfig>, enable_connect: bool) -> Endpoint {
        Endpoint::new(Some(config), enable_connect)
    }

    fn new(server: Option<Arc<ServerConfig>>, enable_connect: bool) -> Endpoint {
        let quic =
            quinn_proto::Endpoint::new(Arc::new(EndpointConfig::default()), server.clone(), true, None);
        Endpoint { quic, sessions: HashMap::new(), server, enable_connect, stateless: Vec::new() }
    }

    /// Starts a connection to `remote` (`server_name` checked against its certificate).
    pub fn connect(
        &mut self,
        now: Instant,
        config: ClientConfig,
        remote: SocketAddr,
        server_name: &str,
    ) -> Result<ConnectionHandle, String> {
        let (handle, conn) =
            self.quic.connect(now, config, remote, server_name).map_err(|e| e.to_string())?;
        self.sessions.insert(handle, Session::new(conn, false, false));
        Ok(handle)
    }

    /// Hands in a datagram from `remote`; returns the connection it went to, if any.
    pub fn receive(&mut self, now: Instant, remote: SocketAddr, data: &[u8]) -> Option<ConnectionHandle> {
        let mut buf = Vec::new();
        match self.quic.handle(now, remote, None, None, BytesMut::from(data), &mut buf)? {
            DatagramEvent::ConnectionEvent(handle, event) => {
                let session = self.sessions.get_mut(&handle)?;
                session.conn.handle_event(event);
                self.settle(now, handle);
                Some(handle)
            }
            DatagramEvent::NewConnection(incoming) => {
                let mut buf = Vec::new();
                match self.quic.accept(incoming, now, &mut buf, self.server.clone()) {
                    Ok((handle, conn)) => {
                        self.sessions.insert(handle, Session::new(conn, true, self.enable_connect));
                        self.settle(now, handle);
                        Some(handle)
                    }
                    Err(error) => {
                        if let Some(transmit) = error.response {
                            buf.truncate(transmit.size);
                            self.stateless.push((transmit.destination, buf));
                        }
                        None
                    }
                }
            }
            DatagramEvent::Response(transmit) => {
                buf.truncate(transmit.size);
                self.stateless.push((transmit.destination, buf));
                None
            }
        }
    }

    /// Lets a connection's endpoint events and HTTP/3 layer catch up after it changed.
    fn settle(&mut self, now: Instant, handle: ConnectionHandle) {
        let Some(session) = self.sessions.get_mut(&handle) else { return };
        while let Some(event) = session.conn.poll_endpoint_events() {
            if let Some(event) = self.quic.handle_event(handle, event) {
                session.conn.handle_event(event);
            }
        }
        session.process(now);
    }

    /// The next datagram to send into `buf` and its destination (call until `None`).
    pub fn transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<SocketAddr> {
        if let Some((to, bytes)) = self.stateless.pop() {
            buf.clear();
            buf.extend_from_slice(&bytes);
            return Some(to);
        }
        for session in self.sessions.values_mut() {
            buf.clear();
            if let Some(transmit) = session.conn.poll_transmit(now, 1, buf) {
                buf.truncate(transmit.size);
                return Some(transmit.destination);
            }
        }
        None
    }

    /// When [`Endpoint::on_timeout`] is next due.
    pub fn next_timeout(&mut self) -> Option<Instant> {
        self.sessions.values_mut().filter_map(|s| s.conn.poll_timeout()).min()
    }

    /// Runs the timers that fell due by `now` and drops connections that are over and have
    /// told so (an idle timeout ends a connection within this call: its
    /// [`Event::Closed`] is read before the session goes, at a later call).
    pub fn on_timeout(&mut self, now: Instant) {
        let handles: Vec<ConnectionHandle> = self.sessions.keys().copied().collect();
        for handle in handles {
            if let Some(session) = self.sessions.get_mut(&handle)
                && session.conn.poll_timeout().is_some_and(|at| at <= now)
            {
                session.conn.handle_timeout(now);
            }
            self.settle(now, handle);
        }
        self.sessions.retain(|_, s| !(s.conn.is_drained() && s.is_closed() && !s.has_events()));
    }

    /// After the caller wrote to a session: its output and events catch up.
    pub fn touched(&mut self, now: Instant, handle: ConnectionHandle) {
        self.settle(now, handle);
    }

    /// Closes every connection not over yet ([`Session::close`]: H3_NO_ERROR); the caller
    /// then sends what [`Endpoint::transmit`] gives, the closes among it.
    pub fn close_all(&mut self, now: Instant) {
        for session in self.sessions.values_mut() {
            session.close(now);
        }
    }

    pub fn session(&mut self, handle: ConnectionHandle) -> Option<&mut Session> {
        self.sessions.get_mut(&handle)
    }

    /// Every connection's handle.
    pub fn handles(&self) -> Vec<ConnectionHandle> {
        self.sessions.keys().copied().collect()
    }
}

#[cfg(test)]
mod tests;
