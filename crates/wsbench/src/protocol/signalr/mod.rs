//! `signalr`: ASP.NET Core SignalR's JSON hub protocol over WebSockets, as the official
//! clients speak it with `skipNegotiation` (the WebSocket straight to the hub's URL, `/hub`
//! when the target names no path): the handshake `{"protocol":"json","version":1}` and its
//! answer, then hub invocations. The negotiate POST (which finds the transport and a
//! connection token) is not made: the engine opens the WebSocket itself, and every SignalR
//! server accepts a WebSocket without it unless it runs behind Azure SignalR Service.
//!
//! An echo request invokes `--hub-method` (`Echo`) with the payload as its one argument and
//! an invocation id (the request's number); its reply is the completion with that id, whose
//! `result` is compared with what was sent. Pub/sub: a subscriber invokes `--join-method`
//! (`Join`) with the topic's name and is subscribed when that completes; a publish invokes
//! `--publish-method` (`Publish`) with the topic and the payload; what the hub sends the
//! group is an invocation of `--client-method` (`message`) on each member, a delivery.
//!
//! Errors by cause: a refused handshake `signalr_handshake_error`, a completion with an
//! error `signalr_completion_error` (a subscriber's join refused: its subscription lapses),
//! the server's close message `signalr_close_error` (with its error) or `signalr_closed`,
//! the connection ended before the handshake's answer `signalr_no_handshake`. Pings go
//! both ways: the client pings after [`KEEP_ALIVE_SECS`] without sending, and a server
//! silent for [`SERVER_TIMEOUT_SECS`] is given up as `signalr_server_timeout`, as the
//! official clients do. The wire format is `wsbench_appproto::signalr`'s; the session lives
//! in `session.rs`.

mod session;

use wsbench_appproto::signalr::PATH;
pub use wsbench_appproto::signalr::{KEEP_ALIVE_SECS, SERVER_TIMEOUT_SECS};

use super::{Options, Protocol, Session, Setup, Use};
use crate::options::{Kind, OptionSpec};
use session::{Methods, SignalRSession};

/// The echo's hub method when `--hub-method` is not given.
pub const DEFAULT_HUB_METHOD: &str = "Echo";
/// The subscribers' hub method when `--join-method` is not given.
pub const DEFAULT_JOIN_METHOD: &str = "Join";
/// The publishers' hub method when `--publish-method` is not given.
pub const DEFAULT_PUBLISH_METHOD: &str = "Publish";
/// The client method a group's message invokes when `--client-method` is not given.
pub const DEFAULT_CLIENT_METHOD: &str = "message";

/// `--hub-method`.
pub const HUB_METHOD: OptionSpec = OptionSpec {
    flag: "hub-method",
    key: "hub-method",
    kind: Kind::Text,
    value_name: "NAME",
    default: DEFAULT_HUB_METHOD,
    bound: "a method name",
    help: "the hub method an echo request invokes with the payload; its completion's result is the reply",
    scenarios: &["echo", "throughput", "c10k", "churn"],
};

/// `--join-method`.
pub const JOIN_METHOD: OptionSpec = OptionSpec {
    flag: "join-method",
    key: "join-method",
    kind: Kind::Text,
    value_name: "NAME",
    default: DEFAULT_JOIN_METHOD,
    bound: "a method name",
    help: "the hub method a subscriber invokes with the topic's name to join its group",
    scenarios: &["pubsub"],
};

/// `--publish-method`.
pub const PUBLISH_METHOD: OptionSpec = OptionSpec {
    flag: "publish-method",
    key: "publish-method",
    kind: Kind::Text,
    value_name: "NAME",
    default: DEFAULT_PUBLISH_METHOD,
    bound: "a method name",
    help: "the hub method a publish invokes with the topic's name and the payload",
    scenarios: &["pubsub"],
};

/// `--client-method`.
pub const CLIENT_METHOD: OptionSpec = OptionSpec {
    flag: "client-method",
    key: "client-method",
    kind: Kind::Text,
    value_name: "NAME",
    default: DEFAULT_CLIENT_METHOD,
    bound: "a method name",
    help: "the client method the hub invokes on a group's members with a publish (compared ignoring case, as the official clients do)",
    scenarios: &["pubsub"],
};

#[derive(Debug)]
pub struct SignalR;

impl Protocol for SignalR {
    fn name(&self) -> &'static str {
        "signalr"
    }
    fn about(&self) -> &'static str {
        "ASP.NET Core SignalR's JSON hub protocol: an echo invokes --hub-method and its completion is the reply; pub/sub joins a group with --join-method and publishes with --publish-method"
    }
    fn serves(&self, usage: Use) -> bool {
        matches!(usage, Use::Requests | Use::PubSub)
    }
    fn path(&self, given: &str) -> Option<String> {
        (given.is_empty() || given == "/").then(|| PATH.to_owned())
    }
    fn options(&self) -> &'static [OptionSpec] {
        &[HUB_METHOD, JOIN_METHOD, PUBLISH_METHOD, CLIENT_METHOD]
    }
    fn check(&self, options: &Options) -> Result<(), String> {
        if options.binary {
            return Err("SignalR's JSON hub protocol is text: leave out --binary (a bytes:N payload is binary unless --text is given)".into());
        }
        for spec in [&HUB_METHOD, &JOIN_METHOD, &PUBLISH_METHOD, &CLIENT_METHOD] {
            if let Some(name) = options.given.text(spec) {
                check_name(spec.flag, name)?;
            }
        }
        Ok(())
    }
    fn session(&self, setup: &Setup<'_>) -> Box<dyn Session> {
        let given = &setup.options.given;
        let fill =
            |spec: &OptionSpec, default: &str| setup.fill(given.text(spec).unwrap_or(default)).into_owned();
        let methods = Methods {
            echo: fill(&HUB_METHOD, DEFAULT_HUB_METHOD),
            join: fill(&JOIN_METHOD, DEFAULT_JOIN_METHOD),
            publish: fill(&PUBLISH_METHOD, DEFAULT_PUBLISH_METHOD),
            client: fill(&CLIENT_METHOD, DEFAULT_CLIENT_METHOD),
        };
        Box::new(SignalRSession::new(setup.usage, methods, setup.open_timeout))
    }
}

/// A hub or client method: a name, not empty, without spaces, quotes or control characters.
fn check_name(flag: &str, name: &str) -> Result<(), String> {
    if name.is_empty() || name.chars().any(|c| c.is_whitespace() || c.is_control() || c == '"') {
        return Err(format!(
            "--{flag} {name:?}: give a method name without spaces or quotes (e.g. SendMessage)"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
