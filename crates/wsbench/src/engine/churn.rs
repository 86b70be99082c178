//! The churn scenario's own pieces (issue 14): a connection that has exchanged its K echoes
//! starts the close handshake itself, and the close is watched until the server answers it
//! or [`CLOSE_TIMEOUT`] passes. Connections open on the pacer's ramp (`--rate` new
//! connections per second); their connect time counts from when each was due, so a client
//! that falls behind its schedule shows it (coordinated omission). The rest of a cycle —
//! connect, upgrade, echoes, TCP close — is the engine's ordinary path.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use wsbench_proto::{CloseCode, OpCode, write_frame};

use super::conn::{ClientConn, State};
use crate::config::{LoadSpec, Scenario};

/// How long the server has to answer our close frame before the close counts unanswered.
pub const CLOSE_TIMEOUT: Duration = Duration::from_secs(2);

/// churn: after `--duration` the last connections may still be in their cycle; the run
/// waits this long at most for them (they usually finish in milliseconds, and the run ends
/// as soon as none is open).
pub fn tail(load: &LoadSpec) -> Duration {
    match load.scenario {
        Scenario::Churn => load.connect_timeout + CLOSE_TIMEOUT,
        _ => Duration::ZERO,
    }
}

/// Whether `conn` has had its `messages_per_connection` echoes and nothing is in flight.
pub fn cycle_done(conn: &ClientConn, load: &LoadSpec) -> bool {
    load.scenario == Scenario::Churn
        && conn.state == State::Open
        && conn.echoes >= load.messages_per_connection
        && conn.in_flight.is_empty()
}

/// Starts the close handshake: close 1000 written, the connection closing.
pub fn start_close(conn: &mut ClientConn) {
    conn.state = State::Closing;
    conn.churn_closing = true;
    write_frame(&mut conn.output, true, OpCode::Close, Some([0; 4]), &CloseCode::NORMAL.to_be_bytes());
}

/// Closes in progress: when each times out, which slab key, and the connection's start
/// (its identity, since keys are reused).
#[derive(Debug, Default)]
pub struct Closes {
    deadlines: VecDeque<(Instant, usize, Instant)>,
}

impl Closes {
    pub fn watch(&mut self, key: usize, started: Instant, now: Instant) {
        self.deadlines.push_back((now + CLOSE_TIMEOUT, key, started));
    }

    /// A close whose deadline has passed by `now` (key, start), answered or not: the caller
    /// checks whether that connection is still there.
    pub fn pop_expired(&mut self, now: Instant) -> Option<(usize, Instant)> {
        let &(deadline, key, started) = self.deadlines.front()?;
        (deadline <= now).then(|| {
            self.deadlines.pop_front();
            (key, started)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closes_expire_in_order_after_the_timeout() {
        let now = Instant::now();
        let mut closes = Closes::default();
        closes.watch(3, now, now);
        closes.watch(4, now, now + Duration::from_millis(10));
        assert_eq!(closes.pop_expired(now + CLOSE_TIMEOUT - Duration::from_millis(1)), None);
        assert_eq!(closes.pop_expired(now + CLOSE_TIMEOUT), Some((3, now)));
        assert_eq!(closes.pop_expired(now + CLOSE_TIMEOUT), None);
        assert_eq!(closes.pop_expired(now + CLOSE_TIMEOUT + Duration::from_millis(10)), Some((4, now)));
    }
}
