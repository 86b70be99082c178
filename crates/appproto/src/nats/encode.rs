//! Encoders of what a load client sends. Each appends one whole operation, its CRLF
//! included; nothing is allocated when the buffer has room. Subjects are written as given:
//! the caller checks them once ([`super::valid_subject`]) rather than on every message.

use crate::json::{write_str, write_u64};

/// What CONNECT says of the client and asks of the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Connect<'a> {
    /// Shown by the server's monitoring (`/connz`) as the connection's name.
    pub name: &'a str,
    pub user: Option<&'a str>,
    pub pass: Option<&'a str>,
    pub auth_token: Option<&'a str>,
    /// Whether the client takes HMSG (and with `no_responders`, a 503 status on a
    /// request's reply subject when nobody subscribes to its subject).
    pub headers: bool,
    pub no_responders: bool,
}

/// Appends CONNECT: not verbose (no `+OK` per operation), not pedantic, protocol 1 (the
/// server may send asynchronous INFO), the client's own messages echoed to it.
pub fn encode_connect(out: &mut Vec<u8>, connect: &Connect<'_>) {
    out.extend_from_slice(b"CONNECT {\"verbose\":false,\"pedantic\":false,\"tls_required\":false,\"name\":");
    write_str(out, connect.name);
    out.extend_from_slice(b",\"lang\":\"rust\",\"version\":");
    write_str(out, env!("CARGO_PKG_VERSION"));
    out.extend_from_slice(b",\"protocol\":1,\"echo\":true");
    for (key, value) in [("user", connect.user), ("pass", connect.pass), ("auth_token", connect.auth_token)] {
        if let Some(value) = value {
            out.extend_from_slice(b",\"");
            out.extend_from_slice(key.as_bytes());
            out.extend_from_slice(b"\":");
            write_str(out, value);
        }
    }
    for (key, value) in [("headers", connect.headers), ("no_responders", connect.no_responders)] {
        out.extend_from_slice(b",\"");
        out.extend_from_slice(key.as_bytes());
        out.extend_from_slice(if value { b"\":true" } else { b"\":false" });
    }
    out.extend_from_slice(b"}\r\n");
}

pub fn encode_ping(out: &mut Vec<u8>) {
    out.extend_from_slice(b"PING\r\n");
}

pub fn encode_pong(out: &mut Vec<u8>) {
    out.extend_from_slice(b"PONG\r\n");
}

/// Appends `SUB <subject> [queue group] <sid>`.
pub fn encode_sub(out: &mut Vec<u8>, subject: &str, queue_group: Option<&str>, sid: u64) {
    out.extend_from_slice(b"SUB ");
    out.extend_from_slice(subject.as_bytes());
    if let Some(group) = queue_group {
        out.push(b' ');
        out.extend_from_slice(group.as_bytes());
    }
    out.push(b' ');
    write_u64(out, sid);
    out.extend_from_slice(b"\r\n");
}

/// Appends `UNSUB <sid>`.
pub fn encode_unsub(out: &mut Vec<u8>, sid: u64) {
    out.extend_from_slice(b"UNSUB ");
    write_u64(out, sid);
    out.extend_from_slice(b"\r\n");
}

/// Appends `PUB <subject> [reply-to] <size>`, the payload and its CRLF. `reply_to` is
/// written as its pieces one after another (an inbox prefix and a sequence number), so
/// nothing is joined first.
pub fn encode_pub(out: &mut Vec<u8>, subject: &str, reply_to: Option<(&str, u64)>, payload: &[u8]) {
    out.extend_from_slice(b"PUB ");
    out.extend_from_slice(subject.as_bytes());
    if let Some((prefix, number)) = reply_to {
        out.push(b' ');
        out.extend_from_slice(prefix.as_bytes());
        write_u64(out, number);
    }
    out.push(b' ');
    write_u64(out, payload.len() as u64);
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(payload);
    out.extend_from_slice(b"\r\n");
}
