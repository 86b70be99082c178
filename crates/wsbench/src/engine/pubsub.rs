//! The pubsub scenario's client side (issue 14, protocol in docs/protocols.md): subscribers
//! send `{"sub":"tK"}` as soon as they open and wait for `{"subscribed":"tK"}`; publishers
//! send `{"pub":"tK","id":"J-S","ts":…,"sent":…,"measured":…}` on the open-loop schedule.
//! Every delivery is matched to its publisher and sequence number, so each subscriber knows
//! what it got once, twice, late or not at all; its latency counts from the publish's due
//! time (`ts`, coordinated omission corrected). Times are the machine's monotonic clock in
//! µs, which every process on the machine shares, so shards publish and subscribe across
//! processes. This file does the protocol and the bookkeeping; `traffic.rs` records.

use std::collections::{HashMap, VecDeque};
use std::io::Write as _;
use std::time::{Duration, Instant};

use wsbench_proto::{OpCode, write_frame};

use super::conn::ClientConn;
use crate::config::{LoadSpec, Payload, PubSubRole, PubSubSpec};
use crate::metrics::{Counters, PubSubCounters};

/// A draining worker waits until its subscribers have had nothing for this long.
pub const QUIET: Duration = Duration::from_millis(250);
/// The longest a run waits at its end for deliveries still on their way.
pub const DRAIN: Duration = Duration::from_secs(5);
/// Longest message a subscriber reassembles from fragments; longer ones are unexpected.
const MAX_MESSAGE: usize = 1 << 20;

