//! GraphQL pub/sub over graphql-transport-ws: a subscriber subscribes to topic `tK` with
//! the operation `--subscription` (`{topic}` = K) under the id `tK`, and each `next` of it is
//! a delivery: its `data` brought down through objects of one field to the value selected,
//! a string (what was published, decoded) or the JSON text of the object. A publish is the
//! operation `--mutation` (`{topic}` = K, `{payload}` the message as a JSON string) under
//! the id `pN`, whose result is nothing the load asked for.
//!
//! The protocol does not acknowledge a subscription, so the subscriber sends a `ping`
//! carrying `{"subscribed":"tK"}` right after the `subscribe`; the server answers pings at
//! once with their payload (the protocol requires it), having read the `subscribe` before
//! it, and the `pong` is taken as the acknowledgement. A delivery that comes first
//! acknowledges it too. An `error` for an operation, or a `next` carrying `errors`, is
//! `graphql_error` (`graphql_error_CODE` by its `extensions.code`) with the server's message; a subscription the server completes is
//! `graphql_ws_subscription_completed` (what is published to it later is lost).

use wsbench_appproto::graphql_ws::{self, Message};
use wsbench_appproto::json::{unescape_into, write_str, write_u64};

use super::GraphqlWsSession;
use super::options::{
    DEFAULT_MUTATION, DEFAULT_SUBSCRIPTION, MUTATION, PAYLOAD_PLACEHOLDER, SUBSCRIPTION, TOPIC_PLACEHOLDER,
};
use crate::protocol::template::Template;
use crate::protocol::{Incoming, Outbox, Setup, Sink};

/// What a pub/sub session keeps: its operations' templates and its subscriptions.
#[derive(Debug)]
pub(super) struct PubSubOperations {
    subscription: Template,
    mutation: Template,
    /// The topics subscribed to (one per subscriber), by name (their operation's id).
    topics: Vec<(String, State)>,
    /// Publishes sent: the next one's id number.
    published: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Sent; its acknowledging `pong` has not come.
    Pending,
    Active,
    /// Failed or completed by the server.
    Ended,
}

impl PubSubOperations {
    pub(super) fn new(setup: &Setup<'_>) -> PubSubOperations {
        let template = |spec, default| {
            let text = setup.fill(setup.options.given.text(spec).unwrap_or(default));
            Template::split(&text, &[TOPIC_PLACEHOLDER, PAYLOAD_PLACEHOLDER])
        };
        PubSubOperations {
            subscription: template(&SUBSCRIPTION, DEFAULT_SUBSCRIPTION),
            mutation: template(&MUTATION, DEFAULT_MUTATION),
            topics: Vec::new(),
            published: 0,
        }
    }

    fn state(&mut self, id: &str) -> Option<&mut State> {
        self.topics.iter_mut().find(|(topic, _)| topic == id).map(|(_, state)| state)
    }
}

/// The number in a topic's name `tK` (what `{topic}` stands for), or the name itself.
fn topic_number(topic: &str) -> &str {
    topic.strip_prefix('t').filter(|n| n.bytes().all(|b| b.is_ascii_digit())).unwrap_or(topic)
}

