//! One connection's STOMP session: CONNECT, the echo subscription awaited by its RECEIPT,
//! SENDs and SUBSCRIBEs, every frame from the broker read and classified, and heart-beats.
//!
//! A broker's frame normally fills one WebSocket message (web-stomp's do), and is then read
//! in place. A frame cut over several messages is put back together in a buffer bounded by
//! [`MAX_PENDING`]; a piece that cannot begin a STOMP frame fails at once, so a server of
//! another protocol is told apart on its first message instead of waiting out the opening.
//! Every failure of the broker or of its input is fatal: STOMP has no way to carry on after
//! an ERROR frame, and the broker closes the connection after sending one.

use std::fmt::Write as _;
use std::time::Instant;

use wsbench_appproto::stomp::{self, Connect, DecodeError, Decoder, Frame, Item, Send, ServerFrame};

use super::heartbeat::{Due, HeartBeats};
use crate::protocol::{Incoming, Outbox, Session, Setup, Sink, Use};

/// The most of a frame cut over messages that is kept while its rest is awaited.
pub const MAX_PENDING: usize = stomp::DEFAULT_MAX_FRAME;
/// The echo subscription's id and its receipt's.
const ECHO: &str = "echo";
/// A pub/sub subscription's id and its receipt's: this prefix and the topic's number in
/// the session's list.
const TOPIC_ID: &str = "sub-";
/// What DISCONNECT asks a RECEIPT for (RabbitMQ sends none: it closes).
const DISCONNECT: &str = "disconnect";
/// How much of a message that is not STOMP an error quotes.
const QUOTED: usize = 40;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// CONNECT sent, CONNECTED awaited.
    Connecting,
    /// Echo: the subscription to the connection's own destination awaits its RECEIPT.
    Subscribing,
    Ready,
    /// A fatal error was reported, or DISCONNECT sent: the rest of the connection is ignored.
    Done,
}

#[derive(Debug)]
pub(super) struct StompSession {
    usage: Use,
    binary: bool,
    state: State,
    vhost: String,
    /// `--login`, and `--passcode` (`Debug` shows it redacted).
    login: String,
    passcode: Option<crate::options::Secret>,
    /// The heart-beat interval CONNECT asks for each way (ms; 0: none).
    heartbeat: u32,
    beats: HeartBeats,
    /// Echo: where this connection's requests go and come back from.
    echo_destination: String,
    /// Pub/sub: the topics subscribed to, by their subscription's number.
    topics: Vec<String>,
    decoder: Decoder,
    /// The start of a frame whose rest is in a later message.
    pending: Vec<u8>,
    /// The frame being written, a destination and an id (kept for their capacity).
    encoding: Vec<u8>,
    destination: String,
    /// `--destination` around its `{topic}`: before and after the topic's number.
    template: (String, String),
    id: String,
    /// A stream: the destination subscribed to (`--subscribe-destination`).
    stream_destination: String,
}

impl StompSession {
    pub fn new(setup: &Setup<'_>, vhost: &str, heartbeat: u32, template: (String, String)) -> StompSession {
        let (login, passcode) = super::login_of(setup);
        StompSession {
            usage: setup.usage,
            binary: setup.options.binary,
            state: State::Connecting,
            vhost: vhost.to_owned(),
            login,
            passcode,
            heartbeat,
            beats: HeartBeats::default(),
            // The process id keeps two runs against one broker apart.
            echo_destination: format!("/topic/wsbench-echo-{}-{}", std::process::id(), setup.index),
            topics: Vec::new(),
            // A frame read in place is as large as its message, which the WebSocket layer
            // bounds; only what is buffered is bounded here (MAX_PENDING).
            decoder: Decoder::new(usize::MAX),
            pending: Vec::new(),
            encoding: Vec::new(),
            destination: String::new(),
            template,
            id: String::new(),
            stream_destination: String::new(),
        }
    }

    /// A stream's session subscribes to `destination`.
    pub fn with_stream_destination(mut self, destination: String) -> StompSession {
        self.stream_destination = destination;
        self
    }

    /// The destination of pub/sub topic `topic` (`tK`): the template with K for `{topic}`.
    fn set_destination(&mut self, topic: &str) {
        let number =
            topic.strip_prefix('t').filter(|k| k.bytes().all(|b| b.is_ascii_digit())).unwrap_or(topic);
        self.destination.clear();
        let (before, after) = &self.template;
        let _ = write!(self.destination, "{before}{number}{after}");
    }

    /// Sends the frame in `encoding`: a binary message with `--binary`, or when it is not
    /// UTF-8 (a `bytes:N` payload), which a text message may not carry.
    fn emit(&mut self, out: &mut dyn Outbox) {
        match self.binary || std::str::from_utf8(&self.encoding).is_err() {
            true => out.binary(&self.encoding),
            false => out.text(&self.encoding),
        }
        self.beats.sent();
    }

