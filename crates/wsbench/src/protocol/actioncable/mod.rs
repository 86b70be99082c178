//! `actioncable`: Rails' Action Cable, as its JavaScript client speaks it: the
//! `actioncable-v1-json` subprotocol on `/cable` (the path asked for when the target names
//! none). The server opens with `welcome`; the connection is ready then, or for an echo once
//! its subscription is confirmed. A subscription names a channel class (`--channel`) and its
//! parameters (`--channel-params`, a JSON object whose `{topic}` is the topic's number, or an
//! echo connection's own name `echo-<run id>-<index>`); an action (`--action`) is a
//! `message` command performed on a subscription, its data `{"action":…,"seq":N,
//! "payload":…}`.
//!
//! Echo performs the action on the connection's own subscription, and its reply is what the
//! channel transmits back (an echo channel transmits the data it was given: `seq` matches the
//! reply to its request, `payload` is compared with what was sent). Pub/sub subscribes each
//! subscriber to its topic's parameters and a publisher performs the action (`broadcast`
//! unless given) on a subscription of its own to the same parameters, made when it first
//! publishes there (its publishes wait, a bounded few, for the confirmation): the channel
//! broadcasts the data to the room's stream, which delivers it to every subscriber. A stream
//! subscribes once with the parameters as given and every message on it is a delivery.
//!
//! A rejected subscription is `actioncable_rejected`, the server's `disconnect` message
//! `actioncable_disconnect_<reason>` (`unauthorized` when the connection is refused);
//! Action Cable pings every 3 s, and a server silent for [`MAX_PING_DELAY`] past that ends
//! the connection as `actioncable_no_ping` (Rails' client reconnects after 6 s). The wire
//! format is `wsbench_appproto::actioncable`'s; the session lives in `session.rs`.

mod session;

use std::time::Duration;

use wsbench_appproto::actioncable::{PATH, SUBPROTOCOLS};

use super::template::sample_json;
use super::{Options, Protocol, Session, Setup, Use};
use crate::options::{Kind, OptionSpec};
use session::{ActionCableSession, Identifiers};

/// The channel when `--channel` is not given (the fleet member's).
pub const DEFAULT_CHANNEL: &str = "BenchChannel";
/// The parameters when `--channel-params` is not given.
pub const DEFAULT_PARAMS: &str = r#"{"room":"{topic}"}"#;
/// What `--channel-params` replaces with the topic's number (or an echo connection's name).
pub const TOPIC_PLACEHOLDER: &str = "{topic}";
/// The echo's action when `--action` is not given.
pub const DEFAULT_ECHO_ACTION: &str = "echo";
/// The publishers' action when `--action` is not given.
pub const DEFAULT_PUBLISH_ACTION: &str = "broadcast";

/// `--channel`.
pub const CHANNEL: OptionSpec = OptionSpec {
    flag: "channel",
    key: "channel",
    kind: Kind::Text,
    value_name: "NAME",
    default: DEFAULT_CHANNEL,
    bound: "a class name",
    help: "the channel class every subscription names, e.g. ChatChannel",
    scenarios: &[],
};

/// `--channel-params`.
pub const CHANNEL_PARAMS: OptionSpec = OptionSpec {
    flag: "channel-params",
    key: "channel-params",
    kind: Kind::Text,
    value_name: "JSON",
    default: DEFAULT_PARAMS,
    bound: "a JSON object without \"channel\"; {topic} inside a string",
    help: "the subscription's parameters beside the channel, {topic} standing for the topic's number (an echo connection's own name: echo-RUN-INDEX)",
    scenarios: &[],
};

/// `--action`.
pub const ACTION: OptionSpec = OptionSpec {
    flag: "action",
    key: "action",
    kind: Kind::Text,
    value_name: "NAME",
    default: "echo; pub/sub: broadcast",
    bound: "a method name",
    help: "the channel's action an echo request or a publish performs",
    scenarios: &["echo", "throughput", "c10k", "churn", "pubsub"],
};

