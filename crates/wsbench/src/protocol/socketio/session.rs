//! One connection's Socket.IO client: the opening (the Engine.IO open packet awaited, then
//! the namespace joined), pongs for the server's pings and the deadline of the next ping,
//! emits with acknowledgements for requests and subscriptions, and every message from the
//! server read as what it is for the load. A binary acknowledgement's attachment is taken
//! from the binary message that follows it as it comes, never buffered: what is kept between
//! messages is a few counters, whatever the server announces. Buffers are the session's own
//! and reused, so a message costs no allocation.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use wsbench_appproto::json::{unescape_into, write_str};
use wsbench_appproto::socketio::{
    Arg, DecodeError, EnginePacket, Packet, PacketType, decode_engine, decode_packet, encode_connect,
    encode_disconnect, encode_emit, encode_pong, placeholder_num,
};

use super::settings::Settings;
use crate::protocol::{Incoming, Outbox, Session, Setup, Sink, Use};

/// The attachments one packet may announce: wsbench's own need one; more is a server gone
/// wrong.
const MAX_ATTACHMENTS: usize = 16;
/// How much of a message an error's detail quotes.
const QUOTED: usize = 80;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for the Engine.IO open packet: the server's first message.
    AwaitingOpen,
    /// `40` sent: waiting for the namespace's CONNECT.
    Joining,
    Ready,
}

/// The binary messages a packet announced, still to come.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Attachments {
    /// The request the packet (an ack) answers; None for one that answers none.
    seq: Option<u64>,
    /// Which attachment carries the echoed payload (the ack's first argument).
    reply: Option<usize>,
    /// The next attachment's number, and how many there are in all.
    next: usize,
    count: usize,
}

#[derive(Debug)]
pub(super) struct SocketIoSession {
    usage: Use,
    /// The options: events, namespace, auth, argument templates.
    settings: Settings,
    /// `--binary`: payloads go as attachments.
    binary: bool,
    phase: Phase,
    /// How long the open packet may take after the upgrade.
    open_wait: Duration,
    /// pingInterval + pingTimeout of the open packet: the longest the server may stay silent
    /// between pings.
    heartbeat: Duration,
    /// When the open packet, or the next ping, must have come.
    deadline: Option<Instant>,
    /// Subscriptions not yet acknowledged: ack id, topic.
    subscriptions: Vec<(u64, String)>,
    next_ack: u64,
    attachments: Option<Attachments>,
    /// The message being written, an argument being built, a payload decoded and an error's
    /// detail (kept for their capacity).
    encoding: Vec<u8>,
    argument: Vec<u8>,
    decoded: Vec<u8>,
    detail: String,
}

impl SocketIoSession {
    pub(super) fn new(setup: &Setup<'_>) -> SocketIoSession {
        SocketIoSession {
            usage: setup.usage,
            settings: Settings::of(setup),
            binary: setup.options.binary,
            phase: Phase::AwaitingOpen,
            // A Socket.IO server sends the open packet together with the upgrade's answer;
            // half the connect timeout leaves the other half to tell why it did not come.
            open_wait: setup.open_timeout / 2,
            heartbeat: Duration::ZERO,
            deadline: None,
            subscriptions: Vec::new(),
            next_ack: 0,
            attachments: None,
            encoding: Vec::new(),
            argument: Vec::new(),
            decoded: Vec::new(),
            detail: String::new(),
        }
    }

    /// `emit(event, arguments)` in the namespace, `self.argument` holding the arguments
    /// (comma-separated JSON).
    fn emit_argument(&mut self, event: Event, ack_id: Option<u64>, out: &mut dyn Outbox) {
        let settings = &self.settings;
        let event = match event {
            Event::Echo => &settings.event,
            Event::Subscribe => &settings.subscribe_event,
            Event::Publish => &settings.publish_event,
        };
        self.encoding.clear();
        // Arguments are written from UTF-8 text, so they are UTF-8.
        let argument = std::str::from_utf8(&self.argument).unwrap_or("null");
        encode_emit(&mut self.encoding, &settings.namespace, event, &[Arg::Json(argument)], ack_id);
        out.text(&self.encoding);
    }

