//! The options of `--protocol graphql-ws` and their checks before the load: the echo's
//! operation (`--query`), the `connection_init` payload (`--init-payload`, credentials a
//! server's `onConnect` checks), and pub/sub's operations, `--subscription` and
//! `--mutation`: templates of a `subscribe` message's payload (the GraphQL document and its
//! variables) with `{topic}` standing for the topic's number and `{payload}` for what a
//! publisher publishes, as a JSON string. Each is JSON once filled in, checked with sample
//! values here so a typo is refused before any connection opens.

use super::super::Options;
use super::super::template::sample_json;
use crate::options::{Kind, OptionSpec};

/// The operation an echo request starts when `--query` is not given: the payload is its
/// `$payload` variable and comes back as the `echo` field of the first result.
pub const DEFAULT_QUERY: &str = "subscription($payload: String!) { echo(message: $payload) }";

/// `--query`.
pub const QUERY: OptionSpec = OptionSpec {
    flag: "query",
    key: "query",
    kind: Kind::Text,
    value_name: "QUERY",
    default: "an echo subscription of $payload",
    bound: "not empty",
    help: "the operation an echo request starts; `$payload` is the payload",
    scenarios: &[],
};

/// `--init-payload`.
pub const INIT_PAYLOAD: OptionSpec = OptionSpec {
    flag: "init-payload",
    key: "init-payload",
    kind: Kind::Secret { env: "init-payload-env" },
    value_name: "JSON",
    default: "none",
    bound: "a JSON object",
    help: "the payload of connection_init, e.g. credentials the server checks ({\"token\":\"…\"}; a secret: shown as <redacted>)",
    scenarios: &[],
};

/// What the pub/sub templates replace with the topic's number.
pub const TOPIC_PLACEHOLDER: &str = "{topic}";
/// What `--mutation` replaces with the published message, as a JSON string.
pub const PAYLOAD_PLACEHOLDER: &str = "{payload}";

/// A subscriber's operation when `--subscription` is not given: the subscription `messages`
/// of the topic named `tK`, each delivery one string.
pub const DEFAULT_SUBSCRIPTION: &str = r#"{"query":"subscription($topic: String!) { messages(topic: $topic) }","variables":{"topic":"t{topic}"}}"#;

/// A publish when `--mutation` is not given: the mutation `publish` of the message to the
/// topic named `tK`.
pub const DEFAULT_MUTATION: &str = r#"{"query":"mutation($topic: String!, $payload: String!) { publish(topic: $topic, payload: $payload) }","variables":{"topic":"t{topic}","payload":{payload}}}"#;

/// `--subscription`.
pub const SUBSCRIPTION: OptionSpec = OptionSpec {
    flag: "subscription",
    key: "subscription",
    kind: Kind::Text,
    value_name: "TEMPLATE",
    default: "the subscription messages(topic: \"t{topic}\")",
    bound: "a JSON object with a query",
    help: "a subscriber's subscribe payload {\"query\":…,\"variables\":…}, {topic} standing for the topic's number",
    scenarios: &["pubsub"],
};

/// `--mutation`.
pub const MUTATION: OptionSpec = OptionSpec {
    flag: "mutation",
    key: "mutation",
    kind: Kind::Text,
    value_name: "TEMPLATE",
    default: "the mutation publish(topic: \"t{topic}\", payload: {payload})",
    bound: "a JSON object with a query",
    help: "a publish's subscribe payload {\"query\":…,\"variables\":…}, {topic} the topic's number, {payload} the message as a JSON string",
    scenarios: &["pubsub"],
};

/// Every option, as the protocol declares them.
/// `--subscribe-query`.
pub const SUBSCRIBE_QUERY: OptionSpec = OptionSpec {
    flag: "subscribe-query",
    key: "subscribe-query",
    kind: Kind::Text,
    value_name: "QUERY",
    default: "none (the server streams on its own)",
    bound: "not empty",
    help: "the subscription a stream subscriber starts, e.g. 'subscription { ticks { seq ts } }'",
    scenarios: &["stream"],
};

