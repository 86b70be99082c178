//! Room a burst took, given back once the burst has passed. A busy machine stalls the client
//! or the server for a moment, and then everything that fell due comes at once: a
//! connection's queues and buffers grow to hold it, and a `Vec` or `VecDeque` keeps that
//! capacity for good. Over a run of days each connection would hold what its worst second
//! ever needed, and the client's memory would creep up with every burst larger than the
//! last. So every [`GIVE_BACK_EVERY`] seconds the worker (and the workload, for its own
//! queues) offers each buffer to [`give_back`]: one using at most a quarter of its capacity
//! shrinks to twice its use, never below its floor (what a steady load needs, so that it
//! is never shrunk at all). A four-fold drop held at the moment of a look taken once per
//! period is the hysteresis: a steady load neither shrinks nor grows its buffers, and a
//! load that swings reallocates at most once a period per buffer, never per message.

use std::collections::VecDeque;

/// Seconds between two looks at a connection's buffers.
pub const GIVE_BACK_EVERY: u64 = 10;

/// A buffer whose capacity may be handed back.
pub trait Room {
    /// Elements in use.
    fn used(&self) -> usize;
    /// Elements it has room for.
    fn room(&self) -> usize;
    /// Shrinks its room to at least `to` (never below what is in use).
    fn shrink_room(&mut self, to: usize);
}

/// `Vec` and `VecDeque` say the same things by the same names.
macro_rules! room_of {
    ($($buffer:ident),*) => {$(
        impl<T> Room for $buffer<T> {
            fn used(&self) -> usize {
                self.len()
            }
            fn room(&self) -> usize {
                self.capacity()
            }
            fn shrink_room(&mut self, to: usize) {
                self.shrink_to(to);
            }
        }
    )*};
}
room_of!(Vec, VecDeque);

/// Shrinks `buffer` to twice its use (at least `floor` elements) when it uses at most a
/// quarter of its room and has more than `floor`; returns whether it shrank.
pub fn give_back(buffer: &mut impl Room, floor: usize) -> bool {
    let (used, room) = (buffer.used(), buffer.room());
    if room <= floor || used.saturating_mul(4) > room {
        return false;
    }
    buffer.shrink_room(used.saturating_mul(2).max(floor));
    buffer.room() < room
}

/// Whether the second numbered `second` (seconds since the worker started counting) is
/// one of those at which buffers are looked at.
pub fn look_at(second: u64) -> bool {
    second.is_multiple_of(GIVE_BACK_EVERY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_a_burst_grew_shrinks_to_twice_its_use_once_the_burst_is_over() {
        let mut queue: VecDeque<u64> = (0..100).collect();
        assert!(!give_back(&mut queue, 4), "in use: nothing to give back");
        queue.truncate(3);
        assert!(give_back(&mut queue, 4));
        assert!(queue.capacity() >= 6 && queue.capacity() < 100, "{}", queue.capacity());
        assert_eq!(queue.iter().copied().collect::<Vec<_>>(), [0, 1, 2], "contents kept");
        queue.clear();
        give_back(&mut queue, 4);
        assert!(queue.capacity() >= 4 && queue.capacity() < 8, "{}", queue.capacity());
    }

    #[test]
    fn a_steady_load_keeps_its_buffer() {
        // Using more than a quarter of its room: kept, however large.
        let mut bytes: Vec<u8> = Vec::with_capacity(4096);
        bytes.resize(1025, 0);
        assert!(!give_back(&mut bytes, 64));
        assert_eq!(bytes.capacity(), 4096);
        // At its floor: kept, even empty.
        let mut small: Vec<u8> = Vec::with_capacity(64);
        assert!(!give_back(&mut small, 64));
        assert_eq!(small.capacity(), 64);
    }

    #[test]
    fn buffers_are_looked_at_once_a_period() {
        let looks = (1..=100).filter(|&second| look_at(second)).count();
        assert_eq!(looks as u64, 100 / GIVE_BACK_EVERY);
    }
}
