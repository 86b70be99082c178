//! A WebSocket's byte stream as the worker sees it: its own TCP connection (plain or TLS,
//! RFC 6455's one WebSocket per connection), or a stream of a connection that carries
//! several (HTTP/2's extended CONNECT, RFC 8441), which a carrier in `dial/` owns together
//! with the socket. The worker reads and writes its own streams directly; a carried one's
//! bytes go through its carrier, so here it only says which carrier and stream it is.
//! The own-socket methods are `#[inline]` and add one predictable branch to the hot path.

use std::io;
use std::os::fd::AsRawFd;
use std::time::Duration;

use mio::net::TcpStream;
use wsbench_transport::Transport;

use super::rx_time;

#[derive(Debug)]
pub enum ByteStream {
    /// The WebSocket's own TCP connection.
    Own(Transport),
    /// Stream `stream` of carrier `carrier` (the worker's carrier table).
    Carried { carrier: usize, stream: usize },
}

impl From<Transport> for ByteStream {
    fn from(transport: Transport) -> ByteStream {
        ByteStream::Own(transport)
    }
}

impl ByteStream {
    /// The socket to watch, for a stream that has one of its own.
    #[inline]
    pub fn socket(&mut self) -> Option<&mut TcpStream> {
        match self {
            ByteStream::Own(transport) => Some(transport.socket()),
            ByteStream::Carried { .. } => None,
        }
    }

    /// The carrier and stream of a carried one.
    #[inline]
    pub fn carried(&self) -> Option<(usize, usize)> {
        match self {
            ByteStream::Own(_) => None,
            ByteStream::Carried { carrier, stream } => Some((*carrier, *stream)),
        }
    }

    #[inline]
    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            ByteStream::Own(transport) => transport.read(buf),
            ByteStream::Carried { .. } => Err(io::ErrorKind::WouldBlock.into()),
        }
    }

    /// [`ByteStream::read`] with the bytes' arrival stamp, for a plain socket of its own
    /// (a TLS record or a carried stream's bytes have none: their time is when they are read).
    #[inline]
    pub fn read_stamped(&mut self, buf: &mut [u8]) -> io::Result<(usize, Option<Duration>)> {
        match self {
            ByteStream::Own(Transport::Plain(socket)) => rx_time::recv(socket.as_raw_fd(), buf),
            _ => self.read(buf).map(|n| (n, None)),
        }
    }

    /// A carried stream takes nothing here (its carrier takes what is pending).
    #[inline]
    pub fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        match self {
            ByteStream::Own(transport) => transport.write(data),
            ByteStream::Carried { .. } => Err(io::ErrorKind::WouldBlock.into()),
        }
    }

    #[inline]
    pub fn write_vectored(&mut self, data: &[io::IoSlice<'_>]) -> io::Result<usize> {
        match self {
            ByteStream::Own(transport) => transport.write_vectored(data),
            ByteStream::Carried { .. } => Err(io::ErrorKind::WouldBlock.into()),
        }
    }

    #[inline]
    pub fn flush(&mut self) -> io::Result<bool> {
        match self {
            ByteStream::Own(transport) => transport.flush(),
            ByteStream::Carried { .. } => Ok(true),
        }
    }

    #[inline]
    pub fn short_read_drains(&self) -> bool {
        match self {
            ByteStream::Own(transport) => transport.short_read_drains(),
            ByteStream::Carried { .. } => false,
        }
    }

    #[inline]
    pub fn is_handshaking(&self) -> bool {
        match self {
            ByteStream::Own(transport) => transport.is_handshaking(),
            ByteStream::Carried { .. } => false,
        }
    }

    /// The TLS session of the WebSocket's own connection (a carried one's is its carrier's).
    pub fn negotiated_tls(&self) -> Option<(rustls::ProtocolVersion, rustls::CipherSuite)> {
        match self {
            ByteStream::Own(transport) => transport.negotiated_tls(),
            ByteStream::Carried { .. } => None,
        }
    }
}
