//! One connection's side of Action Cable: the welcome awaited, the subscriptions it makes
//! (the echo connection's own, a subscriber's topic, a publisher's, a stream's), each found
//! again by its identifier when the server confirms, rejects or delivers on it, actions
//! performed, the server's pings watched for. A subscription neither confirmed nor rejected
//! within the open timeout is given up by name (Action Cable says nothing of a channel class
//! it does not know). Nothing here allocates per message once the buffers have grown, but a
//! subscription's record (one per subscribed topic) and a publish waiting for its
//! subscription (a bounded few).

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use wsbench_appproto::actioncable::{self as cable, PING_INTERVAL_SECS, ServerMessage};
use wsbench_appproto::json::{unescape_into, write_str, write_u64};

use super::{MAX_PING_DELAY, TOPIC_PLACEHOLDER};
use crate::protocol::error_text::ErrorText;
use crate::protocol::subscriptions::{LapseCauses, Purpose, Subscriptions};
use crate::protocol::template::Template;
use crate::protocol::{Incoming, Outbox, Session, Sink, Use};

/// How Action Cable's subscription lapses are counted.
const LAPSES: LapseCauses = LapseCauses {
    unconfirmed: "actioncable_unconfirmed",
    refused: "actioncable_rejected",
    crowded: "actioncable_unconfirmed",
    hint: "is its channel a class of the application?",
};

/// What `{topic}` stands for in a stream's parameters.
const STREAM_TOPIC: &str = "0";

/// Where the connection is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// The server's welcome awaited.
    Welcoming,
    /// Echo: the subscription to its own parameters sent, its confirmation awaited.
    Subscribing,
    Ready,
    /// Refused, broken or disconnected: nothing more is read or sent.
    Over,
}

/// How a connection's identifiers are made: `--channel`, and `--channel-params` split at
/// its `{topic}`.
#[derive(Debug)]
pub(super) struct Identifiers {
    channel: String,
    params: Template,
    echo_name: String,
}

impl Identifiers {
    pub(super) fn new(channel: String, params: &str, echo_name: String) -> Identifiers {
        Identifiers { channel, params: Template::split(params, &[TOPIC_PLACEHOLDER]), echo_name }
    }

    /// The identifier of the subscription for `purpose`.
    fn of(&self, purpose: &Purpose) -> String {
        let topic = match purpose {
            Purpose::Echo => self.echo_name.as_str(),
            Purpose::Stream => STREAM_TOPIC,
            other => other.topic_number().unwrap_or_default(),
        };
        let mut params = Vec::new();
        self.params.write(&mut params, |_, out| out.extend_from_slice(topic.as_bytes()));
        let mut identifier = Vec::new();
        cable::write_identifier(&mut identifier, &self.channel, &String::from_utf8_lossy(&params));
        String::from_utf8(identifier).unwrap_or_default()
    }
}

#[derive(Debug)]
pub(super) struct ActionCableSession {
    usage: Use,
    identifiers: Identifiers,
    subscriptions: Subscriptions,
    action: String,
    phase: Phase,
    /// The last time the session was handed (a message, a timer): when a subscription sent
    /// now was asked for.
    now: Instant,
    /// How long a subscription may wait for its answer.
    open_timeout: Duration,
    /// When the server's silence becomes too long (after the welcome).
    silence_due: Option<Instant>,
    /// The command being written, an action's data, its fields, a reply's payload decoded
    /// (kept for their capacity), and the errors' words.
    encoding: Vec<u8>,
    data: Vec<u8>,
    fields: Vec<u8>,
    decoded: Vec<u8>,
    words: ErrorText,
}

impl ActionCableSession {
    pub(super) fn new(
        usage: Use,
        identifiers: Identifiers,
        action: String,
        open_timeout: Duration,
    ) -> ActionCableSession {
        ActionCableSession {
            usage,
            identifiers,
            subscriptions: Subscriptions::default(),
            action,
            phase: Phase::Welcoming,
            now: Instant::now(),
            open_timeout,
            silence_due: None,
            encoding: Vec::new(),
            data: Vec::new(),
            fields: Vec::new(),
            decoded: Vec::new(),
            words: ErrorText::default(),
        }
    }

