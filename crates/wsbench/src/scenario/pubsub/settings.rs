//! The pubsub scenario's shape: how many subscribers, topics and publishers, and which
//! connection plays which part. Connections `0..S` subscribe (subscriber `i` to topic
//! `i mod T`); connections `S..S+P` publish (publisher `j` to topic `j mod T`), so every
//! shard and worker derives the same roles from a connection's index alone.

use std::any::Any;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::config::{
    ConfigError, Payload, RunSettings, ScenarioSettings, bounds, invalid_setting as invalid,
};
use crate::options::{Kind, OptionSpec};
use crate::units::format::group;

pub const DEFAULT_SUBSCRIBERS: u64 = 100;
pub const DEFAULT_TOPICS: u64 = 1;
pub const DEFAULT_PUBLISHERS: u64 = 1;

/// `--subscribers`, `--topics`, `--publishers`.
pub const OPTIONS: [OptionSpec; 3] = [SUBSCRIBERS, TOPICS, PUBLISHERS];
const SUBSCRIBERS: OptionSpec = OptionSpec {
    flag: "subscribers",
    key: "subscribers",
    kind: Kind::Count,
    value_name: "S",
    default: "100",
    bound: "at least 1; with --publishers at most 10,000,000",
    help: "subscriber connections, spread over the topics",
    scenarios: &[],
};
const TOPICS: OptionSpec = OptionSpec {
    flag: "topics",
    key: "topics",
    kind: Kind::Count,
    value_name: "T",
    default: "1",
    bound: "1 to 1,000,000",
    help: "topics 0..T-1; subscriber i listens to topic i mod T",
    scenarios: &[],
};
const PUBLISHERS: OptionSpec = OptionSpec {
    flag: "publishers",
    key: "publishers",
    kind: Kind::Count,
    value_name: "P",
    default: "1",
    bound: "at least --topics; subscribers × publishers per topic at most 10,000,000",
    help: "publisher connections; publisher j publishes to topic j mod T, --rate is shared among them",
    scenarios: &[],
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PubSubSpec {
    pub subscribers: u64,
    pub topics: u64,
    pub publishers: u64,
}

/// What connection `index` does in a pubsub run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Subscriber {
        topic: u64,
    },
    /// Publisher number `publisher` (0-based among the publishers).
    Publisher {
        publisher: u64,
        topic: u64,
    },
}

impl PubSubSpec {
    pub fn connections(&self) -> u64 {
        self.subscribers + self.publishers
    }

    pub fn role(&self, index: u64) -> Role {
        match index.checked_sub(self.subscribers) {
            None => Role::Subscriber { topic: index % self.topics },
            Some(publisher) => Role::Publisher { publisher, topic: publisher % self.topics },
        }
    }

    /// The publishers of `topic`: `topic`, `topic + T`, … below P.
    pub fn publishers_of(&self, topic: u64) -> u64 {
        self.publishers / self.topics + u64::from(topic < self.publishers % self.topics)
    }
}

