//! A recorded connection turned into a flow scenario file a person can read and edit: each
//! message the client sent a `send` (after a `sleep` of its recorded pause, divided by the
//! speed), each message the server sent an `expect-regex` matched by its shape (a JSON
//! field such as `type` or `event` and its value, else the text's opening). A value the
//! server sent that the client sent back later (an id, a token) becomes a capture of the
//! reply and `{var.NAME}` in the sends; identity headers (`Cookie`, `Authorization`) become
//! `{data.NAME}` placeholders filled from `--data`. What was inferred is listed ([`Imported`]).

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::{Connection, Direction, Recorded, Recording};

/// Steps an imported flow may have (the flow scenario's own bound).
pub const MAX_IMPORTED_STEPS: usize = 1_000;
/// Variables captured at most (the flow scenario's bound per connection).
const MAX_CAPTURES: usize = 16;
/// How long each imported expectation waits.
const EXPECT_TIMEOUT: &str = "10s";
/// JSON fields that say what kind of message a message is, most telling first.
const SHAPE_FIELDS: [&str; 7] = ["type", "event", "op", "method", "action", "kind", "id"];
/// Handshake headers that carry who the client is.
const IDENTITY_HEADERS: [&str; 2] = ["authorization", "cookie"];

/// A flow scenario file's text and what was inferred to write it.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    pub toml: String,
    pub notes: Vec<String>,
}

#[derive(Serialize)]
struct FlowFile {
    scenario: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    subprotocol: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    header: Vec<String>,
    flow: Steps,
}

#[derive(Serialize)]
struct Steps {
    steps: Vec<Step>,
}

#[derive(Serialize, Default)]
#[serde(rename_all = "kebab-case")]
struct Step {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sleep: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    send: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    expect_regex: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timeout: Option<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    capture: BTreeMap<String, String>,
}

/// A value the server sent that the client sent back: captured from message `from` at
/// `pointer` as `name`.
struct Capture {
    name: String,
    value: String,
    from: usize,
    pointer: String,
}

/// Connection `index` (from 0) of `recording` as a flow file; pauses divided by `speed`.
pub fn to_flow(recording: &Recording, index: usize, speed: f64, source: &str) -> Result<Imported, String> {
    let total = recording.connections.len();
    let connection = recording
        .connections
        .get(index)
        .ok_or_else(|| format!("the recording has {total} connections: --connection is 1 to {total}"))?;
    let mut notes = vec![format!(
        "connection {} of {total}: {} ({} messages)",
        index + 1,
        if connection.url.is_empty() { "no URL recorded" } else { &connection.url },
        connection.messages.len()
    )];
    let captures = find_captures(&connection.messages, &mut notes);
    let steps = steps(connection, &captures, speed, &mut notes)?;
    let header = placeholders(connection, &mut notes);
    let file = FlowFile {
        scenario: "flow",
        subprotocol: connection.subprotocol.clone(),
        header,
        flow: Steps { steps },
    };
    let body = toml::to_string(&file).map_err(|e| format!("cannot write the flow: {e}"))?;
    let mut toml = format!("# Imported by `wsbench import {source}`; what was inferred:\n");
    for note in &notes {
        toml += &format!("#   {note}\n");
    }
    Ok(Imported { toml: toml + &body, notes })
}

/// The steps of `connection`'s messages.
fn steps(
    connection: &Connection,
    captures: &[Capture],
    speed: f64,
    notes: &mut Vec<String>,
) -> Result<Vec<Step>, String> {
    let mut steps = Vec::new();
    let mut last = connection.messages.first().map_or(0.0, |m| m.time);
    for (n, message) in connection.messages.iter().enumerate() {
        let text = String::from_utf8_lossy(&message.data);
        match (message.direction, message.binary) {
            (Direction::Sent, true) => {
                notes.push(format!("message {}: a binary send is not replayed (flows send text)", n + 1))
            }
            (Direction::Sent, false) => {
                let pause = ((message.time - last).max(0.0) / speed * 1000.0).round() as u64;
                if pause >= 1 {
                    steps.push(Step { sleep: Some(format!("{pause}ms")), ..Step::default() });
                }
                last = message.time;
                let mut send = text.into_owned();
                for capture in captures.iter().filter(|c| c.from < n) {
                    send = send.replace(&capture.value, &format!("{{var.{}}}", capture.name));
                }
                steps.push(Step {
                    name: Some(format!("send{}", n + 1)),
                    send: Some(send),
                    ..Step::default()
                });
            }
            (Direction::Received, _) => {
                // The next pause counts from here: the flow has waited for this reply.
                last = message.time;
                let (pattern, how) = shape(&text, captures);
                notes.push(format!("message {}: awaited as recv{}, matched by {how}", n + 1, n + 1));
                let capture =
                    captures.iter().filter(|c| c.from == n).map(|c| (c.name.clone(), c.pointer.clone()));
                steps.push(Step {
                    name: Some(format!("recv{}", n + 1)),
                    expect_regex: Some(pattern),
                    timeout: Some(EXPECT_TIMEOUT.to_owned()),
                    capture: capture.collect(),
                    ..Step::default()
                });
            }
        }
        if steps.len() > MAX_IMPORTED_STEPS {
            return Err(format!(
                "message {}: more than {MAX_IMPORTED_STEPS} steps (a flow's bound): import a shorter connection",
                n + 1
            ));
        }
    }
    Ok(steps)
}

