//! JSON-RPC 2.0 over WebSocket, the client's side: requests and notifications out; results,
//! errors and notifications in, each one JSON text message. rpc-websockets (a common Node
//! server) adds a pub/sub of its own on top: a client subscribes with the call `rpc.on`
//! (params: event names) and leaves with `rpc.off`, and the server pushes
//! `{"notification":"EVENT","params":…}`, which is not a JSON-RPC message at all; the
//! decoder returns it as an [`Message::Event`].
//!
//! Encoders append one message and allocate nothing when the buffer has room; params are
//! JSON text copied as given. The decoder borrows: ids, method names and messages are
//! borrowed strings unless escaped, results and params their JSON text, never a
//! `serde_json::Value`. A message that is neither a response, a notification nor an event
//! is an error that says what it lacked. Note rpc-websockets treats a call with id 0 as a
//! notification and never answers it: number requests from 1.

use std::borrow::Cow;

use serde_json::value::RawValue;

use crate::json::{Text, parse_u64, string_value, write_str, write_u64};

/// A request id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Id<'a> {
    Number(u64),
    Str(Cow<'a, str>),
    /// A response to a request whose id could not be read.
    Null,
    /// Any other JSON value (a negative or fractional number), as its text.
    Other(&'a str),
}

/// A message from the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message<'a> {
    /// A call's result, as JSON text.
    Result { id: Id<'a>, result: &'a str },
    /// A call's error: `data`, if given, as JSON text.
    Error { id: Id<'a>, code: i64, message: Cow<'a, str>, data: Option<&'a str> },
    /// A JSON-RPC notification (a request without an id).
    Notification { method: Cow<'a, str>, params: Option<&'a str> },
    /// An rpc-websockets event pushed to its subscribers.
    Event { name: Cow<'a, str>, params: Option<&'a str> },
}

/// Why a text message is not one a JSON-RPC client can use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("not a JSON object: {0}")]
    NotJson(String),
    #[error("not a JSON-RPC 2.0 message: {0}")]
    NotJsonRpc(&'static str),
    #[error("error object without an integer code and a message")]
    BadErrorObject,
    #[error("a request from the server (method {0:?}) is not supported")]
    ServerRequest(String),
}

#[derive(serde::Deserialize)]
struct RawMessage<'a> {
    #[serde(default, borrow)]
    jsonrpc: Option<Text<'a>>,
    #[serde(default, borrow, deserialize_with = "crate::json::some_raw")]
    id: Option<&'a RawValue>,
    #[serde(default, borrow)]
    method: Option<Text<'a>>,
    #[serde(default, borrow, deserialize_with = "crate::json::some_raw")]
    params: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "crate::json::some_raw")]
    result: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "crate::json::some_raw")]
    error: Option<&'a RawValue>,
    #[serde(default, borrow)]
    notification: Option<Text<'a>>,
}

#[derive(serde::Deserialize)]
struct ErrorObject<'a> {
    code: i64,
    #[serde(borrow)]
    message: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "crate::json::some_raw")]
    data: Option<&'a RawValue>,
}

impl<'a> Id<'a> {
    fn from_json(raw: &'a str) -> Id<'a> {
        if raw == "null" {
            return Id::Null;
        }
        if let Some(number) = parse_u64(raw.as_bytes()) {
            return Id::Number(number);
        }
        string_value(raw).map_or(Id::Other(raw), Id::Str)
    }

    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Id::Number(number) => write_u64(out, *number),
            Id::Str(text) => write_str(out, text),
            Id::Null => out.extend_from_slice(b"null"),
            Id::Other(raw) => out.extend_from_slice(raw.as_bytes()),
        }
    }
}

