//! The few JSON pieces the JSON-based protocols need on their hot paths, without building a
//! `serde_json::Value`: writing a string or a number into a buffer, reading a string token
//! (borrowed unless it has escapes), and finding the elements of an array by their
//! boundaries. The boundary scanner is deliberately lax: it finds where values start and end
//! (strings, nesting) and leaves validating them to whoever parses an element.

use std::borrow::Cow;

use serde_json::value::RawValue;

/// Appends `value`, replacing each byte for which `escape` gives an escape sequence; the
/// runs between them are copied whole.
pub(crate) fn write_escaped(out: &mut Vec<u8>, value: &str, escape: impl Fn(u8) -> Option<&'static [u8]>) {
    let bytes = value.as_bytes();
    let mut start = 0;
    for (i, &byte) in bytes.iter().enumerate() {
        if let Some(sequence) = escape(byte) {
            out.extend_from_slice(&bytes[start..i]);
            out.extend_from_slice(sequence);
            start = i + 1;
        }
    }
    out.extend_from_slice(&bytes[start..]);
}

/// `\u00XX` for each control character.
static CONTROL_ESCAPES: [[u8; 6]; 32] = {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut table = [[0u8; 6]; 32];
    let mut i = 0;
    while i < 32 {
        table[i] = [b'\\', b'u', b'0', b'0', HEX[i >> 4], HEX[i & 0xf]];
        i += 1;
    }
    table
};

/// Appends `value` as a JSON string, quotes included. Allocates only if `out` must grow.
pub fn write_str(out: &mut Vec<u8>, value: &str) {
    out.push(b'"');
    write_escaped(out, value, |byte| match byte {
        b'"' => Some(b"\\\""),
        b'\\' => Some(b"\\\\"),
        b'\n' => Some(b"\\n"),
        b'\r' => Some(b"\\r"),
        b'\t' => Some(b"\\t"),
        0x00..=0x1f => Some(&CONTROL_ESCAPES[usize::from(byte)]),
        _ => None,
    });
    out.push(b'"');
}

/// Appends the decimal digits of `value`.
pub fn write_u64(out: &mut Vec<u8>, mut value: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// The text of a JSON string token (`raw` includes the quotes): borrowed when it has no
/// escapes, decoded by serde_json when it has. `None` when `raw` is not a valid string.
pub fn string_value(raw: &str) -> Option<Cow<'_, str>> {
    let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
    if !inner.bytes().any(|b| b == b'\\' || b == b'"' || b < 0x20) {
        return Some(Cow::Borrowed(inner));
    }
    serde_json::from_str::<String>(raw).ok().map(Cow::Owned)
}

/// Decodes the JSON string token `raw` (quotes included) into `out` (cleared first), with
/// no allocation when `out` has room; false when `raw` is not a valid string.
pub fn unescape_into(raw: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    let Some(inner) = raw.strip_prefix(b"\"").and_then(|rest| rest.strip_suffix(b"\"")) else {
        return false;
    };
    let mut at = 0;
    while at < inner.len() {
        let run = inner[at..].iter().position(|&b| b == b'\\' || b == b'"' || b < 0x20);
        let end = run.map_or(inner.len(), |n| at + n);
        out.extend_from_slice(&inner[at..end]);
        at = end;
        if at == inner.len() {
            break;
        }
        if inner[at] != b'\\' {
            return false;
        }
        let Some(&escape) = inner.get(at + 1) else { return false };
        at += 2;
        let byte = match escape {
            b'"' => b'"',
            b'\\' => b'\\',
            b'/' => b'/',
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => {
                let Some(mut code) = hex4(inner, at) else { return false };
                at += 4;
                if (0xd800..0xdc00).contains(&code) {
                    // A high surrogate: its low half must follow.
                    let low = (inner.get(at..at + 2) == Some(b"\\u")).then(|| hex4(inner, at + 2)).flatten();
                    let Some(low @ 0xdc00..0xe000) = low else { return false };
                    at += 6;
                    code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
                }
                let Some(character) = char::from_u32(code) else { return false };
                let mut utf8 = [0u8; 4];
                out.extend_from_slice(character.encode_utf8(&mut utf8).as_bytes());
                continue;
            }
            _ => return false,
        };
        out.push(byte);
    }
    true
}

