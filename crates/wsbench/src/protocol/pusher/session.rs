//! One connection's side of the Pusher protocol: the connection established and its socket
//! id kept, subscriptions signed and found again by their channel when the server answers
//! or delivers on them, echo pings and their pongs in order, client events published, the
//! server's pings answered and its silence watched with a ping of the session's own.
//! Nothing here allocates per message once the buffers have grown, but a subscription's
//! record (one per subscribed topic) and a publish waiting for its subscription.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use wsbench_appproto::json::unescape_into;
use wsbench_appproto::pusher::{self, ServerEvent};

use super::{PONG_TIMEOUT, is_signed};
use crate::protocol::error_text::ErrorText;
use crate::protocol::subscriptions::{LapseCauses, Purpose, Subscriptions};
use crate::protocol::{Incoming, Outbox, Session, Sink};

/// The longest silence before the session pings, whatever the server's activity timeout
/// (pusher-js's own).
const MAX_ACTIVITY: Duration = Duration::from_secs(120);

/// How Pusher's subscription lapses are counted.
const LAPSES: LapseCauses = LapseCauses {
    unconfirmed: "pusher_unconfirmed",
    refused: "pusher_not_published",
    crowded: "pusher_not_published",
    hint: "does the server know this app?",
};

/// Where the connection is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// `pusher:connection_established` awaited.
    Connecting,
    Ready,
    /// Refused, broken or disconnected: nothing more is read or sent.
    Over,
}

/// What the options name: the app, the channels, the client event, the presence member.
#[derive(Debug)]
pub(super) struct Names {
    pub key: String,
    pub secret: Option<String>,
    /// `--channel` around its `{topic}`.
    pub channel: (String, String),
    pub stream: String,
    pub client_event: String,
    pub user_id: String,
}

impl Names {
    /// The channel a subscription for `purpose` is to.
    fn channel_of(&self, purpose: &Purpose) -> String {
        match purpose {
            Purpose::Stream | Purpose::Echo => self.stream.clone(),
            other => {
                format!("{}{}{}", self.channel.0, other.topic_number().unwrap_or_default(), self.channel.1)
            }
        }
    }
}

#[derive(Debug)]
pub(super) struct PusherSession {
    names: Names,
    phase: Phase,
    socket_id: String,
    subscriptions: Subscriptions,
    /// Channels that could not be subscribed for want of the app's secret (reported at the
    /// next timer, at once).
    unsigned: Vec<String>,
    /// The last time the session was handed something: when a subscription sent now was asked.
    now: Instant,
    open_timeout: Duration,
    /// The pongs owed, oldest first: an echo request's (true) or the session's own ping's.
    pongs: VecDeque<bool>,
    /// The silence after which the session pings.
    activity: Duration,
    last_heard: Instant,
    /// When the session's own ping went, while its pong is owed.
    own_ping: Option<Instant>,
    /// The message being written, a delivery's data decoded (kept for their capacity), and
    /// the errors' words.
    encoding: Vec<u8>,
    decoded: Vec<u8>,
    words: ErrorText,
}

impl PusherSession {
    pub(super) fn new(names: Names, open_timeout: Duration) -> PusherSession {
        let now = Instant::now();
        PusherSession {
            names,
            phase: Phase::Connecting,
            socket_id: String::new(),
            subscriptions: Subscriptions::default(),
            unsigned: Vec::new(),
            now,
            open_timeout,
            pongs: VecDeque::new(),
            activity: MAX_ACTIVITY,
            last_heard: now,
            own_ping: None,
            encoding: Vec::new(),
            decoded: Vec::new(),
            words: ErrorText::default(),
        }
    }

