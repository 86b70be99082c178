//! The counters every run keeps, by kind: connections, handshakes by cause, disconnections by
//! close code, messages and bytes each way, and the error kinds they make. They merge with
//! `+=`; a scenario's own counters are its section's ([`super::Section`]).

use std::collections::BTreeMap;
use std::ops::AddAssign;

use serde::{Deserialize, Serialize};

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
    /// Connection attempts still opening when the run ended (an interrupted run, or a churn
    /// or reconnection cut off by the end): neither established nor failed, so no error.
    #[serde(default)]
    pub connects_unfinished: u64,
    /// Server closed with a close frame, by close code (0 = close frame without a code).
    pub closed_by_server: BTreeMap<u16, u64>,
    /// The reason the server gave with each close code, kept once per code (the first).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub close_reasons: BTreeMap<u16, String>,
    /// Connection reset or ended without a close frame.
    pub resets: u64,
    /// The server broke RFC 6455 (masked frame, bad opcode, …); the sum of
    /// `framing_errors_by_cause`.
    pub protocol_errors: u64,
    /// `protocol_errors` by cause: the close code wsbench failed the connection with and the
    /// rule the server broke (`protocol_error_1002_masked_server_frame`,
    /// `protocol_error_1009_message_too_big`, …), each its own error kind. What broke is
    /// kept once per cause in `protocol_error_details`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub framing_errors_by_cause: BTreeMap<String, u64>,
    /// The message protocol's errors, by cause (`jsonrpc_error_-32601`,
    /// `mqtt_connack_not_authorized`, `stomp_error`, `graphql_error`, …): each its own error
    /// kind. What the server said is kept once per cause.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub protocol_errors_by_cause: BTreeMap<String, u64>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub protocol_error_details: BTreeMap<String, String>,
    /// Open connections wsbench closed because an error of the message protocol was fatal
    /// (an MQTT DISCONNECT, a STOMP ERROR frame, …; the cause is counted in
    /// `protocol_errors_by_cause`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub closed_on_protocol_error: u64,
    /// An echo that did not match what was sent.
    pub payload_mismatches: u64,
    pub messages_sent: u64,
    pub messages_received: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Messages sent and never answered: when their connection went (the server closed or
    /// broke it: counted there) or when the run ended (`unanswered_at_end`); younger than the
    /// reply deadline (older ones are `reply_timeouts`).
    pub messages_unanswered: u64,
    /// Of `messages_unanswered`, those still awaited when the run's drain ran out: an error
    /// (`unanswered_at_end`), since a server that answers sends them within the drain.
    #[serde(default)]
    pub unanswered_at_end: u64,
    /// Messages due that the socket never took (queued, or held back by an open loop, when
    /// the run ended or the connection went): not in `messages_sent`.
    #[serde(default)]
    pub messages_unsent: u64,
    /// Requests never taken by the socket (queued, or held back by an open loop) and not
    /// given up, when their connection went or the run ended: of `messages_unsent`, those
    /// that were still requests awaited.
    #[serde(default)]
    pub unsent_requests: u64,
    /// Open loop: messages the schedule made due. Each ends in exactly one of: answered
    /// (`warmup_messages`, the measured round trips, `answered_after_window`),
    /// `requests_refused`, `reply_timeouts` (sent or not), `messages_unanswered`,
    /// `unsent_requests`.
    #[serde(default)]
    pub sends_due: u64,
    /// Exchanges completed after the measured window (replies the end of the run drained).
    #[serde(default)]
    pub answered_after_window: u64,
    /// Requests the server answered with an error reply (counted by its cause too).
    #[serde(default)]
    pub requests_refused: u64,
    /// Messages that answered no request in flight (an unsolicited message, or an echo of
    /// something never sent or already answered): an error, never a round trip.
    #[serde(default)]
    pub unexpected_messages: u64,
    /// Requests given up because no reply came within `--reply-timeout` of when they were
    /// due (sent, or held back unsent while the connection could take no more).
    #[serde(default)]
    pub reply_timeouts: u64,
    /// Of `reply_timeouts`, those held back unsent (an open loop whose connection could take
    /// no more) when their deadline passed.
    #[serde(default)]
    pub reply_timeouts_unsent: u64,
    /// Messages answered during warm-up (not in the latency histogram).
    pub warmup_messages: u64,
    /// Connections that completed at least one round trip in the measured window (the echo
    /// loop's): all of them, unless some sat idle or stalled while others were measured (a
    /// connection reopened by `--reconnect` counts again).
    #[serde(default)]
    pub connections_in_window: u64,
    /// Attempts to reopen a connection the server closed or reset (`--reconnect`), failed
    /// attempts while the server was down included.
    #[serde(default)]
    pub reconnections: u64,
    /// Connections lost (`--reconnect`) and not open again when the run ended: the server
    /// never took them back, or the policy gave them up (the error `not_reconnected`).
    #[serde(default)]
    pub not_reconnected: u64,
    /// Established connections by the subprotocol the server chose (`--subprotocol`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub subprotocols_chosen: BTreeMap<String, u64>,
    /// Established `wss://` connections by negotiated TLS version and cipher suite, e.g.
    /// `TLSv1.3 TLS13_AES_256_GCM_SHA384`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tls_negotiated: BTreeMap<String, u64>,
    /// `wss://`: TLS handshakes the connections completed, full and resumed as rustls told
    /// the client, with the client's CPU for each kind.
    #[serde(default, skip_serializing_if = "super::TlsHandshakes::is_empty")]
    pub tls_handshakes: super::TlsHandshakes,
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
    /// Close handshakes the client started before the run's end (a scenario that closes its
    /// connections as part of its load): those the server answered with its own close
    /// frame, and those it did not answer before the close timeout (or answered by dropping
    /// the connection).
    #[serde(default)]
    pub closes_answered: u64,
    #[serde(default)]
    pub closes_unanswered: u64,
    /// TCP connections that carried the WebSockets and connected (over HTTP/2, several
    /// WebSockets share one; over HTTP/1.1 each has its own).
    #[serde(default)]
    pub tcp_connections: u64,
    /// QUIC connections that carried the WebSockets and connected (HTTP/3: several share one).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub quic_connections: u64,
    /// Packets those QUIC connections sent, and of them the ones QUIC declared lost (and
    /// resent what they carried).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub quic_packets_sent: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub quic_packets_lost: u64,
    /// WebSockets a transport ended by cause, each its own error kind: `h2_rst_<code>` (the
    /// server reset the stream), `h2_goaway_<code>` (its GOAWAY ended the connection the
    /// stream rode on), `h2_io` (that connection broke).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub transport_errors_by_cause: BTreeMap<String, u64>,
    /// The scenario's own counters as the result file carries them beside these (e.g.
    /// `churn_cycles`, `pubsub`). Empty in the engine's metrics, whose scenario section
    /// keeps them typed ([`super::Section`]); filled when a result is written and read back.
    #[serde(flatten, default)]
    pub scenario: BTreeMap<String, serde_json::Value>,
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

    /// Counts one error of the message protocol by `cause`, keeping `detail` (what the
    /// server said, its first line) if it is the first for that cause. Past
    /// [`PROTOCOL_ERROR_CAUSES`] causes (a server can make up error codes without end) the
    /// rest are counted together as `protocol_error_other_causes`.
    pub fn count_protocol_error(&mut self, cause: &str, detail: &str) {
        let cause = match self.protocol_errors_by_cause.len() < PROTOCOL_ERROR_CAUSES
            || self.protocol_errors_by_cause.contains_key(cause)
        {
            true => cause,
            false => "protocol_error_other_causes",
        };
        match self.protocol_errors_by_cause.get_mut(cause) {
            Some(count) => *count += 1,
            None => {
                self.protocol_errors_by_cause.insert(cause.to_owned(), 1);
                let first_line = detail.lines().next().unwrap_or_default();
                let kept: String = first_line.chars().take(200).collect();
                self.protocol_error_details.insert(cause.to_owned(), kept);
            }
        }
    }

    /// Counts one violation of RFC 6455 by the server by `cause` (see
    /// [`Counters::framing_errors_by_cause`]), keeping `detail` (what broke, one line) if it
    /// is the first for that cause.
    pub fn count_framing_error(&mut self, cause: &str, detail: &str) {
        self.protocol_errors += 1;
        match self.framing_errors_by_cause.get_mut(cause) {
            Some(count) => *count += 1,
            None => {
                self.framing_errors_by_cause.insert(cause.to_owned(), 1);
            }
        }
        if !self.protocol_error_details.contains_key(cause) {
            self.protocol_error_details.insert(cause.to_owned(), detail.chars().take(200).collect());
        }
    }

    /// Connections that were attempted and never established, less the attempts the run's
    /// end cut off ([`Counters::connects_unfinished`]); while a run goes on, also those still
    /// connecting.
    pub fn connections_failed(&self) -> u64 {
        self.connections_attempted.saturating_sub(self.connections_established + self.connects_unfinished)
    }

    /// Connections that failed to open so far, by any cause (while a run goes on, attempted
    /// minus established also counts those still connecting).
    pub fn connect_failures(&self) -> u64 {
        self.connect_timeouts + self.connections_refused + self.handshake_failures + self.connect_errors
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
        for (cause, count) in &self.framing_errors_by_cause {
            put(cause, *count);
        }
        // Results written before causes were kept have only the total.
        let by_cause: u64 = self.framing_errors_by_cause.values().sum();
        put("protocol_error", self.protocol_errors.saturating_sub(by_cause));
        for (cause, count) in &self.protocol_errors_by_cause {
            put(cause, *count);
        }
        for (cause, count) in &self.transport_errors_by_cause {
            put(cause, *count);
        }
        put("payload_mismatch", self.payload_mismatches);
        put("unexpected", self.unexpected_messages);
        put("reply_timeout", self.reply_timeouts);
        put("unanswered_at_end", self.unanswered_at_end);
        put("close_unanswered", self.closes_unanswered);
        put("not_reconnected", self.not_reconnected);
        for (code, count) in &self.closed_by_server {
            put(&format!("closed_{code}"), *count);
        }
        errors
    }

    /// What the server said about error `kind` (one of [`Counters::errors`]), kept once:
    /// the refused upgrade's body, the close frame's reason, the protocol error's message.
    pub fn error_detail(&self, kind: &str) -> Option<&str> {
        let detail = match kind.strip_prefix("handshake_") {
            Some(cause) => self.handshake_responses.get(cause),
            None => match kind.strip_prefix("closed_").and_then(|code| code.parse::<u16>().ok()) {
                Some(code) => self.close_reasons.get(&code),
                None => self.protocol_error_details.get(kind),
            },
        };
        detail.map(String::as_str).filter(|detail| !detail.is_empty())
    }
}

