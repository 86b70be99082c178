//! `graphql-ws`: the graphql-transport-ws protocol of the graphql-ws library (Apollo,
//! GraphQL Yoga, Hasura and most GraphQL servers' subscriptions), subprotocol
//! `graphql-transport-ws`. The session opens with `connection_init` (its payload
//! `--init-payload`, where servers take credentials) and is ready at `connection_ack`; a
//! server that closes 4403 or 4401 before it refused the connection, most often for those
//! credentials, which the session names as its cause. An echo request is the operation `--query` (default: the `echo`
//! subscription of [`DEFAULT_QUERY`]) with the payload as its variable `$payload`, started
//! by `subscribe` with the request's sequence number as its id (unique on the connection);
//! its reply is the first `next` for that id, whose one field's value is the payload back.
//! A `--query` of the user's answers what it answers: its replies are not compared with the
//! payload ([`Protocol::replies_echo`]). An `error` (or a `next` carrying `errors`) is no
//! round trip: it is counted as `graphql_error` (`graphql_error_CODE` when the first error
//! has an `extensions.code`) with the server's first message kept.
//!
//! The server's `ping` is answered with `pong` at once; the client sends no pings of its
//! own (graphql-ws servers keep connections alive with WebSocket pings, which the engine
//! answers, and a load keeps them busy), except the one that acknowledges a pub/sub
//! subscription: pub/sub is a subscription fed by a mutation, both the user's operations
//! (`pubsub.rs`). Operations a server does not complete (a subscription
//! that keeps yielding) are completed by the client once [`MAX_RUNNING`] are running, so a
//! long run does not pile them up on the server; nothing a server sends grows the session.
//! In a stream a subscriber starts `--subscribe-query` (id `stream`) once acknowledged, and
//! every `next` of it is a delivery, its payload (`{"data":…}`).

mod options;
mod pubsub;

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::time::Instant;

use wsbench_appproto::graphql_ws::{self, Message, Subscribe};
use wsbench_appproto::json::{parse_u64, unescape_into, write_str, write_u64};

use super::{Incoming, Options, Outbox, Protocol, Session, Setup, Sink, Use};
use crate::options::OptionSpec;
pub use options::{
    DEFAULT_MUTATION, DEFAULT_QUERY, DEFAULT_SUBSCRIPTION, INIT_PAYLOAD, MUTATION, QUERY, SUBSCRIBE_QUERY,
    SUBSCRIPTION,
};
use pubsub::PubSubOperations;

/// The operation id of a stream's subscription.
const STREAM_ID: &str = "stream";

/// Operations that answered and that the server has not completed yet, per connection; past
/// this the client completes the oldest itself.
pub const MAX_RUNNING: usize = 64;

/// How much of a message that breaks the protocol the error's detail quotes.
const QUOTED: usize = 120;

#[derive(Debug)]
pub struct GraphqlWs;

impl Protocol for GraphqlWs {
    fn name(&self) -> &'static str {
        "graphql-ws"
    }
    fn about(&self) -> &'static str {
        "graphql-transport-ws (graphql-ws): an echo is the operation --query with $payload, answered by its first result"
    }
    fn serves(&self, _usage: Use) -> bool {
        true
    }
    fn subprotocols(&self) -> &'static [&'static str] {
        &[graphql_ws::SUBPROTOCOL]
    }
    fn options(&self) -> &'static [OptionSpec] {
        options::ALL
    }
    fn check(&self, options: &Options) -> Result<(), String> {
        options::check(options)
    }
    fn replies_echo(&self, options: &Options) -> bool {
        !options.given.given(&QUERY)
    }
    fn session(&self, setup: &Setup<'_>) -> Box<dyn Session> {
        let query = setup.fill(setup.options.given.text(&QUERY).unwrap_or(DEFAULT_QUERY)).into_owned();
        let init_payload = setup.options.secrets.get(&INIT_PAYLOAD).map(|init| setup.fill(init).into_owned());
        let pubsub = (setup.usage == Use::PubSub).then(|| PubSubOperations::new(setup));
        let stream_query =
            setup.options.given.text(&SUBSCRIBE_QUERY).map(|query| setup.fill(query).into_owned());
        Box::new(GraphqlWsSession {
            flow: setup.usage == Use::Messages,
            stream: setup.usage == Use::Stream,
            stream_query,
            query,
            init_payload,
            pubsub,
            ready: false,
            awaiting: VecDeque::new(),
            running: VecDeque::new(),
            encoding: Vec::new(),
            variables: Vec::new(),
            id: Vec::new(),
            decoded: Vec::new(),
            detail: String::new(),
            cause: String::new(),
        })
    }
}

