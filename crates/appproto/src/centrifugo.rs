//! Centrifugo's client protocol (version 2, JSON), the client's side, as the server's
//! `/connection/websocket` endpoint speaks it: commands out, each a JSON object with a
//! numeric `id` (from 1; the server disconnects a command with id 0) and one request
//! (`connect`, `subscribe`, `publish`); replies in, each carrying the id of the command it
//! answers with its result or an `error` (`code`, `message`), and pushes without an id (a
//! publication on a channel, a server-side unsubscribe, a disconnect). A server ping is an
//! empty object `{}`, answered by the client with `{}` when the connect result asked for
//! pongs (`"pong":true`) and never otherwise (the server disconnects an unasked pong).
//!
//! One WebSocket message may hold several replies, one per line (Centrifugo batches them):
//! [`lines`] splits them. A publication's data is JSON carried as it is, so encoders take
//! it as JSON text and the decoder hands it back as the JSON text it came as. Encoders
//! append one command and allocate nothing when the buffer has room; the decoder borrows
//! from the line (channel names and messages unless escaped), never a `serde_json::Value`.

use std::borrow::Cow;

use serde_json::value::RawValue;

use crate::json::{Text, write_str, write_u64};

/// The path Centrifugo serves its bidirectional WebSocket on.
pub const PATH: &str = "/connection/websocket";

/// What one line from the server is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply<'a> {
    /// A server ping, `{}`.
    Ping,
    /// The connect command's result: the client id, the server's ping interval in seconds
    /// (0: no pings) and whether the server wants pongs.
    Connected { id: u32, client: Cow<'a, str>, ping: u32, pong: bool },
    /// A successful result of any other command (subscribe, publish, ...).
    Done { id: u32 },
    /// Command `id` failed.
    Error { id: u32, code: u32, message: Cow<'a, str> },
    /// A publication on `channel`; `data` is its JSON text as published.
    Publication { channel: Cow<'a, str>, data: &'a str },
    /// The server unsubscribed the client from `channel`.
    Unsubscribed { channel: Cow<'a, str>, code: u32, reason: Cow<'a, str> },
    /// The server disconnects the client.
    Disconnect { code: u32, reason: Cow<'a, str> },
    /// A push the client did not ask for (join, leave, message, refresh, ...).
    OtherPush,
}

/// Why a line is not a Centrifugo reply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("not a Centrifugo JSON reply: {0}")]
    NotJson(String),
    #[error("a reply with neither an id, a push nor an empty body")]
    Unrecognised,
    #[error("a publication without data")]
    PublicationWithoutData,
}

#[derive(serde::Deserialize)]
struct RawReply<'a> {
    #[serde(default)]
    id: u32,
    #[serde(default, borrow)]
    error: Option<RawError<'a>>,
    #[serde(default, borrow)]
    push: Option<RawPush<'a>>,
    #[serde(default, borrow)]
    connect: Option<RawConnect<'a>>,
}

#[derive(serde::Deserialize)]
struct RawError<'a> {
    #[serde(default)]
    code: u32,
    #[serde(default, borrow)]
    message: Option<Text<'a>>,
}

#[derive(serde::Deserialize)]
struct RawConnect<'a> {
    #[serde(default, borrow)]
    client: Option<Text<'a>>,
    #[serde(default)]
    ping: u32,
    #[serde(default)]
    pong: bool,
}

#[derive(serde::Deserialize)]
struct RawPush<'a> {
    #[serde(default, borrow)]
    channel: Option<Text<'a>>,
    #[serde(rename = "pub", default, borrow)]
    publication: Option<RawPublication<'a>>,
    #[serde(default, borrow)]
    unsubscribe: Option<RawCodeReason<'a>>,
    #[serde(default, borrow)]
    disconnect: Option<RawCodeReason<'a>>,
}

#[derive(serde::Deserialize)]
struct RawPublication<'a> {
    #[serde(default, borrow)]
    data: Option<&'a RawValue>,
}

#[derive(serde::Deserialize)]
struct RawCodeReason<'a> {
    #[serde(default)]
    code: u32,
    #[serde(default, borrow)]
    reason: Option<Text<'a>>,
}

