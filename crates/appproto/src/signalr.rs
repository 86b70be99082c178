//! ASP.NET Core SignalR's JSON hub protocol (version 1), the client's side, as the hub
//! protocol specification (dotnet/aspnetcore `src/SignalR/docs/specs/HubProtocol.md`) and the
//! official clients write it. Every message is one JSON object ended by the ASCII record
//! separator 0x1E; one WebSocket message may hold several.
//!
//! The client opens with the handshake request `{"protocol":"json","version":1}␞`, answered
//! `{}␞` (accepted) or `{"error":"…"}␞` (refused). Then: invocations (type 1, `target` and
//! `arguments`, an `invocationId` when a completion is wanted), stream items (2), completions
//! (3, with `result` or `error`), stream invocations (4), cancellations (5), pings (6) and the
//! close (7, with the `error` it was closed for and whether to reconnect). Encoders append to
//! the caller's buffer and allocate nothing when it has room; the decoder borrows from the
//! message (strings unless escaped, results and arguments as their raw JSON text), never a
//! `serde_json::Value`.

use std::borrow::Cow;

use serde_json::value::RawValue;

use crate::json::{Text, write_str};

/// Ends every message of the JSON hub protocol.
pub const RECORD_SEPARATOR: u8 = 0x1e;
/// Where a hub is mapped when the target names no path (ASP.NET's samples' and the fleet
/// member's).
pub const PATH: &str = "/hub";
/// How often the official clients ping a silent server, and servers their clients.
pub const KEEP_ALIVE_SECS: u64 = 15;
/// How long the official clients wait for any message before giving the server up.
pub const SERVER_TIMEOUT_SECS: u64 = 30;

/// Message types.
pub const INVOCATION: u64 = 1;
pub const STREAM_ITEM: u64 = 2;
pub const COMPLETION: u64 = 3;
pub const STREAM_INVOCATION: u64 = 4;
pub const CANCEL_INVOCATION: u64 = 5;
pub const PING: u64 = 6;
pub const CLOSE: u64 = 7;

/// One hub message from the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HubMessage<'a> {
    /// The server invokes `target` on the client (a broadcast, a group's message), with its
    /// arguments as the raw JSON array.
    Invocation { invocation_id: Option<Cow<'a, str>>, target: Cow<'a, str>, arguments: &'a str },
    /// One item of the stream `invocation_id`, as raw JSON.
    StreamItem { invocation_id: Cow<'a, str>, item: &'a str },
    /// The invocation `invocation_id` ended: its result (raw JSON, absent for a method
    /// returning nothing) or its error.
    Completion { invocation_id: Cow<'a, str>, result: Option<&'a str>, error: Option<Cow<'a, str>> },
    /// A keep-alive.
    Ping,
    /// The server closes the connection: why, when for an error, and whether to reconnect.
    Close { error: Option<Cow<'a, str>>, allow_reconnect: bool },
    /// A type this client has no use for (a stream invocation or cancellation from the
    /// server, a newer protocol's acknowledgement or sequence message).
    Other { kind: u64 },
}

/// Why a message is not the JSON hub protocol's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("not a SignalR JSON message: {0}")]
    NotJson(String),
    #[error("a message without its record separator (0x1E) at the end")]
    Unterminated,
    #[error("a message without a type")]
    NoType,
    #[error("a {0} without its {1}")]
    Missing(&'static str, &'static str),
    #[error("a completion with both a result and an error")]
    ResultAndError,
}

#[derive(serde::Deserialize)]
struct RawMessage<'a> {
    #[serde(rename = "type", default)]
    kind: Option<u64>,
    #[serde(rename = "invocationId", default, borrow)]
    invocation_id: Option<Text<'a>>,
    #[serde(default, borrow)]
    target: Option<Text<'a>>,
    #[serde(default, borrow)]
    arguments: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "crate::json::some_raw")]
    result: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "crate::json::some_raw")]
    item: Option<&'a RawValue>,
    #[serde(default, borrow)]
    error: Option<Text<'a>>,
    #[serde(rename = "allowReconnect", default)]
    allow_reconnect: Option<bool>,
}

