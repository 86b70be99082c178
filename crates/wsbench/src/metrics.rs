//! What a run measures, in a form that merges losslessly: HdrHistograms (µs, 3 significant
//! digits) that merge with `add`, counters that merge with `+=`, and one latency histogram
//! per wall-clock second. Each engine worker owns one [`Metrics`] and records without locks;
//! workers, shards and processes are combined with [`Metrics::merge`].

use std::collections::BTreeMap;
use std::ops::AddAssign;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Highest value a histogram tracks: one hour in microseconds.
pub const HISTOGRAM_MAX_US: u64 = 3_600_000_000;
pub const HISTOGRAM_SIGFIG: u8 = 3;

/// A latency histogram in microseconds.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HISTOGRAM_MAX_US, HISTOGRAM_SIGFIG).expect("valid histogram bounds")
}

/// Records a value, saturating at the histogram's maximum instead of failing.
pub fn record_us(histogram: &mut Histogram<u64>, micros: u64) {
    histogram.saturating_record(micros.max(1));
}

/// Counters of one run, by kind. Every field is a count of events.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    pub connections_attempted: u64,
    pub connections_established: u64,
    pub connect_timeouts: u64,
    pub connections_refused: u64,
    /// TCP connected but the TLS or WebSocket handshake failed (e.g. HTTP 4xx/5xx); the sum
    /// of `handshake_failures_by_cause`.
    pub handshake_failures: u64,
    /// `handshake_failures` by cause: `http_status_403`, `tls_unknown_ca`, `tls_not_tls`,
    /// `not_websocket`, `bad_accept`, `timeout`, `closed`.
    #[serde(default)]
    pub handshake_failures_by_cause: BTreeMap<String, u64>,
    /// What the server said, kept once per cause: the first line of the body of the first
    /// refused upgrade (`http_status_CODE` only).
    #[serde(default)]
    pub handshake_responses: BTreeMap<String, String>,
    /// Other connect errors (unreachable, out of source ports, …).
    pub connect_errors: u64,
    /// Server closed with a close frame, by close code (0 = close frame without a code).
    pub closed_by_server: BTreeMap<u16, u64>,
    /// Connection reset or ended without a close frame.
    pub resets: u64,
    /// The server broke RFC 6455 (masked frame, bad opcode, …).
    pub protocol_errors: u64,
    /// An echo that did not match what was sent.
    pub payload_mismatches: u64,
    pub messages_sent: u64,
    pub messages_received: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Messages sent but never answered when the run ended.
    pub messages_unanswered: u64,
    /// Messages answered during warm-up (not in the latency histogram).
    pub warmup_messages: u64,
    /// Connections reopened after the server closed or reset them (`--reconnect`).
    #[serde(default)]
    pub reconnections: u64,
    /// Established connections by the subprotocol the server chose (`--subprotocol`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub subprotocols_chosen: BTreeMap<String, u64>,
    /// Established `wss://` connections by negotiated TLS version and cipher suite, e.g.
    /// `TLSv1.3 TLS13_AES_256_GCM_SHA384`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tls_negotiated: BTreeMap<String, u64>,
    /// Message payload bytes, before compression and framing (`bytes_*` are what went over
    /// the socket); with permessage-deflate their ratio is the compression ratio.
    #[serde(default)]
    pub payload_bytes_sent: u64,
    #[serde(default)]
    pub payload_bytes_received: u64,
    /// Echoes that arrived compressed (RSV1 set on their first frame).
    #[serde(default)]
    pub compressed_messages_received: u64,
    /// Connections by the permessage-deflate answer the server gave them.
    #[serde(default)]
    pub compression_negotiated: BTreeMap<String, u64>,
    /// churn: connections that went through handshake, their K echoes and a close the
    /// server answered (one cycle each).
    #[serde(default)]
    pub churn_cycles: u64,
    /// churn: our close frames the server answered with its own, and those it did not
    /// answer before the close timeout (or answered by dropping the connection).
    #[serde(default)]
    pub closes_answered: u64,
    #[serde(default)]
    pub closes_unanswered: u64,
    /// flow: replies that matched no expectation, by the step the connection was at; and
    /// expectations that timed out (late or lost replies), by step.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub flow_unmatched: BTreeMap<String, u64>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub flow_late: BTreeMap<String, u64>,
    /// pubsub: publishes, subscriptions and what each subscriber received.
    #[serde(default, skip_serializing_if = "PubSubCounters::is_empty")]
    pub pubsub: PubSubCounters,
}

