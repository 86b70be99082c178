//! One connection's NATS session: INFO awaited, CONNECT and the opening's SUBs and PING
//! sent, ready on the PONG; requests, subscriptions and publishes written; every operation
//! from the server read and classified, the server's PINGs answered, and as a responder,
//! requests answered with their payload.
//!
//! nats-server packs several operations into one WebSocket message and cuts a long one
//! over several: what a message holds is read in place, and only the start of an operation
//! whose rest is in a later message is kept, in a buffer bounded by the largest operation
//! the server may send (its INFO's `max_payload` and a control line).

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::time::Instant;

use wsbench_appproto::nats::{
    self, Connect, DecodeError, Decoder, Info, MAX_CONTROL_LINE, Msg, NO_RESPONDERS_STATUS, ServerOp,
};

use super::QUEUE_GROUP;
use crate::protocol::{Incoming, Outbox, Session, Sink, Use};

/// The subscription id of the connection's inbox (echo).
const INBOX_SID: u64 = 1;
/// The subscription id of the connection's responder (echo).
const RESPONDER_SID: u64 = 2;
/// The subscription id of the first pub/sub topic; topic `i` of the session's list is this
/// plus `i`.
const FIRST_TOPIC_SID: u64 = 3;
/// The longest a cause made of the server's words is, after `nats_err_`.
const CAUSE_WORDS: usize = 48;

/// What the connection sends and answers on.
#[derive(Debug, Default)]
pub(super) struct Subjects {
    /// Echo: where requests go.
    pub request: String,
    /// Echo: whether this connection answers requests too.
    pub responder: bool,
    /// Echo: this connection's reply subjects, a request's number after it.
    pub inbox: String,
    /// Pub/sub: the subject template around the topic's number.
    pub topic: (String, String),
    /// Why the subjects, filled with the connection's `--data` row, cannot be used.
    pub problem: Option<String>,
}

/// The credentials CONNECT gives.
#[derive(Debug, Default)]
pub(super) struct Credentials {
    pub user: Option<String>,
    pub pass: Option<String>,
    pub token: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Upgraded; the server's INFO awaited.
    AwaitingInfo,
    /// CONNECT and PING sent; the PONG awaited.
    AwaitingPong,
    Ready,
    /// A fatal error was reported: the rest of the connection is ignored.
    Done,
}

/// What the PONG of each PING sent acknowledges, in the order sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Awaited {
    /// The opening: CONNECT and its SUBs are in place.
    Opening,
    /// The SUB of topic `i` of the session's list.
    Subscription(usize),
}

#[derive(Debug)]
pub(super) struct NatsSession {
    usage: Use,
    state: State,
    name: String,
    credentials: Credentials,
    subjects: Subjects,
    /// Pub/sub: the topics subscribed to, by their place in this list.
    topics: Vec<String>,
    awaited: VecDeque<Awaited>,
    decoder: Decoder,
    /// The largest payload the server sends (its INFO's `max_payload`).
    max_payload: usize,
    /// The start of an operation whose rest is in a later message.
    pending: Vec<u8>,
    /// The operations being written, a subject and a cause (kept for their capacity).
    encoding: Vec<u8>,
    subject: String,
    cause: String,
}

impl NatsSession {
    pub fn new(usage: Use, name: String, credentials: Credentials, subjects: Subjects) -> NatsSession {
        NatsSession {
            usage,
            state: State::AwaitingInfo,
            name,
            credentials,
            subjects,
            topics: Vec::new(),
            awaited: VecDeque::new(),
            decoder: Decoder::default(),
            max_payload: nats::DEFAULT_MAX_PAYLOAD,
            pending: Vec::new(),
            encoding: Vec::new(),
            subject: String::new(),
            cause: String::new(),
        }
    }

    /// Sends what `encoding` holds: NATS over WebSocket is binary messages.
    fn emit(&mut self, out: &mut dyn Outbox) {
        out.binary(&self.encoding);
        self.encoding.clear();
    }

    /// The subject of pub/sub topic `topic` (`tK`): the template with K for `{topic}`.
    fn set_subject(&mut self, topic: &str) {
        let number =
            topic.strip_prefix('t').filter(|k| k.bytes().all(|b| b.is_ascii_digit())).unwrap_or(topic);
        self.subject.clear();
        let (before, after) = &self.subjects.topic;
        let _ = write!(self.subject, "{before}{number}{after}");
    }

    /// Reads the operations at the start of `buf`; returns the bytes used (the rest is the
    /// start of an operation), or None once the session failed.
    fn read_ops(&mut self, buf: &[u8], sink: &mut dyn Sink) -> Option<usize> {
        let mut at = 0;
        while self.state != State::Done {
            match self.decoder.decode(&buf[at..]) {
                Ok(Some((op, used))) => {
                    at += used;
                    self.on_op(op, sink);
                }
                Ok(None) => return Some(at),
                Err(error) => self.fail_decoding(&error, sink),
            }
        }
        None
    }

