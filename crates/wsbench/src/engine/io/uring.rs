//! The io_uring backend of a worker (`--io uring`): one ring per worker thread, created on
//! that thread. Open plain-TCP connections are handed to it: each gets one multishot
//! receive into a ring of provided buffers (the kernel picks a buffer as data arrives; no
//! syscall per receive), and its sends are queued as submission entries that go to the
//! kernel together, once per loop turn, with the wait for completions (one `io_uring_enter`
//! per turn for every connection of the worker). The worker's epoll instance is watched by
//! a multishot poll on the same ring, so connects, upgrades and the alarm still work as on
//! the epoll path, and one wait covers both.
//!
//! This file owns the kernel-facing parts and their memory rules only: which buffer a
//! completion names, when a send's bytes may be reused, how everything in flight is
//! cancelled before the memory goes. What the bytes mean is the worker's; `io/mod.rs` puts the
//! ring and epoll behind one interface.
//! No SQPOLL (it would burn a core of the machine being measured); no zero-copy send (the
//! echo messages are tens of bytes: the page pinning costs more than the copy).
//!
//! A ring made `with_arrival_times` receives with multishot `recvmsg` instead, on sockets
//! that stamp what arrives ([`crate::engine::rx_time`]): each completion then says when its bytes
//! arrived, and [`Ring::submit_and_wait`] may leave receives queued until its timeout
//! (`defer`) without the worker timing them late.

use std::io;
use std::os::fd::RawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use io_uring::types::{self, CancelBuilder, Fd, SubmitArgs, Timespec};
use io_uring::{IoUring, cqueue, opcode, squeue};
use slab::Slab;

use super::provided_buffers::{BUFFER_GROUP, POOL_BYTES, ProvidedBuffers, buffer_bytes};
use crate::engine::capacity;
use crate::engine::rx_time::{self, RecvMsgHeader};

/// Provided buffers (4 KiB each, 64 KiB or 256 KiB in a run of large messages, fewer of those
/// when their memory would pass 16 MiB: `provided_buffers`): how many per worker, shared by all
/// its connections. A
/// receive takes one buffer per completion; buffers go back to the ring as soon as their
/// bytes are handled (the same turn). The count is fixed, not per connection: the kernel
/// takes the ring's buffers in turn, so over a long run it touches every one, and a pool
/// that grew with the connections would cost resident memory per connection. A turn in which
/// more connections receive than there are buffers runs out: those receives stop with
/// `ENOBUFS` and are armed again once the buffers are back (see [`Ring::reap`]).
pub const POOL_BUFFERS: u16 = 256;
/// Submission and completion queue sizes (the kernel keeps overflowing completions).
const SQ_ENTRIES: u32 = 4096;
const CQ_ENTRIES: u32 = 32768;
/// Bytes a connection's staging buffer keeps whatever bursts came before: a send of a few
/// usual messages.
const STAGING_FLOOR: usize = 256;
/// How long tearing down waits for cancelled operations before it gives up (and keeps
/// their memory rather than free what the kernel might still touch).
const TEARDOWN_WAIT: Duration = Duration::from_secs(2);

/// What a completion is about (the low two bits of its user data; the rest is the slot).
const OP_RECV: u64 = 0;
const OP_SEND: u64 = 1;
const OP_POLL: u64 = 2;
const OP_CANCEL: u64 = 3;

/// One completion, as the worker handles it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completion {
    /// `len` bytes arrived for worker connection `key`, in buffer `buffer` from `offset`;
    /// give the buffer back with [`Ring::recycle`] once they are handled. `stamp`: when they
    /// arrived (wall clock), on a ring with arrival times.
    Received { key: usize, buffer: u16, offset: u16, len: usize, stamp: Option<Duration> },
    /// The peer ended the stream, or receiving failed: the connection is broken.
    Ended { key: usize },
    /// A send finished: more may be sent for `key` now.
    Sent { key: usize },
    /// A send failed: the connection is broken.
    SendFailed { key: usize },
    /// The worker's epoll instance has events.
    EpollReady,
}