    /// Reads the heart-beats and frames at the start of `buf`; returns the bytes used (the
    /// rest is the start of a frame), or None once the session failed.
    fn read_items(&mut self, buf: &[u8], now: Instant, sink: &mut dyn Sink) -> Option<usize> {
        let mut at = 0;
        while self.state != State::Done {
            match self.decoder.decode(&buf[at..]) {
                Ok(Some((Item::HeartBeat, used))) => {
                    at += used;
                    sink.incoming(Incoming::Other);
                }
                Ok(Some((Item::Frame(frame), used))) => {
                    at += used;
                    self.on_frame(&frame, now, sink);
                }
                Ok(None) => return Some(at),
                Err(error) => {
                    self.fail_decoding(&error, &buf[at..], sink);
                }
            }
        }
        None
    }

    fn on_frame(&mut self, frame: &Frame<'_>, now: Instant, sink: &mut dyn Sink) {
        let server_frame = match frame.server_frame() {
            Ok(server_frame) => server_frame,
            // The frame decoded whole: what it lacks is named, its command quoted.
            Err(error) => return self.fail_decoding(&error, frame.command.as_bytes(), sink),
        };
        match server_frame {
            ServerFrame::Connected { heart_beat, .. } if self.state == State::Connecting => {
                self.beats = HeartBeats::agreed((self.heartbeat, self.heartbeat), heart_beat, now);
                if self.usage == Use::Requests {
                    self.encoding.clear();
                    stomp::encode_subscribe(&mut self.encoding, ECHO, &self.echo_destination, Some(ECHO));
                    self.emit(sink);
                    self.state = State::Subscribing;
                } else {
                    self.state = State::Ready;
                    sink.incoming(Incoming::Ready);
                }
            }
            ServerFrame::Receipt { receipt_id } => match receipt_id.as_ref() {
                ECHO if self.state == State::Subscribing => {
                    self.state = State::Ready;
                    sink.incoming(Incoming::Ready);
                }
                id => match self.topic_of(id) {
                    Some(topic) => sink.incoming(Incoming::Subscribed { topic }),
                    None => sink.incoming(Incoming::Other),
                },
            },
            ServerFrame::Message { subscription, body, .. } => match subscription.as_ref() {
                ECHO => sink.incoming(Incoming::Reply { seq: None, payload: body }),
                id => match self.topic_of(id) {
                    Some(topic) => sink.incoming(Incoming::Delivery { topic, payload: body }),
                    None => sink.incoming(Incoming::Other),
                },
            },
            ServerFrame::Error { message, body } => {
                let first_line = body.split(|&b| b == b'\n').next().unwrap_or_default();
                let detail = match &message {
                    Some(message) => message.as_ref(),
                    None => std::str::from_utf8(first_line).unwrap_or("(not UTF-8)"),
                };
                self.fail(sink, "stomp_error", detail);
            }
            ServerFrame::Connected { .. } => sink.incoming(Incoming::Other),
        }
    }

    /// The topic of subscription (or receipt) `id`, when it is one of ours.
    fn topic_of(&self, id: &str) -> Option<&str> {
        let number: usize = id.strip_prefix(TOPIC_ID)?.parse().ok()?;
        self.topics.get(number).map(String::as_str)
    }

    /// What the broker sent is not STOMP as a client reads it: the error, and how `what`
    /// begins when it is not even a frame.
    fn fail_decoding(&mut self, error: &DecodeError, what: &[u8], sink: &mut dyn Sink) {
        let cause = match error {
            DecodeError::FrameTooLarge { .. } => "stomp_frame_too_large",
            DecodeError::UnexpectedCommand(_) => "stomp_unexpected_frame",
            DecodeError::Malformed(_) | DecodeError::MissingHeader { .. } => "stomp_malformed",
        };
        let mut detail = error.to_string();
        if matches!(error, DecodeError::Malformed(_)) {
            let _ = write!(detail, " (the message begins {:?})", quote(what));
        }
        self.fail(sink, cause, &detail);
    }

    fn fail(&mut self, sink: &mut dyn Sink, cause: &str, detail: &str) {
        self.state = State::Done;
        self.beats = HeartBeats::default();
        self.pending = Vec::new();
        sink.incoming(Incoming::Error { cause, detail, seq: None, fatal: true });
    }

    /// Keeps `rest`, the start of a frame, until its end comes; fails when it cannot be one
    /// or would grow the buffer past [`MAX_PENDING`].
    fn keep_pending(&mut self, rest_len: usize, sink: &mut dyn Sink) {
        let rest = &self.pending[self.pending.len() - rest_len..];
        if rest.len() > MAX_PENDING {
            let detail = format!("a frame cut over messages is over {MAX_PENDING} bytes and not finished");
            return self.fail(sink, "stomp_frame_too_large", &detail);
        }
        if !may_begin_a_frame(rest) {
            let detail = format!("not a STOMP frame: the message begins {:?}", quote(rest));
            return self.fail(sink, "stomp_malformed", &detail);
        }
        let start = self.pending.len() - rest_len;
        self.pending.drain(..start);
    }
}

