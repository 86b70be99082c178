//! `--reconnect[=POLICY]`: how a lost connection is opened again, as the client libraries
//! people deploy do it. When every client of a restarted server comes back at once, the
//! policy decides whether the server survives the herd: no wait at all (`immediate`), a fixed
//! pause, an exponential back-off with one of the jitters of Brooker's "Exponential Backoff
//! And Jitter" (AWS Architecture Blog, 2015), or the documented defaults of a library
//! (docs/recovery.md cites each one's source). A policy is a pure function from the attempt
//! number (and, for decorrelated jitter, the previous pause) to the pause before that
//! attempt; its randomness is drawn from the connection's number and the attempt's, so the
//! same run reconnects the same way. A policy that gives up (SignalR's) says so with `None`.

use std::time::Duration;

use serde::{Serialize, Serializer};

use super::bounds::MAX_DURATION;

/// The policy of a bare `--reconnect` (and of `reconnect = true` in a scenario file).
pub const DEFAULT_POLICY: &str = "wsbench";

/// The most a delay may be multiplied by from one attempt to the next.
const MAX_FACTOR: f64 = 10.0;

/// How lost connections are reopened.
#[derive(Debug, Clone, PartialEq)]
pub struct ReconnectPolicy {
    /// As given (`exponential:base=100ms,cap=30s,jitter=full`, `phoenix`).
    pub spec: String,
    pub backoff: Backoff,
}

/// The pause before each attempt to reopen a connection.
#[derive(Debug, Clone, PartialEq)]
pub enum Backoff {
    /// Every attempt at once.
    Immediate,
    /// The same pause before every attempt.
    Fixed(Duration),
    /// `base × factor^(n−1)`, at most `cap`, then jittered.
    Exponential { base: Duration, factor: f64, cap: Duration, jitter: Jitter },
    /// socket.io-client's (its `backo2`): `min × 2^(n−1)`, moved up or down by up to
    /// `randomization` of itself, then at most `max`.
    SocketIo { min: Duration, max: Duration, randomization: f64 },
    /// gRPC's connection back-off: the first attempt at once, then `initial`, growing by
    /// `multiplier` to at most `max`, each moved by up to ± `jitter` of itself.
    Grpc { initial: Duration, multiplier: f64, max: Duration, jitter: f64 },
    /// A table of pauses by attempt; past its end, `then` (or, when `None`, the connection
    /// is given up: SignalR's automatic reconnect).
    Steps { delays: Vec<Duration>, then: Option<Duration> },
    /// wsbench's own (a bare `--reconnect`): 100 ms doubling to 5 s, each drawn up to as long
    /// again.
    Wsbench,
}

/// How an exponential delay is randomised (Brooker, AWS Architecture Blog, 2015).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Jitter {
    None,
    /// Anywhere from 0 to the delay.
    Full,
    /// Half the delay, plus anywhere up to the other half.
    Equal,
    /// Anywhere from `base` to three times the previous pause, at most `cap`.
    Decorrelated,
}

impl Serialize for ReconnectPolicy {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.spec)
    }
}

