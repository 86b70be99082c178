//! The stream scenario's settings: how many subscribers, how a delivery's id is read
//! (`--message-id`, a JSON pointer or a regex with one group), and, when the server stamps
//! its messages, where its timestamp sits and in which unit (`--message-time`,
//! `--message-time-unit`). Checked before any load; a stream runs in one process, since each
//! id is matched across every subscriber of the run.

use std::any::Any;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};

use super::extract::{Field, TimeUnit};
use crate::config::{ConfigError, RunSettings, ScenarioSettings, bounds, invalid_setting as invalid};
use crate::options::{Kind, OptionSpec};

pub const DEFAULT_SUBSCRIBERS: u64 = 100;

/// `--subscribers`, `--message-id`, `--message-time`, `--message-time-unit`.
pub const OPTIONS: [OptionSpec; 4] = [SUBSCRIBERS, MESSAGE_ID, MESSAGE_TIME, MESSAGE_TIME_UNIT];
const SUBSCRIBERS: OptionSpec = OptionSpec {
    flag: "subscribers",
    key: "subscribers",
    kind: Kind::Count,
    value_name: "S",
    default: "100",
    bound: "1 to 10,000,000",
    help: "subscriber connections, each subscribed to the server's stream",
    scenarios: &[],
};
const MESSAGE_ID: OptionSpec = OptionSpec {
    flag: "message-id",
    key: "message-id",
    kind: Kind::Text,
    value_name: "POINTER|REGEX",
    default: "none (required)",
    bound: "a JSON pointer (/params/result/number) or a regex with one group, at most 1,024 bytes",
    help: "what identifies a delivery: a JSON pointer into the message, or a regex whose group is the id",
    scenarios: &[],
};
const MESSAGE_TIME: OptionSpec = OptionSpec {
    flag: "message-time",
    key: "message-time",
    kind: Kind::Text,
    value_name: "POINTER|REGEX",
    default: "none",
    bound: "as --message-id",
    help: "where the server's timestamp sits (a number, or a decimal or 0x-hex string): latency from it too",
    scenarios: &[],
};
const MESSAGE_TIME_UNIT: OptionSpec = OptionSpec {
    flag: "message-time-unit",
    key: "message-time-unit",
    kind: Kind::Text,
    value_name: "UNIT",
    default: "ms",
    bound: "s, ms, us or ns (since the Unix epoch)",
    help: "the unit of --message-time",
    scenarios: &[],
};

/// A stream's checked settings.
#[derive(Debug, Clone, Serialize)]
pub struct StreamSpec {
    pub subscribers: u64,
    /// `--message-id` as given, and compiled.
    pub message_id: String,
    #[serde(skip)]
    pub id: Arc<Field>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_time: Option<String>,
    #[serde(skip)]
    pub time: Option<Arc<Field>>,
    pub message_time_unit: TimeUnit,
}

