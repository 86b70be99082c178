//! The timeouts of one event loop's connections (handshake, closing) as a queue in the order
//! they were set: every deadline of one queue is the same delay after its event, so they
//! fall due in that order and a queue needs no heap. An entry takes 16 bytes (nanoseconds
//! since the loop started, the slab key and the connection's serial), since a server
//! accepting thousands of connections a second holds one per connection for the handshake
//! timeout and never returns the queue's pages while connections are open.

use std::collections::VecDeque;
use std::time::Instant;

#[derive(Debug, Clone, Copy)]
struct Entry {
    /// Nanoseconds after [`Deadlines::epoch`].
    at_ns: u64,
    key: u32,
    serial: u32,
}

#[derive(Debug)]
pub struct Deadlines {
    epoch: Instant,
    queue: VecDeque<Entry>,
}

impl Deadlines {
    pub fn new(epoch: Instant) -> Deadlines {
        Deadlines { epoch, queue: VecDeque::new() }
    }

    /// Sets a deadline for the connection at `key` (with `serial`); it must not be earlier
    /// than the last one pushed.
    pub fn push(&mut self, at: Instant, key: usize, serial: u32) {
        let at_ns = u64::try_from(at.saturating_duration_since(self.epoch).as_nanos()).unwrap_or(u64::MAX);
        // A slab key is below the number of open connections, which the open-file limit keeps
        // under 2^30 on Linux; a key that did not fit would name no connection, so its
        // deadline would do nothing.
        let key = u32::try_from(key).unwrap_or(u32::MAX);
        self.queue.push_back(Entry { at_ns, key, serial });
    }

    /// When the earliest deadline falls due.
    pub fn next(&self) -> Option<Instant> {
        self.queue.front().map(|entry| self.instant(entry))
    }

    /// Removes and returns the earliest deadline (key, serial) if it is due at `now`.
    pub fn pop_due(&mut self, now: Instant) -> Option<(usize, u32)> {
        let entry = *self.queue.front()?;
        if self.instant(&entry) > now {
            return None;
        }
        self.queue.pop_front();
        Some((entry.key as usize, entry.serial))
    }

    pub fn shrink_to_fit(&mut self) {
        self.queue.shrink_to_fit();
    }

    fn instant(&self, entry: &Entry) -> Instant {
        self.epoch + std::time::Duration::from_nanos(entry.at_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn deadlines_fall_due_in_order_and_only_when_due() {
        let epoch = Instant::now();
        let mut deadlines = Deadlines::new(epoch);
        assert_eq!(deadlines.next(), None);
        deadlines.push(epoch + Duration::from_millis(10), 7, 1);
        deadlines.push(epoch + Duration::from_millis(20), 3, 2);
        assert_eq!(deadlines.next(), Some(epoch + Duration::from_millis(10)));
        assert_eq!(deadlines.pop_due(epoch + Duration::from_millis(9)), None);
        assert_eq!(deadlines.pop_due(epoch + Duration::from_millis(10)), Some((7, 1)));
        assert_eq!(deadlines.pop_due(epoch + Duration::from_millis(15)), None);
        assert_eq!(deadlines.pop_due(epoch + Duration::from_secs(1)), Some((3, 2)));
        assert_eq!(deadlines.pop_due(epoch + Duration::from_secs(1)), None);
    }

    #[test]
    fn an_entry_takes_sixteen_bytes() {
        assert_eq!(std::mem::size_of::<Entry>(), 16);
    }

    #[test]
    fn a_deadline_before_the_epoch_is_due_at_once() {
        let epoch = Instant::now() + Duration::from_secs(1);
        let mut deadlines = Deadlines::new(epoch);
        deadlines.push(Instant::now(), 1, 1);
        assert_eq!(deadlines.pop_due(epoch), Some((1, 1)));
    }
}
