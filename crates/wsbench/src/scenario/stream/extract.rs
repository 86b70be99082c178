//! Reading a stream delivery's id and timestamp out of the message the server sent: a JSON
//! pointer (RFC 6901, `/params/result/number`) into the message parsed as JSON, or a regex
//! whose one group is the value (for messages that are not JSON). An id is kept as a 64-bit
//! hash of its text (at most [`MAX_ID_BYTES`]), so what the run remembers of an id never
//! depends on how long the server's ids are.

use std::hash::{DefaultHasher, Hash, Hasher};

use serde::Serialize;
use serde_json::Value;

/// The longest `--message-id` or `--message-time` expression.
pub const MAX_EXPRESSION_BYTES: usize = 1_024;
/// The longest id a delivery may carry; a longer one is unreadable.
pub const MAX_ID_BYTES: usize = 256;
/// The compiled size a regex may take.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// Where a value sits in a message.
#[derive(Debug, Clone)]
pub enum Field {
    /// A JSON pointer into the message parsed as JSON.
    Pointer(String),
    /// A regex over the message's bytes; its one group is the value.
    Regex(regex::bytes::Regex),
}

/// What a delivery says of itself.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Read {
    /// The id's hash; `None`: no id could be read (or it was longer than [`MAX_ID_BYTES`]).
    pub id: Option<u64>,
    /// The server's timestamp, as the number it wrote; `None` when not asked for or not
    /// readable.
    pub time: Option<f64>,
}

impl Field {
    /// `given`: a JSON pointer (it starts with `/`) or a regex with exactly one group.
    pub fn parse(given: &str) -> Result<Field, String> {
        if given.len() > MAX_EXPRESSION_BYTES {
            return Err(format!("is {} bytes: at most {MAX_EXPRESSION_BYTES}", given.len()));
        }
        if given.starts_with('/') {
            return Ok(Field::Pointer(given.to_owned()));
        }
        if given.is_empty() {
            return Err("is empty: give a JSON pointer (/id) or a regex with one group".to_owned());
        }
        let regex = regex::bytes::RegexBuilder::new(given)
            .size_limit(REGEX_SIZE_LIMIT)
            .build()
            .map_err(|error| format!("`{given}` is neither a JSON pointer (/…) nor a regex: {error}"))?;
        match regex.captures_len() {
            2 => Ok(Field::Regex(regex)),
            groups => Err(format!(
                "`{given}`: a regex needs exactly one group, the value (it has {}); e.g. \"seq\":(\\d+)",
                groups - 1
            )),
        }
    }
}

/// Reads `id` and `time` out of `message` (parsed as JSON once when either is a pointer).
pub fn read(message: &[u8], id: &Field, time: Option<&Field>) -> Read {
    let needs_json = matches!(id, Field::Pointer(_)) || matches!(time, Some(Field::Pointer(_)));
    let json = needs_json.then(|| serde_json::from_slice::<Value>(message).ok()).flatten();
    let id = match id {
        Field::Pointer(pointer) => json.as_ref().and_then(|json| json.pointer(pointer)).and_then(value_id),
        Field::Regex(regex) => group(regex, message).and_then(bytes_id),
    };
    let time = time.and_then(|time| match time {
        Field::Pointer(pointer) => {
            json.as_ref().and_then(|json| json.pointer(pointer)).and_then(value_number)
        }
        Field::Regex(regex) => {
            group(regex, message).and_then(|text| text_number(std::str::from_utf8(text).ok()?))
        }
    });
    Read { id, time }
}

fn group<'m>(regex: &regex::bytes::Regex, message: &'m [u8]) -> Option<&'m [u8]> {
    regex.captures(message)?.get(1).map(|found| found.as_bytes())
}

/// A JSON value as an id: a string's text, a number's digits, anything else as JSON text.
fn value_id(value: &Value) -> Option<u64> {
    match value {
        Value::String(text) => bytes_id(text.as_bytes()),
        Value::Null => None,
        other => bytes_id(other.to_string().as_bytes()),
    }
}

