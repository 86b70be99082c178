//! `mqtt`: MQTT 3.1.1 and 5 over WebSocket (mosquitto, NATS, RabbitMQ web-mqtt, and the
//! brokers IoT fleets talk to), at QoS 0, 1 or 2. Every connection opens with CONNECT (a clean
//! session unless `--clean-session false`, with `--session-expiry` under MQTT 5; client id
//! `--client-id`, by default `wsbench-<run id>-<connection index>`; `--username` and
//! `--password`; keep-alive [`KEEP_ALIVE`]) and is ready once the broker accepts it with CONNACK; an echo connection
//! first subscribes to a topic of its own, `wsbench/echo/<client id>`, and is ready once that
//! is acknowledged. An echo request is a PUBLISH to that topic and its reply the broker
//! delivering it back; pub/sub topic `tK` is the MQTT topic `--topic` names with K for
//! `{topic}` (default `t{topic}`: `tK` as it is); a stream subscribes to the topic filter
//! `--subscribe-topic` (wildcards allowed; default `#`, everything). Whatever the
//! broker refuses (CONNACK, SUBACK, PUBACK codes, a DISCONNECT) is an error named after its
//! code; what is not MQTT ends the connection with its cause. The wire format itself is
//! `wsbench_appproto::mqtt`'s; the session lives in `session.rs`.

mod inflight;
mod session;

use std::time::Duration;

use wsbench_appproto::mqtt::{QoS, Version};

use super::{Options, Protocol, Session, Setup, Use};
use crate::options::{Kind, OptionSpec};
use session::MqttSession;

/// `--qos`.
pub const QOS: OptionSpec = OptionSpec {
    flag: "qos",
    key: "qos",
    kind: Kind::Count,
    value_name: "QOS",
    default: "0",
    bound: "0, 1 or 2",
    help: "the quality of service of publishes and subscriptions (2: each delivered exactly once)",
    scenarios: &[],
};

/// `--username`.
pub const USERNAME: OptionSpec = OptionSpec {
    flag: "username",
    key: "username",
    kind: Kind::Text,
    value_name: "NAME",
    default: "none",
    bound: "up to 65,535 bytes, no control characters",
    help: "the user name CONNECT gives ({data.NAME} filled in per connection)",
    scenarios: &[],
};

/// `--password`, or `--password-env VAR`: a secret, never written.
pub const PASSWORD: OptionSpec = OptionSpec {
    flag: "password",
    key: "password",
    kind: Kind::Secret { env: "password-env" },
    value_name: "PASSWORD",
    default: "none",
    bound: "up to 65,535 bytes; 3.1.1: with --username",
    help: "the password CONNECT gives (a secret: shown as <redacted>)",
    scenarios: &[],
};

/// The client id template when `--client-id` is not given.
pub const DEFAULT_CLIENT_ID: &str = "wsbench-{run}-{conn}";

/// `--client-id`.
pub const CLIENT_ID: OptionSpec = OptionSpec {
    flag: "client-id",
    key: "client-id",
    kind: Kind::Text,
    value_name: "TEMPLATE",
    default: DEFAULT_CLIENT_ID,
    bound: "{conn} in it; up to 60,000 bytes, no control characters",
    help: "each connection's client id: {conn} its number, {run} the run's id, {data.NAME} its row's value",
    scenarios: &[],
};

/// `--retain`.
pub const RETAIN: OptionSpec = OptionSpec {
    flag: "retain",
    key: "retain",
    kind: Kind::Switch,
    value_name: "",
    default: "",
    bound: "",
    help: "publish with the retain flag: the broker keeps each topic's last message for later subscribers",
    scenarios: &[],
};

/// `--clean-session`.
pub const CLEAN_SESSION: OptionSpec = OptionSpec {
    flag: "clean-session",
    key: "clean-session",
    kind: Kind::Text,
    value_name: "BOOL",
    default: "true",
    bound: "true or false",
    help: "false: CONNECT asks the broker to keep the session (clean start off under MQTT 5)",
    scenarios: &[],
};

