//! Rails' Action Cable protocol, the client's side, as the `actioncable-v1-json` WebSocket
//! subprotocol carries it (Action Cable 6 and 7, and the servers that copy it, AnyCable
//! among them). Every message is one JSON object.
//!
//! From the server: `{"type":"welcome"}` once the connection is accepted, `{"type":"ping",
//! "message":SECONDS}` every 3 s, `{"type":"disconnect","reason":"unauthorized",
//! "reconnect":false}` before it closes, a subscription's `{"identifier":…,"type":
//! "confirm_subscription"}` or `"reject_subscription"`, and what a channel transmits or a
//! stream broadcasts, `{"identifier":…,"message":ANY}`. From the client: commands
//! `{"command":"subscribe"|"unsubscribe"|"message","identifier":…,"data":…}`.
//!
//! A subscription's identifier is itself JSON *text* carried as a string: the channel's
//! class name and its parameters, `{"channel":"ChatChannel","room":"1"}`, which the server
//! hands back byte for byte, so [`write_identifier`] writes it once and the session compares
//! it as text. A `message` command's data is also JSON text in a string, an object whose
//! `action` names the channel's method to perform. Encoders append to the caller's buffer
//! and allocate nothing when it has room; the decoder borrows from the message (strings
//! unless escaped, a transmitted message as its raw JSON text), never a `serde_json::Value`.

use std::borrow::Cow;

use serde_json::value::RawValue;

use crate::json::{Text, write_str};

/// The subprotocol that selects the JSON protocol.
pub const SUBPROTOCOL: &str = "actioncable-v1-json";
/// The subprotocols Rails' JavaScript client offers, in its order (the second tells an old
/// server that the client speaks no protocol it has).
pub const SUBPROTOCOLS: [&str; 2] = [SUBPROTOCOL, "actioncable-unsupported"];
/// Where Action Cable is mounted by default.
pub const PATH: &str = "/cable";
/// How often Action Cable's server pings every connection.
pub const PING_INTERVAL_SECS: u64 = 3;

