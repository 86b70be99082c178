//! One direction of a proxied connection read as WebSocket messages, for the recording: a
//! copy of the bytes forwarded is fed to the proto crate's decoder, and each whole data
//! message becomes a `message` event (text as it is, binary as base64), each close a `close`
//! event. The bytes forwarded are never changed. Memory is bounded: a message is kept only
//! up to the recording's message bound (a longer one is forwarded and recorded as
//! `skipped`), and the decoder keeps no buffer, so what waits here is at most a frame header
//! or a control frame. A stream that breaks the framing rules is recorded as an `error` and
//! no longer read (forwarding goes on: the endpoints judge it).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Value, json};
use wsbench_proto::{Decoder, OpCode, Role, parse_close_payload};

/// Which way the bytes go, as recordings name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    /// Client to server.
    Send,
    /// Server to client.
    Receive,
}

impl Way {
    fn name(self) -> &'static str {
        match self {
            Way::Send => "send",
            Way::Receive => "receive",
        }
    }
}

/// Reads one direction's frames.
pub struct Inspector {
    way: Way,
    decoder: Decoder,
    /// Bytes not yet decoded: a partial header or control frame.
    pending: Vec<u8>,
    message: Vec<u8>,
    opcode: OpCode,
    /// The message's length so far; past `max_message` it is skipped.
    length: u64,
    max_message: usize,
    broken: bool,
}

impl Inspector {
    /// `way` decides which frames are expected masked (the client's).
    pub fn new(way: Way, max_message: usize) -> Inspector {
        let role = if way == Way::Send { Role::Server } else { Role::Client };
        Inspector {
            way,
            decoder: Decoder::new(role, u64::MAX >> 1),
            pending: Vec::new(),
            message: Vec::new(),
            opcode: OpCode::Text,
            length: 0,
            max_message,
            broken: false,
        }
    }

    /// Reads `bytes` (the next ones forwarded this way) and returns the events they end.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<(Value, bool)> {
        let mut events = Vec::new();
        if self.broken {
            return events;
        }
        self.pending.extend_from_slice(bytes);
        let mut at = 0;
        loop {
            match self.decoder.decode(&mut self.pending[at..]) {
                Ok(None) => break,
                Ok(Some(chunk)) => {
                    let start = at;
                    at += chunk.consumed;
                    let payload = start + chunk.payload.start..start + chunk.payload.end;
                    if let Some(event) = self.chunk(chunk.opcode, payload, chunk.first, chunk.last) {
                        events.push(event);
                    }
                }
                Err(error) => {
                    self.broken = true;
                    let why = format!("the {} stream broke the framing rules: {error}", self.way.name());
                    events.push((json!({"event": "error", "dir": self.way.name(), "error": why}), false));
                    self.pending = Vec::new();
                    return events;
                }
            }
        }
        self.pending.drain(..at);
        events
    }

    /// One decoded piece: kept toward its message, or a control frame's event.
    fn chunk(
        &mut self,
        opcode: OpCode,
        payload: std::ops::Range<usize>,
        first: bool,
        last: bool,
    ) -> Option<(Value, bool)> {
        let bytes = &self.pending[payload];
        if opcode == OpCode::Close {
            let (code, reason) = match parse_close_payload(bytes) {
                Ok(Some((code, reason))) => (Some(code), reason.to_owned()),
                _ => (None, String::new()),
            };
            return Some((
                json!({"event": "close", "dir": self.way.name(), "code": code, "reason": reason}),
                false,
            ));
        }
        if opcode.is_control() {
            return None;
        }
        if first {
            (self.opcode, self.length) = (opcode, 0);
            self.message.clear();
        }
        self.length += bytes.len() as u64;
        if self.length <= self.max_message as u64 {
            self.message.extend_from_slice(bytes);
        } else {
            self.message = Vec::new();
        }
        if !last {
            return None;
        }
        Some(self.message_event())
    }

    /// The event for the message just completed.
    fn message_event(&mut self) -> (Value, bool) {
        let binary = self.opcode == OpCode::Binary;
        let data = match binary {
            true => BASE64.encode(&self.message),
            false => String::from_utf8_lossy(&self.message).into_owned(),
        };
        self.message.clear();
        if self.length > self.max_message as u64 || data.len() > self.max_message {
            let why =
                format!("a message of {} bytes, over --max-message: forwarded, not recorded", self.length);
            return (json!({"event": "skipped", "dir": self.way.name(), "why": why}), false);
        }
        let opcode = if binary { 2 } else { 1 };
        (json!({"event": "message", "dir": self.way.name(), "opcode": opcode, "data": data}), true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wsbench_proto::write_frame;

    fn frames(mask: Option<[u8; 4]>, parts: &[(bool, OpCode, &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        for (fin, opcode, payload) in parts {
            write_frame(&mut out, *fin, *opcode, mask, payload);
        }
        out
    }

    #[test]
    fn masked_fragmented_text_and_binary_arrive_byte_by_byte_as_whole_messages() {
        let bytes = frames(
            Some([1, 2, 3, 4]),
            &[
                (false, OpCode::Text, b"hel"),
                (true, OpCode::Ping, b"p"),
                (true, OpCode::Continuation, b"lo"),
                (true, OpCode::Binary, &[0, 255]),
                (true, OpCode::Close, &[3, 232, b'b', b'y', b'e']),
            ],
        );
        let mut inspector = Inspector::new(Way::Send, 1024);
        let events: Vec<(Value, bool)> = bytes.iter().flat_map(|b| inspector.feed(&[*b])).collect();
        assert_eq!(events.len(), 3, "{events:?}");
        assert_eq!(events[0].0["data"], "hello");
        assert_eq!((events[1].0["opcode"].as_u64(), events[1].0["data"].as_str()), (Some(2), Some("AP8=")));
        assert_eq!(
            (events[2].0["event"].as_str(), events[2].0["code"].as_u64()),
            (Some("close"), Some(1000))
        );
        assert!(events[0].1 && events[1].1 && !events[2].1);
        assert!(inspector.pending.is_empty());
    }

    #[test]
    fn a_message_over_the_bound_is_skipped_and_a_broken_stream_reported_once() {
        let mut inspector = Inspector::new(Way::Receive, 4);
        let events =
            inspector.feed(&frames(None, &[(true, OpCode::Text, b"too long"), (true, OpCode::Text, b"ok")]));
        assert_eq!(events[0].0["event"], "skipped");
        assert_eq!(events[1].0["data"], "ok");
        let events = inspector.feed(&frames(Some([9, 9, 9, 9]), &[(true, OpCode::Text, b"masked")]));
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].0["event"], "error");
        assert!(inspector.feed(b"anything").is_empty());
    }
}
