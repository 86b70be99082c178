//! A flow's work on a worker's connections: each runs the compiled [`FlowProgram`] — sends
//! templated text messages, waits for replies matched by a JSON field (so replies may come
//! in any order; one, a count, or until a pattern) or by a regex, sleeps, repeats blocks —
//! and records the latency of each named step. A reply that fails its checks is counted
//! wrong, one the message protocol calls an error (a JSON-RPC `error`, a GraphQL `error`)
//! answers its send without being a success; replies that match nothing are counted by the
//! step the connection was at, with the first one's opening kept to show; expectations that
//! time out are counted late by step (a flow's own reply deadline: `--reply-timeout` is the
//! echo loop's), and those still awaited when their connection or the run ends are
//! unanswered. A connection waiting on a deadline is woken by the engine's timers.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use wsbench_proto::OpCode;

use super::capture::{self, Capture, Failure};
use super::program::{FlowProgram, Op as FlowOp, Piece as FlowPiece, Replies, Vars, render_with};
use super::section::FlowSection;
use super::state::{FlowState, Outstanding, Wait};
use crate::engine::conn::ClientConn;
use crate::engine::recorder::Counted;
use crate::engine::workload::{Assembly, Cx, Message, Workload};
use crate::metrics::{Section, record_us};
use crate::protocol::Incoming;

/// Longest reply a flow reassembles; a longer one counts unmatched and is dropped.
const MAX_REPLY: usize = 1 << 20;
/// The opening of an unmatched message kept to show (characters).
const SAMPLE_CHARS: usize = 200;
/// Instructions one connection runs before yielding to the others (a `repeat` with nothing
/// that waits would otherwise spin forever).
const MAX_OPS_PER_TURN: usize = 4096;
/// Bytes a connection may have queued and not yet written before its next send waits for
/// the socket: a `repeat` of sends that nothing waits for goes at the speed the server
/// reads, and the client's memory does not grow with it (the kernel's socket buffer keeps
/// the connection busy meanwhile; a larger message still goes out whole).
pub const MAX_QUEUED_SEND_BYTES: usize = 64 << 10;
/// How often a send waiting for the socket looks again.
const SOCKET_RECHECK: Duration = Duration::from_millis(1);

#[derive(Debug)]
pub struct FlowWorkload {
    program: Arc<FlowProgram>,
    /// `--data`: each connection's row, for `{data.COLUMN}` in sends.
    data: Option<Arc<crate::config::DataTable>>,
    /// By slot: each connection's place in the program.
    states: Vec<Option<FlowState>>,
    section: FlowSection,
    /// Sends awaiting their replies over every connection (each connection's
    /// `outstanding`, summed): what the end of the run drains and a stall is judged by.
    awaited: u64,
}

