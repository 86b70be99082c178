//! `pusher`: the Pusher Channels protocol (7), as pusher-js speaks it to Pusher, sockudo,
//! Soketi or Laravel Reverb: the WebSocket at `/app/<--app-key>?protocol=7&…` (asked for
//! when the target names no path). A connection is ready at `pusher:connection_established`,
//! whose socket id signs its private and presence subscriptions: HMAC-SHA256 with
//! `--app-secret`, computed here as the application's auth endpoint would.
//!
//! Pusher has no echo: what a client asks of the server and has answered is `pusher:ping`,
//! answered `pusher:pong` (client events never come back to their sender). So an echo
//! request is a ping and its reply the pong, matched in order: the server's own answer, whose
//! arrival is the round trip. Pub/sub topic `tK` is the channel `--channel` with K for
//! `{topic}` (a `private-` or `presence-` one by default, presence members named by
//! `--user-id`); a publish is the client event `--client-event` on it, which the server
//! relays to every other subscriber; a publisher subscribes to its channel when it first
//! publishes there (client events need that). A stream subscribes to `--subscribe-channel`
//! and every event on it is a delivery (what a server publishes through its HTTP API).
//!
//! `pusher:error` is `pusher_error_<code>` with its message, fatal for codes 4000–4299 (the
//! server closes the connection) and not for 4300 and up (a client event refused); a refused
//! subscription is `pusher_subscription_error_<status>`. After the server's activity
//! timeout of silence the client pings, and a pong not back within [`PONG_TIMEOUT`] ends the
//! connection as `pusher_no_pong`, as pusher-js does. The wire format is
//! `wsbench_appproto::pusher`'s; the session lives in `session.rs`.

mod session;

use std::time::Duration;

use wsbench_appproto::pusher::CLIENT_EVENT_PREFIX;

use super::{Options, Protocol, Session, Setup, Use};
use crate::options::{Kind, OptionSpec};
use session::{Names, PusherSession};

/// The app key when `--app-key` is not given (sockudo's and Soketi's default app's).
pub const DEFAULT_APP_KEY: &str = "app-key";
/// The channel template when `--channel` is not given.
pub const DEFAULT_CHANNEL: &str = "private-wsbench-{topic}";
/// The stream's channel when `--subscribe-channel` is not given.
pub const DEFAULT_STREAM_CHANNEL: &str = "wsbench-stream";
/// The client event of a publish when `--client-event` is not given.
pub const DEFAULT_CLIENT_EVENT: &str = "client-wsbench";
/// A presence member's user id when `--user-id` is not given.
pub const DEFAULT_USER_ID: &str = "wsbench-{run}-{conn}";
/// What `--channel` replaces with the topic's number.
pub const TOPIC_PLACEHOLDER: &str = "{topic}";
/// How long pusher-js waits for the pong of its own ping.
pub const PONG_TIMEOUT: Duration = Duration::from_secs(30);

/// `--app-key`.
pub const APP_KEY: OptionSpec = OptionSpec {
    flag: "app-key",
    key: "app-key",
    kind: Kind::Text,
    value_name: "KEY",
    default: DEFAULT_APP_KEY,
    bound: "letters, digits, - _ .",
    help: "the app's key: the path /app/KEY and the first part of every channel signature",
    scenarios: &[],
};

/// `--app-secret`.
pub const APP_SECRET: OptionSpec = OptionSpec {
    flag: "app-secret",
    key: "app-secret",
    kind: Kind::Secret { env: "app-secret-env" },
    value_name: "SECRET",
    default: "none: public channels only",
    bound: "not empty",
    help: "the app's secret, which signs private and presence subscriptions as your auth endpoint would (a secret: shown as <redacted>)",
    scenarios: &[],
};