impl ReconnectPolicy {
    /// The pause before attempt `attempt` (1 for the first after the loss) of connection
    /// `index`, whose previous pause was `previous`; `None`: the policy gives the
    /// connection up.
    pub fn delay(&self, attempt: u32, index: u64, previous: Duration) -> Option<Duration> {
        let n = attempt.max(1);
        let draw = draw(index, n);
        let grow = |base: Duration, factor: f64, cap: Duration| {
            let exponent = i32::try_from(n - 1).unwrap_or(i32::MAX).min(64);
            Duration::from_secs_f64((base.as_secs_f64() * factor.powi(exponent)).min(cap.as_secs_f64()))
        };
        Some(match &self.backoff {
            Backoff::Immediate => Duration::ZERO,
            Backoff::Fixed(pause) => *pause,
            Backoff::Exponential { base, factor, cap, jitter } => match jitter {
                Jitter::None => grow(*base, *factor, *cap),
                Jitter::Full => grow(*base, *factor, *cap).mul_f64(draw),
                Jitter::Equal => grow(*base, *factor, *cap).mul_f64(0.5 + draw / 2.0),
                Jitter::Decorrelated => {
                    let high = previous.max(*base).saturating_mul(3);
                    (*base + (high - *base).mul_f64(draw)).min(*cap)
                }
            },
            Backoff::SocketIo { min, max, randomization } => {
                let ms = min.as_secs_f64() * 2f64.powi(i32::try_from(n - 1).unwrap_or(i32::MAX).min(64));
                // backo2 draws once: the deviation from it, the direction from its tenths.
                let deviation = (draw * randomization * ms).max(0.0);
                let moved =
                    if ((draw * 10.0).floor() as u64) & 1 == 0 { ms - deviation } else { ms + deviation };
                Duration::from_secs_f64(moved.min(max.as_secs_f64()).max(0.0))
            }
            Backoff::Grpc { initial, multiplier, max, jitter } => match n {
                1 => Duration::ZERO,
                _ => {
                    let backoff = Duration::from_secs_f64(
                        (initial.as_secs_f64()
                            * multiplier.powi(i32::try_from(n - 2).unwrap_or(i32::MAX).min(64)))
                        .min(max.as_secs_f64()),
                    );
                    backoff.mul_f64(1.0 + jitter * (2.0 * draw - 1.0))
                }
            },
            Backoff::Steps { delays, then } => match delays.get(n as usize - 1) {
                Some(pause) => *pause,
                None => (*then)?,
            },
            Backoff::Wsbench => {
                let pause = grow(Duration::from_millis(100), 2.0, Duration::from_secs(5));
                pause + pause.mul_f64(draw)
            }
        })
    }

    /// Parses `--reconnect=POLICY`: a preset's name, `immediate`, `fixed:DURATION`, or
    /// `exponential:base=D,cap=D,factor=F,jitter=none|full|equal|decorrelated` (each key
    /// optional). The error says what was wrong and what is accepted.
    pub fn parse(spec: &str) -> Result<ReconnectPolicy, String> {
        let spec = spec.trim();
        let (name, rest) = spec.split_once(':').map_or((spec, None), |(name, rest)| (name, Some(rest)));
        let backoff = match (name, rest) {
            (_, None) if preset(name).is_some() => preset(name).unwrap_or(Backoff::Wsbench),
            ("immediate", None) => Backoff::Immediate,
            ("fixed", Some(pause)) => Backoff::Fixed(duration("fixed", pause)?),
            ("exponential", rest) => exponential(rest.unwrap_or(""))?,
            _ => return Err(format!("`{spec}` is not a reconnect policy: {POLICIES}")),
        };
        Ok(ReconnectPolicy { spec: spec.to_owned(), backoff })
    }
}

/// What `--reconnect=` takes, for errors and help.
pub const POLICIES: &str = "write immediate, fixed:1s, exponential:base=100ms,cap=30s,factor=2,jitter=full \
     (jitter none, full, equal or decorrelated), or a library's defaults: wsbench (a bare --reconnect), \
     socket.io-client, phoenix, grpc, signalr";

/// The presets, by the name of the library whose defaults they are.
fn preset(name: &str) -> Option<Backoff> {
    let ms = Duration::from_millis;
    Some(match name {
        "wsbench" => Backoff::Wsbench,
        "socket.io-client" => Backoff::SocketIo { min: ms(1_000), max: ms(5_000), randomization: 0.5 },
        "phoenix" => Backoff::Steps {
            delays: [10, 50, 100, 150, 200, 250, 500, 1_000, 2_000].map(ms).to_vec(),
            then: Some(ms(5_000)),
        },
        "grpc" => Backoff::Grpc { initial: ms(1_000), multiplier: 1.6, max: ms(120_000), jitter: 0.2 },
        "signalr" => Backoff::Steps { delays: [0, 2_000, 10_000, 30_000].map(ms).to_vec(), then: None },
        _ => return None,
    })
}