/// `--session-expiry`.
pub const SESSION_EXPIRY: OptionSpec = OptionSpec {
    flag: "session-expiry",
    key: "session-expiry",
    kind: Kind::Count,
    value_name: "SECS",
    default: "0",
    bound: "MQTT 5 only; 0 to 4,294,967,295",
    help: "how long the broker keeps the session after the connection ends (the Session Expiry Interval)",
    scenarios: &[],
};

/// What a client id template replaces with the connection's number and the run's id.
const CONN_PLACEHOLDER: &str = "{conn}";
const RUN_PLACEHOLDER: &str = "{run}";
/// The longest `--client-id` template taken: room left for a run id and a number.
const MAX_CLIENT_ID_TEMPLATE: usize = 60_000;

/// The longest string MQTT carries (a two-byte length).
const MAX_STRING: usize = u16::MAX as usize;

/// The pub/sub topic template when `--topic` is not given: topic `tK` is the MQTT topic `tK`.
pub const DEFAULT_TOPIC: &str = "t{topic}";
/// What `--topic` replaces with the topic's number.
pub const TOPIC_PLACEHOLDER: &str = "{topic}";

/// `--topic`.
pub const TOPIC: OptionSpec = OptionSpec {
    flag: "topic",
    key: "topic",
    kind: Kind::Text,
    value_name: "TEMPLATE",
    default: DEFAULT_TOPIC,
    bound: "{topic} once, no + or # or control characters",
    help: "the MQTT topic of pub/sub topic K, {topic} standing for K (e.g. bench/{topic}/load)",
    scenarios: &["pubsub"],
};

/// `--subscribe-topic`.
pub const SUBSCRIBE_TOPIC: OptionSpec = OptionSpec {
    flag: "subscribe-topic",
    key: "subscribe-topic",
    kind: Kind::Text,
    value_name: "FILTER",
    default: "#",
    bound: "not empty, no control characters",
    help: "the topic filter a stream subscriber subscribes to (+ and # allowed; e.g. sensors/+/temp)",
    scenarios: &["stream"],
};

/// `--mqtt-version`.
pub const MQTT_VERSION: OptionSpec = OptionSpec {
    flag: "mqtt-version",
    key: "mqtt-version",
    kind: Kind::Text,
    value_name: "VERSION",
    default: "3.1.1",
    bound: "3.1.1 or 5",
    help: "the protocol version",
    scenarios: &[],
};

/// How often a connection promises to send something (PINGREQ at least): it pings every
/// half of it, and a PINGRESP not back within it ends the connection.
pub const KEEP_ALIVE: Duration = Duration::from_secs(30);

/// The path asked for when the target names none (`ws://host:port`; `ws://host:port/` asks
/// for `/`): NATS serves MQTT on `/mqtt` alone, as EMQX and HiveMQ do by default; mosquitto
/// takes any path (RabbitMQ's is `/ws`: give it).
pub const DEFAULT_PATH: &str = "/mqtt";

#[derive(Debug)]
pub struct Mqtt;

