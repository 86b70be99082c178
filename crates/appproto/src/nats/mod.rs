//! NATS, the client's side of its text protocol, as nats-server speaks it to the `nats.ws`
//! client over its WebSocket listener: encoders of what a load client sends (CONNECT, PING,
//! PONG, SUB, UNSUB, PUB) and an incremental decoder of what a server sends (INFO, MSG,
//! HMSG, PING, PONG, `+OK`, `-ERR`), with a typed view of INFO's few fields a client needs.
//!
//! The decoder works on bytes, not WebSocket messages: a server puts many operations in one
//! message and cuts one over several, so a caller hands in whatever it holds and gets
//! `Ok(None)` until a whole operation is there. Views borrow the input. Bounded: a control
//! line longer than [`MAX_CONTROL_LINE`] or a payload over the decoder's limit fails before
//! more is buffered, and bytes that cannot begin a server operation fail on the first of
//! them, so another protocol's server is told apart at once instead of awaited.

mod decode;
mod encode;

pub use decode::{Decoder, Info, Msg, ServerOp};
pub use encode::{Connect, encode_connect, encode_ping, encode_pong, encode_pub, encode_sub, encode_unsub};

/// The longest control line (an operation's first line, INFO's JSON included) the decoder
/// waits for. nats-server's own limit on a client's is 4 KiB; its INFO grows with the
/// cluster's URLs, so a server's is given more room.
pub const MAX_CONTROL_LINE: usize = 64 * 1024;

/// nats-server's default `max_payload` (1 MiB), the decoder's limit until INFO says another.
pub const DEFAULT_MAX_PAYLOAD: usize = 1024 * 1024;

/// The status line of an HMSG whose header says no subscriber took the request (sent to the
/// reply subject when CONNECT asked for `no_responders`).
pub const NO_RESPONDERS_STATUS: &[u8] = b"NATS/1.0 503";

/// Why bytes from a server are not NATS as a client reads it. The connection cannot go on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("a control line of over {limit} bytes")]
    ControlLineTooLong { limit: usize },
    #[error("a payload of {size} bytes exceeds the limit of {limit} bytes")]
    PayloadTooLarge { size: usize, limit: usize },
    #[error("malformed {op}: {problem}")]
    Malformed { op: &'static str, problem: &'static str },
    #[error("not a NATS server operation: {0:?}")]
    UnknownOperation(String),
}

/// Whether `subject` is one a client may publish to or subscribe to: tokens of printable
/// characters without whitespace, separated by single dots (no empty token).
pub fn valid_subject(subject: &str) -> bool {
    !subject.is_empty()
        && subject
            .split('.')
            .all(|token| !token.is_empty() && token.bytes().all(|b| b.is_ascii_graphic() || b >= 0x80))
}

/// Whether `subject` is one a client may publish to: a [`valid_subject`] holding no
/// wildcard token (`*`, `>`).
pub fn valid_publish_subject(subject: &str) -> bool {
    valid_subject(subject) && subject.split('.').all(|token| token != "*" && token != ">")
}

#[cfg(test)]
mod tests;
