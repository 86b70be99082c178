//! Listening sockets: one per event loop, all on the same port through `SO_REUSEPORT`, so
//! the kernel spreads new connections over the loops. The backlog is large because the
//! seeds' ramps open thousands of connections per second.

use std::net::{IpAddr, SocketAddr};

use socket2::{Domain, Protocol, Socket, Type};

use crate::ServeError;

const BACKLOG: i32 = 65_535;

/// Binds `count` listeners to `host:port`; with port 0 they all share the port the first
/// one was given.
pub fn bind_group(host: IpAddr, port: u16, count: usize) -> Result<Vec<mio::net::TcpListener>, ServeError> {
    let mut addr = SocketAddr::new(host, port);
    let mut listeners = Vec::with_capacity(count);
    for _ in 0..count {
        let listener = bind_one(addr).map_err(|source| ServeError::Bind { addr, source })?;
        addr = listener.local_addr()?;
        listeners.push(listener);
    }
    Ok(listeners)
}

/// Binds `host:port` (port 0: a free one) with `SO_REUSEPORT` but does not listen: the port
/// is held for server processes that bind it too, and since the socket never listens the
/// kernel never hands it a connection. Drop it once they listen.
pub fn reserve(host: IpAddr, port: u16) -> Result<Socket, ServeError> {
    let addr = SocketAddr::new(host, port);
    let reserve = || -> std::io::Result<Socket> {
        let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
        socket.set_reuse_address(true)?;
        socket.set_reuse_port(true)?;
        socket.bind(&addr.into())?;
        Ok(socket)
    };
    reserve().map_err(|source| ServeError::Bind { addr, source })
}

fn bind_one(addr: SocketAddr) -> std::io::Result<mio::net::TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    socket.set_reuse_port(true)?;
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(BACKLOG)?;
    Ok(mio::net::TcpListener::from_std(socket.into()))
}
