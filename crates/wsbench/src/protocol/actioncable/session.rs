//! One connection's side of Action Cable: the welcome awaited, the subscriptions it makes
//! (the echo connection's own, a subscriber's topic, a publisher's, a stream's), each found
//! again by its identifier when the server confirms, rejects or delivers on it, actions
//! performed, the server's pings watched for. A subscription neither confirmed nor rejected
//! within the open timeout is given up by name (Action Cable says nothing of a channel class
//! it does not know). Nothing here allocates per message once the buffers have grown, but a
//! subscription's record (one per subscribed topic) and a publish waiting for its
//! subscription (a bounded few).

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use wsbench_appproto::actioncable::{self as cable, PING_INTERVAL_SECS, ServerMessage};
use wsbench_appproto::json::{unescape_into, write_str, write_u64};

use super::{MAX_PING_DELAY, TOPIC_PLACEHOLDER};
use crate::protocol::error_text::ErrorText;
use crate::protocol::template::Template;
use crate::protocol::{Incoming, Outbox, Session, Sink, Use};

/// Publishes a publisher keeps while its subscription awaits the server's confirmation;
/// beyond, each is given up as an error (`actioncable_unconfirmed`).
pub const MAX_WAITING: usize = 1024;

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

/// What a subscription is for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Purpose {
    /// The echo connection's own.
    Echo,
    /// A subscriber's, to the workload's topic (`tK`).
    Topic(String),
    /// A publisher's, to perform its publishes on topic `tK`.
    Publishing(String),
    Stream,
}

/// Whether the server has answered a subscription.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    /// Awaited until this time.
    Awaited(Instant),
    Confirmed,
    Rejected,
}

#[derive(Debug)]
struct Subscription {
    identifier: String,
    purpose: Purpose,
    answer: Answer,
    /// A publisher's publishes (their action's data) waiting for the confirmation.
    waiting: VecDeque<Vec<u8>>,
    /// A publisher's publishes not sent since the last report: past [`MAX_WAITING`], or
    /// after the subscription was rejected or given up.
    dropped: u64,
}

/// The subscriptions of a connection and how their identifiers are made: `--channel`, and
/// `--channel-params` split at its `{topic}`.
#[derive(Debug)]
pub(super) struct Subscriptions {
    channel: String,
    params: Template,
    echo_name: String,
    list: Vec<Subscription>,
}

impl Subscriptions {
    pub(super) fn new(channel: String, params: &str, echo_name: String) -> Subscriptions {
        let params = Template::split(params, &[TOPIC_PLACEHOLDER]);
        Subscriptions { channel, params, echo_name, list: Vec::new() }
    }

    /// The identifier of the subscription whose `{topic}` is `topic`.
    fn identifier(&self, topic: &str) -> String {
        let mut params = Vec::new();
        self.params.write(&mut params, |_, out| out.extend_from_slice(topic.as_bytes()));
        let mut identifier = Vec::new();
        cable::write_identifier(&mut identifier, &self.channel, &String::from_utf8_lossy(&params));
        String::from_utf8(identifier).unwrap_or_default()
    }

    /// Records a subscription for `purpose`, answer awaited until `deadline`; returns its
    /// identifier.
    fn add(&mut self, purpose: Purpose, deadline: Instant) -> &str {
        let topic = match &purpose {
            Purpose::Echo => self.echo_name.clone(),
            Purpose::Topic(name) | Purpose::Publishing(name) => {
                name.strip_prefix('t').unwrap_or(name).to_owned()
            }
            Purpose::Stream => STREAM_TOPIC.to_owned(),
        };
        let identifier = self.identifier(&topic);
        let answer = Answer::Awaited(deadline);
        self.list.push(Subscription { identifier, purpose, answer, waiting: VecDeque::new(), dropped: 0 });
        self.list.last().map_or("", |subscription| subscription.identifier.as_str())
    }

    fn find(&self, identifier: &str) -> Option<usize> {
        self.list.iter().position(|subscription| subscription.identifier == identifier)
    }

    fn publishing(&self, topic: &str) -> Option<usize> {
        self.list.iter().position(|s| matches!(&s.purpose, Purpose::Publishing(t) if t == topic))
    }

