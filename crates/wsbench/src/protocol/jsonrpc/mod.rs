//! `jsonrpc`: JSON-RPC 2.0 over WebSocket (blockchain node APIs, tool servers,
//! rpc-websockets). An echo request is the call `--method` (default `echo`) with the params
//! `--params` (default `[{payload}]`: the payload as its one parameter),
//! `{"jsonrpc":"2.0","method":"echo","params":["…"],"id":N}`, numbered from 1
//! (rpc-websockets never answers id 0); its reply is the response with that id, whose result
//! carries the payload back (the string itself, or an array holding it). With `--params` of
//! the user's the result is the server's own answer, not compared with the payload. With
//! `--batch N` a request is a batch (a JSON array) of N calls, answered by a batch reply
//! whose responses are matched to the calls by id (`batch.rs`). A response with `error` is
//! no round trip: it is counted as `jsonrpc_error_CODE` with the server's message kept; each
//! response of a batch reply counts on its own. In a flow the messages are the flow's own
//! (it writes the calls), and a response with `error` is marked as the error reply it is.
//! In a stream a subscriber calls `--subscribe-method` with `--subscribe-params` once open
//! (`eth_subscribe`, `["newHeads"]`), and every notification after (`eth_subscription`, an
//! rpc-websockets event) is a delivery, the whole message. The protocol has no opening and no
//! heartbeat of its own.

mod batch;

use std::time::Instant;

use wsbench_appproto::json::{ArrayElements, unescape_into, write_str};
use wsbench_appproto::jsonrpc::{self, Id, Message};

use super::template::{Template, sample_json};
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

/// The params of an echo request's call when `--params` is not given: the payload alone.
pub const DEFAULT_PARAMS: &str = "[{payload}]";
/// What `--params` replaces with the payload, as a JSON string.
pub const PAYLOAD_PLACEHOLDER: &str = "{payload}";

/// `--params`.
pub const PARAMS: OptionSpec = OptionSpec {
    flag: "params",
    key: "params",
    kind: Kind::Text,
    value_name: "TEMPLATE",
    default: DEFAULT_PARAMS,
    bound: "a JSON array or object",
    help: "the params of an echo request's call, {payload} standing for the payload as a JSON string (e.g. [] for a method without params)",
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

/// The most calls `--batch` puts in one message (geth refuses batches of more than 1,000).
pub const MAX_BATCH: u64 = 1_000;

/// `--batch`.
pub const BATCH: OptionSpec = OptionSpec {
    flag: "batch",
    key: "batch",
    kind: Kind::Count,
    value_name: "N",
    default: "1",
    bound: "1 to 1,000",
    help: "calls per echo request: a batch (JSON array) of N calls, its reply the batch of their N responses",
    scenarios: &[],
};

#[derive(Debug)]
pub struct JsonRpc;

impl Protocol for JsonRpc {
    fn name(&self) -> &'static str {
        "jsonrpc"
    }
    fn about(&self) -> &'static str {
        "JSON-RPC 2.0: an echo is a call of --method answered by its result"
    }
    fn serves(&self, usage: Use) -> bool {
        matches!(usage, Use::Requests | Use::Messages | Use::Stream)
    }
    fn options(&self) -> &'static [OptionSpec] {
        &[METHOD, PARAMS, BATCH, SUBSCRIBE_METHOD, SUBSCRIBE_PARAMS]
    }
    fn check(&self, options: &Options) -> Result<(), String> {
        if options.binary {
            return Err("JSON-RPC messages are text: leave out --binary (a bytes:N payload is binary unless --text is given)".into());
        }
        if options.given.text(&METHOD) == Some("") {
            return Err("--method is empty: give the method an echo request calls".into());
        }
        check_params(options)?;
        check_subscribe(options)?;
        match options.given.count(&BATCH) {
            Some(0) => Err("--batch 0: a batch holds at least 1 call".into()),
            Some(n) if n > MAX_BATCH => Err(format!(
                "--batch {n} is more than {MAX_BATCH} calls in one message: give at most {MAX_BATCH}"
            )),
            _ => Ok(()),
        }
    }
    fn replies_echo(&self, options: &Options) -> bool {
        !options.given.given(&PARAMS) && batch_size(options) == 1
    }
    fn session(&self, setup: &Setup<'_>) -> Box<dyn Session> {
        let method = setup.fill(setup.options.given.text(&METHOD).unwrap_or(DEFAULT_METHOD)).into_owned();
        let params = setup.fill(setup.options.given.text(&PARAMS).unwrap_or(DEFAULT_PARAMS));
        let batch = batch_size(setup.options);
        let subscribe = setup.options.given.text(&SUBSCRIBE_METHOD).map(|method| {
            let params = setup.options.given.text(&SUBSCRIBE_PARAMS).map(|p| setup.fill(p).into_owned());
            (setup.fill(method).into_owned(), params)
        });
        Box::new(JsonRpcSession {
            flow: setup.usage == Use::Messages,
            stream: setup.usage == Use::Stream,
            subscribe,
            method,
            params_template: Template::split(&params, &[PAYLOAD_PLACEHOLDER]),
            batch,
            answered: vec![false; if batch > 1 { batch as usize } else { 0 }],
            encoding: Vec::new(),
            params: Vec::new(),
            decoded: Vec::new(),
            cause: String::new(),
            detail: String::new(),
        })
    }
}

