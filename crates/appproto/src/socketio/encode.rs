//! Encoders of what a Socket.IO client sends, each one whole text WebSocket message
//! (Engine.IO type `4` included, or `3` for a pong). Nothing is allocated when the buffer
//! has room; JSON arguments are copied as given (the caller owns their validity), and
//! event names and namespaces are written as the protocol expects.

use crate::json::{write_str, write_u64};

/// One argument of an emit or ack: JSON text, or a binary attachment sent in its own
/// binary WebSocket message after the packet (in the order of the attachments here).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arg<'a> {
    Json(&'a str),
    Attachment,
}

/// `TYPE[N-][/nsp,]` for a packet of `kind` (the binary kind when there are attachments).
fn put_head(out: &mut Vec<u8>, kind: u8, binary_kind: u8, namespace: &str, args: &[Arg<'_>]) {
    out.push(b'4');
    let attachments = args.iter().filter(|arg| **arg == Arg::Attachment).count();
    if attachments == 0 {
        out.push(kind);
    } else {
        out.push(binary_kind);
        write_u64(out, attachments as u64);
        out.push(b'-');
    }
    if namespace != "/" && !namespace.is_empty() {
        out.extend_from_slice(namespace.as_bytes());
        out.push(b',');
    }
}

/// Writes the arguments, attachments as numbered placeholders; `first` says if none came
/// before them in the array.
fn put_args(out: &mut Vec<u8>, args: &[Arg<'_>], mut first: bool) {
    let mut num = 0;
    for arg in args {
        if !first {
            out.push(b',');
        }
        first = false;
        match arg {
            Arg::Json(json) => out.extend_from_slice(json.as_bytes()),
            Arg::Attachment => {
                out.extend_from_slice(b"{\"_placeholder\":true,\"num\":");
                write_u64(out, num);
                out.push(b'}');
                num += 1;
            }
        }
    }
}

/// CONNECT to `namespace` (`/` is the main one), with the optional `auth` JSON object.
pub fn encode_connect(out: &mut Vec<u8>, namespace: &str, auth: Option<&str>) {
    put_head(out, b'0', b'0', namespace, &[]);
    if let Some(auth) = auth {
        out.extend_from_slice(auth.as_bytes());
    }
}

/// DISCONNECT from `namespace`.
pub fn encode_disconnect(out: &mut Vec<u8>, namespace: &str) {
    put_head(out, b'1', b'1', namespace, &[]);
}

/// `emit(event, ...args)`, as a BINARY_EVENT when an argument is an attachment, asking for
/// an acknowledgement when `ack_id` is given.
pub fn encode_emit(out: &mut Vec<u8>, namespace: &str, event: &str, args: &[Arg<'_>], ack_id: Option<u64>) {
    put_head(out, b'2', b'5', namespace, args);
    if let Some(ack_id) = ack_id {
        write_u64(out, ack_id);
    }
    out.push(b'[');
    write_str(out, event);
    put_args(out, args, false);
    out.push(b']');
}

/// The acknowledgement of a server's event that asked for one with `ack_id`.
pub fn encode_ack(out: &mut Vec<u8>, namespace: &str, ack_id: u64, args: &[Arg<'_>]) {
    put_head(out, b'3', b'6', namespace, args);
    write_u64(out, ack_id);
    out.push(b'[');
    put_args(out, args, true);
    out.push(b']');
}

/// The pong answering an Engine.IO ping with `payload` (usually empty).
pub fn encode_pong(out: &mut Vec<u8>, payload: &str) {
    out.push(b'3');
    out.extend_from_slice(payload.as_bytes());
}
