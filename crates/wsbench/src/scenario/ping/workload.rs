//! ping's work on a worker's connections: each sends WebSocket pings (RFC 6455 §5.5.2) on
//! the open-loop schedule, the payload carrying its sequence number, and matches every pong
//! to its ping by that number; the latency counts from the ping's due time. RFC 6455 lets a
//! server answer only the most recent of several pings it has not answered yet: the pings
//! a later pong passes over are counted as superseded, not as errors.

use std::any::Any;
use std::collections::{BTreeMap, VecDeque};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use wsbench_proto::OpCode;

use crate::engine::conn::ClientConn;
use crate::engine::workload::{Assembly, Cx, Message, Workload};
use crate::metrics::{Section, SectionHistograms};

/// The sequence number leads the payload, big-endian.
const SEQ_BYTES: usize = 8;

/// One connection's pings in flight: sequence number, when due, when sent.
#[derive(Debug, Default)]
struct PingConn {
    next_seq: u64,
    in_flight: VecDeque<(u64, Instant, Instant)>,
}

#[derive(Debug)]
pub struct PingWorkload {
    /// Every ping's payload: the sequence number, then padding to `--payload-bytes`.
    payload: Vec<u8>,
    conns: Vec<Option<PingConn>>,
    outstanding: u64,
    section: PingSection,
}

impl PingWorkload {
    pub fn new(payload_bytes: usize) -> PingWorkload {
        PingWorkload {
            payload: vec![b'p'; payload_bytes.max(SEQ_BYTES)],
            conns: Vec::new(),
            outstanding: 0,
            section: PingSection::default(),
        }
    }
}

impl Workload for PingWorkload {
    fn assembly(&self) -> Assembly {
        Assembly::Whole { max: 0 }
    }

    fn on_open(&mut self, _cx: &mut Cx<'_>, conn: &mut ClientConn, _now: Instant) {
        if self.conns.len() <= conn.slot {
            self.conns.resize_with(conn.slot + 1, || None);
        }
        self.conns[conn.slot] = Some(PingConn::default());
    }

    fn start(&mut self, cx: &mut Cx<'_>, conn: &mut ClientConn, now: Instant) {
        cx.pacer.start_sends(conn.slot, conn.index, conn.started, now);
    }

    /// A ping due at `due`: its sequence number in its payload.
    fn on_due(&mut self, cx: &mut Cx<'_>, conn: &mut ClientConn, due: Instant, now: Instant) {
        let Some(state) = self.conns.get_mut(conn.slot).and_then(Option::as_mut) else { return };
        self.payload[..SEQ_BYTES].copy_from_slice(&state.next_seq.to_be_bytes());
        let before = conn.output.len();
        conn.write_control(OpCode::Ping, &self.payload);
        state.in_flight.push_back((state.next_seq, due, now));
        state.next_seq += 1;
        self.outstanding += 1;
        conn.counts_as_sent(1, conn.output.len() - before, self.payload.len());
        cx.rec.send_lag(due, now);
        self.section.pings += 1;
    }

    /// Data messages are no answer to a ping.
    fn on_message(&mut self, _cx: &mut Cx<'_>, _conn: &mut ClientConn, message: Message<'_>, _now: Instant) {
        if !matches!(message, Message::Piece { last: false, .. }) {
            self.section.unexpected += 1;
        }
    }

    /// A pong: its ping's round trip, from when the ping was due.
    fn on_pong(&mut self, cx: &mut Cx<'_>, conn: &mut ClientConn, payload: &[u8], now: Instant) {
        let Some(state) = self.conns.get_mut(conn.slot).and_then(Option::as_mut) else { return };
        let seq = payload.get(..SEQ_BYTES).and_then(|bytes| bytes.try_into().ok()).map(u64::from_be_bytes);
        let Some(seq) = seq.filter(|seq| state.in_flight.iter().any(|(s, ..)| s == seq)) else {
            self.section.unexpected += 1;
            return;
        };
        while state.in_flight.front().is_some_and(|(earlier, ..)| *earlier < seq) {
            state.in_flight.pop_front();
            self.outstanding -= 1;
            self.section.superseded += 1;
        }
        let Some((_, due, sent)) = state.in_flight.pop_front() else { return };
        self.outstanding -= 1;
        let latency = now.duration_since(due).as_micros() as u64;
        let uncorrected = now.duration_since(sent).as_micros() as u64;
        let counted = cx.rec.counted_at(now);
        cx.rec.exchange(now, latency, Some(uncorrected), counted);
        self.section.pongs += 1;
    }

    fn unanswered(&mut self, conn: &ClientConn) -> u64 {
        let Some(state) = self.conns.get_mut(conn.slot).and_then(Option::as_mut) else { return 0 };
        let count = state.in_flight.len() as u64;
        state.in_flight.clear();
        self.outstanding -= count;
        self.section.unanswered += count;
        count
    }

    fn on_drop(&mut self, conn: &ClientConn) {
        if let Some(state) = self.conns.get_mut(conn.slot).and_then(Option::take) {
            self.outstanding -= state.in_flight.len() as u64;
            self.section.unanswered += state.in_flight.len() as u64;
        }
    }

    #[inline]
    fn awaiting(&self, _now: Instant) -> bool {
        self.outstanding > 0
    }

    fn busy(&self, _now: Instant) -> bool {
        self.outstanding > 0
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

/// ping's own counts: pings sent, pongs matched, pings that got no
/// pong (unanswered when their connection ended or the run did), pings a later pong passed
/// over (superseded, as RFC 6455 allows), and pongs or messages that answered nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PingSection {
    pub pings: u64,
    pub pongs: u64,
    pub unanswered: u64,
    pub superseded: u64,
    pub unexpected: u64,
}

impl PingSection {
    /// Read back from a result file's `counters` (`ping`).
    pub fn read(counters: &BTreeMap<String, Value>) -> PingSection {
        counters.get("ping").and_then(|value| serde_json::from_value(value.clone()).ok()).unwrap_or_default()
    }
}

impl Section for PingSection {
    fn merge(&mut self, other: &dyn Section) {
        let Some(other) = other.as_any().downcast_ref::<PingSection>() else { return };
        self.pings += other.pings;
        self.pongs += other.pongs;
        self.unanswered += other.unanswered;
        self.superseded += other.superseded;
        self.unexpected += other.unexpected;
    }

    /// Its own error: a pong that answers no ping. A ping left unanswered is the engine's to
    /// name, once, by what ended it: the connection's close or reset, or the drain at the
    /// end running out (`unanswered_at_end`); `unanswered` stays a figure of its own.
    fn errors(&self, errors: &mut BTreeMap<String, u64>) {
        if self.unexpected > 0 {
            *errors.entry("ping_unexpected".to_owned()).or_default() += self.unexpected;
        }
    }

    fn counters(&self) -> BTreeMap<String, Value> {
        BTreeMap::from([("ping".to_owned(), serde_json::to_value(self).unwrap_or_default())])
    }

    fn histograms(&self) -> Vec<(&'static str, SectionHistograms<'_>)> {
        Vec::new()
    }

    fn boxed(&self) -> Box<dyn Section> {
        Box::new(self.clone())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
