//! An engine worker: one thread, pinned to one client CPU, owning its share of the
//! connections and its own metrics (no locks on the hot path). This file is its event
//! loop: it polls, dispatches readiness to reads and writes, hands the frames it reads to
//! `worker/frames.rs` (which passes whole messages to the scenario's [`Workload`]), fires
//! the [`Pacer`]'s scheduled sends and the workload's timers, and at the end drains what is
//! in flight and closes cleanly. Connections are opened, dropped and reopened in
//! `worker/lifecycle.rs`; WebSockets that share a TCP connection reach it through their
//! carrier (`worker/carried.rs`).

use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use slab::Slab;

use super::conn::{ClientConn, State};
use super::dial::{self, Carriers, Dial, StreamEvent};
use super::handshake_failure::{HandshakeFailure, Upgrade};
use super::io::{CARRIER, Event, Io};
use super::pacer::{Pacer, TICK};
use super::recorder::Recorder;
use super::rx_time;
use super::timers::{Due, Timers};
use super::workload::{Assembly, Cx, PhasePlan, Workload};
use super::{Control, Job};
use crate::metrics::Metrics;

mod carried;
mod ending;
mod frames;
mod lifecycle;
mod recovery;
mod room;
mod session;

const READ_BUFFER_BYTES: usize = 256 * 1024;
/// Connects in progress per worker: beyond this the listen backlog overflows and SYNs are
/// dropped, which shows up as 1 s and 3 s connect times.
const MAX_CONNECTING: usize = 512;
/// At the end of the run: how long to wait for the server's close frames.
const CLOSE_WAIT: Duration = Duration::from_millis(300);
/// When the alarm is set, the poll's own timeout is this much later: the alarm wakes the
/// worker, the timeout only if the alarm failed.
const ALARM_MARGIN: Duration = Duration::from_millis(1);

/// The least a connection's outbox may hold before it stops reading.
const OUTBOX_BYTES: usize = 4 << 20;

/// Bytes a connection's outbox (output and batches not yet written) may hold before it
/// stops reading: [`OUTBOX_BYTES`], or twice what `--in-flight` batches of `batch_len`
/// bytes take, if more (a closed loop of large messages queues that much by design, and
/// a server that echoes as it reads must still be read meanwhile).
fn outbox_bound(load: &crate::config::LoadSpec, batch_len: usize) -> usize {
    let batches = load.in_flight.div_ceil(load.frames_per_send.max(1)).max(1) as usize;
    OUTBOX_BYTES.max(batch_len.saturating_mul(batches).saturating_mul(2))
}

/// What one worker does: which connections (global indices) it opens.
#[derive(Debug, Clone)]
pub struct WorkerPlan {
    pub id: usize,
    pub cpu: Option<usize>,
    pub connections: Vec<u64>,
}

/// What a worker hands back.
#[derive(Debug)]
pub struct WorkerOutput {
    pub metrics: Metrics,
    /// Exchanges completed inside the measured window.
    pub measured_exchanges: u64,
    /// CPU time this worker's thread used (read by the thread itself before exiting).
    pub cpu: crate::client_cpu::ThreadCpu,
    /// `uring` or `epoll`: the I/O it ran on.
    pub io: &'static str,
    /// How long the end of the run waited for replies still in flight (the drain), s.
    pub drain_secs: f64,
}

pub struct Worker {
    job: Arc<Job>,
    control: Arc<Control>,
    id: usize,
    /// The sockets' I/O: epoll, or io_uring for open plain connections.
    io: Io,
    /// How a connection becomes a WebSocket.
    dial: &'static dyn Dial,
    conns: Slab<ClientConn>,
    /// TCP connections that carry several WebSockets each (HTTP/2), and what they said.
    carriers: Carriers,
    carrier_events: Vec<StreamEvent>,
    read_buf: Box<[u8]>,
    /// The scenario's work, and how it wants its messages.
    workload: Box<dyn Workload>,
    assembly: Assembly,
    phases: PhasePlan,
    rec: Recorder,
    pacer: Pacer,
    timers: Timers,
    connecting: usize,
    reported_connected: bool,
    traffic_started: bool,
    draining_since: Option<Instant>,
    closing_since: Option<Instant>,
    /// When the drain at the end ran out while the workload was still busy.
    cut_off: Option<Instant>,
    /// The open connections' keys, while their requests are checked against the reply
    /// deadline (kept to reuse its allocation).
    expiring: Vec<usize>,
    open: u64,
    /// Bytes a connection's outbox may hold before it stops reading ([`outbox_bound`]).
    outbox_bound: usize,
    /// What it has seen of the run's disruptions (`--disrupt`).
    recovery: recovery::RecoveryWatch,
}

