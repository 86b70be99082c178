//! The worker's second, off the message path: the workload's own, and every few seconds
//! ([`capacity::GIVE_BACK_EVERY`]) the room a burst took in each connection's buffers (the
//! bytes still to write, their ledger, the ring's staging buffer) given back, and then the
//! allocator's free pages handed to the kernel. Without it a busy machine's stalls, each
//! answered by everything at once, leave every connection holding what its worst second
//! needed, and the client's memory climbs with the length of the run.

use std::time::Instant;

use super::Worker;
use crate::engine::capacity;

/// Bytes a connection's output keeps whatever bursts came before: a few usual messages.
const OUTPUT_FLOOR: usize = 256;
/// Runs of messages the ledger of what is being written keeps room for.
const MARKS_FLOOR: usize = 4;

impl Worker {
    /// Once a second (the recorder's tick): the workload's second; at every look
    /// ([`capacity::look_at`]) the connections' buffers give back what a burst took, and
    /// what that freed goes back to the kernel.
    pub(super) fn each_second(&mut self, now: Instant) {
        self.workload.each_second(now);
        if !capacity::look_at(self.rec.micros(now) / 1_000_000) {
            return;
        }
        for (key, conn) in self.conns.iter_mut() {
            capacity::give_back(&mut conn.output, OUTPUT_FLOOR);
            capacity::give_back(&mut conn.ledger.marks, MARKS_FLOOR);
            self.io.give_back_room(key);
        }
        crate::allocator::give_back_free_pages();
    }
}
