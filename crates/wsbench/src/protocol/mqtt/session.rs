//! One connection's side of MQTT: its opening (CONNECT → CONNACK, and for echo the
//! SUBSCRIBE to its own topic → SUBACK), requests, subscriptions and publishes as packets,
//! every packet the broker sends read and answered (PUBACK for a QoS 1 delivery; PUBREC,
//! then PUBCOMP at the broker's PUBREL, for a QoS 2 one, delivered once; PUBREL at the
//! broker's PUBREC of a QoS 2 publish), the keep-alive kept, DISCONNECT at the end; the
//! open exchanges are `inflight.rs`'s. A WebSocket message may hold several packets or
//! part of one: the bytes of an unfinished packet wait in a buffer no larger than the
//! decoder's packet limit. Nothing here allocates per packet once the buffers have grown.

use std::fmt::Write as _;
use std::time::Instant;

use wsbench_appproto::mqtt::{
    self, Connect, DecodeError, Decoder, Packet, Publish, PublishView, QoS, SubAck, Version,
};

use super::inflight::{MAX_UNACKED, Outgoing, Unreleased};
use super::{KEEP_ALIVE, Opening, echo_topic};
use crate::protocol::{Incoming, Outbox, Session, Sink, Use};

/// The largest packet a broker may send: the largest message the WebSocket layer takes, so
/// MQTT refuses nothing WebSocket would carry, and a hostile broker grows the buffer no
/// further than it could grow a message.
pub const MAX_PACKET: usize = wsbench_proto::DEFAULT_MAX_MESSAGE as usize;

/// Subscriptions awaiting their SUBACK that a session remembers (a connection subscribes
/// once: this is a bound, not a working size).
const MAX_SUBSCRIBING: usize = 64;

/// Where the connection is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// CONNECT sent, CONNACK awaited.
    Connecting,
    /// Echo: SUBSCRIBE to its own topic sent, SUBACK awaited.
    Subscribing,
    Ready,
    /// Refused, broken or closed: nothing more is read or sent.
    Over,
}

#[derive(Debug)]
pub(super) struct MqttSession {
    version: Version,
    qos: QoS,
    usage: Use,
    client_id: String,
    clean_start: bool,
    session_expiry: Option<u32>,
    /// Publishes carry the retain flag.
    retain: bool,
    /// CONNECT's user name and password (`Debug` shows neither).
    credentials: Credentials,
    /// Echo: the connection's own topic.
    echo_topic: String,
    decoder: Decoder,
    phase: Phase,
    /// The start of a packet whose end has not arrived (at most one packet).
    partial: Vec<u8>,
    /// The packet being written (kept for its capacity).
    encoding: Vec<u8>,
    last_packet_id: u16,
    /// SUBSCRIBEs awaiting their SUBACK: packet id, the workload's topic.
    subscribing: Vec<(u16, String)>,
    /// QoS 1 and 2 PUBLISHes sent and not yet acknowledged.
    unacked: Outgoing,
    /// QoS 2 deliveries received, awaiting the broker's PUBREL.
    unreleased: Unreleased,
    /// When the next PINGREQ goes, once connected.
    next_ping: Option<Instant>,
    /// When the PINGRESP of the PINGREQ sent must have come.
    pingresp_due: Option<Instant>,
    /// An error's cause and detail (kept for their capacity).
    cause: String,
    detail: String,
    /// Pub/sub: `--topic` around its `{topic}`; `None`: MQTT topics are the workload's names.
    template: Option<(String, String)>,
    /// Pub/sub under a template: each MQTT topic subscribed to and the workload's name of it.
    names: Vec<(String, String)>,
    /// The MQTT topic being written (kept for its capacity).
    topic: String,
    /// A stream: the topic filter subscribed to (`--subscribe-topic`).
    stream_filter: String,
}

