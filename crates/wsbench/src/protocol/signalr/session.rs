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

/// The hub and client methods the load uses.
#[derive(Debug)]
pub(super) struct Methods {
    pub(super) echo: String,
    pub(super) join: String,
    pub(super) publish: String,
    pub(super) client: String,
}

#[derive(Debug)]
pub(super) struct SignalRSession {
    usage: Use,
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
    /// The message being written, an invocation id, an argument, a reply decoded (kept for their capacity),
    /// and the errors' words.
    encoding: Vec<u8>,
    id: String,
    argument: Vec<u8>,
    decoded: Vec<u8>,
    words: ErrorText,
}

impl SignalRSession {
    pub(super) fn new(usage: Use, methods: Methods, open_timeout: Duration) -> SignalRSession {
        let now = Instant::now();
        SignalRSession {
            usage,
            methods,
            subscriptions: Subscriptions::default(),
            phase: Phase::Handshaking,
            now,
            open_timeout,
            ping_due: now + keep_alive(),
            silence_due: now + server_timeout(),
            publishes: 0,
            encoding: Vec::new(),
            id: String::new(),
            argument: Vec::new(),
            decoded: Vec::new(),
            words: ErrorText::default(),
        }
    }

    /// Sends what `self.encoding` holds; the client's keep-alive starts again.
    fn send(&mut self, out: &mut dyn Outbox) {
        out.text(&self.encoding);
        self.ping_due = self.now + keep_alive();
    }

    /// Invokes `method` with `arguments`, wanting the completion `id`.
    fn invoke(&mut self, id: &str, method: Which, arguments: &[&[u8]], out: &mut dyn Outbox) {
        self.encoding.clear();
        let target = match method {
            Which::Echo => &self.methods.echo,
            Which::Join => &self.methods.join,
            Which::Publish => &self.methods.publish,
        };
        hub::encode_invocation(&mut self.encoding, Some(id), target, arguments);
        self.send(out);
    }

    fn on_record(&mut self, record: &[u8], sink: &mut dyn Sink) {
        if self.phase == Phase::Handshaking {
            return self.on_handshake(record, sink);
        }
        match hub::decode(record) {
            Err(error) => self.malformed(&error.to_string(), record, sink),
            Ok(HubMessage::Completion { invocation_id, result, error }) => {
                self.on_completion(&invocation_id, result, error.as_deref(), sink)
            }
            Ok(HubMessage::Invocation { target, arguments, .. }) => {
                if target.eq_ignore_ascii_case(&self.methods.client) && self.usage == Use::PubSub {
                    sink.incoming(Incoming::Delivery { topic: "", payload: arguments.as_bytes() });
                } else {
                    sink.incoming(Incoming::Other);
                }
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

    fn on_completion(&mut self, id: &str, result: Option<&str>, error: Option<&str>, sink: &mut dyn Sink) {
        if let Some(seq) = id.parse::<u64>().ok().filter(|_| self.usage == Use::Requests) {
            return match (error, result) {
                (Some(error), _) => self.completion_error(Some(seq), id, error, sink),
                (None, Some(raw)) if unescape_into(raw.as_bytes(), &mut self.decoded) => {
                    sink.incoming(Incoming::Reply { seq: Some(seq), payload: &self.decoded })
                }
                (None, result) => {
                    let payload = result.unwrap_or_default().as_bytes();
                    sink.incoming(Incoming::Reply { seq: Some(seq), payload })
                }
            };
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

/// Which of the hub methods an invocation calls.
#[derive(Debug, Clone, Copy)]
enum Which {
    Echo,
    Join,
    Publish,
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
        hub::encode_handshake(&mut self.encoding);
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
        let mut argument = std::mem::take(&mut self.argument);
        argument.clear();
        write_str(&mut argument, &String::from_utf8_lossy(payload));
        self.invoke(&id, Which::Echo, &[&argument], out);
        (self.id, self.argument) = (id, argument);
    }

    fn subscribe(&mut self, topic: &str, out: &mut dyn Outbox) {
        if self.phase != Phase::Ready {
            return;
        }
        let id = format!("join-{topic}");
        let mut argument = std::mem::take(&mut self.argument);
        argument.clear();
        write_str(&mut argument, topic);
        self.invoke(&id, Which::Join, &[&argument], out);
        self.argument = argument;
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
            hub::encode_ping(&mut self.encoding);
            self.send(sink);
        }
    }

    fn close(&mut self, _out: &mut dyn Outbox) {
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
