//! One connection's side of a SignalR hub: the handshake sent and its answer awaited, echo
//! invocations numbered by their request, a subscriber's join invocations found again by
//! their invocation id (`join-tK`) when they complete, publishes (`pN`) whose completions
//! count only when they carry an error, the hub's invocations of the client method
//! delivered, pings sent after silence and the server's silence watched. Nothing here
//! allocates per message once the buffers have grown, but a subscription's record (one per
//! subscribed topic).

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use wsbench_appproto::json::{unescape_into, write_str};
use wsbench_appproto::signalr::msgpack::{self as pack, Argument};
use wsbench_appproto::signalr::{self as hub, HubMessage};

use super::{KEEP_ALIVE_SECS, SERVER_TIMEOUT_SECS};
use crate::protocol::error_text::ErrorText;
use crate::protocol::subscriptions::{LapseCauses, Purpose, Subscriptions};
use crate::protocol::{Incoming, Outbox, Session, Sink, Use};

/// How a subscriber's lapsed joins are counted.
const LAPSES: LapseCauses = LapseCauses {
    unconfirmed: "signalr_join_unanswered",
    refused: "signalr_completion_error",
    crowded: "signalr_join_unanswered",
    hint: "does the hub have the join method?",
};

/// Where the connection is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// The handshake sent, its answer awaited.
    Handshaking,
    Ready,
    /// Refused, broken or closed: nothing more is read or sent.
    Over,
}

/// The hub protocol spoken after the handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Codec {
    /// JSON, text frames, each message ended by the record separator.
    Json,
    /// MessagePack, binary frames, each message after its VarInt length (`pack.rs`).
    MessagePack,
}