/// `--channel`.
pub const CHANNEL: OptionSpec = OptionSpec {
    flag: "channel",
    key: "channel",
    kind: Kind::Text,
    value_name: "TEMPLATE",
    default: DEFAULT_CHANNEL,
    bound: "{topic} once; private- and presence- need --app-secret",
    help: "the channel of pub/sub topic K, {topic} standing for K; a publish is a client event, which Pusher allows on private- and presence- channels",
    scenarios: &[],
};

/// `--client-event`.
pub const CLIENT_EVENT: OptionSpec = OptionSpec {
    flag: "client-event",
    key: "client-event",
    kind: Kind::Text,
    value_name: "EVENT",
    default: DEFAULT_CLIENT_EVENT,
    bound: "client-…",
    help: "the client event a publish triggers",
    scenarios: &["pubsub"],
};

/// `--user-id`.
pub const USER_ID: OptionSpec = OptionSpec {
    flag: "user-id",
    key: "user-id",
    kind: Kind::Text,
    value_name: "TEMPLATE",
    default: DEFAULT_USER_ID,
    bound: "not empty",
    help: "a presence member's user_id: {conn} the connection's number, {run} the run's id, {data.NAME} its row's value",
    scenarios: &[],
};

/// `--subscribe-channel`.
pub const SUBSCRIBE_CHANNEL: OptionSpec = OptionSpec {
    flag: "subscribe-channel",
    key: "subscribe-channel",
    kind: Kind::Text,
    value_name: "CHANNEL",
    default: DEFAULT_STREAM_CHANNEL,
    bound: "a channel name",
    help: "the channel a stream subscriber subscribes to; every event on it is a delivery",
    scenarios: &["stream"],
};

#[derive(Debug)]
pub struct Pusher;

impl Protocol for Pusher {
    fn name(&self) -> &'static str {
        "pusher"
    }
    fn about(&self) -> &'static str {
        "the Pusher Channels protocol 7 (Pusher, sockudo, Soketi, Reverb): an echo is pusher:ping answered pusher:pong; pub/sub is --client-event on --channel, private and presence channels signed with --app-secret"
    }
    fn serves(&self, usage: Use) -> bool {
        matches!(usage, Use::Requests | Use::PubSub | Use::Stream)
    }
    fn path_for(&self, given: &str, options: &Options) -> Option<String> {
        let key = options.given.text(&APP_KEY).unwrap_or(DEFAULT_APP_KEY);
        let query = wsbench_appproto::pusher::path(key, "wsbench", env!("CARGO_PKG_VERSION"));
        if given.is_empty() || given == "/" {
            return Some(query);
        }
        let (path, asked) = given.split_once('?').unwrap_or((given, ""));
        let has_protocol = asked.split('&').any(|pair| pair.split('=').next() == Some("protocol"));
        let extra = query.split_once('?').map_or("", |(_, extra)| extra);
        (path.starts_with("/app/") && !has_protocol).then(|| match asked {
            "" => format!("{path}?{extra}"),
            _ => format!("{given}&{extra}"),
        })
    }
    fn replies_echo(&self, _options: &Options) -> bool {
        false
    }
    fn options(&self) -> &'static [OptionSpec] {
        &[APP_KEY, APP_SECRET, CHANNEL, CLIENT_EVENT, USER_ID, SUBSCRIBE_CHANNEL]
    }
    fn check(&self, options: &Options) -> Result<(), String> {
        if options.binary {
            return Err("Pusher's protocol is JSON text: leave out --binary (a bytes:N payload is binary unless --text is given)".into());
        }
        check_options(options)
    }
    fn session(&self, setup: &Setup<'_>) -> Box<dyn Session> {
        let given = &setup.options.given;
        let fill =
            |spec: &OptionSpec, default: &str| setup.fill(given.text(spec).unwrap_or(default)).into_owned();
        let template = fill(&CHANNEL, DEFAULT_CHANNEL);
        let (before, after) = template.split_once(TOPIC_PLACEHOLDER).unwrap_or((&template, ""));
        let user_id = fill(&USER_ID, DEFAULT_USER_ID)
            .replace("{conn}", &setup.index.to_string())
            .replace("{run}", setup.run);
        let names = Names {
            key: fill(&APP_KEY, DEFAULT_APP_KEY),
            secret: setup.options.secrets.get(&APP_SECRET).map(|secret| setup.fill(secret).into_owned()),
            channel: (before.to_owned(), after.to_owned()),
            stream: fill(&SUBSCRIBE_CHANNEL, DEFAULT_STREAM_CHANNEL),
            client_event: fill(&CLIENT_EVENT, DEFAULT_CLIENT_EVENT),
            user_id,
        };
        Box::new(PusherSession::new(names, setup.open_timeout))
    }
}

