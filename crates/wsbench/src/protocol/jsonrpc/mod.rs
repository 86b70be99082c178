//! `jsonrpc`: JSON-RPC 2.0 over WebSocket (blockchain node APIs, tool servers,
//! rpc-websockets). An echo request is the call `--method` (default `echo`) with the payload
//! as its one parameter, `{"jsonrpc":"2.0","method":"echo","params":["…"],"id":N}`, numbered
//! from 1 (rpc-websockets never answers id 0); its reply is the response with that id, whose
//! result carries the payload back (the string itself, or an array holding it). A response
//! with `error` is no round trip: it is counted as `jsonrpc_error_CODE` with the server's
//! message kept; each response of a batch reply (an array) counts on its own. In a flow the messages are the flow's own (it writes the calls), and a
//! response with `error` is marked as the error reply it is. In a stream a subscriber calls
//! `--subscribe-method` with `--subscribe-params` once open (`eth_subscribe`, `["newHeads"]`),
//! and every notification after (`eth_subscription`, an rpc-websockets event) is a delivery,
//! the whole message. The protocol has no opening and no heartbeat of its own.

use std::time::Instant;

use wsbench_appproto::json::{ArrayElements, unescape_into, write_str};
use wsbench_appproto::jsonrpc::{self, Id, Message};

use super::{Incoming, Options, Outbox, Protocol, Session, Setup, Sink, Use};
use crate::options::{Kind, OptionSpec};

/// The method an echo request calls when `--method` is not given.
pub const DEFAULT_METHOD: &str = "echo";

/// `--method`.
pub const METHOD: OptionSpec = OptionSpec {
    flag: "method",
    key: "method",
    kind: Kind::Text,
    value_name: "METHOD",
    default: DEFAULT_METHOD,
    bound: "not empty",
    help: "the method an echo request calls",
    scenarios: &[],
};

/// `--subscribe-method`.
pub const SUBSCRIBE_METHOD: OptionSpec = OptionSpec {
    flag: "subscribe-method",
    key: "subscribe-method",
    kind: Kind::Text,
    value_name: "METHOD",
    default: "none (the server notifies on connect)",
    bound: "not empty",
    help: "the method a stream subscriber calls once open (eth_subscribe)",
    scenarios: &["stream"],
};

/// `--subscribe-params`.
pub const SUBSCRIBE_PARAMS: OptionSpec = OptionSpec {
    flag: "subscribe-params",
    key: "subscribe-params",
    kind: Kind::Text,
    value_name: "JSON",
    default: "none",
    bound: "a JSON array or object, at most 65,536 bytes",
    help: "the params of --subscribe-method ('[\"newHeads\"]')",
    scenarios: &["stream"],
};

/// The longest `--subscribe-params`.
const MAX_SUBSCRIBE_PARAMS: usize = 65_536;

#[derive(Debug)]
pub struct JsonRpc;

impl Protocol for JsonRpc {
    fn name(&self) -> &'static str {
        "jsonrpc"
    }
    fn about(&self) -> &'static str {
        "JSON-RPC 2.0: an echo is a call of --method (default echo) answered by its result"
    }
    fn serves(&self, usage: Use) -> bool {
        matches!(usage, Use::Requests | Use::Messages | Use::Stream)
    }
    fn options(&self) -> &'static [OptionSpec] {
        &[METHOD, SUBSCRIBE_METHOD, SUBSCRIBE_PARAMS]
    }
    fn check(&self, options: &Options) -> Result<(), String> {
        if options.binary {
            return Err("JSON-RPC messages are text: leave out --binary (a bytes:N payload is binary unless --text is given)".into());
        }
        check_subscribe(options)?;
        match options.given.text(&METHOD) {
            Some("") => Err("--method is empty: give the method an echo request calls".into()),
            _ => Ok(()),
        }
    }
    fn session(&self, setup: &Setup<'_>) -> Box<dyn Session> {
        let method = setup.fill(setup.options.given.text(&METHOD).unwrap_or(DEFAULT_METHOD)).into_owned();
        let subscribe = setup.options.given.text(&SUBSCRIBE_METHOD).map(|method| {
            let params = setup.options.given.text(&SUBSCRIBE_PARAMS).map(|p| setup.fill(p).into_owned());
            (setup.fill(method).into_owned(), params)
        });
        Box::new(JsonRpcSession {
            flow: setup.usage == Use::Messages,
            stream: setup.usage == Use::Stream,
            subscribe,
            method,
            encoding: Vec::new(),
            params: Vec::new(),
            decoded: Vec::new(),
            cause: String::new(),
        })
    }
}

