//! A fan-out's own measurements: the measured publishes by topic, what each acknowledged
//! subscriber received (once each), duplicates, reorderings, unexpected messages, failed
//! subscriptions, and the spread of each measured publish from its first subscriber's
//! receipt to its last one's. Written into the result under the keys pub/sub runs always
//! had (`counters.pubsub`, `histograms.pubsub_spread`) and read back from them.

use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::ops::AddAssign;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::metrics::{Section, SectionHistograms, new_histogram, record_us};
use crate::result::{ResultError, decode_histogram};

/// Per measured publish `(publisher, sequence)`: its first and last receipt (µs, monotonic).
pub type Spread = HashMap<(u64, u64), (u64, u64)>;

/// What the publishers sent and the subscribers received. Only
/// publishes due inside the measured window are accounted (their messages say so), so
/// every subscriber expects exactly the measured publishes of its topic.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PubSubCounters {
    /// Measured publishes by topic number.
    pub published: BTreeMap<u64, u64>,
    /// Subscribers the server acknowledged, by connection index: `[topic, measured
    /// publishes received]` (each counted once however often it came).
    pub received: BTreeMap<u64, (u64, u64)>,
    /// Deliveries of a message the subscriber already had.
    pub duplicates: u64,
    /// Deliveries that came after a later message of the same publisher.
    pub out_of_order: u64,
    /// `duplicates` and `out_of_order` by the subscriber's connection index.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub duplicated_by: BTreeMap<u64, u64>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub out_of_order_by: BTreeMap<u64, u64>,
    /// The subscribers whose measured deliveries were slowest, by p99 (the first
    /// [`SLOWEST_KEPT`], slowest first).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slowest: Vec<SlowSubscriber>,
    /// Messages that were no delivery of the subscriber's topic, or that reached a publisher.
    pub unexpected: u64,
    /// Subscriptions the server did not acknowledge (in time, or at all).
    pub subscribe_failures: u64,
    /// Workers whose end came while deliveries were still arriving (the drain ran out): what
    /// is missing is then undelivered when the run stopped, not known to be lost.
    #[serde(default)]
    pub cut_off: u64,
    /// Measured publishes that fell due while their publisher's connection was down (a
    /// restarting server, with `--reconnect`): never sent, so not published and no
    /// subscriber's loss.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub not_sent: u64,
    /// Subscriptions made again by subscribers whose connection was reopened.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub resubscribed: u64,
    /// Measured publishes sent that the server had not acknowledged when their publisher's
    /// connection was lost (MQTT QoS 1 and 2): never taken, so not published.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unacknowledged: u64,
}

fn is_zero(count: &u64) -> bool {
    *count == 0
}

/// How many of the slowest subscribers a run keeps.
pub const SLOWEST_KEPT: usize = 20;

/// A subscriber among the slowest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlowSubscriber {
    /// Its connection index.
    pub connection: u64,
    pub topic: u64,
    /// Measured deliveries it received.
    pub deliveries: u64,
    /// Its p99 latency, at most (the upper bound of a bucket at most 25 % wide), and its
    /// maximum (µs).
    pub p99_us_at_most: u64,
    pub max_us: u64,
}

/// Keeps the [`SLOWEST_KEPT`] slowest of `subscribers`, slowest first.
pub fn keep_slowest(subscribers: &mut Vec<SlowSubscriber>) {
    subscribers.sort_by(|a, b| {
        (b.p99_us_at_most, b.max_us, a.connection).cmp(&(a.p99_us_at_most, a.max_us, b.connection))
    });
    subscribers.truncate(SLOWEST_KEPT);
}

impl PubSubCounters {
    pub fn is_empty(&self) -> bool {
        *self == PubSubCounters::default()
    }

    /// What subscriber `topic`/`received` should have had and did not.
    pub fn lost_by(&self, topic: u64, received: u64) -> u64 {
        self.published.get(&topic).copied().unwrap_or(0).saturating_sub(received)
    }

    /// Measured deliveries expected: each subscriber, its topic's measured publishes.
    pub fn expected(&self) -> u64 {
        self.received.values().map(|&(topic, _)| self.published.get(&topic).copied().unwrap_or(0)).sum()
    }

    /// Measured deliveries received, each once.
    pub fn delivered(&self) -> u64 {
        self.received.values().map(|&(_, received)| received).sum()
    }

    pub fn lost(&self) -> u64 {
        self.received.values().map(|&(topic, received)| self.lost_by(topic, received)).sum()
    }
}

