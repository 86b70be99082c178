//! A JSONL recording (what `wsbench record` writes) read into a [`Recording`]: an event a
//! line, each naming its connection (`conn`, from 0): `{"conn":0,"event":"open","url":…,
//! "headers":[[name,value],…],"subprotocol":…}` and `{"conn":0,"event":"message","dir":
//! "send"|"receive","time":seconds,"opcode":1|2,"data":text or base64}`; other events (a
//! close, an upstream failure) are kept by the recorder and skipped here.

use std::path::Path;

use serde::Deserialize;

use super::{Connection, Direction, MAX_CONNECTIONS, Recorded, Recording, RecordingError, check_message};

#[derive(Deserialize)]
struct Event {
    conn: usize,
    event: String,
    #[serde(default)]
    url: String,
    #[serde(default)]
    headers: Vec<(String, String)>,
    subprotocol: Option<String>,
    dir: Option<String>,
    #[serde(default)]
    time: f64,
    #[serde(default = "text_opcode")]
    opcode: u8,
    #[serde(default)]
    data: String,
}

fn text_opcode() -> u8 {
    1
}

/// The connections of JSONL `text` (read from `file`, named in errors with the line).
pub fn parse(file: &Path, text: &str) -> Result<Recording, RecordingError> {
    let mut recording = Recording::default();
    let mut total = 0;
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let place = format!("line {}", index + 1);
        let event: Event = serde_json::from_str(line)
            .map_err(|e| RecordingError::refused(file, &place, format!("not a recorded event: {e}")))?;
        if event.conn >= MAX_CONNECTIONS {
            let problem = format!("connection {}: at most {MAX_CONNECTIONS} connections", event.conn);
            return Err(RecordingError::refused(file, place, problem));
        }
        if recording.connections.len() <= event.conn {
            recording.connections.resize_with(event.conn + 1, Connection::default);
        }
        let connection = &mut recording.connections[event.conn];
        match (event.event.as_str(), event.dir.as_deref()) {
            ("open", _) => {
                connection.url = event.url;
                connection.headers = event.headers;
                connection.subprotocol = event.subprotocol;
            }
            ("message", Some(dir @ ("send" | "receive"))) => {
                total += 1;
                check_message(file, &place, total, event.data.len())?;
                let direction = if dir == "send" { Direction::Sent } else { Direction::Received };
                connection.messages.push(Recorded::new(event.time, direction, event.opcode, event.data));
            }
            ("message", _) => {
                return Err(RecordingError::refused(file, place, "a message's dir is send or receive"));
            }
            _ => {}
        }
    }
    recording.connections.retain(|c| !c.messages.is_empty() || !c.url.is_empty());
    Ok(recording)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_read_by_connection_and_bad_lines_named() {
        let text = "{\"conn\":0,\"event\":\"open\",\"url\":\"ws://h/\",\"headers\":[[\"Authorization\",\"Bearer x\"]]}\n\
                    {\"conn\":0,\"event\":\"message\",\"dir\":\"send\",\"time\":0.5,\"data\":\"hi\"}\n";
        let recording = parse(Path::new("s.jsonl"), text).unwrap();
        assert_eq!(recording.connections[0].messages.len(), 1);
        let refused = parse(Path::new("s.jsonl"), &format!("{text}{{\"conn\":0\n")).unwrap_err().to_string();
        assert!(refused.starts_with("recording s.jsonl: line 3: not a recorded event"), "{refused}");
    }
}
