//! The upper bound of every number a run takes, checked before any load: nothing is
//! allocated, scheduled or looped over from a number the user typed until it is known to
//! fit (`--in-flight 99999999999` once grew the client to 24 GB before the kernel killed it;
//! `--payload bytes:99999999999` aborted on a failed allocation). Each bound is generous
//! for real benchmarks and stops typos; the README lists them (Limits of the settings).

use std::time::Duration;

use super::error::{ConfigError, invalid};
use crate::units::format::{bytes, group};

/// Connections of a whole run (every shard and process together).
pub const MAX_CONNECTIONS: u64 = 10_000_000;
/// Messages one connection may have outstanding (`--in-flight`).
pub const MAX_IN_FLIGHT: u64 = 65_536;
/// Frames written in one send (`--frames-per-send`).
pub const MAX_FRAMES_PER_SEND: u64 = 65_536;
/// Bytes of one message's payload, and of one send (`--frames-per-send` of them).
pub const MAX_PAYLOAD_BYTES: u64 = 1 << 30;
/// What the messages in flight may hold at once in one process: its connections ×
/// `--in-flight` × (payload + [`PER_MESSAGE_BYTES`]).
pub const MAX_BYTES_IN_FLIGHT: u64 = 8 << 30;
/// What the client keeps per outstanding message besides its payload (its send time and
/// sequence, the frame header).
pub const PER_MESSAGE_BYTES: u64 = 64;
/// Messages or new connections per second (`--rate`, `--ramp`, `--arrival`).
pub const MAX_RATE: f64 = 10_000_000.0;
/// Client processes of one run (`--processes`).
pub const MAX_PROCESSES: u64 = 1_000;
/// Built-in server processes (`--server-processes`, as `serve --processes`).
pub const MAX_SERVER_PROCESSES: u64 = 256;
/// How far ahead `--start-at` may be.
pub const MAX_START_AHEAD: Duration = Duration::from_secs(24 * 3600);
/// How long `--wait-for-target` may wait for the server to accept connections.
pub const MAX_WAIT_FOR_TARGET: Duration = Duration::from_secs(3600);
/// The highest process id Linux hands out (`pid_max` at most 2^22).
pub const MAX_PID: u32 = 1 << 22;
/// churn: echoes per connection between its handshake and its close.
pub const MAX_MESSAGES_PER_CONNECTION: u64 = 1_000_000;
/// pubsub: topics.
pub const MAX_TOPICS: u64 = 1_000_000;
/// pubsub: subscriber × publisher-of-its-topic pairs, each tracked (lost, late, duplicated).
pub const MAX_SUBSCRIBER_PUBLISHER_PAIRS: u64 = 10_000_000;
/// Bytes all connections of one process may hold together in messages still arriving
/// (`--max-message-memory`, of `run` and `serve`).
pub const MAX_MESSAGE_MEMORY: u64 = 64 << 30;

/// A size in binary units, whole ones as such (`1 GiB`, not `1.00 GiB`).
fn bytes_binary(n: u64) -> String {
    match n.trailing_zeros() {
        30.. if n > 0 => format!("{} GiB", n >> 30),
        20.. if n > 0 && n < 1 << 30 => format!("{} MiB", n >> 20),
        _ => bytes(n),
    }
}

/// `value` of `--{setting}` is at most `max`; `what` names its unit in the message.
pub fn at_most(setting: &'static str, value: u64, max: u64, what: &str) -> Result<u64, ConfigError> {
    if value > max {
        return Err(invalid(setting, format!("{} {what} is too many: at most {}", group(value), group(max))));
    }
    Ok(value)
}

/// `connections` (what `how` makes, e.g. `--subscribers + --publishers`) of a whole run
/// are at most [`MAX_CONNECTIONS`]; `--{setting}` is named.
pub fn connections(setting: &'static str, how: &str, connections: u64) -> Result<u64, ConfigError> {
    if connections > MAX_CONNECTIONS {
        return Err(invalid(
            setting,
            format!("{how} make {} connections: at most {}", group(connections), group(MAX_CONNECTIONS)),
        ));
    }
    Ok(connections)
}

/// A rate of `--{setting}` (per second) is at most [`MAX_RATE`].
pub fn rate(setting: &'static str, per_sec: f64) -> Result<f64, ConfigError> {
    if per_sec > MAX_RATE {
        return Err(invalid(
            setting,
            format!(
                "{} per second is too fast: at most {} per second",
                group(per_sec as u64),
                group(MAX_RATE as u64)
            ),
        ));
    }
    Ok(per_sec)
}

/// A payload of `bytes` given with `--{setting}` is at most [`MAX_PAYLOAD_BYTES`].
pub fn payload(setting: &'static str, bytes: u64) -> Result<u64, ConfigError> {
    if bytes > MAX_PAYLOAD_BYTES {
        return Err(invalid(
            setting,
            format!(
                "a payload of {} is too large: at most {} per message",
                bytes_binary(bytes),
                bytes_binary(MAX_PAYLOAD_BYTES)
            ),
        ));
    }
    Ok(bytes)
}