/// Per measured publish `(publisher, sequence)`: its first and last receipt (µs, monotonic).
pub type Spread = HashMap<(u64, u64), (u64, u64)>;

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
    /// Publisher connection index → its next sequence number.
    publishers: HashMap<u64, u64>,
    /// Subscriptions waiting for their acknowledgement: deadline, connection index, start.
    deadlines: VecDeque<(Instant, u64, Instant)>,
    timeout: Duration,
    /// Subscriptions sent and not yet acknowledged or failed.
    pub awaiting: usize,
    spread: Spread,
    last_delivery: Option<Instant>,
    /// The publish being encoded (publishers only; deliveries reassemble in their own
    /// connection's `message`, so fragments of two subscribers never mix).
    encoding: Vec<u8>,
    /// The run ended while deliveries were still arriving.
    pub cut_off: bool,
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
    /// The pubsub state of a worker that opens `connections`; `None` outside pubsub.
    pub fn new(load: &LoadSpec, connections: &[u64]) -> Option<PubSub> {
        let spec = load.pubsub?;
        let mut subscribers = HashMap::new();
        let mut publishers = HashMap::new();
        for &index in connections {
            match spec.role(index) {
                PubSubRole::Subscriber { topic } => {
                    let from = vec![Seen::default(); spec.publishers_of(topic) as usize];
                    let state = Subscription::Closed;
                    subscribers
                        .insert(index, Subscriber { topic, state, accounted: false, from, received: 0 });
                }
                PubSubRole::Publisher { .. } => {
                    publishers.insert(index, 0);
                }
            }
        }
        Some(PubSub {
            spec,
            clock: MonoClock::new(),
            pad_to: match load.payload {
                Payload::Bytes(size) => size as usize,
                _ => 0,
            },
            subscribers,
            publishers,
            deadlines: VecDeque::new(),
            timeout: load.connect_timeout,
            awaiting: 0,
            spread: Spread::new(),
            last_delivery: None,
            encoding: Vec::new(),
            cut_off: false,
        })
    }

    /// The publisher number of connection `index` and how many publishers there are.
    pub fn publisher_position(&self, index: u64) -> Option<(u64, u64)> {
        match self.spec.role(index) {
            PubSubRole::Publisher { publisher, .. } => Some((publisher, self.spec.publishers)),
            PubSubRole::Subscriber { .. } => None,
        }
    }

    /// A connection opened: a subscriber subscribes at once (its acknowledgement is due
    /// within the connect timeout).
    pub fn on_open(&mut self, conn: &mut ClientConn, now: Instant) {
        let Some(subscriber) = self.subscribers.get_mut(&conn.index) else { return };
        let mut command = Vec::with_capacity(24);
        let _ = write!(command, "{{\"sub\":\"t{}\"}}", subscriber.topic);
        write_frame(&mut conn.output, true, OpCode::Text, Some(rand::random()), &command);
        subscriber.state = Subscription::Pending(conn.started);
        self.awaiting += 1;
        self.deadlines.push_back((now + self.timeout, conn.index, conn.started));
    }

    /// A connection is gone: a subscription it was waiting for will not come.
    pub fn on_drop(&mut self, index: u64) {
        if let Some(subscriber) = self.subscribers.get_mut(&index) {
            if let Subscription::Pending(_) = subscriber.state {
                self.awaiting -= 1;
            }
            subscriber.state = Subscription::Closed;
        }
    }

    /// Subscriptions not acknowledged by their deadline fail.
    pub fn expire(&mut self, now: Instant, counters: &mut PubSubCounters) {
        while let Some(&(deadline, index, started)) = self.deadlines.front() {
            if deadline > now {
                return;
            }
            self.deadlines.pop_front();
            if let Some(subscriber) = self.subscribers.get_mut(&index)
                && subscriber.state == Subscription::Pending(started)
            {
                subscriber.state = Subscription::Closed;
                self.awaiting -= 1;
                counters.subscribe_failures += 1;
            }
        }
    }

    /// Whether deliveries arrived lately (the end of the run waits for them).
    pub fn busy(&self, now: Instant) -> bool {
        self.last_delivery.is_some_and(|at| now.saturating_duration_since(at) < QUIET)
    }

    /// Writes publisher `conn`'s next publish, due at `due`; returns its payload length.
    pub fn publish(&mut self, conn: &mut ClientConn, due: Instant, now: Instant, measured: bool) -> usize {
        let Some(seq) = self.publishers.get_mut(&conn.index) else { return 0 };
        let PubSubRole::Publisher { publisher, topic } = self.spec.role(conn.index) else { return 0 };
        let message = &mut self.encoding;
        message.clear();
        let _ = write!(
            message,
            "{{\"pub\":\"t{topic}\",\"id\":\"{publisher}-{seq}\",\"ts\":{},\"sent\":{},\"measured\":{measured}",
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
        write_frame(&mut conn.output, true, OpCode::Text, Some(rand::random()), message);
        message.len()
    }

    /// A piece of a message to `conn`. On its last piece: the acknowledgement of a
    /// subscription, or a delivery (returned when it is the first of its publish).
    pub fn on_message(
        &mut self,
        conn: &mut ClientConn,
        first: bool,
        last: bool,
        payload: &[u8],
        now: Instant,
        counters: &mut Counters,
    ) -> Option<Delivery> {
        if first {
            conn.message.clear();
        }
        if !(first && last) {
            if conn.message.len() + payload.len() > MAX_MESSAGE {
                conn.message = Vec::new();
                counters.pubsub.unexpected += u64::from(last);
                return None;
            }
            conn.message.extend_from_slice(payload);
        }
        if !last {
            return None;
        }
        let message = std::mem::take(&mut conn.message);
        let whole = if first { payload } else { &message[..] };
        let delivery = self.on_whole_message(conn, whole, now, counters);
        conn.message = message;
        delivery
    }

    fn on_whole_message(
        &mut self,
        conn: &ClientConn,
        message: &[u8],
        now: Instant,
        counters: &mut Counters,
    ) -> Option<Delivery> {
        let tally = &mut counters.pubsub;
        let Some(subscriber) = self.subscribers.get_mut(&conn.index) else {
            tally.unexpected += 1;
            return None;
        };
        match subscriber.state {
            Subscription::Pending(_) if is_ack(message, subscriber.topic) => {
                subscriber.state = Subscription::Subscribed;
                subscriber.accounted = true;
                self.awaiting -= 1;
                return None;
            }
            Subscription::Pending(_) => {
                // An echo server sends the subscription back: it does not speak pub/sub.
                subscriber.state = Subscription::Closed;
                self.awaiting -= 1;
                tally.subscribe_failures += 1;
                return None;
            }
            Subscription::Closed => return None,
            Subscription::Subscribed => {}
        }
        self.last_delivery = Some(now);
        let Some(fields) = Fields::parse(message).filter(|f| f.topic == subscriber.topic) else {
            tally.unexpected += 1;
            return None;
        };
        let Some(seen) = subscriber.from.get_mut((fields.publisher / self.spec.topics) as usize) else {
            tally.unexpected += 1;
            return None;
        };
        match seen.note(fields.seq) {
            Note::Duplicate => {
                tally.duplicates += 1;
                return None;
            }
            Note::Late => tally.out_of_order += 1,
            Note::InOrder => {}
        }
        let now_us = self.clock.micros(now);
        if fields.measured {
            subscriber.received += 1;
            let entry = self.spread.entry((fields.publisher, fields.seq)).or_insert((now_us, now_us));
            entry.0 = entry.0.min(now_us);
            entry.1 = entry.1.max(now_us);
        }
        Some(Delivery {
            latency_us: now_us.saturating_sub(fields.due_us),
            uncorrected_us: now_us.saturating_sub(fields.sent_us),
            measured: fields.measured,
        })
    }

    /// The worker's end: every subscriber that was acknowledged goes into the counters
    /// with what it received; the spread of each publish it saw is handed back.
    pub fn finish(self, counters: &mut PubSubCounters) -> Spread {
        counters.cut_off += u64::from(self.cut_off);
        for (index, subscriber) in self.subscribers {
            if subscriber.accounted {
                counters.received.insert(index, (subscriber.topic, subscriber.received));
            }
        }
        self.spread
    }

    /// Counts a measured publish of `conn` (a publisher) on its topic.
    pub fn count_published(&self, index: u64, counters: &mut PubSubCounters) {
        if let PubSubRole::Publisher { topic, .. } = self.spec.role(index) {
            *counters.published.entry(topic).or_default() += 1;
        }
    }
}

