//! The pubsub scenario's client side, in the terms of the connection's message protocol
//! (`raw`: docs/protocols.md): subscribers
//! send `{"sub":"tK"}` as soon as they open and wait for `{"subscribed":"tK"}`; publishers
//! send `{"pub":"tK","id":"J-S","ts":…,"sent":…,"measured":…}` on the open-loop schedule.
//! Every delivery is matched to its publisher and sequence number by wsbench's marker, found
//! wherever the delivered message carries it (`marker.rs`), so each subscriber knows
//! what it got once, twice, late or not at all; its latency counts from the publish's due
//! time (`ts`, coordinated omission corrected). Times are the machine's monotonic clock in
//! µs, which every process on the machine shares, so shards publish and subscribe across
//! processes.

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};
use std::io::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::marker::Marker;
use super::receipts::SharedReceipts;
use super::section::{PubSubCounters, PubSubSection, SlowSubscriber, Spread, keep_slowest};
use super::settings::{PubSubSpec, Role as PubSubRole};
use super::share::Published;
use super::sketch::LatencySketch;
use crate::config::{LoadSpec, Payload};
use crate::engine::conn::{ClientConn, State};
use crate::engine::recorder::Counted;
use crate::engine::workload::{Cx, Workload};
use crate::metrics::Section;
use crate::protocol::Incoming;

/// A draining worker waits until its subscribers have had nothing for this long.
pub const QUIET: Duration = Duration::from_millis(250);
/// The longest a run waits at its end for deliveries still on their way.
pub const DRAIN: Duration = Duration::from_secs(5);

/// `CLOCK_MONOTONIC` in µs (the clock behind `Instant` on Linux), read once and then
/// derived from `Instant`s.
#[derive(Debug, Clone, Copy)]
pub struct MonoClock {
    base: Instant,
    base_us: u64,
}

impl MonoClock {
    pub fn new() -> MonoClock {
        let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        let base = Instant::now();
        // SAFETY: `now` is a valid timespec to write to.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
        MonoClock { base, base_us: now.tv_sec as u64 * 1_000_000 + now.tv_nsec as u64 / 1_000 }
    }

    pub fn micros(&self, at: Instant) -> u64 {
        match at.checked_duration_since(self.base) {
            Some(after) => self.base_us + after.as_micros() as u64,
            None => self.base_us.saturating_sub(self.base.duration_since(at).as_micros() as u64),
        }
    }
}

/// How often a draining worker looks for subscribers still owed deliveries.
const OWED_CHECK: Duration = Duration::from_millis(20);

/// A delivery's figures, for the caller to record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delivery {
    /// From the publish's due time, and from when it was actually sent (µs).
    pub latency_us: u64,
    pub uncorrected_us: u64,
    /// The publish was due inside the measured window.
    pub measured: bool,
}

/// One worker's pubsub connections: their subscriptions, sequence numbers and tallies.
#[derive(Debug)]
pub struct PubSub {
    spec: PubSubSpec,
    clock: MonoClock,
    /// Bytes a publish is padded to (`--payload-bytes`), 0 for none.
    pad_to: usize,
    subscribers: HashMap<u64, Subscriber>,
    publishers: HashMap<u64, Publisher>,
    /// Each publisher's time between two publishes.
    interval: Option<Duration>,
    /// How long a subscription's acknowledgement may take.
    timeout: Duration,
    /// Subscriptions sent and not yet acknowledged or failed.
    awaiting: usize,
    tally: PubSubCounters,
    /// Receipts of recent publishes; older ones are handed to `shared` once a second.
    spread: Spread,
    shared: Arc<SharedReceipts>,
    last_delivery: Option<Instant>,
    /// The publish being encoded.
    encoding: Vec<u8>,
    /// Every worker's measured publishes, when all publishers are in this process.
    published: Option<Arc<Published>>,
    /// When subscribers owed deliveries were last looked for, and whether there were any.
    owed: Cell<(Option<Instant>, bool)>,
}

/// A publisher connection's schedule and which of its publishes were measured.
#[derive(Debug, Default)]
struct Publisher {
    next_seq: u64,
    /// Its last publish's due time (none before its first).
    last_due: Option<Instant>,
    /// The first and last sequence numbers of its measured publishes (the measured window
    /// is one stretch of time, so every publish sent between them was measured).
    measured: Option<(u64, u64)>,
}

