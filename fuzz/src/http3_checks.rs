//! The invariant check of the `http3_decode` target, shared with
//! `crates/transport/tests/fuzz_corpus.rs` (included there by path, so it may only use
//! `wsbench_transport` and std): arbitrary bytes as a peer's HTTP/3 stream through the
//! frame reader, fed in chunks, and every HEADERS block through the static-table QPACK
//! decoder (its Huffman-coded strings through the RFC 7541 code). Neither may panic; the
//! reader always makes progress and never takes more than it was given; a field section
//! that decodes re-encodes to the same fields.

use wsbench_transport::http3::{FrameReader, Piece, StreamRole, qpack};

/// The first byte picks the stream's role (low bit) and the chunk size (the rest + 1).
pub fn http3_decode(data: &[u8]) {
    let Some((&first, stream)) = data.split_first() else { return };
    let role = if first & 1 == 0 { StreamRole::Control } else { StreamRole::Request };
    let chunk = usize::from(first >> 1) + 1;
    let mut reader = FrameReader::with_limit(role, 4096);
    let mut buffered: Vec<u8> = Vec::new();
    for piece in stream.chunks(chunk) {
        buffered.extend_from_slice(piece);
        loop {
            let (piece, used) = match reader.next(&buffered) {
                Ok(Some(next)) => next,
                Ok(None) => break,
                Err(_) => return,
            };
            assert!(used > 0 && used <= buffered.len(), "took {used} of {}", buffered.len());
            if let Piece::Headers(block) = piece {
                check_fields(block);
            }
            buffered.drain(..used);
        }
    }
    // Whatever is left may be fed again as a field section on its own.
    check_fields(&buffered);
}

fn check_fields(block: &[u8]) {
    let Ok(fields) = qpack::decode(block, 16_384) else { return };
    let mut again = Vec::new();
    qpack::encode(&fields, &mut again);
    assert_eq!(qpack::decode(&again, usize::MAX).ok(), Some(fields), "re-encoded fields differ");
}
