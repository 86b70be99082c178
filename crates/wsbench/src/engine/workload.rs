//! The seam between the engine and a scenario. The engine owns sockets, the upgrade, frames,
//! the pacer's schedule and the end of the run; a scenario's [`Workload`] (one per worker,
//! made by its [`Plan`]) decides what each open connection sends and what each message
//! that comes back means, through a few hooks: a connection opens, its traffic may start,
//! an open-loop send falls due, a whole message (or a piece of a streamed one) arrives, a
//! pong arrives, a timer it set fires, a close it started ends, the connection goes, the
//! run drains and finishes. It records through [`Cx`] into the worker's metrics and keeps
//! its own measurements as a [`Section`]. Nothing here names a scenario.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::batch::Batch;
use super::conn::ClientConn;
use super::pacer::Pacer;
use super::recorder::Recorder;
use super::timers::Timers;
use crate::metrics::Section;
use crate::protocol::preflight::Preflight;
use crate::protocol::{Incoming, Session};

/// How long the end of a run waits, by default, for replies still in flight.
pub const DRAIN: Duration = Duration::from_secs(1);

/// What a scenario is to the engine: when its phases fall and who does its work.
pub trait Plan: Send + Sync + std::fmt::Debug {
    fn phases(&self) -> PhasePlan;
    /// The workload of one worker, which opens `connections` (global indices).
    fn workload(&self, connections: &[u64]) -> Box<dyn Workload>;
    /// Connection `index`'s side of the run's message protocol.
    fn session(&self, index: u64) -> Box<dyn Session>;
    /// What connection `index` asks of the server before its upgrade, when its protocol
    /// asks anything.
    fn preflight(&self, _index: u64) -> Option<Box<dyn Preflight>> {
        None
    }
}

/// When a run measures and when its connections may send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PhasePlan {
    pub window: Window,
    /// Connections send as soon as each opens (an open loop of new clients), rather than
    /// once every connection is up.
    pub traffic_from_start: bool,
    /// Connect time counts from when the connection was due, not from when the worker got
    /// to it (an open loop of new connections: a client that falls behind shows it).
    pub connect_from_due: bool,
}

/// The measured window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    /// From the first connection on, for this long.
    FromStart(Duration),
    /// Once every connection is up (or failed): `warmup`, then `measured`.
    AfterConnect { warmup: Duration, measured: Duration },
}

impl PhasePlan {
    /// A closed loop's phases: every connection opens, then `warmup`, then `measured`;
    /// traffic once all are up.
    pub fn after_connect(warmup: Duration, measured: Duration) -> PhasePlan {
        PhasePlan {
            window: Window::AfterConnect { warmup, measured },
            traffic_from_start: false,
            connect_from_due: false,
        }
    }

    /// An open loop of new clients: measured from the first connection on for `window`,
    /// each connection sending as soon as it opens.
    pub fn from_start(window: Duration) -> PhasePlan {
        PhasePlan { window: Window::FromStart(window), traffic_from_start: true, connect_from_due: false }
    }

    /// The warm-up before the measured window (none for a window from the start).
    pub fn warmup(&self) -> Duration {
        match self.window {
            Window::FromStart(_) => Duration::ZERO,
            Window::AfterConnect { warmup, .. } => warmup,
        }
    }
}

/// How a workload wants the data messages of its connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Assembly {
    /// Whole messages up to `max` bytes; a longer one arrives as [`Message::TooLong`].
    Whole { max: usize },
    /// Each frame's payload as it comes ([`Message::Piece`]), for echoes checked as they
    /// stream (a 100 MB echo is never buffered).
    Pieces,
}

/// A data message (or a piece of one) from the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Message<'a> {
    Whole(&'a [u8]),
    Piece {
        data: &'a [u8],
        first: bool,
        last: bool,
    },
    /// A message longer than the workload's [`Assembly::Whole`] limit: dropped unread.
    TooLong,
}

/// What a workload may touch besides its connection: the worker's metrics, its schedule
/// and its timers.
#[derive(Debug)]
pub struct Cx<'a> {
    pub rec: &'a mut Recorder,
    pub pacer: &'a mut Pacer,
    pub timers: &'a mut Timers,
}

impl Cx<'_> {
    /// Wakes the workload for `conn` at `at` ([`Workload::on_timer`]).
    pub fn wake(&mut self, conn: &ClientConn, at: Instant) {
        self.timers.wake(conn.slot, conn.started, at);
    }

    /// Starts the close handshake of `conn` as part of the load: close 1000 written, and
    /// the close watched until the server answers or the close timeout passes (then
    /// [`Workload::on_closed`]).
    pub fn close(&mut self, conn: &mut ClientConn, now: Instant) {
        conn.start_close(true);
        self.timers.close_deadline(conn.slot, conn.started, now);
    }
}

