//! The per-message compressor and decompressor of permessage-deflate (RFC 7692 §7.2).
//!
//! Both wrap flate2's raw deflate streams (zlib-rs backend, which honours window bits) and
//! write into the caller's `Vec`, growing it only when it is too small, so a connection that
//! reuses one buffer allocates nothing per message. A message is compressed with a sync
//! flush and its trailing `00 00 ff ff` removed; on the way in the tail is put back. Without
//! context takeover the stream is reset after every message. The decompressor stops at a
//! size limit, so a small message cannot inflate into gigabytes.

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

use super::DeflateError;
use crate::Reservation;

/// The tail a sync flush ends with, removed from and restored to every message (§7.2.1).
const TAIL: [u8; 4] = [0x00, 0x00, 0xff, 0xff];
/// zlib's default level, as node `ws` and Python `websockets` use.
const LEVEL: u32 = 6;
/// Smallest growth of an output buffer.
const MIN_GROWTH: usize = 256;

/// Compresses the messages one side sends.
pub struct Deflater {
    stream: Compress,
    no_context_takeover: bool,
}

impl std::fmt::Debug for Deflater {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deflater").field("no_context_takeover", &self.no_context_takeover).finish()
    }
}

impl Deflater {
    /// A compressor with a window of `2^window_bits` bytes (8..=15; zlib cannot make a raw
    /// stream with 8 bits, so 8 uses 9 only when the peer's limit allows it — callers pass
    /// what was negotiated, and [`super::accept_offer`] never agrees to 8 for itself).
    pub fn new(window_bits: u8, no_context_takeover: bool) -> Deflater {
        let bits = window_bits.clamp(9, 15);
        Deflater {
            stream: Compress::new_with_window_bits(Compression::new(LEVEL), false, bits),
            no_context_takeover,
        }
    }

    /// Appends the compressed form of one whole message to `out` (the payload to send with
    /// RSV1 set).
    pub fn compress(&mut self, message: &[u8], out: &mut Vec<u8>) -> Result<(), DeflateError> {
        let start = out.len();
        let before = self.stream.total_in();
        loop {
            let spare = out.capacity() - out.len();
            let used = (self.stream.total_in() - before) as usize;
            if spare < 64 {
                out.reserve(((message.len() - used) / 2).max(MIN_GROWTH));
            }
            self.stream
                .compress_vec(&message[used..], out, FlushCompress::Sync)
                .map_err(|_| DeflateError::CompressFailed)?;
            let used = (self.stream.total_in() - before) as usize;
            // The flush is complete when all input is taken and the output was not filled.
            if used == message.len() && out.len() < out.capacity() {
                break;
            }
        }
        if out.ends_with(&TAIL) && out.len() - start >= TAIL.len() {
            out.truncate(out.len() - TAIL.len());
        }
        if out.len() == start {
            // An empty message compresses to one empty stored block (§7.2.3.6).
            out.push(0x00);
        }
        if self.no_context_takeover {
            self.stream.reset();
        }
        Ok(())
    }
}

/// Decompresses the messages one side receives, piece by piece as frames arrive.
pub struct Inflater {
    stream: Decompress,
    no_context_takeover: bool,
    limit: u64,
    /// Bytes this message has inflated to so far.
    message_out: u64,
    /// The peer ended its deflate stream (a final block); the next message starts afresh.
    ended: bool,
}

impl std::fmt::Debug for Inflater {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inflater")
            .field("no_context_takeover", &self.no_context_takeover)
            .field("limit", &self.limit)
            .finish_non_exhaustive()
    }
}

impl Inflater {
    /// A decompressor for a peer compressing with at most `2^window_bits` bytes of window,
    /// refusing any message that inflates beyond `limit` bytes.
    pub fn new(window_bits: u8, no_context_takeover: bool, limit: u64) -> Inflater {
        Inflater {
            stream: Decompress::new_with_window_bits(false, window_bits.clamp(9, 15)),
            no_context_takeover,
            limit,
            message_out: 0,
            ended: false,
        }
    }

    /// Appends what one piece of a compressed message inflates to; `out` grows only as
    /// `budget` allows, checked chunk by chunk as the output comes.
    pub fn inflate(
        &mut self,
        compressed: &[u8],
        out: &mut Vec<u8>,
        budget: &mut Reservation,
    ) -> Result<(), DeflateError> {
        self.run(compressed, out, false, budget)
    }

    /// Ends the message: inflates the restored tail, resets the window if context takeover
    /// is off, and gets ready for the next message.
    pub fn finish(&mut self, out: &mut Vec<u8>, budget: &mut Reservation) -> Result<(), DeflateError> {
        let result = self.run(&TAIL, out, true, budget);
        if self.no_context_takeover || self.ended || result.is_err() {
            self.stream.reset(false);
            self.ended = false;
        }
        self.message_out = 0;
        result
    }

    fn run(
        &mut self,
        mut input: &[u8],
        out: &mut Vec<u8>,
        tail: bool,
        budget: &mut Reservation,
    ) -> Result<(), DeflateError> {
        loop {
            if self.ended {
                // After a final block only the restored tail may follow.
                return if tail || input.is_empty() { Ok(()) } else { Err(DeflateError::Corrupt) };
            }
            // Offer at most one byte beyond the limit, so a bomb is caught without inflating it.
            let allowed = self.limit.saturating_sub(self.message_out).saturating_add(1);
            let want = input.len().saturating_mul(4).max(MIN_GROWTH * 4);
            let room = usize::try_from(allowed).unwrap_or(usize::MAX).min(want);
            let len = out.len();
            budget.make_room(out, room)?;
            out.resize(len + room, 0);
            let (before_in, before_out) = (self.stream.total_in(), self.stream.total_out());
            let status = self.stream.decompress(input, &mut out[len..], FlushDecompress::Sync);
            let used = (self.stream.total_in() - before_in) as usize;
            let produced = (self.stream.total_out() - before_out) as usize;
            out.truncate(len + produced);
            let status = status.map_err(|_| DeflateError::Corrupt)?;
            input = &input[used..];
            self.message_out += produced as u64;
            if self.message_out > self.limit {
                return Err(DeflateError::TooBig { limit: self.limit });
            }
            match status {
                Status::StreamEnd => self.ended = true,
                Status::Ok | Status::BufError if produced < room => {
                    if input.is_empty() {
                        return Ok(());
                    }
                    if used == 0 && produced == 0 {
                        // No progress with room to spare: the input cannot be decoded.
                        return Err(DeflateError::Corrupt);
                    }
                }
                Status::Ok | Status::BufError => {}
            }
        }
    }
}