/// For `skip_serializing_if`: a count of zero is left out of a file.
pub(crate) fn is_zero(count: &u64) -> bool {
    *count == 0
}

impl Counters {
    /// The counts of connections that failed to open or were lost (timeouts, refusals,
    /// handshake failures, resets, closes), as they are now: what a recovery's failures are
    /// measured from ([`Counters::take_failures_since`]).
    pub fn connection_failures(&self) -> Counters {
        Counters {
            connect_timeouts: self.connect_timeouts,
            connections_refused: self.connections_refused,
            handshake_failures: self.handshake_failures,
            handshake_failures_by_cause: self.handshake_failures_by_cause.clone(),
            connect_errors: self.connect_errors,
            resets: self.resets,
            closed_by_server: self.closed_by_server.clone(),
            transport_errors_by_cause: self.transport_errors_by_cause.clone(),
            ..Counters::default()
        }
    }

    /// The connection failures counted since `before` ([`Counters::connection_failures`]),
    /// taken out of these counters: by error kind.
    pub fn take_failures_since(&mut self, before: &Counters) -> BTreeMap<String, u64> {
        let sub = |now: &mut u64, then: u64| {
            let delta = now.saturating_sub(then);
            *now -= delta;
            delta
        };
        let sub_map = |now: &mut BTreeMap<String, u64>, then: &BTreeMap<String, u64>| {
            let mut delta = BTreeMap::new();
            for (key, count) in now.iter_mut() {
                let taken = count.saturating_sub(then.get(key).copied().unwrap_or(0));
                *count -= taken;
                delta.insert(key.clone(), taken);
            }
            now.retain(|_, count| *count > 0);
            delta
        };
        let mut closed = BTreeMap::new();
        for (code, count) in self.closed_by_server.iter_mut() {
            let taken = count.saturating_sub(before.closed_by_server.get(code).copied().unwrap_or(0));
            *count -= taken;
            closed.insert(*code, taken);
        }
        self.closed_by_server.retain(|_, count| *count > 0);
        let delta = Counters {
            connect_timeouts: sub(&mut self.connect_timeouts, before.connect_timeouts),
            connections_refused: sub(&mut self.connections_refused, before.connections_refused),
            handshake_failures: sub(&mut self.handshake_failures, before.handshake_failures),
            handshake_failures_by_cause: sub_map(
                &mut self.handshake_failures_by_cause,
                &before.handshake_failures_by_cause,
            ),
            connect_errors: sub(&mut self.connect_errors, before.connect_errors),
            resets: sub(&mut self.resets, before.resets),
            closed_by_server: closed,
            transport_errors_by_cause: sub_map(
                &mut self.transport_errors_by_cause,
                &before.transport_errors_by_cause,
            ),
            ..Counters::default()
        };
        delta.errors()
    }
}

