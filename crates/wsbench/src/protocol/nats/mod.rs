//! `nats`: NATS's own text protocol over WebSocket, as the `nats.ws` client speaks it to
//! nats-server's websocket listener (binary messages, no subprotocol, any path but the
//! listener's `/mqtt`). A connection waits for the server's INFO, sends CONNECT (not
//! verbose, not pedantic; `--user`/`--pass` or `--auth-token` when given; named
//! `wsbench-<run id>-<index>` for the server's monitoring), then PING, and is ready on the
//! PONG: every SUB sent before that PING is in place by then. The server's PINGs are
//! answered with PONG; its `-ERR` is an error named after its words
//! (`nats_err_authorization_violation`), fatal unless NATS carries on after it (a
//! permissions violation, an invalid subject, too many subscriptions).
//!
//! Echo is request/reply through the broker. Each connection subscribes once to its inbox,
//! `_INBOX.wsbench.<run id>.<index>.*`; a request is `PUB <request subject>
//! <inbox>.<seq>` with the payload, and its reply the MSG on `<inbox>.<seq>`, matched by that
//! number. Someone must answer: by default every connection is also a responder, subscribed
//! to the request subject in the queue group `wsbench`, so each request goes to one of the
//! run's connections, which publishes the payload back to the reply subject: a round trip
//! is two trips through the broker, as an application's request to a service is. With
//! `--external-responder` the application answers instead (its reply's arrival is the
//! round trip), and a request nobody is subscribed to comes back as NATS's no-responders
//! status (`nats_no_responders`). Pub/sub topic `tK` is the subject `--subject` names with K
//! for `{topic}`; a SUB is acknowledged by the PONG of the PING sent after it, a publish is
//! a PUB, a delivery a MSG (or HMSG) on the subscription. The session is in `session.rs`;
//! the wire format is `wsbench_appproto::nats`'s.

mod session;

use wsbench_appproto::nats::valid_publish_subject;

use super::{Options, Protocol, Session, Setup, Use};
use crate::options::{Kind, OptionSpec};
use session::{Credentials, NatsSession, Subjects};

/// The scenarios that send requests, where the request subject and responder apply.
const REQUEST_SCENARIOS: &[&str] = &["echo", "throughput", "c10k", "churn"];

/// `--request-subject`.
pub const REQUEST_SUBJECT: OptionSpec = OptionSpec {
    flag: "request-subject",
    key: "request-subject",
    kind: Kind::Text,
    value_name: "SUBJECT",
    default: "wsbench.echo.<run id>",
    bound: "a subject without wildcards",
    help: "the subject requests are published to, each with its reply subject",
    scenarios: REQUEST_SCENARIOS,
};

/// `--external-responder`.
pub const EXTERNAL_RESPONDER: OptionSpec = OptionSpec {
    flag: "external-responder",
    key: "external-responder",
    kind: Kind::Switch,
    value_name: "",
    default: "off: every connection also answers requests, in queue group wsbench",
    bound: "",
    help: "your application answers the requests; wsbench's connections do not",
    scenarios: REQUEST_SCENARIOS,
};

/// The pub/sub subject template when `--subject` is not given: topic `tK` is subject `tK`.
pub const DEFAULT_SUBJECT: &str = "t{topic}";
/// What `--subject` replaces with the topic's number.
pub const TOPIC_PLACEHOLDER: &str = "{topic}";

/// `--subject`.
pub const SUBJECT: OptionSpec = OptionSpec {
    flag: "subject",
    key: "subject",
    kind: Kind::Text,
    value_name: "TEMPLATE",
    default: DEFAULT_SUBJECT,
    bound: "{topic} once, no wildcards",
    help: "the subject of pub/sub topic K, {topic} standing for K (e.g. orders.{topic}.new)",
    scenarios: &["pubsub"],
};

/// `--user`.
pub const USER: OptionSpec = OptionSpec {
    flag: "user",
    key: "user",
    kind: Kind::Text,
    value_name: "USER",
    default: "none",
    bound: "with --pass",
    help: "the user CONNECT authenticates as",
    scenarios: &[],
};

/// `--pass`.
pub const PASS: OptionSpec = OptionSpec {
    flag: "pass",
    key: "pass",
    kind: Kind::Secret { env: "pass-env" },
    value_name: "PASSWORD",
    default: "none",
    bound: "with --user",
    help: "the password CONNECT gives with --user (a secret: shown as <redacted>)",
    scenarios: &[],
};

/// `--auth-token`.
pub const AUTH_TOKEN: OptionSpec = OptionSpec {
    flag: "auth-token",
    key: "auth-token",
    kind: Kind::Secret { env: "auth-token-env" },
    value_name: "AUTH_TOKEN",
    default: "none",
    bound: "not with --user",
    help: "the authorization token CONNECT gives (a secret: shown as <redacted>)",
    scenarios: &[],
};

/// The queue group wsbench's own responders share, so each request is answered once.
pub const QUEUE_GROUP: &str = "wsbench";

