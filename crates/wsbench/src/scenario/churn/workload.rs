//! churn's work on a worker's connections: the echo loop, limited to
//! `--messages-per-connection` echoes per connection, after which the connection starts the
//! close handshake itself (the engine watches it until the server answers or the close
//! timeout passes); each close the server answers is one completed cycle, kept in churn's
//! own section.

use std::any::Any;
use std::collections::BTreeMap;
use std::time::Instant;

use serde_json::Value;

use super::figures::CYCLES_KEY;
use crate::config::LoadSpec;
use crate::engine::conn::{ClientConn, State};
use crate::engine::workload::{Assembly, Cx, Message, Workload};
use crate::metrics::{Section, SectionHistograms};
use crate::protocol::Incoming;
use crate::scenario::echo::workload::EchoWorkload;

#[derive(Debug)]
pub struct ChurnWorkload {
    echo: EchoWorkload,
    /// Echoes per connection before it closes.
    per_connection: u64,
    section: ChurnSection,
}

impl ChurnWorkload {
    pub fn new(load: &LoadSpec, per_connection: u64) -> ChurnWorkload {
        ChurnWorkload {
            echo: EchoWorkload::new(load, Some(per_connection)),
            per_connection,
            section: ChurnSection::default(),
        }
    }

    /// Once the connection has had its messages answered (or given up at the reply
    /// deadline) and nothing is outstanding, it closes.
    fn close_when_done(&mut self, cx: &mut Cx<'_>, conn: &mut ClientConn, now: Instant) {
        let done = self.echo.conn(conn.slot).is_some_and(|state| {
            state.answered() + state.given_up >= self.per_connection && state.outstanding() == 0
        });
        if done && conn.state == State::Open {
            cx.close(conn, now);
        }
    }
}

impl Workload for ChurnWorkload {
    fn assembly(&self) -> Assembly {
        self.echo.assembly()
    }
    fn batch(&self) -> Option<&crate::engine::batch::Batch> {
        self.echo.batch()
    }
    fn on_open(&mut self, cx: &mut Cx<'_>, conn: &mut ClientConn, now: Instant) {
        self.echo.on_open(cx, conn, now);
    }
    fn start(&mut self, cx: &mut Cx<'_>, conn: &mut ClientConn, now: Instant) {
        self.echo.start(cx, conn, now);
        self.close_when_done(cx, conn, now);
    }
    fn on_message(&mut self, cx: &mut Cx<'_>, conn: &mut ClientConn, message: Message<'_>, now: Instant) {
        self.echo.on_message(cx, conn, message, now);
        self.close_when_done(cx, conn, now);
    }
    fn on_incoming(&mut self, cx: &mut Cx<'_>, conn: &mut ClientConn, incoming: Incoming<'_>, now: Instant) {
        self.echo.on_incoming(cx, conn, incoming, now);
        self.close_when_done(cx, conn, now);
    }
    fn expire_requests(&mut self, cx: &mut Cx<'_>, conn: &mut ClientConn, now: Instant) {
        self.echo.expire_requests(cx, conn, now);
        self.close_when_done(cx, conn, now);
    }
    fn on_closed(&mut self, _conn: &ClientConn, answered: bool) {
        self.section.cycles += u64::from(answered);
    }
    fn unanswered(&mut self, conn: &ClientConn) -> u64 {
        self.echo.unanswered(conn)
    }
    fn on_drop(&mut self, conn: &ClientConn) {
        self.echo.on_drop(conn);
    }
    fn awaiting(&self, now: Instant) -> bool {
        self.echo.awaiting(now)
    }
    fn busy(&self, now: Instant) -> bool {
        self.echo.busy(now)
    }
    fn finish(self: Box<Self>, _cut_off: Option<Instant>) -> Option<Box<dyn Section>> {
        Some(Box::new(self.section))
    }
}

/// churn's own measurement: the cycles completed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChurnSection {
    /// Connections that went through handshake, their K echoes and a close the server
    /// answered.
    pub cycles: u64,
}

impl ChurnSection {
    /// Read back from a result file's counters (0 when absent).
    pub fn read(counters: &BTreeMap<String, Value>) -> ChurnSection {
        ChurnSection { cycles: counters.get(CYCLES_KEY).and_then(Value::as_u64).unwrap_or(0) }
    }
}

impl Section for ChurnSection {
    fn merge(&mut self, other: &dyn Section) {
        if let Some(other) = other.as_any().downcast_ref::<ChurnSection>() {
            self.cycles += other.cycles;
        }
    }
    fn errors(&self, _errors: &mut BTreeMap<String, u64>) {}
    fn counters(&self) -> BTreeMap<String, Value> {
        BTreeMap::from([(CYCLES_KEY.to_owned(), Value::from(self.cycles))])
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