    fn on_op(&mut self, op: ServerOp<'_>, sink: &mut dyn Sink) {
        match op {
            ServerOp::Info(json) if self.state == State::AwaitingInfo => self.on_info(json, sink),
            ServerOp::Msg(msg) => self.on_msg(&msg, sink),
            ServerOp::Ping => {
                nats::encode_pong(&mut self.encoding);
                self.emit(sink);
                sink.incoming(Incoming::Other);
            }
            ServerOp::Pong => match self.awaited.pop_front() {
                Some(Awaited::Opening) if self.state == State::AwaitingPong => {
                    self.state = State::Ready;
                    sink.incoming(Incoming::Ready);
                }
                Some(Awaited::Subscription(index)) => {
                    sink.incoming(Incoming::Subscribed { topic: &self.topics[index] })
                }
                _ => sink.incoming(Incoming::Other),
            },
            ServerOp::Err(words) => self.on_err(words, sink),
            // A later INFO (cluster changes, lame-duck mode) and +OK change nothing here.
            ServerOp::Info(_) | ServerOp::Ok => sink.incoming(Incoming::Other),
        }
    }

    /// The server's INFO: CONNECT, the echo's SUBs, and the PING whose PONG says they are in.
    fn on_info(&mut self, json: &str, sink: &mut dyn Sink) {
        let info = match Info::parse(json) {
            Ok(info) => info,
            Err(error) => return self.fail(sink, "nats_malformed", &format!("INFO's JSON: {error}")),
        };
        if let Some(problem) = self.subjects.problem.take() {
            return self.fail(sink, "nats_invalid_subject", &problem);
        }
        if let Some(max) = info.max_payload.and_then(|max| usize::try_from(max).ok()) {
            self.max_payload = max;
            self.decoder.set_max_payload(max);
        }
        let requests = self.usage == Use::Requests;
        let credentials = &self.credentials;
        let connect = Connect {
            name: &self.name,
            user: credentials.user.as_deref(),
            pass: credentials.pass.as_deref(),
            auth_token: credentials.token.as_deref(),
            headers: info.headers,
            no_responders: info.headers && requests,
        };
        nats::encode_connect(&mut self.encoding, &connect);
        if requests {
            self.subject.clear();
            let _ = write!(self.subject, "{}*", self.subjects.inbox);
            nats::encode_sub(&mut self.encoding, &self.subject, None, INBOX_SID);
            if self.subjects.responder {
                nats::encode_sub(
                    &mut self.encoding,
                    &self.subjects.request,
                    Some(QUEUE_GROUP),
                    RESPONDER_SID,
                );
            }
        }
        nats::encode_ping(&mut self.encoding);
        self.emit(sink);
        self.awaited.push_back(Awaited::Opening);
        self.state = State::AwaitingPong;
    }

    fn on_msg(&mut self, msg: &Msg<'_>, sink: &mut dyn Sink) {
        match msg.sid {
            INBOX_SID if self.usage == Use::Requests => {
                let seq = msg
                    .subject
                    .strip_prefix(self.subjects.inbox.as_str())
                    .and_then(|number| number.parse().ok());
                match msg.headers {
                    Some(headers) if headers.starts_with(NO_RESPONDERS_STATUS) => {
                        let detail = format!("no subscriber took the request on {}", self.subjects.request);
                        let error = Incoming::Error {
                            cause: "nats_no_responders",
                            detail: &detail,
                            seq,
                            fatal: false,
                        };
                        sink.incoming(error);
                    }
                    _ => sink.incoming(Incoming::Reply { seq, payload: msg.payload }),
                }
            }
            RESPONDER_SID if self.usage == Use::Requests => {
                if let Some(reply_to) = msg.reply_to {
                    nats::encode_pub(&mut self.encoding, reply_to, None, msg.payload);
                    self.emit(sink);
                }
                sink.incoming(Incoming::Other);
            }
            sid => match sid.checked_sub(FIRST_TOPIC_SID).and_then(|i| self.topics.get(i as usize)) {
                Some(topic) => sink.incoming(Incoming::Delivery { topic, payload: msg.payload }),
                None => sink.incoming(Incoming::Other),
            },
        }
    }

    /// `-ERR`: counted by the server's words; fatal where nats-server closes the connection.
    fn on_err(&mut self, words: &str, sink: &mut dyn Sink) {
        let mut cause = std::mem::take(&mut self.cause);
        cause_of(words, &mut cause);
        if closes_the_connection(words) {
            self.fail(sink, &cause, words);
        } else {
            sink.incoming(Incoming::Error { cause: &cause, detail: words, seq: None, fatal: false });
        }
        self.cause = cause;
    }

    fn fail_decoding(&mut self, error: &DecodeError, sink: &mut dyn Sink) {
        let cause = match error {
            DecodeError::ControlLineTooLong { .. } | DecodeError::PayloadTooLarge { .. } => "nats_too_large",
            DecodeError::Malformed { .. } | DecodeError::UnknownOperation(_) => "nats_malformed",
        };
        self.fail(sink, cause, &error.to_string());
    }

