//! The flow scenario's interpreter (issue 14): each connection runs the compiled
//! [`FlowProgram`] — sends templated text messages, waits for replies matched by a JSON
//! field (so replies may come in any order) or by a regex, sleeps, repeats blocks — and
//! records the latency of each named step. Replies that match nothing are counted by the
//! step the connection was at; expectations that time out are counted late by step. The
//! worker wakes a connection at its deadline through [`Timers`].

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt::Write as _;
use std::time::Instant;

use rand::Rng;
use serde_json::Value;
use wsbench_proto::{OpCode, write_frame};

use super::conn::ClientConn;
use super::flow_state::{FlowState, Wait};
use crate::config::{FlowOp, FlowPiece, FlowProgram};
use crate::metrics::{Metrics, record_us};

/// Longest reply a flow reassembles; a longer one counts unmatched and is dropped.
const MAX_REPLY: usize = 1 << 20;
/// Instructions one connection runs before yielding to the others (a `repeat` with nothing
/// that waits would otherwise spin forever).
const MAX_OPS_PER_TURN: usize = 4096;

/// Connections' deadlines: when, slab key, and the connection's start (its identity).
#[derive(Debug, Default)]
pub struct Timers {
    heap: BinaryHeap<Reverse<(Instant, usize, Instant)>>,
}

impl Timers {
    pub fn next(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse((at, _, _))| *at)
    }

    /// A deadline passed by `now` (key, start); the caller checks the connection.
    pub fn pop_due(&mut self, now: Instant) -> Option<(usize, Instant)> {
        let &Reverse((at, key, started)) = self.heap.peek()?;
        (at <= now).then(|| {
            self.heap.pop();
            (key, started)
        })
    }
}

/// What an interpreter step may touch besides the connection.
pub struct Context<'a> {
    pub program: &'a FlowProgram,
    pub metrics: &'a mut Metrics,
    pub timers: &'a mut Timers,
    /// Whether the run still sends (false once it is over).
    pub sending: bool,
    /// Whether latencies recorded now fall inside the measured window.
    pub measured: bool,
    /// The second of the run it is now (for the timeline).
    pub second: u64,
    /// Matched steps inside the measured window: the run's exchanges, as round trips are
    /// an echo run's.
    pub matched: &'a mut u64,
}

