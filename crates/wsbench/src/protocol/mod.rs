//! The message protocols a connection speaks over WebSocket, one folder each behind one
//! interface ([`Protocol`], making a [`Session`] per connection) and the registry that
//! lists them ([`PROTOCOLS`]). A session is sans-I/O: it says what to send after the
//! upgrade and when it is ready, how a request, a subscription or a publish is wrapped, what
//! each message from the server is (a reply to a request, an acknowledged subscription, a
//! delivery on a topic, an error by its cause), and it answers the protocol's heartbeats on
//! the server's schedule. The engine drives it and the scenario's workload uses what it
//! reads; the wire formats themselves are `wsbench_appproto`'s. `raw` — messages as they
//! are, and the pub/sub JSON of docs/protocols.md — is the default. Adding a protocol is a
//! folder and a line in [`PROTOCOLS`] (docs/architecture.md says how).

pub mod actioncable;
pub mod centrifugo;
pub mod error_text;
pub mod graphql_ws;
pub mod jsonrpc;
pub mod mqtt;
pub mod nats;
pub mod pusher;
pub mod raw;
pub mod signalr;
pub mod socketio;
pub mod stomp;
#[cfg(test)]
mod stream_tests;
pub mod subscriptions;
pub mod template;

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::time::{Duration, Instant};

use crate::options::{OptionSpec, OptionValues, Secrets};

/// The protocol a run speaks when none is given.
pub const DEFAULT: &str = "raw";

/// Every protocol, by name.
pub static PROTOCOLS: &[&dyn Protocol] = &[
    &raw::Raw,
    &mqtt::Mqtt,
    &stomp::Stomp,
    &socketio::SocketIo,
    &jsonrpc::JsonRpc,
    &graphql_ws::GraphqlWs,
    &centrifugo::Centrifugo,
    &nats::Nats,
    &actioncable::ActionCable,
    &pusher::Pusher,
    &signalr::SignalR,
];

/// The protocol called `name`.
pub fn by_name(name: &str) -> Option<&'static dyn Protocol> {
    PROTOCOLS.iter().copied().find(|protocol| protocol.name() == name)
}

/// Every protocol's name, in the registry's order.
pub fn names() -> Vec<&'static str> {
    PROTOCOLS.iter().map(|protocol| protocol.name()).collect()
}

/// What a scenario asks of a protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    /// Requests, each answered by a reply (echo, throughput, c10k, churn).
    Requests,
    /// Subscriptions to topics, and publishes delivered to their subscribers (pubsub).
    PubSub,
    /// Messages the scenario writes itself, read back by the protocol (flow).
    Messages,
    /// A stream the server produces, subscribed to as the protocol's own options say
    /// ([`Session::subscribe_stream`]); each message of it is an [`Incoming::Delivery`]
    /// (stream).
    Stream,
}

/// The protocol's own options as the user gave them (those it declares, checked to be of
/// their kind; the protocol reads them into its typed settings), and the run's message kind.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Options {
    /// Each secret given as it is stands here as `<redacted>`.
    pub given: OptionValues,
    /// The secrets given, read before the run (never serialized).
    pub secrets: Secrets,
    /// The payload is binary (`--binary`, or a `bytes:N` payload without `--text`): Socket.IO
    /// sends it as an attachment; text-only protocols refuse it.
    pub binary: bool,
}

impl Options {
    /// Options with these values given (by TOML key), the payload text. The value of a key
    /// some protocol declares secret is kept with the secrets, as the settings' validation
    /// keeps it (`<redacted>` among the values given).
    pub fn with<'k>(given: impl IntoIterator<Item = (&'k str, toml::Value)>) -> Options {
        let mut values = BTreeMap::new();
        let mut secrets = Vec::new();
        for (key, value) in given {
            let secret = PROTOCOLS
                .iter()
                .flat_map(|protocol| protocol.options())
                .find(|spec| spec.key == key && matches!(spec.kind, crate::options::Kind::Secret { .. }));
            match (secret, value) {
                (Some(spec), toml::Value::String(text)) => {
                    secrets.push((spec.key, text));
                    values.insert(key.to_owned(), toml::Value::String(crate::options::REDACTED.to_owned()));
                }
                (_, value) => {
                    values.insert(key.to_owned(), value);
                }
            }
        }
        Options { given: OptionValues(values), secrets: Secrets::of(secrets), binary: false }
    }
}

impl serde::Serialize for Options {
    /// As result files record them: each option given under its key in snake_case, and
    /// `binary` when true.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in &self.given.0 {
            map.serialize_entry(&key.replace('-', "_"), value)?;
        }
        if self.binary {
            map.serialize_entry("binary", &true)?;
        }
        map.end()
    }
}

/// What a session is made with.
#[derive(Debug, Clone)]
pub struct Setup<'a> {
    /// The connection's number in the run (client ids, topics of its own).
    pub index: u64,
    /// The run's id (`--run-id`, the same in every shard): with `index`, names the
    /// connection uniquely among runs.
    pub run: &'a str,
    /// What the scenario uses the connection for.
    pub usage: Use,
    pub options: &'a Options,
    /// How long the session may take to become ready, and the connect timeout the run uses.
    pub open_timeout: Duration,
    /// `--data`: the table whose row `index mod rows` is this connection's, for the
    /// `{data.NAME}` in the protocol's templates (filled once, when the session is made).
    pub data: Option<&'a dyn DataRows>,
}