/// What one message from the server is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerMessage<'a> {
    /// The connection was accepted: subscriptions may be sent.
    Welcome,
    /// The server's heartbeat.
    Ping,
    /// The server closes the connection: why (`unauthorized`, `invalid_request`,
    /// `server_restart`, …), and whether a client should come back.
    Disconnect { reason: Cow<'a, str>, reconnect: bool },
    /// The subscription `identifier` is in place.
    Confirmed { identifier: Cow<'a, str> },
    /// The channel refused the subscription `identifier`.
    Rejected { identifier: Cow<'a, str> },
    /// What the channel of `identifier` transmitted or its stream broadcast, as raw JSON.
    Message { identifier: Cow<'a, str>, message: &'a str },
    /// A type this client does not know (a newer server's).
    Unknown { kind: Cow<'a, str> },
}

/// Why a message is not Action Cable's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("not an Action Cable JSON message: {0}")]
    NotJson(String),
    #[error("a message with neither a type nor an identifier")]
    Unrecognised,
    #[error("a {0} without the identifier of its subscription")]
    NoIdentifier(&'static str),
}

#[derive(serde::Deserialize)]
struct RawMessage<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Text<'a>>,
    #[serde(default, borrow)]
    identifier: Option<Text<'a>>,
    #[serde(default, borrow, deserialize_with = "crate::json::some_raw")]
    message: Option<&'a RawValue>,
    #[serde(default, borrow)]
    reason: Option<Text<'a>>,
    #[serde(default)]
    reconnect: Option<bool>,
}

/// Decodes one message.
pub fn decode(message: &[u8]) -> Result<ServerMessage<'_>, DecodeError> {
    let text = message.trim_ascii();
    // serde would also read a struct from an array.
    if text.first() != Some(&b'{') {
        return Err(DecodeError::NotJson("not an object".into()));
    }
    let raw: RawMessage<'_> =
        serde_json::from_slice(text).map_err(|error| DecodeError::NotJson(error.to_string()))?;
    let identifier = raw.identifier.map(|text| text.0);
    let kind = raw.kind.map(|text| text.0);
    match kind.as_deref() {
        Some("welcome") => Ok(ServerMessage::Welcome),
        Some("ping") => Ok(ServerMessage::Ping),
        Some("disconnect") => Ok(ServerMessage::Disconnect {
            reason: raw.reason.map_or(Cow::Borrowed(""), |text| text.0),
            reconnect: raw.reconnect.unwrap_or(true),
        }),
        Some("confirm_subscription") => Ok(ServerMessage::Confirmed {
            identifier: identifier.ok_or(DecodeError::NoIdentifier("confirmation"))?,
        }),
        Some("reject_subscription") => Ok(ServerMessage::Rejected {
            identifier: identifier.ok_or(DecodeError::NoIdentifier("rejection"))?,
        }),
        Some(_) if raw.message.is_none() => {
            Ok(ServerMessage::Unknown { kind: kind.unwrap_or(Cow::Borrowed("")) })
        }
        _ => match (identifier, raw.message) {
            (Some(identifier), Some(message)) => {
                Ok(ServerMessage::Message { identifier, message: message.get() })
            }
            (None, Some(_)) => Err(DecodeError::NoIdentifier("message")),
            _ => Err(DecodeError::Unrecognised),
        },
    }
}

/// Appends the identifier of a subscription to `channel` with `params` (the JSON text of an
/// object, or empty for none) as JSON text: `{"channel":"NAME",PARAMS…}`, the channel
/// first as Rails' client writes it. `params` is copied as given, its braces left out.
pub fn write_identifier(out: &mut Vec<u8>, channel: &str, params: &str) {
    out.extend_from_slice(b"{\"channel\":");
    write_str(out, channel);
    let inner = params.trim().strip_prefix('{').and_then(|rest| rest.strip_suffix('}')).unwrap_or("").trim();
    if !inner.is_empty() {
        out.push(b',');
        out.extend_from_slice(inner.as_bytes());
    }
    out.push(b'}');
}

fn command(out: &mut Vec<u8>, command: &str, identifier: &str) {
    out.extend_from_slice(b"{\"command\":\"");
    out.extend_from_slice(command.as_bytes());
    out.extend_from_slice(b"\",\"identifier\":");
    write_str(out, identifier);
}

/// `subscribe` to the subscription `identifier` (its JSON text).
pub fn encode_subscribe(out: &mut Vec<u8>, identifier: &str) {
    command(out, "subscribe", identifier);
    out.push(b'}');
}

/// `unsubscribe` from the subscription `identifier`.
pub fn encode_unsubscribe(out: &mut Vec<u8>, identifier: &str) {
    command(out, "unsubscribe", identifier);
    out.push(b'}');
}

/// A `message` command performing on the subscription `identifier`: `data` is the JSON
/// text of an object whose `action` names the channel's method (see [`write_action`]).
pub fn encode_message(out: &mut Vec<u8>, identifier: &str, data: &str) {
    command(out, "message", identifier);
    out.extend_from_slice(b",\"data\":");
    write_str(out, data);
    out.push(b'}');
}

/// Appends the data of an action: `{"action":"NAME",FIELDS…}`, `fields` the JSON text of
/// the other members (`"payload":…`), copied as given; empty for none.
pub fn write_action(out: &mut Vec<u8>, action: &str, fields: &str) {
    out.extend_from_slice(b"{\"action\":");
    write_str(out, action);
    if !fields.is_empty() {
        out.push(b',');
        out.extend_from_slice(fields.as_bytes());
    }
    out.push(b'}');
}

#[derive(serde::Deserialize)]
struct RawFields<'a> {
    #[serde(default, borrow)]
    seq: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "crate::json::some_raw")]
    payload: Option<&'a RawValue>,
}

/// The members an action's data carried, read back from what a channel transmitted (an
/// echo channel transmits the data it was given): `seq`, when a whole number, and the raw
/// JSON of `payload`. Both `None` when `message` is no object.
pub fn action_fields(message: &str) -> (Option<u64>, Option<&str>) {
    if !message.trim_start().starts_with('{') {
        return (None, None);
    }
    match serde_json::from_str::<RawFields<'_>>(message) {
        Ok(fields) => (fields.seq.and_then(|seq| seq.get().parse().ok()), fields.payload.map(RawValue::get)),
        Err(_) => (None, None),
    }
}

#[cfg(test)]
mod tests;