impl Worker {
    pub fn new(job: Arc<Job>, control: Arc<Control>, plan: WorkerPlan) -> io::Result<Worker> {
        let conns = Slab::with_capacity(plan.connections.len());
        let workload = job.plan.workload(&plan.connections);
        let workload_batch_len = workload.batch().map_or(0, |batch| batch.len());
        let rec = Recorder::new(control.clone(), plan.id, job.load.message_interval.is_some());
        let pacer = Pacer::new(
            control.start,
            job.load.ramp_per_sec,
            job.load.message_interval,
            job.load.connect_timeout,
            job.load.connections,
            plan.connections,
        )
        .with_send_window(job.load.send_window)
        .with_stages(job.load.stages.clone())
        .with_reconnects(job.load.reconnect.clone());
        Ok(Worker {
            io: Io::new()?,
            dial: dial::of(&job),
            conns,
            carriers: Carriers::default(),
            carrier_events: Vec::new(),
            read_buf: vec![0u8; READ_BUFFER_BYTES].into_boxed_slice(),
            assembly: workload.assembly(),
            phases: job.plan.phases(),
            workload,
            rec,
            pacer,
            timers: Timers::default(),
            connecting: 0,
            reported_connected: false,
            traffic_started: false,
            draining_since: None,
            closing_since: None,
            cut_off: None,
            expiring: Vec::new(),
            open: 0,
            outbox_bound: outbox_bound(&job.load, workload_batch_len),
            recovery: recovery::RecoveryWatch::default(),
            id: plan.id,
            job,
            control,
        })
    }

    pub fn run(mut self) -> WorkerOutput {
        // Carried WebSockets and their carriers stay on epoll.
        let on_epoll = self.job.target.tls || self.dial.carries();
        let open_loop = self.job.load.message_interval.is_some();
        let message_bytes = usize::try_from(self.job.load.payload.largest_message()).unwrap_or(usize::MAX);
        self.io.start_ring(self.job.load.io, on_epoll, (self.conns.capacity(), message_bytes), open_loop);
        loop {
            let now = Instant::now();
            let awaiting = self.workload.awaiting(now);
            if self.rec.tick(now, self.open, awaiting, || self.workload.errors()) {
                self.each_second(now);
                self.expire_requests(now);
                self.check_recovered();
            }
            self.close_due_connections(now);
            self.open_due_connections(now);
            self.expire_connects(now);
            self.fire_wakeups(now);
            if !self.traffic_started && self.control.traffic() {
                self.traffic_started = true;
                let keys: Vec<usize> =
                    self.conns.iter().filter(|(_, c)| c.state == State::Open).map(|(k, _)| k).collect();
                for key in keys {
                    self.start_traffic(key, now);
                    self.flush(key);
                }
            }
            self.fire_timers(now);
            self.fire_carrier_timers(now);
            if self.finish_phase(now) {
                break;
            }
            let connect_allowed = self.connecting < MAX_CONNECTING && !self.control.stopping();
            self.flush_carriers();
            // A carrier with work left goes on after a look at the sockets, not after a sleep.
            let timeout = match self.carriers.any_dirty() {
                true => Duration::ZERO,
                false => self.sleep_time(now, connect_allowed),
            };
            // Receives may wait for the next send when nothing else can come: no connection
            // is being made (its connect time would be late) and the run is not ending. Only
            // stamped receives wait (TLS records and carried streams have no stamps): `Io`
            // checks that.
            let defer = self.connecting == 0 && self.traffic_started && !self.control.stopping();
            let events = match self.io.wait(timeout, defer) {
                Ok(events) => events,
                Err(e) => {
                    eprintln!("wsbench: worker {} waiting for I/O failed: {e}", self.id);
                    break;
                }
            };
            self.on_events(&events);
            self.io.restore(events);
            self.adopt_opened();
        }
        self.end_recovery();
        let keys: Vec<usize> = self.conns.iter().map(|(key, _)| key).collect();
        for key in keys {
            self.count_left_open(key);
        }
        let io = self.io.name();
        self.io.close_ring();
        self.conns.clear();
        // This thread's TLS handshakes (it is the run's own: nothing else ran on it).
        self.rec.metrics.counters.tls_handshakes += wsbench_transport::take_handshakes().into();
        let errors = self.workload.errors();
        let section = self.workload.finish(self.cut_off);
        let (metrics, measured_exchanges) = self.rec.finish(section, &errors);
        let drain_secs = match (self.draining_since, self.closing_since) {
            (Some(from), Some(to)) => to.saturating_duration_since(from).as_secs_f64(),
            _ => 0.0,
        };
        WorkerOutput {
            metrics,
            measured_exchanges,
            cpu: crate::client_cpu::thread_cpu_self(),
            io,
            drain_secs,
        }
    }