/// A scenario's work on one worker's connections. Every hook has a default that does
/// nothing.
pub trait Workload: Send + std::fmt::Debug {
    /// How data messages reach [`Workload::on_message`].
    fn assembly(&self) -> Assembly {
        Assembly::Whole { max: 1 << 20 }
    }
    /// The pre-encoded batch connections write `batches_pending` copies of, if any.
    fn batch(&self) -> Option<&Batch> {
        None
    }
    /// The connection finished its upgrade.
    fn on_open(&mut self, _cx: &mut Cx<'_>, _conn: &mut ClientConn, _now: Instant) {}
    /// The connection may send: at its opening once the run's traffic has begun, or when
    /// the traffic begins for those already open.
    fn start(&mut self, _cx: &mut Cx<'_>, _conn: &mut ClientConn, _now: Instant) {}
    /// An open-loop send of the connection fell due at `due` (the pacer's schedule).
    fn on_due(&mut self, _cx: &mut Cx<'_>, _conn: &mut ClientConn, _due: Instant, _now: Instant) {}
    /// A data message (or piece) from the server, when the protocol leaves the messages to
    /// the workload (`raw` requests and flows).
    fn on_message(&mut self, _cx: &mut Cx<'_>, _conn: &mut ClientConn, _message: Message<'_>, _now: Instant) {
    }
    /// What the protocol read in a message from the server (its errors are counted by the
    /// engine before they come here).
    fn on_incoming(
        &mut self,
        _cx: &mut Cx<'_>,
        _conn: &mut ClientConn,
        _incoming: Incoming<'_>,
        _now: Instant,
    ) {
    }
    /// A pong from the server.
    fn on_pong(&mut self, _cx: &mut Cx<'_>, _conn: &mut ClientConn, _payload: &[u8], _now: Instant) {}
    /// A timer set with [`Cx::wake`] fell due.
    fn on_timer(&mut self, _cx: &mut Cx<'_>, _conn: &mut ClientConn, _now: Instant) {}
    /// A close started with [`Cx::close`] ended: answered by the server's close frame, or
    /// not (timed out, or the connection dropped).
    fn on_closed(&mut self, _conn: &ClientConn, _answered: bool) {}
    /// The connection's outstanding messages will not be answered (the server closed or
    /// broke it, or the run ends): forgets them and says how many there were.
    fn unanswered(&mut self, _conn: &ClientConn) -> u64 {
        0
    }
    /// Open loop: the sends due that the connection held back, never queued (it could take
    /// no more), as it goes or the run ends: forgets them and says how many messages they
    /// were (they count as unsent).
    fn held_back(&mut self, _conn: &ClientConn) -> u64 {
        0
    }
    /// The connection is gone (its slot may be reused).
    fn on_drop(&mut self, _conn: &ClientConn) {}
    /// Once a second, off the message path: state the workload is done with (e.g. what
    /// only the run's workers together can fold) can be handed on here, so that no worker
    /// keeps it for the whole run.
    fn each_second(&mut self, _now: Instant) {}
    /// Once a second for each open connection, off the message path: its requests due
    /// longer than the reply deadline ago and still unanswered (or still waiting to be sent)
    /// are given up, each counted [`crate::metrics::Counters::reply_timeouts`], and what that
    /// frees may be sent. A workload whose requests wait in send order checks only the
    /// oldest, so this costs one comparison per connection when nothing is late.
    fn expire_requests(&mut self, _cx: &mut Cx<'_>, _conn: &mut ClientConn, _now: Instant) {}
    /// Whether requests are outstanding, awaiting their replies (sent, or due and held
    /// back): asked once per loop turn, so it must cost no more than a comparison. A second
    /// that begins with requests awaited and completes no exchange is a stall.
    fn awaiting(&self, _now: Instant) -> bool {
        false
    }
    /// Whether replies are still on their way (the end of the run waits, up to
    /// [`Workload::drain`]).
    fn busy(&self, _now: Instant) -> bool {
        false
    }
    fn drain(&self) -> Duration {
        DRAIN
    }
    /// Whether the worker may say it is connected (e.g. once every subscription is
    /// acknowledged).
    fn settled(&self) -> bool {
        true
    }
    /// Its own errors so far, for the live view.
    fn errors(&self) -> BTreeMap<String, u64> {
        BTreeMap::new()
    }
    /// The end: its section, if it keeps one. `cut_off`: when the drain ran out while it was
    /// still busy.
    fn finish(self: Box<Self>, _cut_off: Option<Instant>) -> Option<Box<dyn Section>> {
        None
    }
}