/// Decodes one message from the server.
pub fn decode(message: &[u8]) -> Result<Message<'_>, DecodeError> {
    if message.trim_ascii_start().first() != Some(&b'{') {
        return Err(DecodeError::NotJson("not an object (batches are not supported)".into()));
    }
    let raw: RawMessage<'_> =
        serde_json::from_slice(message).map_err(|error| DecodeError::NotJson(error.to_string()))?;
    if let Some(name) = raw.notification {
        return Ok(Message::Event { name: name.0, params: raw.params.map(RawValue::get) });
    }
    if raw.jsonrpc.as_ref().map(|version| version.0.as_ref()) != Some("2.0") {
        return Err(DecodeError::NotJsonRpc("no \"jsonrpc\":\"2.0\""));
    }
    let id = raw.id.map(|id| Id::from_json(id.get()));
    match (raw.result, raw.error, raw.method) {
        (Some(_), Some(_), _) => Err(DecodeError::NotJsonRpc("both a result and an error")),
        (Some(result), None, _) => {
            let id = id.ok_or(DecodeError::NotJsonRpc("a result without an id"))?;
            Ok(Message::Result { id, result: result.get() })
        }
        (None, Some(error), _) => {
            let error: ErrorObject<'_> =
                serde_json::from_str(error.get()).map_err(|_| DecodeError::BadErrorObject)?;
            let data = error.data.map(RawValue::get);
            Ok(Message::Error { id: id.unwrap_or(Id::Null), code: error.code, message: error.message, data })
        }
        (None, None, Some(method)) if id.is_none() => {
            Ok(Message::Notification { method: method.0, params: raw.params.map(RawValue::get) })
        }
        (None, None, Some(method)) => Err(DecodeError::ServerRequest(method.0.into_owned())),
        (None, None, None) => Err(DecodeError::NotJsonRpc("neither a result, an error nor a method")),
    }
}

/// The name of a JSON-RPC error code: the specification's, `server_error` for its
/// implementation-defined range (-32000 to -32099), else `application_error`.
pub fn error_code_name(code: i64) -> &'static str {
    match code {
        -32700 => "parse_error",
        -32600 => "invalid_request",
        -32601 => "method_not_found",
        -32602 => "invalid_params",
        -32603 => "internal_error",
        -32099..=-32000 => "server_error",
        _ => "application_error",
    }
}

fn put_method(out: &mut Vec<u8>, method: &str, params: Option<&str>) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":");
    write_str(out, method);
    if let Some(params) = params {
        out.extend_from_slice(b",\"params\":");
        out.extend_from_slice(params.as_bytes());
    }
}

/// A call of `method` with `params` (a JSON array or object), answered by a response
/// carrying `id`.
pub fn encode_request(out: &mut Vec<u8>, id: &Id<'_>, method: &str, params: Option<&str>) {
    put_method(out, method, params);
    out.extend_from_slice(b",\"id\":");
    id.write(out);
    out.push(b'}');
}

/// A notification: a call without an id, which the server does not answer.
pub fn encode_notification(out: &mut Vec<u8>, method: &str, params: Option<&str>) {
    put_method(out, method, params);
    out.push(b'}');
}

fn put_event_call(out: &mut Vec<u8>, id: &Id<'_>, method: &str, events: &[&str]) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":\"");
    out.extend_from_slice(method.as_bytes());
    out.extend_from_slice(b"\",\"params\":[");
    for (i, event) in events.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(out, event);
    }
    out.extend_from_slice(b"],\"id\":");
    id.write(out);
    out.push(b'}');
}

/// rpc-websockets: subscribe to `events` (the call `rpc.on`); the result maps each event
/// to `"ok"` or why not.
pub fn encode_subscribe(out: &mut Vec<u8>, id: &Id<'_>, events: &[&str]) {
    put_event_call(out, id, "rpc.on", events);
}

/// rpc-websockets: unsubscribe from `events` (the call `rpc.off`).
pub fn encode_unsubscribe(out: &mut Vec<u8>, id: &Id<'_>, events: &[&str]) {
    put_event_call(out, id, "rpc.off", events);
}

#[cfg(test)]
mod tests;
