//! `centrifugo`: Centrifugo's client protocol v2 in JSON, as the Centrifugo server (and
//! any server built on its `centrifuge` library) speaks it on `/connection/websocket` (the
//! path asked for when the target names none). Every connection opens with a `connect`
//! command carrying `--connection-token` (a connection JWT) or none (anonymous, where the
//! server allows it), and is ready at its result.
//!
//! Centrifugo has no echo: a client waits on the server delivering publications. An echo
//! connection therefore subscribes to a channel of its own (`--channel` with
//! `echo-<run id>-<connection index>` for `{topic}`) and is ready once the subscription is
//! acknowledged; an echo request is a `publish` of the payload (as a JSON string) to that
//! channel, and its reply is the publication delivered back: the round trip through the
//! server's broker a chat message makes to its readers. The publish's own result is read
//! and, when it is an error, ends the request. Pub/sub topic `tK` is channel `--channel`
//! with K for `{topic}`; a publish's data is the scenario's JSON object as it is.
//!
//! Every reply is matched to its command by `id`; an error reply is counted as
//! `centrifugo_error_CODE` with the server's message kept. The server's pings (`{}`) are
//! answered with `{}` when its connect result asks for pongs; no message from it within
//! its ping interval and [`MAX_PING_DELAY`] ends the connection as `centrifugo_no_ping`,
//! as Centrifugo's own SDKs do. A disconnect is the server's close frame, counted by the
//! engine as `closed_CODE` with its reason. The wire format is
//! `wsbench_appproto::centrifugo`'s; the session lives in `session.rs`.

mod session;

use std::time::Duration;

use super::{Options, Protocol, Session, Setup, Use};
use crate::options::{Kind, OptionSpec};
use session::CentrifugoSession;

/// `--connection-token`.
pub const CONNECTION_TOKEN: OptionSpec = OptionSpec {
    flag: "connection-token",
    key: "connection-token",
    kind: Kind::Secret { env: "connection-token-env" },
    value_name: "JWT",
    default: "none (anonymous)",
    bound: "not empty",
    help: "the connection token (JWT) the connect command carries; {data.NAME} takes it from --data (a secret: shown as <redacted>)",
    scenarios: &[],
};

/// The channel template when `--channel` is not given.
pub const DEFAULT_CHANNEL: &str = "wsbench-{topic}";
/// What `--channel` replaces with the topic's number (or an echo connection's own name).
pub const TOPIC_PLACEHOLDER: &str = "{topic}";

/// `--channel`.
pub const CHANNEL: OptionSpec = OptionSpec {
    flag: "channel",
    key: "channel",
    kind: Kind::Text,
    value_name: "TEMPLATE",
    default: DEFAULT_CHANNEL,
    bound: "{topic} once",
    help: "the channel of pub/sub topic K, {topic} standing for K (an echo connection's own channel: echo-RUN-INDEX), e.g. chat:room-{topic}",
    scenarios: &[],
};

/// How long past its ping interval a client waits for the server's ping before it gives
/// the connection up (centrifuge-js's `maxServerPingDelay`).
pub const MAX_PING_DELAY: Duration = Duration::from_secs(10);

/// The path asked for when the target names none.
pub const DEFAULT_PATH: &str = wsbench_appproto::centrifugo::PATH;

#[derive(Debug)]
pub struct Centrifugo;

impl Protocol for Centrifugo {
    fn name(&self) -> &'static str {
        "centrifugo"
    }
    fn about(&self) -> &'static str {
        "Centrifugo's JSON protocol: connect with --connection-token or anonymous; an echo is a publish delivered back on the connection's own --channel"
    }
    fn serves(&self, usage: Use) -> bool {
        matches!(usage, Use::Requests | Use::PubSub)
    }
    fn path(&self, given: &str) -> Option<String> {
        (given.is_empty() || given == "/").then(|| DEFAULT_PATH.to_owned())
    }
    fn options(&self) -> &'static [OptionSpec] {
        &[CONNECTION_TOKEN, CHANNEL]
    }
    fn check(&self, options: &Options) -> Result<(), String> {
        if options.binary {
            return Err("Centrifugo's JSON protocol is text: leave out --binary (a bytes:N payload is binary unless --text is given)".into());
        }
        if options.secrets.get(&CONNECTION_TOKEN).is_some_and(|token| token.trim().is_empty()) {
            return Err(
                "--connection-token is empty: give the connection JWT, or leave --connection-token out to connect anonymously"
                    .into(),
            );
        }
        split_channel(options.given.text(&CHANNEL).unwrap_or(DEFAULT_CHANNEL))?;
        Ok(())
    }
    fn session(&self, setup: &Setup<'_>) -> Box<dyn Session> {
        let token = setup.options.secrets.get(&CONNECTION_TOKEN).map(|token| setup.fill(token).into_owned());
        let template = setup.fill(setup.options.given.text(&CHANNEL).unwrap_or(DEFAULT_CHANNEL));
        // `check` refused a template without its one `{topic}` before the run.
        let (before, after) = split_channel(&template).unwrap_or_default();
        let echo_channel = format!("{before}{}{after}", echo_name(setup.run, setup.index));
        Box::new(CentrifugoSession::new(setup.usage, token, (before, after), echo_channel))
    }
}

/// What `{topic}` stands for in echo connection `index`'s own channel.
pub fn echo_name(run: &str, index: u64) -> String {
    format!("echo-{run}-{index}")
}

/// `--channel` split around its `{topic}`: what comes before the topic's number and what
/// after.
fn split_channel(template: &str) -> Result<(String, String), String> {
    match template.split_once(TOPIC_PLACEHOLDER) {
        Some((before, after))
            if !after.contains(TOPIC_PLACEHOLDER) && !template.contains(char::is_whitespace) =>
        {
            Ok((before.to_owned(), after.to_owned()))
        }
        _ => Err(format!(
            "--channel {template}: give {TOPIC_PLACEHOLDER} exactly once, where the topic's number goes, \
             and no spaces (e.g. chat:room-{TOPIC_PLACEHOLDER})"
        )),
    }
}

#[cfg(test)]
mod tests;
