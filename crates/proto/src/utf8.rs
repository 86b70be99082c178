//! Incremental UTF-8 validation for text messages that arrive in fragments and TCP chunks.
//! It fails as soon as a byte makes the text invalid (Autobahn's fail-fast cases) and carries
//! at most three bytes of an incomplete code point across a boundary. The bulk of the work is
//! `std::str::from_utf8`, which has an ASCII fast path.

/// The text so far is not valid UTF-8.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("invalid UTF-8")]
pub struct Utf8Error;

/// Validates a byte stream piece by piece.
#[derive(Debug, Clone, Default)]
pub struct Utf8Validator {
    partial: [u8; 4],
    partial_len: u8,
}

impl Utf8Validator {
    pub fn new() -> Self {
        Self::default()
    }

    /// Checks the next piece; errors as soon as the stream can no longer be valid UTF-8.
    pub fn feed(&mut self, mut bytes: &[u8]) -> Result<(), Utf8Error> {
        if self.partial_len > 0 {
            let have = self.partial_len as usize;
            let width = char_width(self.partial[0]);
            let take = (width - have).min(bytes.len());
            self.partial[have..have + take].copy_from_slice(&bytes[..take]);
            let filled = have + take;
            bytes = &bytes[take..];
            match std::str::from_utf8(&self.partial[..filled]) {
                Ok(_) => self.partial_len = 0,
                Err(e) if e.error_len().is_none() && filled < width => {
                    self.partial_len = filled as u8;
                    return Ok(());
                }
                Err(_) => return Err(Utf8Error),
            }
        }
        match std::str::from_utf8(bytes) {
            Ok(_) => Ok(()),
            Err(e) if e.error_len().is_none() => {
                let tail = &bytes[e.valid_up_to()..];
                self.partial[..tail.len()].copy_from_slice(tail);
                self.partial_len = tail.len() as u8;
                Ok(())
            }
            Err(_) => Err(Utf8Error),
        }
    }

    /// Checks that the stream did not end inside a code point.
    pub fn finish(&mut self) -> Result<(), Utf8Error> {
        let incomplete = self.partial_len != 0;
        self.partial_len = 0;
        if incomplete { Err(Utf8Error) } else { Ok(()) }
    }
}

/// Length of the sequence a lead byte starts; 1 for bytes that cannot lead (from_utf8 then
/// reports them as invalid).
fn char_width(lead: u8) -> usize {
    match lead {
        0xC2..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF4 => 4,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn validate_split_everywhere(bytes: &[u8]) -> Vec<bool> {
        (0..=bytes.len())
            .map(|split| {
                let mut v = Utf8Validator::new();
                v.feed(&bytes[..split]).is_ok() && v.feed(&bytes[split..]).is_ok() && v.finish().is_ok()
            })
            .collect()
    }

    #[test]
    fn valid_text_is_valid_at_every_split() {
        let text = "κόσμε Hello-µ@ßöäüàá-UTF-8!! 𝄞 \u{10FFFF}";
        assert!(validate_split_everywhere(text.as_bytes()).iter().all(|&ok| ok));
    }

    #[test]
    fn byte_by_byte_valid_text_is_accepted() {
        let text = "𝄞κόσμε\u{FFFF}\u{0800}";
        let mut v = Utf8Validator::new();
        for b in text.as_bytes() {
            v.feed(std::slice::from_ref(b)).unwrap();
        }
        v.finish().unwrap();
    }

    #[test]
    fn invalid_text_is_rejected_at_every_split() {
        let cases: [&[u8]; 6] = [
            b"\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5\xed\xa0\x80edited",
            b"\xf4\x90\x80\x80",
            b"\xc0\xaf",
            b"\xed\xbf\xbf",
            b"\xff",
            b"abc\xe0\x80",
        ];
        for case in cases {
            assert!(validate_split_everywhere(case).iter().all(|&ok| !ok), "{case:x?}");
        }
    }

    #[test]
    fn fails_fast_before_the_message_ends() {
        // Autobahn 6.4.1: the first piece already holds a sequence no continuation can fix.
        let mut v = Utf8Validator::new();
        assert_eq!(v.feed(b"\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5\xf4\x90"), Err(Utf8Error));
        let mut v = Utf8Validator::new();
        v.feed(b"\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5\xf4").unwrap();
        assert_eq!(v.feed(b"\x90\x80\x80"), Err(Utf8Error));
    }

    #[test]
    fn ending_inside_a_code_point_is_an_error() {
        let mut v = Utf8Validator::new();
        v.feed(b"ab\xe2\x82").unwrap();
        assert_eq!(v.finish(), Err(Utf8Error));
    }
}