/// The ping payload that acknowledges a subscription: these two around its topic's name
/// (a JSON string).
const SUBSCRIBED: (&str, &str) = (r#"{"subscribed":"#, "}");

impl GraphqlWsSession {
    pub(super) fn subscribe_topic(&mut self, topic: &str, out: &mut dyn Outbox) {
        let Some(pubsub) = self.pubsub.as_mut() else { return };
        pubsub.topics.push((topic.to_owned(), State::Pending));
        let number = topic_number(topic);
        self.encoding.clear();
        let template = &pubsub.subscription;
        graphql_ws::encode_subscribe_payload(&mut self.encoding, topic, |out| {
            template.write(out, |_, out| out.extend_from_slice(number.as_bytes()))
        });
        out.text(&self.encoding);
        self.variables.clear();
        self.variables.extend_from_slice(SUBSCRIBED.0.as_bytes());
        write_str(&mut self.variables, topic);
        self.variables.extend_from_slice(SUBSCRIBED.1.as_bytes());
        self.encoding.clear();
        graphql_ws::encode_ping(&mut self.encoding, std::str::from_utf8(&self.variables).ok());
        out.text(&self.encoding);
    }

    pub(super) fn publish_to(&mut self, topic: &str, payload: &[u8], out: &mut dyn Outbox) {
        let Some(pubsub) = self.pubsub.as_mut() else { return };
        self.id.clear();
        self.id.push(b'p');
        write_u64(&mut self.id, pubsub.published);
        pubsub.published += 1;
        let id = std::str::from_utf8(&self.id).unwrap_or("p");
        let (number, payload) = (topic_number(topic), String::from_utf8_lossy(payload));
        self.encoding.clear();
        let template = &pubsub.mutation;
        graphql_ws::encode_subscribe_payload(&mut self.encoding, id, |out| {
            template.write(out, |field, out| match field {
                0 => out.extend_from_slice(number.as_bytes()),
                _ => write_str(out, &payload),
            })
        });
        out.text(&self.encoding);
    }

    /// A `pong`: the acknowledgement of the subscription it names, if any.
    pub(super) fn on_pong(&mut self, payload: Option<&str>, sink: &mut dyn Sink) {
        #[derive(serde::Deserialize)]
        struct Subscribed<'a> {
            #[serde(borrow)]
            subscribed: std::borrow::Cow<'a, str>,
        }
        let named = payload.and_then(|payload| serde_json::from_str::<Subscribed<'_>>(payload).ok());
        let Some((pubsub, named)) = self.pubsub.as_mut().zip(named) else {
            return sink.incoming(Incoming::Other);
        };
        match pubsub.state(&named.subscribed) {
            Some(state) if *state == State::Pending => {
                *state = State::Active;
                sink.incoming(Incoming::Subscribed { topic: &named.subscribed });
            }
            _ => sink.incoming(Incoming::Other),
        }
    }

    /// A `next`, `error` or `complete` of a subscription or a publish.
    pub(super) fn on_pubsub_operation(&mut self, message: Message<'_>, sink: &mut dyn Sink) {
        let Some(pubsub) = self.pubsub.as_mut() else { return };
        match message {
            Message::Next { id, payload } => {
                if let Some((message, code)) = graphql_ws::execution_error(payload) {
                    let cause = graphql_ws::error_cause(&mut self.cause, code.as_deref());
                    return sink.incoming(Incoming::Error {
                        cause,
                        detail: &message,
                        seq: None,
                        fatal: false,
                    });
                }
                let Some(state) = pubsub.state(&id) else { return sink.incoming(Incoming::Other) };
                if *state == State::Pending {
                    *state = State::Active;
                    sink.incoming(Incoming::Subscribed { topic: &id });
                }
                let data = graphql_ws::result_data(payload).map_or(payload, graphql_ws::innermost_field);
                let delivered = match unescape_into(data.as_bytes(), &mut self.decoded) {
                    true => &self.decoded[..],
                    false => data.as_bytes(),
                };
                sink.incoming(Incoming::Delivery { topic: &id, payload: delivered });
            }
            Message::Error { id, message, code, .. } => {
                if let Some(state) = pubsub.state(&id) {
                    *state = State::Ended;
                }
                let cause = graphql_ws::error_cause(&mut self.cause, code.as_deref());
                sink.incoming(Incoming::Error { cause, detail: &message, seq: None, fatal: false });
            }
            Message::Complete { id } => match pubsub.state(&id) {
                Some(state) if *state != State::Ended => {
                    *state = State::Ended;
                    let detail =
                        "the server completed a subscription: what is published to its topic later is lost";
                    let error = Incoming::Error {
                        cause: "graphql_ws_subscription_completed",
                        detail,
                        seq: None,
                        fatal: false,
                    };
                    sink.incoming(error);
                }
                _ => sink.incoming(Incoming::Other),
            },
            _ => sink.incoming(Incoming::Other),
        }
    }
}
