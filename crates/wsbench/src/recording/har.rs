//! A browser's HAR export read into a [`Recording`]: the entries Chromium's DevTools marks
//! `_resourceType: "websocket"`, each with its request (URL, headers) and its
//! `_webSocketMessages` (`type` send|receive, `time` in seconds, `opcode` 1 text or 2 binary,
//! `data`: text, or base64 for binary). Other entries (pages, scripts, XHRs) are skipped.

use std::path::Path;

use serde::Deserialize;

use super::{Connection, Direction, MAX_CONNECTIONS, Recorded, Recording, RecordingError, check_message};

#[derive(Deserialize)]
struct Har {
    log: Log,
}

#[derive(Deserialize)]
struct Log {
    #[serde(default)]
    entries: Vec<Entry>,
}

#[derive(Deserialize)]
struct Entry {
    #[serde(rename = "_resourceType", default)]
    resource_type: String,
    request: Option<Request>,
    #[serde(rename = "_webSocketMessages", default)]
    messages: Vec<Message>,
}

#[derive(Deserialize)]
struct Request {
    #[serde(default)]
    url: String,
    #[serde(default)]
    headers: Vec<Header>,
}

#[derive(Deserialize)]
struct Header {
    name: String,
    value: String,
}

#[derive(Deserialize)]
struct Message {
    #[serde(rename = "type")]
    kind: String,
    time: f64,
    #[serde(default = "text_opcode")]
    opcode: u8,
    data: String,
}

fn text_opcode() -> u8 {
    1
}

/// The WebSocket entries of HAR `text` (read from `file`, named in errors).
pub fn parse(file: &Path, text: &str) -> Result<Recording, RecordingError> {
    let har: Har = serde_json::from_str(text).map_err(|e| {
        RecordingError::refused(file, format!("line {}", e.line()), format!("not a HAR file: {e}"))
    })?;
    let mut recording = Recording::default();
    let mut total = 0;
    for (index, entry) in har.log.entries.into_iter().enumerate() {
        if entry.resource_type != "websocket" {
            continue;
        }
        let place = format!("entry {}", index + 1);
        if recording.connections.len() == MAX_CONNECTIONS {
            let problem = format!("more than {MAX_CONNECTIONS} WebSocket connections: at most that many");
            return Err(RecordingError::refused(file, place, problem));
        }
        let request = entry.request.unwrap_or(Request { url: String::new(), headers: Vec::new() });
        let mut connection = Connection {
            url: request.url,
            headers: request.headers.into_iter().map(|h| (h.name, h.value)).collect(),
            ..Connection::default()
        };
        connection.subprotocol = connection
            .headers
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case("sec-websocket-protocol"))
            .map(|(_, value)| value.split(',').next().unwrap_or_default().trim().to_owned());
        for (n, message) in entry.messages.into_iter().enumerate() {
            total += 1;
            let at = format!("{place}, message {}", n + 1);
            check_message(file, &at, total, message.data.len())?;
            let direction = match message.kind.as_str() {
                "send" => Direction::Sent,
                "receive" => Direction::Received,
                other => {
                    return Err(RecordingError::refused(
                        file,
                        at,
                        format!("type `{other}`: send or receive"),
                    ));
                }
            };
            connection.messages.push(Recorded::new(message.time, direction, message.opcode, message.data));
        }
        recording.connections.push(connection);
    }
    Ok(recording)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn websocket_entries_are_read_and_others_skipped() {
        let text = r#"{"log":{"entries":[{"_resourceType":"document","request":{"url":"http://x/"}},
            {"_resourceType":"websocket","request":{"url":"ws://h/s","headers":[{"name":"Cookie","value":"a=1"}]},
             "_webSocketMessages":[{"type":"send","time":1.5,"opcode":1,"data":"hi"},
                                   {"type":"receive","time":1.75,"opcode":1,"data":"ho"}]}]}}"#;
        let recording = parse(Path::new("s.har"), text).unwrap();
        let [connection] = &recording.connections[..] else { panic!("{recording:?}") };
        assert_eq!(connection.url, "ws://h/s");
        assert_eq!(connection.headers, [("Cookie".to_owned(), "a=1".to_owned())]);
        assert_eq!(connection.messages[1].direction, Direction::Received);
        let nested = format!("{{\"log\":{{\"entries\":{}{}}}}}", "[".repeat(10_000), "]".repeat(10_000));
        let refused = parse(Path::new("s.har"), &nested).unwrap_err().to_string();
        assert!(refused.starts_with("recording s.har: line 1: not a HAR file: "), "{refused}");
    }
}
