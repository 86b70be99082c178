//! What a run measures, in a form that merges losslessly: HdrHistograms (µs, 3 significant
//! digits) that merge with `add`, counters that merge with `+=` ([`counters`]), the run's
//! timeline (counts and percentiles per wall-clock second, [`timeline`]: compact, so that
//! memory does not grow with the run's length), and the scenario's own measurements as one
//! [`Section`] that merges the same way. Each engine worker owns one [`Metrics`] and
//! records without locks; workers, shards and processes are combined with
//! [`Metrics::merge`]. Nothing here knows a scenario by name.

mod counters;
mod handshakes;
mod recovery;
mod section;
mod stages;
mod timeline;

use std::collections::BTreeMap;

use hdrhistogram::Histogram;

pub use counters::Counters;
pub(crate) use counters::is_zero;
pub use handshakes::TlsHandshakes;
pub use recovery::RecoveryTally;
pub use section::{Section, SectionHistograms};
pub use stages::{StageTally, add_second as add_stage_second};
pub use timeline::{Interval, TimelineSecond};

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

/// Everything one worker (or a merge of several) measured.
#[derive(Debug)]
pub struct Metrics {
    /// The latency of the scenario's exchanges after warm-up, corrected for coordinated
    /// omission in open-loop runs (measured from the intended send time).
    pub latency: Histogram<u64>,
    /// The same from the actual send time.
    pub latency_uncorrected: Histogram<u64>,
    /// TCP connect start → WebSocket handshake done.
    pub connect: Histogram<u64>,
    /// Open-loop only: how late the client sent (actual − intended).
    pub send_lag: Histogram<u64>,
    pub counters: Counters,
    /// One entry per wall-clock second, in order (filled by the engine's coordinator as
    /// every worker finishes a second; a worker's own metrics hold none).
    pub timeline: Vec<TimelineSecond>,
    /// The scenario's own measurements, when it keeps any.
    pub section: Option<Box<dyn Section>>,
    /// `--stages`: each stage's figures (filled by the engine's coordinator, like the
    /// timeline).
    pub stages: Vec<StageTally>,
    /// `--disrupt`: how the connections lost came back.
    pub recovery: RecoveryTally,
}

impl Clone for Metrics {
    fn clone(&self) -> Metrics {
        Metrics {
            latency: self.latency.clone(),
            latency_uncorrected: self.latency_uncorrected.clone(),
            connect: self.connect.clone(),
            send_lag: self.send_lag.clone(),
            counters: self.counters.clone(),
            timeline: self.timeline.clone(),
            section: self.section.as_ref().map(|section| section.boxed()),
            stages: self.stages.clone(),
            recovery: self.recovery.clone(),
        }
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            latency: new_histogram(),
            latency_uncorrected: new_histogram(),
            connect: new_histogram(),
            send_lag: new_histogram(),
            counters: Counters::default(),
            timeline: Vec::new(),
            section: None,
            stages: Vec::new(),
            recovery: RecoveryTally::default(),
        }
    }
}

impl Metrics {
    /// The timeline's entry for `second`, created (with any gap before it) on first use.
    pub fn second(&mut self, second: u64) -> &mut TimelineSecond {
        let index = second as usize;
        while self.timeline.len() <= index {
            let second = self.timeline.len() as u64;
            self.timeline.push(TimelineSecond { second, ..TimelineSecond::default() });
        }
        &mut self.timeline[index]
    }

    /// Adds `other` into `self`: the histograms and counters losslessly; the timelines
    /// aligned on their second ([`TimelineSecond::add`]).
    pub fn merge(&mut self, other: &Metrics) {
        self.latency.add(&other.latency).expect("histograms share bounds");
        self.latency_uncorrected.add(&other.latency_uncorrected).expect("histograms share bounds");
        self.connect.add(&other.connect).expect("histograms share bounds");
        self.send_lag.add(&other.send_lag).expect("histograms share bounds");
        self.counters += &other.counters;
        self.recovery.add(&other.recovery);
        for point in &other.timeline {
            self.second(point.second).add(point);
        }
        if self.stages.is_empty() {
            self.stages.clone_from(&other.stages);
        } else {
            self.stages.iter_mut().zip(&other.stages).for_each(|(mine, theirs)| mine.add(theirs));
        }
        match (&mut self.section, &other.section) {
            (Some(mine), Some(theirs)) => mine.merge(theirs.as_ref()),
            (None, Some(theirs)) => self.section = Some(theirs.boxed()),
            (_, None) => {}
        }
    }