    /// What a wait brought. The disruption board is read here, once a turn: what the sockets
    /// say may come of a disruption begun during the wait (a server killed), so its window
    /// opens first and what it cost is the recovery's; the next turn's timers see it too.
    fn on_events(&mut self, events: &[Event]) {
        self.watch_disruptions(Instant::now());
        for &event in events {
            self.on_io(event);
        }
    }

    /// One thing the wait found.
    fn on_io(&mut self, event: Event) {
        match event {
            Event::Ready { key, .. } if key & CARRIER != 0 => self.on_carrier(key & !CARRIER),
            Event::Ready { key, readable, writable, read_closed } => {
                self.on_event(key, readable, writable, read_closed)
            }
            Event::Received { key, buffer, offset, len, arrived } => {
                if self.io.on_ring(key) {
                    // SAFETY: the buffer is ours until recycled below, after the slice's use.
                    let data = unsafe { self.io.received(buffer, offset, len) };
                    self.rec.metrics.counters.bytes_received += len as u64;
                    if self.received(key, data, arrived) && self.flush(key) {
                        self.pause_if_full(key);
                    }
                }
                self.io.recycle(buffer);
            }
            Event::Sent { key } if self.io.on_ring(key) => {
                let Some(conn) = self.conns.get_mut(key) else { return };
                conn.ledger.send_done();
                let written = conn.ledger.take_written();
                self.rec.sent(written);
                if conn.has_pending() {
                    self.flush(key);
                }
                self.resume_if_drained(key);
            }
            Event::Broken { key } if self.io.on_ring(key) => self.on_broken(key),
            Event::Sent { .. } | Event::Broken { .. } => {}
        }
    }

    /// Connections that opened this turn leave epoll for the ring (their pending output,
    /// if epoll could not write all of it, goes out through the ring).
    fn adopt_opened(&mut self) {
        while let Some(key) = self.io.take_opened() {
            let Some(conn) = self.conns.get_mut(key) else { continue };
            if conn.state != State::Open {
                continue;
            }
            if self.io.adopt(key, conn).is_err() {
                self.on_broken(key);
                continue;
            }
            self.flush(key);
        }
    }

    /// Once a second: every open connection's requests past the reply deadline are given up
    /// (the workload checks the oldest of each), and what that frees goes out. The deadline
    /// is thus met within a second of when it passes.
    fn expire_requests(&mut self, now: Instant) {
        let mut keys = std::mem::take(&mut self.expiring);
        keys.extend(self.conns.iter().filter(|(_, c)| c.state == State::Open).map(|(key, _)| key));
        for &key in &keys {
            self.hook(key, |workload, cx, conn| workload.expire_requests(cx, conn, now));
            if self.conns.get(key).is_some_and(|c| c.has_pending()) {
                self.flush(key);
            }
        }
        keys.clear();
        self.expiring = keys;
    }

