//! A connection that carries several WebSockets (HTTP/2's or HTTP/3's streams): the interface the
//! worker drives it through ([`Carrier`]), what it tells the worker about the WebSockets it
//! carries ([`StreamEvent`]), and the worker's table of them ([`Carriers`]). A carrier owns
//! its socket, its TLS session and its protocol state; a carried WebSocket's byte stream is
//! one of its streams. The worker names no transport: it registers carriers' sockets, hands
//! their readiness and their WebSockets' pending output to them, and acts on the events.
//! Connections with a socket of their own never come here, so their hot path is untouched.

use std::io;
use std::time::Instant;

use bytes::Bytes;
use slab::Slab;

use wsbench_proto::{Decoder, Reservation, Role};

use crate::engine::Job;
use crate::engine::conn::ClientConn;
use crate::engine::handshake_failure::{HandshakeFailure, Upgrade};
use crate::engine::stream::ByteStream;
use crate::metrics::Counters;

/// What a carrier needs from the worker while it works: the run, the WebSockets (by key),
/// the counters, and the workload's pre-encoded batch (part of a WebSocket's pending output).
#[derive(Debug)]
pub struct CarrierCx<'a> {
    pub job: &'a Job,
    pub conns: &'a mut Slab<ClientConn>,
    pub counters: &'a mut Counters,
    pub batch: Option<&'a crate::engine::batch::Batch>,
    pub now: Instant,
}

/// What happened to a carried WebSocket (by its key in the worker's connection table).
#[derive(Debug)]
pub enum StreamEvent {
    /// Its carrier is connected and its opening request went out: it is upgrading.
    Upgrading(usize),
    /// The server's answer to its opening request (what it agreed is set and counted).
    Answered(usize, Upgrade),
    /// Bytes of its WebSocket frames.
    Data(usize, Bytes),
    /// Its stream is over: `None` when the server ended it (as a FIN would), else the cause
    /// (`h2_rst_cancel`, `h2_goaway_enhance_your_calm`, …).
    Ended(usize, Option<String>),
    /// Its carrier could not connect (counted as a connect error of this WebSocket).
    ConnectFailed(usize, io::Error),
    /// Its carrier failed before its opening request could go (TLS, the server's protocol):
    /// a failed handshake, by cause.
    Refused(usize, HandshakeFailure),
}

