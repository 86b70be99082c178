//! Test builds only: the library's unit tests run on an allocator that counts, per thread,
//! the bytes allocated and not yet freed, so that a test can see what a simulated run of
//! hours keeps on the heap. Each test runs on a thread of its own, and what one test
//! allocates and frees on its thread is its own count, whatever the others do.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// Forwards every call to the system allocator, counting.
struct Counting;

thread_local! {
    /// Bytes this thread allocated and has not freed (const-initialised and without a
    /// destructor: reading it never allocates).
    static HELD: Cell<i64> = const { Cell::new(0) };
}

fn count(bytes: i64) {
    let _ = HELD.try_with(|held| held.set(held.get() + bytes));
}

// SAFETY: every call is forwarded to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is passed on.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            count(layout.size() as i64);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract is passed on.
        unsafe { System.dealloc(ptr, layout) };
        count(-(layout.size() as i64));
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is passed on.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            count(layout.size() as i64);
        }
        ptr
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract is passed on.
        let moved = unsafe { System.realloc(ptr, layout, new_size) };
        if !moved.is_null() {
            count(new_size as i64 - layout.size() as i64);
        }
        moved
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// Bytes the calling thread has allocated and not freed so far.
pub fn held_by_this_thread() -> i64 {
    HELD.with(Cell::get)
}