    /// Sends the subscription to `channel`, signed when the channel is private or presence;
    /// false when it must be signed and no secret was given.
    fn send_subscribe(&mut self, channel: &str, out: &mut dyn Outbox) -> bool {
        let names = &self.names;
        let member = channel.starts_with("presence-").then(|| pusher::presence_member(&names.user_id));
        let auth = match (is_signed(channel), &names.secret) {
            (false, _) => None,
            (true, Some(secret)) => {
                Some(pusher::channel_auth(&names.key, secret, &self.socket_id, channel, member.as_deref()))
            }
            (true, None) => {
                self.unsigned.push(channel.to_owned());
                return false;
            }
        };
        self.encoding.clear();
        pusher::encode_subscribe(&mut self.encoding, channel, auth.as_deref(), member.as_deref());
        out.text(&self.encoding);
        true
    }

    /// Subscribes for `purpose`, its answer due within the open timeout.
    fn subscribe_for(&mut self, purpose: Purpose, out: &mut dyn Outbox) {
        let channel = self.names.channel_of(&purpose);
        if self.send_subscribe(&channel, out) {
            self.subscriptions.add(channel, purpose, self.now + self.open_timeout);
        }
    }

    fn send_client_event(
        encoding: &mut Vec<u8>,
        event: &str,
        channel: &str,
        data: &[u8],
        out: &mut dyn Outbox,
    ) {
        encoding.clear();
        pusher::encode_client_event(encoding, event, channel, &String::from_utf8_lossy(data));
        out.text(encoding);
    }

    fn on_event(&mut self, event: ServerEvent<'_>, sink: &mut dyn Sink) {
        match event {
            ServerEvent::Established { socket_id, activity_timeout } => {
                self.on_established(socket_id, activity_timeout, sink)
            }
            ServerEvent::Subscribed { channel } => self.on_subscribed(&channel, sink),
            ServerEvent::SubscriptionError { channel, status, error } => {
                self.on_refused(&channel, status, &error, sink)
            }
            ServerEvent::Error { code, message } => self.on_error(code, &message, sink),
            ServerEvent::Ping => {
                self.encoding.clear();
                pusher::encode_pong(&mut self.encoding);
                sink.text(&self.encoding);
                sink.incoming(Incoming::Other);
            }
            ServerEvent::Pong => match self.pongs.pop_front() {
                Some(true) => sink.incoming(Incoming::Reply { seq: None, payload: b"" }),
                Some(false) => {
                    self.own_ping = None;
                    sink.incoming(Incoming::Other);
                }
                None => sink.incoming(Incoming::Other),
            },
            ServerEvent::Event { event, channel, data } => {
                self.on_delivery(&event, channel.as_deref(), data, sink)
            }
        }
    }

    fn on_established(&mut self, socket_id: String, activity_timeout: Option<u64>, sink: &mut dyn Sink) {
        if self.phase != Phase::Connecting {
            return sink.incoming(Incoming::Other);
        }
        self.socket_id = socket_id;
        let server = activity_timeout.filter(|&seconds| seconds > 0).map(Duration::from_secs);
        self.activity = server.map_or(MAX_ACTIVITY, |server| server.min(MAX_ACTIVITY));
        self.phase = Phase::Ready;
        sink.incoming(Incoming::Ready);
    }

    fn on_subscribed(&mut self, channel: &str, sink: &mut dyn Sink) {
        let Some((purpose, waited)) = self.subscriptions.confirm(channel) else {
            return sink.incoming(Incoming::Other);
        };
        match purpose {
            Purpose::Topic(topic) => sink.incoming(Incoming::Subscribed { topic: &topic }),
            Purpose::Stream | Purpose::Echo => sink.incoming(Incoming::Subscribed { topic: channel }),
            Purpose::Publishing(_) => {
                for data in waited {
                    Self::send_client_event(
                        &mut self.encoding,
                        &self.names.client_event,
                        channel,
                        &data,
                        sink,
                    );
                }
                sink.incoming(Incoming::Other);
            }
        }
    }