/// A connection carrying WebSockets as streams.
pub trait Carrier: Send + std::fmt::Debug {
    /// Its socket, to watch.
    fn socket(&mut self) -> &mut dyn mio::event::Source;
    /// When it next needs [`Carrier::on_timer`] (a transport with timers of its own, as
    /// QUIC's loss detection and idle timeout); `None` when it has none due.
    fn next_timer(&mut self) -> Option<Instant> {
        None
    }
    /// Its timer fell due: it runs it; what happened goes to `events`.
    fn on_timer(&mut self, _cx: &mut CarrierCx<'_>, _events: &mut Vec<StreamEvent>) {}
    /// Its socket is ready: connects, reads and writes; what happened to its WebSockets
    /// goes to `events`.
    fn on_ready(&mut self, cx: &mut CarrierCx<'_>, events: &mut Vec<StreamEvent>);
    /// Sends what its WebSockets have pending (those marked with [`Carrier::wrote`]).
    fn flush(&mut self, cx: &mut CarrierCx<'_>, events: &mut Vec<StreamEvent>);
    /// WebSocket `key` (connection `index` of the run) joins; returns its stream number.
    fn attach(&mut self, key: usize, index: u64) -> usize;
    /// Stream `stream` has output pending.
    fn wrote(&mut self, stream: usize);
    /// Stream `stream`'s WebSocket is gone; `last` is what it still had to send (a close
    /// frame). Its stream ends; the connection and its other streams go on.
    fn detach(&mut self, stream: usize, last: &[u8]);
    /// Whether one more WebSocket may join.
    fn has_room(&self) -> bool;
    /// Whether it is over (lost, and every WebSocket told): the worker drops it.
    fn is_over(&self) -> bool;
    /// Whether it stopped with work left (bytes it has not read yet, streams not served): the
    /// worker lets it go on before waiting.
    fn has_work_left(&self) -> bool;
}

/// A worker's carriers: the one being filled with WebSockets, those whose socket is yet
/// to be watched, and those with output to send.
#[derive(Debug, Default)]
pub struct Carriers {
    table: Slab<Box<dyn Carrier>>,
    filling: Option<usize>,
    unwatched: Vec<usize>,
    dirty: Vec<usize>,
}

impl Carriers {
    /// The carrier new WebSockets join, while it has room.
    pub fn with_room(&self) -> Option<usize> {
        self.filling.filter(|&key| self.table.get(key).is_some_and(|c| c.has_room()))
    }

    /// A new carrier, to be filled next; its socket is watched by [`Carriers::take_unwatched`].
    pub fn add(&mut self, carrier: Box<dyn Carrier>) -> usize {
        let key = self.table.insert(carrier);
        self.filling = Some(key);
        self.unwatched.push(key);
        key
    }

    pub fn get_mut(&mut self, key: usize) -> Option<&mut (dyn Carrier + 'static)> {
        self.table.get_mut(key).map(|c| c.as_mut())
    }

    /// A carrier whose socket is to be watched.
    pub fn take_unwatched(&mut self) -> Option<usize> {
        self.unwatched.pop()
    }

    /// Stream `stream` of carrier `key` has output pending.
    pub fn wrote(&mut self, key: usize, stream: usize) {
        if let Some(carrier) = self.table.get_mut(key) {
            carrier.wrote(stream);
            if !self.dirty.contains(&key) {
                self.dirty.push(key);
            }
        }
    }

    /// Carrier `key` has work to do in the next flush (a stream that ended sends its end).
    pub fn touch(&mut self, key: usize) {
        if self.table.contains(key) && !self.dirty.contains(&key) {
            self.dirty.push(key);
        }
    }

    /// Whether a carrier has output pending (the worker must not sleep).
    pub fn any_dirty(&self) -> bool {
        !self.dirty.is_empty()
    }

    /// The carriers with output pending, each once.
    pub fn take_dirty(&mut self, into: &mut Vec<usize>) {
        into.append(&mut self.dirty);
    }

    /// Removes carrier `key`.
    pub fn remove(&mut self, key: usize) -> Option<Box<dyn Carrier>> {
        if self.filling == Some(key) {
            self.filling = None;
        }
        self.table.try_remove(key)
    }

    /// The earliest timer of any carrier, with the carrier's key.
    pub fn next_timer(&mut self) -> Option<(Instant, usize)> {
        self.table.iter_mut().filter_map(|(key, c)| c.next_timer().map(|at| (at, key))).min()
    }

    pub fn keys(&self) -> Vec<usize> {
        self.table.iter().map(|(key, _)| key).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }
}

/// Opens WebSocket `index` as a stream of the carrier being filled, or of a new one
/// (`new(room)`) when that is full.
pub fn open_carried(
    job: &Job,
    index: u64,
    now: Instant,
    key: usize,
    carriers: &mut Carriers,
    new: impl FnOnce(usize) -> io::Result<Box<dyn Carrier>>,
) -> io::Result<ClientConn> {
    let carrier = match carriers.with_room() {
        Some(carrier) => carrier,
        None => carriers.add(new(job.load.transport.streams_per_connection as usize)?),
    };
    let stream = match carriers.get_mut(carrier) {
        Some(carrier) => carrier.attach(key, index),
        None => return Err(io::Error::other("the carrier just chosen is gone")),
    };
    // A carrier already up sends the CONNECT in the next flush, not at its next read.
    carriers.touch(carrier);
    let decoder = Decoder::new(Role::Client, job.load.max_message);
    let mut conn =
        ClientConn::new(ByteStream::Carried { carrier, stream }, index, String::new(), decoder, now);
    conn.budget = Reservation::new(job.message_memory.clone());
    Ok(conn)
}