/// One connection on the ring (or one that left it and still has operations in flight).
#[derive(Debug)]
struct Slot {
    /// The worker's connection key (a worker holds far fewer than 2³² connections; the
    /// narrower field keeps the slot of an idle connection small).
    key: u32,
    fd: RawFd,
    /// The worker still owns the connection.
    live: bool,
    receiving: bool,
    /// Receiving stopped by the worker ([`Ring::pause`]): not armed again until resumed.
    paused: bool,
    /// The bytes of the send in flight, and how many the kernel took so far. Never
    /// touched while `sending`: the kernel reads them.
    staging: Vec<u8>,
    /// A large frame's shared bytes, sent after `staging` where they lie (held here so that
    /// they outlive the send, and leaked with the slot if the kernel never answers).
    shared: Option<Arc<[u8]>>,
    /// Of `staging` then `shared`: at most a message's length (`--max-message`, 1 GiB at
    /// most) and a send's, which fit a u32.
    sent: u32,
    sending: bool,
}

pub struct Ring {
    ring: IoUring,
    buffers: ProvidedBuffers,
    slots: Slab<Slot>,
    /// Worker connection key → slot (usize::MAX: not on the ring).
    by_key: Vec<usize>,
    completions: Vec<Completion>,
    /// Scratch lists of [`Ring::reap`], kept for their capacity.
    raw: Vec<(u64, i32, u32)>,
    rearm: Vec<usize>,
    /// Operations submitted and not yet completed for good (teardown waits for them).
    in_flight: u64,
    /// Receives that stopped because every buffer was taken (and were armed again).
    pub(crate) buffer_shortages: u64,
    epoll_fd: RawFd,
    /// Tearing down: nothing is started again.
    closing: bool,
    /// With arrival times: the header every multishot `recvmsg` is armed with.
    recvmsg: Option<RecvMsgHeader>,
    /// A socket refused to stamp: receives are never left queued (their times would be late).
    stamps_refused: bool,
    /// The last receive came with its stamp. The kernel turns stamping on a moment after the
    /// first socket asks (its workqueue), so the first packets may come without; receives are
    /// left queued only while they come stamped.
    last_stamped: bool,
}

impl Ring {
    /// A ring for the calling thread (it must be the only one to use it), watching the
    /// worker's epoll instance `epoll_fd`, for a worker of `connections` connections, with
    /// `pool` provided buffers ([`POOL_BUFFERS`]; a power of two), sized for messages of up
    /// to `message_bytes`.
    pub fn new(epoll_fd: RawFd, connections: usize, pool: u16, message_bytes: usize) -> io::Result<Ring> {
        let ring = IoUring::builder()
            .setup_cqsize(CQ_ENTRIES)
            .setup_single_issuer()
            .setup_defer_taskrun()
            .build(SQ_ENTRIES)?;
        let bytes = buffer_bytes(message_bytes);
        let count = pool.next_power_of_two().min(u16::try_from(POOL_BYTES / bytes).unwrap_or(u16::MAX));
        let buffers = ProvidedBuffers::new(&ring, count, bytes)?;
        let mut ring = Ring {
            ring,
            buffers,
            // Sized once: lists that double as they fill leave up to half their memory idle.
            slots: Slab::with_capacity(connections),
            by_key: Vec::with_capacity(connections),
            completions: Vec::with_capacity(CQ_ENTRIES as usize),
            raw: Vec::with_capacity(CQ_ENTRIES as usize),
            rearm: Vec::with_capacity(1024),
            in_flight: 0,
            buffer_shortages: 0,
            epoll_fd,
            closing: false,
            recvmsg: None,
            stamps_refused: false,
            last_stamped: false,
        };
        ring.watch_epoll()?;
        Ok(ring)
    }

    /// From now on (before any connection is adopted) receives carry their arrival times.
    pub fn with_arrival_times(mut self) -> Ring {
        self.recvmsg = Some(RecvMsgHeader::new());
        self
    }

    /// Whether receives come with their arrival times (every socket stamps, and the last
    /// receive had its stamp), so that they may be left queued until the wait's timeout.
    pub fn times_arrivals(&self) -> bool {
        self.recvmsg.is_some() && !self.stamps_refused && self.last_stamped
    }