    fn on_refused(&mut self, channel: &str, status: Option<u64>, error: &str, sink: &mut dyn Sink) {
        let (fatal, whose, unsent) = match self.subscriptions.refuse(channel) {
            Some((purpose, unsent)) => (purpose.is_vital(), purpose.whose(), unsent),
            None => (false, "a", 0),
        };
        let cause = match status {
            Some(status) => format!("pusher_subscription_error_{status}"),
            None => "pusher_subscription_error".to_owned(),
        };
        self.words.report_in(&mut self.phase, Phase::Over, sink, format_args!("{cause}"), fatal, |detail| {
            let _ = write!(detail, "the server refused {whose} subscription to {channel}: {error}");
            if unsent > 0 {
                let _ = write!(detail, " ({unsent} publishes waiting for it not sent)");
            }
        });
    }

    /// `pusher:error`: fatal for the connection's codes (4000–4299: the server closes it)
    /// and before the connection is established; a refused client event (4300 and up) not.
    fn on_error(&mut self, code: Option<u64>, message: &str, sink: &mut dyn Sink) {
        let fatal = self.phase != Phase::Ready || code.is_some_and(|code| (4000..4300).contains(&code));
        match code {
            Some(code) => self.words.report_in(
                &mut self.phase,
                Phase::Over,
                sink,
                format_args!("pusher_error_{code}"),
                fatal,
                |detail| {
                    let _ = write!(detail, "{message} (code {code})");
                },
            ),
            None => self.words.report_in(
                &mut self.phase,
                Phase::Over,
                sink,
                format_args!("pusher_error"),
                fatal,
                |detail| detail.push_str(message),
            ),
        }
    }

    /// An event on a channel: a delivery when the channel is a subscriber's or the stream's;
    /// its data as it came, or the text of a JSON string (what a server's HTTP API publishes).
    fn on_delivery(&mut self, event: &str, channel: Option<&str>, data: &str, sink: &mut dyn Sink) {
        let internal = event.starts_with("pusher:") || event.starts_with("pusher_internal:");
        let purpose = channel.filter(|_| !internal).and_then(|channel| self.subscriptions.purpose(channel));
        let payload = match unescape_into(data.as_bytes(), &mut self.decoded) {
            true => &self.decoded[..],
            false => data.as_bytes(),
        };
        match purpose {
            Some(Purpose::Topic(topic)) => sink.incoming(Incoming::Delivery { topic, payload }),
            Some(Purpose::Stream) => sink.incoming(Incoming::Delivery { topic: "", payload }),
            _ => sink.incoming(Incoming::Other),
        }
    }

    /// What went wrong out of sight since the last report: channels left unsigned,
    /// subscriptions never answered, publishes not sent.
    fn report(&mut self, now: Instant, sink: &mut dyn Sink) {
        if let Some(channel) = self.unsigned.first().cloned() {
            self.unsigned.clear();
            self.words.report_in(
                &mut self.phase,
                Phase::Over,
                sink,
                format_args!("pusher_no_secret"),
                true,
                |detail| {
                    let _ = write!(
                        detail,
                        "{channel} is signed with the app's secret: give --app-secret (or --app-secret-env)"
                    );
                },
            );
            return;
        }
        let words = &mut self.words;
        if self.subscriptions.report_lapses(now, self.open_timeout, &LAPSES, words, sink) {
            self.phase = Phase::Over;
        }
    }
}

impl Session for PusherSession {
    fn open(&mut self, now: Instant, _out: &mut dyn Outbox) {
        self.now = now;
        self.last_heard = now;
    }

    fn ready(&self) -> bool {
        self.phase == Phase::Ready
    }

