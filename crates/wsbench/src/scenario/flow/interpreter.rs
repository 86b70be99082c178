//! A flow's work on a worker's connections: each runs the compiled [`FlowProgram`] — sends
//! templated text messages, waits for replies matched by a JSON field (so replies may come
//! in any order) or by a regex, sleeps, repeats blocks — and records the latency of each
//! named step. Replies that match nothing are counted by the step the connection was at;
//! expectations that time out are counted late by step. A connection waiting on a deadline
//! is woken by the engine's timers.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Instant;

use rand::Rng;
use serde_json::Value;
use wsbench_proto::OpCode;

use super::program::{FlowProgram, Op as FlowOp, Piece as FlowPiece};
use super::section::FlowSection;
use super::state::{FlowState, Wait};
use crate::engine::conn::ClientConn;
use crate::engine::recorder::Counted;
use crate::engine::workload::{Assembly, Cx, Message, Workload};
use crate::metrics::{Section, record_us};

/// Longest reply a flow reassembles; a longer one counts unmatched and is dropped.
const MAX_REPLY: usize = 1 << 20;
/// Instructions one connection runs before yielding to the others (a `repeat` with nothing
/// that waits would otherwise spin forever).
const MAX_OPS_PER_TURN: usize = 4096;

#[derive(Debug)]
pub struct FlowWorkload {
    program: Arc<FlowProgram>,
    /// By slot: each connection's place in the program.
    states: Vec<Option<FlowState>>,
    section: FlowSection,
}

impl FlowWorkload {
    pub fn new(program: Arc<FlowProgram>) -> FlowWorkload {
        FlowWorkload { program, states: Vec::new(), section: FlowSection::default() }
    }

    /// Runs `conn`'s program from where it is until it waits.
    fn advance(&mut self, cx: &mut Cx<'_>, conn: &mut ClientConn, now: Instant) {
        let Some(mut flow) = self.states.get_mut(conn.slot).and_then(Option::take) else { return };
        self.expire(&mut flow, now);
        let sending = cx.rec.sending_allowed(now);
        self.run(cx, conn, &mut flow, sending, now);
        self.states[conn.slot] = Some(flow);
    }

    fn run(
        &mut self,
        cx: &mut Cx<'_>,
        conn: &mut ClientConn,
        flow: &mut FlowState,
        sending: bool,
        now: Instant,
    ) {
        let program = self.program.clone();
        for _ in 0..MAX_OPS_PER_TURN {
            if flow.wait != Wait::Nothing {
                return;
            }
            if !sending {
                flow.wait = Wait::Done;
                return;
            }
            let Some(op) = program.ops.get(flow.pc) else {
                flow.wait = Wait::Done;
                return;
            };
            match op {
                FlowOp::Send { name, template, track } => {
                    self.send(cx, conn, flow, (name, template, track), now)
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
                cx.wake(conn, at);
            }
        }
        // Yield: come back at once, after the other connections had their turn.
        flow.wait = Wait::Sleep(now);
        cx.wake(conn, now);
    }

    /// A `send` step: the template filled in and written; its reply awaited by its field.
    fn send(
        &mut self,
        cx: &mut Cx<'_>,
        conn: &mut ClientConn,
        flow: &mut FlowState,
        (name, template, track): (&String, &[FlowPiece], &Option<String>),
        now: Instant,
    ) {
        let text = render(template, conn.index, flow.seq, now);
        flow.seq += 1;
        let bytes = conn.write_message(OpCode::Text, rand::random(), text.as_bytes());
        cx.rec.sent(1, bytes as u64, text.len() as u64);
        if let Some(field) = track {
            match serde_json::from_str::<Value>(&text).ok().and_then(|v| v.get(field).cloned()) {
                Some(value) => flow.outstanding.push((name.clone(), value, now)),
                // The template did not make JSON with that field: nothing can match.
                None => *self.section.unmatched.entry(name.clone()).or_default() += 1,
            }
        }
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
                *self.section.late.entry(send.clone()).or_default() += late.len() as u64;
                flow.expired.extend(late);
                flow.wait = Wait::Nothing;
            }
            Wait::Regex(pc, _, until) if until <= now => {
                if let FlowOp::ExpectRegex { name, .. } = &self.program.ops[pc] {
                    *self.section.late.entry(name.clone()).or_default() += 1;
                }
                flow.wait = Wait::Nothing;
            }
            _ => {}
        }
    }

    /// A whole message from the server: matched to what the connection waits for.
    fn on_reply(&mut self, cx: &mut Cx<'_>, flow: &mut FlowState, message: &[u8], now: Instant) {
        if !cx.rec.sending_allowed(now) && matches!(flow.wait, Wait::Done | Wait::Nothing) {
            // The run is over: what still arrives answers nothing the flow waits for.
            return;
        }
        let text = String::from_utf8_lossy(message);
        let program = self.program.clone();
        if let Wait::Regex(pc, since, _) = flow.wait
            && let FlowOp::ExpectRegex { name, regex, .. } = &program.ops[pc]
            && regex.is_match(&text)
        {
            self.record(cx, name, now.duration_since(since).as_micros() as u64, now);
            flow.wait = Wait::Nothing;
            return;
        }
        let reply: Option<Value> = serde_json::from_str(&text).ok();
        // Whether the reply repeats the value a send named `name` put in its tracked field.
        let answers = |name: &str, value: &Value| {
            tracked_field(&program, name)
                .is_some_and(|field| reply.as_ref().and_then(|r| r.get(field)) == Some(value))
        };
        let found = flow.outstanding.iter().position(|(name, value, _)| answers(name, value));
        if let Some(index) = found {
            let (name, _, sent) = flow.outstanding.remove(index);
            self.record(cx, &name, now.duration_since(sent).as_micros() as u64, now);
            if let Wait::Reply(pc, _) = flow.wait
                && let FlowOp::ExpectReply { send, .. } = &program.ops[pc]
                && !flow.outstanding.iter().any(|(name, _, _)| name == send)
            {
                flow.wait = Wait::Nothing;
            }
            return;
        }
        match flow.expired.iter().position(|(name, value)| answers(name, value)) {
            Some(index) => {
                flow.expired.swap_remove(index);
            }
            None => self.unmatched(flow),
        }
    }

    /// A reply that matched nothing, counted by the step the connection is at.
    fn unmatched(&mut self, flow: &FlowState) {
        let step = step_name(&self.program, flow);
        *self.section.unmatched.entry(step).or_default() += 1;
    }

    /// A matched step: in its own histogram, and as one of the run's exchanges (the
    /// headline rate, the latency over all steps, the timeline).
    fn record(&mut self, cx: &mut Cx<'_>, step: &str, micros: u64, now: Instant) {
        let measured = cx.rec.in_window(now);
        cx.rec.exchange(now, micros, None, if measured { Counted::Measured } else { Counted::Neither });
        if measured {
            record_us(self.section.step(step), micros);
        }
    }
}