impl Setup<'_> {
    /// `template` with each `{data.NAME}` replaced by the connection's row's value.
    pub fn fill<'t>(&self, template: &'t str) -> std::borrow::Cow<'t, str> {
        match self.data {
            Some(data) => data.fill_row(template, self.index),
            None => std::borrow::Cow::Borrowed(template),
        }
    }
}

/// The run's `--data` rows as a protocol sees them: what fills a template's `{data.NAME}`
/// with connection `conn`'s row (row `conn mod rows`).
pub trait DataRows: Sync + Debug {
    fn fill_row<'t>(&self, template: &'t str, conn: u64) -> std::borrow::Cow<'t, str>;
}

/// A message protocol: its name, what it needs of the handshake, and a session for each
/// connection.
pub trait Protocol: Sync + Debug {
    fn name(&self) -> &'static str;
    /// One line for `--help` and the docs.
    fn about(&self) -> &'static str;
    /// Whether it can serve `usage`.
    fn serves(&self, usage: Use) -> bool;
    /// The subprotocols the opening handshake offers when the user gives none.
    fn subprotocols(&self) -> &'static [&'static str] {
        &[]
    }
    /// The path to request instead of the target's `given` one (path and query; empty when
    /// the URL names none, `ws://host:port`): the one a server of this protocol usually
    /// listens on when the target names none, or the query the protocol needs added. None:
    /// `given` as it is (`/` when empty). A path the user wrote, `/` too, is theirs.
    fn path(&self, _given: &str) -> Option<String> {
        None
    }
    /// [`Protocol::path`] for a protocol whose path holds one of its options (Pusher's
    /// `/app/<app key>`): the run asks this one, with the options given.
    fn path_for(&self, given: &str, _options: &Options) -> Option<String> {
        self.path(given)
    }
    /// Whether it needs a `--target` (the built-in server speaks `raw` alone).
    fn needs_target(&self) -> bool {
        true
    }
    /// The options it takes, declared here and collected by `crate::members` into the flags
    /// and scenario-file keys.
    fn options(&self) -> &'static [OptionSpec] {
        &[]
    }
    /// Checks the options it takes; a one-line reason when they are wrong.
    fn check(&self, _options: &Options) -> Result<(), String> {
        Ok(())
    }
    /// Whether a reply carries the request's payload back, so the workload checks it
    /// against what was sent; false when, with these `options`, a reply is the server's own
    /// answer (an operation of the user's), whose arrival alone is the round trip.
    fn replies_echo(&self, _options: &Options) -> bool {
        true
    }
    /// Connection `setup.index`'s side of the protocol.
    fn session(&self, setup: &Setup<'_>) -> Box<dyn Session>;
}

/// Where a session writes its messages: whole WebSocket messages, framed, masked (and
/// compressed when that was agreed) by whoever owns the connection.
pub trait Outbox {
    fn text(&mut self, payload: &[u8]);
    fn binary(&mut self, payload: &[u8]);
}