    /// A ping: Pusher's one request a server answers.
    fn request(&mut self, _seq: u64, _payload: &[u8], out: &mut dyn Outbox) {
        if self.phase != Phase::Ready {
            return;
        }
        self.encoding.clear();
        pusher::encode_ping(&mut self.encoding);
        out.text(&self.encoding);
        self.pongs.push_back(true);
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

    /// The scenario's payload, a JSON object, is the client event's data as it is.
    fn publish(&mut self, topic: &str, payload: &[u8], out: &mut dyn Outbox) {
        if self.phase != Phase::Ready {
            return;
        }
        let channel = self.names.channel_of(&Purpose::Publishing(topic.to_owned()));
        let deadline = self.now + self.open_timeout;
        let mut new = false;
        let subscribe = || {
            new = true;
            (channel.clone(), deadline)
        };
        if let Some(channel) = self.subscriptions.publish(topic, payload, subscribe) {
            Self::send_client_event(&mut self.encoding, &self.names.client_event, channel, payload, out);
        }
        if new {
            self.send_subscribe(&channel, out);
        }
    }

    fn receive(&mut self, message: &[u8], binary: bool, now: Instant, sink: &mut dyn Sink) {
        self.now = now;
        if self.phase == Phase::Over {
            return;
        }
        self.last_heard = now;
        let fatal = self.phase != Phase::Ready;
        if binary {
            self.phase = if fatal { Phase::Over } else { self.phase };
            let why = "a binary message (Pusher's protocol is JSON text)";
            return self.words.malformed(sink, "pusher_malformed", why, message, fatal);
        }
        match pusher::decode(message) {
            Ok(event) => self.on_event(event, sink),
            Err(error) => {
                self.phase = if fatal { Phase::Over } else { self.phase };
                self.words.malformed(sink, "pusher_malformed", &error.to_string(), message, fatal);
            }
        }
        if self.phase != Phase::Over {
            self.report(now, sink);
        }
    }

    fn next_timer(&self) -> Option<Instant> {
        if self.phase != Phase::Ready {
            return None;
        }
        let unsigned = (!self.unsigned.is_empty()).then_some(self.now);
        let heartbeat = match self.own_ping {
            Some(sent) => sent + PONG_TIMEOUT,
            None => self.last_heard + self.activity,
        };
        [unsigned, self.subscriptions.next_deadline(), Some(heartbeat)].into_iter().flatten().min()
    }

    /// Reports what went wrong out of sight; after the server's activity timeout of
    /// silence the session pings, and a pong not back in time ends the connection.
    fn on_timer(&mut self, now: Instant, sink: &mut dyn Sink) {
        self.now = now;
        if self.phase != Phase::Ready {
            return;
        }
        self.report(now, sink);
        match self.own_ping {
            _ if self.phase != Phase::Ready => {}
            Some(sent) if now >= sent + PONG_TIMEOUT => {
                self.words.report_in(
                    &mut self.phase,
                    Phase::Over,
                    sink,
                    format_args!("pusher_no_pong"),
                    true,
                    |detail| {
                        let _ = write!(
                            detail,
                            "no pong within {} s of the client's ping",
                            PONG_TIMEOUT.as_secs()
                        );
                    },
                );
            }
            None if now >= self.last_heard + self.activity => {
                self.encoding.clear();
                pusher::encode_ping(&mut self.encoding);
                sink.text(&self.encoding);
                self.pongs.push_back(false);
                self.own_ping = Some(now);
            }
            _ => {}
        }
    }

    fn close(&mut self, _out: &mut dyn Outbox) {
        self.phase = Phase::Over;
    }

    /// A server ends a connection for an app key it does not know before a word (sockudo
    /// does): said once, as a Pusher client can tell it.
    fn ended_while_opening(&mut self, close: Option<(u16, &str)>, sink: &mut dyn Sink) {
        if self.phase != Phase::Connecting {
            return;
        }
        self.phase = Phase::Over;
        let key = self.names.key.clone();
        self.words.report(sink, format_args!("pusher_not_established"), None, true, |detail| {
            let _ = write!(detail, "the server ended the connection before pusher:connection_established");
            if let Some((code, reason)) = close {
                let _ = write!(detail, " (close {code} {reason:?})");
            }
            let _ = write!(detail, ": is {key:?} the key of one of its apps (--app-key)?");
        });
    }
}
