//! Encoders of the frames a load client sends. Each appends one whole frame, NUL included;
//! nothing is allocated when the buffer has room. Lines end with a bare LF, which every
//! broker accepts and which saves a byte per line.

use super::EncodeError;
use crate::json::{write_escaped, write_u64};

/// What CONNECT asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Connect<'a> {
    /// The virtual host (RabbitMQ: `/`).
    pub host: &'a str,
    /// (cx, cy) in ms: the least interval between the client's heart-beats it can send, and
    /// the interval of the broker's it wants; 0 means none.
    pub heart_beat: (u32, u32),
    pub login: Option<&'a str>,
    pub passcode: Option<&'a str>,
}

/// One SEND.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Send<'a> {
    pub destination: &'a str,
    pub content_type: Option<&'a str>,
    /// Ask the broker for a RECEIPT with this id once it has processed the frame.
    pub receipt: Option<&'a str>,
    pub body: &'a [u8],
}

/// Appends a header value escaped as STOMP 1.2 requires outside CONNECT/CONNECTED.
fn put_escaped(out: &mut Vec<u8>, value: &str) {
    write_escaped(out, value, |byte| match byte {
        b'\\' => Some(b"\\\\"),
        b'\n' => Some(b"\\n"),
        b'\r' => Some(b"\\r"),
        b':' => Some(b"\\c"),
        _ => None,
    });
}

fn put_header(out: &mut Vec<u8>, name: &str, value: &str) {
    out.extend_from_slice(name.as_bytes());
    out.push(b':');
    put_escaped(out, value);
    out.push(b'\n');
}

fn put_receipt(out: &mut Vec<u8>, receipt: Option<&str>) {
    if let Some(receipt) = receipt {
        put_header(out, "receipt", receipt);
    }
}

/// Ends the headers, writes the body and the NUL.
fn put_body(out: &mut Vec<u8>, body: &[u8]) {
    out.push(b'\n');
    out.extend_from_slice(body);
    out.push(0);
}

fn raw_value(name: &'static str, value: &str) -> Result<(), EncodeError> {
    if value.bytes().any(|b| matches!(b, b'\r' | b'\n' | 0)) {
        return Err(EncodeError::UnescapableValue(name));
    }
    Ok(())
}

/// CONNECT with `accept-version:1.2`, `host`, `heart-beat` and the optional credentials.
pub fn encode_connect(out: &mut Vec<u8>, connect: &Connect<'_>) -> Result<(), EncodeError> {
    raw_value("host", connect.host)?;
    connect.login.map_or(Ok(()), |login| raw_value("login", login))?;
    connect.passcode.map_or(Ok(()), |passcode| raw_value("passcode", passcode))?;
    out.extend_from_slice(b"CONNECT\naccept-version:1.2\nhost:");
    out.extend_from_slice(connect.host.as_bytes());
    out.extend_from_slice(b"\nheart-beat:");
    write_u64(out, u64::from(connect.heart_beat.0));
    out.push(b',');
    write_u64(out, u64::from(connect.heart_beat.1));
    out.push(b'\n');
    for (name, value) in [("login:", connect.login), ("passcode:", connect.passcode)] {
        if let Some(value) = value {
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(value.as_bytes());
            out.push(b'\n');
        }
    }
    put_body(out, b"");
    Ok(())
}

/// SUBSCRIBE `destination` as subscription `id` with `ack:auto`.
pub fn encode_subscribe(out: &mut Vec<u8>, id: &str, destination: &str, receipt: Option<&str>) {
    out.extend_from_slice(b"SUBSCRIBE\n");
    put_header(out, "id", id);
    put_header(out, "destination", destination);
    out.extend_from_slice(b"ack:auto\n");
    put_receipt(out, receipt);
    put_body(out, b"");
}

/// UNSUBSCRIBE subscription `id`.
pub fn encode_unsubscribe(out: &mut Vec<u8>, id: &str, receipt: Option<&str>) {
    out.extend_from_slice(b"UNSUBSCRIBE\n");
    put_header(out, "id", id);
    put_receipt(out, receipt);
    put_body(out, b"");
}

/// SEND with `content-length`, so the body may hold NUL bytes.
pub fn encode_send(out: &mut Vec<u8>, send: &Send<'_>) {
    out.extend_from_slice(b"SEND\n");
    put_header(out, "destination", send.destination);
    out.extend_from_slice(b"content-length:");
    write_u64(out, send.body.len() as u64);
    out.push(b'\n');
    if let Some(content_type) = send.content_type {
        put_header(out, "content-type", content_type);
    }
    put_receipt(out, send.receipt);
    put_body(out, send.body);
}

/// DISCONNECT asking for a RECEIPT, after which the broker closes the connection.
pub fn encode_disconnect(out: &mut Vec<u8>, receipt: &str) {
    out.extend_from_slice(b"DISCONNECT\n");
    put_header(out, "receipt", receipt);
    put_body(out, b"");
}

/// A heart-beat: one end of line.
pub fn encode_heartbeat(out: &mut Vec<u8>) {
    out.push(b'\n');
}