/// Adds `other`'s receipts into `spread` (first is the earliest, last the latest).
pub fn merge_spread(spread: &mut Spread, other: Spread) {
    for (key, (first, last)) in other {
        let entry = spread.entry(key).or_insert((first, last));
        entry.0 = entry.0.min(first);
        entry.1 = entry.1.max(last);
    }
}

/// `{"subscribed":"tK"}` for the subscriber's topic K.
fn is_ack(message: &[u8], topic: u64) -> bool {
    let mut expected = Vec::with_capacity(24);
    let _ = write!(expected, "{{\"subscribed\":\"t{topic}\"}}");
    message.trim_ascii() == expected
}

/// The fields wsbench put in a publish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fields {
    topic: u64,
    publisher: u64,
    seq: u64,
    due_us: u64,
    sent_us: u64,
    measured: bool,
}

impl Fields {
    fn parse(message: &[u8]) -> Option<Fields> {
        let topic = number(after(message, br#""pub":"t"#)?)?.0;
        let (publisher, rest) = number(after(message, br#""id":""#)?)?;
        let seq = number(rest.strip_prefix(b"-")?)?.0;
        let due_us = number(after(message, br#""ts":"#)?)?.0;
        let sent_us = number(after(message, br#""sent":"#)?)?.0;
        let measured = after(message, br#""measured":"#)?.starts_with(b"true");
        Some(Fields { topic, publisher, seq, due_us, sent_us, measured })
    }
}

/// What follows the first `key` in `message`.
fn after<'a>(message: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let at = message.windows(key.len()).position(|window| window == key)?;
    Some(&message[at + key.len()..])
}

/// A decimal number at the start of `text`, and what follows it.
fn number(text: &[u8]) -> Option<(u64, &[u8])> {
    let digits = text.iter().take_while(|b| b.is_ascii_digit()).count();
    let value = std::str::from_utf8(&text[..digits]).ok()?.parse().ok()?;
    Some((value, &text[digits..]))
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
    fn a_publish_parses_back_into_its_fields() {
        let message = br#"{"pub":"t3","id":"12-4567","ts":1000,"sent":1040,"measured":true,"pad":"xx"}"#;
        let fields = Fields::parse(message).unwrap();
        assert_eq!(
            fields,
            Fields { topic: 3, publisher: 12, seq: 4567, due_us: 1000, sent_us: 1040, measured: true }
        );
        assert!(
            !Fields::parse(br#"{"pub":"t3","id":"12-4567","ts":1000,"sent":1,"measured":false}"#)
                .unwrap()
                .measured
        );
        assert_eq!(Fields::parse(br#"{"pub":"t3","id":"x-1","ts":1,"sent":1,"measured":true}"#), None);
        assert_eq!(Fields::parse(b"hello"), None);
    }

    #[test]
    fn acknowledgements_name_the_topic() {
        assert!(is_ack(br#"{"subscribed":"t7"}"#, 7));
        assert!(!is_ack(br#"{"subscribed":"t7"}"#, 1));
        assert!(!is_ack(br#"{"sub":"t7"}"#, 7));
    }

    #[test]
    fn the_monotonic_clock_moves_with_instants() {
        let clock = MonoClock::new();
        let now = Instant::now();
        let later = now + Duration::from_millis(5);
        assert_eq!(clock.micros(later) - clock.micros(now), 5_000);
    }
}