    /// Whether worker connection `key` is on the ring.
    #[inline]
    pub fn has(&self, key: usize) -> bool {
        self.by_key.get(key).is_some_and(|&slot| slot != usize::MAX)
    }

    /// Takes worker connection `key` (socket `fd`, already out of epoll) onto the ring.
    pub fn adopt(&mut self, key: usize, fd: RawFd) -> io::Result<()> {
        let slot = self.slots.insert(Slot {
            key: key as u32,
            fd,
            live: true,
            receiving: false,
            paused: false,
            // Allocated by the first send: a connection that only holds costs no buffer.
            staging: Vec::new(),
            shared: None,
            sent: 0,
            sending: false,
        });
        if self.by_key.len() <= key {
            self.by_key.resize(key + 1, usize::MAX);
        }
        self.by_key[key] = slot;
        // Stamping is switched on as the connection is made (see `Io::register`); again
        // here for a socket that was not.
        if self.recvmsg.is_some() && rx_time::enable(fd).is_err() {
            self.stamps_refused = true;
        }
        self.receive(slot)
    }

    /// Worker connection `key` is gone (its socket about to close): its receive is ended by
    /// shutting the socket; its slot lives on until the last completion.
    pub fn forget(&mut self, key: usize) {
        let Some(slot) = self.by_key.get_mut(key).map(|s| std::mem::replace(s, usize::MAX)) else { return };
        if slot == usize::MAX {
            return;
        }
        self.slots[slot].live = false;
        // Sends queued for it go to the kernel now, while its descriptor is still its own
        // (once closed, the number may name another socket).
        let _ = self.ring.submit();
        if self.slots[slot].receiving {
            // The receive ends (with 0) once the socket is shut: cheaper than a cancel, which
            // the kernel matches against every request in flight (quadratic over a run's
            // closes).
            // SAFETY: shutdown on the connection's own descriptor, still open here.
            unsafe { libc::shutdown(self.slots[slot].fd, libc::SHUT_RDWR) };
        }
        self.release_if_idle(slot);
    }

    /// Stops receiving for worker connection `key` (its outbox is full): its multishot
    /// receive is cancelled; what it already took still completes. Rare (only a server that
    /// sends while not reading gets here), so the cancel's cost does not matter.
    pub fn pause(&mut self, key: usize) -> io::Result<()> {
        let slot = self.by_key[key];
        let entry = &mut self.slots[slot];
        if entry.paused {
            return Ok(());
        }
        entry.paused = true;
        if !entry.receiving {
            return Ok(());
        }
        let cancel = opcode::AsyncCancel::new(user_data(slot, OP_RECV)).build().user_data(OP_CANCEL);
        self.push(&cancel)?;
        self.in_flight += 1;
        Ok(())
    }

    /// Receives for worker connection `key` again.
    pub fn resume(&mut self, key: usize) -> io::Result<()> {
        let slot = self.by_key[key];
        self.slots[slot].paused = false;
        self.receive(slot)
    }

    /// Whether a send is in flight for `key` (then more must wait for its completion).
    #[inline]
    pub fn sending(&self, key: usize) -> bool {
        self.slots[self.by_key[key]].sending
    }

    /// The room a burst took in worker connection `key`'s staging buffer, given back while
    /// no send is in flight (the kernel reads the buffer then); whether it shrank.
    pub fn give_back_room(&mut self, key: usize) -> bool {
        let Some(&slot) = self.by_key.get(key).filter(|&&slot| slot != usize::MAX) else { return false };
        let entry = &mut self.slots[slot];
        if entry.sending {
            return false;
        }
        entry.staging.clear();
        entry.shared = None;
        entry.sent = 0;
        capacity::give_back(&mut entry.staging, STAGING_FLOOR)
    }