/// `base=…,cap=…,factor=…,jitter=…`, each optional (100 ms, 30 s, 2, full).
fn exponential(keys: &str) -> Result<Backoff, String> {
    let (mut base, mut cap) = (Duration::from_millis(100), Duration::from_secs(30));
    let (mut factor, mut jitter) = (2.0, Jitter::Full);
    for pair in keys.split(',').map(str::trim).filter(|pair| !pair.is_empty()) {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| format!("`{pair}` is not KEY=VALUE: write e.g. exponential:base=100ms,cap=30s"))?;
        match key.trim() {
            "base" => base = duration("base", value)?,
            "cap" => cap = duration("cap", value)?,
            "factor" => {
                factor = value
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|f| (1.0..=MAX_FACTOR).contains(f))
                    .ok_or_else(|| format!("factor `{value}` is not a number from 1 to {MAX_FACTOR}"))?;
            }
            "jitter" => {
                jitter = match value.trim() {
                    "none" => Jitter::None,
                    "full" => Jitter::Full,
                    "equal" => Jitter::Equal,
                    "decorrelated" => Jitter::Decorrelated,
                    other => {
                        return Err(format!("jitter `{other}`: write none, full, equal or decorrelated"));
                    }
                }
            }
            other => {
                return Err(format!("`{other}` is no key of exponential: write base, cap, factor or jitter"));
            }
        }
    }
    if base.is_zero() || base > cap {
        return Err(format!(
            "base {} must be longer than zero and no longer than cap {}",
            crate::units::format::seconds(base.as_secs_f64()),
            crate::units::format::seconds(cap.as_secs_f64())
        ));
    }
    Ok(Backoff::Exponential { base, factor, cap, jitter })
}

/// A pause of a policy: a duration of at most [`MAX_DURATION`].
fn duration(what: &str, text: &str) -> Result<Duration, String> {
    let pause = crate::units::parse_duration(text.trim()).map_err(|e| format!("{what}: {}", e.problem))?;
    if pause > MAX_DURATION {
        return Err(format!("{what} `{text}` is longer than 168h"));
    }
    Ok(pause)
}

/// `reconnect` in a scenario file: a policy (`"phoenix"`), or `true` for the default one
/// (`false`: off), as the switch it was.
pub(super) fn policy_or_switch<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<String>, D::Error> {
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum PolicyOrSwitch {
        Switch(bool),
        Policy(String),
    }
    Ok(match <PolicyOrSwitch as serde::Deserialize>::deserialize(deserializer)? {
        PolicyOrSwitch::Switch(true) => Some(DEFAULT_POLICY.to_owned()),
        PolicyOrSwitch::Switch(false) => None,
        PolicyOrSwitch::Policy(policy) => Some(policy),
    })
}