/// pubsub: what the publishers sent and the subscribers received (issue 14). Only
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
    /// Messages that were no delivery of the subscriber's topic, or that reached a publisher.
    pub unexpected: u64,
    /// Subscriptions the server did not acknowledge (in time, or at all).
    pub subscribe_failures: u64,
    /// Workers whose end came while deliveries were still arriving (the drain ran out): what
    /// is missing is then undelivered when the run stopped, not known to be lost.
    #[serde(default)]
    pub cut_off: u64,
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
        self.unexpected += other.unexpected;
        self.subscribe_failures += other.subscribe_failures;
        self.cut_off += other.cut_off;
    }
}

impl Counters {
    /// Counts one failed handshake by `cause`, keeping `response` (the first line of what
    /// the server said) if it is the first one for that cause.
    pub fn count_handshake_failure(&mut self, cause: &str, response: Option<&str>) {
        self.handshake_failures += 1;
        match self.handshake_failures_by_cause.get_mut(cause) {
            Some(count) => *count += 1,
            None => {
                self.handshake_failures_by_cause.insert(cause.to_owned(), 1);
            }
        }
        if let Some(response) = response
            && !self.handshake_responses.contains_key(cause)
        {
            self.handshake_responses.insert(cause.to_owned(), response.to_owned());
        }
    }

    /// Connections that were attempted and never established.
    pub fn connections_failed(&self) -> u64 {
        self.connections_attempted.saturating_sub(self.connections_established)
    }

    /// Server-initiated disconnections of any kind.
    pub fn disconnections(&self) -> u64 {
        self.closed_by_server.values().sum::<u64>() + self.resets
    }

    /// Every non-zero error counter by kind, e.g. `connect_timeout` or `closed_1001`.
    pub fn errors(&self) -> BTreeMap<String, u64> {
        let mut errors = BTreeMap::new();
        let mut put = |kind: &str, count: u64| {
            if count > 0 {
                errors.insert(kind.to_owned(), count);
            }
        };
        put("connect_timeout", self.connect_timeouts);
        put("connection_refused", self.connections_refused);
        for (cause, count) in &self.handshake_failures_by_cause {
            put(&format!("handshake_{cause}"), *count);
        }
        // Results written before causes were kept have only the total.
        let by_cause: u64 = self.handshake_failures_by_cause.values().sum();
        put("handshake_failed", self.handshake_failures.saturating_sub(by_cause));
        put("connect_error", self.connect_errors);
        put("reset", self.resets);
        put("protocol_error", self.protocol_errors);
        put("payload_mismatch", self.payload_mismatches);
        put("close_unanswered", self.closes_unanswered);
        put("flow_unmatched", self.flow_unmatched.values().sum());
        put("flow_late", self.flow_late.values().sum());
        match self.pubsub.cut_off {
            0 => put("pubsub_lost", self.pubsub.lost()),
            _ => put("pubsub_undelivered", self.pubsub.lost()),
        }
        put("pubsub_duplicate", self.pubsub.duplicates);
        put("pubsub_unexpected", self.pubsub.unexpected);
        put("pubsub_subscribe_failed", self.pubsub.subscribe_failures);
        for (code, count) in &self.closed_by_server {
            put(&format!("closed_{code}"), *count);
        }
        errors
    }
}