impl ScenarioSettings for PubSubSpec {
    fn to_json(&self) -> Map<String, Value> {
        Map::from_iter([("pubsub".to_owned(), serde_json::to_value(self).unwrap_or_default())])
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl PubSubSpec {
    /// `--subscribers`, `--topics`, `--publishers`, checked (`--connections` and
    /// `--in-flight` mean nothing here).
    pub fn of(settings: &RunSettings) -> Result<PubSubSpec, ConfigError> {
        let this = settings;
        if this.connections.is_some() || this.clients.is_some() {
            return Err(invalid(
                "connections",
                "pubsub opens --subscribers + --publishers connections; drop --connections",
            ));
        }
        if this.in_flight.is_some() {
            return Err(invalid("in-flight", "pubsub publishes on the --rate schedule; drop --in-flight"));
        }
        let spec = PubSubSpec {
            subscribers: this.options.count(&SUBSCRIBERS).unwrap_or(DEFAULT_SUBSCRIBERS),
            topics: this.options.count(&TOPICS).unwrap_or(DEFAULT_TOPICS),
            publishers: this.options.count(&PUBLISHERS).unwrap_or(DEFAULT_PUBLISHERS),
        };
        for (flag, count) in
            [("subscribers", spec.subscribers), ("topics", spec.topics), ("publishers", spec.publishers)]
        {
            if count == 0 {
                return Err(invalid(flag, "must be at least 1"));
            }
        }
        bounds::at_most("topics", spec.topics, bounds::MAX_TOPICS, "topics")?;
        bounds::connections(
            "subscribers",
            "--subscribers + --publishers",
            spec.subscribers.saturating_add(spec.publishers),
        )?;
        let pairs = spec.subscribers.saturating_mul(spec.publishers.div_ceil(spec.topics));
        if pairs > bounds::MAX_SUBSCRIBER_PUBLISHER_PAIRS {
            return Err(invalid(
                "publishers",
                format!(
                    "each subscriber tracks every publisher of its topic: {} subscribers × {} publishers \
                     a topic is {} pairs, at most {}; add --topics or lower the counts",
                    group(spec.subscribers),
                    group(spec.publishers.div_ceil(spec.topics)),
                    group(pairs),
                    group(bounds::MAX_SUBSCRIBER_PUBLISHER_PAIRS)
                ),
            ));
        }
        if spec.publishers < spec.topics {
            return Err(invalid(
                "publishers",
                format!(
                    "each publisher publishes to one topic (publisher j to topic j mod {}): give at \
                     least as many publishers as --topics",
                    spec.topics
                ),
            ));
        }
        Ok(spec)
    }
}

/// pubsub pads its messages to `--payload-bytes`; no other payload applies.
pub fn check_payload(payload: &Payload) -> Result<(), ConfigError> {
    match payload {
        Payload::JsonTs | Payload::Bytes(_) => Ok(()),
        _ => Err(invalid(
            "payload",
            "pubsub sends its own JSON messages: give only --payload-bytes N (padding)",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_follow_the_connection_index() {
        let spec = PubSubSpec { subscribers: 5, topics: 2, publishers: 3 };
        assert_eq!(spec.connections(), 8);
        assert_eq!(spec.role(0), Role::Subscriber { topic: 0 });
        assert_eq!(spec.role(3), Role::Subscriber { topic: 1 });
        assert_eq!(spec.role(5), Role::Publisher { publisher: 0, topic: 0 });
        assert_eq!(spec.role(7), Role::Publisher { publisher: 2, topic: 0 });
        assert_eq!((spec.publishers_of(0), spec.publishers_of(1)), (2, 1));
    }

    fn settings(args: &[(&str, u64)]) -> RunSettings {
        let mut settings = RunSettings { scenario: Some("pubsub".to_owned()), ..RunSettings::default() };
        for &(flag, value) in args {
            match flag {
                "connections" => settings.connections = Some(value),
                option => {
                    _ = settings.options.0.insert(option.to_owned(), toml::Value::Integer(value as i64))
                }
            }
        }
        settings
    }

    fn error(args: &[(&str, u64)]) -> String {
        settings(args).validate().unwrap_err().to_string()
    }

    #[test]
    fn connections_are_subscribers_plus_publishers() {
        let config = settings(&[("subscribers", 50), ("topics", 5), ("publishers", 5)]).validate().unwrap();
        assert_eq!(config.load.connections, 55);
        assert_eq!(
            config.load.scenario_settings.get::<PubSubSpec>(),
            Some(&PubSubSpec { subscribers: 50, topics: 5, publishers: 5 })
        );
        // The default rate, 100/s over 5 publishers: each publishes every 50 ms.
        assert_eq!(config.load.message_interval, Some(std::time::Duration::from_millis(50)));
    }

    #[test]
    fn bad_shapes_are_refused_naming_the_flag() {
        assert!(error(&[("connections", 10)]).contains("--connections"), "{}", error(&[("connections", 10)]));
        assert!(error(&[("topics", 0)]).contains("--topics: must be at least 1"));
        assert!(error(&[("topics", 4), ("publishers", 2)]).contains("--publishers"));
        let mut echo = settings(&[("subscribers", 3)]);
        echo.scenario = Some("echo".to_owned());
        let message = echo.validate().unwrap_err().to_string();
        assert!(message.contains("--subscribers: applies to the pubsub scenario"), "{message}");
    }
}