/// `frames` frames of `payload` bytes make one send of at most [`MAX_PAYLOAD_BYTES`].
pub fn send(frames: u64, payload: u64) -> Result<(), ConfigError> {
    let bytes = frames.saturating_mul(payload.saturating_add(14));
    if bytes > MAX_PAYLOAD_BYTES {
        return Err(invalid(
            "frames-per-send",
            format!(
                "{} frames of {} make one send of {}: at most {} per send; send fewer or smaller frames",
                group(frames),
                bytes_binary(payload),
                bytes_binary(bytes),
                bytes_binary(MAX_PAYLOAD_BYTES)
            ),
        ));
    }
    Ok(())
}

/// `connections` of one process, each with `in_flight` messages of `payload` bytes
/// outstanding, hold at most [`MAX_BYTES_IN_FLIGHT`].
pub fn in_flight(connections: u64, in_flight: u64, payload: u64) -> Result<(), ConfigError> {
    let bytes =
        connections.saturating_mul(in_flight).saturating_mul(payload.saturating_add(PER_MESSAGE_BYTES));
    if bytes > MAX_BYTES_IN_FLIGHT {
        return Err(invalid(
            "in-flight",
            format!(
                "{} connections × {} in flight × {} each would hold {} at once: at most {} per \
                 process; lower --in-flight or --connections, or add --processes",
                group(connections),
                group(in_flight),
                bytes_binary(payload.saturating_add(PER_MESSAGE_BYTES)),
                bytes_binary(bytes),
                bytes_binary(MAX_BYTES_IN_FLIGHT)
            ),
        ));
    }
    Ok(())
}

/// The longest duration any setting takes: a week. Longer is a typo (`999999h`), not a run.
pub const MAX_DURATION: Duration = Duration::from_secs(7 * 24 * 3600);

/// A duration setting, given or `default`: longer than zero and at most [`MAX_DURATION`].
pub fn duration(
    setting: &'static str,
    value: &Option<String>,
    default: Duration,
) -> Result<Duration, ConfigError> {
    let given = bounded(setting, value, default)?;
    if given.is_zero() {
        return Err(invalid(setting, "must be longer than zero"));
    }
    Ok(given)
}

/// A duration setting, given or `default`, at most [`MAX_DURATION`] (zero allowed: the
/// warm-up).
pub fn bounded(
    setting: &'static str,
    value: &Option<String>,
    default: Duration,
) -> Result<Duration, ConfigError> {
    let given = value
        .as_deref()
        .map(crate::units::parse_duration)
        .transpose()
        .map_err(|e| invalid(setting, e.problem))?;
    let given = given.unwrap_or(default);
    if given > MAX_DURATION {
        return Err(invalid(setting, "must be at most 7 days (168h)"));
    }
    Ok(given)
}

/// The widest `--send-window`: beyond it the batches would no longer keep the schedule.
pub const MAX_SEND_WINDOW: Duration = Duration::from_millis(10);

/// `--send-window`: zero (every send at its own instant) to [`MAX_SEND_WINDOW`].
pub fn send_window(value: &Option<String>) -> Result<Duration, ConfigError> {
    let window = bounded("send-window", value, super::DEFAULT_SEND_WINDOW)?;
    if window > MAX_SEND_WINDOW {
        let text = value.as_deref().unwrap_or_default();
        return Err(invalid("send-window", format!("`{text}` is too wide: at most 10ms")));
    }
    Ok(window)
}

/// `--wait-for-target`: longer than zero, at most [`MAX_WAIT_FOR_TARGET`], and only with a
/// URL (the built-in server is started and waited for anyway).
pub fn wait_for_target(value: &Option<String>, has_target: bool) -> Result<Option<Duration>, ConfigError> {
    let Some(text) = value else { return Ok(None) };
    if !has_target {
        return Err(invalid(
            "wait-for-target",
            "needs a target URL (the built-in server is always waited for)",
        ));
    }
    let wait = duration("wait-for-target", value, Duration::ZERO)?;
    if wait > MAX_WAIT_FOR_TARGET {
        return Err(invalid("wait-for-target", format!("`{text}` is too long: at most 1h")));
    }
    Ok(Some(wait))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_refusal_names_the_flag_the_value_and_the_bound() {
        let message =
            at_most("in-flight", 99_999_999_999, MAX_IN_FLIGHT, "messages").unwrap_err().to_string();
        assert_eq!(message, "--in-flight: 99,999,999,999 messages is too many: at most 65,536");
        let message = payload("payload", 99_999_999_999).unwrap_err().to_string();
        assert!(
            message.starts_with("--payload: a payload of 93.1 GiB is too large: at most 1 GiB"),
            "{message}"
        );
        let message = send(1000, 10 << 20).unwrap_err().to_string();
        assert!(
            message.starts_with("--frames-per-send: 1,000 frames of 10 MiB make one send of"),
            "{message}"
        );
        assert!(in_flight(2_000, 65_536, 20).is_err());
        assert!(in_flight(10_000, 10, 20).is_ok(), "uWebSockets' throughput benchmark fits");
        assert!(in_flight(1, 1, 100 << 20).is_ok(), "one 100 MB message fits");
        assert!(
            rate("rate", 2e7)
                .unwrap_err()
                .to_string()
                .starts_with("--rate: 20,000,000 per second is too fast")
        );
    }
}