/// The most protocol error causes one worker counts apart.
pub const PROTOCOL_ERROR_CAUSES: usize = 64;

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
        self.connects_unfinished += other.connects_unfinished;
        for (code, count) in &other.closed_by_server {
            *self.closed_by_server.entry(*code).or_default() += count;
        }
        self.resets += other.resets;
        self.protocol_errors += other.protocol_errors;
        for (cause, count) in &other.framing_errors_by_cause {
            *self.framing_errors_by_cause.entry(cause.clone()).or_default() += count;
        }
        for (cause, count) in &other.protocol_errors_by_cause {
            *self.protocol_errors_by_cause.entry(cause.clone()).or_default() += count;
        }
        self.closed_on_protocol_error += other.closed_on_protocol_error;
        for (cause, detail) in &other.protocol_error_details {
            self.protocol_error_details.entry(cause.clone()).or_insert_with(|| detail.clone());
        }
        for (code, reason) in &other.close_reasons {
            self.close_reasons.entry(*code).or_insert_with(|| reason.clone());
        }
        self.payload_mismatches += other.payload_mismatches;
        self.messages_sent += other.messages_sent;
        self.messages_received += other.messages_received;
        self.bytes_sent += other.bytes_sent;
        self.bytes_received += other.bytes_received;
        self.messages_unanswered += other.messages_unanswered;
        self.unanswered_at_end += other.unanswered_at_end;
        self.messages_unsent += other.messages_unsent;
        self.sends_due += other.sends_due;
        self.unsent_requests += other.unsent_requests;
        self.answered_after_window += other.answered_after_window;
        self.requests_refused += other.requests_refused;
        self.unexpected_messages += other.unexpected_messages;
        self.reply_timeouts += other.reply_timeouts;
        self.reply_timeouts_unsent += other.reply_timeouts_unsent;
        self.warmup_messages += other.warmup_messages;
        self.connections_in_window += other.connections_in_window;
        self.reconnections += other.reconnections;
        self.not_reconnected += other.not_reconnected;
        for (protocol, count) in &other.subprotocols_chosen {
            *self.subprotocols_chosen.entry(protocol.clone()).or_default() += count;
        }
        for (session, count) in &other.tls_negotiated {
            *self.tls_negotiated.entry(session.clone()).or_default() += count;
        }
        self.tls_handshakes += other.tls_handshakes;
        self.payload_bytes_sent += other.payload_bytes_sent;
        self.payload_bytes_received += other.payload_bytes_received;
        self.compressed_messages_received += other.compressed_messages_received;
        for (answer, count) in &other.compression_negotiated {
            *self.compression_negotiated.entry(answer.clone()).or_default() += count;
        }
        self.closes_answered += other.closes_answered;
        self.closes_unanswered += other.closes_unanswered;
        self.tcp_connections += other.tcp_connections;
        self.quic_connections += other.quic_connections;
        self.quic_packets_sent += other.quic_packets_sent;
        self.quic_packets_lost += other.quic_packets_lost;
        for (cause, count) in &other.transport_errors_by_cause {
            *self.transport_errors_by_cause.entry(cause.clone()).or_default() += count;
        }
    }
}