impl FlowWorkload {
    pub fn new(program: Arc<FlowProgram>, data: Option<Arc<crate::config::DataTable>>) -> FlowWorkload {
        FlowWorkload { program, data, states: Vec::new(), section: FlowSection::default(), awaited: 0 }
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
                FlowOp::Send { .. } if conn.output.len() - conn.output_sent > MAX_QUEUED_SEND_BYTES => {
                    // The socket has not taken what is queued: the send waits for it.
                    flow.wait = Wait::Sleep(now + SOCKET_RECHECK);
                    cx.wake(conn, now + SOCKET_RECHECK);
                    return;
                }
                FlowOp::Send { name, template, track, .. } => {
                    self.send(conn, flow, (name, template, track), now)
                }
                FlowOp::ExpectReply { send, timeout } => {
                    if flow.outstanding.iter().any(|o| o.name == *send) {
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
        conn: &mut ClientConn,
        flow: &mut FlowState,
        (name, template, track): (&String, &[FlowPiece], &Option<String>),
        now: Instant,
    ) {
        if flow.captured.missing(template).is_some() {
            // A variable an earlier reply should have given is not there: nothing is sent.
            *self.section.capture_missing.entry(name.clone()).or_default() += 1;
            return;
        }
        let vars = Vars::new(conn.index, flow.seq, now);
        let text = render_with(template, &vars, self.data.as_deref(), &flow.captured, false);
        flow.seq += 1;
        flow.last_vars = vars;
        flow.sent(name, now);
        conn.write_message(OpCode::Text, rand::random(), text.as_bytes());
        if let Some(field) = track {
            match serde_json::from_str::<Value>(&text).ok().and_then(|v| v.get(field).cloned()) {
                Some(value) => {
                    let left = match self.program.send(name).map(|(_, replies, _)| replies) {
                        Some(Replies::Until(_)) => None,
                        Some(Replies::Count(count) | Replies::UpTo(count, _)) => Some(*count),
                        None => Some(1),
                    };
                    flow.outstanding.push(Outstanding { name: name.clone(), value, sent: now, vars, left });
                    self.awaited += 1;
                }
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
                let late: Vec<Outstanding> = flow.outstanding.extract_if(.., |o| o.name == *send).collect();
                *self.section.late.entry(send.clone()).or_default() += late.len() as u64;
                self.awaited -= late.len() as u64;
                for outstanding in late {
                    flow.expire(outstanding.name, outstanding.value);
                }
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
    /// `error`: the message protocol read it as an error reply (already counted by cause).
    fn on_reply(&mut self, cx: &mut Cx<'_>, flow: &mut FlowState, message: &[u8], error: bool, now: Instant) {
        // Once the run is over and the flow waits for nothing, a reply may still answer a
        // send in flight (the drain waits for those); anything else is no longer unmatched.
        let over = !cx.rec.sending_allowed(now) && matches!(flow.wait, Wait::Done | Wait::Nothing);
        let text = String::from_utf8_lossy(message);
        let program = self.program.clone();
        if let Wait::Regex(pc, waited_since, _) = flow.wait
            && let FlowOp::ExpectRegex { name, pattern, since, checks, .. } = &program.ops[pc]
            && pattern.regex(&flow.last_vars, self.data.as_deref(), &flow.captured).is_match(&text)
        {
            let from = since
                .as_ref()
                .and_then(|send| flow.sent_at.iter().find(|(known, _)| known == send))
                .map_or(waited_since, |&(_, at)| at);
            match (error, checks.pass(&text, &flow.last_vars, self.data.as_deref(), &flow.captured)) {
                (true, _) => *self.section.refused.entry(name.clone()).or_default() += 1,
                (false, true) => {
                    let vars = flow.last_vars;
                    if self.capture(flow, &checks.captures, &text, &vars, name) {
                        self.record(cx, name, now.duration_since(from).as_micros() as u64, now);
                    }
                }
                (false, false) => *self.section.mismatched.entry(name.clone()).or_default() += 1,
            }
            flow.wait = Wait::Nothing;
            return;
        }
        let reply: Option<Value> = serde_json::from_str(&text).ok();
        // Whether the reply repeats the value a send named `name` put in its tracked field.
        let answers = |name: &str, value: &Value| {
            program
                .send(name)
                .is_some_and(|(field, _, _)| reply.as_ref().and_then(|r| r.get(field)) == Some(value))
        };
        if let Some(index) = flow.outstanding.iter().position(|o| answers(&o.name, &o.value)) {
            self.answer(cx, flow, index, &text, error, now);
            return;
        }
        if flow.expired.iter().any(|(name, value)| answers(name, value)) {
            return;
        }
        if !error && !over {
            self.unmatched(flow, &text);
        }
    }

    /// Outstanding send `index` got a reply: an error ends it; its `until` pattern ends it;
    /// else the reply is checked, recorded (or counted wrong) and one fewer is awaited (with
    /// `until` too, the count reached ends it first).
    fn answer(
        &mut self,
        cx: &mut Cx<'_>,
        flow: &mut FlowState,
        index: usize,
        text: &str,
        error: bool,
        now: Instant,
    ) {
        let program = self.program.clone();
        let data = self.data.clone();
        let data = data.as_deref();
        let outstanding = &mut flow.outstanding[index];
        let Some((_, replies, checks)) = program.send(&outstanding.name) else { return };
        let ends = match (error, replies) {
            (true, _) => {
                *self.section.refused.entry(outstanding.name.clone()).or_default() += 1;
                true
            }
            (false, Replies::Until(pattern) | Replies::UpTo(_, pattern))
                if pattern.regex(&outstanding.vars, data, &flow.captured).is_match(text) =>
            {
                true
            }
            (false, _) => {
                match checks.pass(text, &outstanding.vars, data, &flow.captured) {
                    true => {
                        let micros = now.duration_since(outstanding.sent).as_micros() as u64;
                        let (name, vars) = (outstanding.name.clone(), outstanding.vars);
                        if self.capture(flow, &checks.captures, text, &vars, &name) {
                            self.record(cx, &name, micros, now);
                        }
                    }
                    false => *self.section.mismatched.entry(outstanding.name.clone()).or_default() += 1,
                }
                let outstanding = &mut flow.outstanding[index];
                outstanding.left = outstanding.left.map(|left| left.saturating_sub(1));
                outstanding.left == Some(0)
            }
        };
        if !ends {
            return;
        }
        let done = flow.outstanding.remove(index);
        self.awaited -= 1;
        if let (Replies::UpTo(..), Some(0)) = (replies, done.left) {
            // Its count came before its `until`: what else answers it is its own, not counted.
            flow.expire(done.name.clone(), done.value.clone());
        }
        if let Wait::Reply(pc, _) = flow.wait
            && let FlowOp::ExpectReply { send, .. } = &program.ops[pc]
            && *send == done.name
            && !flow.outstanding.iter().any(|o| o.name == *send)
        {
            flow.wait = Wait::Nothing;
        }
    }

    /// Keeps what `captures` find in the matched `text` as the connection's variables;
    /// whether they all found their value (else the step `name` counts the failure, and the
    /// message is no success).
    fn capture(
        &mut self,
        flow: &mut FlowState,
        captures: &[Capture],
        text: &str,
        vars: &Vars,
        name: &str,
    ) -> bool {
        let counts = match capture::apply(captures, text, vars, self.data.as_deref(), &mut flow.captured) {
            Ok(()) => return true,
            Err(Failure::Missing) => &mut self.section.capture_missing,
            Err(Failure::TooLong) => &mut self.section.capture_too_long,
        };
        *counts.entry(name.to_owned()).or_default() += 1;
        false
    }

    /// A reply that matched nothing, counted by the step the connection is at (the first
    /// one's opening kept to show).
    fn unmatched(&mut self, flow: &FlowState, text: &str) {
        let step = step_name(&self.program, flow);
        if !self.section.unmatched_samples.contains_key(&step) {
            let opening: String =
                text.lines().next().unwrap_or_default().chars().take(SAMPLE_CHARS).collect();
            self.section.unmatched_samples.insert(step.clone(), opening);
        }
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
            Message::Whole(data) => self.on_reply(cx, &mut flow, data, false, now),
            Message::TooLong => self.unmatched(&flow, "(a message longer than 1 MiB)"),
            Message::Piece { .. } => {}
        }
        self.states[conn.slot] = Some(flow);
        self.advance(cx, conn, now);
    }
    /// A message the connection's protocol read (its error replies marked).
    fn on_incoming(&mut self, cx: &mut Cx<'_>, conn: &mut ClientConn, incoming: Incoming<'_>, now: Instant) {
        let Incoming::Message { payload, error } = incoming else { return };
        let Some(mut flow) = self.states.get_mut(conn.slot).and_then(Option::take) else { return };
        self.on_reply(cx, &mut flow, payload, error.is_some(), now);
        self.states[conn.slot] = Some(flow);
        self.advance(cx, conn, now);
    }
    fn on_timer(&mut self, cx: &mut Cx<'_>, conn: &mut ClientConn, now: Instant) {
        self.advance(cx, conn, now);
    }
    /// Sends whose replies an `expect` awaits and that were neither answered nor late when
    /// the connection ended (or the run did): unanswered.
    fn unanswered(&mut self, conn: &ClientConn) -> u64 {
        let Some(flow) = self.states.get_mut(conn.slot).and_then(Option::as_mut) else { return 0 };
        let count = flow.outstanding.len() as u64;
        flow.outstanding.clear();
        self.awaited -= count;
        count
    }
    fn on_drop(&mut self, conn: &ClientConn) {
        if let Some(state) = self.states.get_mut(conn.slot).and_then(Option::take) {
            self.awaited -= state.outstanding.len() as u64;
        }
    }
    #[inline]
    fn awaiting(&self, _now: Instant) -> bool {
        self.awaited > 0
    }
    /// Replies still awaited: the end of the run waits for them (up to its drain).
    fn busy(&self, _now: Instant) -> bool {
        self.awaited > 0
    }
    fn errors(&self) -> BTreeMap<String, u64> {
        let mut errors = BTreeMap::new();
        self.section.errors(&mut errors);
        errors
    }
    fn finish(self: Box<Self>, _cut_off: Option<Instant>) -> Option<Box<dyn Section>> {
        Some(Box::new(self.section))
    }
}

/// The name of the step the connection is at (for replies that match nothing).
/// (Between expectations — sleeping, say — that is the latest send.)
fn step_name(program: &FlowProgram, flow: &FlowState) -> String {
    let at = match flow.wait {
        Wait::Reply(pc, _) | Wait::Regex(pc, _, _) => pc,
        _ => flow.pc.saturating_sub(1),
    };
    match program.ops.get(at) {
        Some(FlowOp::Send { name, .. } | FlowOp::ExpectRegex { name, .. }) => name.clone(),
        Some(FlowOp::ExpectReply { send, .. }) => send.clone(),
        _ => match flow.sent_at.iter().max_by_key(|(_, at)| *at) {
            Some((name, _)) => name.clone(),
            None => "flow".to_owned(),
        },
    }
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
        let vars = Vars::new(7, 3, Instant::now());
        let none = Default::default();
        assert_eq!(render_with(&template, &vars, None, &none, false), "{\"id\":3,\"c\":7}");
        assert_eq!(render_with(&[FlowPiece::RandU32], &vars, None, &none, false), vars.rand_u32.to_string());
    }
}