#[derive(Debug)]
struct JsonRpcSession {
    /// A flow's messages: passed on whole, error responses marked.
    flow: bool,
    /// A stream: notifications are deliveries.
    stream: bool,
    /// `--subscribe-method` and its `--subscribe-params`, filled in for this connection.
    subscribe: Option<(String, Option<String>)>,
    method: String,
    /// The message being written, its params, and a reply's payload decoded (kept for their
    /// capacity).
    encoding: Vec<u8>,
    params: Vec<u8>,
    decoded: Vec<u8>,
    /// An error's cause, `jsonrpc_error_CODE`.
    cause: String,
}

impl Session for JsonRpcSession {
    fn request(&mut self, seq: u64, payload: &[u8], out: &mut dyn Outbox) {
        self.params.clear();
        self.params.push(b'[');
        write_str(&mut self.params, &String::from_utf8_lossy(payload));
        self.params.push(b']');
        self.encoding.clear();
        // Text payloads are UTF-8, so the params are too.
        let params = std::str::from_utf8(&self.params).unwrap_or("[]");
        jsonrpc::encode_request(&mut self.encoding, &Id::Number(seq + 1), &self.method, Some(params));
        out.text(&self.encoding);
    }

    fn subscribe(&mut self, _topic: &str, _out: &mut dyn Outbox) {}

    /// The subscribe call, id 1.
    fn subscribe_stream(&mut self, out: &mut dyn Outbox) {
        let Some((method, params)) = &self.subscribe else { return };
        self.encoding.clear();
        jsonrpc::encode_request(&mut self.encoding, &Id::Number(1), method, params.as_deref());
        out.text(&self.encoding);
    }

    fn publish(&mut self, _topic: &str, _payload: &[u8], _out: &mut dyn Outbox) {}

    fn receive(&mut self, message: &[u8], _binary: bool, _now: Instant, sink: &mut dyn Sink) {
        if self.stream {
            return self.receive_stream(message, sink);
        }
        // A batch reply (an array of responses, as geth answers a batch) holds one response
        // per call: each is read as if it had come alone, so each error counts.
        if let Some(batch) = batch_elements(message) {
            return self.receive_batch(message, batch, sink);
        }
        if self.flow {
            return match jsonrpc::decode(message) {
                Ok(Message::Error { code, message: words, .. }) => {
                    let cause = error_cause(&mut self.cause, code);
                    sink.incoming(Incoming::Message { payload: message, error: Some((cause, &words)) })
                }
                _ => sink.incoming(Incoming::Message { payload: message, error: None }),
            };
        }
        self.receive_response(message, sink);
    }
}

impl JsonRpcSession {
    /// A message of a stream: a notification is a delivery (the whole message, its method
    /// as the topic), the subscribe call's result its acknowledgement, an error by its code.
    fn receive_stream(&mut self, message: &[u8], sink: &mut dyn Sink) {
        match jsonrpc::decode(message) {
            Ok(Message::Notification { method: name, .. } | Message::Event { name, .. }) => {
                sink.incoming(Incoming::Delivery { topic: &name, payload: message })
            }
            Ok(Message::Result { .. }) => {
                let method = self.subscribe.as_ref().map_or("", |(method, _)| method.as_str());
                sink.incoming(Incoming::Subscribed { topic: method })
            }
            _ => self.receive_response(message, sink),
        }
    }

    /// One response answering an echo request.
    fn receive_response(&mut self, message: &[u8], sink: &mut dyn Sink) {
        match jsonrpc::decode(message) {
            Ok(Message::Result { id, result }) => {
                let seq = request_seq(&id);
                let payload = match echoed(result, &mut self.decoded) {
                    true => &self.decoded[..],
                    false => result.as_bytes(),
                };
                sink.incoming(Incoming::Reply { seq, payload });
            }
            Ok(Message::Error { id, code, message, .. }) => {
                let cause = error_cause(&mut self.cause, code);
                let seq = request_seq(&id);
                sink.incoming(Incoming::Error { cause, detail: &message, seq, fatal: false });
            }
            Ok(Message::Notification { .. } | Message::Event { .. }) => sink.incoming(Incoming::Other),
            Err(error) => {
                let detail = error.to_string();
                sink.incoming(Incoming::Error {
                    cause: "jsonrpc_malformed",
                    detail: &detail,
                    seq: None,
                    fatal: false,
                });
            }
        }
    }

