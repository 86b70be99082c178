//! ASP.NET Core SignalR's MessagePack hub protocol (version 1), the client's side, as the hub
//! protocol specification's "MessagePack (MsgPack) encoding" writes it: after the JSON
//! handshake `{"protocol":"messagepack","version":1}␞` (answered `{}␞` as in the JSON
//! protocol), every message is binary, each hub message a MessagePack array prefixed by its
//! length as a VarInt (7 bits a byte, low first, at most 5 bytes), several in one WebSocket
//! message. The arrays: invocation `[1, Headers, InvocationId|nil, Target, [Arguments],
//! [StreamIds]]`, stream item `[2, Headers, InvocationId, Item]`, completion `[3, Headers,
//! InvocationId, ResultKind (1 error, 2 void, 3 result), Error|Result]`, stream invocation
//! `[4, …as an invocation]`, cancellation `[5, Headers, InvocationId]`, ping `[6]`, close
//! `[7, Error|nil, AllowReconnect]`. Values are written with `rmp`; the decoder borrows from
//! the frame (strings, and arguments, items and results as their raw MessagePack, read as
//! bytes when a string or binary, or turned into JSON text by [`to_json`]).

use rmp::Marker;

/// The handshake request of the MessagePack protocol, version 1.
pub const HANDSHAKE: &[u8] = b"{\"protocol\":\"messagepack\",\"version\":1}\x1e";
/// The longest VarInt length prefix.
const MAX_PREFIX: usize = 5;
/// How deep arrays and maps may nest in what is read.
const MAX_DEPTH: usize = 64;

/// One hub message from the server, borrowed from its frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PackMessage<'a> {
    /// The server invokes `target` with `arguments` (the raw MessagePack array).
    Invocation {
        target: &'a str,
        arguments: &'a [u8],
    },
    /// One item (raw) of the stream `invocation_id`.
    StreamItem {
        invocation_id: &'a str,
        item: &'a [u8],
    },
    /// The invocation ended: its raw result, or its error.
    Completion {
        invocation_id: &'a str,
        result: Option<&'a [u8]>,
        error: Option<&'a str>,
    },
    Ping,
    Close {
        error: Option<&'a str>,
        allow_reconnect: bool,
    },
    /// A type this client has no use for.
    Other {
        kind: u64,
    },
}

/// Why bytes are not the MessagePack hub protocol's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PackError {
    #[error("a MessagePack message cut short")]
    Truncated,
    #[error("a length prefix past 5 bytes or 2 GiB")]
    BadPrefix,
    #[error("MessagePack nested deeper than {MAX_DEPTH} levels")]
    TooDeep,
    #[error("a hub message that is no MessagePack array with a type")]
    NotArray,
    #[error("a {0} without its {1}")]
    Missing(&'static str, &'static str),
    #[error("a string that is not UTF-8")]
    NotUtf8,
    #[error("a completion of result kind {0} (1, 2 or 3)")]
    BadResultKind(u64),
    #[error("a MessagePack value of another type where {0} is wanted")]
    Unexpected(&'static str),
}

/// An argument of an invocation written by this client.
#[derive(Debug, Clone, Copy)]
pub enum Argument<'a> {
    Str(&'a str),
    Bin(&'a [u8]),
    /// A JSON value, written as the MessagePack value of the same shape.
    Json(&'a serde_json::Value),
}

/// The frames of one binary WebSocket message: each without its length prefix.
pub fn frames(message: &[u8]) -> impl Iterator<Item = Result<&[u8], PackError>> {
    let mut rest = message;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let frame = prefixed(rest);
        rest = match &frame {
            Ok((_, used)) => &rest[*used..],
            Err(_) => &[],
        };
        Some(frame.map(|(frame, _)| frame))
    })
}