    /// Queues a send of what `fill` writes into the connection's staging buffer, followed by
    /// the shared bytes it returns, read where they lie (nothing is queued when there is
    /// nothing). Only when no send is in flight.
    pub fn send(
        &mut self,
        key: usize,
        fill: impl FnOnce(&mut Vec<u8>) -> Option<Arc<[u8]>>,
    ) -> io::Result<()> {
        let slot = self.by_key[key];
        let entry = &mut self.slots[slot];
        debug_assert!(!entry.sending);
        entry.staging.clear();
        entry.sent = 0;
        entry.shared = fill(&mut entry.staging).filter(|shared| !shared.is_empty());
        if entry.staging.is_empty() && entry.shared.is_none() {
            return Ok(());
        }
        self.send_rest(slot)
    }

    /// Submits what is queued and waits up to `timeout` for a completion (with `defer`, on a
    /// ring that times arrivals: for the timeout, unless half the completion queue fills
    /// first); then hands every completion to the worker through [`Ring::completions`].
    pub fn submit_and_wait(&mut self, timeout: Duration, defer: bool) -> io::Result<()> {
        let timespec = Timespec::new().sec(timeout.as_secs()).nsec(timeout.subsec_nanos());
        let args = SubmitArgs::new().timespec(&timespec);
        // Buffers recycled since the last turn go back before receives are armed again.
        self.buffers.publish();
        // With DEFER_TASKRUN the kernel wakes the thread only once this many completions are
        // there (or at the timeout), not for each.
        let want = if defer && self.times_arrivals() { CQ_ENTRIES as usize / 2 } else { 1 };
        match self.ring.submitter().submit_with_args(want, &args) {
            Ok(_) => {}
            Err(e) if matches!(e.raw_os_error(), Some(libc::ETIME | libc::EINTR | libc::EBUSY)) => {}
            Err(e) => return Err(e),
        }
        self.reap()
    }

    /// This turn's completions (refilled by [`Ring::submit_and_wait`]); hand the list back
    /// with [`Ring::restore_completions`] so that its capacity is kept.
    pub fn take_completions(&mut self) -> Vec<Completion> {
        std::mem::take(&mut self.completions)
    }

    pub fn restore_completions(&mut self, mut list: Vec<Completion>) {
        list.clear();
        self.completions = list;
    }

    /// The bytes of a [`Completion::Received`].
    ///
    /// # Safety
    /// `buffer` and `len` must come from a `Received` completion whose buffer has not been
    /// recycled yet, and the slice must be dropped before [`Ring::recycle`] is called for
    /// it. The kernel does not touch a buffer between its completion and its recycling, and
    /// the memory lives as long as the ring.
    pub unsafe fn received<'a>(&self, buffer: u16, offset: u16, len: usize) -> &'a mut [u8] {
        // SAFETY: as the caller promises; `buffer` < count, `offset + len` ≤ the buffer's bytes.
        unsafe { std::slice::from_raw_parts_mut(self.buffers.address(buffer).add(offset as usize), len) }
    }

    /// Gives a received buffer back to the kernel.
    pub fn recycle(&mut self, buffer: u16) {
        self.buffers.recycle(buffer);
    }

    /// Moves completions from the kernel's queue into `completions`, settling slots.
    fn reap(&mut self) -> io::Result<()> {
        let mut rearm_epoll = false;
        // Both lists keep their capacity from turn to turn: no allocation per completion.
        let mut rearm_receive = std::mem::take(&mut self.rearm);
        let mut entries = std::mem::take(&mut self.raw);
        entries.extend(self.ring.completion().map(|c| (c.user_data(), c.result(), c.flags())));
        for &(data, result, flags) in &entries {
            let (slot, op) = ((data >> 2) as usize, data & 3);
            let more = cqueue::more(flags);
            match op {
                OP_POLL => {
                    self.completions.push(Completion::EpollReady);
                    if !more {
                        self.in_flight -= 1;
                        rearm_epoll = true;
                    }
                }
                OP_CANCEL => self.in_flight -= 1,
                OP_RECV => self.on_receive(slot, result, flags, more, &mut rearm_receive),
                _ => self.on_send(slot, result)?,
            }
        }
        entries.clear();
        self.raw = entries;
        self.buffers.publish();
        for &slot in &rearm_receive {
            self.receive(slot)?;
        }
        rearm_receive.clear();
        self.rearm = rearm_receive;
        if rearm_epoll && !self.closing {
            self.watch_epoll()?;
        }
        Ok(())
    }

