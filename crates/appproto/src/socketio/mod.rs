//! Socket.IO as socket.io 4.x speaks it over a WebSocket: Engine.IO protocol 4 (the open
//! handshake, ping/pong heart-beats, message packets) carrying Socket.IO protocol 5 packets
//! (namespace connect, events, acknowledgements, binary attachments).
//!
//! Over the `websocket` transport each Engine.IO packet is one WebSocket message: a text
//! message is a type digit and its payload (`4` + a Socket.IO packet is a message), and a
//! binary message is a binary Engine.IO message, which Socket.IO uses for the attachments
//! of a BINARY_EVENT or BINARY_ACK, in order, after its text packet. So decoding is per
//! message: [`decode_engine`] then, for a `Message`, [`decode_packet`]. Views borrow the
//! message and hand out JSON as text (the arguments of an event are found by their
//! boundaries, not parsed), so the hot path builds no JSON tree. The server pings; a
//! client answers each `2` with `3` ([`encode_pong`]) within the open packet's `pingTimeout`.

mod encode;
mod engine;
mod packet;

pub use encode::{Arg, encode_ack, encode_connect, encode_disconnect, encode_emit, encode_pong};
pub use engine::{EnginePacket, Open, decode_engine};
pub use packet::{Event, Packet, PacketType, decode_packet, placeholder_num};

/// The path and query a client opens the WebSocket on (the default path `/socket.io/`).
pub const WEBSOCKET_PATH: &str = "/socket.io/?EIO=4&transport=websocket";

/// Why a message is not a Socket.IO packet a client can use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("empty Engine.IO packet")]
    Empty,
    #[error("unknown Engine.IO packet type {0:?}")]
    UnknownEngineType(char),
    #[error("Engine.IO text packet is not UTF-8")]
    NotUtf8,
    #[error("bad Engine.IO open packet: {0}")]
    BadOpen(String),
    #[error("unknown Socket.IO packet type {0:?}")]
    UnknownPacketType(char),
    #[error("malformed Socket.IO packet: {0}")]
    Malformed(&'static str),
}

#[cfg(test)]
mod tests;
