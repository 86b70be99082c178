//! The Socket.IO options a user points wsbench at an application with: the event an echo is
//! emitted as, the namespace joined and the auth payload of its CONNECT, and pub/sub's event
//! names and argument templates. Declared here, checked before the run (JSON that does not
//! parse is refused with the flag named), and read into [`Settings`] once per connection;
//! an argument template is split into [`Template`] pieces then, so that filling it for a
//! publish is copying, never parsing or allocating.

use serde_json::value::RawValue;

use crate::options::{Kind, OptionSpec};
use crate::protocol::{Options, Setup};

/// The event an echo request is emitted as when `--event` is not given.
pub const DEFAULT_EVENT: &str = "echo";
/// The namespace joined when `--namespace` is not given.
pub const DEFAULT_NAMESPACE: &str = "/";
/// Pub/sub's events and arguments when not given: the rooms of docs/peers.md's peer.
pub const DEFAULT_SUBSCRIBE_EVENT: &str = "subscribe";
pub const DEFAULT_PUBLISH_EVENT: &str = "publish";
pub const DEFAULT_DELIVERY_EVENT: &str = "message";
pub const DEFAULT_SUBSCRIBE_ARGS: &str = r#"["t{topic}"]"#;
pub const DEFAULT_PUBLISH_ARGS: &str = r#"[{"topic":"t{topic}","payload":{payload}}]"#;
/// What an argument template replaces with the topic's number, and with the publish.
pub const TOPIC_PLACEHOLDER: &str = "{topic}";
pub const PAYLOAD_PLACEHOLDER: &str = "{payload}";

const fn text(flag: &'static str, value_name: &'static str, default: &'static str) -> OptionSpec {
    OptionSpec { flag, key: flag, kind: Kind::Text, value_name, default, bound: "", help: "", scenarios: &[] }
}

/// `--event`.
pub const EVENT: OptionSpec = OptionSpec {
    bound: "not empty",
    help: "the event an echo request is emitted as",
    ..text("event", "EVENT", DEFAULT_EVENT)
};

/// `--namespace`.
pub const NAMESPACE: OptionSpec = OptionSpec {
    bound: "starts with /, no comma",
    help: "the namespace joined after the Engine.IO open (the URL's path is the Engine.IO path)",
    ..text("namespace", "NAMESPACE", DEFAULT_NAMESPACE)
};

/// `--auth`.
pub const AUTH: OptionSpec = OptionSpec {
    bound: "a JSON object",
    help: "the auth payload of the namespace's CONNECT, as socket.io-client's `auth` \
           (e.g. '{\"token\":\"…\"}'; a secret: shown as <redacted>)",
    kind: Kind::Secret { env: "auth-env" },
    ..text("auth", "JSON", "none")
};

/// `--subscribe-event`.
pub const SUBSCRIBE_EVENT: OptionSpec = OptionSpec {
    bound: "not empty",
    help: "pub/sub: the event that joins a topic's room, emitted with an acknowledgement",
    scenarios: &["pubsub"],
    ..text("subscribe-event", "EVENT", DEFAULT_SUBSCRIBE_EVENT)
};

/// `--publish-event`.
pub const PUBLISH_EVENT: OptionSpec = OptionSpec {
    bound: "not empty",
    help: "pub/sub: the event a publish is emitted as",
    scenarios: &["pubsub"],
    ..text("publish-event", "EVENT", DEFAULT_PUBLISH_EVENT)
};

/// `--delivery-event`.
pub const DELIVERY_EVENT: OptionSpec = OptionSpec {
    bound: "not empty",
    help: "pub/sub: the event the server delivers a publish to the room's members as",
    scenarios: &["pubsub"],
    ..text("delivery-event", "EVENT", DEFAULT_DELIVERY_EVENT)
};

/// `--subscribe-args`.
pub const SUBSCRIBE_ARGS: OptionSpec = OptionSpec {
    bound: "a JSON array; {topic} for the topic's number",
    help: "pub/sub: the subscribe event's arguments",
    scenarios: &["pubsub"],
    ..text("subscribe-args", "JSON", DEFAULT_SUBSCRIBE_ARGS)
};