    fn on_receive(&mut self, slot: usize, result: i32, flags: u32, more: bool, rearm: &mut Vec<usize>) {
        if !more {
            self.in_flight -= 1;
            self.slots[slot].receiving = false;
        }
        let (key, live) = (self.slots[slot].key as usize, self.slots[slot].live);
        if result == -libc::ECANCELED && self.slots[slot].paused {
            // Paused: the receive ends here, and starts again when resumed.
            self.release_if_idle(slot);
            return;
        }
        match (result, cqueue::buffer_select(flags)) {
            (len, Some(buffer)) if len > 0 && live => match self.payload(buffer, len as usize) {
                Some((offset, len, stamp)) if len > 0 => {
                    self.completions.push(Completion::Received { key, buffer, offset, len, stamp });
                    if !more {
                        rearm.push(slot);
                    }
                }
                // A multishot recvmsg reports the end of the stream as a buffer with no payload.
                _ => {
                    self.buffers.recycle(buffer);
                    if !more {
                        self.completions.push(Completion::Ended { key });
                    }
                }
            },
            (_, Some(buffer)) => self.buffers.recycle(buffer),
            // Out of buffers: the receive stopped; it is armed again at the end of this reap
            // and takes buffers once the worker has recycled this turn's (published before
            // the next submission).
            (result, None) if result == -libc::ENOBUFS && live => {
                self.buffer_shortages += 1;
                rearm.push(slot)
            }
            (_, None) if live && !more => self.completions.push(Completion::Ended { key }),
            (_, None) => {}
        }
        self.release_if_idle(slot);
    }

    /// Where the payload of a receive's `len` bytes in `buffer` starts, how long it is, and
    /// its arrival stamp: the whole buffer for a plain receive; after the header and control
    /// bytes for a `recvmsg` (None when that layout does not parse).
    fn payload(&mut self, buffer: u16, len: usize) -> Option<(u16, usize, Option<Duration>)> {
        let Some(header) = self.recvmsg.as_ref() else { return Some((0, len, None)) };
        // SAFETY: the kernel wrote `len` bytes into this buffer and is done with it until it
        // is recycled.
        let bytes = unsafe {
            std::slice::from_raw_parts(self.buffers.address(buffer), len.min(self.buffers.buffer_bytes()))
        };
        let out = types::RecvMsgOut::parse(bytes, header.get()).ok()?;
        let stamp = rx_time::stamp(out.control_data());
        if !out.payload_data().is_empty() {
            self.last_stamped = stamp.is_some();
        }
        let offset = out.payload_data().as_ptr() as usize - bytes.as_ptr() as usize;
        Some((offset as u16, out.payload_data().len(), stamp))
    }

    fn on_send(&mut self, slot: usize, result: i32) -> io::Result<()> {
        self.in_flight -= 1;
        let entry = &mut self.slots[slot];
        entry.sending = false;
        let (key, live) = (entry.key as usize, entry.live);
        if result < 0 {
            if live {
                self.completions.push(Completion::SendFailed { key });
            }
        } else {
            entry.sent += result as u32;
            let total = entry.staging.len() + entry.shared.as_ref().map_or(0, |shared| shared.len());
            if (entry.sent as usize) < total && live {
                return self.send_rest(slot);
            }
            entry.shared = None;
            if live {
                self.completions.push(Completion::Sent { key });
            }
        }
        self.release_if_idle(slot);
        Ok(())
    }

