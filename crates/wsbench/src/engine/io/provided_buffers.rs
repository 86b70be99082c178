//! The io_uring backend's provided-buffer ring (`uring.rs`): the buffers the kernel picks
//! from as data arrives, and the entries that lend them to it. Its own file because its
//! memory rules (page-aligned, registered with the ring, freed only after the ring is gone,
//! leaked when a send may still be in flight) are unsafe code best read alone.

use std::alloc::Layout;
use std::io;
use std::sync::atomic::{AtomicU16, Ordering};

use io_uring::IoUring;
use io_uring::types::BufRingEntry;

/// Bytes of each provided buffer, for messages shorter than [`LARGE_MESSAGE_BYTES`]: a few
/// small echoes fit one.
pub(super) const BUFFER_BYTES: usize = 4 * 1024;
/// Bytes of each provided buffer in a run whose messages are [`LARGE_MESSAGE_BYTES`] or
/// longer. Each receive completion is one buffer: 4 KiB buffers cut a 1 MiB echo into 256
/// receives (each a `tcp_recvmsg`, its window update and its completion), which cost the
/// client twice the kernel's copy; 64 KiB ones, 16. Small messages keep small buffers: the
/// pool's memory stays in the cache.
pub(super) const LARGE_BUFFER_BYTES: usize = 64 * 1024;
/// The message length from which a run's buffers are [`LARGE_BUFFER_BYTES`].
pub const LARGE_MESSAGE_BYTES: usize = 64 * 1024;
/// Bytes of each provided buffer in a run whose messages are [`HUGE_MESSAGE_BYTES`] or
/// longer: with 64 KiB ones a 16 MiB echo still cost the client 1.6 times the floor's CPU per
/// MB (each receive's window update is an ACK the loopback processes on the client's time),
/// with 256 KiB ones 1.2–1.3 times. Not below that: at 1 MiB larger receives made no
/// difference to the client and cost the server more (measured with bench/large.sh).
pub(super) const HUGE_BUFFER_BYTES: usize = 256 * 1024;
/// The message length from which a run's buffers are [`HUGE_BUFFER_BYTES`].
pub const HUGE_MESSAGE_BYTES: usize = 4 * 1024 * 1024;
/// The most memory a pool of buffers takes: fewer buffers when they are large (a turn with
/// more receives than buffers waits for them, see `uring.rs`).
pub(super) const POOL_BYTES: usize = 16 * 1024 * 1024;

/// The bytes of each provided buffer for a run whose longest message is `message_bytes`.
pub(super) fn buffer_bytes(message_bytes: usize) -> usize {
    match message_bytes {
        HUGE_MESSAGE_BYTES.. => HUGE_BUFFER_BYTES,
        LARGE_MESSAGE_BYTES.. => LARGE_BUFFER_BYTES,
        _ => BUFFER_BYTES,
    }
}
/// The buffer group the ring's receives take from.
pub(super) const BUFFER_GROUP: u16 = 0;

/// The provided-buffer ring: `count` entries the kernel takes buffers from, and the
/// buffers themselves, registered as group [`BUFFER_GROUP`].
pub(super) struct ProvidedBuffers {
    /// A power of two.
    count: u16,
    /// Bytes of each buffer (a receive's payload starts past recvmsg's header, at an offset
    /// that fits a u16 whatever the buffer's size).
    buffer_bytes: usize,
    entries: *mut BufRingEntry,
    entries_layout: Layout,
    memory: *mut u8,
    memory_layout: Layout,
    /// Our copy of the tail; published to the kernel by [`ProvidedBuffers::publish`].
    tail: u16,
    leaked: bool,
}

// SAFETY: the pointers are owned heap memory (like a Box's); the worker moves to its thread
// before the ring is made, and only that thread touches them.
unsafe impl Send for ProvidedBuffers {}

impl ProvidedBuffers {
    pub(super) fn new(ring: &IoUring, count: u16, buffer_bytes: usize) -> io::Result<ProvidedBuffers> {
        let entries_layout = Layout::from_size_align(count as usize * size_of::<BufRingEntry>(), 4096)
            .map_err(io::Error::other)?;
        let memory_layout =
            Layout::from_size_align(count as usize * buffer_bytes, 4096).map_err(io::Error::other)?;
        // SAFETY: both layouts have a non-zero size.
        let (entries, memory) = unsafe {
            (
                std::alloc::alloc_zeroed(entries_layout).cast::<BufRingEntry>(),
                std::alloc::alloc(memory_layout),
            )
        };
        if entries.is_null() || memory.is_null() {
            return Err(io::ErrorKind::OutOfMemory.into());
        }
        let mut buffers = ProvidedBuffers {
            count,
            buffer_bytes,
            entries,
            entries_layout,
            memory,
            memory_layout,
            tail: 0,
            leaked: false,
        };
        // SAFETY: the entries are page-aligned, zeroed and live until Drop, which runs only
        // after the ring is gone (the Ring's fields drop in order: `ring` first).
        unsafe {
            ring.submitter().register_buf_ring_with_flags(entries as u64, count, BUFFER_GROUP, 0)?;
        }
        for buffer in 0..count {
            buffers.recycle(buffer);
        }
        buffers.publish();
        Ok(buffers)
    }

    pub(super) fn address(&self, buffer: u16) -> *mut u8 {
        // SAFETY: `buffer` < count, inside the allocation.
        unsafe { self.memory.add(buffer as usize * self.buffer_bytes) }
    }

    /// Puts `buffer` at the tail (visible to the kernel once published).
    pub(super) fn recycle(&mut self, buffer: u16) {
        let index = (self.tail & (self.count - 1)) as usize;
        // SAFETY: index < count; the kernel reads only entries between head and the
        // published tail, and this one is past it.
        let entry = unsafe { &mut *self.entries.add(index) };
        entry.set_addr(self.address(buffer) as u64);
        entry.set_len(self.buffer_bytes as u32);
        entry.set_bid(buffer);
        self.tail = self.tail.wrapping_add(1);
    }

    /// The memory the buffers take.
    #[cfg(test)]
    pub(super) fn memory_bytes(&self) -> usize {
        usize::from(self.count) * self.buffer_bytes
    }

    /// Tells the kernel about every buffer recycled so far.
    pub(super) fn publish(&self) {
        // SAFETY: the tail field lives in the first entry of our page-aligned ring; the
        // kernel reads it concurrently, hence the atomic release store.
        unsafe {
            let tail = BufRingEntry::tail(self.entries).cast::<AtomicU16>();
            (*tail).store(self.tail, Ordering::Release);
        }
    }

    /// Bytes of each buffer.
    pub(super) fn buffer_bytes(&self) -> usize {
        self.buffer_bytes
    }

    pub(super) fn leak(&mut self) {
        self.leaked = true;
    }
}

impl Drop for ProvidedBuffers {
    fn drop(&mut self) {
        if self.leaked {
            return;
        }
        // SAFETY: allocated in `new` with these layouts; the ring that used them is gone.
        unsafe {
            std::alloc::dealloc(self.entries.cast(), self.entries_layout);
            std::alloc::dealloc(self.memory, self.memory_layout);
        }
    }
}