impl AddAssign<&Counters> for Counters {
    fn add_assign(&mut self, other: &Counters) {
        self.connections_attempted += other.connections_attempted;
        self.connections_established += other.connections_established;
        self.connect_timeouts += other.connect_timeouts;
        self.connections_refused += other.connections_refused;
        self.handshake_failures += other.handshake_failures;
        for (cause, count) in &other.handshake_failures_by_cause {
            *self.handshake_failures_by_cause.entry(cause.clone()).or_default() += count;
        }
        for (cause, response) in &other.handshake_responses {
            self.handshake_responses.entry(cause.clone()).or_insert_with(|| response.clone());
        }
        self.connect_errors += other.connect_errors;
        for (code, count) in &other.closed_by_server {
            *self.closed_by_server.entry(*code).or_default() += count;
        }
        self.resets += other.resets;
        self.protocol_errors += other.protocol_errors;
        self.payload_mismatches += other.payload_mismatches;
        self.messages_sent += other.messages_sent;
        self.messages_received += other.messages_received;
        self.bytes_sent += other.bytes_sent;
        self.bytes_received += other.bytes_received;
        self.messages_unanswered += other.messages_unanswered;
        self.warmup_messages += other.warmup_messages;
        self.reconnections += other.reconnections;
        for (protocol, count) in &other.subprotocols_chosen {
            *self.subprotocols_chosen.entry(protocol.clone()).or_default() += count;
        }
        for (session, count) in &other.tls_negotiated {
            *self.tls_negotiated.entry(session.clone()).or_default() += count;
        }
        self.payload_bytes_sent += other.payload_bytes_sent;
        self.payload_bytes_received += other.payload_bytes_received;
        self.compressed_messages_received += other.compressed_messages_received;
        for (answer, count) in &other.compression_negotiated {
            *self.compression_negotiated.entry(answer.clone()).or_default() += count;
        }
        self.churn_cycles += other.churn_cycles;
        self.closes_answered += other.closes_answered;
        self.closes_unanswered += other.closes_unanswered;
        for (step, count) in &other.flow_unmatched {
            *self.flow_unmatched.entry(step.clone()).or_default() += count;
        }
        for (step, count) in &other.flow_late {
            *self.flow_late.entry(step.clone()).or_default() += count;
        }
        self.pubsub += &other.pubsub;
    }
}

/// One wall-clock second of the run.
#[derive(Debug, Clone)]
pub struct Interval {
    /// Seconds since the run started.
    pub second: u64,
    /// Round trips completed in this second (including warm-up ones).
    pub echoes: u64,
    pub connections_open: u64,
    pub latency: Histogram<u64>,
}

/// Everything one worker (or a merge of several) measured.
#[derive(Debug, Clone)]
pub struct Metrics {
    /// Round-trip latency after warm-up, corrected for coordinated omission in open-loop
    /// runs (measured from the intended send time).
    pub latency: Histogram<u64>,
    /// Round-trip latency from the actual send time.
    pub latency_uncorrected: Histogram<u64>,
    /// TCP connect start → WebSocket handshake done.
    pub connect: Histogram<u64>,
    /// Open-loop only: how late the client sent (actual − intended).
    pub send_lag: Histogram<u64>,
    pub counters: Counters,
    pub intervals: Vec<Interval>,
    /// flow: latency by step name (send → matched reply, or expect start → regex match).
    pub flow_steps: BTreeMap<String, Histogram<u64>>,
    /// pubsub: per measured publish, its first subscriber's receipt → its last one's (µs).
    pub pubsub_spread: Histogram<u64>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            latency: new_histogram(),
            latency_uncorrected: new_histogram(),
            connect: new_histogram(),
            send_lag: new_histogram(),
            counters: Counters::default(),
            intervals: Vec::new(),
            flow_steps: BTreeMap::new(),
            pubsub_spread: new_histogram(),
        }
    }
}

impl Metrics {
    /// The interval for `second`, created (with any gap before it) on first use.
    pub fn interval(&mut self, second: u64) -> &mut Interval {
        let index = second as usize;
        while self.intervals.len() <= index {
            let second = self.intervals.len() as u64;
            self.intervals.push(Interval {
                second,
                echoes: 0,
                connections_open: 0,
                latency: new_histogram(),
            });
        }
        &mut self.intervals[index]
    }

    /// Adds `other` into `self` losslessly; intervals are aligned on their second.
    pub fn merge(&mut self, other: &Metrics) {
        self.latency.add(&other.latency).expect("histograms share bounds");
        self.latency_uncorrected.add(&other.latency_uncorrected).expect("histograms share bounds");
        self.connect.add(&other.connect).expect("histograms share bounds");
        self.send_lag.add(&other.send_lag).expect("histograms share bounds");
        self.counters += &other.counters;
        for interval in &other.intervals {
            let mine = self.interval(interval.second);
            mine.echoes += interval.echoes;
            mine.connections_open += interval.connections_open;
            mine.latency.add(&interval.latency).expect("histograms share bounds");
        }
        for (step, histogram) in &other.flow_steps {
            self.flow_step(step).add(histogram).expect("histograms share bounds");
        }
        self.pubsub_spread.add(&other.pubsub_spread).expect("histograms share bounds");
    }

