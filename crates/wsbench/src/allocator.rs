//! How the process's allocator treats large buffers, set once at start.
//!
//! The budget for messages still arriving (`--max-message-memory`) counts the capacity of
//! every buffer a peer makes us grow. glibc's malloc would let the resident memory run far
//! past that count: it raises its mmap threshold each time a large block is freed, after
//! which large buffers come from the heap, where growing one copies it (old and new held at
//! once) and freeing one leaves its pages resident. 30 connections inflating deflate bombs
//! under a 64 MiB budget peaked at 155–177 MiB that way, and at 100 MiB with the threshold
//! pinned at 128 KiB: every buffer from that size on is its own mapping, grown in place by
//! `mremap` and returned to the kernel when freed.
//!
//! Smaller blocks freed in the middle of the heap stay resident until the allocator is told
//! to hand their pages back: the engine does so every few seconds, after connections gave
//! back the room a burst took ([`crate::engine::capacity`]), so that a long run's memory
//! does not keep each burst's high-water mark.

/// The size from which every allocation is its own mapping.
#[cfg(target_env = "gnu")]
const MMAP_THRESHOLD: libc::c_int = 128 * 1024;

/// Pins glibc's mmap threshold (see the module doc); a no-op with another C library.
pub fn return_large_buffers_to_the_kernel() {
    #[cfg(target_env = "gnu")]
    // SAFETY: mallopt only changes a malloc tunable; called before any thread starts.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
    }
}

/// Hands the allocator's free pages back to the kernel (glibc's `malloc_trim`, every arena);
/// a no-op with another C library.
pub fn give_back_free_pages() {
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim only returns memory no allocation uses to the kernel.
    unsafe {
        libc::malloc_trim(0);
    }
}