impl Protocol for Mqtt {
    fn name(&self) -> &'static str {
        "mqtt"
    }
    fn about(&self) -> &'static str {
        "MQTT 3.1.1 or 5 (--mqtt-version) at QoS 0, 1 or 2 (--qos): an echo is a PUBLISH delivered back"
    }
    fn serves(&self, usage: Use) -> bool {
        matches!(usage, Use::Requests | Use::PubSub | Use::Stream)
    }
    fn subprotocols(&self) -> &'static [&'static str] {
        &["mqtt"]
    }
    fn path(&self, given: &str) -> Option<String> {
        given.is_empty().then(|| DEFAULT_PATH.to_owned())
    }
    fn options(&self) -> &'static [OptionSpec] {
        &[
            QOS,
            MQTT_VERSION,
            TOPIC,
            USERNAME,
            PASSWORD,
            CLIENT_ID,
            RETAIN,
            CLEAN_SESSION,
            SESSION_EXPIRY,
            SUBSCRIBE_TOPIC,
        ]
    }
    /// `--binary` is taken as it is: MQTT over WebSocket is always binary messages.
    fn check(&self, options: &Options) -> Result<(), String> {
        qos(options)?;
        version(options)?;
        topic_template(options)?;
        credentials(options)?;
        client_id_template(options)?;
        session_kept(options)?;
        match options.given.text(&SUBSCRIBE_TOPIC) {
            Some(filter) if filter.is_empty() || filter.contains(char::is_control) => Err(format!(
                "--subscribe-topic {filter:?}: give a topic filter, not empty and without NUL or other \
                 control characters"
            )),
            _ => Ok(()),
        }
    }
    fn session(&self, setup: &Setup<'_>) -> Box<dyn Session> {
        // `check` refused anything else before the run.
        let qos = qos(setup.options).unwrap_or(QoS::AtMostOnce);
        let version = version(setup.options).unwrap_or(Version::V311);
        let template = setup.fill(setup.options.given.text(&CLIENT_ID).unwrap_or(DEFAULT_CLIENT_ID));
        let (clean_start, session_expiry) = session_kept(setup.options).unwrap_or((true, None));
        let opening = Opening {
            version,
            qos,
            client_id: fill_client_id(&template, setup.run, setup.index),
            clean_start,
            session_expiry,
            retain: setup.options.given.switch(&RETAIN),
            username: setup.options.given.text(&USERNAME).map(|name| setup.fill(name).into_owned()),
            password: setup.options.secrets.get(&PASSWORD).map(|password| password.as_bytes().to_vec()),
        };
        let given = setup.options.given.text(&TOPIC).map(|template| setup.fill(template));
        let template = split_topic(given.as_deref()).unwrap_or_default();
        let filter = setup.fill(setup.options.given.text(&SUBSCRIBE_TOPIC).unwrap_or("#")).into_owned();
        Box::new(MqttSession::new(setup.usage, opening, template).with_stream_filter(filter))
    }
}

/// What a connection's CONNECT says, and the QoS and retain flag it then publishes with.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Opening {
    version: Version,
    qos: QoS,
    client_id: String,
    clean_start: bool,
    session_expiry: Option<u32>,
    retain: bool,
    username: Option<String>,
    password: Option<Vec<u8>>,
}

/// `--username` and `--password`: strings MQTT can carry, and (3.1.1) no password without
/// a user name. The password is never named.
fn credentials(options: &Options) -> Result<(), String> {
    let username = options.given.text(&USERNAME);
    if let Some(name) = username
        && (name.len() > MAX_STRING || name.contains(char::is_control))
    {
        return Err(format!(
            "--username: {} bytes{}: MQTT carries up to 65,535 bytes and no NUL or other control character",
            name.len(),
            if name.contains(char::is_control) { " with a control character" } else { "" }
        ));
    }
    let Some(password) = options.secrets.get(&PASSWORD) else { return Ok(()) };
    if password.len() > MAX_STRING {
        return Err(format!("--password: {} bytes: MQTT carries up to 65,535", password.len()));
    }
    if username.is_none() && version(options)? == Version::V311 {
        return Err("--password needs --username under MQTT 3.1.1 (or give --mqtt-version 5)".to_owned());
    }
    Ok(())
}

/// The client id of connection `index` of run `run` by default: unique among the run's
/// connections (over every shard) and predictable from the run's `--run-id`.
pub fn client_id(run: &str, index: u64) -> String {
    fill_client_id(DEFAULT_CLIENT_ID, run, index)
}

/// `template` with `{run}` and `{conn}` replaced (its `{data.NAME}` filled before).
fn fill_client_id(template: &str, run: &str, index: u64) -> String {
    template.replace(RUN_PLACEHOLDER, run).replace(CONN_PLACEHOLDER, &index.to_string())
}

