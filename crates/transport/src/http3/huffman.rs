//! The Huffman code of HPACK (RFC 7541 Appendix B), which QPACK uses unchanged (RFC 9204
//! §4.1.2): real HTTP/3 stacks (quic-go under Caddy, aioquic under hypercorn) Huffman-code
//! the strings of their field sections, so the decoder must read them. Only decoding is
//! needed (this side writes raw strings). `h2` has the same table but keeps it private.
//!
//! The code is canonical: codes of one length are consecutive in symbol order, so a code of
//! length L decodes as `SYMBOLS[OFFSET[L] + code - FIRST[L]]`, tables built at compile time
//! from [`CODES`].

/// Why a Huffman-coded string could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HuffmanError {
    /// The EOS symbol appeared in the string (RFC 7541 §5.2 makes it an error).
    Eos,
    /// The string ended with more than 7 bits of padding, or padding not all ones.
    Padding,
}

impl HuffmanError {
    /// What went wrong, for the error that closes the connection.
    pub fn what(self) -> &'static str {
        match self {
            HuffmanError::Eos => "a Huffman-coded string containing EOS",
            HuffmanError::Padding => "a Huffman-coded string whose padding is not up to 7 one bits",
        }
    }
}

/// The code and its length in bits of every symbol: bytes 0 to 255, then EOS (256).
const CODES: [(u32, u8); 257] = [
    (0x1ff8, 13),
    (0x7fffd8, 23),
    (0xfffffe2, 28),
    (0xfffffe3, 28),
    (0xfffffe4, 28),
    (0xfffffe5, 28),
    (0xfffffe6, 28),
    (0xfffffe7, 28),
    (0xfffffe8, 28),
    (0xffffea, 24),
    (0x3ffffffc, 30),
    (0xfffffe9, 28),
    (0xfffffea, 28),
    (0x3ffffffd, 30),
    (0xfffffeb, 28),
    (0xfffffec, 28),
    (0xfffffed, 28),
    (0xfffffee, 28),
    (0xfffffef, 28),
    (0xffffff0, 28),
    (0xffffff1, 28),
    (0xffffff2, 28),
    (0x3ffffffe, 30),
    (0xffffff3, 28),
    (0xffffff4, 28),
    (0xffffff5, 28),
    (0xffffff6, 28),
    (0xffffff7, 28),
    (0xffffff8, 28),
    (0xffffff9, 28),
    (0xffffffa, 28),
    (0xffffffb, 28),
    (0x14, 6),
    (0x3f8, 10),
    (0x3f9, 10),
    (0xffa, 12),
    (0x1ff9, 13),
    (0x15, 6),
    (0xf8, 8),
    (0x7fa, 11),
    (0x3fa, 10),
    (0x3fb, 10),
    (0xf9, 8),
    (0x7fb, 11),
    (0xfa, 8),
    (0x16, 6),
    (0x17, 6),
    (0x18, 6),
    (0x0, 5),
    (0x1, 5),
    (0x2, 5),
    (0x19, 6),
    (0x1a, 6),
    (0x1b, 6),
    (0x1c, 6),
    (0x1d, 6),
    (0x1e, 6),
    (0x1f, 6),
    (0x5c, 7),
    (0xfb, 8),
    (0x7ffc, 15),
    (0x20, 6),
    (0xffb, 12),
    (0x3fc, 10),
    (0x1ffa, 13),
    (0x21, 6),
    (0x5d, 7),
    (0x5e, 7),
    (0x5f, 7),
    (0x60, 7),
    (0x61, 7),
    (0x62, 7),
    (0x63, 7),
    (0x64, 7),
    (0x65, 7),
    (0x66, 7),
    (0x67, 7),
    (0x68, 7),
    (0x69, 7),
    (0x6a, 7),
    (0x6b, 7),
    (0x6c, 7),
    (0x6d, 7),
    (0x6e, 7),
    (0x6f, 7),
    (0x70, 7),
    (0x71, 7),
    (0x72, 7),
    (0xfc, 8),
    (0x73, 7),
    (0xfd, 8),
    (0x1ffb, 13),
    (0x7fff0, 19),
    (0x1ffc, 13),
    (0x3ffc, 14),
    (0x22, 6),
    (0x7ffd, 15),
    (0x3, 5),
    (0x23, 6),
    (0x4, 5),
    (0x24, 6),
    (0x5, 5),
    (0x25, 6),
    (0x26, 6),
    (0x27, 6),
    (0x6, 5),
    (0x74, 7),
    (0x75, 7),
    (0x28, 6),
    (0x29, 6),
    (0x2a, 6),
    (0x7, 5),
    (0x2b, 6),
    (0x76, 7),
    (0x2c, 6),
    (0x8, 5),
    (0x9, 5),
    (0x2d, 6),
    (0x77, 7),
    (0x78, 7),
    (0x79, 7),
    (0x7a, 7),
    (0x7b, 7),
    (0x7ffe, 15),
    (0x7fc, 11),
    (0x3ffd, 14),
    (0x1ffd, 13),
    (0xffffffc, 28),
    (0xfffe6, 20),
    (0x3fffd2, 22),
    (0xfffe7, 20),
    (0xfffe8, 20),
    (0x3fffd3, 22),
    (0x3fffd4, 22),
    (0x3fffd5, 22),
    (0x7fffd9, 23),
    (0x3fffd6, 22),
    (0x7fffda, 23),
    (0x7fffdb, 23),
    (0x7fffdc, 23),
    (0x7fffdd, 23),
    (0x7fffde, 23),
    (0xffffeb, 24),
    (0x7fffdf, 23),
    (0xffffec, 24),
    (0xffffed, 24),
    (0x3fffd7, 22),
    (0x7fffe0, 23),
    (0xffffee, 24),
    (0x7fffe1, 23),
    (0x7fffe2, 23),
    (0x7fffe3, 23),
    (0x7fffe4, 23),
    (0x1fffdc, 21),
    (0x3fffd8, 22),
    (0x7fffe5, 23),
    (0x3fffd9, 22),
    (0x7fffe6, 23),
    (0x7fffe7, 23),
    (0xffffef, 24),
    (0x3fffda, 22),
    (0x1fffdd, 21),
    (0xfffe9, 20),
    (0x3fffdb, 22),
    (0x3fffdc, 22),
    (0x7fffe8, 23),
    (0x7fffe9, 23),
    (0x1fffde, 21),
    (0x7fffea, 23),
    (0x3fffdd, 22),
    (0x3fffde, 22),
    (0xfffff0, 24),
    (0x1fffdf, 21),
    (0x3fffdf, 22),
    (0x7fffeb, 23),
    (0x7fffec, 23),
    (0x1fffe0, 21),
    (0x1fffe1, 21),
    (0x3fffe0, 22),
    (0x1fffe2, 21),
    (0x7fffed, 23),
    (0x3fffe1, 22),
    (0x7fffee, 23),
    (0x7fffef, 23),
    (0xfffea, 20),
    (0x3fffe2, 22),
    (0x3fffe3, 22),
    (0x3fffe4, 22),
    (0x7ffff0, 23),
    (0x3fffe5, 22),
    (0x3fffe6, 22),
    (0x7ffff1, 23),
    (0x3ffffe0, 26),
    (0x3ffffe1, 26),
    (0xfffeb, 20),
    (0x7fff1, 19),
    (0x3fffe7, 22),
    (0x7ffff2, 23),
    (0x3fffe8, 22),
    (0x1ffffec, 25),
    (0x3ffffe2, 26),
    (0x3ffffe3, 26),
    (0x3ffffe4, 26),
    (0x7ffffde, 27),
    (0x7ffffdf, 27),
    (0x3ffffe5, 26),
    (0xfffff1, 24),
    (0x1ffffed, 25),
    (0x7fff2, 19),
    (0x1fffe3, 21),
    (0x3ffffe6, 26),
    (0x7ffffe0, 27),
    (0x7ffffe1, 27),
    (0x3ffffe7, 26),
    (0x7ffffe2, 27),
    (0xfffff2, 24),
    (0x1fffe4, 21),
    (0x1fffe5, 21),
    (0x3ffffe8, 26),
    (0x3ffffe9, 26),
    (0xffffffd, 28),
    (0x7ffffe3, 27),
    (0x7ffffe4, 27),
    (0x7ffffe5, 27),
    (0xfffec, 20),
    (0xfffff3, 24),
    (0xfffed, 20),
    (0x1fffe6, 21),
    (0x3fffe9, 22),
    (0x1fffe7, 21),
    (0x1fffe8, 21),
    (0x7ffff3, 23),
    (0x3fffea, 22),
    (0x3fffeb, 22),
    (0x1ffffee, 25),
    (0x1ffffef, 25),
    (0xfffff4, 24),
    (0xfffff5, 24),
    (0x3ffffea, 26),
    (0x7ffff4, 23),
    (0x3ffffeb, 26),
    (0x7ffffe6, 27),
    (0x3ffffec, 26),
    (0x3ffffed, 26),
    (0x7ffffe7, 27),
    (0x7ffffe8, 27),
    (0x7ffffe9, 27),
    (0x7ffffea, 27),
    (0x7ffffeb, 27),
    (0xffffffe, 28),
    (0x7ffffec, 27),
    (0x7ffffed, 27),
    (0x7ffffee, 27),
    (0x7ffffef, 27),
    (0x7fffff0, 27),
    (0x3ffffee, 26),
    (0x3fffffff, 30),
];