impl MqttSession {
    pub(super) fn new(usage: Use, opening: Opening, template: Option<(String, String)>) -> MqttSession {
        let Opening { version, qos, client_id, clean_start, session_expiry, retain, username, password } =
            opening;
        MqttSession {
            version,
            qos,
            usage,
            echo_topic: echo_topic(&client_id),
            client_id,
            clean_start,
            session_expiry,
            retain,
            credentials: Credentials { username, password },
            decoder: Decoder::new(version, MAX_PACKET),
            phase: Phase::Connecting,
            partial: Vec::new(),
            encoding: Vec::new(),
            last_packet_id: 0,
            subscribing: Vec::new(),
            unacked: Outgoing::default(),
            unreleased: Unreleased::default(),
            next_ping: None,
            pingresp_due: None,
            cause: String::new(),
            detail: String::new(),
            template,
            names: Vec::new(),
            topic: String::new(),
            stream_filter: String::new(),
        }
    }

    /// A stream's session subscribes to `filter`.
    pub(super) fn with_stream_filter(mut self, filter: String) -> MqttSession {
        self.stream_filter = filter;
        self
    }

    /// The MQTT topic of the workload's topic `name` (`tK`) into `self.topic`: the template
    /// with K for `{topic}`, or `name` itself without one.
    fn set_topic(&mut self, name: &str) {
        self.topic.clear();
        match &self.template {
            Some((before, after)) => {
                let number = name.strip_prefix('t').filter(|k| k.bytes().all(|b| b.is_ascii_digit()));
                let _ = write!(self.topic, "{before}{}{after}", number.unwrap_or(name));
            }
            None => self.topic.push_str(name),
        }
    }

    /// The next packet identifier (1 to 65,535, then around again).
    fn packet_id(&mut self) -> u16 {
        self.last_packet_id = self.last_packet_id.checked_add(1).unwrap_or(1);
        self.last_packet_id
    }

    /// SUBSCRIBE to `topic` at the run's QoS, remembered as the workload's `name`.
    fn send_subscribe(&mut self, topic: &str, name: &str, out: &mut dyn Outbox) {
        if self.subscribing.len() >= MAX_SUBSCRIBING {
            self.subscribing.remove(0);
        }
        let packet_id = self.packet_id();
        self.encoding.clear();
        if mqtt::encode_subscribe(&mut self.encoding, self.version, packet_id, topic, self.qos).is_ok() {
            self.subscribing.push((packet_id, name.to_owned()));
            out.binary(&self.encoding);
        }
    }

    /// PUBLISH `payload` to `topic` (`seq`: the echo request it carries). A payload MQTT
    /// cannot carry (over 256 MiB) is not sent.
    fn send_publish(&mut self, topic: &str, payload: &[u8], seq: Option<u64>, sink: &mut dyn Outbox) {
        if self.phase != Phase::Ready {
            return;
        }
        let packet_id = match self.qos {
            QoS::AtMostOnce => 0,
            _ => self.packet_id(),
        };
        self.encoding.clear();
        let publish = Publish { topic, qos: self.qos, packet_id, retain: self.retain, payload };
        if mqtt::encode_publish(&mut self.encoding, self.version, &publish).is_err() {
            return;
        }
        if self.qos != QoS::AtMostOnce {
            self.unacked.push(packet_id, seq);
        }
        sink.binary(&self.encoding);
    }

    /// Every whole packet at the start of `bytes`; returns the bytes they took.
    fn read_packets(&mut self, bytes: &[u8], now: Instant, sink: &mut dyn Sink) -> usize {
        let mut at = 0;
        while self.phase != Phase::Over {
            match self.decoder.decode(&bytes[at..]) {
                Ok(Some((packet, used))) => {
                    at += used;
                    self.on_packet(packet, now, sink);
                }
                Ok(None) => break,
                Err(error) => {
                    self.malformed(&error, &bytes[at..], sink);
                    break;
                }
            }
        }
        at
    }