impl Workload for FlowWorkload {
    fn assembly(&self) -> Assembly {
        Assembly::Whole { max: MAX_REPLY }
    }
    fn on_open(&mut self, _cx: &mut Cx<'_>, conn: &mut ClientConn, _now: Instant) {
        if self.states.len() <= conn.slot {
            self.states.resize_with(conn.slot + 1, || None);
        }
        self.states[conn.slot] = Some(FlowState::default());
    }
    fn start(&mut self, cx: &mut Cx<'_>, conn: &mut ClientConn, now: Instant) {
        self.advance(cx, conn, now);
    }
    fn on_message(&mut self, cx: &mut Cx<'_>, conn: &mut ClientConn, message: Message<'_>, now: Instant) {
        let Some(mut flow) = self.states.get_mut(conn.slot).and_then(Option::take) else { return };
        match message {
            Message::Whole(data) => self.on_reply(cx, &mut flow, data, now),
            Message::TooLong => self.unmatched(&flow),
            Message::Piece { .. } => {}
        }
        self.states[conn.slot] = Some(flow);
        self.advance(cx, conn, now);
    }
    fn on_timer(&mut self, cx: &mut Cx<'_>, conn: &mut ClientConn, now: Instant) {
        self.advance(cx, conn, now);
    }
    fn on_drop(&mut self, conn: &ClientConn) {
        if let Some(state) = self.states.get_mut(conn.slot) {
            *state = None;
        }
    }
    fn errors(&self) -> BTreeMap<String, u64> {
        let mut errors = BTreeMap::new();
        self.section.errors(&mut errors);
        errors
    }
    fn finish(self: Box<Self>, _cut_off: bool) -> Option<Box<dyn Section>> {
        Some(Box::new(self.section))
    }
}

/// The name of the step the connection is at (for replies that match nothing).
fn step_name(program: &FlowProgram, flow: &FlowState) -> String {
    let at = match flow.wait {
        Wait::Reply(pc, _) | Wait::Regex(pc, _, _) => pc,
        _ => flow.pc.saturating_sub(1),
    };
    match program.ops.get(at) {
        Some(FlowOp::Send { name, .. } | FlowOp::ExpectRegex { name, .. }) => name.clone(),
        Some(FlowOp::ExpectReply { send, .. }) => send.clone(),
        _ => "flow".to_owned(),
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
