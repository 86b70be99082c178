//! `stomp`: STOMP 1.2 over WebSocket, as RabbitMQ's web-stomp plugin serves it (subprotocol
//! `v12.stomp`; the path is the user's, `/ws` for RabbitMQ). A connection opens with
//! CONNECT (virtual host `--vhost`, default `/`, as its host header; `--login` and
//! `--passcode`, default `guest`/`guest`; heart-beats of
//! `--heartbeat`, default 10 s each way) answered by CONNECTED. For echo it then subscribes
//! to a destination of its own, `/topic/wsbench-echo-PID-INDEX`, and is ready on the
//! subscription's RECEIPT: a request is a SEND there with the payload as its body, and its
//! reply the MESSAGE that comes back. For pub/sub topic `tK` is the destination
//! `--destination` names with K for `{topic}` (default `/topic/t{topic}`, so `/topic/tK`;
//! `/queue/q{topic}` or `/exchange/NAME/…` take RabbitMQ's other destinations): a
//! subscription is acknowledged by its RECEIPT, a publish is a SEND, a delivery a MESSAGE. A
//! stream subscribes to `--subscribe-destination` (default `/topic/#`: every routing key of
//! RabbitMQ's amq.topic) and every MESSAGE of it is a delivery, its body. An ERROR frame
//! ends the connection (`stomp_error`, with its `message`); so does a server silent for
//! twice its heart-beat interval, or anything that is not STOMP. The session is in
//! `session.rs`, the heart-beat clock in `heartbeat.rs`; the frames are
//! `wsbench_appproto::stomp`'s.

mod heartbeat;
mod session;

use std::time::Duration;

use super::{Options, Protocol, Session, Setup, Use};
use crate::options::{Kind, OptionSpec};
use session::StompSession;

/// `--heartbeat`.
pub const HEARTBEAT: OptionSpec = OptionSpec {
    flag: "heartbeat",
    key: "heartbeat",
    kind: Kind::Text,
    value_name: "DURATION",
    default: "10s",
    bound: "0s (none) or 1ms to 49 days",
    help: "the interval heart-beats are asked to flow at, both ways",
    scenarios: &[],
};

/// The pub/sub destination template when `--destination` is not given.
pub const DEFAULT_DESTINATION: &str = "/topic/t{topic}";
/// What `--destination` replaces with the topic's number.
pub const TOPIC_PLACEHOLDER: &str = "{topic}";

/// `--destination`.
pub const DESTINATION: OptionSpec = OptionSpec {
    flag: "destination",
    key: "destination",
    kind: Kind::Text,
    value_name: "TEMPLATE",
    default: DEFAULT_DESTINATION,
    bound: "{topic} once, one line",
    help: "the destination of pub/sub topic K, {topic} standing for K (e.g. /queue/q{topic})",
    scenarios: &["pubsub"],
};

/// The destination a stream subscribes to when `--subscribe-destination` is not given.
pub const DEFAULT_STREAM_DESTINATION: &str = "/topic/#";

/// `--subscribe-destination`.
pub const SUBSCRIBE_DESTINATION: OptionSpec = OptionSpec {
    flag: "subscribe-destination",
    key: "subscribe-destination",
    kind: Kind::Text,
    value_name: "DESTINATION",
    default: DEFAULT_STREAM_DESTINATION,
    bound: "not empty, one line",
    help: "the destination a stream subscriber subscribes to (e.g. /exchange/feed/ticks, /queue/q)",
    scenarios: &["stream"],
};

/// `--vhost`.
pub const VHOST: OptionSpec = OptionSpec {
    flag: "vhost",
    key: "vhost",
    kind: Kind::Text,
    value_name: "VHOST",
    default: DEFAULT_VHOST,
    bound: "not empty, one line",
    help: "the virtual host CONNECT names, its host header",
    scenarios: &[],
};

/// `--login`.
pub const LOGIN: OptionSpec = OptionSpec {
    flag: "login",
    key: "login",
    kind: Kind::Text,
    value_name: "USER",
    default: DEFAULT_LOGIN,
    bound: "one line, up to 4,096 bytes",
    help: "the user CONNECT logs in as ({data.NAME} filled in per connection)",
    scenarios: &[],
};

/// `--passcode`, or `--passcode-env VAR`: a secret, never written.
pub const PASSCODE: OptionSpec = OptionSpec {
    flag: "passcode",
    key: "passcode",
    kind: Kind::Secret { env: "passcode-env" },
    value_name: "PASSCODE",
    default: DEFAULT_PASSCODE,
    bound: "one line, up to 4,096 bytes; none sent with --login alone",
    help: "the passcode CONNECT gives (a secret: shown as <redacted>)",
    scenarios: &[],
};

/// The longest login or passcode taken: far more than any broker's, far less than a frame.
const MAX_CREDENTIAL: usize = 4096;

/// The heart-beat interval asked for each way when `--heartbeat` is not given.
pub const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(10);
/// The virtual host CONNECT names when `--vhost` is not given (RabbitMQ's default).
pub const DEFAULT_VHOST: &str = "/";
/// The credentials CONNECT gives when neither `--login` nor `--passcode` is (RabbitMQ's
/// default user, allowed from loopback).
pub const DEFAULT_LOGIN: &str = "guest";
pub const DEFAULT_PASSCODE: &str = "guest";

#[derive(Debug)]
pub struct Stomp;

