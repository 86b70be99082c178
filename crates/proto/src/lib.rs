//! The RFC 6455 codec used by wsbench's load engine and its echo server.
//!
//! It turns bytes into frames and frames into bytes, and nothing else: no sockets, no
//! runtime, no allocation on the frame path. Callers own their buffers; the decoder unmasks
//! payloads in place and reports ranges into the caller's buffer. [`Decoder::decode`]
//! returns `Ok(None)` when it needs more bytes, which keeps it easy to test byte by byte and
//! to fuzz.

mod budget;
mod close;
mod decoder;
pub mod deflate;
mod error;
mod frame;
pub mod handshake;
pub mod http_response;
mod mask;
mod utf8;

pub use budget::{MessageMemory, OverBudget, Reservation};
pub use close::{CloseCode, is_valid_close_code, parse_close_payload};
pub use decoder::{Chunk, Decoder, Role};
pub use error::{HandshakeError, ProtocolError};
pub use frame::{FrameHeader, MAX_HEADER_LEN, OpCode, encode_header, parse_header, write_frame};
pub use mask::apply_mask;
pub use utf8::{Utf8Error, Utf8Validator};

/// Default limit on one message's size: 128 MiB, so the 100 MB huge-message benchmark fits.
pub const DEFAULT_MAX_MESSAGE: u64 = 128 * 1024 * 1024;
/// Largest payload a control frame may carry (RFC 6455 §5.5).
pub const MAX_CONTROL_PAYLOAD: u64 = 125;