#[derive(Debug)]
struct GraphqlWsSession {
    /// A flow's session: after its own opening, the operations' messages are the flow's
    /// (it writes the `subscribe`s), an `error` marked as the error reply it is.
    flow: bool,
    /// A stream: every `next` is a delivery; `stream_query` is the subscription started.
    stream: bool,
    stream_query: Option<String>,
    query: String,
    /// `--init-payload`, its `{data.NAME}` filled in.
    init_payload: Option<String>,
    /// A pub/sub session's operations: its subscriptions and publishes.
    pubsub: Option<PubSubOperations>,
    /// `connection_ack` came.
    ready: bool,
    /// Operations started whose first result has not come, oldest first (as many as the
    /// workload keeps in flight).
    awaiting: VecDeque<u64>,
    /// Operations that answered and are not completed yet, oldest first (at most
    /// [`MAX_RUNNING`]).
    running: VecDeque<u64>,
    /// The message being written, its variables, an id's digits, a reply's payload decoded
    /// and an error's detail (kept for their capacity).
    encoding: Vec<u8>,
    variables: Vec<u8>,
    id: Vec<u8>,
    decoded: Vec<u8>,
    detail: String,
    /// An error's cause, `graphql_error` or `graphql_error_CODE`.
    cause: String,
}

impl Session for GraphqlWsSession {
    fn open(&mut self, _now: Instant, out: &mut dyn Outbox) {
        self.encoding.clear();
        graphql_ws::encode_connection_init(&mut self.encoding, self.init_payload.as_deref());
        out.text(&self.encoding);
    }

    fn ready(&self) -> bool {
        self.ready
    }