/// The frame at the start of `buf` and the bytes it took with its prefix.
fn prefixed(buf: &[u8]) -> Result<(&[u8], usize), PackError> {
    let mut length: u64 = 0;
    for (i, &byte) in buf.iter().take(MAX_PREFIX).enumerate() {
        length |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            if length > 0x7fff_ffff {
                return Err(PackError::BadPrefix);
            }
            let start = i + 1;
            let end = start.checked_add(length as usize).ok_or(PackError::BadPrefix)?;
            return buf.get(start..end).map(|frame| (frame, end)).ok_or(PackError::Truncated);
        }
    }
    Err(if buf.len() < MAX_PREFIX { PackError::Truncated } else { PackError::BadPrefix })
}

/// Appends the VarInt length prefix of a `length`-byte frame.
fn write_prefix(out: &mut Vec<u8>, mut length: usize) {
    loop {
        let byte = (length & 0x7f) as u8;
        length >>= 7;
        if length == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// Appends `body` (one MessagePack array) as a frame.
fn frame(out: &mut Vec<u8>, body: &[u8]) {
    write_prefix(out, body.len());
    out.extend_from_slice(body);
}

/// Appends the handshake request.
pub fn encode_handshake(out: &mut Vec<u8>) {
    out.extend_from_slice(HANDSHAKE);
}

/// Appends an invocation (`kind` 1) or a stream invocation (`kind` 4) of `target` with
/// `arguments`, wanting a completion when `invocation_id` is given; `scratch` holds the body.
pub fn encode_invocation(
    out: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
    kind: u8,
    invocation_id: Option<&str>,
    target: &str,
    arguments: &[Argument<'_>],
) {
    scratch.clear();
    let _ = rmp::encode::write_array_len(scratch, 6);
    let _ = rmp::encode::write_pfix(scratch, kind);
    let _ = rmp::encode::write_map_len(scratch, 0);
    match invocation_id {
        Some(id) => drop(rmp::encode::write_str(scratch, id)),
        None => drop(rmp::encode::write_nil(scratch)),
    }
    let _ = rmp::encode::write_str(scratch, target);
    let _ = rmp::encode::write_array_len(scratch, arguments.len() as u32);
    for argument in arguments {
        match argument {
            Argument::Str(text) => drop(rmp::encode::write_str(scratch, text)),
            Argument::Bin(bytes) => drop(rmp::encode::write_bin(scratch, bytes)),
            Argument::Json(value) => write_json(scratch, value),
        }
    }
    let _ = rmp::encode::write_array_len(scratch, 0);
    frame(out, scratch);
}

/// Appends the cancellation of the stream `invocation_id`.
pub fn encode_cancel_invocation(out: &mut Vec<u8>, scratch: &mut Vec<u8>, invocation_id: &str) {
    scratch.clear();
    let _ = rmp::encode::write_array_len(scratch, 3);
    let _ = rmp::encode::write_pfix(scratch, 5);
    let _ = rmp::encode::write_map_len(scratch, 0);
    let _ = rmp::encode::write_str(scratch, invocation_id);
    frame(out, scratch);
}

/// Appends a ping, `[6]`.
pub fn encode_ping(out: &mut Vec<u8>) {
    frame(out, &[0x91, 0x06]);
}

/// Appends a close without an error, `[7, nil, false]`.
pub fn encode_close(out: &mut Vec<u8>) {
    frame(out, &[0x93, 0x07, 0xc0, 0xc2]);
}

/// Writes a JSON value as the MessagePack value of its shape.
pub fn write_json(out: &mut Vec<u8>, value: &serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::Null => drop(rmp::encode::write_nil(out)),
        Value::Bool(b) => drop(rmp::encode::write_bool(out, *b)),
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => drop(rmp::encode::write_uint(out, u)),
            (None, Some(i)) => drop(rmp::encode::write_sint(out, i)),
            (None, None) => drop(rmp::encode::write_f64(out, n.as_f64().unwrap_or(0.0))),
        },
        Value::String(s) => drop(rmp::encode::write_str(out, s)),
        Value::Array(items) => {
            let _ = rmp::encode::write_array_len(out, items.len() as u32);
            items.iter().for_each(|item| write_json(out, item));
        }
        Value::Object(map) => {
            let _ = rmp::encode::write_map_len(out, map.len() as u32);
            for (key, item) in map {
                let _ = rmp::encode::write_str(out, key);
                write_json(out, item);
            }
        }
    }
}

/// A cursor over a frame.
struct Reader<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], PackError> {
        let end = self.at.checked_add(n).ok_or(PackError::Truncated)?;
        let bytes = self.buf.get(self.at..end).ok_or(PackError::Truncated)?;
        self.at = end;
        Ok(bytes)
    }

    fn marker(&mut self) -> Result<Marker, PackError> {
        Ok(Marker::from_u8(self.take(1)?[0]))
    }

    fn number(&mut self, n: usize) -> Result<u64, PackError> {
        Ok(self.take(n)?.iter().fold(0, |acc, &b| (acc << 8) | u64::from(b)))
    }

    /// The length a marker announces (of a string, binary, array or map), or None.
    fn length(&mut self, marker: Marker) -> Result<Option<usize>, PackError> {
        Ok(Some(match marker {
            Marker::FixStr(n) | Marker::FixArray(n) | Marker::FixMap(n) => usize::from(n),
            Marker::Str8 | Marker::Bin8 => self.number(1)? as usize,
            Marker::Str16 | Marker::Bin16 | Marker::Array16 | Marker::Map16 => self.number(2)? as usize,
            Marker::Str32 | Marker::Bin32 | Marker::Array32 | Marker::Map32 => self.number(4)? as usize,
            _ => return Ok(None),
        }))
    }

    /// Skips one value, returning its raw bytes.
    fn value(&mut self, depth: usize) -> Result<&'a [u8], PackError> {
        let start = self.at;
        self.skip(depth)?;
        Ok(&self.buf[start..self.at])
    }

    fn skip(&mut self, depth: usize) -> Result<(), PackError> {
        if depth > MAX_DEPTH {
            return Err(PackError::TooDeep);
        }
        let marker = self.marker()?;
        let fixed = match marker {
            Marker::U8 | Marker::I8 => 1,
            Marker::U16 | Marker::I16 => 2,
            Marker::U32 | Marker::I32 | Marker::F32 => 4,
            Marker::U64 | Marker::I64 | Marker::F64 => 8,
            Marker::FixExt1 => 2,
            Marker::FixExt2 => 3,
            Marker::FixExt4 => 5,
            Marker::FixExt8 => 9,
            Marker::FixExt16 => 17,
            Marker::Ext8 => 1 + self.number(1)? as usize,
            Marker::Ext16 => 1 + self.number(2)? as usize,
            Marker::Ext32 => 1 + self.number(4)? as usize,
            Marker::Reserved => return Err(PackError::Unexpected("a value")),
            _ => 0,
        };
        self.take(fixed)?;
        match (marker, self.length(marker)?) {
            (Marker::FixArray(_) | Marker::Array16 | Marker::Array32, Some(n)) => {
                (0..n).try_for_each(|_| self.skip(depth + 1))
            }
            (Marker::FixMap(_) | Marker::Map16 | Marker::Map32, Some(n)) => {
                (0..n * 2).try_for_each(|_| self.skip(depth + 1))
            }
            (_, Some(n)) => self.take(n).map(drop),
            (_, None) => Ok(()),
        }
    }

    /// A message's headers: a map (its entries skipped), as the official clients require.
    fn headers(&mut self) -> Result<(), PackError> {
        let marker = self.marker()?;
        match (marker, self.length(marker)?) {
            (Marker::FixMap(_) | Marker::Map16 | Marker::Map32, Some(n)) => {
                (0..n * 2).try_for_each(|_| self.skip(1))
            }
            _ => Err(PackError::Unexpected("the headers' map")),
        }
    }

    /// A string, or nil.
    fn str_or_nil(&mut self) -> Result<Option<&'a str>, PackError> {
        let marker = self.marker()?;
        if marker == Marker::Null {
            return Ok(None);
        }
        match (marker, self.length(marker)?) {
            (Marker::FixStr(_) | Marker::Str8 | Marker::Str16 | Marker::Str32, Some(n)) => {
                std::str::from_utf8(self.take(n)?).map(Some).map_err(|_| PackError::NotUtf8)
            }
            _ => Err(PackError::Unexpected("a string")),
        }
    }

    /// A non-negative integer.
    fn uint(&mut self) -> Result<u64, PackError> {
        match self.marker()? {
            Marker::FixPos(n) => Ok(u64::from(n)),
            Marker::U8 => self.number(1),
            Marker::U16 => self.number(2),
            Marker::U32 => self.number(4),
            Marker::U64 => self.number(8),
            _ => Err(PackError::Unexpected("a number")),
        }
    }
}