    /// Queues the unsent part of a slot's staging buffer, or once that is sent, of its
    /// shared bytes (one after the other: the second starts only once the first completed).
    fn send_rest(&mut self, slot: usize) -> io::Result<()> {
        let entry = &mut self.slots[slot];
        let sent = entry.sent as usize;
        let (rest, more) = match (sent.checked_sub(entry.staging.len()), entry.shared.as_deref()) {
            (Some(past), Some(shared)) => (&shared[past..], 0),
            // The shared bytes follow: the kernel holds a short head back for them instead of
            // sending it as a packet of its own (which the server would wake up for).
            (None, Some(_)) => (&entry.staging[sent..], libc::MSG_MORE),
            (_, None) => (&entry.staging[sent..], 0),
        };
        let send = opcode::Send::new(Fd(entry.fd), rest.as_ptr(), rest.len() as u32)
            .flags(libc::MSG_NOSIGNAL | more)
            .build()
            .user_data(user_data(slot, OP_SEND));
        entry.sending = true;
        self.push(&send)?;
        self.in_flight += 1;
        Ok(())
    }

    fn receive(&mut self, slot: usize) -> io::Result<()> {
        let entry = &mut self.slots[slot];
        if !entry.live || entry.receiving || entry.paused {
            return Ok(());
        }
        entry.receiving = true;
        let receive = match self.recvmsg.as_ref() {
            Some(header) => opcode::RecvMsgMulti::new(Fd(entry.fd), header.get(), BUFFER_GROUP).build(),
            None => opcode::RecvMulti::new(Fd(entry.fd), BUFFER_GROUP).build(),
        }
        .user_data(user_data(slot, OP_RECV));
        self.push(&receive)?;
        self.in_flight += 1;
        Ok(())
    }

    fn watch_epoll(&mut self) -> io::Result<()> {
        let poll = opcode::PollAdd::new(Fd(self.epoll_fd), libc::POLLIN as u32)
            .multi(true)
            .build()
            .user_data(OP_POLL);
        self.push(&poll)?;
        self.in_flight += 1;
        Ok(())
    }

    /// Frees a slot that left the worker once nothing of it is in flight.
    fn release_if_idle(&mut self, slot: usize) {
        let entry = &self.slots[slot];
        if !entry.live && !entry.receiving && !entry.sending {
            self.slots.remove(slot);
        }
    }

    /// Adds a submission entry, submitting what is queued first if the queue is full.
    fn push(&mut self, entry: &squeue::Entry) -> io::Result<()> {
        // SAFETY: every buffer an entry points at (staging, shared, provided buffers) stays alive
        // and unmoved until its completion: slots are freed only when idle, and the ring
        // cancels and waits for everything before its memory goes (Drop).
        if unsafe { self.ring.submission().push(entry) }.is_ok() {
            return Ok(());
        }
        self.ring.submit()?;
        // SAFETY: as above.
        unsafe { self.ring.submission().push(entry) }
            .map_err(|_| io::Error::other("io_uring submission queue full"))
    }
}

impl Drop for Ring {
    /// Ends everything in flight and waits for it, so that no receive lands in a freed
    /// buffer and no send reads a freed staging buffer. If the kernel does not answer in
    /// time, the memory is leaked rather than freed under it.
    fn drop(&mut self) {
        self.closing = true;
        // Receives end when their sockets are shut (a cancel of each, or of all, is matched
        // against every request in flight: quadratic at 10,000 connections); the one poll
        // of epoll is cancelled.
        for (_, slot) in self.slots.iter_mut() {
            if slot.live && slot.receiving {
                // SAFETY: shutdown on the connection's own descriptor, still open here.
                unsafe { libc::shutdown(slot.fd, libc::SHUT_RDWR) };
            }
            slot.live = false;
        }
        let cancel =
            opcode::AsyncCancel2::new(CancelBuilder::user_data(OP_POLL)).build().user_data(OP_CANCEL);
        if self.push(&cancel).is_ok() {
            self.in_flight += 1;
        }
        let deadline = Instant::now() + TEARDOWN_WAIT;
        while self.in_flight > 0 && Instant::now() < deadline {
            if self.submit_and_wait(Duration::from_millis(10), false).is_err() {
                break;
            }
            self.completions.clear();
        }
        if self.in_flight > 0 {
            std::mem::forget(std::mem::take(&mut self.slots));
            self.buffers.leak();
        }
    }
}

fn user_data(slot: usize, op: u64) -> u64 {
    ((slot as u64) << 2) | op
}

#[cfg(test)]
#[path = "uring_tests.rs"]
mod tests;
