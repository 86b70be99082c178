//! A worker's pre-encoded batch: `frames` masked frames of one fixed message, encoded once
//! and written by every connection of the worker, each frame numbered on its way out. A
//! reply must name the request it answers, so every frame carries its message's number in
//! 8 bytes of its payload (at [`Batch::number_at`], masked like the rest of the payload);
//! the number is patched in as the bytes are written (8 bytes per frame, over the shared
//! bytes on epoll, whose write copies them at once; over the copy on the ring and on a
//! carrier), so that numbering costs no per-connection copy of the batch and no masking
//! of the payload. Copies of the batch lie back to back (up to [`COALESCE_BYTES`]) so
//! that several queued batches go out in one write. A batch of one frame of
//! [`LARGE_FRAME_BYTES`] or more is kept in two parts: its head (the frame's header and
//! number), patched per write, and the rest, shared and never written to, which a send
//! on the ring reads where it lies instead of from a copy (the copy cost the client as
//! much as the kernel's own copy of the message).

use std::cell::RefCell;
use std::sync::Arc;

/// Bytes of batch copies written by one call, when several batches are queued.
pub const COALESCE_BYTES: usize = 64 * 1024;
/// The most copies kept (and so batches written by one call).
const MAX_COPIES: usize = 64;

/// The bytes that carry a frame's number.
pub const NUMBER_BYTES: usize = 8;

/// The frame length from which a batch of one frame keeps its bytes past the number
/// shared ([`Batch::tail`]).
pub const LARGE_FRAME_BYTES: usize = 64 * 1024;

#[derive(Debug)]
pub struct Batch {
    /// `copies` batches back to back (a large frame: its head only); the numbers of the
    /// last write patched in.
    bytes: RefCell<Vec<u8>>,
    /// A large frame's bytes after its head (empty otherwise): never written to, so a send
    /// in flight may read them while other connections number their heads.
    tail: Arc<[u8]>,
    /// One batch's bytes.
    len: usize,
    copies: usize,
    frames: u64,
    frame_len: usize,
    /// Where a frame's number starts inside the frame (None: frames are not numbered).
    number_at: Option<usize>,
    mask: [u8; 4],
    /// Payload bytes of one batch (all its frames).
    payload_bytes: u64,
}

impl Batch {
    /// A batch of `frames` copies of `frame` (one whole masked frame of `payload_len`
    /// payload bytes, masked with `mask`), numbered at `number_at` inside each frame if given.
    pub fn new(
        frame: &[u8],
        frames: u64,
        payload_len: usize,
        mask: [u8; 4],
        number_at: Option<usize>,
    ) -> Batch {
        let len = frame.len() * frames as usize;
        if frames == 1 && frame.len() >= LARGE_FRAME_BYTES {
            let head = number_at.map_or(0, |at| at + NUMBER_BYTES);
            return Batch {
                bytes: RefCell::new(frame[..head].to_vec()),
                tail: frame[head..].into(),
                len,
                copies: 1,
                frames,
                frame_len: frame.len(),
                number_at,
                mask,
                payload_bytes: payload_len as u64,
            };
        }
        let copies = (COALESCE_BYTES / len.max(1)).clamp(1, MAX_COPIES);
        let mut bytes = Vec::with_capacity(len * copies);
        for _ in 0..frames as usize * copies {
            bytes.extend_from_slice(frame);
        }
        Batch {
            bytes: RefCell::new(bytes),
            tail: Arc::from(&[][..]),
            len,
            copies,
            frames,
            frame_len: frame.len(),
            number_at,
            mask,
            payload_bytes: payload_len as u64 * frames,
        }
    }

    /// One batch's bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Messages in one batch.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Payload bytes of one batch.
    pub fn payload_bytes(&self) -> u64 {
        self.payload_bytes
    }

    /// How many batches one [`Batch::with_numbered`] call may lay out.
    pub fn copies(&self) -> usize {
        self.copies
    }

    /// A large frame's bytes past its head, shared (empty for other batches): what a send of
    /// one whole batch may read in place after its head.
    pub fn tail(&self) -> &Arc<[u8]> {
        &self.tail
    }

