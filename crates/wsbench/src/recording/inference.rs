//! What an import infers from recorded messages: the values the server sent that the
//! client sent back ([`find_captures`]), how a server message is recognised on replay
//! ([`shape`]), and which of its fields every recorded connection saw the same
//! ([`constant_fields`]).

use serde_json::Value;

use super::{Direction, Recorded};
use crate::scenario::escape_template;

/// Variables captured at most (the flow scenario's bound per connection).
const MAX_CAPTURES: usize = 16;
/// JSON fields that say what kind of message a message is, most telling first.
const SHAPE_FIELDS: [&str; 7] = ["type", "event", "op", "method", "action", "kind", "id"];
/// Fields checked at most per awaited message.
const MAX_CHECKS: usize = 8;

/// A value the server sent that the client sent back: captured from message `from` at
/// `pointer` as `name`.
pub struct Capture {
    pub name: String,
    pub value: String,
    pub from: usize,
    pub pointer: String,
}

/// A message's text: a text message's own, a binary one's bytes (recorded as base64)
/// decoded and read as text the way replay reads a binary reply.
pub fn text_of(message: &Recorded) -> String {
    use base64::Engine as _;
    if message.binary
        && let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(&message.data)
    {
        return String::from_utf8_lossy(&bytes).into_owned();
    }
    String::from_utf8_lossy(&message.data).into_owned()
}

/// How a server message is recognised: a regex, how it matches in words, and the JSON
/// field it matches by (if it does).
pub struct Shape {
    pub pattern: String,
    pub how: String,
    pub field: Option<&'static str>,
}

/// A regex matching `text` by its shape.
pub fn shape(text: &str, captures: &[Capture]) -> Shape {
    if let Ok(Value::Object(object)) = serde_json::from_str::<Value>(text) {
        for field in SHAPE_FIELDS {
            let value = match object.get(field) {
                Some(Value::String(value)) if !captures.iter().any(|c| c.value == *value) => {
                    Value::String(value.clone())
                }
                Some(number @ Value::Number(_)) => number.clone(),
                _ => continue,
            };
            let pattern =
                format!("\"{}\"\\s*:\\s*{}", regex::escape(field), regex::escape(&value.to_string()));
            return Shape { pattern, how: format!("\"{field}\" = {value}"), field: Some(field) };
        }
    }
    // Its opening, up to where a captured value (different each session) starts.
    let cut = captures.iter().filter_map(|c| text.find(&c.value)).min().unwrap_or(text.len());
    let opening: String = text[..cut].chars().take(24).collect();
    Shape {
        pattern: format!("^{}", regex::escape(&opening)),
        how: format!("its opening {opening:?}"),
        field: None,
    }
}

/// Values that came from the server and were sent back later, at most [`MAX_CAPTURES`].
pub fn find_captures(messages: &[Recorded], notes: &mut Vec<String>) -> Vec<Capture> {
    let mut captures: Vec<Capture> = Vec::new();
    let mut offered: Vec<(String, usize, String)> = Vec::new();
    let mut client_said = String::new();
    for (n, message) in messages.iter().enumerate() {
        let text = text_of(message);
        match message.direction {
            Direction::Received => {
                if let Ok(value) = serde_json::from_str::<Value>(&text) {
                    let mut leaves = Vec::new();
                    string_leaves(&value, String::new(), &mut leaves);
                    for (pointer, leaf) in leaves {
                        let telling =
                            leaf.len() >= 6 || (leaf.len() >= 4 && leaf.chars().any(|c| c.is_ascii_digit()));
                        if telling
                            && !client_said.contains(&leaf)
                            && !offered.iter().any(|(v, ..)| *v == leaf)
                        {
                            offered.push((leaf, n, pointer));
                        }
                    }
                }
            }
            Direction::Sent => {
                for (value, from, pointer) in &offered {
                    if text.contains(value.as_str()) && !captures.iter().any(|c| c.value == *value) {
                        if captures.len() == MAX_CAPTURES {
                            notes.push(format!(
                                "{value:?} sent back but not captured: at most {MAX_CAPTURES} captures"
                            ));
                            continue;
                        }
                        let name = var_name(pointer, &captures);
                        notes.push(format!(
                            "capture {name}: {pointer} of message {} ({value:?}), sent back from message {}",
                            from + 1,
                            n + 1
                        ));
                        captures.push(Capture {
                            name,
                            value: value.clone(),
                            from: *from,
                            pointer: pointer.clone(),
                        });
                    }
                }
                client_said.push_str(&text);
                client_said.push('\n');
            }
        }
    }
    captures
}

/// The string leaves of `value` with their JSON pointers.
fn string_leaves(value: &Value, pointer: String, leaves: &mut Vec<(String, String)>) {
    match value {
        Value::String(text) => leaves.push((pointer, text.clone())),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                string_leaves(item, format!("{pointer}/{i}"), leaves);
            }
        }
        Value::Object(fields) => {
            for (key, item) in fields {
                string_leaves(
                    item,
                    format!("{pointer}/{}", key.replace('~', "~0").replace('/', "~1")),
                    leaves,
                );
            }
        }
        _ => {}
    }
}

/// A variable name from the pointer's last key (`/data/sub` → `sub`), made unique.
fn var_name(pointer: &str, captures: &[Capture]) -> String {
    let last =
        pointer.rsplit('/').find(|key| key.chars().any(|c| c.is_ascii_alphabetic())).unwrap_or("value");
    let base: String = last.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '_').take(32).collect();
    let base = if base.is_empty() { "value".to_owned() } else { base };
    let mut name = base.clone();
    let mut n = 1;
    while captures.iter().any(|c| c.name == name) {
        n += 1;
        name = format!("{base}{n}");
    }
    name
}

/// The top-level fields of received message `n` that hold the same value (a string, number
/// or boolean) in every one of `connections`, as `check-json` pointers and values: none
/// from one connection alone, none that were captured or matched the message already.
pub fn constant_fields(
    connections: &[&[Recorded]],
    n: usize,
    captures: &[Capture],
    matched_by: &str,
) -> Vec<(String, Value)> {
    if connections.len() < 2 {
        return Vec::new();
    }
    let parsed: Vec<Option<Value>> =
        connections.iter().map(|messages| serde_json::from_str(&text_of(messages.get(n)?)).ok()).collect();
    let Some(Some(Value::Object(first))) = parsed.first() else { return Vec::new() };
    let mut checks = Vec::new();
    for (field, value) in first {
        let scalar = matches!(value, Value::String(_) | Value::Number(_) | Value::Bool(_));
        let captured = captures.iter().any(|c| value.as_str() == Some(c.value.as_str()));
        let same = parsed.iter().all(|other| other.as_ref().and_then(|o| o.get(field)) == Some(value));
        if scalar && same && !captured && field != matched_by && checks.len() < MAX_CHECKS {
            let value = match value {
                Value::String(text) => Value::String(escape_template(text)),
                other => other.clone(),
            };
            checks.push((format!("/{}", field.replace('~', "~0").replace('/', "~1")), value));
        }
    }
    checks
}