    /// Subscribes for `purpose`, its answer due within the open timeout.
    fn subscribe_for(&mut self, purpose: Purpose, out: &mut dyn Outbox) {
        let identifier = self.identifiers.of(&purpose);
        self.send_subscribe(&identifier, out);
        self.subscriptions.add(identifier, purpose, self.now + self.open_timeout);
    }

    fn send_subscribe(&mut self, identifier: &str, out: &mut dyn Outbox) {
        self.encoding.clear();
        cable::encode_subscribe(&mut self.encoding, identifier);
        out.text(&self.encoding);
    }

    /// The action's data with `fields` into `self.data`.
    fn write_data(&mut self) {
        self.data.clear();
        let fields = String::from_utf8_lossy(&self.fields);
        cable::write_action(&mut self.data, &self.action, &fields);
    }

    /// Performs the action whose data is `data` on subscription `identifier`.
    fn perform(encoding: &mut Vec<u8>, identifier: &str, data: &[u8], out: &mut dyn Outbox) {
        encoding.clear();
        cable::encode_message(encoding, identifier, &String::from_utf8_lossy(data));
        out.text(encoding);
    }

    fn on_message(&mut self, message: &[u8], now: Instant, sink: &mut dyn Sink) {
        let decoded = match cable::decode(message) {
            Ok(decoded) => decoded,
            Err(error) => return self.malformed(&error.to_string(), message, sink),
        };
        if self.usage == Use::Messages && self.phase == Phase::Ready {
            return self.for_flow(decoded, message, sink);
        }
        match decoded {
            ServerMessage::Welcome => self.on_welcome(now, sink),
            ServerMessage::Ping | ServerMessage::Unknown { .. } => sink.incoming(Incoming::Other),
            ServerMessage::Disconnect { reason, reconnect } => self.on_disconnect(&reason, reconnect, sink),
            ServerMessage::Confirmed { identifier } => self.on_confirmed(&identifier, sink),
            ServerMessage::Rejected { identifier } => self.on_rejected(&identifier, sink),
            ServerMessage::Message { identifier, message } => self.on_transmitted(&identifier, message, sink),
        }
    }

    /// A flow's message once the welcome came: every one but a ping is the flow's, a
    /// rejection an error reply, a disconnect the end of the connection.
    fn for_flow(&mut self, decoded: ServerMessage<'_>, message: &[u8], sink: &mut dyn Sink) {
        match decoded {
            ServerMessage::Ping => sink.incoming(Incoming::Other),
            ServerMessage::Disconnect { reason, reconnect } => self.on_disconnect(&reason, reconnect, sink),
            ServerMessage::Rejected { identifier } => {
                let detail = format!("the channel rejected the subscription {identifier}");
                let error = Some(("actioncable_rejected", detail.as_str()));
                sink.incoming(Incoming::Message { payload: message, error });
            }
            _ => sink.incoming(Incoming::Message { payload: message, error: None }),
        }
    }

    fn on_welcome(&mut self, now: Instant, sink: &mut dyn Sink) {
        if self.phase != Phase::Welcoming {
            return sink.incoming(Incoming::Other);
        }
        self.silence_due = Some(now + silence_allowed());
        if self.usage == Use::Requests {
            self.phase = Phase::Subscribing;
            return self.subscribe_for(Purpose::Echo, sink);
        }
        self.phase = Phase::Ready;
        sink.incoming(Incoming::Ready);
    }