#[derive(Debug)]
struct JsonRpcSession {
    /// A flow's messages: passed on whole, error responses marked.
    flow: bool,
    /// A stream's subscriber: notifications are deliveries.
    stream: bool,
    /// `--subscribe-method` and its `--subscribe-params`, filled.
    subscribe: Option<(String, Option<String>)>,
    method: String,
    /// `--params`, split at `{payload}`.
    params_template: Template,
    /// Calls per echo request (`--batch`): 1 is a call alone, more a batch.
    batch: u64,
    /// Which calls of the batch reply being read were answered (a batch's size of them).
    answered: Vec<bool>,
    /// The message being written, its params, and a reply's payload decoded (kept for their
    /// capacity).
    encoding: Vec<u8>,
    params: Vec<u8>,
    decoded: Vec<u8>,
    /// An error's cause, `jsonrpc_error_CODE`, and a detail of the client's own.
    cause: String,
    detail: String,
}

impl Session for JsonRpcSession {
    fn request(&mut self, seq: u64, payload: &[u8], out: &mut dyn Outbox) {
        self.params.clear();
        let payload = String::from_utf8_lossy(payload);
        self.params_template.write(&mut self.params, |_, out| write_str(out, &payload));
        self.encoding.clear();
        // Text payloads are UTF-8 and the template is a `str`, so the params are too.
        let params = std::str::from_utf8(&self.params).unwrap_or("[]");
        if self.batch == 1 {
            jsonrpc::encode_request(&mut self.encoding, &Id::Number(seq + 1), &self.method, Some(params));
        } else {
            self.encoding.push(b'[');
            for call in 0..self.batch {
                if call > 0 {
                    self.encoding.push(b',');
                }
                let id = Id::Number(batch::call_id(seq, call, self.batch));
                jsonrpc::encode_request(&mut self.encoding, &id, &self.method, Some(params));
            }
            self.encoding.push(b']');
        }
        out.text(&self.encoding);
    }

    fn subscribe(&mut self, _topic: &str, _out: &mut dyn Outbox) {}

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
        if !self.flow && self.batch > 1 {
            return self.receive_batch_reply(message, sink);
        }
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
    /// A stream's message: a notification is a delivery, the subscription's result its
    /// acknowledgement, anything else a response as in an echo (an error by its code).
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
                malformed_batch(sink);
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

/// `--batch`, 1 when not given (`check` refused 0 and past [`MAX_BATCH`]).
fn batch_size(options: &Options) -> u64 {
    options.given.count(&BATCH).unwrap_or(1).clamp(1, MAX_BATCH)
}

/// `--params` is a JSON array or object once `{payload}` is filled in.
fn check_params(options: &Options) -> Result<(), String> {
    let Some(params) = options.given.text(&PARAMS) else { return Ok(()) };
    let sample = sample_json(params, &[PAYLOAD_PLACEHOLDER], &[r#""payload""#])
        .map_err(|error| format!("--params {params:?} is not JSON with {{payload}} filled in ({error}): give a JSON array or object such as [] or [{{payload}}]"))?;
    match sample.is_array() || sample.is_object() {
        true => Ok(()),
        false => Err(format!(
            "--params {params:?} is not a JSON array or object, as JSON-RPC params must be: e.g. [] or [{{payload}}]"
        )),
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

/// A batch reply that is no JSON array of responses: counted once, the rest of it unread.
fn malformed_batch(sink: &mut dyn Sink) {
    let detail = "a batch reply that is not a JSON array of responses";
    sink.incoming(Incoming::Error { cause: "jsonrpc_malformed", detail, seq: None, fatal: false });
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

#[cfg(test)]
mod tests;