fn bytes_id(text: &[u8]) -> Option<u64> {
    if text.is_empty() || text.len() > MAX_ID_BYTES {
        return None;
    }
    let mut hasher = DefaultHasher::new();
    text.hash(&mut hasher);
    Some(hasher.finish())
}

fn value_number(value: &Value) -> Option<f64> {
    match value {
        Value::Number(number) => number.as_f64(),
        Value::String(text) => text_number(text),
        _ => None,
    }
}

/// A decimal number, or a `0x` hex integer (as Ethereum nodes write timestamps).
fn text_number(text: &str) -> Option<f64> {
    let text = text.trim();
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok().map(|value| value as f64),
        None => text.parse::<f64>().ok().filter(|value| value.is_finite()),
    }
}

/// The unit of the server's timestamps, since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TimeUnit {
    #[serde(rename = "s")]
    Seconds,
    #[serde(rename = "ms")]
    Millis,
    #[serde(rename = "us")]
    Micros,
    #[serde(rename = "ns")]
    Nanos,
}

impl TimeUnit {
    pub fn parse(given: &str) -> Option<TimeUnit> {
        match given {
            "s" => Some(TimeUnit::Seconds),
            "ms" => Some(TimeUnit::Millis),
            "us" | "µs" => Some(TimeUnit::Micros),
            "ns" => Some(TimeUnit::Nanos),
            _ => None,
        }
    }

    /// `value` of this unit in µs.
    pub fn micros(self, value: f64) -> f64 {
        match self {
            TimeUnit::Seconds => value * 1e6,
            TimeUnit::Millis => value * 1e3,
            TimeUnit::Micros => value,
            TimeUnit::Nanos => value / 1e3,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pointer_reads_ids_and_times_of_any_json_type() {
        let head = br#"{"params":{"result":{"number":"0x1b4","timestamp":"0x6543a1f0"}}}"#;
        let id = Field::parse("/params/result/number").unwrap();
        let time = Field::parse("/params/result/timestamp").unwrap();
        let read_head = read(head, &id, Some(&time));
        assert_eq!(read_head.time, Some(0x6543a1f0 as f64));
        assert_eq!(read_head.id, read(br#"{"params":{"result":{"number":"0x1b4"}}}"#, &id, None).id);
        let numbered = Field::parse("/n").unwrap();
        assert_ne!(read(br#"{"n":1}"#, &numbered, None).id, read(br#"{"n":2}"#, &numbered, None).id);
        assert_eq!(read(br#"{"n":null}"#, &numbered, None).id, None);
        assert_eq!(read(b"not json", &numbered, None), Read { id: None, time: None });
        let long = format!(r#"{{"n":"{}"}}"#, "x".repeat(MAX_ID_BYTES + 1));
        assert_eq!(read(long.as_bytes(), &numbered, None).id, None, "ids are bounded");
    }

    #[test]
    fn a_regex_reads_its_one_group() {
        let id = Field::parse(r"seq=(\d+)").unwrap();
        let time = Field::parse(r"at=([0-9.]+)").unwrap();
        let read_tick = read(b"tick seq=42 at=1700000000.5", &id, Some(&time));
        assert_eq!(read_tick.time, Some(1_700_000_000.5));
        assert_eq!(read_tick.id, read(b"seq=42", &id, None).id);
        assert!(read(b"no number", &id, None).id.is_none());
        assert!(Field::parse("(a)(b)").unwrap_err().contains("exactly one group"));
        assert!(Field::parse("no group").unwrap_err().contains("(it has 0)"));
        assert!(Field::parse("(unclosed").unwrap_err().contains("neither a JSON pointer"));
        assert!(Field::parse(&"/a".repeat(600)).unwrap_err().contains("at most 1024"));
    }

    #[test]
    fn units_turn_into_micros() {
        assert_eq!(TimeUnit::parse("s").unwrap().micros(2.0), 2e6);
        assert_eq!(TimeUnit::parse("ms").unwrap().micros(2.0), 2e3);
        assert_eq!(TimeUnit::parse("ns").unwrap().micros(2_000.0), 2.0);
        assert_eq!(TimeUnit::parse("min"), None);
    }
}
