//! STOMP 1.2, the client's side, as RabbitMQ's web-stomp plugin speaks it over WebSocket:
//! encoders for the frames a load client sends, and an incremental decoder of frames and
//! heart-beats with typed views of what a broker sends (CONNECTED, MESSAGE, RECEIPT, ERROR),
//! so the engine can match deliveries and count ERROR frames by their `message` header.
//!
//! Header values are escaped as 1.2 requires (`\\`, `\n`, `\r`, `\c`) except in CONNECT
//! and CONNECTED, which the specification leaves unescaped. The decoder works on bytes, not
//! WebSocket messages (a broker may put a frame and heart-beats in one message, or a frame
//! over several), returns views borrowing its input, and unescapes a header only when asked
//! for it. Frames are bounded: a frame whose size is over the limit, announced by
//! `content-length` or found while looking for its end, fails before more is buffered.

mod decode;
mod encode;

pub use decode::{Decoder, Frame, Headers, Item, ServerFrame};
pub use encode::{
    Connect, Send, encode_connect, encode_disconnect, encode_heartbeat, encode_send, encode_subscribe,
    encode_unsubscribe,
};

/// A decoder's default limit on one frame (command, headers, body and NUL): 1 MiB.
pub const DEFAULT_MAX_FRAME: usize = 1024 * 1024;

/// Why a frame could not be encoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    /// CONNECT's headers are not escaped, so a value may not hold a line break or NUL.
    #[error("CONNECT header {0} holds a CR, LF or NUL, which STOMP cannot carry unescaped")]
    UnescapableValue(&'static str),
}

/// Why bytes from a broker are not an acceptable STOMP frame. The connection cannot go on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("frame of at least {size} bytes exceeds the limit of {limit} bytes")]
    FrameTooLarge { size: usize, limit: usize },
    #[error("malformed frame: {0}")]
    Malformed(&'static str),
    #[error("{command} frame lacks its {header} header")]
    MissingHeader { command: &'static str, header: &'static str },
    #[error("a client does not expect a {0} frame from a broker")]
    UnexpectedCommand(String),
}

#[cfg(test)]
mod tests;