/// Whether `channel` is one Pusher signs (private, encrypted or presence).
pub fn is_signed(channel: &str) -> bool {
    channel.starts_with("private-") || channel.starts_with("presence-")
}

/// A channel name Pusher accepts: up to 164 of `A-Z a-z 0-9 _ - = @ , . ;`.
fn valid_channel(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 164
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-=@,.;".contains(&b))
}

fn check_options(options: &Options) -> Result<(), String> {
    let given = &options.given;
    let key = given.text(&APP_KEY).unwrap_or(DEFAULT_APP_KEY);
    if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)) {
        return Err(format!("--app-key {key:?}: give the app's key (letters, digits, - _ .), e.g. app-key"));
    }
    if options.secrets.get(&APP_SECRET).is_some_and(str::is_empty) {
        return Err(
            "--app-secret is empty: give the app's secret, or leave it out for public channels".into()
        );
    }
    let template = given.text(&CHANNEL).unwrap_or(DEFAULT_CHANNEL);
    let sample = template.replacen(TOPIC_PLACEHOLDER, "0", 1);
    if template.matches(TOPIC_PLACEHOLDER).count() != 1 || !valid_channel(&strip_data(&sample)) {
        return Err(format!(
            "--channel {template:?}: give {TOPIC_PLACEHOLDER} once and otherwise letters, digits and _ - = @ , . ; \
             (e.g. private-room-{TOPIC_PLACEHOLDER})"
        ));
    }
    let stream = given.text(&SUBSCRIBE_CHANNEL).unwrap_or(DEFAULT_STREAM_CHANNEL);
    if !valid_channel(&strip_data(stream)) {
        return Err(format!(
            "--subscribe-channel {stream:?}: give a channel name (letters, digits, _ - = @ , . ;)"
        ));
    }
    // The default channel is private too; without a secret a pub/sub run's sessions say so
    // (`pusher_no_secret`), as this check does not know the scenario.
    let secret = options.secrets.get(&APP_SECRET).is_some();
    for (spec, channel) in [(&CHANNEL, template), (&SUBSCRIBE_CHANNEL, stream)] {
        if is_signed(channel) && !secret && given.given(spec) {
            return Err(format!(
                "--{} {channel:?} is signed with the app's secret: give --app-secret (or --app-secret-env)",
                spec.flag
            ));
        }
    }
    let event = given.text(&CLIENT_EVENT).unwrap_or(DEFAULT_CLIENT_EVENT);
    if !event.starts_with(CLIENT_EVENT_PREFIX) || event.len() == CLIENT_EVENT_PREFIX.len() {
        return Err(format!(
            "--client-event {event:?}: a client event's name starts with client- (e.g. client-message)"
        ));
    }
    if given.text(&USER_ID).is_some_and(str::is_empty) {
        return Err("--user-id is empty: give a presence member's id, e.g. user-{conn}".into());
    }
    Ok(())
}

/// `text` with each `{data.NAME}` as a letter, for checking what the rows will fill in.
fn strip_data(text: &str) -> String {
    let mut out = text.to_owned();
    while let Some(at) = out.find("{data.") {
        let Some(end) = out[at..].find('}') else { break };
        out.replace_range(at..at + end + 1, "d");
    }
    out
}

#[cfg(test)]
mod tests;
