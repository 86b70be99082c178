//! QUIC's variable-length integers (RFC 9000 §16), the length and type fields of every
//! HTTP/3 frame and stream header: two bits of the first byte say whether 1, 2, 4 or 8
//! bytes follow.

/// The largest value a variable-length integer holds (2^62 - 1).
pub const MAX: u64 = (1 << 62) - 1;

/// Appends `value` in the shortest form; values above [`MAX`] are written as [`MAX`]
/// (callers only encode lengths and identifiers far below it).
pub fn put(value: u64, out: &mut Vec<u8>) {
    let value = value.min(MAX);
    if value < 1 << 6 {
        out.push(value as u8);
    } else if value < 1 << 14 {
        out.extend_from_slice(&((value as u16) | 0x4000).to_be_bytes());
    } else if value < 1 << 30 {
        out.extend_from_slice(&((value as u32) | 0x8000_0000).to_be_bytes());
    } else {
        out.extend_from_slice(&(value | 0xc000_0000_0000_0000).to_be_bytes());
    }
}

/// The integer at the front of `buf` and the bytes it took, or `None` if `buf` ends
/// before it does.
pub fn get(buf: &[u8]) -> Option<(u64, usize)> {
    let first = *buf.first()?;
    let len = 1usize << (first >> 6);
    let bytes = buf.get(..len)?;
    let mut value = u64::from(first & 0x3f);
    for byte in &bytes[1..] {
        value = (value << 8) | u64::from(*byte);
    }
    Some((value, len))
}

/// How many bytes [`put`] writes for `value`.
pub fn len(value: u64) -> usize {
    match value {
        0..0x40 => 1,
        0x40..0x4000 => 2,
        0x4000..0x4000_0000 => 4,
        _ => 8,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_9000_examples_decode_and_reencode() {
        let cases: &[(&[u8], u64)] = &[
            (&[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c], 151_288_809_941_952_652),
            (&[0x9d, 0x7f, 0x3e, 0x7d], 494_878_333),
            (&[0x7b, 0xbd], 15_293),
            (&[0x25], 37),
        ];
        for (bytes, value) in cases {
            assert_eq!(get(bytes), Some((*value, bytes.len())));
            let mut out = Vec::new();
            put(*value, &mut out);
            assert_eq!(&out[..], *bytes);
            assert_eq!(len(*value), bytes.len());
        }
        // A two-byte form of 37 is valid too (not the shortest).
        assert_eq!(get(&[0x40, 0x25]), Some((37, 2)));
    }

    #[test]
    fn a_cut_integer_asks_for_more() {
        assert_eq!(get(&[]), None);
        assert_eq!(get(&[0x9d, 0x7f, 0x3e]), None);
    }

    #[test]
    fn values_past_the_maximum_are_capped() {
        let mut out = Vec::new();
        put(u64::MAX, &mut out);
        assert_eq!(get(&out), Some((MAX, 8)));
    }
}
