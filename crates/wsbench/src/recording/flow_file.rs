//! A recording turned into a flow scenario file a person can read and edit: each message
//! the client sent a `send` (text, or `send-binary` in base64; after a `sleep` of its
//! recorded pause, divided by the speed), each message the server sent an `expect-regex`
//! matched by its shape (a JSON field such as `type` or `event` and its value, else the
//! text's opening) with `check-json` of the fields every recorded connection saw the same.
//! A value the server sent that the client sent back later (an id, a token) becomes a
//! capture of the reply and `{var.NAME}` in the sends; identity headers (`Cookie`,
//! `Authorization`) become `{data.NAME}` placeholders filled from `--data`; recorded text
//! that reads like a template field is escaped (`{lbrace}`), so it is sent as recorded.
//! Connections whose messages have the same shapes are one flow; several such flows are a
//! `[[flow.mix]]`, each weighted by its connections. What was inferred is listed
//! ([`Imported`]).

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::inference::{Capture, constant_fields, find_captures, shape, text_of};
use super::{Connection, Direction, Recorded, Recording};
use crate::scenario::escape_template;

/// Steps an imported flow (a mix's flows together) may have (the flow scenario's bound).
pub const MAX_IMPORTED_STEPS: usize = 1_000;
/// How long each imported expectation waits.
const EXPECT_TIMEOUT: &str = "10s";
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
    flow: Flows,
}

#[derive(Serialize)]
struct Flows {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    steps: Vec<Step>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    mix: Vec<MixFlow>,
}

#[derive(Serialize)]
struct MixFlow {
    name: String,
    weight: u64,
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
    send_binary: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    expect_regex: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timeout: Option<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    check_json: BTreeMap<String, Value>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    capture: BTreeMap<String, String>,
}

/// Connections whose messages have the same shapes: their indexes, the first standing for
/// all.
struct Group {
    members: Vec<usize>,
    steps: Vec<Step>,
}

/// `recording` as a flow file: connection `only` (from 0) alone, or every connection
/// (grouped by shape into a mix); pauses divided by `speed`.
pub fn to_flow(
    recording: &Recording,
    only: Option<usize>,
    speed: f64,
    source: &str,
) -> Result<Imported, String> {
    let total = recording.connections.len();
    let chosen: Vec<usize> = match only {
        Some(index) if index < total => vec![index],
        Some(_) => {
            return Err(format!("the recording has {total} connections: --connection is 1 to {total}"));
        }
        None => (0..total).filter(|&i| !recording.connections[i].messages.is_empty()).collect(),
    };
    let mut notes = Vec::new();
    let groups = groups(recording, &chosen, speed, &mut notes)?;
    let first = &recording.connections[groups[0].members[0]];
    let header = placeholders(first, &mut notes);
    let flows = match groups.len() {
        1 => Flows { steps: groups.into_iter().next().map(|g| g.steps).unwrap_or_default(), mix: Vec::new() },
        _ => {
            let mix = groups
                .into_iter()
                .map(|group| MixFlow {
                    name: format!("c{}", group.members[0] + 1),
                    weight: group.members.len() as u64,
                    steps: group.steps,
                })
                .collect();
            Flows { steps: Vec::new(), mix }
        }
    };
    let file = FlowFile { scenario: "flow", subprotocol: first.subprotocol.clone(), header, flow: flows };
    let body = toml::to_string(&file).map_err(|e| format!("cannot write the flow: {e}"))?;
    let mut toml = format!("# Imported by `wsbench import {source}`; what was inferred:\n");
    for note in &notes {
        toml += &format!("#   {note}\n");
    }
    Ok(Imported { toml: toml + &body, notes })
}

/// The `chosen` connections grouped by the shapes of their messages, most connections
/// first, each group's steps made (the first connection's, checked against all of them);
/// groups past the step bound are left out and said so.
fn groups(
    recording: &Recording,
    chosen: &[usize],
    speed: f64,
    notes: &mut Vec<String>,
) -> Result<Vec<Group>, String> {
    let mut keyed: Vec<(Vec<String>, Vec<usize>)> = Vec::new();
    for &index in chosen {
        let connection = &recording.connections[index];
        let captures = find_captures(&connection.messages, &mut Vec::new());
        let key = signature(connection, &captures);
        match keyed.iter_mut().find(|(known, _)| *known == key) {
            Some((_, members)) => members.push(index),
            None => keyed.push((key, vec![index])),
        }
    }
    keyed.sort_by_key(|(_, members)| std::cmp::Reverse(members.len()));
    let (mut groups, mut steps_so_far, mut left_out) = (Vec::new(), 0, 0);
    for (_, members) in keyed {
        let first = &recording.connections[members[0]];
        let mut group_notes = vec![format!(
            "connection {} of {}: {} ({} messages){}",
            members[0] + 1,
            recording.connections.len(),
            if first.url.is_empty() { "no URL recorded" } else { &first.url },
            first.messages.len(),
            match members.len() {
                1 => String::new(),
                n => format!(", standing for {n} connections of the same shape"),
            }
        )];
        let messages: Vec<&[Recorded]> =
            members.iter().map(|&i| recording.connections[i].messages.as_slice()).collect();
        let captures = find_captures(&first.messages, &mut group_notes);
        let steps = steps(first, &messages, &captures, speed, &mut group_notes)?;
        if !groups.is_empty() && steps_so_far + steps.len() > MAX_IMPORTED_STEPS {
            left_out += members.len();
            continue;
        }
        steps_so_far += steps.len();
        notes.extend(group_notes);
        groups.push(Group { members, steps });
    }
    if left_out > 0 {
        notes.push(format!(
            "{left_out} connections of other shapes left out: the flows together may have \
             {MAX_IMPORTED_STEPS} steps; import one with --connection K"
        ));
    }
    if groups.is_empty() {
        return Err("no connection with WebSocket messages in it".to_owned());
    }
    Ok(groups)
}

