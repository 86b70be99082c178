//! `raw`: WebSocket messages as they are. Requests are the payload itself and replies its
//! echo, read by the workload as they stream (a passthrough session); pub/sub is the small
//! JSON protocol of docs/protocols.md: `{"sub":"tK"}` answered by `{"subscribed":"tK"}`, and a
//! publish `{"pub":"tK",…}` whose fields (the publisher's id and sequence, its due and send
//! times) every subscriber of the topic receives as they were sent. In a stream every message
//! from the server is a delivery, after `--subscribe-message` (if given) is sent on opening.

use std::time::Instant;

use super::{Incoming, Options, Outbox, Protocol, Session, Setup, Sink, Use};
use crate::options::{Kind, OptionSpec};

/// `--subscribe-message`.
pub const SUBSCRIBE_MESSAGE: OptionSpec = OptionSpec {
    flag: "subscribe-message",
    key: "subscribe-message",
    kind: Kind::Text,
    value_name: "TEXT",
    default: "none (the server streams on connect)",
    bound: "not empty, at most 65,536 bytes",
    help: "the text message a stream subscriber sends once open ({conn} and {data.NAME} filled in)",
    scenarios: &["stream"],
};

/// The longest `--subscribe-message`.
const MAX_SUBSCRIBE_MESSAGE: usize = 65_536;

#[derive(Debug)]
pub struct Raw;

impl Protocol for Raw {
    fn name(&self) -> &'static str {
        "raw"
    }
    fn about(&self) -> &'static str {
        "WebSocket messages as they are; pub/sub as the JSON of docs/protocols.md"
    }
    fn serves(&self, _usage: Use) -> bool {
        true
    }
    fn needs_target(&self) -> bool {
        false
    }
    fn options(&self) -> &'static [OptionSpec] {
        &[SUBSCRIBE_MESSAGE]
    }
    fn check(&self, options: &Options) -> Result<(), String> {
        match options.given.text(&SUBSCRIBE_MESSAGE) {
            Some("") => Err("--subscribe-message is empty: give the message that subscribes, or leave it \
                             out when the server streams on connect"
                .into()),
            Some(text) if text.len() > MAX_SUBSCRIBE_MESSAGE => {
                Err(format!("--subscribe-message is {} bytes: at most {MAX_SUBSCRIBE_MESSAGE}", text.len()))
            }
            _ => Ok(()),
        }
    }
    fn session(&self, setup: &Setup<'_>) -> Box<dyn Session> {
        let stream = setup.usage == Use::Stream;
        let subscribe = match stream {
            true => setup
                .options
                .given
                .text(&SUBSCRIBE_MESSAGE)
                .map(|text| setup.fill(text).replace("{conn}", &setup.index.to_string())),
            false => None,
        };
        Box::new(RawSession {
            passthrough: !matches!(setup.usage, Use::PubSub | Use::Stream),
            stream,
            subscribe,
            encoding: Vec::new(),
        })
    }
}

#[derive(Debug)]
struct RawSession {
    /// Requests and flows: the workload reads the messages itself.
    passthrough: bool,
    /// A stream: every message is a delivery.
    stream: bool,
    /// `--subscribe-message`, filled in for this connection (`{conn}`: its index).
    subscribe: Option<String>,
    /// The message being written (kept for its capacity).
    encoding: Vec<u8>,
}

impl Session for RawSession {
    fn passthrough(&self) -> bool {
        self.passthrough
    }

    fn request(&mut self, _seq: u64, payload: &[u8], out: &mut dyn Outbox) {
        out.binary(payload);
    }