    /// Every non-zero error count by kind: the common ones and the scenario's own.
    pub fn errors(&self) -> BTreeMap<String, u64> {
        let mut errors = self.counters.errors();
        if let Some(section) = &self.section {
            section.errors(&mut errors);
        }
        errors
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
    fn counters_sum_and_timelines_align() {
        let mut a = Metrics::default();
        a.counters.messages_sent = 5;
        a.counters.closed_by_server.insert(1001, 2);
        a.second(2).exchanges = 10;
        let mut b = Metrics::default();
        b.counters.messages_sent = 7;
        b.counters.closed_by_server.insert(1001, 1);
        b.counters.resets = 4;
        b.second(0).exchanges = 3;
        b.second(2).exchanges = 1;
        a.merge(&b);
        assert_eq!(a.counters.messages_sent, 12);
        assert_eq!(a.counters.disconnections(), 7);
        assert_eq!(a.counters.errors().get("closed_1001"), Some(&3));
        assert_eq!(a.timeline.iter().map(|i| i.exchanges).collect::<Vec<_>>(), [3, 0, 11]);
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
    fn framing_errors_count_by_cause_and_their_total_is_not_counted_twice() {
        let mut a = Metrics::default();
        a.counters.count_framing_error("protocol_error_1002_masked_server_frame", "server frame is masked");
        let mut b = Metrics::default();
        b.counters.count_framing_error("protocol_error_1002_masked_server_frame", "later words");
        b.counters.count_framing_error("protocol_error_1009_message_too_big", "message of 9 bytes …");
        a.merge(&b);
        let counters = &a.counters;
        assert_eq!(counters.protocol_errors, 3);
        let errors = counters.errors();
        assert_eq!(errors.get("protocol_error_1002_masked_server_frame"), Some(&2));
        assert_eq!(errors.get("protocol_error_1009_message_too_big"), Some(&1));
        assert_eq!(errors.get("protocol_error"), None, "the total is not counted twice");
        assert_eq!(
            counters.error_detail("protocol_error_1002_masked_server_frame"),
            Some("server frame is masked")
        );
        // A result written before causes were kept has the total alone, and still reads so.
        let old: Counters = serde_json::from_value(serde_json::json!({
            "connections_attempted": 1, "connections_established": 1, "connect_timeouts": 0,
            "connections_refused": 0, "handshake_failures": 0, "connect_errors": 0,
            "closed_by_server": {}, "resets": 0, "protocol_errors": 2, "payload_mismatches": 0,
            "messages_sent": 0, "messages_received": 0, "bytes_sent": 0, "bytes_received": 0,
            "messages_unanswered": 0, "warmup_messages": 0
        }))
        .unwrap();
        assert_eq!(old.errors().get("protocol_error"), Some(&2));
    }

    #[test]
    fn protocol_errors_count_by_a_bounded_set_of_causes_with_the_servers_words() {
        let mut counters = Counters::default();
        counters.count_protocol_error("jsonrpc_error_-32601", "Method not found\nstack…");
        counters.count_protocol_error("jsonrpc_error_-32601", "later words");
        for code in 0..100 {
            counters.count_protocol_error(&format!("jsonrpc_error_{code}"), "");
        }
        let errors = counters.errors();
        assert_eq!(errors.get("jsonrpc_error_-32601"), Some(&2));
        assert_eq!(counters.error_detail("jsonrpc_error_-32601"), Some("Method not found"));
        assert_eq!(counters.error_detail("jsonrpc_error_0"), None, "nothing said, nothing shown");
        assert_eq!(counters.protocol_errors_by_cause.len(), counters::PROTOCOL_ERROR_CAUSES + 1);
        assert_eq!(errors.get("protocol_error_other_causes"), Some(&(100 + 1 - 64)));
        counters.closed_by_server.insert(4406, 1);
        counters.close_reasons.insert(4406, "Subprotocol not acceptable".into());
        counters.count_handshake_failure("http_status_403", Some("no token"));
        assert_eq!(counters.error_detail("closed_4406"), Some("Subprotocol not acceptable"));
        assert_eq!(counters.error_detail("handshake_http_status_403"), Some("no token"));
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