/// What a connection's messages look like in order: its group's key.
fn signature(connection: &Connection, captures: &[Capture]) -> Vec<String> {
    let messages = connection.messages.iter();
    messages
        .map(|message| match message.direction {
            Direction::Sent => format!("send {}", message.binary),
            Direction::Received => shape(&text_of(message), captures).pattern,
        })
        .collect()
}

/// The steps of `connection`'s messages; `group`: the messages of every connection it
/// stands for (itself first), whose common fields become checks.
fn steps(
    connection: &Connection,
    group: &[&[Recorded]],
    captures: &[Capture],
    speed: f64,
    notes: &mut Vec<String>,
) -> Result<Vec<Step>, String> {
    let mut steps = Vec::new();
    let mut last = connection.messages.first().map_or(0.0, |m| m.time);
    for (n, message) in connection.messages.iter().enumerate() {
        match message.direction {
            Direction::Sent => {
                let pause = ((message.time - last).max(0.0) / speed * 1000.0).round() as u64;
                if pause >= 1 {
                    steps.push(Step { sleep: Some(format!("{pause}ms")), ..Step::default() });
                }
                last = message.time;
                steps.push(send_step(message, n, captures));
            }
            Direction::Received => {
                // The next pause counts from here: the flow has waited for this reply.
                last = message.time;
                let shape = shape(&text_of(message), captures);
                let checks = constant_fields(group, n, captures, shape.field.unwrap_or(""));
                let checked = match checks.len() {
                    0 => String::new(),
                    1 => format!(", 1 field checked (the same in all {} connections)", group.len()),
                    k => format!(", {k} fields checked (the same in all {} connections)", group.len()),
                };
                notes.push(format!(
                    "message {}: awaited as recv{}, matched by {}{checked}",
                    n + 1,
                    n + 1,
                    shape.how
                ));
                let capture =
                    captures.iter().filter(|c| c.from == n).map(|c| (c.name.clone(), c.pointer.clone()));
                steps.push(Step {
                    name: Some(format!("recv{}", n + 1)),
                    expect_regex: Some(shape.pattern),
                    timeout: Some(EXPECT_TIMEOUT.to_owned()),
                    check_json: checks.into_iter().collect(),
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

/// Sent message `n`: its recorded bytes (base64) when binary, else its text escaped as a
/// template with the values captured before it as `{var.NAME}`.
fn send_step(message: &Recorded, n: usize, captures: &[Capture]) -> Step {
    let name = Some(format!("send{}", n + 1));
    if message.binary {
        let base64 = String::from_utf8_lossy(&message.data).into_owned();
        return Step { name, send_binary: Some(base64), ..Step::default() };
    }
    let mut send = escape_template(&text_of(message));
    for capture in captures.iter().filter(|c| c.from < n) {
        send = send.replace(&escape_template(&capture.value), &format!("{{var.{}}}", capture.name));
    }
    Step { name, send: Some(send), ..Step::default() }
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
        let imported =
            to_flow(&Recording { connections: vec![connection] }, Some(0), 2.0, "s.jsonl").unwrap();
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

    fn connection(messages: Vec<Recorded>) -> Connection {
        Connection { url: "ws://h/".into(), headers: Vec::new(), subprotocol: None, messages }
    }

    #[test]
    fn recorded_text_that_reads_like_a_template_is_sent_as_recorded() {
        let said = r#"{"text":"{seq} {conn} {data.user} {var.sub} {lbrace} {now_us}"}"#;
        let recording =
            Recording { connections: vec![connection(vec![message(1.0, Direction::Sent, said)])] };
        let imported = to_flow(&recording, None, 1.0, "s.jsonl").unwrap();
        let file: toml::Value = toml::from_str(&imported.toml).unwrap();
        let send = file["flow"]["steps"][0]["send"].as_str().unwrap();
        assert_eq!(send, escape_template(said));
        assert!(send.contains("{lbrace}seq} {lbrace}conn} {lbrace}data.user}"), "{send}");
    }
}