pub const ALL: &[OptionSpec] = &[QUERY, INIT_PAYLOAD, SUBSCRIPTION, MUTATION, SUBSCRIBE_QUERY];

/// Checks the options given; a one-line reason when they are wrong.
pub fn check(options: &Options) -> Result<(), String> {
    if options.binary {
        return Err("graphql-transport-ws messages are text: leave out --binary (a bytes:N payload is binary unless --text is given)".into());
    }
    if options.given.text(&QUERY).is_some_and(|query| query.trim().is_empty()) {
        return Err("--query is empty: give the operation an echo request starts".into());
    }
    if options.given.text(&SUBSCRIBE_QUERY).is_some_and(|query| query.trim().is_empty()) {
        return Err("--subscribe-query is empty: give the subscription a stream subscriber starts".into());
    }
    if let Some(init) = options.secrets.get(&INIT_PAYLOAD) {
        // Its value may be a secret: the error names what is wrong, never the value.
        match sample_json(init, &[], &[]) {
            Ok(value) if value.is_object() => {}
            Ok(_) => {
                return Err("--init-payload is not a JSON object: give one such as {\"token\":\"…\"}".into());
            }
            Err(error) => {
                return Err(format!(
                    "--init-payload is not JSON ({error}): give a JSON object such as {{\"token\":\"…\"}}"
                ));
            }
        }
    }
    operation(options, &SUBSCRIPTION)?;
    operation(options, &MUTATION)
}

/// `--subscription` or `--mutation`, when given, is a JSON object with a `query` string once
/// its placeholders are filled in.
fn operation(options: &Options, spec: &OptionSpec) -> Result<(), String> {
    let Some(template) = options.given.text(spec) else { return Ok(()) };
    let flag = spec.flag;
    let value = sample_json(template, &[TOPIC_PLACEHOLDER, PAYLOAD_PLACEHOLDER], &["0", r#""payload""#])
        .map_err(|error| format!("--{flag} is not JSON once {{topic}} and {{payload}} are filled in ({error}): give the subscribe payload, e.g. {{\"query\":\"…\",\"variables\":{{\"topic\":\"t{{topic}}\"}}}}"))?;
    match value.get("query").and_then(serde_json::Value::as_str) {
        Some(query) if !query.trim().is_empty() => Ok(()),
        _ => Err(format!(
            "--{flag} has no \"query\": give the subscribe payload, e.g. {{\"query\":\"…\",\"variables\":{{\"topic\":\"t{{topic}}\"}}}}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checked(key: &str, value: &str) -> Result<(), String> {
        check(&Options::with([(key, value.into())]))
    }

    #[test]
    fn the_init_payload_is_a_json_object_and_its_error_never_quotes_it() {
        assert_eq!(checked("init-payload", r#"{"token":"s3cret","user":"{data.user}"}"#), Ok(()));
        for wrong in [r#"{"token":"s3cret""#, r#""s3cret""#, "[]"] {
            let error = checked("init-payload", wrong).unwrap_err();
            assert!(error.starts_with("--init-payload is not"), "{error}");
            assert!(!error.contains("s3cret"), "a secret is never quoted: {error}");
        }
    }

    #[test]
    fn the_pub_sub_templates_are_subscribe_payloads_with_a_query() {
        assert_eq!(checked("subscription", DEFAULT_SUBSCRIPTION), Ok(()));
        assert_eq!(checked("mutation", DEFAULT_MUTATION), Ok(()));
        let error = checked("mutation", r#"{"query":"mutation { p(m: {payload}) "#).unwrap_err();
        assert!(error.starts_with("--mutation is not JSON"), "{error}");
        let error = checked("subscription", r#"{"variables":{"t":"{topic}"}}"#).unwrap_err();
        assert!(error.starts_with("--subscription has no \"query\""), "{error}");
        assert!(
            checked("subscription", "subscription { messages }").is_err(),
            "a bare document is no payload"
        );
    }
}