fn text(field: Option<Text<'_>>) -> Cow<'_, str> {
    field.map_or(Cow::Borrowed(""), |text| text.0)
}

/// The replies of one WebSocket message: its non-blank lines.
pub fn lines(message: &[u8]) -> impl Iterator<Item = &[u8]> {
    message.split(|&byte| byte == b'\n').map(<[u8]>::trim_ascii).filter(|line| !line.is_empty())
}

/// Decodes one line.
pub fn decode(line: &[u8]) -> Result<Reply<'_>, DecodeError> {
    let line = line.trim_ascii();
    if line == b"{}" {
        return Ok(Reply::Ping);
    }
    // serde would also read a struct from an array.
    if line.first() != Some(&b'{') {
        return Err(DecodeError::NotJson("not an object".into()));
    }
    let raw: RawReply<'_> =
        serde_json::from_slice(line).map_err(|error| DecodeError::NotJson(error.to_string()))?;
    if let Some(error) = raw.error {
        return Ok(Reply::Error { id: raw.id, code: error.code, message: text(error.message) });
    }
    if let Some(push) = raw.push {
        return push_of(push);
    }
    if raw.id == 0 {
        return match line.iter().filter(|byte| !byte.is_ascii_whitespace()).eq(b"{}".iter()) {
            true => Ok(Reply::Ping),
            false => Err(DecodeError::Unrecognised),
        };
    }
    Ok(match raw.connect {
        Some(connect) => Reply::Connected {
            id: raw.id,
            client: text(connect.client),
            ping: connect.ping,
            pong: connect.pong,
        },
        None => Reply::Done { id: raw.id },
    })
}

fn push_of(push: RawPush<'_>) -> Result<Reply<'_>, DecodeError> {
    let channel = text(push.channel);
    if let Some(publication) = push.publication {
        let data = publication.data.ok_or(DecodeError::PublicationWithoutData)?;
        return Ok(Reply::Publication { channel, data: data.get() });
    }
    if let Some(unsubscribe) = push.unsubscribe {
        return Ok(Reply::Unsubscribed { channel, code: unsubscribe.code, reason: text(unsubscribe.reason) });
    }
    if let Some(disconnect) = push.disconnect {
        return Ok(Reply::Disconnect { code: disconnect.code, reason: text(disconnect.reason) });
    }
    Ok(Reply::OtherPush)
}

fn open_command(out: &mut Vec<u8>, id: u32, request: &str) {
    out.extend_from_slice(b"{\"id\":");
    write_u64(out, u64::from(id));
    out.extend_from_slice(b",\"");
    out.extend_from_slice(request.as_bytes());
    out.extend_from_slice(b"\":{");
}

/// `connect`, with the connection token (a JWT) when given, and the client's name.
pub fn encode_connect(out: &mut Vec<u8>, id: u32, token: Option<&str>, name: &str) {
    open_command(out, id, "connect");
    if let Some(token) = token {
        out.extend_from_slice(b"\"token\":");
        write_str(out, token);
        out.push(b',');
    }
    out.extend_from_slice(b"\"name\":");
    write_str(out, name);
    out.extend_from_slice(b"}}");
}

/// `subscribe` to `channel`.
pub fn encode_subscribe(out: &mut Vec<u8>, id: u32, channel: &str) {
    open_command(out, id, "subscribe");
    out.extend_from_slice(b"\"channel\":");
    write_str(out, channel);
    out.extend_from_slice(b"}}");
}

/// `publish` `data` (JSON text, copied as given) to `channel`.
pub fn encode_publish(out: &mut Vec<u8>, id: u32, channel: &str, data: &str) {
    open_command(out, id, "publish");
    out.extend_from_slice(b"\"channel\":");
    write_str(out, channel);
    out.extend_from_slice(b",\"data\":");
    out.extend_from_slice(data.as_bytes());
    out.extend_from_slice(b"}}");
}

/// The pong that answers a server ping: an empty command.
pub fn encode_pong(out: &mut Vec<u8>) {
    out.extend_from_slice(b"{}");
}

#[cfg(test)]
mod tests;
