//! A worker's socket I/O behind one interface, whichever backend runs it: epoll (mio)
//! readiness with reads and writes by the worker, or io_uring ([`uring`]) with multishot
//! receives into provided buffers and sends submitted once per loop turn. Connects,
//! upgrades and TLS always go through epoll; under `--io uring` a plain connection moves
//! onto the ring once upgraded. The worker registers a connection, forgets it, flushes it,
//! and waits: one wait per turn gives it [`Event`]s, the same kinds on either backend, so
//! the worker's loop has one path. The alarm ([`alarm`]) that wakes it for an open-loop send
//! is part of the wait. In an open loop a receive is timed by the kernel's arrival stamp
//! ([`rx_time`]) on either backend, so a wait for the next send need not end for every echo.

pub mod alarm;
mod provided_buffers;
mod uring;

use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};

use super::batch::Batch;
use super::conn::ClientConn;
use super::rx_time;
use crate::config::IoBackend;
use alarm::Alarm;
use uring::{Completion, Ring};

/// The poll token of the alarm (connections use their slab keys).
const ALARM: Token = Token(usize::MAX);

/// The bit that marks a carrier's token (a connection that carries several WebSockets,
/// `dial::Carrier`): its key in the worker's carrier table is the rest.
pub const CARRIER: usize = 1 << (usize::BITS - 2);

/// The note that io_uring is unavailable is printed once per process, not per worker.
static FALLBACK_NOTED: AtomicBool = AtomicBool::new(false);

/// What one wait found, for one connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// Readiness of a connection on epoll. `read_closed`: the peer's FIN is already in, and
    /// no later event will say so.
    Ready { key: usize, readable: bool, writable: bool, read_closed: bool },
    /// Bytes arrived on the ring, in a buffer: [`Io::received`] gives them until
    /// [`Io::recycle`] gives the buffer back. `arrived`: when the kernel had them, if the ring
    /// times arrivals.
    Received { key: usize, buffer: u16, offset: u16, len: usize, arrived: Option<Instant> },
    /// A send on the ring finished: more may go.
    Sent { key: usize },
    /// The stream ended, or receiving or sending failed.
    Broken { key: usize },
}

pub struct Io {
    poll: Poll,
    epoll_events: Events,
    pub alarm: Alarm,
    ring: Option<Ring>,
    /// Connections that opened this turn, to move onto the ring.
    opened: Vec<usize>,
    /// This wait's events (kept for its capacity).
    events: Vec<Event>,
    /// An open loop: sockets stamp what arrives, and reads return the stamps.
    arrival_times: bool,
    /// On epoll: the last read of an open connection came with its stamp (see
    /// [`Io::note_read_stamp`]); only then may a wait sleep through ready sockets.
    last_read_stamped: bool,
}

impl Io {
    /// Epoll, with its alarm; the ring comes with [`Io::start_ring`].
    pub fn new() -> io::Result<Io> {
        let poll = Poll::new()?;
        Ok(Io {
            alarm: Alarm::new(poll.registry(), ALARM)?,
            poll,
            epoll_events: Events::with_capacity(1024),
            ring: None,
            opened: Vec::new(),
            events: Vec::with_capacity(1024),
            arrival_times: false,
            last_read_stamped: false,
        })
    }

    /// On the worker's own thread (the ring admits one submitter): the ring, when `backend`
    /// is io_uring and the connections are plain ws:// of their own (not `on_epoll`); epoll
    /// (with a note on stderr, once) when the kernel refuses io_uring. With `arrival_times`
    /// (an open loop) what arrives is timed by the kernel's stamps, on either backend. The
    /// ring's receive buffers are sized for messages of `message_bytes`.
    pub fn start_ring(
        &mut self,
        backend: IoBackend,
        on_epoll: bool,
        (connections, message_bytes): (usize, usize),
        arrival_times: bool,
    ) {
        self.arrival_times = arrival_times;
        if backend != IoBackend::Uring || on_epoll {
            return;
        }
        match Ring::new(self.poll.as_raw_fd(), connections, uring::POOL_BUFFERS, message_bytes) {
            Ok(ring) => {
                self.ring = Some(if arrival_times { ring.with_arrival_times() } else { ring });
                self.alarm.use_wait_timeout(self.poll.registry());
            }
            Err(error) => {
                if !FALLBACK_NOTED.swap(true, Ordering::Relaxed) {
                    eprintln!("wsbench: --io uring: io_uring is unavailable here ({error}): using epoll");
                }
            }
        }
    }

    /// Whether reads should return the kernel's arrival stamps ([`rx_time::recv`]).
    #[inline]
    pub fn arrival_times(&self) -> bool {
        self.arrival_times
    }