    fn on_packet(&mut self, packet: Packet<'_>, now: Instant, sink: &mut dyn Sink) {
        match (self.phase, packet) {
            (Phase::Connecting, Packet::ConnAck(connack)) if connack.is_accepted() => {
                self.next_ping = Some(now + KEEP_ALIVE / 2);
                match self.usage {
                    Use::Requests => {
                        self.phase = Phase::Subscribing;
                        let topic = std::mem::take(&mut self.echo_topic);
                        self.send_subscribe(&topic, &topic, sink);
                        self.echo_topic = topic;
                    }
                    _ => {
                        self.phase = Phase::Ready;
                        sink.incoming(Incoming::Ready);
                    }
                }
            }
            (Phase::Connecting, Packet::ConnAck(connack)) => {
                let kind = if self.version == Version::V5 { "reason" } else { "return" };
                let name = connack.code_name();
                self.fatal(sink, format_args!("mqtt_connack_{name}"), |detail| {
                    let _ = write!(detail, "CONNACK {kind} code {:#04x} ({name})", connack.code);
                });
            }
            (Phase::Connecting, other) => {
                let kind = packet_name(&other);
                self.fatal(sink, format_args!("mqtt_no_connack"), |detail| {
                    let _ = write!(detail, "the broker sent {kind} before CONNACK");
                });
            }
            (_, Packet::SubAck(suback)) => self.on_suback(suback, sink),
            (_, Packet::Publish(publish)) => self.on_publish(publish, sink),
            (_, Packet::PubAck { packet_id, code }) => self.on_ack("puback", packet_id, code, sink),
            (_, Packet::PubComp { packet_id, code }) => self.on_ack("pubcomp", packet_id, code, sink),
            (_, Packet::PubRec { packet_id, code }) => self.on_pubrec(packet_id, code, sink),
            (_, Packet::PubRel { packet_id, .. }) => {
                self.unreleased.release(packet_id);
                self.answer(mqtt::encode_pubcomp, packet_id, sink);
                sink.incoming(Incoming::Other);
            }
            (_, Packet::PingResp) => {
                self.pingresp_due = None;
                sink.incoming(Incoming::Other);
            }
            (_, Packet::Disconnect { code }) => {
                let name = mqtt::reason_code_name(code);
                self.fatal(sink, format_args!("mqtt_disconnect_{name}"), |detail| {
                    let _ = write!(detail, "the broker sent DISCONNECT, reason code {code:#04x} ({name})");
                });
            }
            (_, Packet::ConnAck(_) | Packet::UnsubAck { .. }) => sink.incoming(Incoming::Other),
        }
    }

    fn on_suback(&mut self, suback: SubAck<'_>, sink: &mut dyn Sink) {
        let Some(at) = self.subscribing.iter().position(|(id, _)| *id == suback.packet_id) else {
            return sink.incoming(Incoming::Other);
        };
        let (_, topic) = self.subscribing.swap_remove(at);
        let echo = self.phase == Phase::Subscribing;
        if let Some(code) = suback.refusal() {
            let name = suback.code_name(code);
            self.cause.clear();
            let _ = write!(self.cause, "mqtt_suback_{name}");
            self.detail.clear();
            let _ = write!(self.detail, "SUBACK {code:#04x} ({name}) for topic {topic}");
            if echo {
                self.phase = Phase::Over;
            }
            let (cause, detail) = (&self.cause, &self.detail);
            return sink.incoming(Incoming::Error { cause, detail, seq: None, fatal: echo });
        }
        match echo {
            true => {
                self.phase = Phase::Ready;
                sink.incoming(Incoming::Ready);
            }
            false => sink.incoming(Incoming::Subscribed { topic: &topic }),
        }
    }

    /// Writes the four-byte answer `encode` makes for `packet_id`.
    fn answer(&mut self, encode: fn(&mut Vec<u8>, u16), packet_id: u16, out: &mut dyn Outbox) {
        self.encoding.clear();
        encode(&mut self.encoding, packet_id);
        out.binary(&self.encoding);
    }

