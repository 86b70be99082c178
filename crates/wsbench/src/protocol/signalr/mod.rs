//! `signalr`: ASP.NET Core SignalR's JSON hub protocol over WebSockets, as the official
//! clients speak it: the negotiate POST first (`{hub}/negotiate?negotiateVersion=1`, on the
//! connection the WebSocket then takes, `negotiate.rs`), or with `--skip-negotiate` the
//! WebSocket straight to the hub's URL (`/hub` when the target names no path), as with the
//! clients' `skipNegotiation`; then the handshake `{"protocol":"json","version":1}` and its
//! answer, then hub invocations.
//!
//! An echo request invokes `--hub-method` (`Echo`) with the payload as its one argument and
//! an invocation id (the request's number); its reply is the completion with that id, whose
//! `result` is compared with what was sent. Pub/sub: a subscriber invokes `--join-method`
//! (`Join`) with the topic's name and is subscribed when that completes; a publish invokes
//! `--publish-method` (`Publish`) with the topic and the payload; what the hub sends the
//! group is an invocation of `--client-method` (`message`) on each member, a delivery.
//!
//! A stream (`wsbench run stream`) invokes `--stream-method` with `--stream-arguments` as a
//! stream invocation (type 4, invocation id `s1`) once the handshake is answered: each of its
//! stream items is a delivery, the item; its completion ends it (with an error,
//! `signalr_stream_error`); at the end of the run it is cancelled (type 5). Without
//! `--stream-method`, the hub's invocations of `--client-method` are the stream.
//!
//! Errors by cause: the negotiate's (`signalr_negotiate_*`, failed handshakes; see
//! `negotiate.rs`), a refused handshake `signalr_handshake_error`, a completion with an
//! error `signalr_completion_error` (a subscriber's join refused: its subscription lapses),
//! the server's close message `signalr_close_error` (with its error) or `signalr_closed`,
//! the connection ended before the handshake's answer `signalr_no_handshake`. Pings go
//! both ways: the client pings after [`KEEP_ALIVE_SECS`] without sending, and a server
//! silent for [`SERVER_TIMEOUT_SECS`] is given up as `signalr_server_timeout`, as the
//! official clients do. The wire format is `wsbench_appproto::signalr`'s; the session lives
//! in `session.rs`.

mod negotiate;
mod session;

use wsbench_appproto::signalr::PATH;
pub use wsbench_appproto::signalr::{KEEP_ALIVE_SECS, SERVER_TIMEOUT_SECS};

use super::preflight::Preflight;
use super::{Options, Protocol, Session, Setup, Use};
use crate::options::{Kind, OptionSpec};
use session::{Codec, Methods, SignalRSession};

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

/// `--stream-method`.
pub const STREAM_METHOD: OptionSpec = OptionSpec {
    flag: "stream-method",
    key: "stream-method",
    kind: Kind::Text,
    value_name: "NAME",
    default: "none: the hub's invocations of --client-method are the stream",
    bound: "a method name",
    help: "the streaming hub method a subscriber invokes (a stream invocation); each stream item is a delivery",
    scenarios: &["stream"],
};

/// `--stream-arguments`.
pub const STREAM_ARGUMENTS: OptionSpec = OptionSpec {
    flag: "stream-arguments",
    key: "stream-arguments",
    kind: Kind::Text,
    value_name: "JSON",
    default: "[]",
    bound: "a JSON array, at most 65,536 bytes",
    help: "the arguments of --stream-method ('[0, 100]')",
    scenarios: &["stream"],
};

/// The longest `--stream-arguments`.
const MAX_STREAM_ARGUMENTS: usize = 65_536;

/// `--hub-protocol`.
pub const HUB_PROTOCOL: OptionSpec = OptionSpec {
    flag: "hub-protocol",
    key: "hub-protocol",
    kind: Kind::Text,
    value_name: "NAME",
    default: "json",
    bound: "json or messagepack",
    help: "the hub protocol after the handshake: JSON text frames, or MessagePack binary frames",
    scenarios: &[],
};

/// `--skip-negotiate`.
pub const SKIP_NEGOTIATE: OptionSpec = OptionSpec {
    flag: "skip-negotiate",
    key: "skip-negotiate",
    kind: Kind::Switch,
    value_name: "",
    default: "off: each connection negotiates first, as the official clients do",
    bound: "",
    help: "open the WebSocket straight at the hub's URL without the negotiate POST (the official clients' skipNegotiation)",
    scenarios: &[],
};

#[derive(Debug)]
pub struct SignalR;