/// Decodes one frame (its prefix removed).
pub fn decode(frame: &[u8]) -> Result<PackMessage<'_>, PackError> {
    let mut reader = Reader { buf: frame, at: 0 };
    let marker = reader.marker()?;
    let len = match (marker, reader.length(marker)?) {
        (Marker::FixArray(_) | Marker::Array16 | Marker::Array32, Some(len)) if len > 0 => len,
        _ => return Err(PackError::NotArray),
    };
    let kind = reader.uint().map_err(|_| PackError::NotArray)?;
    let need = |n: usize, what: &'static str, field: &'static str| match len >= n {
        true => Ok(()),
        false => Err(PackError::Missing(what, field)),
    };
    match kind {
        1 => {
            need(5, "invocation", "arguments")?;
            reader.headers()?;
            reader.skip(1)?;
            let target = reader.str_or_nil()?.ok_or(PackError::Missing("invocation", "target"))?;
            Ok(PackMessage::Invocation { target, arguments: reader.value(1)? })
        }
        2 => {
            need(4, "stream item", "item")?;
            reader.headers()?;
            let invocation_id =
                reader.str_or_nil()?.ok_or(PackError::Missing("stream item", "invocationId"))?;
            Ok(PackMessage::StreamItem { invocation_id, item: reader.value(1)? })
        }
        3 => {
            need(4, "completion", "result kind")?;
            reader.headers()?;
            let invocation_id =
                reader.str_or_nil()?.ok_or(PackError::Missing("completion", "invocationId"))?;
            let (result, error) = match reader.uint()? {
                1 if len >= 5 => (None, Some(reader.str_or_nil()?.unwrap_or_default())),
                2 => (None, None),
                3 if len >= 5 => (Some(reader.value(1)?), None),
                1 | 3 => return Err(PackError::Missing("completion", "result")),
                other => return Err(PackError::BadResultKind(other)),
            };
            Ok(PackMessage::Completion { invocation_id, result, error })
        }
        6 => Ok(PackMessage::Ping),
        7 => {
            let error = if len > 1 { reader.str_or_nil()? } else { None };
            let allow_reconnect = len > 2 && reader.marker()? == Marker::True;
            Ok(PackMessage::Close { error, allow_reconnect })
        }
        kind => Ok(PackMessage::Other { kind }),
    }
}