    /// The first message, which must be the Engine.IO open packet.
    fn opening(&mut self, message: &[u8], now: Instant, sink: &mut dyn Sink) {
        match decode_engine(message) {
            Ok(EnginePacket::Open(open)) => {
                let heartbeat = open.ping_interval.saturating_add(open.ping_timeout);
                self.heartbeat = Duration::from_millis(heartbeat);
                self.deadline = now.checked_add(self.heartbeat);
                self.phase = Phase::Joining;
                self.encoding.clear();
                let settings = &self.settings;
                encode_connect(&mut self.encoding, &settings.namespace, settings.auth.as_deref());
                sink.text(&self.encoding);
                sink.incoming(Incoming::Other);
            }
            Err(DecodeError::BadOpen(error)) => {
                self.detail.clear();
                let _ =
                    write!(self.detail, "the Engine.IO open packet is not what Engine.IO 4 sends: {error}");
                fatal(sink, "socketio_bad_open", &self.detail);
            }
            _ => {
                self.detail.clear();
                let _ = write!(
                    self.detail,
                    "the server's first message is not an Engine.IO open packet (is it a Socket.IO 4 \
                     server?): {}",
                    Quote(message)
                );
                fatal(sink, "socketio_not_engine_io", &self.detail);
            }
        }
    }

    /// A Socket.IO packet of the namespace joined (others are not the load's).
    fn packet(&mut self, text: &str, sink: &mut dyn Sink) {
        let packet = match decode_packet(text) {
            Ok(packet) => packet,
            Err(error) => return self.malformed(sink, None, format_args!("{error}")),
        };
        if packet.namespace != self.settings.namespace {
            return sink.incoming(Incoming::Other);
        }
        if packet.attachments > MAX_ATTACHMENTS {
            let seq = packet.ack_id.filter(|_| self.usage == Use::Requests);
            let count = packet.attachments;
            return self.malformed(
                sink,
                seq,
                format_args!("{count} attachments announced (at most {MAX_ATTACHMENTS})"),
            );
        }
        match packet.kind {
            PacketType::Connect if self.phase == Phase::Joining => {
                self.phase = Phase::Ready;
                sink.incoming(Incoming::Ready);
            }
            PacketType::Connect => sink.incoming(Incoming::Other),
            PacketType::ConnectError => {
                let message = packet.error_message();
                fatal(sink, "socketio_connect_error", message.as_deref().unwrap_or("(no message)"));
            }
            PacketType::Disconnect => {
                self.detail.clear();
                let _ = write!(self.detail, "the server left namespace {}", self.settings.namespace);
                fatal(sink, "socketio_disconnect", &self.detail)
            }
            PacketType::Event | PacketType::BinaryEvent => self.event(&packet, sink),
            PacketType::Ack | PacketType::BinaryAck => self.ack(&packet, sink),
        }
    }

    /// An event: a delivery when it is the delivery event (its arguments as they came,
    /// in whatever shape: the marker in them tells the publish), else nothing the load
    /// asked for.
    fn event(&mut self, packet: &Packet<'_>, sink: &mut dyn Sink) {
        self.expect_attachments(packet.attachments, None, None);
        match packet.event() {
            Ok(event) if self.usage == Use::PubSub && event.name == self.settings.delivery_event => {
                sink.incoming(Incoming::Delivery { topic: "", payload: event.args.rest().as_bytes() })
            }
            // A stream's event: its arguments as one JSON array are the delivery.
            Ok(event) if self.usage == Use::Stream && event.name == self.settings.stream_event => {
                self.decoded.clear();
                self.decoded.push(b'[');
                self.decoded.extend_from_slice(event.args.rest().as_bytes());
                self.decoded.push(b']');
                sink.incoming(Incoming::Delivery {
                    topic: &self.settings.stream_event,
                    payload: &self.decoded,
                })
            }
            _ => sink.incoming(Incoming::Other),
        }
    }

    /// An acknowledgement: of a subscription, or of an echo request (its payload back).
    fn ack(&mut self, packet: &Packet<'_>, sink: &mut dyn Sink) {
        let Some(ack_id) = packet.ack_id else {
            self.expect_attachments(packet.attachments, None, None);
            return self.malformed(sink, None, format_args!("an acknowledgement without an id"));
        };
        if let Some(at) = self.subscriptions.iter().position(|(id, _)| *id == ack_id) {
            self.expect_attachments(packet.attachments, None, None);
            let (_, topic) = self.subscriptions.swap_remove(at);
            return sink.incoming(Incoming::Subscribed { topic: &topic });
        }
        if self.usage != Use::Requests {
            self.expect_attachments(packet.attachments, None, None);
            return sink.incoming(Incoming::Other);
        }
        let seq = Some(ack_id);
        let first = match packet.args().map(|mut args| args.next().transpose()) {
            Ok(Ok(first)) => first.unwrap_or(""),
            Ok(Err(_)) | Err(_) => {
                self.expect_attachments(packet.attachments, None, None);
                return self.malformed(sink, seq, format_args!("an acknowledgement's data is not an array"));
            }
        };
        if packet.attachments > 0
            && let Some(num) = placeholder_num(first)
        {
            // The payload is the attachment `num`, read when it comes.
            return self.expect_attachments(packet.attachments, seq, Some(num));
        }
        self.expect_attachments(packet.attachments, None, None);
        let payload = match first.starts_with('"') && unescape_into(first.as_bytes(), &mut self.decoded) {
            true => &self.decoded[..],
            false => first.as_bytes(),
        };
        sink.incoming(Incoming::Reply { seq, payload });
    }