/// `--publish-args`.
pub const PUBLISH_ARGS: OptionSpec = OptionSpec {
    bound: "a JSON array; {payload} once, as a value; {topic} for the topic's number",
    help: "pub/sub: the publish event's arguments, {payload} standing for wsbench's JSON object",
    scenarios: &["pubsub"],
    ..text("publish-args", "JSON", DEFAULT_PUBLISH_ARGS)
};

/// The event a stream's deliveries come as when `--stream-event` is not given (what
/// `socket.send()` emits).
pub const DEFAULT_STREAM_EVENT: &str = "message";

/// `--stream-event`.
pub const STREAM_EVENT: OptionSpec = OptionSpec {
    bound: "not empty",
    help: "the event a stream's server emits: each one is a delivery (its arguments as a JSON array)",
    scenarios: &["stream"],
    ..text("stream-event", "EVENT", DEFAULT_STREAM_EVENT)
};

/// `--subscribe-emit`.
pub const SUBSCRIBE_EMIT: OptionSpec = OptionSpec {
    default: "none (the server emits on connect)",
    bound: "a JSON array: the event's name, then its arguments",
    help: "what a stream subscriber emits once joined, e.g. '[\"subscribe\",\"ticks\"]'",
    scenarios: &["stream"],
    ..text("subscribe-emit", "JSON", "")
};

/// Every option of the protocol.
pub const OPTIONS: [OptionSpec; 10] = [
    EVENT,
    NAMESPACE,
    AUTH,
    SUBSCRIBE_EVENT,
    PUBLISH_EVENT,
    DELIVERY_EVENT,
    SUBSCRIBE_ARGS,
    PUBLISH_ARGS,
    STREAM_EVENT,
    SUBSCRIBE_EMIT,
];

/// Checks every option given; the reason names the flag and what to give instead.
pub fn check(options: &Options) -> Result<(), String> {
    for spec in [EVENT, SUBSCRIBE_EVENT, PUBLISH_EVENT, DELIVERY_EVENT, STREAM_EVENT] {
        if options.given.text(&spec) == Some("") {
            return Err(format!("--{} is empty: give the event's name", spec.flag));
        }
    }
    if let Some(namespace) = options.given.text(&NAMESPACE)
        && (!namespace.starts_with('/') || namespace.contains(','))
    {
        return Err(format!(
            "--namespace {namespace:?}: a Socket.IO namespace starts with / and has no comma (e.g. /chat)"
        ));
    }
    if let Some(auth) = options.secrets.get(&AUTH) {
        let object = serde_json::from_str::<serde_json::Value>(auth).map(|auth| auth.is_object());
        match object {
            Ok(true) => {}
            Ok(false) => {
                return Err(
                    "--auth: the CONNECT's auth payload is a JSON object, e.g. '{\"token\":\"…\"}'".into()
                );
            }
            Err(error) => {
                return Err(format!(
                    "--auth is not JSON ({error}): give a JSON object, e.g. '{{\"token\":\"…\"}}'"
                ));
            }
        }
    }
    if let Some(given) = options.given.text(&SUBSCRIBE_EMIT) {
        subscribe_emit(given)?;
    }
    Template::parse(&SUBSCRIBE_ARGS, options.given.text(&SUBSCRIBE_ARGS).unwrap_or(DEFAULT_SUBSCRIBE_ARGS))?;
    Template::parse(&PUBLISH_ARGS, options.given.text(&PUBLISH_ARGS).unwrap_or(DEFAULT_PUBLISH_ARGS))?;
    Ok(())
}