#[derive(Debug)]
pub struct Nats;

impl Protocol for Nats {
    fn name(&self) -> &'static str {
        "nats"
    }
    fn about(&self) -> &'static str {
        "NATS over WebSocket (nats-server's websocket listener): an echo is a request answered \
         on its _INBOX reply subject; topic tK is subject tK"
    }
    fn serves(&self, usage: Use) -> bool {
        matches!(usage, Use::Requests | Use::PubSub)
    }
    fn options(&self) -> &'static [OptionSpec] {
        &[REQUEST_SUBJECT, EXTERNAL_RESPONDER, SUBJECT, USER, PASS, AUTH_TOKEN]
    }
    /// `--binary` is taken as it is: NATS over WebSocket is always binary messages.
    fn check(&self, options: &Options) -> Result<(), String> {
        if let Some(subject) = options.given.text(&REQUEST_SUBJECT)
            && !valid_publish_subject(subject)
        {
            return Err(format!(
                "--request-subject {subject:?} is not a subject to publish to: give dot-separated \
                 tokens without spaces or wildcards (e.g. orders.lookup)"
            ));
        }
        split_subject(options.given.text(&SUBJECT).unwrap_or(DEFAULT_SUBJECT))?;
        check_credentials(options)
    }
    fn replies_echo(&self, options: &Options) -> bool {
        !options.given.switch(&EXTERNAL_RESPONDER)
    }
    fn session(&self, setup: &Setup<'_>) -> Box<dyn Session> {
        let given = &setup.options.given;
        let request = match given.text(&REQUEST_SUBJECT) {
            Some(subject) => setup.fill(subject).into_owned(),
            None => format!("wsbench.echo.{}", setup.run),
        };
        let template = setup.fill(given.text(&SUBJECT).unwrap_or(DEFAULT_SUBJECT));
        // `check` passed the templates as given; a `{data.NAME}` filled in may still spoil them.
        let (topic, problem) = match (split_subject(&template), setup.usage) {
            (Ok(topic), _) => (topic, None),
            (Err(problem), Use::PubSub) => (Default::default(), Some(problem)),
            (Err(_), _) => (Default::default(), None),
        };
        let problem = problem.or_else(|| {
            (setup.usage == Use::Requests && !valid_publish_subject(&request))
                .then(|| format!("--request-subject {request:?} is not a subject to publish to"))
        });
        let subjects = Subjects {
            request,
            responder: !given.switch(&EXTERNAL_RESPONDER),
            inbox: format!("_INBOX.wsbench.{}.{}.", setup.run, setup.index),
            topic,
            problem,
        };
        let fill = |text: Option<&str>| text.map(|text| setup.fill(text).into_owned());
        let secrets = &setup.options.secrets;
        let credentials = Credentials {
            user: fill(given.text(&USER)),
            pass: fill(secrets.get(&PASS)),
            token: fill(secrets.get(&AUTH_TOKEN)),
        };
        let name = connection_name(setup.run, setup.index);
        Box::new(NatsSession::new(setup.usage, name, credentials, subjects))
    }
}

/// The name CONNECT gives connection `index` of run `run`, which nats-server's monitoring
/// (`/connz`) shows: unique among the run's connections and predictable from `--run-id`.
pub fn connection_name(run: &str, index: u64) -> String {
    format!("wsbench-{run}-{index}")
}

/// `--subject` split around its `{topic}`: what comes before the topic's number and what
/// after; or why the template cannot be one.
fn split_subject(template: &str) -> Result<(String, String), String> {
    let refuse =
        |why: &str| Err(format!("--subject {template:?}: {why} (e.g. orders.{TOPIC_PLACEHOLDER}.new)"));
    let Some((before, after)) = template.split_once(TOPIC_PLACEHOLDER) else {
        return refuse("give {topic} once, where the topic's number goes");
    };
    if after.contains(TOPIC_PLACEHOLDER) {
        return refuse("give {topic} once, where the topic's number goes");
    }
    if !valid_publish_subject(&format!("{before}0{after}")) {
        return refuse("a subject to publish to is dot-separated tokens without spaces or wildcards");
    }
    Ok((before.to_owned(), after.to_owned()))
}

/// Whether the credentials given go together, or why not.
fn check_credentials(options: &Options) -> Result<(), String> {
    let (user, pass, token) =
        (options.given.text(&USER), options.secrets.get(&PASS), options.secrets.get(&AUTH_TOKEN));
    match (user, pass, token) {
        (Some(_), None, _) => Err("--user needs --pass: give the user's password too".into()),
        (None, Some(_), _) => Err("--pass needs --user: give the user it is the password of".into()),
        (Some(_), Some(_), Some(_)) => {
            Err("--auth-token and --user are two ways to authenticate: give one of them".into())
        }
        (Some(""), _, _) => Err("--user is empty: give the user to authenticate as".into()),
        (_, _, Some("")) => Err("--auth-token is empty: give the server's authorization token".into()),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests;
