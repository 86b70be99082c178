//! The buffers of large messages: backed by transparent huge pages, and filled straight from
//! the socket.
//!
//! A buffer of many megabytes is a fresh mapping (the process pins glibc's mmap threshold),
//! and the kernel backs it page by page as it is first written: with 4 KiB pages a 100 MB
//! message takes some 25,000 page faults, which cost the echo server more than the copies
//! themselves. Where the system leaves huge pages to `madvise` (the common default), asking
//! for them turns that into a few dozen faults of 2 MiB. The advice changes how the memory is
//! backed, never its contents or size, and is ignored where huge pages are off.
//!
//! A frame whose buffer is already sized for it is read into that buffer's spare capacity
//! ([`recv_into_spare`]) instead of into the event loop's read buffer and copied from there.
//!
//! Faulting in even huge pages means the kernel zeroing every page first, which costs about
//! what the copies do, so the buffer of a message that has been echoed is kept for the next
//! ([`give_back`], [`reuse`]): one per event-loop thread, the most recent, as large as the
//! message budget let it grow (it is charged to the budget again when reused), and given back
//! to the kernel when the thread has been idle ([`release_spare`]).

use std::cell::Cell;
use std::io;
use std::os::fd::AsRawFd;

use mio::net::TcpStream;

/// Buffers from this capacity on are advised; smaller ones would not fill a huge page.
const MIN_CAPACITY: usize = 4 * 1024 * 1024;

/// Buffers from this capacity on are kept for the next message; smaller ones come from the
/// heap, whose pages stay resident anyway.
const MIN_SPARE: usize = 1024 * 1024;

thread_local! {
    /// The last large message buffer given back on this thread, empty, for the next message.
    static SPARE: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// An empty buffer for a message of `needed` bytes: this thread's spare when it fits (at
/// most twice the size, so the budget is not charged for much more than the message), or a
/// new, unallocated one.
pub fn reuse(needed: usize) -> Vec<u8> {
    take_spare(|capacity| capacity >= needed && capacity / 2 <= needed)
}

/// An empty buffer for a fragmented message whose first frame needs `needed` bytes: its
/// length is not known until its last frame, so this thread's spare (the last large message's
/// size, the best guess) is taken whenever it holds the first frame, and the buffer is not
/// regrown frame by frame; or a new, unallocated one.
pub fn reuse_for_fragments(needed: usize) -> Vec<u8> {
    take_spare(|capacity| capacity >= needed)
}

/// This thread's spare if `fits` its capacity, or a new, unallocated buffer.
fn take_spare(fits: impl Fn(usize) -> bool) -> Vec<u8> {
    SPARE.with(|spare| {
        let buf = spare.take();
        if fits(buf.capacity()) {
            return buf;
        }
        spare.set(buf);
        Vec::new()
    })
}

/// A large buffer whose message has been echoed: kept as this thread's spare (replacing the
/// one before), or freed when it is small.
pub fn give_back(mut buf: Vec<u8>) {
    if buf.capacity() >= MIN_SPARE {
        buf.clear();
        SPARE.with(|spare| spare.set(buf));
    }
}

/// Frees this thread's spare buffer (the thread is idle).
pub fn release_spare() {
    SPARE.with(|spare| drop(spare.take()));
}

/// Advises the kernel to back `buf`'s capacity with huge pages (a no-op below
/// [`MIN_CAPACITY`] and off Linux).
pub fn advise_huge_pages(buf: &mut Vec<u8>) {
    #[cfg(target_os = "linux")]
    if buf.capacity() >= MIN_CAPACITY {
        // SAFETY: sysconf only reads a system constant.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096).max(1);
        let start = (buf.as_mut_ptr() as usize).next_multiple_of(page);
        let end = (buf.as_mut_ptr() as usize + buf.capacity()) / page * page;
        if end > start {
            // SAFETY: the range lies inside the buffer's own allocation, and MADV_HUGEPAGE
            // changes only how the kernel backs those pages, not what they hold.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
}

/// Reads at most `wanted` bytes from a plain socket into the spare capacity of `buf`,
/// appending them; `WouldBlock` when none are there.
pub fn recv_into_spare(stream: &TcpStream, buf: &mut Vec<u8>, wanted: usize) -> io::Result<usize> {
    let spare = buf.spare_capacity_mut();
    let len = wanted.min(spare.len());
    // SAFETY: recv writes at most `len` bytes at the start of the spare capacity, memory the
    // Vec owns; nothing reads it before the kernel has written it.
    let read = unsafe { libc::recv(stream.as_raw_fd(), spare.as_mut_ptr().cast(), len, 0) };
    let read = usize::try_from(read).map_err(|_| io::Error::last_os_error())?;
    // SAFETY: the kernel initialised those `read` bytes, right after the initialised ones.
    unsafe { buf.set_len(buf.len() + read) };
    Ok(read)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advised_buffers_keep_their_contents_and_capacity() {
        let mut buf = Vec::with_capacity(MIN_CAPACITY + 12_345);
        buf.extend_from_slice(b"header");
        let capacity = buf.capacity();
        advise_huge_pages(&mut buf);
        buf.resize(MIN_CAPACITY + 10_000, 7);
        assert_eq!(&buf[..6], b"header");
        assert!(buf[6..].iter().all(|&b| b == 7));
        assert_eq!(buf.capacity(), capacity);
    }

    #[test]
    fn a_spare_is_reused_for_a_message_it_fits_and_released() {
        release_spare();
        give_back(Vec::with_capacity(MIN_SPARE - 1));
        assert_eq!(reuse(1000).capacity(), 0, "a small buffer is not kept");
        let mut buf = Vec::with_capacity(4 * MIN_SPARE);
        buf.extend_from_slice(b"old message");
        let address = buf.as_ptr();
        give_back(buf);
        assert_eq!(reuse(MIN_SPARE).capacity(), 0, "more than twice the size asked for is not handed out");
        assert_eq!(reuse(5 * MIN_SPARE).capacity(), 0, "too small for the message");
        let again = reuse(3 * MIN_SPARE);
        assert_eq!((again.as_ptr(), again.len()), (address, 0), "the same buffer, empty");
        assert_eq!(reuse(3 * MIN_SPARE).capacity(), 0, "handed out once");
        give_back(again);
        assert_eq!(reuse_for_fragments(5 * MIN_SPARE).capacity(), 0, "too small for the first frame");
        let fragmented = reuse_for_fragments(MIN_SPARE / 4);
        assert_eq!(fragmented.as_ptr(), address, "a fragmented message takes it, whatever its first frame");
        give_back(fragmented);
        release_spare();
        assert_eq!(reuse(3 * MIN_SPARE).capacity(), 0, "released");
    }

    #[test]
    fn a_read_appends_what_arrived_and_at_most_what_was_wanted() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut writer = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let reader = TcpStream::from_std(listener.accept().unwrap().0);
        let mut buf = Vec::with_capacity(100);
        buf.extend_from_slice(b"ab");
        std::io::Write::write_all(&mut writer, b"cdefgh").unwrap();
        let mut read = 0;
        while read == 0 {
            match recv_into_spare(&reader, &mut buf, 3) {
                Ok(n) => read = n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::yield_now(),
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(read, 3);
        assert_eq!(buf, b"abcde");
    }
}