/// The records of one WebSocket message, each without its separator. A message that does
/// not end with the separator yields [`DecodeError::Unterminated`] for its last part.
pub fn records(message: &[u8]) -> impl Iterator<Item = Result<&[u8], DecodeError>> {
    let mut rest = message;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        match rest.iter().position(|&b| b == RECORD_SEPARATOR) {
            Some(at) => {
                let record = &rest[..at];
                rest = &rest[at + 1..];
                Some(Ok(record))
            }
            None => {
                rest = &[];
                Some(Err(DecodeError::Unterminated))
            }
        }
    })
}

/// Reads the handshake response (one record, its separator removed): `Ok(None)` accepted,
/// `Ok(Some(error))` refused with the server's words.
pub fn decode_handshake(record: &[u8]) -> Result<Option<Cow<'_, str>>, DecodeError> {
    let raw = object(record)?;
    Ok(raw.error.map(|text| text.0))
}

/// Decodes one record (its separator removed).
pub fn decode(record: &[u8]) -> Result<HubMessage<'_>, DecodeError> {
    let raw = object(record)?;
    let id = raw.invocation_id.map(|text| text.0);
    match raw.kind.ok_or(DecodeError::NoType)? {
        INVOCATION => Ok(HubMessage::Invocation {
            invocation_id: id,
            target: raw.target.ok_or(DecodeError::Missing("invocation", "target"))?.0,
            arguments: raw.arguments.map_or("[]", RawValue::get),
        }),
        STREAM_ITEM => Ok(HubMessage::StreamItem {
            invocation_id: id.ok_or(DecodeError::Missing("stream item", "invocationId"))?,
            item: raw.item.map_or("null", RawValue::get),
        }),
        COMPLETION => {
            let invocation_id = id.ok_or(DecodeError::Missing("completion", "invocationId"))?;
            if raw.result.is_some() && raw.error.is_some() {
                return Err(DecodeError::ResultAndError);
            }
            let (result, error) = (raw.result.map(RawValue::get), raw.error.map(|text| text.0));
            Ok(HubMessage::Completion { invocation_id, result, error })
        }
        PING => Ok(HubMessage::Ping),
        CLOSE => Ok(HubMessage::Close {
            error: raw.error.map(|text| text.0),
            allow_reconnect: raw.allow_reconnect.unwrap_or(false),
        }),
        kind => Ok(HubMessage::Other { kind }),
    }
}

fn object(record: &[u8]) -> Result<RawMessage<'_>, DecodeError> {
    let text = record.trim_ascii();
    // serde would also read a struct from an array.
    if text.first() != Some(&b'{') {
        return Err(DecodeError::NotJson("not an object".into()));
    }
    serde_json::from_slice(text).map_err(|error| DecodeError::NotJson(error.to_string()))
}

/// Appends the handshake request for the JSON protocol, version 1.
pub fn encode_handshake(out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"protocol\":\"json\",\"version\":1}");
    out.push(RECORD_SEPARATOR);
}

/// Appends an invocation of `target` whose arguments are `arguments` (each raw JSON),
/// wanting a completion when `invocation_id` is given.
pub fn encode_invocation(out: &mut Vec<u8>, invocation_id: Option<&str>, target: &str, arguments: &[&[u8]]) {
    out.extend_from_slice(b"{\"type\":1,");
    if let Some(id) = invocation_id {
        out.extend_from_slice(b"\"invocationId\":");
        write_str(out, id);
        out.push(b',');
    }
    out.extend_from_slice(b"\"target\":");
    write_str(out, target);
    out.extend_from_slice(b",\"arguments\":[");
    for (i, argument) in arguments.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(argument);
    }
    out.extend_from_slice(b"]}");
    out.push(RECORD_SEPARATOR);
}

/// Appends a ping.
pub fn encode_ping(out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"type\":6}");
    out.push(RECORD_SEPARATOR);
}

/// Appends a close without an error (the client leaves).
pub fn encode_close(out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"type\":7}");
    out.push(RECORD_SEPARATOR);
}

#[cfg(test)]
mod tests;