    fn on_publish(&mut self, publish: PublishView<'_>, sink: &mut dyn Sink) {
        match (publish.qos, publish.packet_id) {
            (QoS::AtLeastOnce, Some(packet_id)) => self.answer(mqtt::encode_puback, packet_id, sink),
            (QoS::ExactlyOnce, Some(packet_id)) => {
                self.answer(mqtt::encode_pubrec, packet_id, sink);
                // Sent again before the broker's PUBREL: the same delivery, counted once.
                if !self.unreleased.first_time(packet_id) {
                    return sink.incoming(Incoming::Other);
                }
            }
            _ => {}
        }
        let payload = publish.payload;
        match self.usage {
            Use::Requests if publish.topic == self.echo_topic => {
                sink.incoming(Incoming::Reply { seq: None, payload })
            }
            Use::PubSub if self.template.is_none() => {
                sink.incoming(Incoming::Delivery { topic: publish.topic, payload })
            }
            Use::PubSub => match self.names.iter().find(|(topic, _)| topic == publish.topic) {
                Some((_, name)) => sink.incoming(Incoming::Delivery { topic: name, payload }),
                None => sink.incoming(Incoming::Delivery { topic: publish.topic, payload }),
            },
            Use::Stream => sink.incoming(Incoming::Delivery { topic: publish.topic, payload }),
            _ => sink.incoming(Incoming::Other),
        }
    }

    /// The end of a publish's exchange (`packet`: `puback`, `pubcomp`): it is forgotten; one
    /// the broker refused (MQTT 5 reason code 0x80 or more) is an error, freeing the echo
    /// request it carried.
    fn on_ack(&mut self, packet: &str, packet_id: u16, code: u8, sink: &mut dyn Sink) {
        let Some(seq) = self.unacked.finish(packet_id) else {
            return sink.incoming(Incoming::Other);
        };
        if code < 0x80 {
            return sink.incoming(Incoming::Other);
        }
        self.refused(packet, code, seq, sink);
    }

    /// A PUBREC of a QoS 2 publish: answered with PUBREL, the exchange open until PUBCOMP;
    /// a refusing one (0x80 or more) ends it as an error.
    fn on_pubrec(&mut self, packet_id: u16, code: u8, sink: &mut dyn Sink) {
        if !self.unacked.is_open(packet_id) {
            return sink.incoming(Incoming::Other);
        }
        if code >= 0x80 {
            let seq = self.unacked.finish(packet_id).flatten();
            return self.refused("pubrec", code, seq, sink);
        }
        self.answer(mqtt::encode_pubrel, packet_id, sink);
        sink.incoming(Incoming::Other);
    }

    /// The broker refused a publish by `packet`'s reason `code`: `mqtt_<packet>_<name>`.
    fn refused(&mut self, packet: &str, code: u8, seq: Option<u64>, sink: &mut dyn Sink) {
        let name = mqtt::reason_code_name(code);
        self.cause.clear();
        let _ = write!(self.cause, "mqtt_{packet}_{name}");
        self.detail.clear();
        let _ = write!(self.detail, "{} reason code {code:#04x} ({name})", packet.to_uppercase());
        sink.incoming(Incoming::Error { cause: &self.cause, detail: &self.detail, seq, fatal: false });
    }

    /// Bytes that are no MQTT packet a broker sends: the connection cannot go on.
    fn malformed(&mut self, error: &DecodeError, bytes: &[u8], sink: &mut dyn Sink) {
        self.fatal(sink, format_args!("mqtt_malformed"), |detail| {
            let _ = write!(detail, "{error}; the broker sent ");
            write_start(detail, bytes);
        });
    }

    /// A fatal error: counted by `cause`, the connection closed.
    fn fatal(
        &mut self,
        sink: &mut dyn Sink,
        cause: std::fmt::Arguments<'_>,
        detail: impl FnOnce(&mut String),
    ) {
        self.phase = Phase::Over;
        self.partial.clear();
        self.cause.clear();
        let _ = self.cause.write_fmt(cause);
        self.detail.clear();
        detail(&mut self.detail);
        sink.incoming(Incoming::Error { cause: &self.cause, detail: &self.detail, seq: None, fatal: true });
    }
}

impl Session for MqttSession {
    fn open(&mut self, _now: Instant, out: &mut dyn Outbox) {
        let connect = Connect {
            client_id: &self.client_id,
            keep_alive: KEEP_ALIVE.as_secs() as u16,
            clean_start: self.clean_start,
            username: self.credentials.username.as_deref(),
            password: self.credentials.password.as_deref(),
            session_expiry: self.session_expiry,
        };
        self.encoding.clear();
        // A client id of at most 64 + 30 bytes, and credentials checked before the run, fit.
        if mqtt::encode_connect(&mut self.encoding, self.version, &connect).is_ok() {
            out.binary(&self.encoding);
        }
    }