    /// A batch reply. For echo requests each response is read on its own. For a flow the
    /// batch stays one message (its steps match the whole reply): it is marked with its
    /// first error, and each further error is counted by its cause too, so a batch of
    /// three failed calls is three errors.
    fn receive_batch(&mut self, message: &[u8], batch: ArrayElements<'_>, sink: &mut dyn Sink) {
        let mut first_error: Option<(String, String)> = None;
        for element in batch {
            let Ok(element) = element else {
                let detail = "a batch reply that is not a JSON array of responses";
                sink.incoming(Incoming::Error {
                    cause: "jsonrpc_malformed",
                    detail,
                    seq: None,
                    fatal: false,
                });
                break;
            };
            if !self.flow {
                self.receive_response(element.as_bytes(), sink);
                continue;
            }
            if let Ok(Message::Error { code, message: words, .. }) = jsonrpc::decode(element.as_bytes()) {
                let cause = error_cause(&mut self.cause, code).to_owned();
                match first_error {
                    None => first_error = Some((cause, words.into_owned())),
                    Some(_) => sink.incoming(Incoming::Error {
                        cause: &cause,
                        detail: &words,
                        seq: None,
                        fatal: false,
                    }),
                }
            }
        }
        if self.flow {
            let error = first_error.as_ref().map(|(cause, words)| (cause.as_str(), words.as_str()));
            sink.incoming(Incoming::Message { payload: message, error });
        }
    }
}

/// `--subscribe-params` without `--subscribe-method`, an empty method, or params that are
/// no JSON array or object.
fn check_subscribe(options: &Options) -> Result<(), String> {
    let method = options.given.text(&SUBSCRIBE_METHOD);
    if method == Some("") {
        return Err("--subscribe-method is empty: give the method that subscribes (eth_subscribe)".into());
    }
    let Some(params) = options.given.text(&SUBSCRIBE_PARAMS) else { return Ok(()) };
    if method.is_none() {
        return Err("--subscribe-params without --subscribe-method: give the method they are for".into());
    }
    if params.len() > MAX_SUBSCRIBE_PARAMS {
        return Err(format!("--subscribe-params is {} bytes: at most {MAX_SUBSCRIBE_PARAMS}", params.len()));
    }
    match serde_json::from_str::<serde_json::Value>(params) {
        Ok(value) if value.is_array() || value.is_object() => Ok(()),
        _ => Err(format!("--subscribe-params {params}: give a JSON array or object (e.g. '[\"newHeads\"]')")),
    }
}

/// The responses of a batch reply: a message that is a JSON array.
fn batch_elements(message: &[u8]) -> Option<ArrayElements<'_>> {
    if message.trim_ascii_start().first() != Some(&b'[') {
        return None;
    }
    let text = std::str::from_utf8(message).ok()?;
    ArrayElements::new(text).ok()
}

/// `jsonrpc_error_CODE`, written into `cause`.
fn error_cause(cause: &mut String, code: i64) -> &str {
    cause.clear();
    cause.push_str("jsonrpc_error_");
    cause.push_str(&code.to_string());
    cause
}

/// The request a response answers: ids are sequence numbers from 1.
fn request_seq(id: &Id<'_>) -> Option<u64> {
    match id {
        Id::Number(number) => number.checked_sub(1),
        _ => None,
    }
}