/// `--client-id`: `{conn}` in it, so that no two connections share a session (a broker ends
/// the older connection of a client id taken again), and a length MQTT carries.
fn client_id_template(options: &Options) -> Result<(), String> {
    let Some(template) = options.given.text(&CLIENT_ID) else { return Ok(()) };
    if !template.contains(CONN_PLACEHOLDER) {
        return Err(format!(
            "--client-id {template}: give {CONN_PLACEHOLDER} in it, so that each connection has a client id \
             of its own (a broker ends the older connection of a client id taken again)"
        ));
    }
    if template.len() > MAX_CLIENT_ID_TEMPLATE || template.contains(char::is_control) {
        return Err("--client-id: give at most 60,000 bytes, without NUL or other control characters".into());
    }
    Ok(())
}

/// `--clean-session` and `--session-expiry`: whether CONNECT starts clean, and the session's
/// expiry (MQTT 5 alone has one).
fn session_kept(options: &Options) -> Result<(bool, Option<u32>), String> {
    let clean = match options.given.text(&CLEAN_SESSION) {
        None | Some("true") => true,
        Some("false") => false,
        Some(other) => return Err(format!("--clean-session {other}: give true or false")),
    };
    let Some(expiry) = options.given.count(&SESSION_EXPIRY) else { return Ok((clean, None)) };
    if version(options)? != Version::V5 {
        return Err(
            "--session-expiry is MQTT 5's: give --mqtt-version 5, or --clean-session false alone".into()
        );
    }
    let expiry = u32::try_from(expiry)
        .map_err(|_| format!("--session-expiry {expiry}: give at most 4,294,967,295 seconds"))?;
    Ok((clean, Some(expiry)))
}

/// The topic an echo connection publishes to and subscribes to.
pub fn echo_topic(client_id: &str) -> String {
    format!("wsbench/echo/{client_id}")
}

fn qos(options: &Options) -> Result<QoS, String> {
    match options.given.count(&QOS) {
        None | Some(0) => Ok(QoS::AtMostOnce),
        Some(1) => Ok(QoS::AtLeastOnce),
        Some(2) => Ok(QoS::ExactlyOnce),
        Some(other) => Err(format!("--qos {other}: MQTT's qualities of service are 0, 1 and 2")),
    }
}

/// `--topic` split around its `{topic}` (what comes before the topic's number and what
/// after); `None` for the default, under which an MQTT topic is the workload's own name.
fn topic_template(options: &Options) -> Result<Option<(String, String)>, String> {
    split_topic(options.given.text(&TOPIC))
}

/// [`topic_template`] of `given` as given, or with the connection's `{data.NAME}` filled in.
fn split_topic(given: Option<&str>) -> Result<Option<(String, String)>, String> {
    let Some(template) = given.filter(|given| *given != DEFAULT_TOPIC) else {
        return Ok(None);
    };
    if template.contains(['+', '#']) || template.contains(char::is_control) {
        return Err(format!(
            "--topic {template:?}: a topic a client publishes to holds no wildcard (+, #), NUL or other \
             control character"
        ));
    }
    match template.split_once(TOPIC_PLACEHOLDER) {
        Some((before, after)) if !after.contains(TOPIC_PLACEHOLDER) => {
            Ok(Some((before.to_owned(), after.to_owned())))
        }
        _ => Err(format!(
            "--topic {template}: give {TOPIC_PLACEHOLDER} exactly once, where the topic's number goes \
             (e.g. bench/{TOPIC_PLACEHOLDER})"
        )),
    }
}

fn version(options: &Options) -> Result<Version, String> {
    match options.given.text(&MQTT_VERSION) {
        None | Some("3.1.1") => Ok(Version::V311),
        Some("5") => Ok(Version::V5),
        Some(other) => Err(format!("--mqtt-version {other}: give 3.1.1 or 5")),
    }
}

#[cfg(test)]
mod tests;