    /// The next `count` binary messages belong to the packet just read (the `reply`-th
    /// being the payload of request `seq`).
    fn expect_attachments(&mut self, count: usize, seq: Option<u64>, reply: Option<usize>) {
        self.attachments = (count > 0).then_some(Attachments { seq, reply, next: 0, count });
    }

    /// A binary message: the next attachment of the packet before it.
    fn attachment(&mut self, message: &[u8], sink: &mut dyn Sink) {
        let Some(mut attachments) = self.attachments.take() else {
            return self.malformed(sink, None, format_args!("a binary message that no packet announced"));
        };
        if attachments.reply == Some(attachments.next) {
            sink.incoming(Incoming::Reply { seq: attachments.seq, payload: message });
            attachments.seq = None;
        } else {
            sink.incoming(Incoming::Other);
        }
        attachments.next += 1;
        if attachments.next < attachments.count {
            self.attachments = Some(attachments);
        }
    }

    /// A packet that makes no sense: counted, and request `seq` (if any) freed.
    fn malformed(&mut self, sink: &mut dyn Sink, seq: Option<u64>, detail: std::fmt::Arguments<'_>) {
        self.detail.clear();
        let _ = self.detail.write_fmt(detail);
        sink.incoming(Incoming::Error {
            cause: "socketio_malformed",
            detail: &self.detail,
            seq,
            fatal: false,
        });
    }
}

impl Session for SocketIoSession {
    fn open(&mut self, now: Instant, _out: &mut dyn Outbox) {
        self.deadline = now.checked_add(self.open_wait);
    }

    fn ready(&self) -> bool {
        self.phase == Phase::Ready
    }

    /// `42<seq>["echo","payload"]`, or with the payload as an attachment:
    /// `451-<seq>["echo",{"_placeholder":true,"num":0}]` and the bytes.
    fn request(&mut self, seq: u64, payload: &[u8], out: &mut dyn Outbox) {
        match std::str::from_utf8(payload) {
            Ok(text) if !self.binary => {
                self.argument.clear();
                write_str(&mut self.argument, text);
                self.emit_argument(Event::Echo, Some(seq), out);
            }
            _ => {
                self.encoding.clear();
                let settings = &self.settings;
                encode_emit(
                    &mut self.encoding,
                    &settings.namespace,
                    &settings.event,
                    &[Arg::Attachment],
                    Some(seq),
                );
                out.text(&self.encoding);
                out.binary(payload);
            }
        }
    }

    /// The subscribe event with its arguments for topic `tK` (by default
    /// `42<ack>["subscribe","tK"]`: the room is the topic), acknowledged.
    /// `42/NAMESPACE,["EVENT",ARGS…]` of `--subscribe-emit`, if given.
    fn subscribe_stream(&mut self, out: &mut dyn Outbox) {
        let Some((event, args)) = &self.settings.subscribe_emit else { return };
        let args: Vec<Arg<'_>> = args.iter().map(|arg| Arg::Json(arg)).collect();
        self.encoding.clear();
        encode_emit(&mut self.encoding, &self.settings.namespace, event, &args, None);
        out.text(&self.encoding);
    }

    fn subscribe(&mut self, topic: &str, out: &mut dyn Outbox) {
        let ack_id = self.next_ack;
        self.next_ack += 1;
        self.subscriptions.push((ack_id, topic.to_owned()));
        self.argument.clear();
        self.settings.subscribe_args.fill(&mut self.argument, topic_number(topic), b"null");
        self.emit_argument(Event::Subscribe, Some(ack_id), out);
    }

    /// The publish event with its arguments for topic `tK` and `payload` (by default
    /// `42["publish",{"topic":"tK","payload":{…}}]`), unacknowledged.
    fn publish(&mut self, topic: &str, payload: &[u8], out: &mut dyn Outbox) {
        let payload = match std::str::from_utf8(payload) {
            Ok(object) => object.as_bytes(),
            Err(_) => b"null",
        };
        self.argument.clear();
        self.settings.publish_args.fill(&mut self.argument, topic_number(topic), payload);
        self.emit_argument(Event::Publish, None, out);
    }