impl ScenarioSettings for StreamSpec {
    fn to_json(&self) -> Map<String, Value> {
        Map::from_iter([("stream".to_owned(), serde_json::to_value(self).unwrap_or_default())])
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl StreamSpec {
    /// The settings of a stream run, checked: the server paces it, every connection is a
    /// subscriber, and it runs in one process.
    pub fn of(settings: &RunSettings) -> Result<StreamSpec, ConfigError> {
        if settings.connections.is_some() || settings.clients.is_some() {
            return Err(invalid("connections", "stream opens --subscribers connections; drop --connections"));
        }
        if settings.in_flight.is_some() {
            return Err(invalid("in-flight", "the server paces a stream; drop --in-flight"));
        }
        if settings.processes.is_some_and(|processes| processes > 1) {
            return Err(invalid(
                "processes",
                "a stream runs in one process: each id is matched across every subscriber, which \
                 shards cannot share; drop --processes (one process opens up to 10,000,000 subscribers)",
            ));
        }
        if settings.target.is_none() {
            return Err(invalid(
                "scenario",
                "stream measures a stream the server produces: give that server's URL (wsbench run \
                 stream ws://HOST:PORT/PATH …; the built-in server only echoes)",
            ));
        }
        let subscribers = settings.options.count(&SUBSCRIBERS).unwrap_or(DEFAULT_SUBSCRIBERS);
        if subscribers == 0 {
            return Err(invalid("subscribers", "must be at least 1"));
        }
        bounds::connections("subscribers", "--subscribers", subscribers)?;
        let Some(message_id) = settings.options.text(&MESSAGE_ID) else {
            return Err(invalid(
                "message-id",
                "a stream needs to know what identifies a delivery: give --message-id with a JSON \
                 pointer (/params/result/number) or a regex with one group (\"seq\":(\\d+))",
            ));
        };
        let id = Field::parse(message_id).map_err(|problem| invalid("message-id", problem))?;
        let message_time = settings.options.text(&MESSAGE_TIME);
        let time = message_time
            .map(|given| Field::parse(given).map_err(|problem| invalid("message-time", problem)))
            .transpose()?;
        let unit = match settings.options.text(&MESSAGE_TIME_UNIT) {
            None => TimeUnit::Millis,
            Some(unit) => TimeUnit::parse(unit).ok_or_else(|| {
                invalid("message-time-unit", format!("`{unit}`: give s, ms, us or ns (since the Unix epoch)"))
            })?,
        };
        if settings.options.given(&MESSAGE_TIME_UNIT) && time.is_none() {
            return Err(invalid("message-time-unit", "is the unit of --message-time: give that too"));
        }
        Ok(StreamSpec {
            subscribers,
            message_id: message_id.to_owned(),
            id: Arc::new(id),
            message_time: message_time.map(str::to_owned),
            time: time.map(Arc::new),
            message_time_unit: unit,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(options: &[(&str, toml::Value)]) -> RunSettings {
        let mut settings = RunSettings {
            scenario: Some("stream".to_owned()),
            target: Some("ws://127.0.0.1:9/".to_owned()),
            ..RunSettings::default()
        };
        for (key, value) in options {
            settings.options.0.insert((*key).to_owned(), value.clone());
        }
        settings
    }

    fn error(options: &[(&str, toml::Value)]) -> String {
        settings(options).validate().unwrap_err().to_string()
    }

    #[test]
    fn subscribers_are_the_connections_and_the_id_is_required() {
        let config = settings(&[("subscribers", 7.into()), ("message-id", "/n".into())]).validate().unwrap();
        assert_eq!(config.load.connections, 7);
        let spec = config.load.scenario_settings.get::<StreamSpec>().unwrap();
        assert_eq!((spec.subscribers, spec.message_id.as_str()), (7, "/n"));
        assert!(error(&[]).contains("--message-id"), "{}", error(&[]));
    }

    #[test]
    fn bad_settings_are_refused_naming_the_flag() {
        let id = ("message-id", toml::Value::from("/n"));
        let bad_regex = error(&[("message-id", "seq=(\\d+".into())]);
        assert!(bad_regex.contains("--message-id"), "{bad_regex}");
        let two_groups = error(&[("message-id", "(a)(b)".into())]);
        assert!(two_groups.contains("one group"), "{two_groups}");
        let unit = error(&[id.clone(), ("message-time", "/t".into()), ("message-time-unit", "min".into())]);
        assert!(unit.contains("--message-time-unit: `min`"), "{unit}");
        let alone = error(&[id.clone(), ("message-time-unit", "s".into())]);
        assert!(alone.contains("--message-time"), "{alone}");
        let mut sharded = settings(std::slice::from_ref(&id));
        sharded.processes = Some(2);
        let message = sharded.validate().unwrap_err().to_string();
        assert!(message.contains("--processes: a stream runs in one process"), "{message}");
        let mut connections = settings(std::slice::from_ref(&id));
        connections.connections = Some(3);
        assert!(connections.validate().unwrap_err().to_string().contains("--subscribers"));
        let mut builtin = settings(&[id]);
        builtin.target = None;
        assert!(builtin.validate().unwrap_err().to_string().contains("the built-in server only echoes"));
    }
}