    fn request(&mut self, seq: u64, payload: &[u8], out: &mut dyn Outbox) {
        self.variables.clear();
        self.variables.extend_from_slice(br#"{"payload":"#);
        write_str(&mut self.variables, &String::from_utf8_lossy(payload));
        self.variables.push(b'}');
        self.id.clear();
        write_u64(&mut self.id, seq);
        // Both were written from `str`s, so they are UTF-8.
        let variables = std::str::from_utf8(&self.variables).unwrap_or("{}");
        let id = std::str::from_utf8(&self.id).unwrap_or("0");
        let subscribe = Subscribe { query: &self.query, variables: Some(variables), operation_name: None };
        self.encoding.clear();
        graphql_ws::encode_subscribe(&mut self.encoding, id, &subscribe);
        out.text(&self.encoding);
        self.awaiting.push_back(seq);
    }

    fn subscribe(&mut self, topic: &str, out: &mut dyn Outbox) {
        self.subscribe_topic(topic, out);
    }

    fn publish(&mut self, topic: &str, payload: &[u8], out: &mut dyn Outbox) {
        self.publish_to(topic, payload, out);
    }

    fn subscribe_stream(&mut self, out: &mut dyn Outbox) {
        let Some(query) = &self.stream_query else { return };
        let subscribe = Subscribe { query, variables: None, operation_name: None };
        self.encoding.clear();
        graphql_ws::encode_subscribe(&mut self.encoding, STREAM_ID, &subscribe);
        out.text(&self.encoding);
    }

    fn receive(&mut self, message: &[u8], binary: bool, _now: Instant, sink: &mut dyn Sink) {
        if binary {
            return self.broken("graphql_ws_malformed", "a binary message", message, sink);
        }
        let raw = message;
        let message = match graphql_ws::decode(message) {
            Ok(decoded) => decoded,
            Err(error) => return self.broken("graphql_ws_malformed", &error.to_string(), message, sink),
        };
        match message {
            Message::Ping { payload } => {
                self.encoding.clear();
                graphql_ws::encode_pong(&mut self.encoding, payload);
                sink.text(&self.encoding);
                sink.incoming(Incoming::Other);
            }
            Message::Pong { payload } => self.on_pong(payload, sink),
            Message::ConnectionAck { .. } if !self.ready => {
                self.ready = true;
                sink.incoming(Incoming::Ready);
            }
            Message::Next { .. } | Message::Error { .. } | Message::Complete { .. }
                if self.ready && self.pubsub.is_some() =>
            {
                self.on_pubsub_operation(message, sink)
            }
            Message::Next { .. } | Message::Complete { .. } if self.ready && self.flow => {
                sink.incoming(Incoming::Message { payload: raw, error: None })
            }
            Message::Error { message, code, .. } if self.ready && self.flow => {
                let cause = graphql_ws::error_cause(&mut self.cause, code.as_deref());
                sink.incoming(Incoming::Message { payload: raw, error: Some((cause, &message)) })
            }
            Message::Next { payload, .. } if self.ready && self.stream => {
                on_stream_next(payload, &mut self.cause, sink)
            }
            Message::Next { id, payload } if self.ready => self.on_next(&id, payload, sink),
            Message::Error { id, message, code, .. } if self.ready => {
                let seq = self.finish(&id);
                let cause = graphql_ws::error_cause(&mut self.cause, code.as_deref());
                sink.incoming(Incoming::Error { cause, detail: &message, seq, fatal: false });
            }
            Message::Complete { id } if self.ready => match self.finish(&id) {
                // Completed without a result: the request is answered, with nothing.
                Some(seq) => sink.incoming(Incoming::Error {
                    cause: "graphql_ws_no_result",
                    detail: "the operation completed without a result",
                    seq: Some(seq),
                    fatal: false,
                }),
                None => sink.incoming(Incoming::Other),
            },
            unexpected => {
                let what = match unexpected {
                    Message::ConnectionInit { .. } => "connection_init (is it an echo server?)",
                    Message::Subscribe { .. } => "subscribe (is it an echo server?)",
                    Message::ConnectionAck { .. } => "a second connection_ack",
                    _ => "an operation's message before connection_ack",
                };
                self.detail.clear();
                self.detail.push_str("the server sent ");
                self.detail.push_str(what);
                let fatal = !self.ready;
                sink.incoming(Incoming::Error {
                    cause: "graphql_ws_unexpected",
                    detail: &self.detail,
                    seq: None,
                    fatal,
                });
            }
        }
    }

    fn ended_while_opening(&mut self, close: Option<(u16, &str)>, sink: &mut dyn Sink) {
        if let Some((code @ (4401 | 4403), reason)) = close {
            self.refused_at_init(code, reason, sink);
        }
    }
}

/// A result of a stream's subscription: a delivery, or the error it carries (by its code,
/// as other operations' errors are; `cause` is where that is written).
fn on_stream_next(payload: &str, cause: &mut String, sink: &mut dyn Sink) {
    match graphql_ws::execution_error(payload) {
        Some((message, code)) => {
            let cause = graphql_ws::error_cause(cause, code.as_deref());
            sink.incoming(Incoming::Error { cause, detail: &message, seq: None, fatal: false })
        }
        None => sink.incoming(Incoming::Delivery { topic: STREAM_ID, payload: payload.as_bytes() }),
    }
}

impl GraphqlWsSession {
    /// The server closed before `connection_ack` with 4401 or 4403: it refused the
    /// connection (graphql-ws closes 4403 "Forbidden" when `onConnect` says no), most often
    /// for the credentials in the init payload.
    fn refused_at_init(&mut self, code: u16, reason: &str, sink: &mut dyn Sink) {
        let cause = match code {
            4401 => "graphql_ws_init_unauthorized",
            _ => "graphql_ws_init_forbidden",
        };
        self.detail.clear();
        let _ = write!(self.detail, "the server refused connection_init (close {code} {reason:?}): ");
        self.detail.push_str(match self.init_payload {
            Some(_) => "check the --init-payload given",
            None => "give credentials with --init-payload",
        });
        sink.incoming(Incoming::Error { cause, detail: &self.detail, seq: None, fatal: true });
    }

