//! A stream's own measurements as the run keeps them: what the shared id window counted
//! (ids, receipts owed and delivered, missing, duplicated, late, the worst subscribers), what
//! each worker could not read, and the histograms of the spread (first receipt of an id →
//! each other subscriber's) and of the latency from the server's timestamp. Every worker's
//! section points at the run's one window until [`Section::complete`] settles it; written
//! into the result under `counters.stream` and `histograms.stream_spread` /
//! `stream_source_latency`, and read back from them.

use std::any::Any;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::window::{Tally, Window, keep_worst};
use crate::metrics::{Section, SectionHistograms, new_histogram};
use crate::result::{ResultError, decode_histogram};

/// The window the workers of one run share.
pub type SharedWindow = Arc<Mutex<Window>>;

/// What the result keeps under `counters.stream`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamCounters {
    #[serde(flatten)]
    pub tally: Tally,
    /// Deliveries whose id could not be read (`--message-id` found nothing, or an id longer
    /// than 256 bytes).
    pub unreadable: u64,
    /// Deliveries whose `--message-time` could not be read, and those stamped later than
    /// they arrived (the server's clock ahead of this machine's; counted as 0 latency).
    pub time_unreadable: u64,
    pub time_ahead: u64,
}

#[derive(Debug, Clone)]
pub struct StreamSection {
    /// The run's window, until [`Section::complete`] settles it into `counters`.
    window: Option<SharedWindow>,
    pub counters: StreamCounters,
    pub spread: Histogram<u64>,
    pub source_latency: Histogram<u64>,
}

impl StreamSection {
    /// A worker's section: its own counts, and the run's window.
    pub fn of_worker(window: SharedWindow, counters: StreamCounters) -> StreamSection {
        StreamSection {
            window: Some(window),
            counters,
            spread: new_histogram(),
            source_latency: new_histogram(),
        }
    }

    /// Read back from a result file's `counters` and `histograms`.
    pub fn read(
        counters: &BTreeMap<String, Value>,
        histograms: &BTreeMap<String, Value>,
    ) -> Result<StreamSection, ResultError> {
        let counters = match counters.get("stream") {
            Some(value) => serde_json::from_value(value.clone()).map_err(|e| ResultError::Histogram {
                field: "counters.stream".to_owned(),
                reason: e.to_string(),
            })?,
            None => StreamCounters::default(),
        };
        let histogram = |key: &str| match histograms.get(key).and_then(Value::as_str) {
            Some(text) => decode_histogram(&format!("histograms.{key}"), text),
            None => Ok(new_histogram()),
        };
        Ok(StreamSection {
            window: None,
            counters,
            spread: histogram("stream_spread")?,
            source_latency: histogram("stream_source_latency")?,
        })
    }
}

impl Section for StreamSection {
    /// Workers of one run share their window (it is taken once); their own counts add.
    /// Sections read from files add their counts (a stream runs in one process, so these
    /// are never parts of one run).
    fn merge(&mut self, other: &dyn Section) {
        let Some(other) = other.as_any().downcast_ref::<StreamSection>() else { return };
        match (&self.window, &other.window) {
            (Some(mine), Some(theirs)) if Arc::ptr_eq(mine, theirs) => {}
            (None, Some(theirs)) => self.window = Some(theirs.clone()),
            _ => {}
        }
        let (mine, theirs) = (&mut self.counters, &other.counters);
        mine.unreadable += theirs.unreadable;
        mine.time_unreadable += theirs.time_unreadable;
        mine.time_ahead += theirs.time_ahead;
        if other.window.is_none() {
            add_tally(&mut mine.tally, &theirs.tally);
        }
        self.spread.add(&other.spread).expect("histograms share bounds");
        self.source_latency.add(&other.source_latency).expect("histograms share bounds");
    }

    /// Settles every id still open and takes the window's counts and histograms.
    fn complete(&mut self) {
        let Some(window) = self.window.take() else { return };
        let mut window = window.lock().unwrap_or_else(PoisonError::into_inner);
        window.settle_all();
        self.counters.tally = window.tally.clone();
        self.spread.add(&window.spread).expect("histograms share bounds");
        self.source_latency.add(&window.source_latency).expect("histograms share bounds");
    }

