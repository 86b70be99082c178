//! `socketio`: Socket.IO 5 over Engine.IO 4, as socket.io 4.x serves it on the `websocket`
//! transport (no polling, no subprotocol). The path is `/socket.io/?EIO=4&transport=websocket`
//! when the target names none, and a given path gets the `EIO`/`transport` query it lacks.
//!
//! The opening is the server's Engine.IO open packet (its heartbeat schedule kept), then the
//! namespace (`--namespace`, default `/`) joined with CONNECT, carrying `--auth` when given
//! (`40/chat,{"token":…}` answered by `40/chat,{"sid":…}`; a refusal, `44`, is an error with
//! the server's message). The URL's path is the Engine.IO path, never the namespace. An echo
//! request is `emit(--event, payload)` in the namespace with an acknowledgement numbered by
//! the request, the payload a JSON string, or a binary attachment with `--binary` (and
//! whenever it is not UTF-8); the ack carries the payload back. Pub/sub is rooms: the
//! subscribe event (`--subscribe-event`, arguments `--subscribe-args`) with an ack, the
//! publish event (`--publish-event`, `--publish-args` with `{payload}` where wsbench's object
//! goes), and deliveries as the delivery event (`--delivery-event`) in whatever shape the
//! application emits them: the pub/sub scenario finds its marker in the arguments. The
//! defaults are the rooms of docs/peers.md's peer. The server pings and the session answers
//! at once; a ping that does not come within pingInterval + pingTimeout, the server's
//! close, a refused namespace, a server that closes right after the join (another parser,
//! such as msgpack) or a server that does not speak Engine.IO end the connection with an
//! error by its cause. The wire format is `wsbench_appproto::socketio`'s; this folder never
//! does I/O.

mod session;
mod settings;
#[cfg(test)]
mod tests;

use wsbench_appproto::socketio::WEBSOCKET_PATH;

use super::{Options, Protocol, Session, Setup, Use};
use crate::options::OptionSpec;

pub use settings::{
    AUTH, DEFAULT_EVENT, DEFAULT_STREAM_EVENT, DELIVERY_EVENT, EVENT, NAMESPACE, PUBLISH_ARGS, PUBLISH_EVENT,
    STREAM_EVENT, SUBSCRIBE_ARGS, SUBSCRIBE_EMIT, SUBSCRIBE_EVENT,
};

#[derive(Debug)]
pub struct SocketIo;

impl Protocol for SocketIo {
    fn name(&self) -> &'static str {
        "socketio"
    }
    fn about(&self) -> &'static str {
        "Socket.IO 4 (Engine.IO 4): an echo is an emit of --event answered by its \
         ack, in --namespace (with --auth); pub/sub is rooms (events and arguments as given)"
    }
    fn serves(&self, usage: Use) -> bool {
        matches!(usage, Use::Requests | Use::PubSub | Use::Stream)
    }
    fn path(&self, given: &str) -> Option<String> {
        let path = websocket_path(given);
        (path != given).then_some(path)
    }
    fn options(&self) -> &'static [OptionSpec] {
        &settings::OPTIONS
    }
    fn check(&self, options: &Options) -> Result<(), String> {
        settings::check(options)
    }
    fn session(&self, setup: &Setup<'_>) -> Box<dyn Session> {
        Box::new(session::SocketIoSession::new(setup))
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
