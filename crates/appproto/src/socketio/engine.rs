//! Engine.IO protocol 4 over a WebSocket: the packet types of a text message, and the open
//! packet's handshake values. The open packet is read once per connection, so it is parsed
//! with serde; the other packets are one type digit and a borrowed payload.

use std::borrow::Cow;

use super::DecodeError;

/// The open packet's handshake values.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Open<'a> {
    /// The session id the server gave this connection.
    #[serde(borrow)]
    pub sid: Cow<'a, str>,
    /// How often the server pings, in ms.
    pub ping_interval: u64,
    /// How long after a ping the server waits for the pong, in ms.
    pub ping_timeout: u64,
    /// The largest packet the server accepts, in bytes.
    #[serde(default)]
    pub max_payload: u64,
}

/// An Engine.IO packet from a text WebSocket message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnginePacket<'a> {
    /// `0{…}`: the handshake, the first message of a connection.
    Open(Open<'a>),
    /// `1`: the server is closing the session.
    Close,
    /// `2` (+ payload): the server's heart-beat; answer with a pong carrying the same payload.
    Ping(&'a str),
    /// `3` (+ payload).
    Pong(&'a str),
    /// `4…`: a Socket.IO packet, for [`super::decode_packet`].
    Message(&'a str),
    /// `5`: upgrade (never sent to a client already on WebSocket).
    Upgrade,
    /// `6`: no-op.
    Noop,
}

/// Decodes the Engine.IO packet of a text WebSocket message.
pub fn decode_engine(message: &[u8]) -> Result<EnginePacket<'_>, DecodeError> {
    let text = std::str::from_utf8(message).map_err(|_| DecodeError::NotUtf8)?;
    let mut chars = text.chars();
    let kind = chars.next().ok_or(DecodeError::Empty)?;
    let payload = chars.as_str();
    match kind {
        '0' => serde_json::from_str(payload)
            .map(EnginePacket::Open)
            .map_err(|error| DecodeError::BadOpen(error.to_string())),
        '1' => Ok(EnginePacket::Close),
        '2' => Ok(EnginePacket::Ping(payload)),
        '3' => Ok(EnginePacket::Pong(payload)),
        '4' => Ok(EnginePacket::Message(payload)),
        '5' => Ok(EnginePacket::Upgrade),
        '6' => Ok(EnginePacket::Noop),
        other => Err(DecodeError::UnknownEngineType(other)),
    }
}
