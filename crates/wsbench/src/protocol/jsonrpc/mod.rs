//! `jsonrpc`: JSON-RPC 2.0 over WebSocket (blockchain node APIs, tool servers,
//! rpc-websockets). An echo request is the call `--method` (default `echo`) with the payload
//! as its one parameter, `{"jsonrpc":"2.0","method":"echo","params":["…"],"id":N}`, numbered
//! from 1 (rpc-websockets never answers id 0); its reply is the response with that id, whose
//! result carries the payload back (the string itself, or an array holding it). A response
//! with `error` is no round trip: it is counted as `jsonrpc_error_CODE` with the server's
//! message kept; each response of a batch reply (an array) counts on its own. In a flow the messages are the flow's own (it writes the calls), and a
//! response with `error` is marked as the error reply it is. The protocol has no opening and
//! no heartbeat of its own.

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
        matches!(usage, Use::Requests | Use::Messages)
    }
    fn options(&self) -> &'static [OptionSpec] {
        &[METHOD]
    }
    fn check(&self, options: &Options) -> Result<(), String> {
        if options.binary {
            return Err("JSON-RPC messages are text: leave out --binary (a bytes:N payload is binary unless --text is given)".into());
        }
        match options.given.text(&METHOD) {
            Some("") => Err("--method is empty: give the method an echo request calls".into()),
            _ => Ok(()),
        }
    }
    fn session(&self, setup: &Setup<'_>) -> Box<dyn Session> {
        let method = setup.fill(setup.options.given.text(&METHOD).unwrap_or(DEFAULT_METHOD)).into_owned();
        Box::new(JsonRpcSession {
            flow: setup.usage == Use::Messages,
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

    fn publish(&mut self, _topic: &str, _payload: &[u8], _out: &mut dyn Outbox) {}

    fn receive(&mut self, message: &[u8], _binary: bool, _now: Instant, sink: &mut dyn Sink) {
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