impl AddAssign<&PubSubCounters> for PubSubCounters {
    fn add_assign(&mut self, other: &PubSubCounters) {
        for (topic, count) in &other.published {
            *self.published.entry(*topic).or_default() += count;
        }
        for (index, &(topic, received)) in &other.received {
            self.received.entry(*index).or_insert((topic, 0)).1 += received;
        }
        self.duplicates += other.duplicates;
        self.out_of_order += other.out_of_order;
        for (mine, theirs) in [
            (&mut self.duplicated_by, &other.duplicated_by),
            (&mut self.out_of_order_by, &other.out_of_order_by),
        ] {
            for (index, count) in theirs {
                *mine.entry(*index).or_default() += count;
            }
        }
        self.slowest.extend_from_slice(&other.slowest);
        keep_slowest(&mut self.slowest);
        self.unexpected += other.unexpected;
        self.subscribe_failures += other.subscribe_failures;
        self.cut_off += other.cut_off;
        self.not_sent += other.not_sent;
        self.resubscribed += other.resubscribed;
        self.unacknowledged += other.unacknowledged;
    }
}

/// A fan-out's section: its counters and the spread of its publishes.
#[derive(Debug, Clone)]
pub struct PubSubSection {
    pub counters: PubSubCounters,
    /// First → last receipt of each measured publish (µs), once [`Section::complete`] has
    /// folded in the receipts of every worker.
    pub spread: Histogram<u64>,
    /// Receipts not yet folded into `spread` (a publish's subscribers may sit on several
    /// workers).
    pub receipts: Spread,
}

impl Default for PubSubSection {
    fn default() -> PubSubSection {
        PubSubSection {
            counters: PubSubCounters::default(),
            spread: new_histogram(),
            receipts: Spread::new(),
        }
    }
}

impl PubSubSection {
    /// Read back from a result file's `counters` and `histograms`.
    pub fn read(
        counters: &BTreeMap<String, Value>,
        histograms: &BTreeMap<String, Value>,
    ) -> Result<PubSubSection, ResultError> {
        let counters = match counters.get("pubsub") {
            Some(value) => serde_json::from_value(value.clone()).map_err(|e| ResultError::Histogram {
                field: "counters.pubsub".to_owned(),
                reason: e.to_string(),
            })?,
            None => PubSubCounters::default(),
        };
        let spread = match histograms.get("pubsub_spread").and_then(Value::as_str) {
            Some(text) => decode_histogram("histograms.pubsub_spread", text)?,
            None => new_histogram(),
        };
        Ok(PubSubSection { counters, spread, receipts: Spread::new() })
    }
}

impl Section for PubSubSection {
    fn merge(&mut self, other: &dyn Section) {
        let Some(other) = other.as_any().downcast_ref::<PubSubSection>() else { return };
        self.counters += &other.counters;
        self.spread.add(&other.spread).expect("histograms share bounds");
        for (&key, &(first, last)) in &other.receipts {
            let entry = self.receipts.entry(key).or_insert((first, last));
            entry.0 = entry.0.min(first);
            entry.1 = entry.1.max(last);
        }
    }

    fn complete(&mut self) {
        for (first, last) in std::mem::take(&mut self.receipts).into_values() {
            record_us(&mut self.spread, last - first);
        }
    }

    fn errors(&self, errors: &mut BTreeMap<String, u64>) {
        let counters = &self.counters;
        let lost = if counters.cut_off == 0 { "pubsub_lost" } else { "pubsub_undelivered" };
        for (kind, count) in [
            (lost, counters.lost()),
            ("pubsub_duplicate", counters.duplicates),
            ("pubsub_out_of_order", counters.out_of_order),
            ("pubsub_unexpected", counters.unexpected),
            ("pubsub_subscribe_failed", counters.subscribe_failures),
        ] {
            if count > 0 {
                *errors.entry(kind.to_owned()).or_default() += count;
            }
        }
    }

    fn counters(&self) -> BTreeMap<String, Value> {
        match self.counters.is_empty() {
            true => BTreeMap::new(),
            false => BTreeMap::from([(
                "pubsub".to_owned(),
                serde_json::to_value(&self.counters).unwrap_or_default(),
            )]),
        }
    }

    fn histograms(&self) -> Vec<(&'static str, SectionHistograms<'_>)> {
        vec![("pubsub_spread", SectionHistograms::One(&self.spread))]
    }

    fn boxed(&self) -> Box<dyn Section> {
        Box::new(self.clone())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