    /// Calls `write` with `count` (at most [`Batch::copies`]) whole batches back to back,
    /// their frames numbered from `first` on, from byte `from` on: as two parts, the second
    /// the shared [`Batch::tail`] of a large frame (empty otherwise).
    pub fn with_numbered<T>(
        &self,
        first: u64,
        count: usize,
        from: usize,
        write: impl FnOnce(&[u8], &[u8]) -> T,
    ) -> T {
        let count = count.min(self.copies);
        let mut bytes = self.bytes.borrow_mut();
        let head_len = bytes.len() / self.copies;
        let head = &mut bytes[..count * head_len];
        self.number(head, first);
        let split = from.min(head.len());
        write(&head[split..], &self.tail[from - split..])
    }

    /// Appends `count` whole batches, numbered from `first` on, to `out`; `from`: the bytes
    /// of the first batch already written (they are left out). The batches are numbered in
    /// the copies laid out back to back and copied once, [`Batch::copies`] at a time.
    pub fn append_numbered(&self, mut first: u64, mut count: usize, mut from: usize, out: &mut Vec<u8>) {
        while count > 0 {
            let now = count.min(self.copies);
            self.with_numbered(first, now, from, |head, tail| {
                out.extend_from_slice(head);
                out.extend_from_slice(tail);
            });
            first += now as u64 * self.frames;
            count -= now;
            from = 0;
        }
    }

    /// Writes the numbers of consecutive batches laid out in `bytes` (whole batches, or a
    /// large frame's head), the first frame numbered `first`.
    fn number(&self, bytes: &mut [u8], first: u64) {
        let Some(at) = self.number_at else { return };
        let mask = mask_word(self.mask);
        let frame_len = self.frame_len.min(bytes.len()).max(1);
        for (index, frame) in bytes.chunks_exact_mut(frame_len).enumerate() {
            let masked = masked_number(first + index as u64, mask);
            frame[at..at + NUMBER_BYTES].copy_from_slice(&masked);
        }
    }
}

/// The 8 bytes that carry message number `number` in a payload (at its start): 6 bits in
/// each, as printable ASCII (`'0'` to `'o'`), so that a text message stays UTF-8. Numbers
/// wrap at 2⁴⁸ messages a connection.
pub fn encode_number(number: u64) -> [u8; NUMBER_BYTES] {
    number_word(number).to_be_bytes()
}

/// [`encode_number`] as one word, its first byte the most significant: six bits spread
/// into each byte, then `'0'` added to all eight at once (no byte carries: each is < 64).
#[inline]
fn number_word(number: u64) -> u64 {
    let mut word = 0;
    for index in 0..NUMBER_BYTES {
        word |= ((number >> (6 * index)) & 63) << (8 * index);
    }
    word + u64::from_ne_bytes([b'0'; NUMBER_BYTES])
}

/// The number [`encode_number`] wrote, or None if these bytes are not one.
#[inline]
pub fn decode_number(bytes: &[u8; NUMBER_BYTES]) -> Option<u64> {
    let mut number = 0u64;
    for &byte in bytes {
        let digit = byte.wrapping_sub(b'0');
        if digit > 63 {
            return None;
        }
        number = (number << 6) | digit as u64;
    }
    Some(number)
}

/// The number as it goes on the wire at the start of a payload masked with `mask`
/// (repeated over 8 bytes: [`mask_word`]).
#[inline]
fn masked_number(number: u64, mask_word: [u8; NUMBER_BYTES]) -> [u8; NUMBER_BYTES] {
    (number_word(number).to_be() ^ u64::from_ne_bytes(mask_word)).to_ne_bytes()
}

/// The 4-byte mask twice, as it falls on the 8 bytes at the start of a payload.
fn mask_word(mask: [u8; 4]) -> [u8; NUMBER_BYTES] {
    [mask[0], mask[1], mask[2], mask[3], mask[0], mask[1], mask[2], mask[3]]
}