/// A number in `[0, 1)` fixed by the connection and the attempt (SplitMix64 of both): the
/// same run reconnects the same way, and connections lost together draw apart.
pub fn draw(index: u64, attempt: u32) -> f64 {
    let mut z =
        index.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ u64::from(attempt).wrapping_add(0xD1B5_4A32_D192_ED03);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(spec: &str) -> ReconnectPolicy {
        ReconnectPolicy::parse(spec).unwrap_or_else(|e| panic!("{spec}: {e}"))
    }

    fn ms(policy: &ReconnectPolicy, attempt: u32, index: u64) -> Option<u128> {
        policy.delay(attempt, index, Duration::ZERO).map(|d| d.as_millis())
    }

    #[test]
    fn immediate_fixed_and_the_table_presets_give_their_documented_pauses() {
        assert_eq!(ms(&policy("immediate"), 5, 1), Some(0));
        assert_eq!(ms(&policy("fixed:1s"), 1, 1), Some(1_000));
        assert_eq!(ms(&policy("fixed:1s"), 9, 2), Some(1_000));
        let phoenix = policy("phoenix");
        let pauses: Vec<Option<u128>> = (1..=11).map(|n| ms(&phoenix, n, 0)).collect();
        let expected = [10, 50, 100, 150, 200, 250, 500, 1_000, 2_000, 5_000, 5_000].map(Some);
        assert_eq!(pauses, expected);
        let signalr = policy("signalr");
        let pauses: Vec<Option<u128>> = (1..=5).map(|n| ms(&signalr, n, 0)).collect();
        assert_eq!(pauses, [Some(0), Some(2_000), Some(10_000), Some(30_000), None], "then it gives up");
    }

    #[test]
    fn exponential_grows_to_its_cap_and_each_jitter_stays_in_its_range() {
        let none = policy("exponential:base=100ms,cap=1s,jitter=none");
        let pauses: Vec<Option<u128>> = (1..=6).map(|n| ms(&none, n, 3)).collect();
        assert_eq!(pauses, [100, 200, 400, 800, 1_000, 1_000].map(Some));
        for index in 0..500 {
            let full = policy("exponential:base=100ms,cap=1s").delay(4, index, Duration::ZERO).unwrap();
            assert!(full <= Duration::from_millis(800), "{full:?}");
            let equal =
                policy("exponential:base=100ms,cap=1s,jitter=equal").delay(4, index, Duration::ZERO).unwrap();
            assert!((Duration::from_millis(400)..=Duration::from_millis(800)).contains(&equal), "{equal:?}");
            let decorrelated = policy("exponential:base=100ms,cap=1s,jitter=decorrelated");
            let pause = decorrelated.delay(4, index, Duration::from_millis(200)).unwrap();
            assert!((Duration::from_millis(100)..=Duration::from_millis(600)).contains(&pause), "{pause:?}");
        }
        // Connections lost together do not come back together.
        let full = policy("exponential:base=1s,cap=1s");
        let distinct: std::collections::BTreeSet<u128> = (0..100).filter_map(|i| ms(&full, 1, i)).collect();
        assert!(distinct.len() > 90, "{distinct:?}");
    }

    #[test]
    fn the_library_presets_follow_their_formulas() {
        // socket.io-client: 1 s doubling to 5 s, each moved by up to half of itself.
        let socketio = policy("socket.io-client");
        for index in 0..200 {
            let first = ms(&socketio, 1, index).unwrap();
            assert!((500..=1_500).contains(&first), "{first}");
            assert!(ms(&socketio, 8, index).unwrap() <= 5_000);
        }
        // gRPC: the first attempt at once, then 1 s × 1.6^(n−2) ± 20 %, at most 120 s × 1.2.
        let grpc = policy("grpc");
        for index in 0..200 {
            assert_eq!(ms(&grpc, 1, index), Some(0));
            let second = ms(&grpc, 2, index).unwrap();
            assert!((800..=1_200).contains(&second), "{second}");
            let third = ms(&grpc, 3, index).unwrap();
            assert!((1_280..=1_920).contains(&third), "{third}");
            assert!(ms(&grpc, 40, index).unwrap() <= 144_000);
        }
        // wsbench's own: 100 ms doubling to 5 s, plus up to as long again.
        let own = policy("wsbench");
        for index in 0..200 {
            assert!((100..200).contains(&ms(&own, 1, index).unwrap()));
            assert!((5_000..10_000).contains(&ms(&own, 20, index).unwrap()));
        }
    }

    #[test]
    fn bad_policies_say_what_is_accepted() {
        let cases = [
            ("sometimes", "`sometimes` is not a reconnect policy: write immediate"),
            ("fixed", "`fixed` is not a reconnect policy"),
            ("fixed:soon", "fixed: `soon` is not a duration"),
            ("fixed:9999h", "fixed `9999h` is longer than 168h"),
            ("exponential:base=1s,cap=100ms", "base 1.00 s must be longer than zero and no longer than cap"),
            ("exponential:base=0s", "must be longer than zero"),
            ("exponential:factor=100", "factor `100` is not a number from 1 to 10"),
            ("exponential:jitter=lots", "jitter `lots`: write none, full, equal or decorrelated"),
            ("exponential:wobble=1", "`wobble` is no key of exponential"),
            ("exponential:base", "`base` is not KEY=VALUE"),
        ];
        for (spec, expected) in cases {
            let error = ReconnectPolicy::parse(spec).unwrap_err();
            assert!(error.contains(expected), "{spec}: {error}");
        }
    }
}
