//! Payload masking (RFC 6455 §5.3), a word at a time: the key is widened to 64 bits and
//! XORed over 8-byte chunks, which the compiler turns into vector instructions. Masking is
//! its own inverse, so the same function masks and unmasks.

/// XORs `buf` with `key`, where `buf` starts `offset` bytes into the payload (so a payload
/// that arrives in pieces can be unmasked piece by piece).
#[inline]
pub fn apply_mask(buf: &mut [u8], key: [u8; 4], offset: usize) {
    let key = rotate(key, offset);
    let wide = u64::from_ne_bytes([key[0], key[1], key[2], key[3], key[0], key[1], key[2], key[3]]);
    let mut blocks = buf.chunks_exact_mut(32);
    for block in &mut blocks {
        for word in block.chunks_exact_mut(8) {
            let value = u64::from_ne_bytes(word.try_into().expect("8-byte chunk")) ^ wide;
            word.copy_from_slice(&value.to_ne_bytes());
        }
    }
    // Whole 32-byte blocks keep the key's phase, so the tail restarts at key[0].
    let tail = blocks.into_remainder();
    let mut words = tail.chunks_exact_mut(8);
    for word in &mut words {
        let value = u64::from_ne_bytes(word.try_into().expect("8-byte chunk")) ^ wide;
        word.copy_from_slice(&value.to_ne_bytes());
    }
    for (i, byte) in words.into_remainder().iter_mut().enumerate() {
        *byte ^= key[i & 3];
    }
}

fn rotate(key: [u8; 4], offset: usize) -> [u8; 4] {
    let r = offset & 3;
    [key[r], key[(r + 1) & 3], key[(r + 2) & 3], key[(r + 3) & 3]]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mask_bytewise(buf: &mut [u8], key: [u8; 4], offset: usize) {
        for (i, b) in buf.iter_mut().enumerate() {
            *b ^= key[(offset + i) % 4];
        }
    }

    #[test]
    fn matches_bytewise_masking_for_every_length_and_offset() {
        let key = [0x12, 0x34, 0x56, 0x78];
        for len in 0..100 {
            for offset in 0..8 {
                let original: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
                let mut fast = original.clone();
                let mut slow = original.clone();
                apply_mask(&mut fast, key, offset);
                mask_bytewise(&mut slow, key, offset);
                assert_eq!(fast, slow, "len {len} offset {offset}");
            }
        }
    }

    #[test]
    fn unmasking_in_pieces_equals_unmasking_whole() {
        let key = [1, 2, 3, 4];
        let original: Vec<u8> = (0..1000u32).map(|i| i as u8).collect();
        let mut whole = original.clone();
        apply_mask(&mut whole, key, 0);
        let mut pieces = original.clone();
        let mut at = 0;
        for size in [1, 3, 7, 64, 100, 825] {
            apply_mask(&mut pieces[at..at + size], key, at);
            at += size;
        }
        assert_eq!(whole, pieces);
    }

    #[test]
    fn masking_twice_restores_the_payload() {
        let original = b"Hello, WebSocket masking!".to_vec();
        let mut buf = original.clone();
        apply_mask(&mut buf, [9, 8, 7, 6], 0);
        assert_ne!(buf, original);
        apply_mask(&mut buf, [9, 8, 7, 6], 0);
        assert_eq!(buf, original);
    }
}