/// A completion's result as it came: raw JSON, or a raw MessagePack value.
#[derive(Debug, Clone, Copy)]
enum Raw<'a> {
    Json(&'a str),
    Pack(&'a [u8]),
}

/// The hub and client methods the load uses.
#[derive(Debug)]
pub(super) struct Methods {
    pub(super) echo: String,
    pub(super) join: String,
    pub(super) publish: String,
    pub(super) client: String,
    /// `--stream-method` and its arguments (a JSON array, filled).
    pub(super) stream: Option<(String, Vec<u8>)>,
}

/// The invocation id of a subscriber's stream.
const STREAM_ID: &str = "s1";

#[derive(Debug)]
pub(super) struct SignalRSession {
    usage: Use,
    codec: Codec,
    /// Echo payloads are binary (MessagePack's bin).
    binary: bool,
    methods: Methods,
    subscriptions: Subscriptions,
    phase: Phase,
    /// The last time the session was handed (a message, a timer).
    now: Instant,
    open_timeout: Duration,
    /// When the client pings if it sent nothing before, and when the server's silence is too long.
    ping_due: Instant,
    silence_due: Instant,
    /// Publishes sent (their invocation ids).
    publishes: u64,
    /// The stream invoked and not ended (completed or cancelled).
    streaming: bool,
    /// The message being written, an invocation id, an argument, a reply decoded (kept for their capacity),
    /// and the errors' words.
    encoding: Vec<u8>,
    id: String,
    argument: Vec<u8>,
    decoded: Vec<u8>,
    /// A MessagePack message's body while it is written.
    scratch: Vec<u8>,
    words: ErrorText,
}

impl SignalRSession {
    pub(super) fn new(
        usage: Use,
        codec: Codec,
        binary: bool,
        methods: Methods,
        open_timeout: Duration,
    ) -> SignalRSession {
        let now = Instant::now();
        SignalRSession {
            usage,
            codec,
            binary,
            methods,
            subscriptions: Subscriptions::default(),
            phase: Phase::Handshaking,
            now,
            open_timeout,
            ping_due: now + keep_alive(),
            silence_due: now + server_timeout(),
            publishes: 0,
            streaming: false,
            encoding: Vec::new(),
            id: String::new(),
            argument: Vec::new(),
            decoded: Vec::new(),
            scratch: Vec::new(),
            words: ErrorText::default(),
        }
    }

    /// Sends what `self.encoding` holds, as text for JSON and binary for MessagePack; the
    /// client's keep-alive starts again.
    fn send(&mut self, out: &mut dyn Outbox) {
        match self.codec {
            Codec::Json => out.text(&self.encoding),
            Codec::MessagePack => out.binary(&self.encoding),
        }
        self.ping_due = self.now + keep_alive();
    }

    /// Invokes `method` with `arguments` (JSON), wanting the completion `id`.
    fn invoke(&mut self, id: &str, method: Which, arguments: &[&[u8]], out: &mut dyn Outbox) {
        self.encoding.clear();
        hub::encode_invocation(&mut self.encoding, Some(id), method.of(&self.methods), arguments);
        self.send(out);
    }

    /// Whether the hub's invocation of `target` is a delivery.
    fn delivers(&self, target: &str) -> bool {
        let delivered = match self.usage {
            Use::PubSub => true,
            Use::Stream => self.methods.stream.is_none(),
            _ => false,
        };
        delivered && target.eq_ignore_ascii_case(&self.methods.client)
    }

    fn on_record(&mut self, record: &[u8], sink: &mut dyn Sink) {
        if self.phase == Phase::Handshaking {
            return self.on_handshake(record, sink);
        }
        match hub::decode(record) {
            Err(error) => self.malformed(&error.to_string(), record, sink),
            Ok(HubMessage::Completion { invocation_id, result, error }) => {
                self.on_completion(&invocation_id, result.map(Raw::Json), error.as_deref(), sink)
            }
            Ok(HubMessage::Invocation { target, arguments, .. }) => {
                if self.delivers(&target) {
                    sink.incoming(Incoming::Delivery { topic: "", payload: arguments.as_bytes() });
                } else {
                    sink.incoming(Incoming::Other);
                }
            }
            Ok(HubMessage::StreamItem { invocation_id, item })
                if self.streaming && invocation_id == STREAM_ID =>
            {
                sink.incoming(Incoming::Delivery { topic: "", payload: item.as_bytes() })
            }
            Ok(HubMessage::Close { error, allow_reconnect }) => {
                self.on_close(error.as_deref(), allow_reconnect, sink)
            }
            Ok(HubMessage::Ping | HubMessage::StreamItem { .. } | HubMessage::Other { .. }) => {
                sink.incoming(Incoming::Other)
            }
        }
    }

    fn on_handshake(&mut self, record: &[u8], sink: &mut dyn Sink) {
        match hub::decode_handshake(record) {
            Ok(None) => {
                self.phase = Phase::Ready;
                sink.incoming(Incoming::Ready);
            }
            Ok(Some(error)) => self.words.report_in(
                &mut self.phase,
                Phase::Over,
                sink,
                format_args!("signalr_handshake_error"),
                true,
                |detail| {
                    let _ = write!(detail, "the hub refused the JSON protocol's handshake: {error:?}");
                },
            ),
            Err(error) => self.malformed(&format!("the handshake's answer: {error}"), record, sink),
        }
    }

    fn on_completion(&mut self, id: &str, result: Option<Raw<'_>>, error: Option<&str>, sink: &mut dyn Sink) {
        if self.streaming && id == STREAM_ID {
            return self.stream_ended(error, sink);
        }
        if let Some(seq) = id.parse::<u64>().ok().filter(|_| self.usage == Use::Requests) {
            if let Some(error) = error {
                return self.completion_error(Some(seq), id, error, sink);
            }
            self.decode_result(result);
            return sink.incoming(Incoming::Reply { seq: Some(seq), payload: &self.decoded });
        }
        if id.starts_with('p') {
            return match error {
                Some(error) => self.completion_error(None, id, error, sink),
                None => sink.incoming(Incoming::Other),
            };
        }
        match error {
            None => match self.subscriptions.confirm(id) {
                Some((Purpose::Topic(topic), _)) => sink.incoming(Incoming::Subscribed { topic: &topic }),
                _ => sink.incoming(Incoming::Other),
            },
            Some(error) => match self.subscriptions.refuse(id) {
                Some(_) => self.completion_error(None, id, error, sink),
                None => sink.incoming(Incoming::Other),
            },
        }
    }

    /// An echo's result into `self.decoded`: a string's (or MessagePack binary's) bytes,
    /// anything else as its JSON text; nothing for no result.
    fn decode_result(&mut self, result: Option<Raw<'_>>) {
        self.decoded.clear();
        match result {
            None => {}
            Some(Raw::Json(raw)) if !unescape_into(raw.as_bytes(), &mut self.decoded) => {
                self.decoded.clear();
                self.decoded.extend_from_slice(raw.as_bytes());
            }
            Some(Raw::Json(_)) => {}
            Some(Raw::Pack(raw)) => match pack::as_bytes(raw) {
                Some(bytes) => self.decoded.extend_from_slice(bytes),
                None => {
                    if pack::to_json(raw, &mut self.decoded).is_err() {
                        self.decoded.clear();
                    }
                }
            },
        }
    }

    /// The hub completed the stream: with an error, counted; else it has no more items.
    fn stream_ended(&mut self, error: Option<&str>, sink: &mut dyn Sink) {
        self.streaming = false;
        let Some(error) = error else { return sink.incoming(Incoming::Other) };
        self.words.report(sink, format_args!("signalr_stream_error"), None, false, |detail| {
            let _ = write!(detail, "the hub ended the stream with an error: {error:?}");
        });
    }

    fn completion_error(&mut self, seq: Option<u64>, id: &str, error: &str, sink: &mut dyn Sink) {
        self.words.report(sink, format_args!("signalr_completion_error"), seq, false, |detail| {
            let _ = write!(detail, "the hub completed invocation {id} with an error: {error:?}");
        });
    }

    fn on_close(&mut self, error: Option<&str>, allow_reconnect: bool, sink: &mut dyn Sink) {
        let cause = if error.is_some() { "signalr_close_error" } else { "signalr_closed" };
        self.words.report_in(&mut self.phase, Phase::Over, sink, format_args!("{cause}"), true, |detail| {
            let again = if allow_reconnect { "it may reconnect" } else { "it may not reconnect" };
            match error {
                Some(error) => {
                    let _ =
                        write!(detail, "the hub closed the connection with an error: {error:?} ({again})");
                }
                None => {
                    let _ = write!(detail, "the hub closed the connection ({again})");
                }
            }
        });
    }

    /// A record that is no hub message: counted with the start of what came; before the
    /// handshake is answered the server is no SignalR hub and the connection cannot go on.
    fn malformed(&mut self, why: &str, message: &[u8], sink: &mut dyn Sink) {
        let fatal = self.phase != Phase::Ready;
        if fatal {
            self.phase = Phase::Over;
        }
        self.words.malformed(sink, "signalr_malformed", why, message, fatal);
    }

    /// Joins unanswered too long, each an error.
    fn lapses(&mut self, now: Instant, sink: &mut dyn Sink) {
        let words = &mut self.words;
        if self.phase != Phase::Over
            && self.subscriptions.report_lapses(now, self.open_timeout, &LAPSES, words, sink)
        {
            self.phase = Phase::Over;
        }
    }
}

mod packed;

/// Which of the hub methods an invocation calls.
#[derive(Debug, Clone, Copy)]
enum Which {
    Echo,
    Join,
    Publish,
}

impl Which {
    /// The hub method's name.
    fn of(self, methods: &Methods) -> &str {
        match self {
            Which::Echo => &methods.echo,
            Which::Join => &methods.join,
            Which::Publish => &methods.publish,
        }
    }
}

fn keep_alive() -> Duration {
    Duration::from_secs(KEEP_ALIVE_SECS)
}

fn server_timeout() -> Duration {
    Duration::from_secs(SERVER_TIMEOUT_SECS)
}

impl Session for SignalRSession {
    fn open(&mut self, now: Instant, out: &mut dyn Outbox) {
        self.now = now;
        self.silence_due = now + server_timeout();
        self.encoding.clear();
        match self.codec {
            Codec::Json => hub::encode_handshake(&mut self.encoding),
            Codec::MessagePack => pack::encode_handshake(&mut self.encoding),
        }
        self.send(out);
    }

    fn ready(&self) -> bool {
        self.phase == Phase::Ready
    }

    /// The payload is the invocation's one argument, a JSON string.
    fn request(&mut self, seq: u64, payload: &[u8], out: &mut dyn Outbox) {
        if self.phase != Phase::Ready {
            return;
        }
        let mut id = std::mem::take(&mut self.id);
        id.clear();
        let _ = write!(id, "{seq}");
        if self.codec == Codec::MessagePack {
            let argument = match std::str::from_utf8(payload) {
                Ok(text) if !self.binary => Argument::Str(text),
                _ => Argument::Bin(payload),
            };
            self.invoke_packed(Some(&id), Which::Echo, &[argument], out);
            self.id = id;
            return;
        }
        let mut argument = std::mem::take(&mut self.argument);
        argument.clear();
        write_str(&mut argument, &String::from_utf8_lossy(payload));
        self.invoke(&id, Which::Echo, &[&argument], out);
        (self.id, self.argument) = (id, argument);
    }

    /// Invokes `--stream-method` as a stream invocation; nothing without one.
    fn subscribe_stream(&mut self, out: &mut dyn Outbox) {
        let Some((method, arguments)) = self.methods.stream.as_ref().filter(|_| self.phase == Phase::Ready)
        else {
            return;
        };
        self.encoding.clear();
        match self.codec {
            Codec::Json => hub::encode_stream_invocation(&mut self.encoding, STREAM_ID, method, arguments),
            Codec::MessagePack => {
                let values = serde_json::from_slice::<serde_json::Value>(arguments).unwrap_or_default();
                let items = values.as_array().map(Vec::as_slice).unwrap_or_default();
                let arguments: Vec<Argument<'_>> = items.iter().map(Argument::Json).collect();
                pack::encode_invocation(
                    &mut self.encoding,
                    &mut self.scratch,
                    4,
                    Some(STREAM_ID),
                    method,
                    &arguments,
                );
            }
        }
        self.streaming = true;
        self.send(out);
    }

    fn subscribe(&mut self, topic: &str, out: &mut dyn Outbox) {
        if self.phase != Phase::Ready {
            return;
        }
        let id = format!("join-{topic}");
        if self.codec == Codec::MessagePack {
            self.invoke_packed(Some(&id), Which::Join, &[Argument::Str(topic)], out);
        } else {
            let mut argument = std::mem::take(&mut self.argument);
            argument.clear();
            write_str(&mut argument, topic);
            self.invoke(&id, Which::Join, &[&argument], out);
            self.argument = argument;
        }
        self.subscriptions.add(id, Purpose::Topic(topic.to_owned()), self.now + self.open_timeout);
    }

    /// The scenario's payload is a JSON object: the second argument as it is.
    fn publish(&mut self, topic: &str, payload: &[u8], out: &mut dyn Outbox) {
        if self.phase != Phase::Ready {
            return;
        }
        self.publishes += 1;
        let mut id = std::mem::take(&mut self.id);
        id.clear();
        let _ = write!(id, "p{}", self.publishes);
        if self.codec == Codec::MessagePack {
            // The payload's JSON object as a MessagePack map, as an application sends it.
            let value = serde_json::from_slice::<serde_json::Value>(payload);
            let text = String::from_utf8_lossy(payload);
            let message = value.as_ref().map_or(Argument::Str(&text), Argument::Json);
            self.invoke_packed(Some(&id), Which::Publish, &[Argument::Str(topic), message], out);
            self.id = id;
            return;
        }
        let mut argument = std::mem::take(&mut self.argument);
        argument.clear();
        write_str(&mut argument, topic);
        self.invoke(&id, Which::Publish, &[&argument, payload], out);
        (self.id, self.argument) = (id, argument);
    }

    fn receive(&mut self, message: &[u8], binary: bool, now: Instant, sink: &mut dyn Sink) {
        self.now = now;
        if self.phase == Phase::Over {
            return;
        }
        self.silence_due = now + server_timeout();
        if self.codec == Codec::MessagePack {
            self.receive_packed(message, binary, sink);
            return self.lapses(now, sink);
        }
        if binary {
            let why = "a binary message (the JSON hub protocol is text; the official clients refuse it)";
            return self.malformed(why, message, sink);
        }
        for record in hub::records(message) {
            if self.phase == Phase::Over {
                break;
            }
            match record {
                Ok(record) => self.on_record(record, sink),
                Err(error) => self.malformed(&error.to_string(), message, sink),
            }
        }
        self.lapses(now, sink);
    }

    fn next_timer(&self) -> Option<Instant> {
        if self.phase == Phase::Over {
            return None;
        }
        let heartbeat = self.ping_due.min(self.silence_due);
        Some(self.subscriptions.next_deadline().map_or(heartbeat, |due| due.min(heartbeat)))
    }

    /// A ping after the client's silence; a join unanswered too long is given up; a server
    /// silent too long ends the connection, as the official clients give it up.
    fn on_timer(&mut self, now: Instant, sink: &mut dyn Sink) {
        self.now = now;
        if self.phase == Phase::Over {
            return;
        }
        self.lapses(now, sink);
        if self.phase == Phase::Over {
            return;
        }
        if self.silence_due <= now {
            return self.words.report_in(
                &mut self.phase,
                Phase::Over,
                sink,
                format_args!("signalr_server_timeout"),
                true,
                |detail| {
                    let _ = write!(detail, "the server sent nothing for {SERVER_TIMEOUT_SECS} s, not even a ping (is it overloaded?)");
                },
            );
        }
        if self.ping_due <= now {
            self.encoding.clear();
            match self.codec {
                Codec::Json => hub::encode_ping(&mut self.encoding),
                Codec::MessagePack => pack::encode_ping(&mut self.encoding),
            }
            self.send(sink);
        }
    }

    /// A stream still running is cancelled, as the official clients cancel theirs.
    fn close(&mut self, out: &mut dyn Outbox) {
        if self.streaming && self.phase == Phase::Ready {
            self.streaming = false;
            self.encoding.clear();
            match self.codec {
                Codec::Json => hub::encode_cancel_invocation(&mut self.encoding, STREAM_ID),
                Codec::MessagePack => {
                    pack::encode_cancel_invocation(&mut self.encoding, &mut self.scratch, STREAM_ID)
                }
            }
            self.send(out);
        }
        self.phase = Phase::Over;
    }

    fn ended_while_opening(&mut self, close: Option<(u16, &str)>, sink: &mut dyn Sink) {
        if self.phase != Phase::Handshaking {
            return;
        }
        self.phase = Phase::Over;
        self.words.report(sink, format_args!("signalr_no_handshake"), None, true, |detail| {
            let _ = write!(detail, "the server ended the connection before answering the handshake");
            if let Some((code, reason)) = close {
                let _ = write!(detail, " (close {code} {reason:?})");
            }
            let _ = write!(detail, ": is the path a SignalR hub that accepts this client?");
        });
    }
}