impl Protocol for Stomp {
    fn name(&self) -> &'static str {
        "stomp"
    }
    fn about(&self) -> &'static str {
        "STOMP 1.2 (RabbitMQ web-stomp, path /ws): an echo is a SEND to the connection's own \
         topic answered by its MESSAGE; topic tK is /topic/tK"
    }
    fn serves(&self, usage: Use) -> bool {
        matches!(usage, Use::Requests | Use::PubSub | Use::Stream)
    }
    fn subprotocols(&self) -> &'static [&'static str] {
        &["v12.stomp"]
    }
    fn options(&self) -> &'static [OptionSpec] {
        &[HEARTBEAT, VHOST, DESTINATION, LOGIN, PASSCODE, SUBSCRIBE_DESTINATION]
    }
    fn check(&self, options: &Options) -> Result<(), String> {
        heartbeat_ms(options)?;
        destination(options)?;
        credentials(options)?;
        match options.given.text(&SUBSCRIBE_DESTINATION) {
            Some(given) if given.is_empty() || given.contains(['\r', '\n', '\0']) => {
                return Err(format!(
                    "--subscribe-destination {given:?}: give one destination, not empty, without a line break"
                ));
            }
            _ => {}
        }
        match options.given.text(&VHOST) {
            Some("") => Err("--vhost is empty: give the virtual host to connect to (RabbitMQ's is /)".into()),
            Some(vhost) if vhost.contains(['\r', '\n', '\0']) => {
                Err("--vhost holds a line break or NUL, which CONNECT cannot carry".into())
            }
            _ => Ok(()),
        }
    }
    fn session(&self, setup: &Setup<'_>) -> Box<dyn Session> {
        let heartbeat = heartbeat_ms(setup.options).unwrap_or(DEFAULT_HEARTBEAT.as_millis() as u32);
        let vhost = setup.fill(setup.options.given.text(&VHOST).unwrap_or(DEFAULT_VHOST));
        let template = setup.options.given.text(&DESTINATION).unwrap_or(DEFAULT_DESTINATION);
        let destination = split_destination(&setup.fill(template)).unwrap_or_default();
        let stream = setup.options.given.text(&SUBSCRIBE_DESTINATION).unwrap_or(DEFAULT_STREAM_DESTINATION);
        let session = StompSession::new(setup, &vhost, heartbeat, destination);
        Box::new(session.with_stream_destination(setup.fill(stream).into_owned()))
    }
}

/// What CONNECT logs in with: `--login` (filled with the connection's `{data.NAME}`) and
/// `--passcode`; `guest`/`guest` when neither is given, no passcode for a login alone.
pub(super) fn login_of(setup: &Setup<'_>) -> (String, Option<crate::options::Secret>) {
    let given = setup.options.given.text(&LOGIN);
    let passcode = setup.options.secrets.get(&PASSCODE);
    let passcode = match (given, passcode) {
        (_, Some(passcode)) => Some(passcode),
        (None, None) => Some(DEFAULT_PASSCODE),
        (Some(_), None) => None,
    };
    let login = setup.fill(given.unwrap_or(DEFAULT_LOGIN)).into_owned();
    (login, passcode.map(|passcode| crate::options::Secret(passcode.to_owned())))
}

/// `--login` and `--passcode`: one line each (CONNECT's headers are not escaped), of a
/// bounded length. The passcode is never named.
fn credentials(options: &Options) -> Result<(), String> {
    let unfit = |text: &str| text.len() > MAX_CREDENTIAL || text.contains(['\r', '\n', '\0']);
    if options.given.text(&LOGIN).is_some_and(unfit) {
        return Err("--login: give one line of at most 4,096 bytes, without NUL".into());
    }
    if options.secrets.get(&PASSCODE).is_some_and(unfit) {
        return Err("--passcode: give one line of at most 4,096 bytes, without NUL".into());
    }
    Ok(())
}

/// `--destination` split around its `{topic}`: what comes before the topic's number and
/// what after; or why the template cannot be one.
fn destination(options: &Options) -> Result<(String, String), String> {
    split_destination(options.given.text(&DESTINATION).unwrap_or(DEFAULT_DESTINATION))
}

/// [`destination`] of `template` as given, or with the connection's `{data.NAME}` filled in.
fn split_destination(template: &str) -> Result<(String, String), String> {
    if template.contains(['\r', '\n', '\0']) {
        return Err("--destination holds a line break or NUL, which a STOMP header cannot carry".into());
    }
    match template.split_once(TOPIC_PLACEHOLDER) {
        Some((before, after)) if !after.contains(TOPIC_PLACEHOLDER) => {
            Ok((before.to_owned(), after.to_owned()))
        }
        _ => Err(format!(
            "--destination {template}: give {TOPIC_PLACEHOLDER} exactly once, where the topic's number goes \
             (e.g. /queue/q{TOPIC_PLACEHOLDER})"
        )),
    }
}

/// `--heartbeat` in whole ms (0: none), or why it cannot be one.
fn heartbeat_ms(options: &Options) -> Result<u32, String> {
    let Some(given) = options.given.text(&HEARTBEAT) else { return Ok(DEFAULT_HEARTBEAT.as_millis() as u32) };
    let interval = crate::units::parse_duration(given).map_err(|error| format!("--heartbeat: {error}"))?;
    let ms = interval.as_millis();
    if ms == 0 && !interval.is_zero() {
        return Err(format!("--heartbeat {given} is under a millisecond: give 1ms or more, or 0s for none"));
    }
    u32::try_from(ms).map_err(|_| format!("--heartbeat {given} is too long: give at most 49 days"))
}

#[cfg(test)]
mod tests;
