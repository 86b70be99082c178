//! The message protocols a connection speaks over WebSocket, one folder each behind one
//! interface ([`Protocol`], making a [`Session`] per connection) and the registry that
//! lists them ([`PROTOCOLS`]). A session is sans-I/O: it says what to send after the
//! upgrade, how a request or a publish is wrapped, and what a whole message from the server
//! is (a reply to a request, an acknowledged subscription, a delivery on a topic, a
//! heartbeat it answered, an error by its cause); the scenario's workload writes and
//! records. `raw` — echoes of the payload itself, and the pub/sub JSON of
//! docs/protocols.md — is the first member. Adding a protocol is a folder and a line in
//! [`PROTOCOLS`] (docs/architecture.md says how).

pub mod raw;

use std::fmt::Debug;

/// Every protocol, by name.
pub static PROTOCOLS: &[&dyn Protocol] = &[&raw::Raw];

/// The protocol called `name`.
pub fn by_name(name: &str) -> Option<&'static dyn Protocol> {
    PROTOCOLS.iter().copied().find(|protocol| protocol.name() == name)
}

/// A message protocol: its name, and a session for each connection.
pub trait Protocol: Sync + Debug {
    fn name(&self) -> &'static str;
    /// Connection `index`'s side of the protocol.
    fn session(&self, index: u64) -> Box<dyn Session>;
}

/// Where a session writes its messages: whole WebSocket messages, framed, masked (and
/// compressed when that was agreed) by whoever owns the connection.
pub trait Outbox {
    fn text(&mut self, payload: &[u8]);
    fn binary(&mut self, payload: &[u8]);
}

/// What a whole message from the server is, as its protocol reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Incoming<'m> {
    /// The answer to a request (`seq`: which one, when the protocol says).
    Reply { seq: Option<u64>, payload: &'m [u8] },
    /// A subscription to `topic` was acknowledged.
    Subscribed { topic: &'m str },
    /// A message published to `topic`, with what the publisher put in it.
    Delivery { topic: &'m str, payload: &'m [u8] },
    /// Nothing the load asked for (the session may have answered it: a heartbeat).
    Other,
}

/// One connection's side of a protocol. No I/O: what it sends goes to an [`Outbox`].
pub trait Session: Send + Debug {
    /// Requests are the payload itself and replies are its echo, checked as they stream
    /// (the workload may pre-encode its messages and skip [`Session::request`]).
    fn passthrough(&self) -> bool {
        false
    }
    /// Wraps an echo request carrying `payload` (its reply correlates with `seq`).
    fn request(&mut self, seq: u64, payload: &[u8], out: &mut dyn Outbox);
    /// Subscribes to `topic`.
    fn subscribe(&mut self, topic: &str, out: &mut dyn Outbox);
    /// Publishes `payload` (a JSON object) to `topic`.
    fn publish(&mut self, topic: &str, payload: &[u8], out: &mut dyn Outbox);
    /// What a whole message from the server is.
    fn receive<'m>(&mut self, message: &'m [u8], out: &mut dyn Outbox) -> Incoming<'m>;
}
