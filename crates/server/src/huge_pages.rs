//! Large message buffers backed by transparent huge pages.
//!
//! A buffer of many megabytes is a fresh mapping (the process pins glibc's mmap threshold),
//! and the kernel backs it page by page as it is first written: with 4 KiB pages a 100 MB
//! message takes some 25,000 page faults, which cost the echo server more than the copies
//! themselves. Where the system leaves huge pages to `madvise` (the common default), asking
//! for them turns that into a few dozen faults of 2 MiB. The advice changes how the memory is
//! backed, never its contents or size, and is ignored where huge pages are off.

/// Buffers from this capacity on are advised; smaller ones would not fill a huge page.
const MIN_CAPACITY: usize = 4 * 1024 * 1024;

/// Advises the kernel to back `buf`'s capacity with huge pages (a no-op below
/// [`MIN_CAPACITY`] and off Linux).
pub fn advise(buf: &mut Vec<u8>) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advised_buffers_keep_their_contents_and_capacity() {
        let mut buf = Vec::with_capacity(MIN_CAPACITY + 12_345);
        buf.extend_from_slice(b"header");
        let capacity = buf.capacity();
        advise(&mut buf);
        buf.resize(MIN_CAPACITY + 10_000, 7);
        assert_eq!(&buf[..6], b"header");
        assert!(buf[6..].iter().all(|&b| b == 7));
        assert_eq!(buf.capacity(), capacity);
    }
}