    /// A result for operation `id`: the first is its request's reply (or its error), later
    /// ones are nothing the load asked for.
    fn on_next(&mut self, id: &str, payload: &str, sink: &mut dyn Sink) {
        let first = parse_u64(id.as_bytes()).filter(|seq| take(&mut self.awaiting, *seq));
        if let Some(seq) = first {
            self.running.push_back(seq);
            self.complete_beyond_limit(sink);
        }
        if let Some((message, code)) = graphql_ws::execution_error(payload) {
            let cause = graphql_ws::error_cause(&mut self.cause, code.as_deref());
            return sink.incoming(Incoming::Error { cause, detail: &message, seq: first, fatal: false });
        }
        let Some(seq) = first else { return sink.incoming(Incoming::Other) };
        let data = graphql_ws::result_data(payload);
        let reply = match data.and_then(graphql_ws::only_field) {
            Some(field) if unescape_into(field.as_bytes(), &mut self.decoded) => &self.decoded[..],
            _ => data.unwrap_or(payload).as_bytes(),
        };
        sink.incoming(Incoming::Reply { seq: Some(seq), payload: reply });
    }

    /// Operation `id` ended (an error or the server's complete): the request it answers if
    /// its first result had not come.
    fn finish(&mut self, id: &str) -> Option<u64> {
        let seq = parse_u64(id.as_bytes())?;
        if take(&mut self.awaiting, seq) {
            return Some(seq);
        }
        take(&mut self.running, seq);
        None
    }

    /// Completes the oldest running operations past [`MAX_RUNNING`].
    fn complete_beyond_limit(&mut self, out: &mut dyn Sink) {
        while self.running.len() > MAX_RUNNING {
            let Some(oldest) = self.running.pop_front() else { break };
            self.id.clear();
            write_u64(&mut self.id, oldest);
            self.encoding.clear();
            graphql_ws::encode_complete(&mut self.encoding, std::str::from_utf8(&self.id).unwrap_or("0"));
            out.text(&self.encoding);
        }
    }

    /// A message that is not graphql-transport-ws: counted by `cause`, with the start of
    /// what came; before `connection_ack` the server is no graphql-ws server and the
    /// connection cannot go on.
    fn broken(&mut self, cause: &str, why: &str, message: &[u8], sink: &mut dyn Sink) {
        self.detail.clear();
        let quoted = String::from_utf8_lossy(&message[..message.len().min(QUOTED)]);
        let _ = write!(self.detail, "{why}: {quoted:?}");
        let fatal = !self.ready;
        sink.incoming(Incoming::Error { cause, detail: &self.detail, seq: None, fatal });
    }
}

/// Removes `seq` from `ids` (looked for from the oldest: results mostly come in order);
/// whether it was there.
fn take(ids: &mut VecDeque<u64>, seq: u64) -> bool {
    match ids.iter().position(|&id| id == seq) {
        Some(at) => ids.remove(at).is_some(),
        None => false,
    }
}

#[cfg(test)]
mod tests;