    fn on_disconnect(&mut self, reason: &str, reconnect: bool, sink: &mut dyn Sink) {
        let word: String = reason
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' })
            .take(40)
            .collect();
        let word = if word.is_empty() { "unknown".to_owned() } else { word };
        self.words.report_in(
            &mut self.phase,
            Phase::Over,
            sink,
            format_args!("actioncable_disconnect_{word}"),
            true,
            |detail| {
                let again = if reconnect { "it may reconnect" } else { "it may not reconnect" };
                let _ = write!(detail, "the server disconnected the client: {reason:?} ({again})");
            },
        );
    }

    fn on_confirmed(&mut self, identifier: &str, sink: &mut dyn Sink) {
        let Some((purpose, waited)) = self.subscriptions.confirm(identifier) else {
            return sink.incoming(Incoming::Other);
        };
        match purpose {
            Purpose::Echo => {
                self.phase = Phase::Ready;
                sink.incoming(Incoming::Ready);
            }
            Purpose::Topic(topic) => sink.incoming(Incoming::Subscribed { topic: &topic }),
            Purpose::Stream => sink.incoming(Incoming::Subscribed { topic: identifier }),
            Purpose::Publishing(_) => {
                for data in waited {
                    Self::perform(&mut self.encoding, identifier, &data, sink);
                }
                sink.incoming(Incoming::Other);
            }
        }
    }

    fn on_rejected(&mut self, identifier: &str, sink: &mut dyn Sink) {
        let Some((purpose, unsent)) = self.subscriptions.refuse(identifier) else {
            return sink.incoming(Incoming::Other);
        };
        self.words.report_in(
            &mut self.phase,
            Phase::Over,
            sink,
            format_args!("actioncable_rejected"),
            purpose.is_vital(),
            |detail| {
                let _ = write!(detail, "the channel rejected {} subscription {identifier}", purpose.whose());
                if unsent > 0 {
                    let _ = write!(detail, " ({unsent} publishes waiting for it not sent)");
                }
            },
        );
    }

    /// What a channel transmitted, or a stream broadcast, on subscription `identifier`.
    fn on_transmitted(&mut self, identifier: &str, message: &str, sink: &mut dyn Sink) {
        match self.subscriptions.purpose(identifier) {
            Some(Purpose::Echo) => {
                let (seq, payload) = cable::action_fields(message);
                let payload = match payload {
                    Some(raw) if unescape_into(raw.as_bytes(), &mut self.decoded) => &self.decoded[..],
                    Some(raw) => raw.as_bytes(),
                    None => message.as_bytes(),
                };
                sink.incoming(Incoming::Reply { seq, payload });
            }
            Some(Purpose::Topic(topic)) => {
                sink.incoming(Incoming::Delivery { topic, payload: message.as_bytes() })
            }
            Some(Purpose::Stream) => {
                sink.incoming(Incoming::Delivery { topic: "", payload: message.as_bytes() })
            }
            Some(Purpose::Publishing(_)) | None => sink.incoming(Incoming::Other),
        }
    }

    /// A message that is no Action Cable message: counted with the start of what came;
    /// before the session is ready the server is no Action Cable server and the connection
    /// cannot go on.
    fn malformed(&mut self, why: &str, message: &[u8], sink: &mut dyn Sink) {
        let fatal = self.phase != Phase::Ready;
        if fatal {
            self.phase = Phase::Over;
        }
        self.words.malformed(sink, "actioncable_malformed", why, message, fatal);
    }
}

impl ActionCableSession {
    /// Subscriptions unanswered too long and publishes not sent, each an error.
    fn lapses(&mut self, now: Instant, sink: &mut dyn Sink) {
        let words = &mut self.words;
        if self.phase != Phase::Over
            && self.subscriptions.report_lapses(now, self.open_timeout, &LAPSES, words, sink)
        {
            self.phase = Phase::Over;
        }
    }
}

/// How long the server may stay silent: its ping interval and [`MAX_PING_DELAY`].
fn silence_allowed() -> Duration {
    Duration::from_secs(PING_INTERVAL_SECS) + MAX_PING_DELAY
}

