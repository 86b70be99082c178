//! The scenarios of `wsbench run` by name (`echo`, …, `pubsub`), what a misspelt one
//! probably meant, and what each one's headline rate counts.

use serde::{Deserialize, Serialize};

use super::error::{ConfigError, invalid};

/// The scenarios of `wsbench run`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scenario {
    /// Closed loop: each connection keeps K messages in flight (seeds 000/002).
    Echo,
    /// F frames per send, as fast as the server echoes (seed 004).
    Throughput,
    /// Open N connections and hold them; connections/ms and connections/MB (seed 004).
    Scalability,
    /// Open loop: a new client every `--arrival`, each sending on a fixed schedule (seed 003).
    C10k,
    /// Open loop of new connections: each does handshake → K echoes → close, at `--rate`
    /// new connections per second (issue 14).
    Churn,
    /// Each connection runs the `[[flow.steps]]` of the scenario file (issue 14).
    Flow,
    /// S subscribers over T topics, P publishers at an open-loop `--rate`; latency per
    /// delivery and fan-out completeness (issue 14, protocol in docs/protocols.md).
    #[serde(rename = "pubsub")]
    PubSub,
}

impl std::str::FromStr for Scenario {
    type Err = ConfigError;
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name {
            "echo" => Ok(Scenario::Echo),
            "throughput" => Ok(Scenario::Throughput),
            "scalability" => Ok(Scenario::Scalability),
            "c10k" => Ok(Scenario::C10k),
            "churn" => Ok(Scenario::Churn),
            "flow" => Ok(Scenario::Flow),
            "pubsub" => Ok(Scenario::PubSub),
            other if looks_like_host_port(other) => {
                Err(invalid("scenario", format!("`{other}` is not a scenario: did you mean ws://{other}?")))
            }
            other => Err(invalid(
                "scenario",
                format!(
                    "unknown scenario `{other}`: use echo, throughput, scalability, c10k, churn, flow or pubsub"
                ),
            )),
        }
    }
}

/// What a scenario's headline rate counts, by its name: round trips, a pubsub run's
/// deliveries, a flow's matched replies (or other matched steps).
pub fn exchanges_of(scenario: &str) -> &'static str {
    match scenario {
        "pubsub" => "deliveries",
        "flow" => "matched replies",
        _ => "round trips",
    }
}

/// `localhost:8080`, `10.0.0.2:9001`: a server address given without `ws://`.
fn looks_like_host_port(word: &str) -> bool {
    word.rsplit_once(':').is_some_and(|(host, port)| {
        !host.is_empty() && !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit())
    })
}

impl Scenario {
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Echo => "echo",
            Scenario::Throughput => "throughput",
            Scenario::Scalability => "scalability",
            Scenario::C10k => "c10k",
            Scenario::Churn => "churn",
            Scenario::Flow => "flow",
            Scenario::PubSub => "pubsub",
        }
    }
}
