//! The graphql-transport-ws protocol (the graphql-ws library, subprotocol
//! `graphql-transport-ws`), the client's side: `connection_init` → `connection_ack`, then
//! `subscribe` operations answered by `next`s and a `complete`, or an `error`; `ping`/`pong`
//! either way. Every message is one JSON text WebSocket message.
//!
//! Encoders append one message and allocate nothing when the buffer has room; the query is
//! escaped, variables and payloads are JSON text copied as given. The decoder reads one
//! message into a view that borrows it: ids are borrowed strings, payloads their JSON text
//! (`&str`, found by serde_json's `RawValue`), never a `serde_json::Value`. An `error`
//! carries its first GraphQL error's `message`, so the engine can count errors by it; a
//! `next`'s result gives up its `data` and the value of its only field the same way. A
//! server closes the WebSocket with a code of its own on a protocol violation;
//! [`close_code_name`] names them.

use std::borrow::Cow;

use serde_json::value::RawValue;

use crate::json::{Text, string_value, write_str};

/// The WebSocket subprotocol to offer; without it a graphql-ws server closes with 4406.
pub const SUBPROTOCOL: &str = "graphql-transport-ws";

/// One operation to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Subscribe<'a> {
    pub query: &'a str,
    /// A JSON object, copied as given.
    pub variables: Option<&'a str>,
    pub operation_name: Option<&'a str>,
}

/// A message of the protocol, borrowing the text it was decoded from; payloads are their
/// JSON text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message<'a> {
    ConnectionInit {
        payload: Option<&'a str>,
    },
    ConnectionAck {
        payload: Option<&'a str>,
    },
    Ping {
        payload: Option<&'a str>,
    },
    Pong {
        payload: Option<&'a str>,
    },
    Subscribe {
        id: Cow<'a, str>,
        payload: &'a str,
    },
    /// One execution result (`{"data":…}`, maybe with `errors`, see [`execution_error`]).
    Next {
        id: Cow<'a, str>,
        payload: &'a str,
    },
    /// The operation failed before executing; `message` is the first error's, `code` its
    /// `extensions.code` when it has a string one.
    Error {
        id: Cow<'a, str>,
        message: Cow<'a, str>,
        code: Option<Cow<'a, str>>,
        payload: &'a str,
    },
    Complete {
        id: Cow<'a, str>,
    },
}

/// Why a text is not a graphql-transport-ws message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("not a graphql-transport-ws message: {0}")]
    NotJson(String),
    #[error("unknown message type {0:?}")]
    UnknownType(String),
    #[error("{0} message without an id")]
    MissingId(&'static str),
    #[error("{0} message without a payload")]
    MissingPayload(&'static str),
    #[error("error message whose payload is not a list of GraphQL errors")]
    BadErrorPayload,
}

#[derive(serde::Deserialize)]
struct RawMessage<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    id: Option<Text<'a>>,
    #[serde(default, borrow, deserialize_with = "crate::json::some_raw")]
    payload: Option<&'a RawValue>,
}

#[derive(serde::Deserialize)]
struct GraphQlError<'a> {
    #[serde(borrow)]
    message: Cow<'a, str>,
    #[serde(default, borrow)]
    extensions: Option<Extensions<'a>>,
}

/// A GraphQL error's `extensions`: servers put a machine-readable `code` there (Apollo's
/// `FORBIDDEN`, `BAD_USER_INPUT`; Hasura's `validation-failed`). Any other value of it is
/// read past.
#[derive(serde::Deserialize)]
struct Extensions<'a> {
    #[serde(default, borrow, deserialize_with = "crate::json::some_raw")]
    code: Option<&'a RawValue>,
}

impl<'a> GraphQlError<'a> {
    /// Its message, and its `extensions.code` when that is a string.
    fn into_parts(self) -> (Cow<'a, str>, Option<Cow<'a, str>>) {
        let code =
            self.extensions.and_then(|extensions| extensions.code).and_then(|code| string_value(code.get()));
        (self.message, code)
    }
}

#[derive(serde::Deserialize)]
struct ExecutionResult<'a> {
    #[serde(default, borrow)]
    errors: Option<Vec<GraphQlError<'a>>>,
}