    fn fail(&mut self, sink: &mut dyn Sink, cause: &str, detail: &str) {
        self.state = State::Done;
        self.pending = Vec::new();
        self.awaited.clear();
        sink.incoming(Incoming::Error { cause, detail, seq: None, fatal: true });
    }

    /// Keeps the last `rest_len` bytes of `pending`, the start of an operation, until its
    /// end comes; fails when it would grow past the largest operation the server may send.
    fn keep_pending(&mut self, rest_len: usize, sink: &mut dyn Sink) {
        let limit = MAX_CONTROL_LINE + self.max_payload + 2;
        if rest_len > limit {
            let detail = format!("an operation cut over messages is over {limit} bytes and not finished");
            return self.fail(sink, "nats_too_large", &detail);
        }
        let start = self.pending.len() - rest_len;
        self.pending.drain(..start);
    }
}

/// `nats_err_` and the server's words up to the first quote, colon or digit (where a
/// subject or a figure begins), in lower case with `_` between words: a cause per kind of
/// error, not per subject.
pub(super) fn cause_of(words: &str, cause: &mut String) {
    cause.clear();
    cause.push_str("nats_err_");
    let start = cause.len();
    let kind = words.split(['"', '\'', ':']).next().unwrap_or_default();
    let kind = kind.split(|c: char| c.is_ascii_digit()).next().unwrap_or_default();
    for word in kind.split(|c: char| !c.is_ascii_alphanumeric()).filter(|word| !word.is_empty()) {
        if cause.len() > start {
            cause.push('_');
        }
        cause.extend(word.chars().map(|c| c.to_ascii_lowercase()));
    }
    if cause.len() == start {
        cause.push_str("unnamed");
    }
    if cause.len() > start + CAUSE_WORDS {
        cause.truncate(start + CAUSE_WORDS);
    }
}

/// Whether nats-server closes the connection after sending `-ERR words`: it does after
/// every error but a refused subject or subscription, which it reports and carries on.
fn closes_the_connection(words: &str) -> bool {
    let words = words.to_ascii_lowercase();
    let carries_on = [
        "permissions violation",
        "invalid subject",
        "invalid publish subject",
        "maximum subscriptions exceeded",
    ];
    !carries_on.iter().any(|start| words.starts_with(start))
}

impl Session for NatsSession {
    fn ready(&self) -> bool {
        self.state == State::Ready
    }

    fn request(&mut self, seq: u64, payload: &[u8], out: &mut dyn Outbox) {
        if self.state != State::Ready {
            return;
        }
        let reply_to = Some((self.subjects.inbox.as_str(), seq));
        nats::encode_pub(&mut self.encoding, &self.subjects.request, reply_to, payload);
        self.emit(out);
    }

    fn subscribe(&mut self, topic: &str, out: &mut dyn Outbox) {
        if self.state != State::Ready {
            return;
        }
        let sid = FIRST_TOPIC_SID + self.topics.len() as u64;
        self.awaited.push_back(Awaited::Subscription(self.topics.len()));
        self.topics.push(topic.to_owned());
        self.set_subject(topic);
        nats::encode_sub(&mut self.encoding, &self.subject, None, sid);
        nats::encode_ping(&mut self.encoding);
        self.emit(out);
    }

    fn publish(&mut self, topic: &str, payload: &[u8], out: &mut dyn Outbox) {
        if self.state != State::Ready {
            return;
        }
        self.set_subject(topic);
        nats::encode_pub(&mut self.encoding, &self.subject, None, payload);
        self.emit(out);
    }

    fn receive(&mut self, message: &[u8], _binary: bool, _now: Instant, sink: &mut dyn Sink) {
        if self.state == State::Done {
            return;
        }
        if self.pending.is_empty() {
            let Some(used) = self.read_ops(message, sink) else { return };
            if used < message.len() {
                self.pending.extend_from_slice(&message[used..]);
                self.keep_pending(message.len() - used, sink);
            }
            return;
        }
        let mut pending = std::mem::take(&mut self.pending);
        pending.extend_from_slice(message);
        let Some(used) = self.read_ops(&pending, sink) else { return };
        let rest = pending.len() - used;
        self.pending = pending;
        self.keep_pending(rest, sink);
    }

    fn ended_while_opening(&mut self, _close: Option<(u16, &str)>, sink: &mut dyn Sink) {
        let (cause, detail) = match self.state {
            State::AwaitingInfo => (
                "nats_closed_before_info",
                "the server ended the connection before its INFO: is the target nats-server's \
                 websocket listener (on a path other than /mqtt)?",
            ),
            State::AwaitingPong => (
                "nats_closed_before_pong",
                "the server ended the connection after CONNECT, before answering PING: does it \
                 want credentials (--user and --pass, or --auth-token)?",
            ),
            State::Ready | State::Done => return,
        };
        self.fail(sink, cause, detail);
    }
}