/// The four hex digits at `at` as a number.
fn hex4(bytes: &[u8], at: usize) -> Option<u32> {
    let digits = std::str::from_utf8(bytes.get(at..at + 4)?).ok()?;
    u32::from_str_radix(digits, 16).ok().filter(|_| digits.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// A field `Option<&RawValue>` that keeps an explicit `null` as `Some("null")` (serde's
/// own `Option` would read it as absent): use with `#[serde(default, borrow,
/// deserialize_with = "crate::json::some_raw")]`.
pub(crate) fn some_raw<'de, D>(deserializer: D) -> Result<Option<&'de RawValue>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    <&RawValue as serde::Deserialize>::deserialize(deserializer).map(Some)
}

/// A JSON string that borrows from the input when it has no escapes. serde borrows a
/// `Cow<str>` field marked `#[serde(borrow)]` but not one inside an `Option`; this newtype
/// carries the mark into one.
#[derive(Debug, Clone, serde::Deserialize)]
pub(crate) struct Text<'a>(#[serde(borrow)] pub(crate) Cow<'a, str>);

/// Parses a decimal number made of ASCII digits only; `None` on overflow or no digits.
pub fn parse_u64(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0u64, |n, &d| {
        if d.is_ascii_digit() { n.checked_mul(10)?.checked_add(u64::from(d - b'0')) } else { None }
    })
}

fn skip_whitespace(bytes: &[u8], mut at: usize) -> usize {
    while at < bytes.len() && matches!(bytes[at], b' ' | b'\t' | b'\n' | b'\r') {
        at += 1;
    }
    at
}

fn string_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut at = start + 1;
    while at < bytes.len() {
        match bytes[at] {
            b'"' => return Some(at + 1),
            b'\\' => at += 2,
            _ => at += 1,
        }
    }
    None
}

fn container_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut at = start;
    while at < bytes.len() {
        match bytes[at] {
            b'"' => {
                at = string_end(bytes, at)?;
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(at + 1);
                }
            }
            _ => {}
        }
        at += 1;
    }
    None
}

/// Where the JSON value starting exactly at `start` ends (exclusive), or `None`.
fn value_end(bytes: &[u8], start: usize) -> Option<usize> {
    match *bytes.get(start)? {
        b'"' => string_end(bytes, start),
        b'{' | b'[' => container_end(bytes, start),
        _ => {
            let end = bytes[start..]
                .iter()
                .position(|b| matches!(b, b',' | b']' | b'}' | b':' | b' ' | b'\t' | b'\n' | b'\r'))
                .map_or(bytes.len(), |n| start + n);
            (end > start).then_some(end)
        }
    }
}

/// The JSON text is not an array whose element boundaries could be found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("not a JSON array")]
pub struct NotAnArray;

/// The raw text of each element of a JSON array, in order, without parsing them.
#[derive(Debug, Clone)]
pub struct ArrayElements<'a> {
    text: &'a str,
    at: usize,
    done: bool,
}

impl<'a> ArrayElements<'a> {
    pub fn new(text: &'a str) -> Result<Self, NotAnArray> {
        let at = skip_whitespace(text.as_bytes(), 0);
        if text.as_bytes().get(at) != Some(&b'[') {
            return Err(NotAnArray);
        }
        let inner = skip_whitespace(text.as_bytes(), at + 1);
        let done = text.as_bytes().get(inner) == Some(&b']');
        Ok(ArrayElements { text, at: inner, done })
    }

    /// The array's remaining elements as one text (`a, b`), without the brackets: what is
    /// left after taking the first elements with `next`. Empty when none are left.
    pub fn rest(&self) -> &'a str {
        if self.done {
            return "";
        }
        let end = self.text.rfind(']').filter(|&end| end >= self.at).unwrap_or(self.at);
        self.text[self.at..end].trim_end()
    }
}

