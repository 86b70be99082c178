//! The worker's side of `--io uring`: which connections go onto the ring (plain TCP, once
//! upgraded; connects, upgrades and TLS stay on epoll), how the loop waits (one
//! `io_uring_enter` that submits the turn's sends and waits for completions, epoll looked at
//! only when the ring says it has events), and what each completion means for a
//! connection. The frames themselves go through the same `received` → `frames` path as
//! epoll reads, so both backends measure the same thing.

use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::Worker;
use crate::config::IoBackend;
use crate::engine::conn::State;
use crate::engine::uring::{Completion, Ring};

/// The note that io_uring is unavailable is printed once per process, not per worker.
static FALLBACK_NOTED: AtomicBool = AtomicBool::new(false);

impl Worker {
    /// On the worker's own thread (the ring admits one submitter): the ring, when `--io
    /// uring` is asked for a plain ws:// target; epoll (with a note on stderr) when the
    /// kernel refuses io_uring.
    pub(super) fn open_ring(&mut self) {
        if self.spec.load.io != IoBackend::Uring || self.spec.target.tls {
            return;
        }
        match Ring::new(self.poll.as_raw_fd(), self.conns.capacity()) {
            Ok(ring) => self.ring = Some(ring),
            Err(error) => {
                if !FALLBACK_NOTED.swap(true, Ordering::Relaxed) {
                    eprintln!("wsbench: --io uring: io_uring is unavailable here ({error}): using epoll");
                }
            }
        }
    }

    /// The backend this worker ran on.
    pub(super) fn io_name(&self) -> &'static str {
        match self.ring {
            Some(_) => IoBackend::Uring.name(),
            None => IoBackend::Epoll.name(),
        }
    }

    /// Waits up to `timeout` for something to do and handles the ring's completions; fills
    /// `ready` with epoll's events when there are any. False when waiting failed.
    pub(super) fn ring_wait(&mut self, timeout: Duration) -> bool {
        let Some(ring) = self.ring.as_mut() else { return false };
        if let Err(e) = ring.submit_and_wait(timeout) {
            eprintln!("wsbench: worker {} io_uring wait failed: {e}", self.id);
            return false;
        }
        let mut completions = ring.take_completions();
        let mut epoll_ready = false;
        for &completion in &completions {
            match completion {
                Completion::EpollReady => epoll_ready = true,
                completion => self.on_completion(completion),
            }
        }
        if let Some(ring) = self.ring.as_mut() {
            ring.restore_completions(std::mem::take(&mut completions));
        }
        if epoll_ready
            && let Err(e) = self.poll.poll(&mut self.events, Some(Duration::ZERO))
            && e.kind() != io::ErrorKind::Interrupted
        {
            eprintln!("wsbench: worker {} poll failed: {e}", self.id);
            return false;
        }
        if !epoll_ready {
            self.events.clear();
        }
        true
    }

    fn on_completion(&mut self, completion: Completion) {
        let Some(ring) = self.ring.as_mut() else { return };
        match completion {
            Completion::Received { key, buffer, len } => {
                if ring.has(key) {
                    // SAFETY: the buffer is ours until recycled below, after the slice's use.
                    let data = unsafe { ring.received(buffer, len) };
                    self.rec.metrics.counters.bytes_received += len as u64;
                    if self.received(key, data) {
                        self.flush(key);
                    }
                }
                if let Some(ring) = self.ring.as_mut() {
                    ring.recycle(buffer);
                }
            }
            Completion::Ended { key } | Completion::SendFailed { key } if ring.has(key) => {
                self.on_broken(key)
            }
            Completion::Sent { key } if ring.has(key) => {
                if self.conns.get(key).is_some_and(|c| c.has_pending()) {
                    self.flush(key);
                }
            }
            Completion::Ended { .. } | Completion::SendFailed { .. } | Completion::Sent { .. } => {}
            Completion::EpollReady => {}
        }
    }

    /// Connections that opened this turn leave epoll for the ring (their pending output,
    /// if epoll could not write all of it, goes out through the ring).
    pub(super) fn adopt_opened(&mut self) {
        while let Some(key) = self.opened.pop() {
            let Some(ring) = self.ring.as_mut() else { return };
            let Some(conn) = self.conns.get_mut(key) else { continue };
            if conn.state != State::Open || ring.has(key) || conn.transport.is_handshaking() {
                continue;
            }
            let socket = conn.transport.socket();
            let adopted =
                self.poll.registry().deregister(socket).and_then(|()| ring.adopt(key, socket.as_raw_fd()));
            if adopted.is_err() {
                self.on_broken(key);
                continue;
            }
            self.flush(key);
        }
    }

    /// `Worker::flush` for a connection on the ring: queues what is pending as one send,
    /// unless a send is in flight (its completion sends the rest). False when the
    /// connection was dropped.
    pub(super) fn ring_flush(&mut self, key: usize) -> bool {
        let (Some(ring), Some(conn)) = (self.ring.as_mut(), self.conns.get_mut(key)) else { return false };
        if ring.sending(key) || !conn.has_pending() {
            return true;
        }
        let batch = self.workload.batch();
        if ring.send(key, |out| conn.take_pending(batch, out)).is_err() {
            self.on_broken(key);
            return false;
        }
        true
    }

    /// Whether `key` is served by the ring.
    #[inline]
    pub(super) fn on_ring(&self, key: usize) -> bool {
        self.ring.as_ref().is_some_and(|ring| ring.has(key))
    }
}
