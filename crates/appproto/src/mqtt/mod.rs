//! MQTT 3.1.1 and 5.0, the client's side, as MQTT-over-WebSocket brokers (mosquitto, NATS,
//! RabbitMQ web-mqtt) speak it: encoders for what a load client sends, an incremental
//! decoder for what a broker answers, and a name for every return and reason code so the
//! engine can count errors by cause.
//!
//! Over WebSocket one binary message may carry several packets and a packet may be split
//! over messages, so the decoder reads a byte buffer, not a message: [`Decoder::decode`]
//! returns a packet borrowing the buffer and how many bytes it took, or `Ok(None)` for
//! "need more bytes". It checks a packet's announced size against its limit before waiting
//! for the rest, and never allocates. Only the features a benchmark uses are encoded: QoS 0
//! and 1, one topic filter per (UN)SUBSCRIBE, no will, and empty MQTT 5 properties; v5
//! properties the broker sends are skipped.

mod codes;
mod decode;
mod encode;

pub use codes::{connack_code_name, reason_code_name, suback_code_name};
pub use decode::{ConnAck, Decoder, Packet, PublishView, SubAck};
pub use encode::{
    Connect, Publish, encode_connect, encode_disconnect, encode_pingreq, encode_puback, encode_pubcomp,
    encode_publish, encode_pubrec, encode_pubrel, encode_subscribe, encode_unsubscribe,
};

/// The protocol level a connection speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Version {
    /// MQTT 3.1.1 (protocol level 4).
    V311,
    /// MQTT 5.0 (protocol level 5).
    V5,
}

impl Version {
    /// The protocol level byte of CONNECT.
    pub fn level(self) -> u8 {
        match self {
            Version::V311 => 4,
            Version::V5 => 5,
        }
    }
}

/// Quality of service of a PUBLISH or a subscription.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QoS {
    AtMostOnce = 0,
    AtLeastOnce = 1,
    ExactlyOnce = 2,
}

impl QoS {
    /// The QoS of its two-bit value; `None` for 3 (malformed).
    pub fn from_bits(bits: u8) -> Option<QoS> {
        match bits {
            0 => Some(QoS::AtMostOnce),
            1 => Some(QoS::AtLeastOnce),
            2 => Some(QoS::ExactlyOnce),
            _ => None,
        }
    }
}

/// The largest remaining length MQTT can express (four length bytes).
pub const MAX_REMAINING_LENGTH: usize = 268_435_455;
/// A decoder's default limit on one packet (fixed header included): 1 MiB.
pub const DEFAULT_MAX_PACKET: usize = 1024 * 1024;

/// Why a packet could not be encoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    #[error("{field} of {len} bytes is longer than MQTT's 65,535")]
    StringTooLong { field: &'static str, len: usize },
    #[error("packet of {0} bytes after its fixed header exceeds MQTT's 268,435,455")]
    PacketTooLarge(usize),
    #[error("a QoS {0} packet needs a non-zero packet identifier")]
    MissingPacketId(u8),
}

/// Why bytes from a broker are not an acceptable packet. The connection cannot go on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("packet of {size} bytes exceeds the limit of {limit} bytes")]
    PacketTooLarge { size: usize, limit: usize },
    #[error("remaining length takes more than four bytes")]
    MalformedLength,
    #[error("malformed {packet}: {reason}")]
    Malformed { packet: &'static str, reason: &'static str },
    #[error("a client does not expect packet type {0} from a broker")]
    UnexpectedPacket(u8),
}

#[cfg(test)]
mod tests;