    fn receive(&mut self, message: &[u8], binary: bool, now: Instant, sink: &mut dyn Sink) {
        if self.phase == Phase::AwaitingOpen {
            return self.opening(message, now, sink);
        }
        if binary {
            return self.attachment(message, sink);
        }
        if let Some(missing) = self.attachments.take() {
            let left = missing.count - missing.next;
            self.malformed(sink, missing.seq, format_args!("{left} announced attachment(s) did not come"));
        }
        match decode_engine(message) {
            Ok(EnginePacket::Message(text)) => self.packet(text, sink),
            Ok(EnginePacket::Ping(payload)) => {
                self.encoding.clear();
                encode_pong(&mut self.encoding, payload);
                sink.text(&self.encoding);
                self.deadline = now.checked_add(self.heartbeat);
                sink.incoming(Incoming::Other);
            }
            Ok(EnginePacket::Close) => {
                fatal(sink, "socketio_engine_close", "the server closed the Engine.IO session")
            }
            Ok(
                EnginePacket::Open(_) | EnginePacket::Pong(_) | EnginePacket::Upgrade | EnginePacket::Noop,
            ) => sink.incoming(Incoming::Other),
            Err(error) => self.malformed(sink, None, format_args!("{error}: {}", Quote(message))),
        }
    }

    fn next_timer(&self) -> Option<Instant> {
        self.deadline
    }

    fn on_timer(&mut self, now: Instant, sink: &mut dyn Sink) {
        if self.deadline.is_none_or(|deadline| now < deadline) {
            return;
        }
        self.deadline = None;
        self.detail.clear();
        let cause = match self.phase {
            Phase::AwaitingOpen => {
                let _ = write!(
                    self.detail,
                    "no Engine.IO open packet within {:?} of the upgrade (is it a Socket.IO 4 server?)",
                    self.open_wait
                );
                "socketio_no_open_packet"
            }
            Phase::Joining | Phase::Ready => {
                let _ = write!(
                    self.detail,
                    "no ping from the server within pingInterval + pingTimeout ({:?})",
                    self.heartbeat
                );
                "socketio_heartbeat_missed"
            }
        };
        fatal(sink, cause, &self.detail);
    }

    /// `41`: the namespace left.
    fn close(&mut self, out: &mut dyn Outbox) {
        if self.phase == Phase::Ready {
            self.encoding.clear();
            encode_disconnect(&mut self.encoding, &self.settings.namespace);
            out.text(&self.encoding);
        }
    }

    /// A server that closes as soon as the namespace's CONNECT comes most often reads
    /// packets with another parser (socket.io-msgpack-parser drops a client whose text
    /// packet it cannot decode).
    fn ended_while_opening(&mut self, close: Option<(u16, &str)>, sink: &mut dyn Sink) {
        if self.phase != Phase::Joining {
            return;
        }
        self.detail.clear();
        self.detail.push_str(CLOSED_AFTER_JOIN);
        let _ = match close {
            // The engine's code for a close frame without a status code (1005).
            Some((0, _)) => write!(self.detail, " (a close frame without a code)"),
            Some((code, "")) => write!(self.detail, " (close {code})"),
            Some((code, reason)) => write!(self.detail, " (close {code} {reason:?})"),
            None => write!(self.detail, " (no close frame)"),
        };
        fatal(sink, "socketio_closed_after_join", &self.detail);
    }
}

/// What a server that closes right after the namespace join is told.
pub(super) const CLOSED_AFTER_JOIN: &str =
    "closed right after the namespace join: does the server use another parser (msgpack)?";

/// The emits a session makes.
#[derive(Debug, Clone, Copy)]
enum Event {
    Echo,
    Subscribe,
    Publish,
}

/// The number K of the workload's topic `tK`, which a template's `{topic}` stands for.
fn topic_number(topic: &str) -> &str {
    topic.strip_prefix('t').unwrap_or(topic)
}

/// An error that ends the connection.
fn fatal(sink: &mut dyn Sink, cause: &str, detail: &str) {
    sink.incoming(Incoming::Error { cause, detail, seq: None, fatal: true });
}

/// The start of a message as an error quotes it: text as it is, cut at [`QUOTED`] bytes.
struct Quote<'m>(&'m [u8]);

impl std::fmt::Display for Quote<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Quote(message) = *self;
        let shown = &message[..message.len().min(QUOTED)];
        let text = String::from_utf8_lossy(shown);
        let ellipsis = if message.len() > QUOTED { "…" } else { "" };
        write!(f, "{:?}{ellipsis}", text.as_ref())
    }
}
