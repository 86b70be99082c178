//! wsbench's marker in a delivered message, found wherever it sits. A publish is the JSON
//! object `{"id":"P-S","ts":DUE,"sent":SENT,"measured":BOOL,…}` (publisher, sequence, due
//! and send times in µs); a server may deliver it as it came, inside its own envelope
//! (`{topic, payload}`, a GraphQL `data`, an array of event arguments) or alone, and may
//! write it again with other spacing or key order. So the marker is the first JSON object,
//! at any depth, that holds all four keys with values of their kind; an application's own
//! `id` beside it (in the envelope) is another object's and does not confuse it.
//!
//! wsbench's own layout is looked for first, as a search for its first key (a publish
//! forwarded as it came costs no more than that); anything else gets one pass over the
//! message, no allocation: the objects open at each depth keep what they
//! have of the marker in a fixed array, so objects nested deeper than [`MAX_DEPTH`] are
//! not looked into. The pass stops as soon as an object has all four, so what follows them
//! (wsbench's own `pad`, up to `--payload-bytes`) is never read. Strings are skipped by their quotes (a marker inside a JSON string, an
//! object sent as text, is not found). Whatever the input, it never panics: what is not
//! JSON just yields no marker.

/// How deep in a message's objects and arrays a marker is looked for.
pub const MAX_DEPTH: usize = 16;

/// The fields wsbench put in a publish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Marker {
    pub publisher: u64,
    pub seq: u64,
    pub due_us: u64,
    pub sent_us: u64,
    pub measured: bool,
}

impl Marker {
    /// The first complete marker in `message`, if any: where it sits as wsbench wrote it
    /// (its four fields together, in order, without spaces: a server that forwards the
    /// publish, or writes it again compactly as JSON.stringify does), found by a search for
    /// its first key; else by the scan.
    pub fn find(message: &[u8]) -> Option<Marker> {
        Marker::as_written(message)
            .or_else(|| Scanner { message, at: 0, frames: [Frame::EMPTY; MAX_DEPTH], depth: 0 }.run())
    }