impl Protocol for SignalR {
    fn name(&self) -> &'static str {
        "signalr"
    }
    fn about(&self) -> &'static str {
        "ASP.NET Core SignalR's JSON or MessagePack hub protocol, after the negotiate POST: an echo invokes --hub-method and its completion is the reply; pub/sub joins a group with --join-method and publishes with --publish-method; a stream invokes --stream-method"
    }
    fn serves(&self, usage: Use) -> bool {
        matches!(usage, Use::Requests | Use::PubSub | Use::Stream)
    }
    fn path(&self, given: &str) -> Option<String> {
        (given.is_empty() || given == "/").then(|| PATH.to_owned())
    }
    fn options(&self) -> &'static [OptionSpec] {
        &[
            HUB_METHOD,
            JOIN_METHOD,
            PUBLISH_METHOD,
            CLIENT_METHOD,
            STREAM_METHOD,
            STREAM_ARGUMENTS,
            HUB_PROTOCOL,
            SKIP_NEGOTIATE,
        ]
    }
    fn check(&self, options: &Options) -> Result<(), String> {
        let codec = codec(options)?;
        if options.binary && codec == Codec::Json {
            return Err("SignalR's JSON hub protocol is text: leave out --binary (a bytes:N payload is binary unless --text is given), or give --hub-protocol messagepack".into());
        }
        for spec in [&HUB_METHOD, &JOIN_METHOD, &PUBLISH_METHOD, &CLIENT_METHOD, &STREAM_METHOD] {
            if let Some(name) = options.given.text(spec) {
                check_name(spec.flag, name)?;
            }
        }
        check_stream_arguments(options)
    }
    fn session(&self, setup: &Setup<'_>) -> Box<dyn Session> {
        let given = &setup.options.given;
        let fill =
            |spec: &OptionSpec, default: &str| setup.fill(given.text(spec).unwrap_or(default)).into_owned();
        let stream = given.text(&STREAM_METHOD).map(|method| {
            let arguments = setup.fill(given.text(&STREAM_ARGUMENTS).unwrap_or("[]")).into_owned();
            (setup.fill(method).into_owned(), arguments.into_bytes())
        });
        let methods = Methods {
            echo: fill(&HUB_METHOD, DEFAULT_HUB_METHOD),
            join: fill(&JOIN_METHOD, DEFAULT_JOIN_METHOD),
            publish: fill(&PUBLISH_METHOD, DEFAULT_PUBLISH_METHOD),
            client: fill(&CLIENT_METHOD, DEFAULT_CLIENT_METHOD),
            stream,
        };
        let codec = codec(setup.options).unwrap_or(Codec::Json);
        Box::new(SignalRSession::new(setup.usage, codec, setup.options.binary, methods, setup.open_timeout))
    }
    fn preflight(&self, setup: &Setup<'_>) -> Option<Box<dyn Preflight>> {
        let skip = setup.options.given.switch(&SKIP_NEGOTIATE);
        let format = match codec(setup.options) {
            Ok(Codec::MessagePack) => "Binary",
            _ => "Text",
        };
        (!skip).then(|| Box::new(negotiate::Negotiate::new(format)) as Box<dyn Preflight>)
    }
}

/// `--hub-protocol`: the codec it names.
fn codec(options: &Options) -> Result<Codec, String> {
    match options.given.text(&HUB_PROTOCOL) {
        None | Some("json") => Ok(Codec::Json),
        Some("messagepack") => Ok(Codec::MessagePack),
        Some(other) => Err(format!("--hub-protocol {other:?}: give json or messagepack")),
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

/// `--stream-arguments`: a JSON array (`{data.NAME}` read as 0), given with `--stream-method`.
fn check_stream_arguments(options: &Options) -> Result<(), String> {
    let Some(arguments) = options.given.text(&STREAM_ARGUMENTS) else { return Ok(()) };
    if options.given.text(&STREAM_METHOD).is_none() {
        return Err(
            "--stream-arguments without --stream-method: give the streaming method they are for".into()
        );
    }
    if arguments.len() > MAX_STREAM_ARGUMENTS {
        return Err(format!(
            "--stream-arguments is {} bytes: at most {MAX_STREAM_ARGUMENTS}",
            arguments.len()
        ));
    }
    match super::template::sample_json(arguments, &[], &[]) {
        Ok(value) if value.is_array() => Ok(()),
        _ => Err(format!("--stream-arguments {arguments}: give a JSON array (e.g. '[0, 100]')")),
    }
}

#[cfg(test)]
mod tests;
