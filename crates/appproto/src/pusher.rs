//! The Pusher Channels protocol (version 7), the client's side, as pusher-js speaks it to
//! Pusher and to the servers that copy it (sockudo, Soketi, Laravel Reverb): the WebSocket
//! at `/app/<app key>?protocol=7&…`, every message one JSON object `{"event":…,
//! "channel":…,"data":…}`. The server opens with `pusher:connection_established` (its data
//! a JSON *string* holding the socket id and activity timeout); a client subscribes with
//! `pusher:subscribe` and is answered `pusher_internal:subscription_succeeded` or an error;
//! it triggers `client-*` events on private and presence channels, which reach every other
//! subscriber; `pusher:ping` is answered `pusher:pong` either way; `pusher:error` carries a
//! code (4000–4099: do not reconnect; 4100–4299: reconnect; 4300–4399: the message was
//! refused). Events a server publishes carry their data as it was given to its HTTP API,
//! usually a JSON string.
//!
//! Private and presence channels are signed here, as an application's auth endpoint signs
//! them: HMAC-SHA256 with the app's secret over `socket_id:channel[:channel_data]`, sent as
//! `key:hex`. So is a request to the server's HTTP API ([`api_query`]: the events a server
//! publishes, `terminate_connections`). Encoders append to the caller's buffer; the decoder
//! borrows from the message (strings unless escaped, data as raw JSON).

use std::borrow::Cow;
use std::fmt::Write as _;

use serde_json::value::RawValue;

use crate::json::{Text, write_str};

/// The protocol version a client asks for.
pub const PROTOCOL: u32 = 7;

/// The prefix of the events clients may trigger.
pub const CLIENT_EVENT_PREFIX: &str = "client-";

/// What one message from the server is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerEvent<'a> {
    /// The connection is open: its socket id (what subscriptions are signed with) and the
    /// seconds of silence after which the client should ping.
    Established {
        socket_id: String,
        activity_timeout: Option<u64>,
    },
    /// The subscription to `channel` is in place.
    Subscribed {
        channel: Cow<'a, str>,
    },
    /// The subscription to `channel` was refused (an auth endpoint's status, its words).
    SubscriptionError {
        channel: Cow<'a, str>,
        status: Option<u64>,
        error: String,
    },
    /// `pusher:error`: its code when it has one, and its message.
    Error {
        code: Option<u64>,
        message: String,
    },
    Ping,
    Pong,
    /// Any other event (a client event, one a server published, `pusher_internal:member_added`),
    /// its data as raw JSON (`null` when it has none).
    Event {
        event: Cow<'a, str>,
        channel: Option<Cow<'a, str>>,
        data: &'a str,
    },
}

/// Why a message is not Pusher's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("not a Pusher JSON message: {0}")]
    NotJson(String),
    #[error("a message without an event")]
    NoEvent,
    #[error("a connection_established without a socket_id")]
    NoSocketId,
}

#[derive(serde::Deserialize)]
struct RawMessage<'a> {
    #[serde(default, borrow)]
    event: Option<Text<'a>>,
    #[serde(default, borrow)]
    channel: Option<Text<'a>>,
    #[serde(default, borrow)]
    data: Option<&'a RawValue>,
}

#[derive(serde::Deserialize, Default)]
struct Fields {
    #[serde(default)]
    socket_id: Option<String>,
    #[serde(default)]
    activity_timeout: Option<u64>,
    #[serde(default)]
    code: Option<u64>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    status: Option<u64>,
    #[serde(default)]
    error: Option<String>,
}

/// The members of `data`, an object or a JSON string holding one (Pusher puts both on the
/// wire); none readable: all absent.
fn fields(data: Option<&RawValue>) -> Fields {
    let Some(raw) = data.map(RawValue::get) else { return Fields::default() };
    let inner: Cow<'_, str> = match serde_json::from_str::<String>(raw) {
        Ok(text) => Cow::Owned(text),
        Err(_) => Cow::Borrowed(raw),
    };
    serde_json::from_str(&inner).unwrap_or_default()
}

