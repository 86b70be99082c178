//! One flow connection's place in its program, kept by the flow's workload per connection.

use std::time::Instant;

use serde_json::Value;

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

/// One connection's place in the program.
#[derive(Debug, Default)]
pub struct FlowState {
    pub pc: usize,
    /// Open `repeat` blocks: their op index and the rounds left (`None`: until the end).
    pub loops: Vec<(usize, Option<u64>)>,
    pub seq: u64,
    pub wait: Wait,
    /// Sends awaiting their reply: step name, the value of the matched field, when sent.
    pub outstanding: Vec<(String, Value, Instant)>,
    /// Sends whose expectation timed out (already counted late): a reply to them is not
    /// counted again.
    pub expired: Vec<(String, Value)>,
}
