//! How many messages this thread echoed: counted by every connection state machine that
//! echoes (`conn`, its HTTP/2 streams, `compression`) and taken by the event loop. It imports
//! nothing of the crate, so the modules that count and the one that takes the count need not
//! import each other for it.

use std::cell::Cell;

thread_local! {
    /// Text and binary messages echoed on this thread since the event loop last took the
    /// count. Per thread, so counting costs no atomic per message and no field per idle
    /// connection; the event loop adds it to its own count before it writes a connection's
    /// output.
    static ECHOED: Cell<u64> = const { Cell::new(0) };
}

/// Counts one echoed text or binary message (pongs, closes and pub/sub deliveries are not).
#[inline]
pub fn count_echo() {
    ECHOED.with(|count| count.set(count.get() + 1));
}

/// The messages this thread echoed since the last call.
#[inline]
pub fn take_echoed() -> u64 {
    ECHOED.with(|count| count.replace(0))
}