    /// `"id":"P-S","ts":DUE,"sent":SENT,"measured":BOOL`, after the first `"id":"`. No
    /// object's braces can fall between the four, so they are one object's.
    fn as_written(message: &[u8]) -> Option<Marker> {
        const ID: &[u8] = br#""id":""#;
        let at = message.windows(ID.len()).position(|window| window == ID)?;
        let rest = &message[at + ID.len()..];
        let (publisher, rest) = leading_whole(rest)?;
        let (seq, rest) = leading_whole(rest.strip_prefix(b"-")?)?;
        let (due_us, rest) = leading_whole(rest.strip_prefix(br#"","ts":"#)?)?;
        let (sent_us, rest) = leading_whole(rest.strip_prefix(br#","sent":"#)?)?;
        let rest = rest.strip_prefix(br#","measured":"#)?;
        let measured = match () {
            _ if rest.starts_with(b"true") => true,
            _ if rest.starts_with(b"false") => false,
            _ => return None,
        };
        Some(Marker { publisher, seq, due_us, sent_us, measured })
    }
}

/// The decimal number at the start of `text`, and what follows it.
fn leading_whole(text: &[u8]) -> Option<(u64, &[u8])> {
    let digits = text.iter().take_while(|b| b.is_ascii_digit()).count();
    Some((whole(&text[..digits])?, &text[digits..]))
}

/// One of the marker's keys, expected as the next value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Id,
    Due,
    Sent,
    Measured,
    Other,
}

impl Key {
    fn of(name: &[u8]) -> Key {
        match name {
            b"id" => Key::Id,
            b"ts" => Key::Due,
            b"sent" => Key::Sent,
            b"measured" => Key::Measured,
            _ => Key::Other,
        }
    }
}

/// An open object or array, and what an object has of the marker so far.
#[derive(Debug, Clone, Copy)]
struct Frame {
    object: bool,
    /// Inside an object: the next string is a key.
    expects_key: bool,
    /// The key whose value comes next.
    key: Key,
    id: Option<(u64, u64)>,
    due_us: Option<u64>,
    sent_us: Option<u64>,
    measured: Option<bool>,
}

impl Frame {
    const EMPTY: Frame = Frame {
        object: false,
        expects_key: false,
        key: Key::Other,
        id: None,
        due_us: None,
        sent_us: None,
        measured: None,
    };

    fn marker(&self) -> Option<Marker> {
        let (publisher, seq) = self.id?;
        Some(Marker {
            publisher,
            seq,
            due_us: self.due_us?,
            sent_us: self.sent_us?,
            measured: self.measured?,
        })
    }
}

struct Scanner<'m> {
    message: &'m [u8],
    at: usize,
    frames: [Frame; MAX_DEPTH],
    /// Containers open; past [`MAX_DEPTH`] only counted.
    depth: usize,
}

impl Scanner<'_> {
    fn run(mut self) -> Option<Marker> {
        while let Some(&byte) = self.message.get(self.at) {
            self.at += 1;
            match byte {
                b'{' | b'[' => self.open(byte == b'{'),
                b'}' | b']' => self.depth = self.depth.saturating_sub(1),
                b',' => {
                    if let Some(frame) = self.top() {
                        frame.expects_key = frame.object;
                        frame.key = Key::Other;
                    }
                }
                b'"' => self.string(),
                b'-' | b'0'..=b'9' => self.number(byte),
                b't' | b'f' => self.literal(byte == b't'),
                _ => continue,
            }
            if let Some(marker) = self.top().filter(|frame| frame.object).and_then(|frame| frame.marker()) {
                return Some(marker);
            }
        }
        None
    }

    fn top(&mut self) -> Option<&mut Frame> {
        match self.depth {
            0 => None,
            depth => self.frames.get_mut(depth - 1),
        }
    }

    fn open(&mut self, object: bool) {
        self.value_seen();
        if let Some(frame) = self.frames.get_mut(self.depth) {
            *frame = Frame { object, expects_key: object, ..Frame::EMPTY };
        }
        self.depth += 1;
    }

    /// A value other than one of the marker's began: the key before it is spent.
    fn value_seen(&mut self) {
        if let Some(frame) = self.top() {
            frame.key = Key::Other;
        }
    }

    /// A string (its opening quote read): a key, the marker's id, or skipped.
    fn string(&mut self) {
        let start = self.at;
        let mut end = start;
        while let Some(&byte) = self.message.get(end) {
            match byte {
                b'"' => break,
                b'\\' => end += 2,
                _ => end += 1,
            }
        }
        self.at = end.saturating_add(1);
        let text = self.message.get(start..end).unwrap_or_default();
        let Some(frame) = self.top() else { return };
        if frame.object && frame.expects_key {
            frame.expects_key = false;
            frame.key = Key::of(text);
            return;
        }
        if frame.key == Key::Id {
            frame.id = publisher_and_seq(text);
        }
        frame.key = Key::Other;
    }

    /// A number (its first byte read): a time of the marker's, or skipped.
    fn number(&mut self, first: u8) {
        let start = self.at - 1;
        let end = start
            + self.message[start..]
                .iter()
                .position(|b| !matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
                .unwrap_or(self.message.len() - start);
        self.at = end;
        let value = (first != b'-').then(|| whole(&self.message[start..end])).flatten();
        let Some(frame) = self.top() else { return };
        match frame.key {
            Key::Due => frame.due_us = value,
            Key::Sent => frame.sent_us = value,
            _ => {}
        }
        frame.key = Key::Other;
    }

    /// `true` or `false` (its first byte read).
    fn literal(&mut self, first_true: bool) {
        let rest: &[u8] = if first_true { b"rue" } else { b"alse" };
        let matches = self.message[self.at..].starts_with(rest);
        if matches {
            self.at += rest.len();
        }
        let Some(frame) = self.top() else { return };
        if frame.key == Key::Measured && matches {
            frame.measured = Some(first_true);
        }
        frame.key = Key::Other;
    }
}

/// `P-S` of a marker's id.
fn publisher_and_seq(text: &[u8]) -> Option<(u64, u64)> {
    let dash = text.iter().position(|&b| b == b'-')?;
    Some((whole(&text[..dash])?, whole(&text[dash + 1..])?))
}

/// Decimal digits alone, as a number.
fn whole(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MARKER: Marker = Marker { publisher: 12, seq: 4567, due_us: 1000, sent_us: 1040, measured: true };

    #[test]
    fn the_marker_as_wsbench_writes_it_is_found() {
        let message = br#"{"id":"12-4567","ts":1000,"sent":1040,"measured":true,"pad":"xx"}"#;
        assert_eq!(Marker::find(message), Some(MARKER));
        let warmup = br#"{"id":"12-4567","ts":1000,"sent":1,"measured":false}"#;
        assert!(!Marker::find(warmup).unwrap().measured);
        // Found before the padding, which is then not read (even when it is cut off).
        let cut = br#"{"id":"12-4567","ts":1000,"sent":1040,"measured":true,"pad":"xxxx"#;
        assert_eq!(Marker::find(cut), Some(MARKER));
    }

    #[test]
    fn the_marker_is_found_alone_wrapped_or_among_arguments() {
        for message in [
            r#"{"pub":"t3","id":"12-4567","ts":1000,"sent":1040,"measured":true}"#,
            r#"{"topic":"t3","payload":{"id":"12-4567","ts":1000,"sent":1040,"measured":true}}"#,
            r#""room-3",{"id":"12-4567","ts":1000,"sent":1040,"measured":true}"#,
            r#"["news",{"id":"app-7","data":[{"id":"12-4567","ts":1000,"sent":1040,"measured":true}]}]"#,
            r#"{"data":{"onMessage":{"ts":1000,"measured":true,"sent":1040,"id":"12-4567"}},"id":"x"}"#,
            "{ \"id\" : \"12-4567\" ,\n \"ts\" : 1000 , \"sent\" : 1040 , \"measured\" : true }",
            r#"{"id":"12-4567","nested":{"ts":5},"ts":1000,"sent":1040,"measured":true}"#,
        ] {
            assert_eq!(Marker::find(message.as_bytes()), Some(MARKER), "{message}");
        }
    }

    #[test]
    fn no_marker_without_all_its_fields_in_one_object() {
        for message in [
            "hello",
            "",
            r#"{"id":"12-4567","ts":1000,"sent":1040}"#,
            r#"{"id":"x-1","ts":1,"sent":1,"measured":true}"#,
            r#"{"id":"12-4567","ts":1000,"payload":{"sent":1040,"measured":true}}"#,
            r#"{"id":"12-4567","ts":-1000,"sent":1040,"measured":true}"#,
            r#"{"id":"12-4567","ts":"1000","sent":1040,"measured":true}"#,
            r#""{\"id\":\"12-4567\",\"ts\":1000,\"sent\":1040,\"measured\":true}""#,
            r#"{"note":"\"id\":\"12-4567\",","ts":1000,"sent":1040,"measured":true}"#,
            r#"{"id":"12-4567","ts":1000,"sent":1040,"measured":tru}"#,
        ] {
            assert_eq!(Marker::find(message.as_bytes()), None, "{message}");
        }
    }

    #[test]
    fn deep_nesting_and_broken_json_neither_panic_nor_find_a_marker_too_deep() {
        // Written again with spaces, the marker is scanned for, down to MAX_DEPTH.
        let inner = r#"{"id": "1-2", "ts": 3, "sent": 4, "measured": true}"#;
        let deep = format!("{}{inner}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert_eq!(Marker::find(deep.as_bytes()), None);
        // As wsbench writes it, it is found at any depth.
        let compact = deep.replace(": ", ":").replace(", ", ",");
        assert_eq!(Marker::find(compact.as_bytes()).map(|m| m.seq), Some(2));
        let shallow = format!("{}{inner}{}", "[".repeat(MAX_DEPTH - 1), "]".repeat(MAX_DEPTH - 1));
        assert_eq!(Marker::find(shallow.as_bytes()).map(|m| m.seq), Some(2));
        for broken in ["}}}]]{", "\"", "\"\\", "{\"id\":\"1-", "-", "{\"ts\":99999999999999999999999"] {
            assert_eq!(Marker::find(broken.as_bytes()), None, "{broken}");
        }
        // Every cut of a wrapped marker, and every byte changed, reads without a panic.
        let wrapped = br#"[{"a":"\"}",b:[1e5,-2]},{"id":"1-2","ts":3,"sent":4,"measured":false}]"#;
        for end in 0..wrapped.len() {
            Marker::find(&wrapped[..end]);
            let mut changed = wrapped.to_vec();
            for byte in [b'"', b'\\', b'{', b'}', b'[', b']', b'-', b't', 0xff] {
                changed[end] = byte;
                Marker::find(&changed);
            }
        }
        assert_eq!(Marker::find(wrapped).map(|marker| marker.measured), Some(false));
    }
}