impl Context<'_> {
    /// Runs `conn`'s program from where it is until it waits.
    pub fn advance(&mut self, conn: &mut ClientConn, now: Instant) {
        let flow = conn.flow.get_or_insert_with(Box::default);
        self.expire(flow, now);
        for _ in 0..MAX_OPS_PER_TURN {
            if flow.wait != Wait::Nothing {
                return;
            }
            if !self.sending {
                flow.wait = Wait::Done;
                return;
            }
            let Some(op) = self.program.ops.get(flow.pc) else {
                flow.wait = Wait::Done;
                return;
            };
            match op {
                FlowOp::Send { name, template, track } => {
                    let text = render(template, conn.index, flow.seq, now);
                    flow.seq += 1;
                    let before = conn.output.len();
                    write_frame(&mut conn.output, true, OpCode::Text, Some(rand::random()), text.as_bytes());
                    self.metrics.counters.bytes_sent += (conn.output.len() - before) as u64;
                    self.metrics.counters.messages_sent += 1;
                    self.metrics.counters.payload_bytes_sent += text.len() as u64;
                    if let Some(field) = track {
                        match serde_json::from_str::<Value>(&text).ok().and_then(|v| v.get(field).cloned()) {
                            Some(value) => flow.outstanding.push((name.clone(), value, now)),
                            // The template did not make JSON with that field: nothing can match.
                            None => {
                                *self.metrics.counters.flow_unmatched.entry(name.clone()).or_default() += 1
                            }
                        }
                    }
                }
                FlowOp::ExpectReply { send, timeout } => {
                    if flow.outstanding.iter().any(|(name, _, _)| name == send) {
                        flow.wait = Wait::Reply(flow.pc, now + *timeout);
                    }
                }
                FlowOp::ExpectRegex { timeout, .. } => flow.wait = Wait::Regex(flow.pc, now, now + *timeout),
                FlowOp::Sleep(pause) => flow.wait = Wait::Sleep(now + *pause),
                FlowOp::Repeat { times, .. } => flow.loops.push((flow.pc, *times)),
                FlowOp::RepeatEnd { start } => {
                    let again = match flow.loops.last_mut() {
                        Some((_, Some(left))) => {
                            *left -= 1;
                            *left > 0
                        }
                        Some((_, None)) => true,
                        None => false,
                    };
                    if again {
                        flow.pc = *start;
                    } else {
                        flow.loops.pop();
                    }
                }
            }
            flow.pc += 1;
            if let Wait::Reply(_, at) | Wait::Regex(_, _, at) | Wait::Sleep(at) = flow.wait {
                self.timers.heap.push(Reverse((at, conn.slot, conn.started)));
            }
        }
        // Yield: come back at once, after the other connections had their turn.
        flow.wait = Wait::Sleep(now);
        self.timers.heap.push(Reverse((now, conn.slot, conn.started)));
    }

    /// Ends a wait whose deadline has passed: a sleep is over; an expectation is late.
    fn expire(&mut self, flow: &mut FlowState, now: Instant) {
        match flow.wait {
            Wait::Sleep(until) if until <= now => flow.wait = Wait::Nothing,
            Wait::Reply(pc, until) if until <= now => {
                let FlowOp::ExpectReply { send, .. } = &self.program.ops[pc] else { return };
                let late: Vec<(String, Value)> = flow
                    .outstanding
                    .extract_if(.., |(name, _, _)| name == send)
                    .map(|(name, value, _)| (name, value))
                    .collect();
                *self.metrics.counters.flow_late.entry(send.clone()).or_default() += late.len() as u64;
                flow.expired.extend(late);
                flow.wait = Wait::Nothing;
            }
            Wait::Regex(pc, _, until) if until <= now => {
                if let FlowOp::ExpectRegex { name, .. } = &self.program.ops[pc] {
                    *self.metrics.counters.flow_late.entry(name.clone()).or_default() += 1;
                }
                flow.wait = Wait::Nothing;
            }
            _ => {}
        }
    }

    /// A piece of a message from the server; a whole one is matched and the flow goes on.
    pub fn on_data(&mut self, conn: &mut ClientConn, first: bool, last: bool, payload: &[u8], now: Instant) {
        let Some(flow) = conn.flow.as_mut() else { return };
        if first {
            flow.message.clear();
        }
        if flow.message.len() + payload.len() > MAX_REPLY {
            flow.message = Vec::new();
            let step = self.step_name(flow);
            *self.metrics.counters.flow_unmatched.entry(step).or_default() += 1;
            return;
        }
        flow.message.extend_from_slice(payload);
        if !last {
            return;
        }
        let message = std::mem::take(&mut flow.message);
        self.metrics.counters.messages_received += 1;
        self.on_message(flow, &message, now);
        if let Some(flow) = conn.flow.as_mut() {
            flow.message = message;
        }
        self.advance(conn, now);
    }

    fn on_message(&mut self, flow: &mut FlowState, message: &[u8], now: Instant) {
        if !self.sending && matches!(flow.wait, Wait::Done | Wait::Nothing) {
            // The run is over: what still arrives answers nothing the flow waits for.
            return;
        }
        let text = String::from_utf8_lossy(message);
        if let Wait::Regex(pc, since, _) = flow.wait
            && let FlowOp::ExpectRegex { name, regex, .. } = &self.program.ops[pc]
            && regex.is_match(&text)
        {
            self.record(name, now.duration_since(since).as_micros() as u64);
            flow.wait = Wait::Nothing;
            return;
        }
        let reply: Option<Value> = serde_json::from_str(&text).ok();
        let program = self.program;
        // Whether the reply repeats the value a send named `name` put in its tracked field.
        let answers = |name: &str, value: &Value| {
            tracked_field(program, name)
                .is_some_and(|field| reply.as_ref().and_then(|r| r.get(field)) == Some(value))
        };
        let found = flow.outstanding.iter().position(|(name, value, _)| answers(name, value));
        if let Some(index) = found {
            let (name, _, sent) = flow.outstanding.remove(index);
            self.record(&name, now.duration_since(sent).as_micros() as u64);
            if let Wait::Reply(pc, _) = flow.wait
                && let FlowOp::ExpectReply { send, .. } = &self.program.ops[pc]
                && !flow.outstanding.iter().any(|(name, _, _)| name == send)
            {
                flow.wait = Wait::Nothing;
            }
            return;
        }
        let late = flow.expired.iter().position(|(name, value)| answers(name, value));
        match late {
            Some(index) => {
                flow.expired.swap_remove(index);
            }
            None => {
                let step = self.step_name(flow);
                *self.metrics.counters.flow_unmatched.entry(step).or_default() += 1;
            }
        }
    }

    /// Wakes `conn` at a deadline: a sleep ends or an expectation times out, and it goes on.
    pub fn wake(&mut self, conn: &mut ClientConn, now: Instant) {
        if conn.flow.is_some() {
            self.advance(conn, now);
        }
    }

    /// A matched step: in its own histogram, and as one of the run's exchanges (the
    /// headline rate, the latency over all steps, the timeline).
    fn record(&mut self, step: &str, micros: u64) {
        let interval = self.metrics.interval(self.second);
        interval.echoes += 1;
        record_us(&mut interval.latency, micros);
        if self.measured {
            record_us(self.metrics.flow_step(step), micros);
            record_us(&mut self.metrics.latency, micros);
            *self.matched += 1;
        }
    }

    /// The name of the step the connection is at (for replies that match nothing).
    fn step_name(&self, flow: &FlowState) -> String {
        let at = match flow.wait {
            Wait::Reply(pc, _) | Wait::Regex(pc, _, _) => pc,
            _ => flow.pc.saturating_sub(1),
        };
        match self.program.ops.get(at) {
            Some(FlowOp::Send { name, .. } | FlowOp::ExpectRegex { name, .. }) => name.clone(),
            Some(FlowOp::ExpectReply { send, .. }) => send.clone(),
            _ => "flow".to_owned(),
        }
    }
}

