//! The stream scenario's work on a worker's connections: each subscribes once open, through
//! its protocol ([`crate::protocol::Session::subscribe_stream`]); every delivery has its id
//! (and the server's timestamp, when asked) read out and goes to the run's shared id window,
//! which says whether it was the id's first receipt, a later one (its spread from the first),
//! a duplicate or a late one. A measured delivery is the scenario's exchange: its latency is
//! the one from the server's timestamp with `--message-time`, else its spread.

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::extract::{self, Field, TimeUnit};
use super::section::{SharedWindow, StreamCounters, StreamSection};
use super::settings::StreamSpec;
use super::window::Receipt;
use crate::engine::conn::ClientConn;
use crate::engine::recorder::Counted;
use crate::engine::workload::{Cx, Workload};
use crate::metrics::Section;
use crate::protocol::Incoming;

/// A draining worker waits while measured deliveries arrived this recently.
const QUIET: Duration = Duration::from_millis(250);
/// The longest a run waits at its end for deliveries still on their way.
const DRAIN: Duration = Duration::from_secs(5);

#[derive(Debug)]
pub struct StreamWorkload {
    id: Arc<Field>,
    time: Option<(Arc<Field>, TimeUnit)>,
    window: SharedWindow,
    /// What this worker could not read.
    counters: StreamCounters,
    last_measured: Option<Instant>,
}

impl StreamWorkload {
    pub fn new(spec: &StreamSpec, window: SharedWindow) -> StreamWorkload {
        StreamWorkload {
            id: spec.id.clone(),
            time: spec.time.clone().map(|time| (time, spec.message_time_unit)),
            window,
            counters: StreamCounters::default(),
            last_measured: None,
        }
    }

    /// The latency from the server's timestamp `stamp` (in its unit) to now, by the wall
    /// clock; a stamp ahead of this machine's clock counts as 0.
    fn source_latency(&mut self, stamp: f64, unit: TimeUnit) -> u64 {
        let now_us =
            SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |since| since.as_micros() as f64);
        let latency = now_us - unit.micros(stamp);
        if latency < 0.0 {
            self.counters.time_ahead += 1;
        }
        latency.max(0.0) as u64
    }
}

impl Workload for StreamWorkload {
    fn on_open(&mut self, _cx: &mut Cx<'_>, conn: &mut ClientConn, _now: Instant) {
        conn.through_session(|session, out| session.subscribe_stream(out));
    }

    /// A delivery: its id read, matched in the run's window, and counted as the exchange
    /// it is when its id is measured.
    fn on_incoming(&mut self, cx: &mut Cx<'_>, conn: &mut ClientConn, incoming: Incoming<'_>, now: Instant) {
        let Incoming::Delivery { payload, .. } = incoming else { return };
        let read = extract::read(payload, &self.id, self.time.as_ref().map(|(field, _)| &**field));
        let Some(id) = read.id else {
            self.counters.unreadable += 1;
            return;
        };
        let source_us = match (&self.time, read.time) {
            (Some((_, unit)), Some(stamp)) => Some(self.source_latency(stamp, *unit)),
            (Some(_), None) => {
                self.counters.time_unreadable += 1;
                None
            }
            (None, _) => None,
        };
        let in_window = cx.rec.in_window(now);
        let (receipt, measured) = {
            let mut window = self.window.lock().unwrap_or_else(PoisonError::into_inner);
            window.receive(conn.index, id, now, in_window, source_us)
        };
        let spread_us = match receipt {
            Receipt::First => 0,
            Receipt::Later { spread_us } => spread_us,
            Receipt::Duplicate | Receipt::Late => return,
        };
        let counted = match (measured, cx.rec.counted_at(now)) {
            (true, _) => Counted::Measured,
            (false, Counted::Warmup) => Counted::Warmup,
            (false, _) => Counted::Neither,
        };
        if measured {
            self.last_measured = Some(now);
        }
        cx.rec.exchange(now, source_us.unwrap_or(spread_us), None, counted);
    }

    /// The subscriber owes no id first received after its connection ended.
    fn on_drop(&mut self, conn: &ClientConn) {
        let mut window = self.window.lock().unwrap_or_else(PoisonError::into_inner);
        window.left(conn.index, Instant::now());
    }

    /// Ids whose receipts are all in settle (any worker may do it).
    fn each_second(&mut self, now: Instant) {
        self.window.lock().unwrap_or_else(PoisonError::into_inner).settle_due(now);
    }

    /// Measured deliveries arrived lately: the end of the run waits for the rest of them.
    fn busy(&self, now: Instant) -> bool {
        self.last_measured.is_some_and(|at| now.saturating_duration_since(at) < QUIET)
    }

    fn drain(&self) -> Duration {
        DRAIN
    }

    fn errors(&self) -> BTreeMap<String, u64> {
        let mut errors = BTreeMap::new();
        for (kind, count) in [
            ("stream_id_unreadable", self.counters.unreadable),
            ("stream_time_unreadable", self.counters.time_unreadable),
        ] {
            if count > 0 {
                errors.insert(kind.to_owned(), count);
            }
        }
        errors
    }

    fn finish(self: Box<Self>, _cut_off: Option<Instant>) -> Option<Box<dyn Section>> {
        Some(Box::new(StreamSection::of_worker(self.window, self.counters)))
    }
}