/// `--subscribe-emit`: the event's name and each argument as JSON text.
pub fn subscribe_emit(given: &str) -> Result<(String, Vec<String>), String> {
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

/// A connection's options, read (and `{data.NAME}` filled) once.
#[derive(Debug, Clone)]
pub struct Settings {
    pub event: String,
    pub namespace: String,
    pub auth: Option<String>,
    pub subscribe_event: String,
    pub publish_event: String,
    pub delivery_event: String,
    pub subscribe_args: Template,
    pub publish_args: Template,
    /// A stream: the event its deliveries come as, and what is emitted to subscribe.
    pub stream_event: String,
    pub subscribe_emit: Option<(String, Vec<String>)>,
}

impl Settings {
    /// The options of `setup` (checked by [`check`] before the run; a template that no
    /// longer parses once its `{data.NAME}` are filled falls back to the default).
    pub fn of(setup: &Setup<'_>) -> Settings {
        let given = |spec: &OptionSpec| {
            setup.fill(setup.options.given.text(spec).unwrap_or(spec.default)).into_owned()
        };
        let template = |spec: &OptionSpec| {
            Template::parse(spec, &given(spec))
                .or_else(|_| Template::parse(spec, spec.default))
                .unwrap_or_default()
        };
        Settings {
            event: given(&EVENT),
            namespace: given(&NAMESPACE),
            auth: setup.options.secrets.get(&AUTH).map(|auth| setup.fill(auth).into_owned()),
            subscribe_event: given(&SUBSCRIBE_EVENT),
            publish_event: given(&PUBLISH_EVENT),
            delivery_event: given(&DELIVERY_EVENT),
            subscribe_args: template(&SUBSCRIBE_ARGS),
            publish_args: template(&PUBLISH_ARGS),
            stream_event: given(&STREAM_EVENT),
            subscribe_emit: (setup.options.given.text(&SUBSCRIBE_EMIT))
                .and_then(|emit| subscribe_emit(&setup.fill(emit)).ok()),
        }
    }
}

/// One piece of an argument template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Topic,
    Payload,
}

/// An event's arguments as a template: the JSON array's elements (without its brackets),
/// split at `{topic}` and `{payload}`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Template {
    pieces: Vec<Piece>,
}

impl Template {
    /// `template` as `spec` takes it: a JSON array of at least one argument, `{payload}`
    /// once as a value (`--publish-args`) or not at all (`--subscribe-args`).
    fn parse(spec: &OptionSpec, template: &str) -> Result<Template, String> {
        let flag = spec.flag;
        let payloads = template.matches(PAYLOAD_PLACEHOLDER).count();
        let wanted = usize::from(spec.key == PUBLISH_ARGS.key);
        if payloads != wanted {
            let what = match wanted {
                1 => "{payload} once (where wsbench's JSON object goes)",
                _ => "no {payload}",
            };
            return Err(format!("--{flag} {template:?} has {payloads} {{payload}}: give {what}"));
        }
        // {payload} stands for an object: inside a string it would break the JSON.
        let sample = template.replace(TOPIC_PLACEHOLDER, "0").replace(PAYLOAD_PLACEHOLDER, r#"{"id":"0-0"}"#);
        let args: Vec<&RawValue> = serde_json::from_str(&sample).map_err(|error| {
            format!(
                "--{flag} {template:?} is not a JSON array of the event's arguments ({error}); \
                 {{payload}} goes as a value, not inside quotes: e.g. {}",
                spec.default
            )
        })?;
        if args.is_empty() {
            return Err(format!(
                "--{flag} {template:?} has no argument: give at least one, e.g. {}",
                spec.default
            ));
        }
        let trimmed = template.trim();
        let inner = &trimmed[1..trimmed.len() - 1];
        let mut pieces = Vec::new();
        let mut rest = inner;
        while let Some(at) = rest.find('{') {
            let (piece, after) = match rest[at..].strip_prefix(TOPIC_PLACEHOLDER) {
                Some(after) => (Piece::Topic, after),
                None => match rest[at..].strip_prefix(PAYLOAD_PLACEHOLDER) {
                    Some(after) => (Piece::Payload, after),
                    None => {
                        push_text(&mut pieces, &rest[..=at]);
                        rest = &rest[at + 1..];
                        continue;
                    }
                },
            };
            push_text(&mut pieces, &rest[..at]);
            pieces.push(piece);
            rest = after;
        }
        push_text(&mut pieces, rest);
        Ok(Template { pieces })
    }

    /// Appends the arguments (comma-separated JSON, no brackets) for topic number `topic`
    /// and, where `{payload}` stands, `payload` (a JSON object).
    pub fn fill(&self, out: &mut Vec<u8>, topic: &str, payload: &[u8]) {
        for piece in &self.pieces {
            match piece {
                Piece::Text(text) => out.extend_from_slice(text.as_bytes()),
                Piece::Topic => out.extend_from_slice(topic.as_bytes()),
                Piece::Payload => out.extend_from_slice(payload),
            }
        }
    }
}

fn push_text(pieces: &mut Vec<Piece>, text: &str) {
    if text.is_empty() {
        return;
    }
    match pieces.last_mut() {
        Some(Piece::Text(last)) => last.push_str(text),
        _ => pieces.push(Piece::Text(text.to_owned())),
    }
}
