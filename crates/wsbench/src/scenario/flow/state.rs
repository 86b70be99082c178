//! One flow connection's place in its program, kept by the flow's workload per connection.

use std::collections::VecDeque;
use std::time::Instant;

use serde_json::Value;

use super::program::{Captured, Vars};

/// Timed-out sends remembered so that their late replies are not counted unmatched.
pub const EXPIRED_KEPT: usize = 64;

/// What a connection waits for.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub enum Wait {
    #[default]
    Nothing,
    /// An `ExpectReply` (op index) until the deadline.
    Reply(usize, Instant),
    /// An `ExpectRegex` (op index), since when, until the deadline.
    Regex(usize, Instant, Instant),
    Sleep(Instant),
    Done,
}

/// A send awaiting its replies.
#[derive(Debug, Clone)]
pub struct Outstanding {
    /// The send's step name.
    pub name: String,
    /// The value of its matched field.
    pub value: Value,
    pub sent: Instant,
    /// What its template was filled in with.
    pub vars: Vars,
    /// Replies still to come (`None`: until its `until` pattern matches).
    pub left: Option<u64>,
}

/// One connection's place in the program.
#[derive(Debug, Default)]
pub struct FlowState {
    pub pc: usize,
    /// Open `repeat` blocks: their op index and the rounds left (`None`: until the end).
    pub loops: Vec<(usize, Option<u64>)>,
    pub seq: u64,
    pub wait: Wait,
    pub outstanding: Vec<Outstanding>,
    /// Sends whose expectation timed out (already counted late), or reached its `count`
    /// before its `until`, the latest [`EXPIRED_KEPT`]: replies to them are not counted again.
    pub expired: VecDeque<(String, Value)>,
    /// The latest send's values (an `expect-regex` is filled in with them).
    pub last_vars: Vars,
    /// What the connection captured from replies (`{var.NAME}`).
    pub captured: Captured,
    /// When each send name was last sent (`since`).
    pub sent_at: Vec<(String, Instant)>,
}

impl FlowState {
    /// A send's replies timed out: remembered, the oldest forgotten past the bound.
    pub fn expire(&mut self, name: String, value: Value) {
        if self.expired.len() == EXPIRED_KEPT {
            self.expired.pop_front();
        }
        self.expired.push_back((name, value));
    }

    /// Send `name` went out at `at`.
    pub fn sent(&mut self, name: &str, at: Instant) {
        match self.sent_at.iter_mut().find(|(known, _)| known == name) {
            Some(entry) => entry.1 = at,
            None => self.sent_at.push((name.to_owned(), at)),
        }
    }
}