    fn errors(&self, errors: &mut BTreeMap<String, u64>) {
        let counters = &self.counters;
        for (kind, count) in [
            ("stream_missing", counters.tally.missing),
            ("stream_duplicate", counters.tally.duplicated),
            ("stream_late", counters.tally.late),
            ("stream_id_unreadable", counters.unreadable),
            ("stream_time_unreadable", counters.time_unreadable),
        ] {
            if count > 0 {
                *errors.entry(kind.to_owned()).or_default() += count;
            }
        }
    }

    fn counters(&self) -> BTreeMap<String, Value> {
        BTreeMap::from([("stream".to_owned(), serde_json::to_value(&self.counters).unwrap_or_default())])
    }

    fn histograms(&self) -> Vec<(&'static str, SectionHistograms<'_>)> {
        vec![
            ("stream_spread", SectionHistograms::One(&self.spread)),
            ("stream_source_latency", SectionHistograms::One(&self.source_latency)),
        ]
    }

    fn boxed(&self) -> Box<dyn Section> {
        Box::new(self.clone())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Adds the counts of a tally read from a file.
fn add_tally(mine: &mut Tally, theirs: &Tally) {
    for (count, add) in [
        (&mut mine.joined, theirs.joined),
        (&mut mine.silent, theirs.silent),
        (&mut mine.ids, theirs.ids),
        (&mut mine.owed, theirs.owed),
        (&mut mine.delivered, theirs.delivered),
        (&mut mine.missing, theirs.missing),
        (&mut mine.duplicated, theirs.duplicated),
        (&mut mine.late, theirs.late),
        (&mut mine.settled_early, theirs.settled_early),
        (&mut mine.missing_subscriber_count, theirs.missing_subscriber_count),
        (&mut mine.duplicated_subscriber_count, theirs.duplicated_subscriber_count),
    ] {
        *count += add;
    }
    mine.worst_missing.extend_from_slice(&theirs.worst_missing);
    keep_worst(&mut mine.worst_missing);
    mine.worst_duplicated.extend_from_slice(&theirs.worst_duplicated);
    keep_worst(&mut mine.worst_duplicated);
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    #[test]
    fn workers_share_one_window_and_add_their_own_counts() {
        let window: SharedWindow = Arc::new(Mutex::new(Window::new(2)));
        let now = Instant::now();
        window.lock().unwrap().receive(0, 1, now, true, None);
        window.lock().unwrap().receive(1, 1, now, true, None);
        window.lock().unwrap().receive(1, 2, now, true, None);
        let a = StreamCounters { unreadable: 2, ..StreamCounters::default() };
        let mut merged = StreamSection::of_worker(window.clone(), a);
        let b = StreamCounters { unreadable: 1, time_ahead: 4, ..StreamCounters::default() };
        merged.merge(&StreamSection::of_worker(window, b));
        merged.complete();
        let counters = &merged.counters;
        assert_eq!((counters.unreadable, counters.time_ahead), (3, 4));
        assert_eq!((counters.tally.ids, counters.tally.delivered, counters.tally.missing), (2, 3, 1));
        let mut errors = BTreeMap::new();
        merged.errors(&mut errors);
        assert_eq!(
            errors,
            BTreeMap::from([("stream_missing".into(), 1), ("stream_id_unreadable".into(), 3)])
        );
        // Written and read back, it is the same.
        let histograms: BTreeMap<String, Value> = merged
            .histograms()
            .into_iter()
            .map(|(key, h)| match h {
                SectionHistograms::One(h) => {
                    (key.to_owned(), Value::from(crate::result::encode_histogram(h)))
                }
                SectionHistograms::Named(_) => unreachable!(),
            })
            .collect();
        let read = StreamSection::read(&merged.counters(), &histograms).unwrap();
        assert_eq!(read.counters, merged.counters);
        assert_eq!(read.spread.len(), merged.spread.len());
    }
}