const EOS: u16 = 256;
const MAX_LEN: usize = 30;

/// Symbols sorted by code length (then by symbol, which for a canonical code is by code),
/// where codes of length L start in [`SYMBOLS`], how many there are, and the first one.
struct Canonical {
    symbols: [u16; 257],
    offset: [u16; MAX_LEN + 1],
    count: [u16; MAX_LEN + 1],
    first: [u32; MAX_LEN + 1],
}

const CANONICAL: Canonical = canonical();

const fn canonical() -> Canonical {
    let mut table = Canonical {
        symbols: [0; 257],
        offset: [0; MAX_LEN + 1],
        count: [0; MAX_LEN + 1],
        first: [0; MAX_LEN + 1],
    };
    let mut symbol = 0;
    while symbol < 257 {
        let (code, len) = CODES[symbol];
        if table.count[len as usize] == 0 {
            table.first[len as usize] = code;
        }
        table.count[len as usize] += 1;
        symbol += 1;
    }
    let mut len = 1;
    while len <= MAX_LEN {
        table.offset[len] = table.offset[len - 1] + table.count[len - 1];
        len += 1;
    }
    let mut placed = [0u16; MAX_LEN + 1];
    symbol = 0;
    while symbol < 257 {
        let len = CODES[symbol].1 as usize;
        table.symbols[(table.offset[len] + placed[len]) as usize] = symbol as u16;
        placed[len] += 1;
        symbol += 1;
    }
    table
}

