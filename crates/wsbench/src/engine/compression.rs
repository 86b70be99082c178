//! permessage-deflate (RFC 7692) on the client side of one connection: checking the
//! server's answer to the offer, compressing what is sent and inflating the echoes.
//!
//! A server that declines the offer fails the handshake (`handshake_deflate_declined`)
//! rather than running uncompressed: a run that asked for compression and silently measured
//! without it would report figures of a different workload. An answer with parameters that
//! were not offered fails it too (`handshake_deflate_bad_answer`, with the reason kept as the
//! server's response). The state lives as long as the connection (context takeover); its
//! buffers are reused from message to message, so a message costs no allocation.

use wsbench_proto::deflate::{self, Deflater, Inflater};
use wsbench_proto::handshake::parse_response;
use wsbench_proto::{Decoder, OpCode, ProtocolError, Reservation, write_frame};

use super::handshake_failure::HandshakeFailure;
use crate::config::CompressionOffer;
use crate::metrics::Counters;

/// Buffers above this size are freed after their message instead of kept for the next.
const KEEP_BUFFER_BYTES: usize = 1 << 20;

/// One connection's compressor, decompressor and their buffers.
#[derive(Debug)]
pub struct ConnCompression {
    deflater: Deflater,
    inflater: Inflater,
    /// The echo being inflated.
    pub inflated: Vec<u8>,
    /// The message being compressed.
    compressed: Vec<u8>,
}

/// Checks the server's answer (the response header `head` to the request sent with `key`)
/// against `offer`; on success the decoder accepts RSV1 and the returned state compresses
/// the connection's messages from now on, and inflates the server's up to `max_message`
/// bytes each (a bomb fails with 1009).
pub fn attach(
    offer: &CompressionOffer,
    key: &str,
    max_message: u64,
    decoder: &mut Decoder,
    head: &[u8],
    counters: &mut Counters,
) -> Result<Box<ConnCompression>, HandshakeFailure> {
    let answer = parse_response(head, key).ok().flatten().and_then(|(response, _)| response.extensions);
    attach_answer(offer, answer.as_deref(), max_message, decoder, counters)
}

/// Checks the server's `Sec-WebSocket-Extensions` answer (`None`: it sent none) against
/// `offer`, as [`attach`] does.
pub fn attach_answer(
    offer: &CompressionOffer,
    answer: Option<&str>,
    max_message: u64,
    decoder: &mut Decoder,
    counters: &mut Counters,
) -> Result<Box<ConnCompression>, HandshakeFailure> {
    let agreed = match deflate::check_answer(&offer.params, answer) {
        Ok(Some(agreed)) => agreed,
        Ok(None) => {
            return Err(HandshakeFailure {
                cause: "deflate_declined".to_owned(),
                response: Some("the server did not accept permessage-deflate".to_owned()),
                retry_after: None,
            });
        }
        Err(error) => {
            return Err(HandshakeFailure {
                cause: "deflate_bad_answer".to_owned(),
                response: Some(format!("{error} (answer: {})", answer.unwrap_or_default())),
                retry_after: None,
            });
        }
    };
    let answer = agreed.params().to_string();
    match counters.compression_negotiated.get_mut(&answer) {
        Some(count) => *count += 1,
        None => {
            counters.compression_negotiated.insert(answer, 1);
        }
    }
    decoder.allow_rsv1();
    Ok(Box::new(ConnCompression {
        deflater: agreed.deflater(false),
        inflater: agreed.inflater(false, max_message),
        inflated: Vec::new(),
        compressed: Vec::new(),
    }))
}

impl ConnCompression {
    /// Appends `message` compressed, as one masked frame with RSV1, to `out`.
    pub fn send(&mut self, opcode: OpCode, mask: [u8; 4], message: &[u8], out: &mut Vec<u8>) {
        self.compressed.clear();
        if self.deflater.compress(message, &mut self.compressed).is_err() {
            // zlib only fails on a broken stream state; send the message uncompressed then.
            write_frame(out, true, opcode, Some(mask), message);
            return;
        }
        let start = out.len();
        write_frame(out, true, opcode, Some(mask), &self.compressed);
        out[start] |= 0x40;
        if self.compressed.capacity() > KEEP_BUFFER_BYTES {
            self.compressed = Vec::new();
        }
    }

    /// Inflates one piece of a compressed echo into `inflated`, as far as `budget` allows;
    /// on the last piece the whole echo is there. The error fails the connection.
    pub fn receive(
        &mut self,
        payload: &[u8],
        last: bool,
        budget: &mut Reservation,
    ) -> Result<(), ProtocolError> {
        let inflated = self.inflater.inflate(payload, &mut self.inflated, budget);
        let inflated = inflated.and_then(|()| match last {
            true => self.inflater.finish(&mut self.inflated, budget),
            false => Ok(()),
        });
        if let Err(error) = inflated {
            // The connection fails: the buffer goes now, not when the connection is dropped.
            self.inflated = Vec::new();
            return Err(error.into());
        }
        Ok(())
    }

    /// Gives back the echo buffer after its message was checked.
    pub fn recycle(&mut self, mut buffer: Vec<u8>) {
        buffer.clear();
        if buffer.capacity() <= KEEP_BUFFER_BYTES {
            self.inflated = buffer;
        }
    }
}