#[derive(serde::Deserialize)]
struct ResultData<'a> {
    #[serde(default, borrow)]
    data: Option<&'a RawValue>,
}

/// The value of an object's only member, or `None` when the object has none or several.
struct OnlyMember<'a>(Option<&'a RawValue>);

impl<'de> serde::Deserialize<'de> for OnlyMember<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::{IgnoredAny, MapAccess, Visitor};
        struct Members;
        impl<'de> Visitor<'de> for Members {
            type Value = OnlyMember<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let Some(IgnoredAny) = map.next_key()? else { return Ok(OnlyMember(None)) };
                let value: &'de RawValue = map.next_value()?;
                let mut only = true;
                // The rest is read to its end: the parser wants the whole object.
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {
                    only = false;
                }
                Ok(OnlyMember(only.then_some(value)))
            }
        }
        deserializer.deserialize_map(Members)
    }
}

/// Decodes one message.
pub fn decode(message: &[u8]) -> Result<Message<'_>, DecodeError> {
    // serde would also read a struct from an array.
    if message.trim_ascii_start().first() != Some(&b'{') {
        return Err(DecodeError::NotJson("not an object".into()));
    }
    let raw: RawMessage<'_> =
        serde_json::from_slice(message).map_err(|error| DecodeError::NotJson(error.to_string()))?;
    let id = |kind| raw.id.clone().map(|id| id.0).ok_or(DecodeError::MissingId(kind));
    let payload = |kind| raw.payload.map(RawValue::get).ok_or(DecodeError::MissingPayload(kind));
    let optional = raw.payload.map(RawValue::get);
    Ok(match raw.kind.as_ref() {
        "connection_init" => Message::ConnectionInit { payload: optional },
        "connection_ack" => Message::ConnectionAck { payload: optional },
        "ping" => Message::Ping { payload: optional },
        "pong" => Message::Pong { payload: optional },
        "subscribe" => Message::Subscribe { id: id("subscribe")?, payload: payload("subscribe")? },
        "next" => Message::Next { id: id("next")?, payload: payload("next")? },
        "error" => {
            let payload = payload("error")?;
            let errors: Vec<GraphQlError<'_>> =
                serde_json::from_str(payload).map_err(|_| DecodeError::BadErrorPayload)?;
            let (message, code) =
                errors.into_iter().next().map_or((Cow::Borrowed(""), None), GraphQlError::into_parts);
            Message::Error { id: id("error")?, message, code, payload }
        }
        "complete" => Message::Complete { id: id("complete")? },
        other => return Err(DecodeError::UnknownType(other.to_owned())),
    })
}

/// The first error's message of an execution result that has `errors` (a `next` whose
/// resolver failed), with its `extensions.code` when it has a string one, or `None`. Cheap
/// when there are none: the payload is parsed only if it mentions `"errors"`.
pub fn execution_error(payload: &str) -> Option<(Cow<'_, str>, Option<Cow<'_, str>>)> {
    if !payload.contains("\"errors\"") {
        return None;
    }
    let result: ExecutionResult<'_> = serde_json::from_str(payload).ok()?;
    result.errors?.into_iter().next().map(GraphQlError::into_parts)
}

/// The error cause of a GraphQL error, written into `cause`: `graphql_error`, or with the
/// error's `extensions.code` `graphql_error_CODE`, the code in snake case (`FORBIDDEN` →
/// `graphql_error_forbidden`, `validation-failed` → `graphql_error_validation_failed`), at
/// most [`MAX_CODE`] characters of it.
pub fn error_cause<'c>(cause: &'c mut String, code: Option<&str>) -> &'c str {
    cause.clear();
    cause.push_str("graphql_error");
    if let Some(code) = code.filter(|code| !code.is_empty()) {
        cause.push('_');
        let snake = code.chars().take(MAX_CODE).map(|c| match c.is_ascii_alphanumeric() {
            true => c.to_ascii_lowercase(),
            false => '_',
        });
        cause.extend(snake);
    }
    cause
}

/// How much of an error's code its cause keeps.
pub const MAX_CODE: usize = 40;

