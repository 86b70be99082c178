//! The memory a peer can make us hold for messages it has not finished sending: one budget
//! per process ([`MessageMemory`], shared by every thread), drawn on by each connection
//! through its [`Reservation`] as the buffer of a message being reassembled or inflated
//! grows. A per-message limit alone does not bound a process: a thousand connections each
//! inflating a bomb up to the limit would hold a thousand times it.
//!
//! Buffers grow only through [`Reservation::make_room`], which charges the budget for the
//! capacity they get before they get it, so what the budget counts is what is allocated.
//! A connection gives its charge back when its message is complete ([`Reservation::release`])
//! or when it is dropped.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The bytes every connection of a process may hold at once in messages still arriving.
#[derive(Debug)]
pub struct MessageMemory {
    held: AtomicU64,
    limit: u64,
}

impl MessageMemory {
    pub fn new(limit: u64) -> Arc<MessageMemory> {
        Arc::new(MessageMemory { held: AtomicU64::new(0), limit })
    }

    /// Bytes charged to the budget now.
    pub fn held(&self) -> u64 {
        self.held.load(Ordering::Relaxed)
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }

    fn charge(&self, bytes: u64) -> bool {
        let before = self.held.fetch_add(bytes, Ordering::Relaxed);
        if before.saturating_add(bytes) > self.limit {
            self.held.fetch_sub(bytes, Ordering::Relaxed);
            return false;
        }
        true
    }

    fn refund(&self, bytes: u64) {
        self.held.fetch_sub(bytes, Ordering::Relaxed);
    }
}

/// Growing a message's buffer would take the process past its budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("messages still arriving on all connections would hold more than {limit} bytes together")]
pub struct OverBudget {
    pub limit: u64,
}

/// One connection's share of a [`MessageMemory`]: what its message buffers were charged.
/// Without a budget ([`Reservation::default`]) nothing is charged and nothing is refused.
#[derive(Debug, Default)]
pub struct Reservation {
    budget: Option<Arc<MessageMemory>>,
    held: u64,
}

impl Reservation {
    pub fn new(budget: Arc<MessageMemory>) -> Reservation {
        Reservation { budget: Some(budget), held: 0 }
    }

    /// The budget it draws on (none: unbudgeted), for a connection's streams to share.
    pub fn budget(&self) -> Option<Arc<MessageMemory>> {
        self.budget.clone()
    }

    /// Bytes this connection is charged for now.
    pub fn held(&self) -> u64 {
        self.held
    }

    /// Makes room in `buf` for `additional` more bytes, charging the budget for the
    /// capacity `buf` grows to (doubling when the budget allows it, exactly what is needed
    /// when only that fits).
    pub fn make_room(&mut self, buf: &mut Vec<u8>, additional: usize) -> Result<(), OverBudget> {
        let needed = buf.len().saturating_add(additional);
        let Some(budget) = self.budget.as_ref() else {
            buf.reserve(additional);
            return Ok(());
        };
        if needed as u64 <= self.held && needed <= buf.capacity() {
            return Ok(());
        }
        let capacity = buf.capacity();
        let wanted = if capacity >= needed { capacity } else { needed.max(capacity.saturating_mul(2)) };
        let charged = |target: usize, held: u64| budget.charge((target as u64).saturating_sub(held));
        let target = if charged(wanted, self.held) {
            wanted
        } else if wanted > needed && charged(needed, self.held) {
            needed
        } else {
            return Err(OverBudget { limit: budget.limit() });
        };
        self.held = self.held.max(target as u64);
        if buf.capacity() < target {
            buf.reserve_exact(target - buf.len());
        }
        Ok(())
    }

    /// The message is complete (or abandoned): its charge goes back to the budget. A buffer
    /// the connection keeps for its next message is charged again when that one grows it.
    pub fn release(&mut self) {
        if let Some(budget) = self.budget.as_ref() {
            budget.refund(self.held);
        }
        self.held = 0;
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_share_the_budget_and_give_it_back() {
        let budget = MessageMemory::new(1000);
        let (mut a, mut b) = (Reservation::new(budget.clone()), Reservation::new(budget.clone()));
        let (mut buf_a, mut buf_b) = (Vec::new(), Vec::new());
        a.make_room(&mut buf_a, 600).unwrap();
        buf_a.resize(600, 1);
        assert!(buf_a.capacity() >= 600 && budget.held() >= 600);
        assert_eq!(b.make_room(&mut buf_b, 500), Err(OverBudget { limit: 1000 }));
        assert!(buf_b.capacity() < 500, "nothing was allocated past the budget");
        b.make_room(&mut buf_b, 400).unwrap();
        a.release();
        b.make_room(&mut buf_b, 900).unwrap();
        drop(b);
        assert_eq!(budget.held(), 0);
    }

    #[test]
    fn growth_doubles_while_it_fits_and_is_exact_when_only_that_fits() {
        let budget = MessageMemory::new(3000);
        let mut reservation = Reservation::new(budget.clone());
        let mut buf = Vec::new();
        for _ in 0..25 {
            reservation.make_room(&mut buf, 100).unwrap();
            buf.extend_from_slice(&[0u8; 100]);
        }
        assert_eq!(buf.len(), 2500);
        assert_eq!(reservation.held(), buf.capacity() as u64);
        assert!(budget.held() <= 3000);
        reservation.make_room(&mut buf, 500).unwrap();
        assert_eq!(reservation.make_room(&mut buf, 501), Err(OverBudget { limit: 3000 }));
        reservation.release();
        assert_eq!(budget.held(), 0);
    }

    #[test]
    fn without_a_budget_nothing_is_refused() {
        let mut reservation = Reservation::default();
        let mut buf = Vec::new();
        reservation.make_room(&mut buf, 1 << 20).unwrap();
        assert!(buf.capacity() >= 1 << 20);
    }
}