#[derive(Debug)]
struct Subscriber {
    topic: u64,
    state: Subscription,
    /// Ever acknowledged: then it is accounted, dropped later or not.
    accounted: bool,
    /// Per publisher of the topic (publisher `j` at `j / T`).
    from: Vec<Seen>,
    /// Measured publishes received, once each.
    received: u64,
    /// Their latencies (made at the first).
    latency: Option<LatencySketch>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Subscription {
    Closed,
    /// Sent by the connection that started at this instant.
    Pending(Instant),
    Subscribed,
}

/// What a subscriber has had of one publisher: every sequence number below `next` except
/// the `missing` ranges (half-open), which may still arrive out of order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Seen {
    next: u64,
    missing: Vec<(u64, u64)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Note {
    InOrder,
    Late,
    Duplicate,
}

impl Seen {
    fn note(&mut self, seq: u64) -> Note {
        if seq >= self.next {
            if seq > self.next {
                self.missing.push((self.next, seq));
            }
            self.next = seq + 1;
            return Note::InOrder;
        }
        let Some(at) = self.missing.iter().position(|&(start, end)| start <= seq && seq < end) else {
            return Note::Duplicate;
        };
        let (start, end) = self.missing[at];
        match (seq == start, seq + 1 == end) {
            (true, true) => {
                self.missing.remove(at);
            }
            (true, false) => self.missing[at].0 = seq + 1,
            (false, true) => self.missing[at].1 = seq,
            (false, false) => {
                self.missing[at].1 = seq;
                self.missing.insert(at + 1, (seq + 1, end));
            }
        }
        Note::Late
    }
}

impl PubSub {
    /// The pubsub state of a worker that opens `connections`; `shared` gathers the receipts
    /// of every worker of the run, `published` counts their measured publishes.
    pub fn new(
        load: &LoadSpec,
        spec: PubSubSpec,
        connections: &[u64],
        shared: Arc<SharedReceipts>,
        published: Option<Arc<Published>>,
    ) -> PubSub {
        let mut subscribers = HashMap::new();
        let mut publishers = HashMap::new();
        for &index in connections {
            match spec.role(index) {
                PubSubRole::Subscriber { topic } => {
                    let from = vec![Seen::default(); spec.publishers_of(topic) as usize];
                    let state = Subscription::Closed;
                    subscribers.insert(
                        index,
                        Subscriber { topic, state, accounted: false, from, received: 0, latency: None },
                    );
                }
                PubSubRole::Publisher { .. } => {
                    publishers.insert(index, Publisher::default());
                }
            }
        }
        PubSub {
            spec,
            clock: MonoClock::new(),
            pad_to: match load.payload {
                Payload::Bytes(size) => size as usize,
                _ => 0,
            },
            subscribers,
            publishers,
            interval: load.message_interval,
            timeout: load.connect_timeout,
            awaiting: 0,
            tally: PubSubCounters::default(),
            spread: Spread::new(),
            shared,
            last_delivery: None,
            encoding: Vec::new(),
            published,
            owed: Cell::new((None, false)),
        }
    }

    /// A connection opened: a subscriber subscribes at once (its acknowledgement is due
    /// within the connect timeout).
    fn subscribe(&mut self, cx: &mut Cx<'_>, conn: &mut ClientConn, now: Instant) {
        let Some(subscriber) = self.subscribers.get_mut(&conn.index) else { return };
        let topic = format!("t{}", subscriber.topic);
        conn.through_session(|session, out| session.subscribe(&topic, out));
        subscriber.state = Subscription::Pending(conn.started);
        self.awaiting += 1;
        cx.wake(conn, now + self.timeout);
    }

    /// A connection is gone: a subscription it was waiting for will not come.
    fn forget(&mut self, index: u64) {
        if let Some(subscriber) = self.subscribers.get_mut(&index) {
            if let Subscription::Pending(_) = subscriber.state {
                self.awaiting -= 1;
            }
            subscriber.state = Subscription::Closed;
        }
    }

    /// A subscription not acknowledged by its deadline fails.
    fn expire(&mut self, conn: &ClientConn) {
        if let Some(subscriber) = self.subscribers.get_mut(&conn.index)
            && subscriber.state == Subscription::Pending(conn.started)
        {
            subscriber.state = Subscription::Closed;
            self.awaiting -= 1;
            self.tally.subscribe_failures += 1;
        }
    }

