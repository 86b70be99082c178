//! How a connection becomes a WebSocket, behind one interface ([`Dial`]) and a registry
//! ([`DIALS`]): the socket and its connect, the TLS session, the opening handshake and the
//! check of the server's answer. Today's member is [`http1`] (one TCP connection per
//! WebSocket, RFC 6455's HTTP/1.1 upgrade); why a handshake failed is counted the same way
//! for any member ([`failure`]). The worker drives the connection; a member owns no event
//! loop. Adding a transport is a file or folder here and a line in [`DIALS`].

pub mod failure;
mod http1;

use std::io;
use std::time::Instant;

use super::Job;
use super::conn::ClientConn;
use crate::metrics::Counters;

pub use failure::{HandshakeFailure, Upgrade};

/// Every transport, by name.
pub static DIALS: &[&dyn Dial] = &[&http1::Http1];

/// The transport a run's connections use.
pub fn of(_job: &Job) -> &'static dyn Dial {
    DIALS[0]
}

/// One way of opening WebSockets.
pub trait Dial: Sync + std::fmt::Debug {
    fn name(&self) -> &'static str;
    /// Starts connection `index` (global number): its connect in progress, its TLS set up,
    /// its opening handshake queued to be written once connected.
    fn open(&self, job: &Job, index: u64, now: Instant) -> io::Result<ClientConn>;
    /// Whether the connect has completed: `Ok(false)` while in progress, its error when it
    /// failed.
    fn connected(&self, conn: &mut ClientConn) -> io::Result<bool>;
    /// The server's answer to the handshake at the start of `data`: incomplete, accepted
    /// (with the bytes it took; frames may follow, and what it agreed is counted and set on
    /// the connection) or refused and why.
    fn answer(&self, job: &Job, conn: &mut ClientConn, data: &mut [u8], counters: &mut Counters) -> Upgrade;
}

/// Counts a failed connect attempt by its cause.
pub fn count_error(counters: &mut Counters, error: &io::Error) {
    match error.raw_os_error() {
        Some(libc::ECONNREFUSED) => counters.connections_refused += 1,
        Some(libc::ETIMEDOUT) => counters.connect_timeouts += 1,
        _ => counters.connect_errors += 1,
    }
}