    fn ready(&self) -> bool {
        self.phase == Phase::Ready
    }

    fn request(&mut self, seq: u64, payload: &[u8], out: &mut dyn Outbox) {
        let topic = std::mem::take(&mut self.echo_topic);
        self.send_publish(&topic, payload, Some(seq), out);
        self.echo_topic = topic;
    }

    fn subscribe(&mut self, topic: &str, out: &mut dyn Outbox) {
        if self.phase == Phase::Ready {
            self.set_topic(topic);
            let mqtt_topic = std::mem::take(&mut self.topic);
            if self.template.is_some() && !self.names.iter().any(|(known, _)| *known == mqtt_topic) {
                self.names.push((mqtt_topic.clone(), topic.to_owned()));
            }
            self.send_subscribe(&mqtt_topic, topic, out);
            self.topic = mqtt_topic;
        }
    }

    fn subscribe_stream(&mut self, out: &mut dyn Outbox) {
        if self.phase == Phase::Ready {
            let filter = std::mem::take(&mut self.stream_filter);
            self.send_subscribe(&filter, &filter, out);
            self.stream_filter = filter;
        }
    }

    fn publish(&mut self, topic: &str, payload: &[u8], out: &mut dyn Outbox) {
        if self.template.is_none() {
            return self.send_publish(topic, payload, None, out);
        }
        self.set_topic(topic);
        let mqtt_topic = std::mem::take(&mut self.topic);
        self.send_publish(&mqtt_topic, payload, None, out);
        self.topic = mqtt_topic;
    }

    fn receive(&mut self, message: &[u8], binary: bool, now: Instant, sink: &mut dyn Sink) {
        if self.phase == Phase::Over {
            return;
        }
        if !binary {
            return self.fatal(sink, format_args!("mqtt_text_message"), |detail| {
                detail.push_str("the broker sent a text message (MQTT over WebSocket is binary): ");
                write_start(detail, message);
            });
        }
        if self.partial.is_empty() {
            let used = self.read_packets(message, now, sink);
            if self.phase != Phase::Over {
                self.partial.extend_from_slice(&message[used..]);
            }
        } else {
            let mut bytes = std::mem::take(&mut self.partial);
            bytes.extend_from_slice(message);
            let used = self.read_packets(&bytes, now, sink);
            bytes.drain(..used);
            if self.phase == Phase::Over {
                bytes.clear();
            }
            self.partial = bytes;
        }
        self.report_given_up(sink);
    }

    fn next_timer(&self) -> Option<Instant> {
        match self.phase {
            Phase::Subscribing | Phase::Ready => match (self.next_ping, self.pingresp_due) {
                (Some(ping), Some(due)) => Some(ping.min(due)),
                (ping, due) => ping.or(due),
            },
            Phase::Connecting | Phase::Over => None,
        }
    }

    /// Pings every half keep-alive, whatever else was sent; a PINGRESP not back within the
    /// keep-alive ends the connection.
    fn on_timer(&mut self, now: Instant, sink: &mut dyn Sink) {
        if !matches!(self.phase, Phase::Subscribing | Phase::Ready) {
            return;
        }
        if self.pingresp_due.is_some_and(|due| due <= now) {
            let seconds = KEEP_ALIVE.as_secs();
            return self.fatal(sink, format_args!("mqtt_pingresp_missed"), |detail| {
                let _ = write!(detail, "no PINGRESP within the keep-alive of {seconds} s");
            });
        }
        self.report_given_up(sink);
        if self.next_ping.is_some_and(|at| at <= now) {
            self.encoding.clear();
            mqtt::encode_pingreq(&mut self.encoding);
            sink.binary(&self.encoding);
            self.pingresp_due.get_or_insert(now + KEEP_ALIVE);
            self.next_ping = Some(now + KEEP_ALIVE / 2);
        }
    }