/// How long past Action Cable's 3 s ping a client waits before it gives the connection up.
pub const MAX_PING_DELAY: Duration = Duration::from_secs(10);

#[derive(Debug)]
pub struct ActionCable;

impl Protocol for ActionCable {
    fn name(&self) -> &'static str {
        "actioncable"
    }
    fn about(&self) -> &'static str {
        "Rails' Action Cable (actioncable-v1-json): subscriptions to --channel with --channel-params; an echo is --action transmitted back, a publish --action broadcast to the room"
    }
    fn serves(&self, _usage: Use) -> bool {
        true
    }
    fn subprotocols(&self) -> &'static [&'static str] {
        &SUBPROTOCOLS
    }
    fn path(&self, given: &str) -> Option<String> {
        (given.is_empty() || given == "/").then(|| PATH.to_owned())
    }
    fn options(&self) -> &'static [OptionSpec] {
        &[CHANNEL, CHANNEL_PARAMS, ACTION]
    }
    fn check(&self, options: &Options) -> Result<(), String> {
        if options.binary {
            return Err("Action Cable's JSON protocol is text: leave out --binary (a bytes:N payload is binary unless --text is given)".into());
        }
        if let Some(channel) = options.given.text(&CHANNEL) {
            check_name("--channel", channel, "ChatChannel")?;
        }
        if let Some(action) = options.given.text(&ACTION) {
            check_name("--action", action, "speak")?;
        }
        check_params(options.given.text(&CHANNEL_PARAMS).unwrap_or(DEFAULT_PARAMS))
    }
    fn session(&self, setup: &Setup<'_>) -> Box<dyn Session> {
        let given = &setup.options.given;
        let channel = setup.fill(given.text(&CHANNEL).unwrap_or(DEFAULT_CHANNEL)).into_owned();
        let params = setup.fill(given.text(&CHANNEL_PARAMS).unwrap_or(DEFAULT_PARAMS)).into_owned();
        let default_action = match setup.usage {
            Use::PubSub => DEFAULT_PUBLISH_ACTION,
            _ => DEFAULT_ECHO_ACTION,
        };
        let action = setup.fill(given.text(&ACTION).unwrap_or(default_action)).into_owned();
        let identifiers = Identifiers::new(channel, &params, echo_name(setup.run, setup.index));
        Box::new(ActionCableSession::new(setup.usage, identifiers, action, setup.open_timeout))
    }
}

/// What `{topic}` stands for in echo connection `index`'s parameters.
pub fn echo_name(run: &str, index: u64) -> String {
    format!("echo-{run}-{index}")
}

/// A channel class or an action: a name, not empty, without spaces or control characters.
fn check_name(flag: &str, name: &str, example: &str) -> Result<(), String> {
    if name.is_empty() || name.chars().any(|c| c.is_whitespace() || c.is_control() || c == '"') {
        return Err(format!("{flag} {name:?}: give a name without spaces or quotes (e.g. {example})"));
    }
    Ok(())
}

/// `--channel-params`: a JSON object once `{topic}` is filled in (inside a string, where an
/// echo connection's name can stand), without a `channel` of its own.
fn check_params(template: &str) -> Result<(), String> {
    let example = r#"(e.g. {"room":"{topic}"})"#;
    let value = sample_json(template, &[TOPIC_PLACEHOLDER], &["echo-r-1"]).map_err(|error| {
        format!(
            "--channel-params is not JSON once {TOPIC_PLACEHOLDER} is filled in ({error}): give a JSON object, \
             {TOPIC_PLACEHOLDER} inside a string {example}"
        )
    })?;
    match value.as_object() {
        Some(object) if object.contains_key("channel") => Err(format!(
            "--channel-params names \"channel\": give the channel with --channel and the other parameters here {example}"
        )),
        Some(_) => Ok(()),
        None => Err(format!("--channel-params is not a JSON object: give one {example}")),
    }
}

#[cfg(test)]
mod tests;