    /// Writes publisher `conn`'s next publish, due at `due`: its fields (publisher and
    /// sequence, due and send times, whether it is measured) as a JSON object the protocol
    /// carries to every subscriber of the topic. Returns what it wrote (messages, bytes on
    /// the wire and of payload).
    fn publish(
        &mut self,
        conn: &mut ClientConn,
        due: Instant,
        now: Instant,
        measured: bool,
    ) -> (u64, u64, u64) {
        let Some(state) = self.publishers.get_mut(&conn.index) else { return (0, 0, 0) };
        let PubSubRole::Publisher { publisher, topic } = self.spec.role(conn.index) else { return (0, 0, 0) };
        state.last_due = Some(due);
        let seq = &mut state.next_seq;
        if measured {
            state.measured = Some(state.measured.map_or((*seq, *seq), |(first, _)| (first, *seq)));
        }
        let message = &mut self.encoding;
        message.clear();
        let _ = write!(
            message,
            "{{\"id\":\"{publisher}-{seq}\",\"ts\":{},\"sent\":{},\"measured\":{measured}",
            self.clock.micros(due),
            self.clock.micros(now)
        );
        *seq += 1;
        let pad = self.pad_to.saturating_sub(message.len() + r#","pad":""}"#.len());
        if pad > 0 {
            message.extend_from_slice(br#","pad":""#);
            message.resize(message.len() + pad, b'x');
            message.push(b'"');
        }
        message.push(b'}');
        let encoding = &self.encoding;
        conn.through_session(|session, out| session.publish(&format!("t{topic}"), encoding, out))
    }

    /// What the protocol made of a message to `conn`: the acknowledgement of a
    /// subscription, or a delivery (returned when it is the first of its publish).
    fn classify(&mut self, conn: &ClientConn, incoming: Incoming<'_>, now: Instant) -> Option<Delivery> {
        let tally = &mut self.tally;
        let Some(subscriber) = self.subscribers.get_mut(&conn.index) else {
            tally.unexpected += 1;
            return None;
        };
        let topic_of = |name: &str| name.strip_prefix('t').and_then(|n| n.parse::<u64>().ok());
        match (subscriber.state, incoming) {
            (Subscription::Pending(_), Incoming::Subscribed { topic })
                if topic_of(topic) == Some(subscriber.topic) =>
            {
                (subscriber.state, self.awaiting) = (Subscription::Subscribed, self.awaiting - 1);
                tally.resubscribed += u64::from(subscriber.accounted);
                subscriber.accounted = true;
                return None;
            }
            // A session the server kept (MQTT's clean session off) delivers what it queued
            // as soon as the subscriber is back, before the subscription made again is acked.
            (Subscription::Pending(_), Incoming::Delivery { .. }) if subscriber.accounted => {}
            (Subscription::Pending(_), _) => {
                // An echo server sends the subscription back: it does not speak pub/sub.
                (subscriber.state, self.awaiting) = (Subscription::Closed, self.awaiting - 1);
                tally.subscribe_failures += 1;
                return None;
            }
            (Subscription::Closed, _) => return None,
            // The server's error (a subscription it ended) is counted by its cause alone.
            (Subscription::Subscribed, Incoming::Error { .. }) => return None,
            (Subscription::Subscribed, _) => {}
        }
        self.last_delivery = Some(now);
        let Incoming::Delivery { topic, payload } = incoming else {
            tally.unexpected += 1;
            return None;
        };
        // The delivery's topic is the one its publisher publishes to; a topic the protocol
        // read from the message (none when the message does not name it) must agree.
        let topics = self.spec.topics;
        let Some(fields) = Marker::find(payload).filter(|marker| {
            marker.publisher % topics == subscriber.topic
                && (topic.is_empty() || topic_of(topic) == Some(subscriber.topic))
        }) else {
            tally.unexpected += 1;
            return None;
        };
        let Some(seen) = subscriber.from.get_mut((fields.publisher / self.spec.topics) as usize) else {
            tally.unexpected += 1;
            return None;
        };
        // Completeness is judged over the measured publishes alone, by one rule: a warm-up
        // publish lost is no loss, so a warm-up publish duplicated or reordered is no
        // error either (it is still noted, so a measured one after it is judged right).
        match seen.note(fields.seq) {
            Note::Duplicate => {
                if fields.measured {
                    tally.duplicates += 1;
                    *tally.duplicated_by.entry(conn.index).or_default() += 1;
                }
                return None;
            }
            Note::Late if fields.measured => {
                tally.out_of_order += 1;
                *tally.out_of_order_by.entry(conn.index).or_default() += 1;
            }
            Note::Late | Note::InOrder => {}
        }
        let now_us = self.clock.micros(now);
        let latency_us = now_us.saturating_sub(fields.due_us);
        if fields.measured {
            subscriber.received += 1;
            subscriber.latency.get_or_insert_with(LatencySketch::default).record(latency_us);
            let entry = self.spread.entry((fields.publisher, fields.seq)).or_insert((now_us, now_us));
            entry.0 = entry.0.min(now_us);
            entry.1 = entry.1.max(now_us);
        }
        let uncorrected_us = now_us.saturating_sub(fields.sent_us);
        Some(Delivery { latency_us, uncorrected_us, measured: fields.measured })
    }

    /// The worker's end: every subscriber that was acknowledged goes into the counters
    /// with what it received, beside the receipts of each publish it saw.
    /// `cut_off`: when the drain ran out while this worker was busy; what is missing is then
    /// undelivered only if deliveries were still arriving then (a subscriber owed publishes
    /// that got nothing for the whole drain lost them). Judged at that moment, not now: the
    /// closing handshakes after it may take longer than [`QUIET`].
    fn into_section(self, cut_off: Option<Instant>) -> PubSubSection {
        let mut counters = self.tally;
        let arriving = |cut_at: Instant| {
            self.last_delivery.is_some_and(|at| cut_at.saturating_duration_since(at) < QUIET)
        };
        counters.cut_off += u64::from(cut_off.is_some_and(arriving));
        for (index, subscriber) in self.subscribers {
            if subscriber.accounted {
                counters.received.insert(index, (subscriber.topic, subscriber.received));
            }
            if let Some(latency) = subscriber.latency {
                counters.slowest.push(SlowSubscriber {
                    connection: index,
                    topic: subscriber.topic,
                    deliveries: latency.count(),
                    p99_us_at_most: latency.quantile_at_most(0.99),
                    max_us: latency.max_us(),
                });
                // Bounded as it goes: a worker may hold many subscribers.
                if counters.slowest.len() >= 4 * super::section::SLOWEST_KEPT {
                    keep_slowest(&mut counters.slowest);
                }
            }
        }
        keep_slowest(&mut counters.slowest);
        let (receipts, spread) = self.shared.take_all(self.spread);
        PubSubSection { counters, spread, receipts }
    }

    /// Whether a subscriber that is still subscribed has received fewer measured publishes
    /// than its topic's publishers sent (looked at every [`OWED_CHECK`]).
    fn owed(&self, now: Instant) -> bool {
        let Some(published) = &self.published else { return false };
        let (checked, owed) = self.owed.get();
        if checked.is_some_and(|at| now.saturating_duration_since(at) < OWED_CHECK) {
            return owed;
        }
        let owed = self.subscribers.values().any(|subscriber| {
            subscriber.state == Subscription::Subscribed
                && subscriber.received < published.of(subscriber.topic)
        });
        self.owed.set((Some(now), owed));
        owed
    }

    /// Counts `count` measured publishes sent by connection `index` (a publisher) on its
    /// topic: owed to its subscribers (the end of the run waits for them).
    fn count_published(&mut self, index: u64, count: u64) {
        if let PubSubRole::Publisher { topic, .. } = self.spec.role(index) {
            *self.tally.published.entry(topic).or_default() += count;
            if let Some(published) = &self.published {
                published.add(topic, count);
            }
        }
    }

    /// Publisher `conn` was lost with publishes the server had not acknowledged (the latest
    /// it sent: acknowledgements come in order): the measured ones among them were never
    /// taken, so they are counted as such and no longer as published.
    fn take_back_unacknowledged(&mut self, conn: &ClientConn) {
        // Closed by the load (the run's end): what is unacknowledged is still on its way.
        if conn.state == State::Closing {
            return;
        }
        let unacknowledged = conn.session.as_ref().map_or(0, |session| session.unacknowledged_publishes());
        let (Some(state), PubSubRole::Publisher { topic, .. }) =
            (self.publishers.get(&conn.index), self.spec.role(conn.index))
        else {
            return;
        };
        let Some((first, last)) = state.measured else { return };
        let from = state.next_seq.saturating_sub(unacknowledged).max(first);
        let measured = (last + 1).saturating_sub(from);
        if measured == 0 {
            return;
        }
        if let Some(published) = self.tally.published.get_mut(&topic) {
            *published = published.saturating_sub(measured);
        }
        if let Some(published) = &self.published {
            published.take_back(topic, measured);
        }
        self.tally.unacknowledged += measured;
    }

    /// A publisher's connection is open again (`--reconnect`): the publishes that fell due
    /// while it was down were never sent. Their sequence numbers are skipped, so
    /// subscribers see the gap; the measured ones are counted as not sent (`not_sent`), not
    /// as published: the server never had them, so no subscriber lost them.
    fn skip_missed_publishes(&mut self, cx: &Cx<'_>, index: u64, now: Instant) {
        let Some(interval) = self.interval else { return };
        let Some(Publisher { next_seq: seq, last_due: Some(last_due), .. }) = self.publishers.get_mut(&index)
        else {
            return;
        };
        let missed =
            (now.saturating_duration_since(*last_due).as_nanos() / interval.as_nanos().max(1)) as u64;
        let first = *last_due + interval;
        *seq += missed;
        *last_due += interval.saturating_mul(missed.min(u64::from(u32::MAX)) as u32);
        self.tally.not_sent += cx.rec.in_window_count(first, interval, missed);
    }
}

impl Workload for PubSub {
    fn on_open(&mut self, cx: &mut Cx<'_>, conn: &mut ClientConn, now: Instant) {
        self.subscribe(cx, conn, now);
    }

    /// A publisher starts its schedule, offset by its share of the interval so that the
    /// publishers send evenly spread.
    fn start(&mut self, cx: &mut Cx<'_>, conn: &mut ClientConn, now: Instant) {
        if let PubSubRole::Publisher { publisher, .. } = self.spec.role(conn.index) {
            self.skip_missed_publishes(cx, conn.index, now);
            cx.pacer.start_sends_among(conn.slot, publisher, self.spec.publishers, conn.started, now);
        }
    }

    /// A publish due at `due`, counted as measured when it was due inside the window.
    fn on_due(&mut self, cx: &mut Cx<'_>, conn: &mut ClientConn, due: Instant, now: Instant) {
        let measured = cx.rec.in_window(due);
        self.publish(conn, due, now, measured);
        if measured {
            self.count_published(conn.index, 1);
            cx.rec.send_lag(due, now);
        }
    }

    /// A delivery is recorded like a round trip, its latency from the publish's due time.
    fn on_incoming(&mut self, cx: &mut Cx<'_>, conn: &mut ClientConn, incoming: Incoming<'_>, now: Instant) {
        let Some(delivery) = self.classify(conn, incoming, now) else { return };
        let counted = if delivery.measured { Counted::Measured } else { Counted::Warmup };
        cx.rec.exchange(now, delivery.latency_us, Some(delivery.uncorrected_us), counted);
    }

    fn on_timer(&mut self, _cx: &mut Cx<'_>, conn: &mut ClientConn, _now: Instant) {
        self.expire(conn);
    }

    fn on_drop(&mut self, conn: &ClientConn) {
        self.forget(conn.index);
        self.take_back_unacknowledged(conn);
    }

    /// Receipts of publishes done with go to the run's shared receipts.
    fn each_second(&mut self, now: Instant) {
        self.shared.hand_in(&mut self.spread, self.clock.micros(now));
    }

    /// Deliveries arrived lately, or a subscriber here still lacks publishes it is owed: the
    /// end of the run waits (up to [`DRAIN`]; what is still missing then is undelivered, not
    /// called lost).
    fn busy(&self, now: Instant) -> bool {
        self.last_delivery.is_some_and(|at| now.saturating_duration_since(at) < QUIET) || self.owed(now)
    }

    fn drain(&self) -> Duration {
        DRAIN
    }

    fn settled(&self) -> bool {
        self.awaiting == 0
    }

    fn errors(&self) -> BTreeMap<String, u64> {
        let mut errors = BTreeMap::new();
        let section = PubSubSection { counters: self.tally.clone(), ..PubSubSection::default() };
        section.errors(&mut errors);
        errors
    }

    fn finish(self: Box<Self>, cut_off: Option<Instant>) -> Option<Box<dyn Section>> {
        Some(Box::new(self.into_section(cut_off)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seen_tells_in_order_late_and_duplicate_deliveries() {
        let mut seen = Seen::default();
        assert_eq!(seen.note(0), Note::InOrder);
        assert_eq!(seen.note(4), Note::InOrder);
        assert_eq!(seen.missing, [(1, 4)]);
        assert_eq!(seen.note(2), Note::Late);
        assert_eq!(seen.missing, [(1, 2), (3, 4)]);
        assert_eq!(seen.note(2), Note::Duplicate);
        assert_eq!(seen.note(1), Note::Late);
        assert_eq!(seen.note(3), Note::Late);
        assert!(seen.missing.is_empty());
        assert_eq!(seen.note(4), Note::Duplicate);
        assert_eq!(seen.note(0), Note::Duplicate);
        assert_eq!(seen.note(5), Note::InOrder);
    }

    #[test]
    fn the_monotonic_clock_moves_with_instants() {
        let clock = MonoClock::new();
        let now = Instant::now();
        let later = now + Duration::from_millis(5);
        assert_eq!(clock.micros(later) - clock.micros(now), 5_000);
    }
}
