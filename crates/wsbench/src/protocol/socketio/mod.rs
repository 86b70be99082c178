//! `socketio`: Socket.IO 5 over Engine.IO 4, as socket.io 4.x serves it on the `websocket`
//! transport (no polling, no subprotocol). The path is `/socket.io/?EIO=4&transport=websocket`
//! when the target names none, and a given path gets the `EIO`/`transport` query it lacks.
//!
//! The opening is the server's Engine.IO open packet (its heartbeat schedule kept), then the
//! namespace `/` joined (`40` answered by `40{"sid":…}`). An echo request is
//! `emit(--event, payload)` with an acknowledgement numbered by the request, the payload a JSON
//! string, or a binary attachment with `--binary` (and whenever it is not UTF-8); the ack
//! carries the payload back. Pub/sub is rooms, as docs/peers.md's peer serves them:
//! `emit("subscribe", topic)` with an ack, `emit("publish", {topic, payload})`, and deliveries
//! as the event `message` with that object. The server pings and the session answers at once;
//! a ping that does not come within pingInterval + pingTimeout, the server's close, a refused
//! namespace or a server that does not speak Engine.IO end the connection with an error by
//! its cause. The wire format is `wsbench_appproto::socketio`'s; this folder never does I/O.

mod session;
#[cfg(test)]
mod tests;

use wsbench_appproto::socketio::WEBSOCKET_PATH;

use super::{Options, Protocol, Session, Setup, Use};
use crate::options::{Kind, OptionSpec};

/// The event an echo request is emitted as when `--event` is not given.
pub const DEFAULT_EVENT: &str = "echo";

/// `--event`.
pub const EVENT: OptionSpec = OptionSpec {
    flag: "event",
    key: "event",
    kind: Kind::Text,
    value_name: "EVENT",
    default: DEFAULT_EVENT,
    bound: "not empty",
    help: "the event an echo request is emitted as",
    scenarios: &[],
};

/// The event a stream's deliveries come as when `--stream-event` is not given (what
/// `socket.send()` emits).
pub const DEFAULT_STREAM_EVENT: &str = "message";

/// `--stream-event`.
pub const STREAM_EVENT: OptionSpec = OptionSpec {
    flag: "stream-event",
    key: "stream-event",
    kind: Kind::Text,
    value_name: "EVENT",
    default: DEFAULT_STREAM_EVENT,
    bound: "not empty",
    help: "the event a stream's server emits: each one is a delivery (its arguments as a JSON array)",
    scenarios: &["stream"],
};

/// `--subscribe-emit`.
pub const SUBSCRIBE_EMIT: OptionSpec = OptionSpec {
    flag: "subscribe-emit",
    key: "subscribe-emit",
    kind: Kind::Text,
    value_name: "JSON",
    default: "none (the server emits on connect)",
    bound: "a JSON array: the event's name, then its arguments",
    help: "what a stream subscriber emits once joined, e.g. '[\"subscribe\",\"ticks\"]'",
    scenarios: &["stream"],
};

#[derive(Debug)]
pub struct SocketIo;

impl Protocol for SocketIo {
    fn name(&self) -> &'static str {
        "socketio"
    }
    fn about(&self) -> &'static str {
        "Socket.IO 4 (Engine.IO 4): an echo is an emit of --event (default echo) answered by its \
         ack; pub/sub is rooms (subscribe, publish, message)"
    }
    fn serves(&self, usage: Use) -> bool {
        matches!(usage, Use::Requests | Use::PubSub | Use::Stream)
    }
    fn path(&self, given: &str) -> Option<String> {
        let path = websocket_path(given);
        (path != given).then_some(path)
    }
    fn options(&self) -> &'static [OptionSpec] {
        &[EVENT, STREAM_EVENT, SUBSCRIBE_EMIT]
    }
    fn check(&self, options: &Options) -> Result<(), String> {
        if options.given.text(&STREAM_EVENT) == Some("") {
            return Err("--stream-event is empty: give the event the server emits".into());
        }
        if let Some(given) = options.given.text(&SUBSCRIBE_EMIT) {
            subscribe_emit(given)?;
        }
        match options.given.text(&EVENT) {
            Some("") => Err("--event is empty: give the event an echo request is emitted as".into()),
            _ => Ok(()),
        }
    }
    fn session(&self, setup: &Setup<'_>) -> Box<dyn Session> {
        Box::new(session::SocketIoSession::new(setup))
    }
}

/// `--subscribe-emit`: the event's name and each argument as JSON text.
pub(crate) fn subscribe_emit(given: &str) -> Result<(String, Vec<String>), String> {
    let refused =
        || format!("--subscribe-emit {given}: give a JSON array, the event's name then its arguments");
    let Ok(serde_json::Value::Array(items)) = serde_json::from_str::<serde_json::Value>(given) else {
        return Err(refused());
    };
    match items.split_first() {
        Some((serde_json::Value::String(event), args)) if !event.is_empty() => {
            Ok((event.clone(), args.iter().map(|arg| arg.to_string()).collect()))
        }
        _ => Err(refused()),
    }
}

/// The path and query a Socket.IO client opens for the target's `given` one: socket.io's own
/// when `given` is `/`, else `given` with `EIO=4` and `transport=websocket` added when its
/// query lacks them (the user's path and query are kept).
fn websocket_path(given: &str) -> String {
    if given.is_empty() || given == "/" {
        return WEBSOCKET_PATH.to_owned();
    }
    let query = given.split_once('?').map_or("", |(_, query)| query);
    let has = |key: &str| query.split('&').any(|pair| pair.split('=').next() == Some(key));
    let mut path = given.to_owned();
    for (key, pair) in [("EIO", "EIO=4"), ("transport", "transport=websocket")] {
        if !has(key) {
            if !path.contains('?') {
                path.push('?');
            } else if !path.ends_with(['?', '&']) {
                path.push('&');
            }
            path.push_str(pair);
        }
    }
    path
}