/// A regex matching `text` by its shape, and how it does, in words.
fn shape(text: &str, captures: &[Capture]) -> (String, String) {
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
            return (pattern, format!("\"{field}\" = {value}"));
        }
    }
    // Its opening, up to where a captured value (different each session) starts.
    let cut = captures.iter().filter_map(|c| text.find(&c.value)).min().unwrap_or(text.len());
    let opening: String = text[..cut].chars().take(24).collect();
    (format!("^{}", regex::escape(&opening)), format!("its opening {opening:?}"))
}

/// Values that came from the server and were sent back later, at most [`MAX_CAPTURES`].
fn find_captures(messages: &[Recorded], notes: &mut Vec<String>) -> Vec<Capture> {
    let mut captures: Vec<Capture> = Vec::new();
    let mut offered: Vec<(String, usize, String)> = Vec::new();
    let mut client_said = String::new();
    for (n, message) in messages.iter().enumerate() {
        let text = String::from_utf8_lossy(&message.data);
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

/// The handshake's identity headers as `{data.NAME}` placeholders (their recorded values
/// are not written).
fn placeholders(connection: &Connection, notes: &mut Vec<String>) -> Vec<String> {
    let mut headers = Vec::new();
    for (name, _) in &connection.headers {
        if IDENTITY_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
            let column = name.to_ascii_lowercase();
            notes.push(format!(
                "placeholder {{data.{column}}} for header {name}: give --data users.csv with a column {column}"
            ));
            headers.push(format!("{name}: {{data.{column}}}"));
        }
    }
    headers
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(time: f64, direction: Direction, data: &str) -> Recorded {
        Recorded { time, direction, binary: false, data: data.as_bytes().to_vec() }
    }

    #[test]
    fn a_value_sent_back_becomes_a_capture_and_pauses_a_sleep() {
        let connection = Connection {
            url: "ws://h/".into(),
            headers: vec![("Authorization".into(), "Bearer secret".into())],
            subprotocol: None,
            messages: vec![
                message(10.0, Direction::Sent, r#"{"type":"subscribe","topic":"news"}"#),
                message(
                    10.1,
                    Direction::Received,
                    r#"{"type":"subscribed","topic":"news","sub":"5f0e9c3a"}"#,
                ),
                message(10.5, Direction::Sent, r#"{"type":"publish","sub":"5f0e9c3a","n":1}"#),
            ],
        };
        let imported = to_flow(&Recording { connections: vec![connection] }, 0, 2.0, "s.jsonl").unwrap();
        let toml = &imported.toml;
        assert!(toml.contains(r#"send = '{"type":"publish","sub":"{var.sub}","n":1}'"#), "{toml}");
        assert!(
            toml.contains("capture = { sub = \"/sub\" }") || toml.contains("[flow.steps.capture]"),
            "{toml}"
        );
        assert!(toml.contains("sleep = \"200ms\""), "the pause since the reply, halved: {toml}");
        assert!(toml.contains("Authorization: {data.authorization}") && !toml.contains("secret"), "{toml}");
        assert!(!toml.contains("topic\":\"{var"), "a value the client said first is no capture: {toml}");
        assert!(
            imported.notes.iter().any(|n| n.starts_with("capture sub: /sub of message 2")),
            "{:?}",
            imported.notes
        );
    }
}