/// The JSON field the send named `name` is matched on.
fn tracked_field<'p>(program: &'p FlowProgram, name: &str) -> Option<&'p str> {
    program.ops.iter().find_map(|op| match op {
        FlowOp::Send { name: send, track: Some(field), .. } if send == name => Some(field.as_str()),
        _ => None,
    })
}

/// A send template filled in for connection `conn`, message `seq`.
fn render(template: &[FlowPiece], conn: u64, seq: u64, now: Instant) -> String {
    let mut text = String::new();
    for piece in template {
        let _ = match piece {
            FlowPiece::Text(literal) => write!(text, "{literal}"),
            FlowPiece::Conn => write!(text, "{conn}"),
            FlowPiece::Seq => write!(text, "{seq}"),
            FlowPiece::NowUs => write!(text, "{}", unix_micros(now)),
            FlowPiece::RandU32 => write!(text, "{}", rand::rng().random::<u32>()),
        };
    }
    text
}

/// µs since the Unix epoch at `now`.
fn unix_micros(now: Instant) -> u128 {
    let ago = Instant::now().saturating_duration_since(now);
    let wall = std::time::SystemTime::now().checked_sub(ago).unwrap_or(std::time::SystemTime::now());
    wall.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_micros())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_fill_in_connection_and_sequence() {
        let template = [
            FlowPiece::Text("{\"id\":".into()),
            FlowPiece::Seq,
            FlowPiece::Text(",\"c\":".into()),
            FlowPiece::Conn,
            FlowPiece::Text("}".into()),
        ];
        assert_eq!(render(&template, 7, 3, Instant::now()), "{\"id\":3,\"c\":7}");
        let random = render(&[FlowPiece::RandU32], 0, 0, Instant::now());
        assert!(random.parse::<u32>().is_ok(), "{random}");
    }
}