/// Whether `bytes`, with no end of line after the command yet, can be the start of a frame
/// (a command is upper-case letters).
fn may_begin_a_frame(bytes: &[u8]) -> bool {
    let line = match bytes.iter().position(|&b| b == b'\n') {
        // A whole command line was checked by the decoder.
        Some(_) => return true,
        None => bytes.strip_suffix(b"\r").unwrap_or(bytes),
    };
    line.iter().all(u8::is_ascii_uppercase)
}

/// The first bytes of `what`, as text.
fn quote(what: &[u8]) -> String {
    let text = String::from_utf8_lossy(&what[..what.len().min(QUOTED)]);
    match what.len() > QUOTED {
        true => format!("{text}…"),
        false => text.into_owned(),
    }
}

impl Session for StompSession {
    fn open(&mut self, _now: Instant, out: &mut dyn Outbox) {
        self.encoding.clear();
        let connect = Connect {
            host: &self.vhost,
            heart_beat: (self.heartbeat, self.heartbeat),
            login: Some(&self.login),
            passcode: self.passcode.as_ref().map(|passcode| passcode.0.as_str()),
        };
        // The protocol's check refused a virtual host or credentials CONNECT cannot carry.
        if stomp::encode_connect(&mut self.encoding, &connect).is_ok() {
            self.emit(out);
        }
    }

    fn ready(&self) -> bool {
        self.state == State::Ready
    }

    fn request(&mut self, _seq: u64, payload: &[u8], out: &mut dyn Outbox) {
        if self.state != State::Ready {
            return;
        }
        self.encoding.clear();
        let send =
            Send { destination: &self.echo_destination, content_type: None, receipt: None, body: payload };
        stomp::encode_send(&mut self.encoding, &send);
        self.emit(out);
    }

    /// SUBSCRIBE to the stream's destination, its MESSAGEs deliveries named after it.
    fn subscribe_stream(&mut self, out: &mut dyn Outbox) {
        if self.state != State::Ready {
            return;
        }
        self.id.clear();
        let _ = write!(self.id, "{TOPIC_ID}{}", self.topics.len());
        self.topics.push(self.stream_destination.clone());
        self.encoding.clear();
        stomp::encode_subscribe(&mut self.encoding, &self.id, &self.stream_destination, Some(&self.id));
        self.emit(out);
    }

    fn subscribe(&mut self, topic: &str, out: &mut dyn Outbox) {
        if self.state != State::Ready {
            return;
        }
        self.id.clear();
        let _ = write!(self.id, "{TOPIC_ID}{}", self.topics.len());
        self.topics.push(topic.to_owned());
        self.set_destination(topic);
        self.encoding.clear();
        stomp::encode_subscribe(&mut self.encoding, &self.id, &self.destination, Some(&self.id));
        self.emit(out);
    }

    fn publish(&mut self, topic: &str, payload: &[u8], out: &mut dyn Outbox) {
        if self.state != State::Ready {
            return;
        }
        self.set_destination(topic);
        self.encoding.clear();
        let send = Send { destination: &self.destination, content_type: None, receipt: None, body: payload };
        stomp::encode_send(&mut self.encoding, &send);
        self.emit(out);
    }

    fn receive(&mut self, message: &[u8], _binary: bool, now: Instant, sink: &mut dyn Sink) {
        if self.state == State::Done {
            return;
        }
        self.beats.heard(now);
        if self.pending.is_empty() {
            let Some(used) = self.read_items(message, now, sink) else { return };
            if used < message.len() {
                self.pending.extend_from_slice(&message[used..]);
                self.keep_pending(message.len() - used, sink);
            }
            return;
        }
        let mut pending = std::mem::take(&mut self.pending);
        pending.extend_from_slice(message);
        let Some(used) = self.read_items(&pending, now, sink) else { return };
        let rest = pending.len() - used;
        self.pending = pending;
        self.keep_pending(rest, sink);
    }

    fn next_timer(&self) -> Option<Instant> {
        self.beats.next()
    }

    fn on_timer(&mut self, now: Instant, sink: &mut dyn Sink) {
        match self.beats.due(now) {
            Due::Nothing => {}
            Due::Beat => {
                self.encoding.clear();
                stomp::encode_heartbeat(&mut self.encoding);
                self.emit(sink);
            }
            Due::Missed(allowed) => {
                let detail = format!("nothing from the server for {} ms", allowed.as_millis());
                self.fail(sink, "stomp_heartbeat_missed", &detail);
            }
        }
    }

    fn close(&mut self, out: &mut dyn Outbox) {
        if self.state != State::Ready && self.state != State::Subscribing {
            return;
        }
        self.encoding.clear();
        stomp::encode_disconnect(&mut self.encoding, DISCONNECT);
        self.emit(out);
        // Nothing may follow DISCONNECT, a heart-beat included.
        self.state = State::Done;
        self.beats = HeartBeats::default();
    }
}