/// Where a session hands what it read, besides what it answers on the wire.
pub trait Sink: Outbox {
    fn incoming(&mut self, incoming: Incoming<'_>);
}

/// What a message from the server is, as its protocol reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Incoming<'m> {
    /// The session finished its own opening (CONNACK, connection_ack, the namespace
    /// joined): the load may start.
    Ready,
    /// The answer to a request (`seq`: which one, when the protocol says; the payload as
    /// it came back).
    Reply { seq: Option<u64>, payload: &'m [u8] },
    /// A subscription to `topic` was acknowledged.
    Subscribed { topic: &'m str },
    /// A message published to `topic` (empty when the message does not name it: then
    /// wsbench's marker in it tells), with what the publisher put in it, wherever in the
    /// message that sits; in a stream ([`Use::Stream`]), a message of the server's stream
    /// (`topic`: where it came from, when the protocol says), as the docs/protocols.md
    /// section on streams says for each protocol.
    Delivery { topic: &'m str, payload: &'m [u8] },
    /// The server's error: counted by its cause (`jsonrpc_error_-32601`, `mqtt_suback_failure`,
    /// `stomp_error`, …) with the server's own words kept once; `seq`: the request it answers
    /// (which is then no round trip); `fatal`: the connection cannot go on (it is closed).
    Error { cause: &'m str, detail: &'m str, seq: Option<u64>, fatal: bool },
    /// A message for a flow ([`Use::Messages`]), as it came; `error`: the protocol reads
    /// it as an error reply, by cause and the server's words (counted as an error, and no
    /// success for the flow's step it answers).
    Message { payload: &'m [u8], error: Option<(&'m str, &'m str)> },
    /// Nothing the load asked for (a heartbeat the session answered).
    Other,
}

/// One connection's side of a protocol. No I/O: what it sends goes to an [`Outbox`], what
/// it reads to a [`Sink`].
pub trait Session: Send + Debug {
    /// Messages are the workload's own, unread by the session: requests are the payload
    /// itself and replies its echo (checked as they stream).
    fn passthrough(&self) -> bool {
        false
    }
    /// After the upgrade: what the protocol sends first (CONNECT, connection_init, …).
    fn open(&mut self, _now: Instant, _out: &mut dyn Outbox) {}
    /// Whether the load may start (the protocol's own opening is done).
    fn ready(&self) -> bool {
        true
    }
    /// Wraps an echo request carrying `payload` (its reply correlates with `seq`).
    fn request(&mut self, seq: u64, payload: &[u8], out: &mut dyn Outbox);
    /// Subscribes to `topic`.
    fn subscribe(&mut self, topic: &str, out: &mut dyn Outbox);
    /// Subscribes to the stream the server produces ([`Use::Stream`]), as the protocol's own
    /// options name it (a topic filter, a subscribe call, …); nothing for a server that
    /// streams to every connection on its own.
    fn subscribe_stream(&mut self, _out: &mut dyn Outbox) {}
    /// Publishes `payload` (a JSON object) to `topic`.
    fn publish(&mut self, topic: &str, payload: &[u8], out: &mut dyn Outbox);
    /// A whole message from the server (`binary`: a binary message): what it is goes to
    /// `sink`, one item per protocol message it holds.
    fn receive(&mut self, message: &[u8], binary: bool, now: Instant, sink: &mut dyn Sink);
    /// When the session must act on its own next (a heartbeat to send or to have had).
    fn next_timer(&self) -> Option<Instant> {
        None
    }
    /// That time came: a heartbeat sent, or one missed (an error to `sink`).
    fn on_timer(&mut self, _now: Instant, _sink: &mut dyn Sink) {}
    /// Publishes sent that the server has not acknowledged yet, the latest sent (a protocol
    /// whose server acknowledges them: MQTT at QoS 1 and 2). Lost with the connection, they
    /// were never taken: not published.
    fn unacknowledged_publishes(&self) -> u64 {
        0
    }
    /// The run ends: what the protocol sends before the close (DISCONNECT).
    fn close(&mut self, _out: &mut dyn Outbox) {}
    /// The server ended the connection before the session was ready (`close`: the code and
    /// reason of its close frame; `None`: the connection just ended). The session may say
    /// why, as far as its protocol can tell, with an error to `sink` (the engine counts the
    /// close itself too).
    fn ended_while_opening(&mut self, _close: Option<(u16, &str)>, _sink: &mut dyn Sink) {}
}

/// What protocol tests share: a session's setup, and an outbox and sink that keep what they
/// were handed.
#[cfg(test)]
pub(crate) mod tests {
    use std::time::Duration;

    use super::{Incoming, Options, Outbox, Setup, Sink, Use};

    /// Connection 0's setup for `usage`.
    pub fn setup(usage: Use, options: &Options) -> Setup<'_> {
        Setup { index: 0, run: "r1", usage, options, open_timeout: Duration::from_secs(5), data: None }
    }

    /// Everything a session sent and said.
    #[derive(Debug, Default)]
    pub struct Heard {
        /// Messages sent: whether text, and the payload.
        pub sent: Vec<(bool, Vec<u8>)>,
        pub ready: usize,
        pub replies: Vec<(Option<u64>, Vec<u8>)>,
        pub subscribed: Vec<String>,
        pub deliveries: Vec<(String, Vec<u8>)>,
        /// cause, detail, seq, fatal.
        pub errors: Vec<(String, String, Option<u64>, bool)>,
        /// Flow messages, and the error cause of those that are error replies.
        pub messages: Vec<(Vec<u8>, Option<String>)>,
        pub other: usize,
    }

    impl Heard {
        /// Sent message `at`, a text message.
        pub fn sent_text(&self, at: usize) -> String {
            let (text, payload) = &self.sent[at];
            assert!(*text, "message {at} was sent as binary");
            String::from_utf8(payload.clone()).unwrap()
        }
    }

    impl Outbox for Heard {
        fn text(&mut self, payload: &[u8]) {
            self.sent.push((true, payload.to_vec()));
        }
        fn binary(&mut self, payload: &[u8]) {
            self.sent.push((false, payload.to_vec()));
        }
    }

    impl Sink for Heard {
        fn incoming(&mut self, incoming: Incoming<'_>) {
            match incoming {
                Incoming::Ready => self.ready += 1,
                Incoming::Reply { seq, payload } => self.replies.push((seq, payload.to_vec())),
                Incoming::Subscribed { topic } => self.subscribed.push(topic.to_owned()),
                Incoming::Delivery { topic, payload } => {
                    self.deliveries.push((topic.to_owned(), payload.to_vec()))
                }
                Incoming::Error { cause, detail, seq, fatal } => {
                    self.errors.push((cause.to_owned(), detail.to_owned(), seq, fatal))
                }
                Incoming::Message { payload, error } => {
                    self.messages.push((payload.to_vec(), error.map(|(cause, _)| cause.to_owned())))
                }
                Incoming::Other => self.other += 1,
            }
        }
    }
}