/// Decodes one message.
pub fn decode(message: &[u8]) -> Result<ServerEvent<'_>, DecodeError> {
    let text = message.trim_ascii();
    if text.first() != Some(&b'{') {
        return Err(DecodeError::NotJson("not an object".into()));
    }
    let raw: RawMessage<'_> =
        serde_json::from_slice(text).map_err(|error| DecodeError::NotJson(error.to_string()))?;
    let event = raw.event.ok_or(DecodeError::NoEvent)?.0;
    let channel = raw.channel.map(|text| text.0);
    Ok(match event.as_ref() {
        "pusher:connection_established" => {
            let fields = fields(raw.data);
            let socket_id = fields.socket_id.ok_or(DecodeError::NoSocketId)?;
            ServerEvent::Established { socket_id, activity_timeout: fields.activity_timeout }
        }
        "pusher_internal:subscription_succeeded" => {
            ServerEvent::Subscribed { channel: channel.unwrap_or(Cow::Borrowed("")) }
        }
        "pusher:subscription_error" => {
            let fields = fields(raw.data);
            let error = fields.error.or(fields.message).unwrap_or_default();
            ServerEvent::SubscriptionError {
                channel: channel.unwrap_or(Cow::Borrowed("")),
                status: fields.status,
                error,
            }
        }
        "pusher:error" => {
            let fields = fields(raw.data);
            ServerEvent::Error { code: fields.code, message: fields.message.unwrap_or_default() }
        }
        "pusher:ping" => ServerEvent::Ping,
        "pusher:pong" => ServerEvent::Pong,
        _ => ServerEvent::Event { event, channel, data: raw.data.map_or("null", RawValue::get) },
    })
}

/// The path and query a client opens for the app `key` (pusher-js's, naming this client).
pub fn path(key: &str, client: &str, version: &str) -> String {
    format!("/app/{key}?protocol={PROTOCOL}&client={client}&version={version}&flash=false")
}

/// `pusher:subscribe` to `channel`, with its `auth` (private and presence channels) and
/// `channel_data` (presence: the member's JSON text, sent as a string).
pub fn encode_subscribe(out: &mut Vec<u8>, channel: &str, auth: Option<&str>, channel_data: Option<&str>) {
    out.extend_from_slice(b"{\"event\":\"pusher:subscribe\",\"data\":{\"channel\":");
    write_str(out, channel);
    if let Some(auth) = auth {
        out.extend_from_slice(b",\"auth\":");
        write_str(out, auth);
    }
    if let Some(channel_data) = channel_data {
        out.extend_from_slice(b",\"channel_data\":");
        write_str(out, channel_data);
    }
    out.extend_from_slice(b"}}");
}

/// A client event `event` on `channel` with `data` (JSON text, copied as given).
pub fn encode_client_event(out: &mut Vec<u8>, event: &str, channel: &str, data: &str) {
    out.extend_from_slice(b"{\"event\":");
    write_str(out, event);
    out.extend_from_slice(b",\"channel\":");
    write_str(out, channel);
    out.extend_from_slice(b",\"data\":");
    out.extend_from_slice(data.as_bytes());
    out.push(b'}');
}

/// `pusher:ping`.
pub fn encode_ping(out: &mut Vec<u8>) {
    out.extend_from_slice(br#"{"event":"pusher:ping","data":{}}"#);
}

/// `pusher:pong`, the answer to the server's ping.
pub fn encode_pong(out: &mut Vec<u8>) {
    out.extend_from_slice(br#"{"event":"pusher:pong","data":{}}"#);
}

/// The channel_data of a presence member: `{"user_id":"ID","user_info":{}}`.
pub fn presence_member(user_id: &str) -> String {
    let mut out = Vec::new();
    out.extend_from_slice(b"{\"user_id\":");
    write_str(&mut out, user_id);
    out.extend_from_slice(b",\"user_info\":{}}");
    String::from_utf8(out).unwrap_or_default()
}

/// HMAC-SHA256 of `text` with `secret`, as lower-case hex.
pub fn sign(secret: &str, text: &str) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes());
    hex(ring::hmac::sign(&key, text.as_bytes()).as_ref())
}

/// The `auth` of a subscription to `channel` by `socket_id`: `key:signature`, the signature
/// over `socket_id:channel`, and `:channel_data` for a presence channel.
pub fn channel_auth(
    key: &str,
    secret: &str,
    socket_id: &str,
    channel: &str,
    channel_data: Option<&str>,
) -> String {
    let mut signed = format!("{socket_id}:{channel}");
    if let Some(channel_data) = channel_data {
        signed.push(':');
        signed.push_str(channel_data);
    }
    format!("{key}:{}", sign(secret, &signed))
}

/// The signed query of a request to the server's HTTP API (`METHOD path`, with `body`) at
/// UNIX time `timestamp`: `auth_key`, `auth_timestamp`, `auth_version`, `body_md5` when
/// there is a body, each sorted by name, then `auth_signature`, HMAC-SHA256 of
/// `METHOD\npath\nquery`.
pub fn api_query(method: &str, path: &str, body: &[u8], key: &str, secret: &str, timestamp: u64) -> String {
    let mut query = format!("auth_key={key}&auth_timestamp={timestamp}&auth_version=1.0");
    if !body.is_empty() {
        let _ = write!(query, "&body_md5={}", hex(&md5::compute(body).0));
    }
    let signature = sign(secret, &format!("{}\n{path}\n{query}", method.to_ascii_uppercase()));
    format!("{query}&auth_signature={signature}")
}

fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

#[cfg(test)]
mod tests;
