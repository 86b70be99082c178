//! A connection's byte stream: a plain non-blocking TCP socket or rustls on top of one,
//! for either side (the load engine's client connections use it too). Both look the same
//! to a connection state machine: `read` gives plaintext (0 at end of
//! stream, `WouldBlock` when nothing is ready), `write` accepts what fits. TLS output is
//! capped inside rustls so a slow reader pushes back instead of growing memory.
//!
//! A crate of its own so the echo server and the load engine share it without either
//! depending on the other. The per-event methods are `#[inline]`: both callers are in
//! other crates, and these calls sit on their hot paths. [`http2`] runs HTTP/2 over such a
//! stream for both sides too. [`handshakes`] counts the TLS handshakes each thread
//! completes, full or resumed, with the CPU they cost it.

pub mod handshakes;
pub mod http2;
pub mod http3;
pub mod quic;

use std::io::{self, Read, Write};
use std::net::Shutdown;

use mio::net::TcpStream;
use rustls::{Connection, HandshakeKind};

use handshakes::{HandshakeClock, thread_cpu_ns};
pub use handshakes::{HandshakeTally, take_handshakes};

/// Plaintext rustls may buffer per connection before `write` reports it full.
const TLS_BUFFER_LIMIT: usize = 256 * 1024;

#[derive(Debug)]
pub enum Transport {
    Plain(TcpStream),
    Tls(Box<TlsStream>),
}

#[derive(Debug)]
pub struct TlsStream {
    socket: TcpStream,
    session: Connection,
    /// The handshake's CPU so far, while it runs (see [`handshakes`]).
    clock: Option<HandshakeClock>,
}

impl Transport {
    pub fn tls(socket: TcpStream, session: impl Into<Connection>) -> Transport {
        Transport::Tls(Box::new(TlsStream::new(socket, session.into(), None)))
    }

    /// A TLS stream whose handshake is counted when it completes ([`handshakes`]), its
    /// CPU time from `new_session` (making the session: a client's key share and hello) on.
    /// `tried`: a client allowed to offer a stored session.
    pub fn tls_counted<C: Into<Connection>, E>(
        socket: TcpStream,
        tried: bool,
        new_session: impl FnOnce() -> Result<C, E>,
    ) -> Result<Transport, E> {
        let start = thread_cpu_ns();
        let session = new_session()?.into();
        let clock = HandshakeClock { cpu_ns: thread_cpu_ns().saturating_sub(start), tried };
        Ok(Transport::Tls(Box::new(TlsStream::new(socket, session, Some(clock)))))
    }

    #[inline]
    pub fn socket(&mut self) -> &mut TcpStream {
        match self {
            Transport::Plain(socket) => socket,
            Transport::Tls(tls) => &mut tls.socket,
        }
    }

    #[inline]
    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Transport::Plain(socket) => socket.read(buf),
            Transport::Tls(tls) => tls.timed(|tls| tls.read(buf)),
        }
    }

    #[inline]
    pub fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        match self {
            Transport::Plain(socket) => socket.write(data),
            Transport::Tls(tls) => tls.timed(|tls| {
                let accepted = tls.session.writer().write(data)?;
                tls.flush_records()?;
                if accepted == 0 && !data.is_empty() {
                    return Err(io::ErrorKind::WouldBlock.into());
                }
                Ok(accepted)
            }),
        }
    }

    /// Writes several buffers in one call where the stream allows it (`writev` on plain
    /// TCP: several queued frames go out in one syscall); TLS takes them one by one.
    #[inline]
    pub fn write_vectored(&mut self, data: &[io::IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Transport::Plain(socket) => socket.write_vectored(data),
            Transport::Tls(_) => match data.iter().find(|d| !d.is_empty()) {
                Some(first) => self.write(first),
                None => Ok(0),
            },
        }
    }

    /// Pushes out TLS records rustls still holds; true when none are left.
    #[inline]
    pub fn flush(&mut self) -> io::Result<bool> {
        match self {
            Transport::Plain(_) => Ok(true),
            Transport::Tls(tls) => tls.timed(TlsStream::flush_records),
        }
    }

    /// Whether a read shorter than the buffer proves the socket is drained. True for plain
    /// TCP: with edge-triggered readiness, bytes arriving after that read raise a new
    /// event, so the extra read that would only return `WouldBlock` can be skipped (one
    /// syscall per echo). Not for TLS, which buffers records inside rustls.
    #[inline]
    pub fn short_read_drains(&self) -> bool {
        matches!(self, Transport::Plain(_))
    }

    /// TLS is still negotiating (always false for plain TCP).
    #[inline]
    pub fn is_handshaking(&self) -> bool {
        matches!(self, Transport::Tls(tls) if tls.session.is_handshaking())
    }

    /// The negotiated TLS version and cipher suite once the handshake is done (None for
    /// plain TCP).
    pub fn negotiated_tls(&self) -> Option<(rustls::ProtocolVersion, rustls::CipherSuite)> {
        match self {
            Transport::Plain(_) => None,
            Transport::Tls(tls) => {
                Some((tls.session.protocol_version()?, tls.session.negotiated_cipher_suite()?.suite()))
            }
        }
    }

    /// The application protocol TLS negotiated (ALPN), e.g. `h2` (None for plain TCP, or
    /// while negotiating, or when none was agreed).
    pub fn alpn_protocol(&self) -> Option<&[u8]> {
        match self {
            Transport::Plain(_) => None,
            Transport::Tls(tls) => tls.session.alpn_protocol(),
        }
    }

    /// Ends our side of the stream (TLS close_notify first) while still reading the peer's.
    pub fn shutdown_write(&mut self) {
        if let Transport::Tls(tls) = self {
            tls.session.send_close_notify();
            let _ = tls.flush_records();
        }
        let _ = self.socket().shutdown(Shutdown::Write);
    }
}

impl TlsStream {
    fn new(socket: TcpStream, mut session: Connection, clock: Option<HandshakeClock>) -> TlsStream {
        session.set_buffer_limit(Some(TLS_BUFFER_LIMIT));
        TlsStream { socket, session, clock }
    }

    /// Runs `call`, adding its CPU time to the handshake's while one is counted, and counts
    /// the handshake once it is done. Costs one branch once the handshake is over.
    #[inline]
    fn timed<T>(&mut self, call: impl FnOnce(&mut TlsStream) -> T) -> T {
        if self.clock.is_none() {
            return call(self);
        }
        let start = thread_cpu_ns();
        let result = call(self);
        let spent = thread_cpu_ns().saturating_sub(start);
        if let Some(clock) = self.clock.as_mut() {
            clock.cpu_ns += spent;
            if !self.session.is_handshaking() {
                clock.count(self.session.handshake_kind() == Some(HandshakeKind::Resumed));
                self.clock = None;
            }
        }
        result
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.session.reader().read(buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                // The peer closed the TCP stream without close_notify: treat as end of stream.
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
                Err(e) => return Err(e),
            }
            if self.session.read_tls(&mut self.socket)? == 0 {
                return Ok(0);
            }
            if let Err(error) = self.session.process_new_packets() {
                // Send the alert rustls queued, then give up on the connection.
                let _ = self.flush_records();
                return Err(io::Error::new(io::ErrorKind::InvalidData, error));
            }
            if self.session.wants_write() {
                self.flush_records()?;
            }
        }
    }

    fn flush_records(&mut self) -> io::Result<bool> {
        while self.session.wants_write() {
            match self.session.write_tls(&mut self.socket) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }
}