/// The bytes of a raw value that is a string or binary.
pub fn as_bytes(value: &[u8]) -> Option<&[u8]> {
    let mut reader = Reader { buf: value, at: 0 };
    let marker = reader.marker().ok()?;
    match (marker, reader.length(marker).ok()??) {
        (Marker::FixStr(_) | Marker::Str8 | Marker::Str16 | Marker::Str32, n)
        | (Marker::Bin8 | Marker::Bin16 | Marker::Bin32, n) => reader.take(n).ok(),
        _ => None,
    }
}

/// Appends a raw value as JSON text: maps as objects (keys that are numbers, booleans or nil
/// written as their JSON text; arrays and maps as keys refused), binary as an array of
/// numbers, extensions as null.
pub fn to_json(value: &[u8], out: &mut Vec<u8>) -> Result<(), PackError> {
    let mut reader = Reader { buf: value, at: 0 };
    json_value(&mut reader, out, 0)
}

fn json_value(reader: &mut Reader<'_>, out: &mut Vec<u8>, depth: usize) -> Result<(), PackError> {
    use std::io::Write as _;
    if depth > MAX_DEPTH {
        return Err(PackError::TooDeep);
    }
    let start = reader.at;
    let marker = reader.marker()?;
    match marker {
        Marker::Null => out.extend_from_slice(b"null"),
        Marker::True => out.extend_from_slice(b"true"),
        Marker::False => out.extend_from_slice(b"false"),
        Marker::FixPos(n) => drop(write!(out, "{n}")),
        Marker::FixNeg(n) => drop(write!(out, "{n}")),
        Marker::U8 | Marker::U16 | Marker::U32 | Marker::U64 => {
            let size = 1 << (marker.to_u8() - Marker::U8.to_u8());
            drop(write!(out, "{}", reader.number(size)?));
        }
        Marker::I8 | Marker::I16 | Marker::I32 | Marker::I64 => {
            let size = 1 << (marker.to_u8() - Marker::I8.to_u8());
            let raw = reader.number(size)?;
            let shift = 64 - 8 * size as u32;
            drop(write!(out, "{}", ((raw << shift) as i64) >> shift));
        }
        Marker::F32 => {
            let value = f32::from_bits(reader.number(4)? as u32);
            json_float(out, f64::from(value));
        }
        Marker::F64 => json_float(out, f64::from_bits(reader.number(8)?)),
        Marker::FixStr(_) | Marker::Str8 | Marker::Str16 | Marker::Str32 => {
            let n = reader.length(marker)?.unwrap_or_default();
            let text = std::str::from_utf8(reader.take(n)?).map_err(|_| PackError::NotUtf8)?;
            crate::json::write_str(out, text);
        }
        Marker::Bin8 | Marker::Bin16 | Marker::Bin32 => {
            let n = reader.length(marker)?.unwrap_or_default();
            out.push(b'[');
            for (i, byte) in reader.take(n)?.iter().enumerate() {
                drop(write!(out, "{}{byte}", if i > 0 { "," } else { "" }));
            }
            out.push(b']');
        }
        Marker::FixArray(_) | Marker::Array16 | Marker::Array32 => {
            let n = reader.length(marker)?.unwrap_or_default();
            out.push(b'[');
            for i in 0..n {
                if i > 0 {
                    out.push(b',');
                }
                json_value(reader, out, depth + 1)?;
            }
            out.push(b']');
        }
        Marker::FixMap(_) | Marker::Map16 | Marker::Map32 => json_map(reader, marker, out, depth)?,
        _ => {
            reader.at = start;
            reader.skip(depth)?;
            out.extend_from_slice(b"null");
        }
    }
    Ok(())
}

