//! How a connection becomes a WebSocket, behind one interface ([`Dial`]) and a registry
//! ([`DIALS`]): the socket and its connect, the TLS session, the opening handshake and the
//! check of the server's answer. [`http1`] opens one TCP connection per WebSocket (RFC
//! 6455's HTTP/1.1 upgrade); [`http2`] opens WebSockets as streams of shared connections
//! (RFC 8441's extended CONNECT), [`http3`] as streams of QUIC connections (RFC 9220), each
//! such connection a [`Carrier`] that owns the socket and hands its streams' bytes to the worker. Why a handshake failed is counted the same
//! way for any member ([`failure`]). The worker drives connections and carriers; a member
//! owns no event loop. Adding a transport is a file or folder here and a line in [`DIALS`].

pub mod carrier;
mod http1;
mod http2;
mod http3;

use std::io;
use std::time::Instant;

use super::Job;
use super::conn::ClientConn;
use super::handshake_failure::Upgrade;
use crate::config::{ConfigError, TransportSpec};
use crate::metrics::Counters;
use crate::options::{OptionSpec, OptionValues};

pub use carrier::{Carrier, CarrierCx, Carriers, StreamEvent};

/// Why a target is refused before any load ([`Dial::check`]): one line naming the cause and
/// what to do.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The server answered and does not take WebSockets over this transport (no extended
    /// CONNECT, another protocol, no answer over it): a refusal by the target, as a failed
    /// handshake is, so the run exits as one that counted failures.
    #[error("{0}")]
    Refused(String),
    /// The check could not ask the server: a URL the transport cannot use, a socket that
    /// would not open.
    #[error("{0}")]
    Failed(String),
}

/// Every transport, by name (the first is the default).
pub static DIALS: &[&dyn Dial] = &[&http1::Http1, &http2::Http2, &http3::Http3];

/// The transport a run's connections use (`LoadSpec::transport`, checked by validation).
pub fn of(job: &Job) -> &'static dyn Dial {
    by_name(job.load.transport.name).unwrap_or(DIALS[0])
}

/// The transport called `name`.
pub fn by_name(name: &str) -> Option<&'static dyn Dial> {
    DIALS.iter().copied().find(|dial| dial.name() == name)
}

/// The transport `--transport NAME` names (its short name or its recorded one).
pub fn by_flag_name(name: &str) -> Option<&'static dyn Dial> {
    DIALS.iter().copied().find(|dial| dial.flag_name() == name || dial.name() == name)
}

/// One way of opening WebSockets.
pub trait Dial: Sync + std::fmt::Debug {
    /// The name result files record (`config.transport.name`, `summary.transport.name`).
    fn name(&self) -> &'static str;
    /// The name `--transport` takes (`h1`, `h2`).
    fn flag_name(&self) -> &'static str;
    /// What people call it, for reports and comparisons (`HTTP/2 (RFC 8441)`).
    fn title(&self) -> &'static str;
    /// The options it takes, declared here and collected by `crate::members` into flags and
    /// scenario-file keys; an option of kind `Switch` among them picks this transport
    /// (`--http2`, as `--transport h2`).
    fn options(&self) -> &'static [OptionSpec] {
        &[]
    }
    /// How its WebSockets reach the server with the options `given` (its own, checked to be
    /// of their kind): the transport block of the run's configuration.
    fn spec(&self, _given: &OptionValues) -> Result<TransportSpec, ConfigError> {
        Ok(TransportSpec { name: self.name(), streams_per_connection: 1, default: true })
    }
    /// The application protocols offered in TLS (ALPN) on `wss://` (none by default).
    fn alpn(&self) -> &'static [&'static [u8]] {
        &[]
    }
    /// Whether its WebSockets ride on [`Carrier`]s (shared TCP connections, kept on epoll).
    fn carries(&self) -> bool {
        false
    }
    /// Whether its connections are QUIC over UDP, and so always TLS: its target is a `wss://`
    /// URL whose port is the server's UDP port of that number, and a server is ready for it
    /// once it holds that UDP port.
    fn over_udp(&self) -> bool {
        false
    }
    /// Checked once before any load: that the server speaks this transport at all. The
    /// error is one line naming the cause and what to do.
    fn check(&self, _job: &Job) -> Result<(), CheckError> {
        Ok(())
    }
    /// Starts connection `index` (global number), to be the worker's connection `key`: its
    /// connect in progress (its own, or that of the carrier it joins in `carriers`), its TLS
    /// set up, its opening handshake queued to be written once connected. By default a
    /// stream of the carrier being filled, or of a new one ([`Dial::new_carrier`]).
    fn open(
        &self,
        job: &Job,
        index: u64,
        now: Instant,
        key: usize,
        carriers: &mut Carriers,
    ) -> io::Result<ClientConn> {
        carrier::open_carried(job, index, now, key, carriers, |room| self.new_carrier(job, index, room))
    }
    /// A new connection for up to `room` WebSockets, the first being connection `index`
    /// (for a member that [`Dial::carries`]).
    fn new_carrier(&self, _job: &Job, _index: u64, _room: usize) -> io::Result<Box<dyn Carrier>> {
        Err(io::Error::other("this transport opens a connection per WebSocket"))
    }
    /// Whether the connect has completed: `Ok(false)` while in progress, its error when it
    /// failed. A carried WebSocket is connected when its carrier says so (the default).
    fn connected(&self, _conn: &mut ClientConn) -> io::Result<bool> {
        Ok(true)
    }
    /// The server's answer to the handshake at the start of `data`: incomplete, accepted
    /// (with the bytes it took; frames may follow, and what it agreed is counted and set on
    /// the connection) or refused and why. A carried WebSocket's answer comes from its
    /// carrier instead ([`StreamEvent::Answered`]): the default, never complete here.
    fn answer(
        &self,
        _job: &Job,
        _conn: &mut ClientConn,
        _data: &mut [u8],
        _counters: &mut Counters,
    ) -> Upgrade {
        Upgrade::Incomplete
    }
    /// After [`Upgrade::Redial`]: `conn`'s byte stream replaced by a new connection to the
    /// server, connecting, its output (the upgrade request) kept for it.
    fn redial(&self, _job: &Job, _conn: &mut ClientConn) -> io::Result<()> {
        Err(io::Error::new(io::ErrorKind::Unsupported, "this transport opens no second connection"))
    }
}

/// Counts a failed connect attempt by its cause.
pub fn count_error(counters: &mut Counters, error: &io::Error) {
    match error.raw_os_error() {
        Some(libc::ECONNREFUSED) => counters.connections_refused += 1,
        Some(libc::ETIMEDOUT) => counters.connect_timeouts += 1,
        _ => counters.connect_errors += 1,
    }
}
