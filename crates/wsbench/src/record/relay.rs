//! One proxied connection after its handshake: bytes forwarded both ways as they arrive,
//! unchanged, on non-blocking sockets (the transport crate's plain TCP or TLS streams)
//! watched by one mio poll, and a copy of each direction handed to its [`Inspector`] for
//! the recording. A direction holds at most [`MAX_PENDING`] bytes not yet written: past it
//! the proxy stops reading that way until the other end takes them, so a slow reader pushes
//! back instead of growing memory. When one end closes, what it sent is delivered and the
//! other end's write side closed; the connection ends when both have closed, after
//! [`LINGER`] more at most, on an error, or when asked to stop.

use std::io::{self, ErrorKind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use mio::{Events, Interest, Poll, Token};
use serde_json::Value;
use wsbench_transport::Transport;

use super::inspect::Inspector;

/// Bytes read from one end and not yet written to the other, at most.
pub const MAX_PENDING: usize = 1 << 20;
/// How long a connection stays after one end closed, for the other's close.
const LINGER: Duration = Duration::from_secs(5);
/// How often a quiet connection looks at the stop flag.
const TICK: Duration = Duration::from_millis(200);
const READ_CHUNK: usize = 64 * 1024;

/// One end of the connection.
pub struct End {
    transport: Transport,
    /// Bytes to write to this end.
    out: Vec<u8>,
    /// This end closed its side (or failed).
    done_reading: bool,
    write_closed: bool,
    inspector: Option<Inspector>,
}

impl End {
    /// An end with `out` already waiting to be written to it; what is read from it is given
    /// to `inspector`.
    pub fn new(transport: Transport, out: Vec<u8>, inspector: Option<Inspector>) -> End {
        End { transport, out, done_reading: false, write_closed: false, inspector }
    }
}

/// Forwards between `client` and `upstream` until the connection ends; each event the
/// inspectors find is given to `record` (with whether it is a message).
pub fn relay(mut client: End, mut upstream: End, stop: &AtomicBool, record: &mut dyn FnMut(Value, bool)) {
    let Ok(mut poll) = Poll::new() else { return };
    let both = Interest::READABLE | Interest::WRITABLE;
    if poll.registry().register(client.transport.socket(), Token(0), both).is_err()
        || poll.registry().register(upstream.transport.socket(), Token(1), both).is_err()
    {
        return;
    }
    let mut events = Events::with_capacity(8);
    let mut buf = vec![0u8; READ_CHUNK];
    let mut closing_since: Option<Instant> = None;
    while !stop.load(Ordering::Relaxed) {
        if pump_both(&mut client, &mut upstream, &mut buf, record).is_err() {
            return;
        }
        close_after(client.done_reading, &mut upstream);
        close_after(upstream.done_reading, &mut client);
        if client.done_reading || upstream.done_reading {
            let since = *closing_since.get_or_insert_with(Instant::now);
            let finished = client.write_closed && upstream.write_closed;
            if finished || since.elapsed() > LINGER {
                return;
            }
        }
        if poll.poll(&mut events, Some(TICK)).is_err() {
            return;
        }
    }
}

/// Closes `to`'s write side once the other end is done and all it sent was delivered.
fn close_after(other_done: bool, to: &mut End) {
    if other_done && to.out.is_empty() && !to.write_closed {
        to.transport.shutdown_write();
        to.write_closed = true;
    }
}

/// Reads and writes both ways until nothing more moves without waiting.
fn pump_both(
    client: &mut End,
    upstream: &mut End,
    buf: &mut [u8],
    record: &mut dyn FnMut(Value, bool),
) -> io::Result<()> {
    loop {
        let mut moved = pump(client, upstream, buf, record)?;
        moved |= pump(upstream, client, buf, record)?;
        moved |= flush(upstream)?;
        moved |= flush(client)?;
        if !moved {
            return Ok(());
        }
    }
}

/// Reads what `from` has (while `to` has room for it) into `to`'s output; true when
/// something was read or the end closed.
fn pump(
    from: &mut End,
    to: &mut End,
    buf: &mut [u8],
    record: &mut dyn FnMut(Value, bool),
) -> io::Result<bool> {
    if from.done_reading || to.out.len() >= MAX_PENDING {
        return Ok(false);
    }
    match from.transport.read(buf) {
        Ok(0) => {
            from.done_reading = true;
            Ok(true)
        }
        Ok(n) => {
            to.out.extend_from_slice(&buf[..n]);
            if let Some(inspector) = from.inspector.as_mut() {
                for (event, message) in inspector.feed(&buf[..n]) {
                    record(event, message);
                }
            }
            Ok(true)
        }
        Err(e) if e.kind() == ErrorKind::WouldBlock => Ok(false),
        Err(e) if e.kind() == ErrorKind::Interrupted => Ok(true),
        // A reset: what it sent is still delivered, then the connection ends.
        Err(_) => {
            from.done_reading = true;
            Ok(true)
        }
    }
}

/// Writes what waits for `end`; true when something was written.
fn flush(end: &mut End) -> io::Result<bool> {
    let mut moved = false;
    while !end.out.is_empty() {
        match end.transport.write(&end.out) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => {
                end.out.drain(..n);
                moved = true;
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    match end.transport.flush() {
        Ok(_) => Ok(moved),
        Err(e) if e.kind() == ErrorKind::WouldBlock => Ok(moved),
        Err(e) => Err(e),
    }
}