/// The part of message number `number` that [`encode_number`] can carry (2⁴⁸ wraps).
#[inline]
pub fn wrapped(number: u64) -> u64 {
    number & ((1 << (6 * NUMBER_BYTES)) - 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wsbench_proto::{Decoder, OpCode, Role, write_frame};

    #[test]
    fn numbers_round_trip_and_are_printable() {
        for number in [0, 1, 63, 64, 4095, 1 << 40, (1 << 48) - 1] {
            let bytes = encode_number(number);
            assert!(bytes.iter().all(|b| (b' '..=b'~').contains(b)), "{bytes:?}");
            assert_eq!(decode_number(&bytes), Some(number));
        }
        assert_eq!(decode_number(&encode_number(1 << 48)), Some(0), "numbers wrap at 2^48");
        assert_eq!(wrapped(1 << 48), 0);
        assert_eq!(decode_number(b"0000000\xff"), None);
        assert_eq!(decode_number(b"00000 00"), None);
    }

    /// Frames of `payload` (its first 8 bytes left for the number), as the worker writes them.
    fn batch(payload: &[u8], frames: u64) -> Batch {
        let mask = [0x12, 0x34, 0x56, 0x78];
        let mut frame = Vec::new();
        write_frame(&mut frame, true, OpCode::Binary, Some(mask), payload);
        let header = frame.len() - payload.len();
        Batch::new(&frame, frames, payload.len(), mask, Some(header))
    }

    /// The numbers at the start of the payloads of the frames in `bytes`.
    fn numbers(mut bytes: Vec<u8>) -> Vec<u64> {
        let mut decoder = Decoder::new(Role::Server, 1 << 20);
        let mut numbers = Vec::new();
        while !bytes.is_empty() {
            let chunk = decoder.decode(&mut bytes).unwrap().unwrap();
            let payload = &bytes[chunk.payload.clone()];
            numbers.push(decode_number(payload[..8].try_into().unwrap()).unwrap());
            assert_eq!(&payload[8..], b"the rest");
            bytes.drain(..chunk.payload.end);
        }
        numbers
    }

    #[test]
    fn every_frame_written_carries_its_number() {
        let batch = batch(b"01234567the rest", 3);
        assert!(batch.copies() > 2);
        let written = batch.with_numbered(10, 2, 0, |head, tail| [head, tail].concat());
        assert_eq!(numbers(written), [10, 11, 12, 13, 14, 15]);
        let mut out = Vec::new();
        batch.append_numbered(100, 2, 0, &mut out);
        assert_eq!(numbers(out), [100, 101, 102, 103, 104, 105]);
    }

    #[test]
    fn a_large_frame_is_numbered_in_its_head_and_shares_the_rest() {
        let payload: Vec<u8> = (0..LARGE_FRAME_BYTES + 5).map(|i| b'a' + (i % 26) as u8).collect();
        let batch = batch(&payload, 1);
        assert_eq!(batch.copies(), 1);
        let header = batch.len() - payload.len();
        assert_eq!(batch.tail().len(), batch.len() - header - NUMBER_BYTES, "all past the number is shared");
        for first in [3, 4] {
            let whole = batch.with_numbered(first, 1, 0, |head, tail| {
                assert_eq!(head.len(), header + NUMBER_BYTES);
                [head, tail].concat()
            });
            let number =
                decode_number(&unmasked(&whole[header..header + NUMBER_BYTES], 0).try_into().unwrap())
                    .unwrap();
            assert_eq!(number, first);
            assert_eq!(unmasked(&whole[header + NUMBER_BYTES..], NUMBER_BYTES), payload[NUMBER_BYTES..]);
            // Resumed inside the head, and inside the shared bytes, it goes on where it was.
            for from in [1, header + 3, header + NUMBER_BYTES + 100] {
                let mut out = whole[..from].to_vec();
                batch.append_numbered(first, 1, from, &mut out);
                assert!(out == whole, "resumed at {from}");
            }
        }
    }

    /// `masked` (bytes of a payload masked with the tests' key, `offset` into it), unmasked.
    fn unmasked(masked: &[u8], offset: usize) -> Vec<u8> {
        let mut bytes = masked.to_vec();
        wsbench_proto::apply_mask(&mut bytes, [0x12, 0x34, 0x56, 0x78], offset);
        bytes
    }

    #[test]
    fn a_batch_resumed_inside_keeps_its_numbers() {
        let batch = batch(b"01234567the rest", 2);
        let whole = batch.with_numbered(7, 1, 0, |head, tail| [head, tail].concat());
        let mut out = whole[..5].to_vec();
        batch.append_numbered(7, 2, 5, &mut out);
        assert_eq!(numbers(out), [7, 8, 9, 10]);
    }
}