    fn subscribe(&mut self, topic: &str, out: &mut dyn Outbox) {
        self.encoding.clear();
        self.encoding.extend_from_slice(br#"{"sub":""#);
        self.encoding.extend_from_slice(topic.as_bytes());
        self.encoding.extend_from_slice(br#""}"#);
        out.text(&self.encoding);
    }

    fn subscribe_stream(&mut self, out: &mut dyn Outbox) {
        if let Some(message) = &self.subscribe {
            out.text(message.as_bytes());
        }
    }

    /// `{"pub":"tK",…}`: the topic, then the payload's own fields.
    fn publish(&mut self, topic: &str, payload: &[u8], out: &mut dyn Outbox) {
        self.encoding.clear();
        self.encoding.extend_from_slice(br#"{"pub":""#);
        self.encoding.extend_from_slice(topic.as_bytes());
        self.encoding.extend_from_slice(b"\"");
        match payload.strip_prefix(b"{") {
            Some(fields) if fields != b"}" => {
                self.encoding.push(b',');
                self.encoding.extend_from_slice(fields);
            }
            _ => self.encoding.push(b'}'),
        }
        out.text(&self.encoding);
    }

    fn receive(&mut self, message: &[u8], _binary: bool, _now: Instant, sink: &mut dyn Sink) {
        match self.stream {
            true => sink.incoming(Incoming::Delivery { topic: "", payload: message }),
            false => sink.incoming(classify(message)),
        }
    }
}

/// What a pub/sub message of docs/protocols.md is: an acknowledged subscription, or a
/// delivery: of the topic it names (`{"pub":"tK",…}`), or, in any other shape (a server that
/// forwards the payload alone, or wraps it), one whose topic its marker tells.
pub fn classify(message: &[u8]) -> Incoming<'_> {
    if let Some(topic) = string_field(message, br#"{"subscribed":""#) {
        return Incoming::Subscribed { topic };
    }
    let topic = string_field(message, br#"{"pub":""#).unwrap_or("");
    Incoming::Delivery { topic, payload: message }
}

/// The string value of a message that begins `prefix` (up to its closing quote).
fn string_field<'m>(message: &'m [u8], prefix: &[u8]) -> Option<&'m str> {
    let rest = message.trim_ascii_start().strip_prefix(prefix)?;
    let end = rest.iter().position(|&b| b == b'"')?;
    std::str::from_utf8(&rest[..end]).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Options;
    use crate::protocol::tests::{Heard, setup};

    #[test]
    fn pub_sub_messages_are_those_of_docs_protocols() {
        let options = Options::default();
        let mut session = Raw.session(&setup(Use::PubSub, &options));
        assert!(!session.passthrough());
        let mut sent = Heard::default();
        session.subscribe("t3", &mut sent);
        session.publish("t3", br#"{"id":"1-2","ts":5}"#, &mut sent);
        assert_eq!(sent.sent_text(0), r#"{"sub":"t3"}"#);
        assert_eq!(sent.sent_text(1), r#"{"pub":"t3","id":"1-2","ts":5}"#);
        assert_eq!(classify(br#"{"subscribed":"t3"}"#), Incoming::Subscribed { topic: "t3" });
        let delivery = br#"{"pub":"t3","id":"1-2","ts":5}"#;
        assert_eq!(classify(delivery), Incoming::Delivery { topic: "t3", payload: delivery });
        let alone = br#"{"id":"1-2","ts":5}"#;
        assert_eq!(classify(alone), Incoming::Delivery { topic: "", payload: alone });
        assert!(Raw.session(&setup(Use::Requests, &options)).passthrough(), "echoes are read as they stream");
    }

    #[test]
    fn a_stream_sends_its_subscribe_message_and_takes_every_message_as_a_delivery() {
        let options = Options::with([("subscribe-message", r#"{"op":"sub","feed":"ticks"}"#.into())]);
        assert_eq!(Raw.check(&options), Ok(()));
        let mut session = Raw.session(&setup(Use::Stream, &options));
        assert!(!session.passthrough());
        let mut heard = Heard::default();
        session.subscribe_stream(&mut heard);
        assert_eq!(heard.sent_text(0), r#"{"op":"sub","feed":"ticks"}"#);
        session.receive(br#"{"subscribed":"t1"}"#, false, Instant::now(), &mut heard);
        assert_eq!(heard.deliveries, [(String::new(), br#"{"subscribed":"t1"}"#.to_vec())]);
        let mut silent = Raw.session(&setup(Use::Stream, &Options::default()));
        let mut heard = Heard::default();
        silent.subscribe_stream(&mut heard);
        assert!(heard.sent.is_empty(), "a server that streams on connect is sent nothing");
        assert!(Raw.check(&Options::with([("subscribe-message", "".into())])).is_err());
    }
}