    fn echo(&self) -> Option<usize> {
        self.list.iter().position(|subscription| subscription.purpose == Purpose::Echo)
    }
}

#[derive(Debug)]
pub(super) struct ActionCableSession {
    usage: Use,
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
        subscriptions: Subscriptions,
        action: String,
        open_timeout: Duration,
    ) -> ActionCableSession {
        ActionCableSession {
            usage,
            subscriptions,
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
        let deadline = self.now + self.open_timeout;
        let identifier = self.subscriptions.add(purpose, deadline);
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
        self.error(sink, format_args!("actioncable_disconnect_{word}"), true, |detail| {
            let again = if reconnect { "it may reconnect" } else { "it may not reconnect" };
            let _ = write!(detail, "the server disconnected the client: {reason:?} ({again})");
        });
    }

    fn on_confirmed(&mut self, identifier: &str, sink: &mut dyn Sink) {
        let Some(at) = self.subscriptions.find(identifier) else { return sink.incoming(Incoming::Other) };
        let subscription = &mut self.subscriptions.list[at];
        if subscription.answer == Answer::Confirmed {
            return sink.incoming(Incoming::Other);
        }
        subscription.answer = Answer::Confirmed;
        match subscription.purpose.clone() {
            Purpose::Echo => {
                self.phase = Phase::Ready;
                sink.incoming(Incoming::Ready);
            }
            Purpose::Topic(topic) => sink.incoming(Incoming::Subscribed { topic: &topic }),
            Purpose::Stream => sink.incoming(Incoming::Subscribed { topic: identifier }),
            Purpose::Publishing(_) => {
                let subscription = &mut self.subscriptions.list[at];
                for data in std::mem::take(&mut subscription.waiting) {
                    Self::perform(&mut self.encoding, &subscription.identifier, &data, sink);
                }
                sink.incoming(Incoming::Other);
            }
        }
    }

    fn on_rejected(&mut self, identifier: &str, sink: &mut dyn Sink) {
        let Some(at) = self.subscriptions.find(identifier) else { return sink.incoming(Incoming::Other) };
        let subscription = &mut self.subscriptions.list[at];
        subscription.answer = Answer::Rejected;
        let unsent = std::mem::take(&mut subscription.waiting).len();
        let (fatal, what) = match subscription.purpose {
            Purpose::Echo => (true, "the echo's"),
            Purpose::Stream => (true, "the stream's"),
            Purpose::Topic(_) => (false, "a subscriber's"),
            Purpose::Publishing(_) => (false, "a publisher's"),
        };
        self.error(sink, format_args!("actioncable_rejected"), fatal, |detail| {
            let _ = write!(detail, "the channel rejected {what} subscription {identifier}");
            if unsent > 0 {
                let _ = write!(detail, " ({unsent} publishes waiting for it not sent)");
            }
        });
    }

    /// What a channel transmitted, or a stream broadcast, on subscription `identifier`.
    fn on_transmitted(&mut self, identifier: &str, message: &str, sink: &mut dyn Sink) {
        let purpose = self.subscriptions.find(identifier).map(|at| &self.subscriptions.list[at].purpose);
        match purpose {
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

    /// An error counted by `cause`; a `fatal` one closes the connection.
    fn error(
        &mut self,
        sink: &mut dyn Sink,
        cause: std::fmt::Arguments<'_>,
        fatal: bool,
        detail: impl FnOnce(&mut String),
    ) {
        if fatal {
            self.phase = Phase::Over;
        }
        self.words.report(sink, cause, None, fatal, detail);
    }

    /// Subscriptions whose answer did not come by their deadline, each an error (fatal for
    /// the echo's and the stream's); a publisher's waiting publishes go with it.
    fn give_up_unanswered(&mut self, now: Instant, sink: &mut dyn Sink) {
        let timeout = self.open_timeout.as_secs_f64();
        let mut at = 0;
        while at < self.subscriptions.list.len() {
            let subscription = &mut self.subscriptions.list[at];
            at += 1;
            if !matches!(subscription.answer, Answer::Awaited(due) if due <= now) {
                continue;
            }
            subscription.answer = Answer::Rejected;
            let unsent = std::mem::take(&mut subscription.waiting).len();
            let fatal = matches!(subscription.purpose, Purpose::Echo | Purpose::Stream);
            let identifier = subscription.identifier.clone();
            self.error(sink, format_args!("actioncable_unconfirmed"), fatal, |detail| {
                let _ = write!(
                    detail,
                    "the server neither confirmed nor rejected the subscription {identifier} within {timeout} s \
                     (is its channel a class of the application?); {unsent} publishes waiting for it not sent"
                );
            });
            if fatal {
                return;
            }
        }
    }
}

impl ActionCableSession {
    /// Each publish not sent since the last report, an error by why: its subscription was
    /// rejected or given up, or too many wait for its confirmation.
    fn report_dropped(&mut self, sink: &mut dyn Sink) {
        for at in 0..self.subscriptions.list.len() {
            let subscription = &mut self.subscriptions.list[at];
            let dropped = std::mem::take(&mut subscription.dropped);
            if dropped == 0 || self.phase == Phase::Over {
                continue;
            }
            let rejected = subscription.answer == Answer::Rejected;
            let identifier = subscription.identifier.clone();
            for _ in 0..dropped {
                let cause = if rejected { "actioncable_rejected" } else { "actioncable_unconfirmed" };
                self.error(sink, format_args!("{cause}"), false, |detail| {
                    let why = match rejected {
                        true => "its subscription was rejected or never answered".to_owned(),
                        false => format!(
                            "{MAX_WAITING} publishes already wait for its subscription's confirmation"
                        ),
                    };
                    let _ = write!(detail, "a publish on {identifier} not sent: {why}");
                });
            }
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
        let Some(echo) = self.subscriptions.echo().filter(|_| self.phase == Phase::Ready) else { return };
        self.fields.clear();
        self.fields.extend_from_slice(b"\"seq\":");
        write_u64(&mut self.fields, seq);
        self.fields.extend_from_slice(b",\"payload\":");
        write_str(&mut self.fields, &String::from_utf8_lossy(payload));
        self.write_data();
        let identifier = &self.subscriptions.list[echo].identifier;
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
        let at = match self.subscriptions.publishing(topic) {
            Some(at) => at,
            None => {
                self.subscribe_for(Purpose::Publishing(topic.to_owned()), out);
                self.subscriptions.list.len() - 1
            }
        };
        let subscription = &mut self.subscriptions.list[at];
        match subscription.answer {
            Answer::Confirmed => Self::perform(&mut self.encoding, &subscription.identifier, &self.data, out),
            Answer::Awaited(_) if subscription.waiting.len() < MAX_WAITING => {
                subscription.waiting.push_back(self.data.clone())
            }
            // Each an error at the next message or timer (`report_dropped`).
            Answer::Awaited(_) | Answer::Rejected => subscription.dropped += 1,
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
        self.report_dropped(sink);
    }

    fn next_timer(&self) -> Option<Instant> {
        if !matches!(self.phase, Phase::Subscribing | Phase::Ready) {
            return None;
        }
        let awaited = self.subscriptions.list.iter().filter_map(|subscription| match subscription.answer {
            Answer::Awaited(due) => Some(due),
            _ => None,
        });
        awaited.chain(self.silence_due).min()
    }

    /// A subscription unanswered too long is given up; a server silent for longer than its
    /// pings allow ends the connection, as Rails' client gives it up.
    fn on_timer(&mut self, now: Instant, sink: &mut dyn Sink) {
        self.now = now;
        if !matches!(self.phase, Phase::Subscribing | Phase::Ready) {
            return;
        }
        self.give_up_unanswered(now, sink);
        self.report_dropped(sink);
        if self.phase == Phase::Over || self.silence_due.is_none_or(|due| due > now) {
            return;
        }
        self.error(sink, format_args!("actioncable_no_ping"), true, |detail| {
            let _ = write!(
                detail,
                "the server sent nothing for {} s, its ping interval and {} s (is it overloaded?)",
                silence_allowed().as_secs(),
                MAX_PING_DELAY.as_secs()
            );
        });
    }

    fn close(&mut self, _out: &mut dyn Outbox) {
        self.phase = Phase::Over;
    }
}