    /// An open connection's read on epoll came with its arrival stamp, or without.
    #[inline]
    pub fn note_read_stamp(&mut self, stamped: bool) {
        self.last_read_stamped = stamped;
    }

    /// The backend that runs the connections.
    pub fn name(&self) -> &'static str {
        match self.ring {
            Some(_) => IoBackend::Uring.name(),
            None => IoBackend::Epoll.name(),
        }
    }

    /// A new connection (connecting) watched on epoll for reads and writes. When arrivals
    /// are timed its socket stamps what arrives from the start, so that nothing the server
    /// sends before the ring adopts it arrives unstamped.
    pub fn register(&self, key: usize, socket: &mut TcpStream) -> io::Result<()> {
        if self.arrival_times {
            // Without it reads come without stamps and are timed when read; on the ring, a
            // refusal shows at adoption, which tries again and stops deferring receives.
            let _ = rx_time::enable(socket.as_raw_fd());
        }
        self.poll.registry().register(socket, Token(key), Interest::READABLE | Interest::WRITABLE)
    }

    /// The connection is gone: off the ring and off epoll (its socket closes as it drops).
    /// A carried WebSocket has no socket of its own.
    pub fn forget(&mut self, key: usize, socket: Option<&mut TcpStream>) {
        if let Some(ring) = self.ring.as_mut() {
            ring.forget(key);
        }
        if let Some(socket) = socket {
            let _ = self.poll.registry().deregister(socket);
        }
    }

    /// A carrier's socket (connecting), watched on epoll for reads and writes, edge-triggered
    /// (its carrier writes until the socket is full and waits for the next edge).
    pub fn register_carrier(&self, key: usize, socket: &mut dyn mio::event::Source) -> io::Result<()> {
        self.poll.registry().register(socket, Token(CARRIER | key), Interest::READABLE | Interest::WRITABLE)
    }

    /// A carrier is gone.
    pub fn forget_carrier(&self, socket: &mut dyn mio::event::Source) {
        let _ = self.poll.registry().deregister(socket);
    }

    /// Whether the connection is served by the ring.
    #[inline]
    pub fn on_ring(&self, key: usize) -> bool {
        self.ring.as_ref().is_some_and(|ring| ring.has(key))
    }

    /// The connection finished its upgrade: it moves onto the ring after this turn's events
    /// ([`Io::take_opened`]).
    pub fn opened(&mut self, key: usize) {
        if self.ring.is_some() {
            self.opened.push(key);
        }
    }

    /// A connection that opened this turn and may move onto the ring.
    pub fn take_opened(&mut self) -> Option<usize> {
        self.opened.pop()
    }

    /// The room a burst took in the ring's buffer for connection `key`, given back
    /// ([`crate::engine::capacity`]); whether any was. Nothing to give back on epoll.
    pub fn give_back_room(&mut self, key: usize) -> bool {
        self.ring.as_mut().is_some_and(|ring| ring.give_back_room(key))
    }

    /// Moves an open, plain connection from epoll onto the ring.
    pub fn adopt(&mut self, key: usize, conn: &mut ClientConn) -> io::Result<()> {
        let Some(ring) = self.ring.as_mut() else { return Ok(()) };
        if ring.has(key) || conn.transport.is_handshaking() {
            return Ok(());
        }
        let Some(socket) = conn.transport.socket() else { return Ok(()) };
        self.poll.registry().deregister(socket)?;
        ring.adopt(key, socket.as_raw_fd())
    }

    /// Writes what the connection has pending: on the ring, as one send unless one is in
    /// flight (its completion sends the rest); on epoll, what the socket takes now, keeping
    /// write interest only while something is left. An error: the connection is broken.
    pub fn flush(&mut self, key: usize, conn: &mut ClientConn, batch: Option<&Batch>) -> io::Result<()> {
        if let Some(ring) = self.ring.as_mut().filter(|ring| ring.has(key)) {
            if ring.sending(key) || !conn.has_pending() {
                return Ok(());
            }
            return ring.send(key, |out| conn.take_pending_shared(batch, out));
        }
        let done = conn.flush(batch)?;
        let want_write = !done || conn.state == super::conn::State::Connecting;
        if want_write != conn.write_interest {
            conn.write_interest = want_write;
            let interest =
                if want_write { Interest::READABLE | Interest::WRITABLE } else { Interest::READABLE };
            if let Some(socket) = conn.transport.socket() {
                self.poll.registry().reregister(socket, Token(key), interest)?;
            }
        }
        Ok(())
    }

    /// Stops receiving for the connection (on the ring; on epoll the worker just reads no
    /// more): bytes already on their way still arrive.
    pub fn pause_reading(&mut self, key: usize) -> io::Result<()> {
        match self.ring.as_mut().filter(|ring| ring.has(key)) {
            Some(ring) => ring.pause(key),
            None => Ok(()),
        }
    }

    /// Receives for the connection again (on the ring).
    pub fn resume_reading(&mut self, key: usize) -> io::Result<()> {
        match self.ring.as_mut().filter(|ring| ring.has(key)) {
            Some(ring) => ring.resume(key),
            None => Ok(()),
        }
    }

    /// Waits up to `timeout` for something to do (submitting the ring's queued sends on the
    /// way), and returns what happened. The alarm's ringing is handled here. `defer`: nothing
    /// but received bytes can come (no connection is being made); while the alarm is set and
    /// the last receive came stamped, the wait then lasts until the alarm instead of ending at
    /// the first echo (on epoll the thread sleeps on the timer file alone, then takes every
    /// ready socket).
    pub fn wait(&mut self, timeout: Duration, defer: bool) -> io::Result<Vec<Event>> {
        let mut events = std::mem::take(&mut self.events);
        events.clear();
        let epoll_ready = match self.ring.as_mut() {
            Some(ring) => {
                let bound = self.alarm.wait_bound();
                ring.submit_and_wait(
                    bound.map_or(timeout, |bound| bound.min(timeout)),
                    defer && bound.is_some(),
                )?;
                self.alarm.ring_if_due();
                ring_events(ring, &mut events)
            }
            None => {
                let deferred = defer
                    && self.arrival_times
                    && self.last_read_stamped
                    && self.alarm.sleep_until_it_rings(timeout);
                self.poll_epoll(Some(if deferred { Duration::ZERO } else { timeout }))?;
                true
            }
        };
        if epoll_ready {
            if self.ring.is_some() {
                self.poll_epoll(Some(Duration::ZERO))?;
            }
            for event in &self.epoll_events {
                if event.token() == ALARM {
                    self.alarm.rang();
                    continue;
                }
                events.push(Event::Ready {
                    key: event.token().0,
                    readable: event.is_readable() || event.is_read_closed() || event.is_error(),
                    writable: event.is_writable() || event.is_error(),
                    read_closed: event.is_read_closed(),
                });
            }
        }
        Ok(events)
    }

    /// Hands back the list [`Io::wait`] gave, for its capacity.
    pub fn restore(&mut self, events: Vec<Event>) {
        self.events = events;
    }

    fn poll_epoll(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        match self.poll.poll(&mut self.epoll_events, timeout) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                self.epoll_events.clear();
                Ok(())
            }
            other => other,
        }
    }

    /// The bytes of an [`Event::Received`].
    ///
    /// # Safety
    /// `buffer` and `len` must come from a `Received` event whose buffer has not been
    /// recycled yet, and the slice must be dropped before [`Io::recycle`] is called for it.
    pub unsafe fn received<'a>(&self, buffer: u16, offset: u16, len: usize) -> &'a mut [u8] {
        let ring = self.ring.as_ref().expect("a Received event comes from the ring");
        // SAFETY: as the caller promises.
        unsafe { ring.received(buffer, offset, len) }
    }

    /// Gives a received buffer back to the kernel.
    pub fn recycle(&mut self, buffer: u16) {
        if let Some(ring) = self.ring.as_mut() {
            ring.recycle(buffer);
        }
    }

    /// Ends the ring first: it cancels what is in flight while the sockets are still open.
    pub fn close_ring(&mut self) {
        drop(self.ring.take());
    }
}

/// The ring's completions as events (those of connections that left it are settled here:
/// their buffers recycled); whether epoll has events too.
fn ring_events(ring: &mut Ring, events: &mut Vec<Event>) -> bool {
    let mut completions = ring.take_completions();
    let mut epoll_ready = false;
    let mut clocks = None;
    for &completion in &completions {
        match completion {
            Completion::EpollReady => epoll_ready = true,
            Completion::Received { key, buffer, offset, len, stamp } if ring.has(key) => {
                let arrived =
                    stamp.map(|stamp| clocks.get_or_insert_with(rx_time::Clocks::now).instant_of(stamp));
                events.push(Event::Received { key, buffer, offset, len, arrived })
            }
            Completion::Received { buffer, .. } => ring.recycle(buffer),
            Completion::Ended { key } | Completion::SendFailed { key } if ring.has(key) => {
                events.push(Event::Broken { key })
            }
            Completion::Sent { key } if ring.has(key) => events.push(Event::Sent { key }),
            Completion::Ended { .. } | Completion::SendFailed { .. } | Completion::Sent { .. } => {}
        }
    }
    ring.restore_completions(std::mem::take(&mut completions));
    epoll_ready
}