impl<'a> Iterator for ArrayElements<'a> {
    /// An element's raw JSON text, or the place where the array stopped making sense.
    type Item = Result<&'a str, NotAnArray>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let bytes = self.text.as_bytes();
        let Some(end) = value_end(bytes, self.at) else {
            self.done = true;
            return Some(Err(NotAnArray));
        };
        let element = &self.text[self.at..end];
        let after = skip_whitespace(bytes, end);
        match bytes.get(after) {
            Some(b',') => self.at = skip_whitespace(bytes, after + 1),
            Some(b']') => self.done = true,
            _ => {
                self.done = true;
                return Some(Err(NotAnArray));
            }
        }
        Some(Ok(element))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unescape_into_decodes_what_write_str_wrote() {
        let mut out = Vec::new();
        for text in ["plain", "q\"b\\s/\n\r\t\u{1}", "é😀x", ""] {
            let mut raw = Vec::new();
            write_str(&mut raw, text);
            assert!(unescape_into(&raw, &mut out), "{text:?}");
            assert_eq!(out, text.as_bytes());
        }
        assert!(unescape_into(br#""\ud83d\ude00\u00e9\/""#, &mut out));
        assert_eq!(out, "😀é/".as_bytes());
        for bad in
            [&br#"x"#[..], br#""a"#, br#""\q""#, br#""\ud83d""#, br#""\u12""#, b"\"a\nb\"", br#""a"b""#]
        {
            assert!(!unescape_into(bad, &mut out), "{:?}", String::from_utf8_lossy(bad));
        }
    }

    fn elements(text: &str) -> Result<Vec<&str>, NotAnArray> {
        ArrayElements::new(text)?.collect()
    }

    #[test]
    fn strings_are_escaped_as_json_reads_them_back() {
        for text in ["plain", "quote \" and \\ slash", "lines\n\r\t", "\u{1}\u{1f} control", "é ✓"] {
            let mut out = Vec::new();
            write_str(&mut out, text);
            let back: String = serde_json::from_slice(&out).unwrap();
            assert_eq!(back, text);
        }
    }

    #[test]
    fn numbers_are_written_in_decimal() {
        for n in [0, 7, 10, 12345, u64::MAX] {
            let mut out = Vec::new();
            write_u64(&mut out, n);
            assert_eq!(out, n.to_string().as_bytes());
        }
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        assert_eq!(parse_u64(b""), None);
        assert_eq!(parse_u64(b"1a"), None);
    }

    #[test]
    fn string_values_borrow_unless_escaped() {
        assert!(matches!(string_value("\"echo\""), Some(Cow::Borrowed("echo"))));
        assert_eq!(string_value(r#""a\"b""#).as_deref(), Some("a\"b"));
        assert_eq!(string_value(r#""\u00e9""#).as_deref(), Some("é"));
        assert_eq!(string_value("echo"), None);
        assert_eq!(string_value(r#""bad\q""#), None);
    }

    #[test]
    fn array_elements_are_found_by_their_boundaries() {
        assert_eq!(
            elements(r#"["echo", {"a":[1,"]"]}, 2, true ,null]"#).unwrap(),
            vec![r#""echo""#, r#"{"a":[1,"]"]}"#, "2", "true", "null"]
        );
        assert_eq!(elements(" [ ] ").unwrap(), Vec::<&str>::new());
        assert_eq!(elements(r#"["a\"]"]"#).unwrap(), vec![r#""a\"]""#]);
        assert!(elements("{}").is_err());
        assert!(elements("[1 2]").is_err());
        assert!(elements("[1,").is_err());
        assert!(elements(r#"["open"#).is_err());
    }

    #[test]
    fn rest_is_what_follows_the_taken_elements() {
        let mut array = ArrayElements::new(r#"["echo", {"a":1}, 2]"#).unwrap();
        assert_eq!(array.next(), Some(Ok(r#""echo""#)));
        assert_eq!(array.rest(), r#"{"a":1}, 2"#);
        let mut single = ArrayElements::new(r#"["echo"]"#).unwrap();
        single.next();
        assert_eq!(single.rest(), "");
    }
}
