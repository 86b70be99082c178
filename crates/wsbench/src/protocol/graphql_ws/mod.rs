//! `graphql-ws`: the graphql-transport-ws protocol of the graphql-ws library (Apollo,
//! GraphQL Yoga, Hasura and most GraphQL servers' subscriptions), subprotocol
//! `graphql-transport-ws`. The session opens with `connection_init` and is ready at
//! `connection_ack`. An echo request is the operation `--query` (default: the `echo`
//! subscription of [`DEFAULT_QUERY`]) with the payload as its variable `$payload`, started
//! by `subscribe` with the request's sequence number as its id (unique on the connection);
//! its reply is the first `next` for that id, whose one field's value is the payload back.
//! A `--query` of the user's answers what it answers: its replies are not compared with the
//! payload ([`Protocol::replies_echo`]). An `error` (or a `next` carrying `errors`) is no
//! round trip: it is counted as `graphql_error` with the server's first message kept.
//!
//! The server's `ping` is answered with `pong` at once; the client sends no pings of its
//! own (graphql-ws servers keep connections alive with WebSocket pings, which the engine
//! answers, and a load keeps them busy). Pub/sub is not served: publishing needs a mutation
//! each server defines for itself. Operations a server does not complete (a subscription
//! that keeps yielding) are completed by the client once [`MAX_RUNNING`] are running, so a
//! long run does not pile them up on the server; nothing a server sends grows the session.
//! In a stream a subscriber starts `--subscribe-query` (id `stream`) once acknowledged, and
//! every `next` of it is a delivery, its payload (`{"data":…}`).

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::time::Instant;

use wsbench_appproto::graphql_ws::{self, Message, Subscribe};
use wsbench_appproto::json::{parse_u64, unescape_into, write_str, write_u64};

use super::{Incoming, Options, Outbox, Protocol, Session, Setup, Sink, Use};
use crate::options::{Kind, OptionSpec};

/// The operation an echo request starts when `--query` is not given: the payload is its
/// `$payload` variable and comes back as the `echo` field of the first result.
pub const DEFAULT_QUERY: &str = "subscription($payload: String!) { echo(message: $payload) }";

/// `--query`.
pub const QUERY: OptionSpec = OptionSpec {
    flag: "query",
    key: "query",
    kind: Kind::Text,
    value_name: "QUERY",
    default: "an echo subscription of $payload",
    bound: "not empty",
    help: "the operation an echo request starts; `$payload` is the payload",
    scenarios: &[],
};

/// `--subscribe-query`.
pub const SUBSCRIBE_QUERY: OptionSpec = OptionSpec {
    flag: "subscribe-query",
    key: "subscribe-query",
    kind: Kind::Text,
    value_name: "QUERY",
    default: "none (the server streams on its own)",
    bound: "not empty",
    help: "the subscription a stream subscriber starts, e.g. 'subscription { ticks { seq ts } }'",
    scenarios: &["stream"],
};

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
    fn serves(&self, usage: Use) -> bool {
        matches!(usage, Use::Requests | Use::Messages | Use::Stream)
    }
    fn subprotocols(&self) -> &'static [&'static str] {
        &[graphql_ws::SUBPROTOCOL]
    }
    fn options(&self) -> &'static [OptionSpec] {
        &[QUERY, SUBSCRIBE_QUERY]
    }
    fn check(&self, options: &Options) -> Result<(), String> {
        if options.binary {
            return Err("graphql-transport-ws messages are text: leave out --binary (a bytes:N payload is binary unless --text is given)".into());
        }
        if options.given.text(&SUBSCRIBE_QUERY).is_some_and(|query| query.trim().is_empty()) {
            return Err("--subscribe-query is empty: give the subscription a stream subscriber starts".into());
        }
        match options.given.text(&QUERY) {
            Some(query) if query.trim().is_empty() => {
                Err("--query is empty: give the operation an echo request starts".into())
            }
            _ => Ok(()),
        }
    }
    fn replies_echo(&self, options: &Options) -> bool {
        !options.given.given(&QUERY)
    }
    fn session(&self, setup: &Setup<'_>) -> Box<dyn Session> {
        let query = setup.fill(setup.options.given.text(&QUERY).unwrap_or(DEFAULT_QUERY)).into_owned();
        let stream_query =
            setup.options.given.text(&SUBSCRIBE_QUERY).map(|query| setup.fill(query).into_owned());
        Box::new(GraphqlWsSession {
            flow: setup.usage == Use::Messages,
            stream: setup.usage == Use::Stream,
            stream_query,
            query,
            ready: false,
            awaiting: VecDeque::new(),
            running: VecDeque::new(),
            encoding: Vec::new(),
            variables: Vec::new(),
            id: Vec::new(),
            decoded: Vec::new(),
            detail: String::new(),
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
}

impl Session for GraphqlWsSession {
    fn open(&mut self, _now: Instant, out: &mut dyn Outbox) {
        self.encoding.clear();
        graphql_ws::encode_connection_init(&mut self.encoding, None);
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

    fn subscribe(&mut self, _topic: &str, _out: &mut dyn Outbox) {}

    fn subscribe_stream(&mut self, out: &mut dyn Outbox) {
        let Some(query) = &self.stream_query else { return };
        let subscribe = Subscribe { query, variables: None, operation_name: None };
        self.encoding.clear();
        graphql_ws::encode_subscribe(&mut self.encoding, STREAM_ID, &subscribe);
        out.text(&self.encoding);
    }

    fn publish(&mut self, _topic: &str, _payload: &[u8], _out: &mut dyn Outbox) {}

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
            Message::Pong { .. } => sink.incoming(Incoming::Other),
            Message::ConnectionAck { .. } if !self.ready => {
                self.ready = true;
                sink.incoming(Incoming::Ready);
            }
            Message::Next { .. } | Message::Complete { .. } if self.ready && self.flow => {
                sink.incoming(Incoming::Message { payload: raw, error: None })
            }
            Message::Error { message, .. } if self.ready && self.flow => {
                sink.incoming(Incoming::Message { payload: raw, error: Some(("graphql_error", &message)) })
            }
            Message::Next { payload, .. } if self.ready && self.stream => on_stream_next(payload, sink),
            Message::Next { id, payload } if self.ready => self.on_next(&id, payload, sink),
            Message::Error { id, message, .. } if self.ready => {
                let seq = self.finish(&id);
                sink.incoming(Incoming::Error {
                    cause: "graphql_error",
                    detail: &message,
                    seq,
                    fatal: false,
                });
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
}

/// A result of a stream's subscription: a delivery, or the error it carries.
fn on_stream_next(payload: &str, sink: &mut dyn Sink) {
    match graphql_ws::execution_error(payload) {
        Some(message) => sink.incoming(Incoming::Error {
            cause: "graphql_error",
            detail: &message,
            seq: None,
            fatal: false,
        }),
        None => sink.incoming(Incoming::Delivery { topic: STREAM_ID, payload: payload.as_bytes() }),
    }
}

impl GraphqlWsSession {
    /// A result for operation `id`: the first is its request's reply (or its error), later
    /// ones are nothing the load asked for.
    fn on_next(&mut self, id: &str, payload: &str, sink: &mut dyn Sink) {
        let first = parse_u64(id.as_bytes()).filter(|seq| take(&mut self.awaiting, *seq));
        if let Some(seq) = first {
            self.running.push_back(seq);
            self.complete_beyond_limit(sink);
        }
        if let Some(message) = graphql_ws::execution_error(payload) {
            let error =
                Incoming::Error { cause: "graphql_error", detail: &message, seq: first, fatal: false };
            return sink.incoming(error);
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