/// Appends the bytes `input` codes to `out`.
pub fn decode(input: &[u8], out: &mut Vec<u8>) -> Result<(), HuffmanError> {
    let table = &CANONICAL;
    let (mut code, mut len) = (0u32, 0usize);
    for byte in input {
        for shift in (0..8).rev() {
            code = (code << 1) | u32::from((byte >> shift) & 1);
            len += 1;
            let index = code.wrapping_sub(table.first[len]);
            if index < u32::from(table.count[len]) {
                let symbol = table.symbols[usize::from(table.offset[len]) + index as usize];
                if symbol == EOS {
                    return Err(HuffmanError::Eos);
                }
                out.push(symbol as u8);
                (code, len) = (0, 0);
            } else if len == MAX_LEN {
                // The code is complete, so a symbol ends within 30 bits: not reached.
                return Err(HuffmanError::Eos);
            }
        }
    }
    // Padding: the most significant bits of EOS (all ones), fewer than 8 of them.
    if len > 7 || code != (1 << len) - 1 {
        return Err(HuffmanError::Padding);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(hex: &str) -> Result<Vec<u8>, HuffmanError> {
        let bytes: Vec<u8> =
            (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect();
        let mut out = Vec::new();
        decode(&bytes, &mut out).map(|()| out)
    }

    #[test]
    fn the_table_is_canonical() {
        // Sorted by (length, symbol), each code is the previous one plus one, shifted left
        // by the lengths in between: what decoding by FIRST and OFFSET relies on.
        let mut order: Vec<usize> = (0..257).collect();
        order.sort_by_key(|&s| (CODES[s].1, s));
        let (mut code, mut len) = (0u32, CODES[order[0]].1);
        assert_eq!(CODES[order[0]].0, 0);
        for pair in order.windows(2) {
            let next = CODES[pair[1]];
            code = (code + 1) << (next.1 - len);
            len = next.1;
            assert_eq!(next.0, code, "symbol {}", pair[1]);
        }
    }

    #[test]
    fn rfc_7541_c4_request_strings_decode() {
        // RFC 7541 C.4.1 to C.4.3: the Huffman-coded values of three requests.
        assert_eq!(decoded("f1e3c2e5f23a6ba0ab90f4ff").unwrap(), b"www.example.com");
        assert_eq!(decoded("a8eb10649cbf").unwrap(), b"no-cache");
        assert_eq!(decoded("25a849e95ba97d7f").unwrap(), b"custom-key");
        assert_eq!(decoded("25a849e95bb8e8b4bf").unwrap(), b"custom-value");
    }

    #[test]
    fn rfc_7541_c6_response_strings_decode() {
        // RFC 7541 C.6.1: a status, a date and a URL.
        assert_eq!(decoded("6402").unwrap(), b"302");
        assert_eq!(decoded("aec3771a4b").unwrap(), b"private");
        assert_eq!(
            decoded("d07abe941054d444a8200595040b8166e082a62d1bff").unwrap(),
            b"Mon, 21 Oct 2013 20:13:21 GMT"
        );
        assert_eq!(decoded("9d29ad171863c78f0b97c8e9ae82ae43d3").unwrap(), b"https://www.example.com");
    }

    #[test]
    fn every_byte_round_trips_through_its_code() {
        for symbol in 0..=255u8 {
            let (code, len) = CODES[usize::from(symbol)];
            // The code followed by one-bit padding to a whole number of bytes.
            let bits = u64::from(len).div_ceil(8) * 8;
            let padded = (u64::from(code) << (bits - u64::from(len))) | ((1 << (bits - u64::from(len))) - 1);
            let bytes: Vec<u8> = (0..bits / 8).rev().map(|i| (padded >> (8 * i)) as u8).collect();
            let mut out = Vec::new();
            decode(&bytes, &mut out).unwrap();
            assert_eq!(out, [symbol]);
        }
    }

    #[test]
    fn bad_padding_and_eos_are_refused() {
        // "a" is 00011 (5 bits): padded with 000 instead of 111.
        assert_eq!(decoded("18"), Err(HuffmanError::Padding));
        // A whole byte of ones after a complete symbol: 8 bits of padding.
        assert_eq!(decoded("1fff"), Err(HuffmanError::Padding));
        // EOS itself: 30 ones (padded with two more).
        assert_eq!(decoded("ffffffff"), Err(HuffmanError::Eos));
        assert_eq!(decoded("").unwrap(), b"");
    }
}