/// The payload a result carries back, decoded into `out`: the result a string, or an array
/// whose one element is. False when it is neither.
fn echoed(result: &str, out: &mut Vec<u8>) -> bool {
    if result.starts_with('"') {
        return unescape_into(result.as_bytes(), out);
    }
    let Ok(mut elements) = ArrayElements::new(result) else { return false };
    match (elements.next(), elements.next()) {
        (Some(Ok(only)), None) => unescape_into(only.as_bytes(), out),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::tests::{Heard, setup};

    #[test]
    fn an_echo_is_a_call_numbered_from_one_and_its_result() {
        let options = Options::default();
        let mut session = JsonRpc.session(&setup(Use::Requests, &options));
        let mut heard = Heard::default();
        session.request(0, b"a \"quoted\" line", &mut heard);
        assert_eq!(
            heard.sent_text(0),
            r#"{"jsonrpc":"2.0","method":"echo","params":["a \"quoted\" line"],"id":1}"#
        );
        session.receive(
            br#"{"jsonrpc":"2.0","result":["a \"quoted\" line"],"id":1}"#,
            false,
            Instant::now(),
            &mut heard,
        );
        session.receive(br#"{"jsonrpc":"2.0","result":"plain","id":7}"#, false, Instant::now(), &mut heard);
        assert_eq!(heard.replies, [(Some(0), b"a \"quoted\" line".to_vec()), (Some(6), b"plain".to_vec())]);
    }

    #[test]
    fn an_error_reply_is_an_error_by_its_code_for_its_request() {
        let options = Options::with([("method", "nope".into())]);
        let mut session = JsonRpc.session(&setup(Use::Requests, &options));
        let mut heard = Heard::default();
        session.request(4, b"x", &mut heard);
        assert!(heard.sent_text(0).contains(r#""method":"nope""#));
        let error = br#"{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":5}"#;
        session.receive(error, false, Instant::now(), &mut heard);
        session.receive(b"not json", false, Instant::now(), &mut heard);
        assert!(heard.replies.is_empty());
        assert_eq!(
            heard.errors[0],
            ("jsonrpc_error_-32601".into(), "Method not found".into(), Some(4), false)
        );
        assert_eq!(heard.errors[1].0, "jsonrpc_malformed");
    }

    #[test]
    fn options_it_cannot_honour_are_refused() {
        let binary = Options { binary: true, ..Options::default() };
        assert!(JsonRpc.check(&binary).unwrap_err().contains("--binary"));
        assert!(JsonRpc.check(&Options::with([("method", "".into())])).is_err());
        assert!(!JsonRpc.serves(Use::PubSub));
        let params_alone = Options::with([("subscribe-params", "[1]".into())]);
        assert!(JsonRpc.check(&params_alone).unwrap_err().contains("--subscribe-method"));
        let not_json =
            Options::with([("subscribe-method", "s".into()), ("subscribe-params", "newHeads".into())]);
        assert!(JsonRpc.check(&not_json).unwrap_err().contains("JSON array or object"));
    }

    #[test]
    fn a_stream_subscribes_once_and_takes_notifications_as_deliveries() {
        let options = Options::with([
            ("subscribe-method", "eth_subscribe".into()),
            ("subscribe-params", r#"["newHeads"]"#.into()),
        ]);
        assert_eq!(JsonRpc.check(&options), Ok(()));
        let mut session = JsonRpc.session(&setup(Use::Stream, &options));
        let mut heard = Heard::default();
        session.subscribe_stream(&mut heard);
        assert_eq!(
            heard.sent_text(0),
            r#"{"jsonrpc":"2.0","method":"eth_subscribe","params":["newHeads"],"id":1}"#
        );
        session.receive(br#"{"jsonrpc":"2.0","result":"0xcd0c","id":1}"#, false, Instant::now(), &mut heard);
        let head = br#"{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"0xcd0c","result":{"number":"0x1b4"}}}"#;
        session.receive(head, false, Instant::now(), &mut heard);
        let refused = br#"{"jsonrpc":"2.0","error":{"code":-32601,"message":"no"},"id":1}"#;
        session.receive(refused, false, Instant::now(), &mut heard);
        assert_eq!(heard.subscribed, ["eth_subscribe"]);
        assert_eq!(heard.deliveries, [("eth_subscription".to_owned(), head.to_vec())]);
        assert_eq!(heard.errors[0].0, "jsonrpc_error_-32601");
    }

    #[test]
    fn each_error_of_a_batch_reply_counts() {
        let options = Options::default();
        let batch = br#"[{"jsonrpc":"2.0","error":{"code":-32601,"message":"the method eth_x does not exist"},"id":"1"},
            {"jsonrpc":"2.0","result":"0x10","id":"2"},
            {"jsonrpc":"2.0","error":{"code":-32602,"message":"invalid argument"},"id":"3"}]"#;
        let mut flow = JsonRpc.session(&setup(Use::Messages, &options));
        let mut heard = Heard::default();
        flow.receive(batch, false, Instant::now(), &mut heard);
        assert_eq!(heard.messages, [(batch.to_vec(), Some("jsonrpc_error_-32601".to_owned()))]);
        assert_eq!(heard.errors, [("jsonrpc_error_-32602".into(), "invalid argument".into(), None, false)]);

        let mut requests = JsonRpc.session(&setup(Use::Requests, &options));
        let mut heard = Heard::default();
        let batch = br#"[{"jsonrpc":"2.0","result":"a","id":1},{"jsonrpc":"2.0","error":{"code":-32000,"message":"busy"},"id":2}]"#;
        requests.receive(batch, false, Instant::now(), &mut heard);
        assert_eq!(heard.replies, [(Some(0), b"a".to_vec())]);
        assert_eq!(heard.errors, [("jsonrpc_error_-32000".into(), "busy".into(), Some(1), false)]);
    }

    #[test]
    fn a_flows_messages_pass_whole_with_error_replies_marked() {
        let options = Options::default();
        let mut session = JsonRpc.session(&setup(Use::Messages, &options));
        let mut heard = Heard::default();
        let result = br#"{"jsonrpc":"2.0","result":1,"id":"a"}"#;
        let error = br#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"busy"},"id":"b"}"#;
        for message in [&result[..], error, b"hello"] {
            session.receive(message, false, Instant::now(), &mut heard);
        }
        let marked = Some("jsonrpc_error_-32000".to_owned());
        assert_eq!(
            heard.messages,
            [(result.to_vec(), None), (error.to_vec(), marked), (b"hello".to_vec(), None)]
        );
    }
}