/// The `data` of an execution result (a `next`'s payload) as JSON text; `None` when it has
/// none, or it is not an object.
pub fn result_data(payload: &str) -> Option<&str> {
    let result: ResultData<'_> = serde_json::from_str(payload).ok()?;
    result.data.map(RawValue::get).filter(|data| *data != "null")
}

/// The value of the only field of `data` (`{"echo":"hi"}` → `"hi"`) as JSON text: what a
/// one-field operation answered. `None` when `data` is not an object of exactly one field.
pub fn only_field(data: &str) -> Option<&str> {
    serde_json::from_str::<OnlyMember<'_>>(data).ok()?.0.map(RawValue::get)
}

/// The value a result's `data` comes down to through objects of one field each
/// (`{"room":{"body":"hi"}}` → `"hi"`), as JSON text: what an operation selecting one field
/// answered, however deep. `data` itself when it has several fields.
pub fn innermost_field(data: &str) -> &str {
    let mut value = data;
    while let Some(inner) = only_field(value) {
        value = inner;
    }
    value
}

fn put_type(out: &mut Vec<u8>, kind: &str) {
    out.extend_from_slice(b"{\"type\":\"");
    out.extend_from_slice(kind.as_bytes());
    out.push(b'"');
}

fn put_optional_payload(out: &mut Vec<u8>, payload: Option<&str>) {
    if let Some(payload) = payload {
        out.extend_from_slice(b",\"payload\":");
        out.extend_from_slice(payload.as_bytes());
    }
    out.push(b'}');
}

/// `connection_init`, with the optional payload (a JSON object, e.g. credentials).
pub fn encode_connection_init(out: &mut Vec<u8>, payload: Option<&str>) {
    put_type(out, "connection_init");
    put_optional_payload(out, payload);
}

/// `ping`, with the optional JSON payload.
pub fn encode_ping(out: &mut Vec<u8>, payload: Option<&str>) {
    put_type(out, "ping");
    put_optional_payload(out, payload);
}

/// `pong`, the answer to a server's `ping`.
pub fn encode_pong(out: &mut Vec<u8>, payload: Option<&str>) {
    put_type(out, "pong");
    put_optional_payload(out, payload);
}

/// `subscribe` operation `id` (unique among the connection's running operations).
pub fn encode_subscribe(out: &mut Vec<u8>, id: &str, subscribe: &Subscribe<'_>) {
    put_type(out, "subscribe");
    out.extend_from_slice(b",\"id\":");
    write_str(out, id);
    out.extend_from_slice(b",\"payload\":{\"query\":");
    write_str(out, subscribe.query);
    if let Some(variables) = subscribe.variables {
        out.extend_from_slice(b",\"variables\":");
        out.extend_from_slice(variables.as_bytes());
    }
    if let Some(name) = subscribe.operation_name {
        out.extend_from_slice(b",\"operationName\":");
        write_str(out, name);
    }
    out.extend_from_slice(b"}}");
}

/// `subscribe` operation `id` whose payload (`{"query":…,"variables":…}`, JSON text) is
/// written by `payload`: an operation given whole, as a template filled in.
pub fn encode_subscribe_payload(out: &mut Vec<u8>, id: &str, payload: impl FnOnce(&mut Vec<u8>)) {
    put_type(out, "subscribe");
    out.extend_from_slice(b",\"id\":");
    write_str(out, id);
    out.extend_from_slice(b",\"payload\":");
    payload(out);
    out.push(b'}');
}

/// `complete`: the client stops operation `id`.
pub fn encode_complete(out: &mut Vec<u8>, id: &str) {
    put_type(out, "complete");
    out.extend_from_slice(b",\"id\":");
    write_str(out, id);
    out.push(b'}');
}

/// The name of a close code graphql-ws servers use, or `None` for another code.
pub fn close_code_name(code: u16) -> Option<&'static str> {
    Some(match code {
        4400 => "bad_request",
        4401 => "unauthorized",
        4403 => "forbidden",
        4406 => "subprotocol_not_acceptable",
        4408 => "connection_initialisation_timeout",
        4409 => "subscriber_already_exists",
        4429 => "too_many_initialisation_requests",
        4499 => "terminated",
        4500 => "internal_server_error",
        _ => return None,
    })
}

#[cfg(test)]
mod tests;