    /// The latency histogram of flow step `name`, made on first use.
    pub fn flow_step(&mut self, name: &str) -> &mut Histogram<u64> {
        if !self.flow_steps.contains_key(name) {
            self.flow_steps.insert(name.to_owned(), new_histogram());
        }
        self.flow_steps.get_mut(name).expect("just inserted")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_histogram_equals_one_fed_all_samples() {
        let mut all = Metrics::default();
        let mut parts = [Metrics::default(), Metrics::default(), Metrics::default()];
        for i in 0..30_000u64 {
            let value = (i * 7919) % 250_000 + 1;
            record_us(&mut all.latency, value);
            record_us(&mut parts[(i % 3) as usize].latency, value);
        }
        let mut merged = Metrics::default();
        for part in &parts {
            merged.merge(part);
        }
        assert_eq!(merged.latency.len(), all.latency.len());
        for q in [0.5, 0.9, 0.99, 0.999, 1.0] {
            assert_eq!(merged.latency.value_at_quantile(q), all.latency.value_at_quantile(q));
        }
    }

    #[test]
    fn counters_sum_and_intervals_align() {
        let mut a = Metrics::default();
        a.counters.messages_sent = 5;
        a.counters.closed_by_server.insert(1001, 2);
        a.interval(2).echoes = 10;
        let mut b = Metrics::default();
        b.counters.messages_sent = 7;
        b.counters.closed_by_server.insert(1001, 1);
        b.counters.resets = 4;
        b.interval(0).echoes = 3;
        b.interval(2).echoes = 1;
        a.merge(&b);
        assert_eq!(a.counters.messages_sent, 12);
        assert_eq!(a.counters.disconnections(), 7);
        assert_eq!(a.counters.errors().get("closed_1001"), Some(&3));
        assert_eq!(a.intervals.iter().map(|i| i.echoes).collect::<Vec<_>>(), [3, 0, 11]);
    }

    #[test]
    fn handshake_failures_merge_by_cause_and_keep_the_first_response() {
        let mut a = Metrics::default();
        a.counters.count_handshake_failure("http_status_403", Some("no token"));
        a.counters.count_handshake_failure("http_status_403", Some("later"));
        let mut b = Metrics::default();
        b.counters.count_handshake_failure("http_status_403", Some("other shard"));
        b.counters.count_handshake_failure("timeout", None);
        a.merge(&b);
        let counters = &a.counters;
        assert_eq!(counters.handshake_failures, 4);
        assert_eq!(counters.handshake_failures_by_cause.values().sum::<u64>(), 4);
        assert_eq!(counters.handshake_responses.get("http_status_403").map(String::as_str), Some("no token"));
        let errors = counters.errors();
        assert_eq!(errors.get("handshake_http_status_403"), Some(&3));
        assert_eq!(errors.get("handshake_timeout"), Some(&1));
        assert_eq!(errors.get("handshake_failed"), None, "the total is not counted twice");
    }

    #[test]
    fn negotiated_subprotocols_and_tls_sessions_sum_by_value() {
        let mut a = Metrics::default();
        a.counters.subprotocols_chosen.insert("chat".into(), 2);
        a.counters.tls_negotiated.insert("TLSv1.3 TLS13_AES_128_GCM_SHA256".into(), 2);
        let mut b = Metrics::default();
        b.counters.subprotocols_chosen.insert("chat".into(), 3);
        b.counters.tls_negotiated.insert("TLSv1.2 TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256".into(), 1);
        a.merge(&b);
        assert_eq!(a.counters.subprotocols_chosen.get("chat"), Some(&5));
        assert_eq!(a.counters.tls_negotiated.len(), 2);
        assert!(a.counters.errors().is_empty(), "negotiated values are not errors");
    }

    #[test]
    fn a_total_without_causes_still_shows_as_handshake_failed() {
        let counters = Counters { handshake_failures: 2, ..Counters::default() };
        assert_eq!(counters.errors().get("handshake_failed"), Some(&2));
    }
}