    /// A broker that closes before CONNACK most often does not speak the version asked for
    /// (RabbitMQ closes an MQTT 5 CONNECT with 1011, NATS without a close frame).
    fn ended_while_opening(&mut self, close: Option<(u16, &str)>, sink: &mut dyn Sink) {
        let awaited = match self.phase {
            Phase::Connecting => "connack",
            Phase::Subscribing => "suback",
            Phase::Ready | Phase::Over => return,
        };
        let version = self.version;
        self.fatal(sink, format_args!("mqtt_closed_before_{awaited}"), |detail| {
            let _ = write!(detail, "the broker ended the connection before its {}", awaited.to_uppercase());
            match close {
                Some((code, "")) => {
                    let _ = write!(detail, " (close {code})");
                }
                Some((code, reason)) => {
                    let _ = write!(detail, " (close {code} {reason:?})");
                }
                None => detail.push_str(" (no close frame)"),
            }
            if awaited == "connack" && version == Version::V5 {
                detail.push_str(": a broker without MQTT 5 does this; try --mqtt-version 3.1.1");
            }
        });
    }

    fn unacknowledged_publishes(&self) -> u64 {
        u64::from(matches!(self.usage, Use::PubSub)) * self.unacked.len() as u64
    }

    fn close(&mut self, out: &mut dyn Outbox) {
        if matches!(self.phase, Phase::Subscribing | Phase::Ready) {
            self.encoding.clear();
            mqtt::encode_disconnect(&mut self.encoding);
            out.binary(&self.encoding);
        }
        self.phase = Phase::Over;
    }
}

impl MqttSession {
    /// QoS 1 or 2 publishes given up unacknowledged (beyond [`MAX_UNACKED`]), each an
    /// error. The request a given-up echo publish carried stays outstanding: its delivery
    /// may still come.
    fn report_given_up(&mut self, sink: &mut dyn Sink) {
        let given_up = self.unacked.take_given_up();
        if given_up == 0 {
            return;
        }
        let (cause, awaited) = match self.qos {
            QoS::ExactlyOnce => ("mqtt_pubcomp_missing", "PUBCOMP"),
            _ => ("mqtt_puback_missing", "PUBACK"),
        };
        self.detail.clear();
        let qos = self.qos as u8;
        let _ = write!(self.detail, "no {awaited} while {MAX_UNACKED} later QoS {qos} publishes were sent");
        for _ in 0..given_up {
            sink.incoming(Incoming::Error { cause, detail: &self.detail, seq: None, fatal: false });
        }
    }
}

/// CONNECT's user name and password, kept out of `Debug` output.
struct Credentials {
    username: Option<String>,
    password: Option<Vec<u8>>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let password = self.password.as_ref().map(|_| crate::options::REDACTED);
        f.debug_struct("Credentials").field("username", &self.username).field("password", &password).finish()
    }
}

/// The packet's name, as the specification writes it.
fn packet_name(packet: &Packet<'_>) -> &'static str {
    match packet {
        Packet::ConnAck(_) => "CONNACK",
        Packet::SubAck(_) => "SUBACK",
        Packet::UnsubAck { .. } => "UNSUBACK",
        Packet::Publish(_) => "PUBLISH",
        Packet::PubAck { .. } => "PUBACK",
        Packet::PubRec { .. } => "PUBREC",
        Packet::PubRel { .. } => "PUBREL",
        Packet::PubComp { .. } => "PUBCOMP",
        Packet::PingResp => "PINGRESP",
        Packet::Disconnect { .. } => "DISCONNECT",
    }
}

/// The first bytes of `bytes`, readable: text as it is, other bytes as `\xNN`.
fn write_start(detail: &mut String, bytes: &[u8]) {
    const SHOWN: usize = 48;
    for &byte in bytes.iter().take(SHOWN) {
        match byte {
            b' '..=b'~' => detail.push(char::from(byte)),
            _ => {
                let _ = write!(detail, "\\x{byte:02x}");
            }
        }
    }
    if bytes.len() > SHOWN {
        detail.push('…');
    }
}