fn json_map(
    reader: &mut Reader<'_>,
    marker: Marker,
    out: &mut Vec<u8>,
    depth: usize,
) -> Result<(), PackError> {
    let n = reader.length(marker)?.unwrap_or_default();
    out.push(b'{');
    let mut key = Vec::new();
    for i in 0..n {
        if i > 0 {
            out.push(b',');
        }
        key.clear();
        // A key that is an array or a map is refused: its JSON text, quoted, would grow
        // with every level of keys within keys.
        let container = reader.buf.get(reader.at).map(|&b| Marker::from_u8(b));
        if matches!(
            container,
            Some(
                Marker::FixArray(_)
                    | Marker::Array16
                    | Marker::Array32
                    | Marker::FixMap(_)
                    | Marker::Map16
                    | Marker::Map32
            )
        ) {
            return Err(PackError::Unexpected("a string or a number as a map's key"));
        }
        json_value(reader, &mut key, depth + 1)?;
        if key.first() == Some(&b'"') {
            out.extend_from_slice(&key);
        } else {
            crate::json::write_str(out, &String::from_utf8_lossy(&key));
        }
        out.push(b':');
        json_value(reader, out, depth + 1)?;
    }
    out.push(b'}');
    Ok(())
}

/// A float as JSON: finite ones as Rust writes them (shortest round trip), others null.
fn json_float(out: &mut Vec<u8>, value: f64) {
    use std::io::Write as _;
    match value.is_finite() {
        true => drop(write!(out, "{value:?}")),
        false => out.extend_from_slice(b"null"),
    }
}

#[cfg(test)]
mod tests;
