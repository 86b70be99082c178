//! permessage-deflate (RFC 7692) for one echo connection: the answer to the client's offer,
//! and the echo of compressed messages.
//!
//! A compressed message is inflated as its frames arrive (bounded by `--max-message`, and
//! with every other message still arriving by `--max-message-memory`, so a bomb ends in
//! close 1009), checked as UTF-8 if it is text, and echoed compressed in one
//! frame with RSV1. The compressor and decompressor live as long as the connection, which is
//! what context takeover needs; the two buffers are reused from message to message. A message
//! that arrives uncompressed is echoed uncompressed by `conn.rs`, as RFC 7692 lets a sender
//! choose per message. Only connections that negotiated the extension pay for any of this.

use wsbench_proto::deflate::{self, DeflateError, Deflater, Inflater};
use wsbench_proto::handshake::UpgradeRequest;
use wsbench_proto::{OpCode, Reservation, write_frame};

/// The compression state of one connection that negotiated permessage-deflate.
#[derive(Debug)]
pub struct Compression {
    deflater: Deflater,
    inflater: Inflater,
    /// The message being inflated.
    message: Vec<u8>,
    /// The echo being compressed.
    compressed: Vec<u8>,
}

/// Why a compressed message fails the connection: the close code and reason.
pub type Failure = (u16, String);

impl Compression {
    /// The server's choice among the client's offers: the state and the
    /// `Sec-WebSocket-Extensions` answer, or `None` when no offer is acceptable.
    pub fn negotiate(request: &UpgradeRequest, max_message: u64) -> Option<(Box<Compression>, String)> {
        let agreed = deflate::negotiate(request.extensions.iter().map(String::as_str))?;
        let state = Compression {
            deflater: agreed.deflater(true),
            inflater: agreed.inflater(true, max_message),
            message: Vec::new(),
            compressed: Vec::new(),
        };
        Some((Box::new(state), agreed.params().to_string()))
    }

    /// One piece of a compressed message; on its last piece the echo is appended to `out`.
    pub fn on_chunk(
        &mut self,
        opcode: OpCode,
        payload: &[u8],
        last: bool,
        out: &mut Vec<u8>,
        budget: &mut Reservation,
    ) -> Result<(), Failure> {
        let failed = |error: DeflateError| (error.close_code(), error.to_string());
        let inflated = self.inflater.inflate(payload, &mut self.message, budget);
        let inflated = inflated
            .and_then(|()| if last { self.inflater.finish(&mut self.message, budget) } else { Ok(()) });
        if let Err(error) = inflated {
            // The connection fails: its buffer and its charge go at once, not when it closes.
            self.message = Vec::new();
            budget.release();
            return Err(failed(error));
        }
        if !last {
            return Ok(());
        }
        budget.release();
        if opcode == OpCode::Text && std::str::from_utf8(&self.message).is_err() {
            return Err((1007, "text message is not valid UTF-8".to_owned()));
        }
        self.compressed.clear();
        self.deflater.compress(&self.message, &mut self.compressed).map_err(failed)?;
        let start = out.len();
        write_frame(out, true, opcode, None, &self.compressed);
        out[start] |= 0x40;
        crate::echo_count::count_echo();
        self.message.clear();
        // A large message's buffers are not kept for the idle connection.
        if self.message.capacity() > 1 << 20 {
            self.message = Vec::new();
            self.compressed = Vec::new();
        }
        Ok(())
    }
}
