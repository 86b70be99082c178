//! `wsbench serve --pubsub`: the pub/sub protocol of docs/protocols.md ("pub/sub"), kept
//! apart from the event loop so its parsing and topic table are tested without sockets.
//!
//! A text message `{"sub":"TOPIC"}` subscribes its connection; `{"pub":"TOPIC",...}` is
//! forwarded, payload unchanged, to every subscriber of TOPIC. The event loop encodes that
//! frame once and writes the same bytes to every subscriber (server frames are unmasked).
//! Pub/sub runs on one event-loop thread, so one table holds every subscription.

use std::collections::HashMap;

/// A protocol command found in a text message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command<'a> {
    Subscribe(&'a [u8]),
    Publish(&'a [u8]),
}

/// Recognises `{"sub":"T"}` / `{"pub":"T",...}` (the topic a JSON string without escapes)
/// without allocating; anything else is not a command (and is echoed like before).
pub fn parse(payload: &[u8]) -> Option<Command<'_>> {
    let rest = skip_space(payload).strip_prefix(b"{")?;
    let rest = skip_space(rest);
    let (publish, rest) = if let Some(rest) = rest.strip_prefix(b"\"sub\"") {
        (false, rest)
    } else {
        (true, rest.strip_prefix(b"\"pub\"")?)
    };
    let rest = skip_space(skip_space(rest).strip_prefix(b":")?).strip_prefix(b"\"")?;
    let end = rest.iter().position(|&b| b == b'"' || b == b'\\')?;
    if rest[end] != b'"' {
        return None;
    }
    let topic = &rest[..end];
    Some(if publish { Command::Publish(topic) } else { Command::Subscribe(topic) })
}

fn skip_space(bytes: &[u8]) -> &[u8] {
    let start = bytes.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(bytes.len());
    &bytes[start..]
}

/// The acknowledgement payload of a subscription: `{"subscribed":"TOPIC"}`.
pub fn ack(topic: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"subscribed\":\"");
    out.extend_from_slice(topic);
    out.extend_from_slice(b"\"}");
}

/// A subscriber: a slab key, the serial that tells it from a later connection in the same
/// slot, and the HTTP/2 stream id of the WebSocket on that connection (0: the connection is
/// the WebSocket, HTTP/1.1). Closed ones are dropped lazily, when a publish finds them gone.
pub type Subscriber = (usize, u32, u32);

/// Topic → subscribers.
#[derive(Debug, Default)]
pub struct Topics {
    topics: HashMap<Vec<u8>, Vec<Subscriber>>,
}

impl Topics {
    /// Adds `who` to `topic`; subscribing twice keeps one subscription.
    pub fn subscribe(&mut self, topic: &[u8], who: Subscriber) {
        let list = match self.topics.get_mut(topic) {
            Some(list) => list,
            None => self.topics.entry(topic.to_vec()).or_default(),
        };
        if !list.contains(&who) {
            list.push(who);
        }
    }

    /// The subscribers of `topic`, after dropping those `alive` rejects.
    pub fn subscribers(&mut self, topic: &[u8], alive: impl Fn(Subscriber) -> bool) -> &[Subscriber] {
        match self.topics.get_mut(topic) {
            Some(list) => {
                list.retain(|&who| alive(who));
                list
            }
            None => &[],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_commands_and_leaves_other_messages() {
        assert_eq!(parse(br#"{"sub":"t1"}"#), Some(Command::Subscribe(b"t1")));
        assert_eq!(parse(br#" { "pub" : "news", "id":"3-4", "ts":12 }"#), Some(Command::Publish(b"news")));
        assert_eq!(parse(br#"{"id":1,"pub":"x"}"#), None);
        assert_eq!(parse(br#"{"sub":"a\"b"}"#), None);
        assert_eq!(parse(br#"{"sub":"unterminated}"#), None);
        assert_eq!(parse(b"hello"), None);
    }

    #[test]
    fn ack_names_the_topic() {
        let mut out = Vec::new();
        ack(b"t7", &mut out);
        assert_eq!(out, br#"{"subscribed":"t7"}"#);
    }

    #[test]
    fn topics_keep_one_subscription_each_and_drop_dead_subscribers() {
        let mut topics = Topics::default();
        topics.subscribe(b"a", (1, 0, 0));
        topics.subscribe(b"a", (1, 0, 0));
        topics.subscribe(b"a", (2, 0, 0));
        topics.subscribe(b"a", (2, 0, 3));
        topics.subscribe(b"b", (3, 0, 0));
        assert_eq!(topics.subscribers(b"a", |_| true), &[(1, 0, 0), (2, 0, 0), (2, 0, 3)]);
        assert_eq!(topics.subscribers(b"a", |(key, _, _)| key != 1), &[(2, 0, 0), (2, 0, 3)]);
        assert_eq!(topics.subscribers(b"a", |_| true), &[(2, 0, 0), (2, 0, 3)]);
        assert!(topics.subscribers(b"none", |_| true).is_empty());
    }
}