impl Session for ActionCableSession {
    fn open(&mut self, now: Instant, _out: &mut dyn Outbox) {
        self.now = now;
    }

    fn ready(&self) -> bool {
        self.phase == Phase::Ready
    }

    fn request(&mut self, seq: u64, payload: &[u8], out: &mut dyn Outbox) {
        if self.phase != Phase::Ready {
            return;
        }
        self.fields.clear();
        self.fields.extend_from_slice(b"\"seq\":");
        write_u64(&mut self.fields, seq);
        self.fields.extend_from_slice(b",\"payload\":");
        write_str(&mut self.fields, &String::from_utf8_lossy(payload));
        self.write_data();
        let Some(identifier) = self.subscriptions.name_of(&Purpose::Echo) else { return };
        Self::perform(&mut self.encoding, identifier, &self.data, out);
    }

    fn subscribe(&mut self, topic: &str, out: &mut dyn Outbox) {
        if self.phase == Phase::Ready {
            self.subscribe_for(Purpose::Topic(topic.to_owned()), out);
        }
    }

    fn subscribe_stream(&mut self, out: &mut dyn Outbox) {
        if self.phase == Phase::Ready {
            self.subscribe_for(Purpose::Stream, out);
        }
    }

    /// The scenario's payload is a JSON object: the action's `payload` as it is.
    fn publish(&mut self, topic: &str, payload: &[u8], out: &mut dyn Outbox) {
        if self.phase != Phase::Ready {
            return;
        }
        self.fields.clear();
        self.fields.extend_from_slice(b"\"payload\":");
        self.fields.extend_from_slice(payload);
        self.write_data();
        let (identifiers, deadline) = (&self.identifiers, self.now + self.open_timeout);
        let mut new = None;
        let subscribe = || {
            let identifier = identifiers.of(&Purpose::Publishing(topic.to_owned()));
            new = Some(identifier.clone());
            (identifier, deadline)
        };
        if let Some(identifier) = self.subscriptions.publish(topic, &self.data, subscribe) {
            Self::perform(&mut self.encoding, identifier, &self.data, out);
        }
        if let Some(identifier) = new {
            self.send_subscribe(&identifier, out);
        }
    }

    fn receive(&mut self, message: &[u8], binary: bool, now: Instant, sink: &mut dyn Sink) {
        self.now = now;
        if self.phase == Phase::Over {
            return;
        }
        if binary {
            return self.malformed("a binary message (Action Cable's JSON protocol is text)", message, sink);
        }
        if self.phase != Phase::Welcoming {
            self.silence_due = Some(now + silence_allowed());
        }
        self.on_message(message, now, sink);
        self.lapses(now, sink);
    }

    fn next_timer(&self) -> Option<Instant> {
        if !matches!(self.phase, Phase::Subscribing | Phase::Ready) {
            return None;
        }
        self.subscriptions.next_deadline().into_iter().chain(self.silence_due).min()
    }

    /// A subscription unanswered too long is given up; a server silent for longer than its
    /// pings allow ends the connection, as Rails' client gives it up.
    fn on_timer(&mut self, now: Instant, sink: &mut dyn Sink) {
        self.now = now;
        if !matches!(self.phase, Phase::Subscribing | Phase::Ready) {
            return;
        }
        self.lapses(now, sink);
        if self.phase == Phase::Over || self.silence_due.is_none_or(|due| due > now) {
            return;
        }
        self.words.report_in(
            &mut self.phase,
            Phase::Over,
            sink,
            format_args!("actioncable_no_ping"),
            true,
            |detail| {
                let _ = write!(
                    detail,
                    "the server sent nothing for {} s, its ping interval and {} s (is it overloaded?)",
                    silence_allowed().as_secs(),
                    MAX_PING_DELAY.as_secs()
                );
            },
        );
    }

    fn close(&mut self, _out: &mut dyn Outbox) {
        self.phase = Phase::Over;
    }
}