    /// Runs `hook` on the workload for connection `key` (if it is still there), with the
    /// worker's recorder, pacer and timers.
    fn hook(&mut self, key: usize, hook: impl FnOnce(&mut dyn Workload, &mut Cx<'_>, &mut ClientConn)) {
        let Some(conn) = self.conns.get_mut(key) else { return };
        let mut cx = Cx { rec: &mut self.rec, pacer: &mut self.pacer, timers: &mut self.timers };
        hook(self.workload.as_mut(), &mut cx, conn);
        self.arm_session(key);
    }

    /// The workload's timers and the load's close timeouts that fell due.
    fn fire_wakeups(&mut self, now: Instant) {
        while let Some((key, started, due)) = self.timers.pop_due(now) {
            let Some(conn) = self.conns.get(key).filter(|c| c.started == started) else { continue };
            match due {
                Due::Workload if conn.state == State::Open => {
                    self.hook(key, |workload, cx, conn| workload.on_timer(cx, conn, now));
                    self.flush(key);
                }
                Due::Workload => {}
                Due::CloseTimeout if conn.state == State::Closing && conn.closing_by_load => {
                    self.rec.metrics.counters.closes_unanswered += 1;
                    self.workload.on_closed(conn, false);
                    self.drop_conn(key);
                }
                Due::CloseTimeout => {}
                Due::Session if matches!(conn.state, State::Opening | State::Open) => {
                    self.session_timer(key, now);
                }
                Due::Session => {}
            }
        }
    }

    /// How long to poll: until the next thing is due, at most [`TICK`]. When that is sooner
    /// than a tick, the alarm is set to it, since the poll's timeout counts whole milliseconds.
    /// Without a send window the alarm goes off early and, once it did, the worker spins until
    /// the send is due; with one, the worker wakes half the window before the send, which may
    /// go out as soon as it wakes: no spinning.
    fn sleep_time(&mut self, now: Instant, connect_allowed: bool) -> Duration {
        let carrier_timer = self.carriers.next_timer().map(|(at, _)| at);
        let timer = self
            .timers
            .next()
            .into_iter()
            .chain(carrier_timer)
            .min()
            .map(|at| at.saturating_duration_since(now));
        let wake = self.pacer.next_wakeup(now, connect_allowed).min(timer.unwrap_or(Duration::MAX));
        let spin = self.job.load.send_window.is_zero();
        match self.pacer.next_due(connect_allowed) {
            Some(due) if wake > Duration::ZERO && spin && self.io.alarm.rang_early_for(due) => Duration::ZERO,
            Some(due) if wake > Duration::ZERO && wake < TICK => match self.io.alarm.set(due, spin) {
                Ok(()) => wake + ALARM_MARGIN,
                Err(_) => wake,
            },
            _ => wake,
        }
    }

    /// `read_closed`: the peer's FIN is already in, and no later event will say so.
    fn on_event(&mut self, key: usize, readable: bool, writable: bool, read_closed: bool) {
        let Some(conn) = self.conns.get(key) else { return };
        if conn.state == State::Connecting && !((readable || writable) && self.finish_connect(key)) {
            return;
        }
        if writable && !self.flush(key) {
            return;
        }
        // Reading stopped while the outbox was full: it goes on once that drained.
        let resumed =
            writable && self.conns.get(key).is_some_and(|c| c.read_paused) && !self.outbox_full(key);
        if resumed {
            self.conns[key].read_paused = false;
        }
        if readable || resumed || self.conns.get(key).is_some_and(|c| c.state == State::Upgrading) {
            self.read(key, read_closed);
        }
    }

    /// Writes pending output. Returns false when the connection was dropped.
    fn flush(&mut self, key: usize) -> bool {
        let Some(conn) = self.conns.get_mut(key) else { return false };
        if let Some((carrier, stream)) = conn.transport.carried() {
            if conn.has_pending() {
                self.carriers.wrote(carrier, stream);
            }
            let written = conn.ledger.take_written();
            self.rec.sent(written);
            return true;
        }
        let flushed = self.io.flush(key, conn, self.workload.batch());
        let written = conn.ledger.take_written();
        self.rec.sent(written);
        if flushed.is_err() {
            self.on_broken(key);
            return false;
        }
        true
    }

    /// Whether more than the outbox bound waits to be written on `key`: then it reads no
    /// more until that drains (what it reads could queue more: a server that sends and
    /// never reads must not grow the client).
    fn outbox_full(&self, key: usize) -> bool {
        self.conns.get(key).is_some_and(|conn| conn.outbox_bytes(self.workload.batch()) > self.outbox_bound)
    }

    /// On the ring: stops receiving for `key` while its outbox is full.
    fn pause_if_full(&mut self, key: usize) {
        if self.outbox_full(key)
            && let Some(conn) = self.conns.get_mut(key)
            && !conn.read_paused
        {
            conn.read_paused = true;
            if self.io.pause_reading(key).is_err() {
                self.on_broken(key);
            }
        }
    }

    /// On the ring: receives again for `key` once its outbox is under the bound.
    fn resume_if_drained(&mut self, key: usize) {
        if self.conns.get(key).is_some_and(|conn| conn.read_paused) && !self.outbox_full(key) {
            self.conns[key].read_paused = false;
            if self.io.resume_reading(key).is_err() {
                self.on_broken(key);
            }
        }
    }

    fn read(&mut self, key: usize, read_closed: bool) {
        // The read buffer is lent out for the call so `process` can borrow the worker.
        let mut buf = std::mem::take(&mut self.read_buf);
        self.read_into(key, &mut buf, read_closed);
        self.read_buf = buf;
    }

    fn read_into(&mut self, key: usize, buf: &mut [u8], read_closed: bool) {
        loop {
            if self.outbox_full(key) {
                // Read on once the socket took enough of it (a writable event).
                self.conns[key].read_paused = true;
                return;
            }
            let Some(conn) = self.conns.get_mut(key) else { return };
            // An open connection's bytes are timed by their arrival in an open loop (as on the
            // ring); a handshake's answer, like a closed loop's echo, when it is read.
            let stamped = self.io.arrival_times() && conn.state == State::Open;
            let read = match stamped {
                true => conn.transport.read_stamped(buf),
                false => conn.transport.read(buf).map(|n| (n, None)),
            };
            let (n, stamp) = match read {
                Ok((0, _)) => return self.on_broken(key),
                Ok(read) => read,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // A TLS error before the upgrade is answered: in TLS 1.3 the server checks a
                // client certificate after the client's handshake is done, and its alert
                // (`certificate_required`) arrives with the first read of the answer.
                Err(e)
                    if e.kind() == io::ErrorKind::InvalidData
                        && (conn.transport.is_handshaking() || conn.state == State::Upgrading) =>
                {
                    return self.on_refused(key, HandshakeFailure::of_tls(&e));
                }
                Err(_) => return self.on_broken(key),
            };
            self.rec.metrics.counters.bytes_received += n as u64;
            if stamped {
                self.io.note_read_stamp(stamp.is_some());
            }
            let arrived = stamp.map(|stamp| rx_time::Clocks::now().instant_of(stamp));
            if !self.received(key, &mut buf[..n], arrived) {
                return;
            }
            let Some(conn) = self.conns.get(key) else { return };
            // A short read drains the socket, unless the FIN came with the data (a server
            // that sends its last bytes and closes): then read on, to the end of the stream.
            let drained = !read_closed && n < buf.len() && conn.transport.short_read_drains();
            if !self.flush(key) || drained {
                return;
            }
        }
    }

    /// Handles bytes that arrived for `key` (after what is left of earlier ones); keeps what
    /// does not make a whole frame yet. False when the connection is gone.
    /// `arrived`: when the kernel had the bytes (an open loop's stamped read); everything
    /// they cause is handled as of then, so an echo left queued until the worker's next send
    /// is timed to its arrival.
    fn received(&mut self, key: usize, data: &mut [u8], arrived: Option<Instant>) -> bool {
        let Some(conn) = self.conns.get_mut(key) else { return false };
        let now = arrived.unwrap_or_else(Instant::now);
        let mut input = std::mem::take(&mut conn.input);
        if input.is_empty() {
            let used = self.process(key, now, data);
            input.extend_from_slice(&data[used..]);
        } else {
            input.extend_from_slice(data);
            let used = self.process(key, now, &mut input);
            input.drain(..used);
        }
        let Some(conn) = self.conns.get_mut(key) else { return false };
        if conn.state == State::Connecting {
            // The upgrade goes on a new connection (redialled): nothing more is read here.
            return false;
        }
        conn.input = input;
        true
    }

    /// Handles the handshake response and frames at the start of `data`; returns the bytes
    /// used. The connection may be gone afterwards (then everything counts as used).
    fn process(&mut self, key: usize, now: Instant, data: &mut [u8]) -> usize {
        let mut used = 0;
        if self.conns[key].state == State::Upgrading {
            let counters = &mut self.rec.metrics.counters;
            match self.dial.answer(&self.job, &mut self.conns[key], data, counters) {
                Upgrade::Incomplete => return 0,
                Upgrade::Continue(n) => return n,
                Upgrade::Redial => {
                    self.redial(key);
                    return data.len();
                }
                Upgrade::Accepted(n) => {
                    used = n;
                    if self.start_session(key, now) {
                        self.on_open(key, now);
                    }
                }
                Upgrade::Refused(failure) => {
                    self.on_refused(key, failure);
                    return data.len();
                }
            }
        }
        match self.frames(key, data, used, now) {
            Some(used) => used,
            None => {
                self.drop_conn(key);
                data.len()
            }
        }
    }

    /// The connection may send: the workload begins its messages.
    fn start_traffic(&mut self, key: usize, now: Instant) {
        self.hook(key, |workload, cx, conn| workload.start(cx, conn, now));
    }

    /// Open loop: every send that has fallen due goes to the workload, on schedule whatever
    /// the replies, and with them those due within the send window: one wake-up and one
    /// submission for them all. An early send is sent as if due now (its latency counts
    /// from when it went out); its next one keeps the schedule.
    fn fire_timers(&mut self, now: Instant) {
        let horizon = now + self.job.load.send_window;
        while let Some(send) = self.pacer.pop_due_send(horizon) {
            if !self.rec.sending_allowed(send.due) {
                continue;
            }
            let Some(conn) = self.conns.get(send.key) else { continue };
            if conn.started != send.started || conn.state != State::Open {
                continue;
            }
            self.hook(send.key, |workload, cx, conn| workload.on_due(cx, conn, send.due.min(now), now));
            self.flush(send.key);
            if self.conns.contains(send.key) {
                self.pacer.schedule_next(send);
            }
        }
    }
}
