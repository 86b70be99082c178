//! `wsbench rtt`: the single-connection round-trip microbenchmark of the HTTP/WS client round-trip benchmark, done the
//! google-benchmark way. One connection per protocol — a raw TCP socket (the baseline),
//! HTTP, HTTPS, ws and wss, ws and wss over HTTP/2 (RFC 8441: `ws-h2`, `wss-h2`) and wss
//! over HTTP/3 (RFC 9220, QUIC: `wss-h3`) —
//! sends prepared requests one after another and waits for each
//! complete answer; repeats of many round trips give the mean, median and standard deviation
//! of the time and client CPU per round trip, and every protocol is set against the raw TCP
//! round trip measured in the same run.
//!
//! Without `--target` it starts the built-in server twice (plain with a raw TCP echo port,
//! and `--tls`), pinned to the first CPU while the client thread runs on the second, so the
//! numbers compare the protocols and not the scheduler.
//!
//! The parts: [`config`] (flags → [`RttConfig`]), [`clients`] (the clients; those over
//! HTTP/2 in `h2_client`, over HTTP/3 in `h3_client`), [`bench`] (the timed loop), [`stats`] (mean/median/stddev) and [`json`] (the result
//! file); the terminal table is [`crate::report::render_rtt`].

pub mod bench;
pub mod clients;
pub mod config;
mod h2_client;
mod h3_client;
pub mod json;
pub mod stats;

use std::io;

use wsbench_server::{ServeConfig, TlsSource};

pub use config::{Protocol, RttConfig, RttTarget};
pub use stats::{Quantiles, Repeat, Summary};

use crate::builtin::{BuiltinError, BuiltinServer};
use crate::config::ConfigError;
use crate::samples::MachineFacts;
use clients::{IO_TIMEOUT, Stage};

pub use config::{DEFAULT_ITERATIONS, DEFAULT_PAYLOAD_BYTES, DEFAULT_REPEATS, RttSettings};

/// Why a measurement could not be made. Each message names the protocol, the target and
/// what to check.
#[derive(Debug, thiserror::Error)]
pub enum RttError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Server(#[from] BuiltinError),
    #[error(
        "{protocol} target {target}: {} failed: {}{}",
        stage.describe(),
        describe_io(error),
        connect_hint(*protocol, *stage, error)
    )]
    Connect { protocol: Protocol, target: String, stage: Stage, error: io::Error },
    #[error(
        "{protocol} target {target}: a round trip failed: {}{}",
        describe_io(error),
        round_trip_hint(*protocol)
    )]
    RoundTrip { protocol: Protocol, target: String, error: io::Error },
    #[error("cannot start the measuring thread")]
    Thread(#[source] io::Error),
    #[error("the measuring thread panicked")]
    Panicked,
    /// The `--json` file could not be written (the message names it; the cause follows).
    #[error(transparent)]
    Write(crate::result::ResultError),
}

fn describe_io(error: &io::Error) -> String {
    match error.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
            format!("no answer within {} s", IO_TIMEOUT.as_secs())
        }
        _ => error.to_string(),
    }
}

fn connect_hint(protocol: Protocol, stage: Stage, error: &io::Error) -> String {
    match stage {
        Stage::Resolve => format!("; check the host name in --target {protocol}=HOST:PORT"),
        Stage::Connect if error.kind() == io::ErrorKind::ConnectionRefused => {
            format!("; is a server listening there? Start one or fix --target {protocol}=HOST:PORT")
        }
        Stage::Connect => format!("; check --target {protocol}=HOST:PORT"),
        Stage::Tls if error.to_string().contains("certificate") => {
            "; for a self-signed certificate add --insecure".to_owned()
        }
        Stage::Tls => "; is it a TLS server?".to_owned(),
        Stage::Upgrade => "; is it a WebSocket server (right port and path)?".to_owned(),
    }
}

fn round_trip_hint(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::Tcp => "; the tcp target must echo what it receives (e.g. `wsbench serve --tcp-port`)",
        Protocol::Http | Protocol::Https => {
            "; the server must keep the connection alive and send Content-Length"
        }
        Protocol::Ws | Protocol::Wss => "; the server must echo binary messages",
        Protocol::WsH2 | Protocol::WssH2 => {
            "; the server must allow WebSockets over HTTP/2 (RFC 8441) and echo binary messages"
        }
        Protocol::WssH3 => {
            "; the server must allow WebSockets over HTTP/3 (RFC 9220) and echo binary messages"
        }
    }
}

/// One protocol's figures, per round trip, across the timed repeats.
#[derive(Debug, Clone, PartialEq)]
pub struct ProtocolResult {
    pub protocol: Protocol,
    /// `HOST:PORT` measured.
    pub target: String,
    /// Mean wall time per round trip of each repeat, summarised (µs).
    pub wall_us: Summary,
    /// Client CPU time per round trip of each repeat, summarised (µs).
    pub cpu_us: Summary,
    /// Quantiles of the single round trips of every timed repeat.
    pub quantiles: Quantiles,
    /// Mean wall time per round trip over raw TCP's, when tcp was measured.
    pub ratio_to_tcp: Option<f64>,
    pub iterations: u64,
    pub repeats: u32,
    pub per_repeat: Vec<Repeat>,
}

/// Everything `wsbench rtt` measured, with the facts needed to read it.
#[derive(Debug, Clone)]
pub struct RttResult {
    pub config: RttConfig,
    pub machine: MachineFacts,
    pub started_at_unix_ms: u64,
    /// The CPU the client thread was pinned to, if any.
    pub client_cpu: Option<usize>,
    /// The CPU the built-in servers were pinned to, if any.
    pub server_cpu: Option<usize>,
    /// In table order.
    pub protocols: Vec<ProtocolResult>,
}

/// The `wsbench rtt` command: validates the flags (a bad one is [`RttError::Config`],
/// exit 2), measures, and writes `--json` if asked.
pub fn command(settings: RttSettings) -> Result<RttResult, RttError> {
    let config = RttConfig::from_settings(settings)?;
    let result = run(&config)?;
    if let Some(path) = &config.json {
        json::write(&result, path).map_err(RttError::Write)?;
    }
    Ok(result)
}

/// Measures every protocol of `config` (starting the built-in servers when it has no targets).
pub fn run(config: &RttConfig) -> Result<RttResult, RttError> {
    let started_at_unix_ms = crate::machine::unix_ms();
    let allowed = crate::affinity::allowed_cpus();
    let (server_cpu, client_cpu) = if config.builtin() && allowed.len() >= 2 {
        (Some(allowed[0]), Some(allowed[1]))
    } else {
        (None, None)
    };
    // The servers live until the measurement is over; they stop when dropped.
    let (targets, _servers) = if config.builtin() {
        start_builtin(&config.protocols, server_cpu)?
    } else {
        (config.targets.clone(), Vec::new())
    };
    let insecure = config.insecure || config.builtin();
    let tls = bench::needs_tls(&targets).then(|| crate::engine::tls::client_config(insecure));
    let (repeats, iterations, payload_bytes) =
        (config.repeats, config.iterations, config.payload_bytes as usize);
    let thread_targets = targets.clone();
    let measuring = std::thread::Builder::new()
        .name("wsbench-rtt".into())
        .spawn(move || {
            let pinned = match client_cpu {
                Some(cpu) => match crate::affinity::pin_current_thread(cpu) {
                    Ok(()) => Some(cpu),
                    Err(error) => {
                        eprintln!("wsbench rtt: running the client unpinned: {error}");
                        None
                    }
                },
                None => None,
            };
            bench::measure(&thread_targets, repeats, iterations, payload_bytes, tls.as_ref())
                .map(|measured| (measured, pinned))
        })
        .map_err(RttError::Thread)?;
    let (measured, client_cpu) = measuring.join().map_err(|_| RttError::Panicked)??;
    Ok(RttResult {
        config: config.clone(),
        machine: crate::machine::machine_facts(),
        started_at_unix_ms,
        client_cpu,
        server_cpu,
        protocols: summarise(measured),
    })
}

/// Turns raw measurements into per-protocol figures with ratios to tcp.
pub fn summarise(measured: Vec<bench::Measured>) -> Vec<ProtocolResult> {
    let wall =
        |m: &bench::Measured| -> Vec<f64> { m.repeats.iter().map(Repeat::wall_us_per_round_trip).collect() };
    let tcp_mean =
        measured.iter().find(|m| m.target.protocol == Protocol::Tcp).map(|m| stats::mean(&wall(m)));
    measured
        .iter()
        .map(|m| {
            let wall_us = Summary::of(&wall(m));
            let cpu: Vec<f64> = m.repeats.iter().map(Repeat::cpu_us_per_round_trip).collect();
            ProtocolResult {
                protocol: m.target.protocol,
                target: m.target.authority(),
                wall_us,
                cpu_us: Summary::of(&cpu),
                quantiles: Quantiles::of(&m.histogram),
                ratio_to_tcp: stats::ratio(wall_us.mean, tcp_mean),
                iterations: m.repeats.first().map_or(0, |r| r.iterations),
                repeats: m.repeats.len() as u32,
                per_repeat: m.repeats.clone(),
            }
        })
        .collect()
}

/// Starts the built-in server(s) the protocols need: a plain one with a raw TCP echo port
/// (tcp, http, ws) and a `--tls` one (https, wss; with `--h3` for wss-h3). Returns one
/// target per protocol.
fn start_builtin(
    protocols: &[Protocol],
    server_cpu: Option<usize>,
) -> Result<(Vec<RttTarget>, Vec<BuiltinServer>), RttError> {
    let cpus: Vec<usize> = server_cpu.into_iter().collect();
    let mut servers = Vec::new();
    let mut urls: Vec<String> = Vec::new();
    if protocols.iter().any(|p| !p.is_tls()) {
        let config = ServeConfig { tcp_port: Some(0), ..BuiltinServer::config() };
        let server = BuiltinServer::start(&cpus, &config)?;
        urls.extend(server.urls.iter().cloned());
        servers.push(server);
    }
    if protocols.iter().any(|p| p.is_tls()) {
        let h3 = protocols.contains(&Protocol::WssH3);
        let config = ServeConfig { tls: Some(TlsSource::SelfSigned), h3, ..BuiltinServer::config() };
        let server = BuiltinServer::start(&cpus, &config)?;
        urls.extend(server.urls.iter().cloned());
        servers.push(server);
    }
    let mut targets = Vec::new();
    for &protocol in protocols {
        let scheme = match protocol {
            Protocol::Tcp => "tcp",
            Protocol::Http | Protocol::Ws | Protocol::WsH2 => "ws",
            Protocol::Https | Protocol::Wss | Protocol::WssH2 => "wss",
            Protocol::WssH3 => "h3",
        };
        let url = urls.iter().find(|u| u.starts_with(&format!("{scheme}://"))).ok_or_else(|| {
            BuiltinError::Start(format!(
                "its `listening on` line has no {scheme}:// URL ({})",
                urls.join(" ")
            ))
        })?;
        let target = RttTarget::parse(&format!("{protocol}={url}"))
            .map_err(|e| BuiltinError::Start(format!("unexpected URL {url}: {e}")))?;
        targets.push(target);
    }
    Ok((targets, servers))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured(protocol: Protocol, wall_ns: &[u64]) -> bench::Measured {
        let mut histogram = stats::new_ns_histogram();
        histogram.record(wall_ns[0] / 10).unwrap();
        bench::Measured {
            target: RttTarget { protocol, host: "127.0.0.1".into(), port: 1, path: "/".into() },
            repeats: wall_ns.iter().map(|&w| Repeat { iterations: 10, wall_ns: w, cpu_ns: w / 2 }).collect(),
            histogram,
        }
    }

    #[test]
    fn ratios_are_to_the_tcp_mean() {
        let results = summarise(vec![
            measured(Protocol::Tcp, &[200_000, 200_000]),
            measured(Protocol::Ws, &[240_000, 260_000]),
        ]);
        assert_eq!(results[0].wall_us.mean, 20.0);
        assert_eq!(results[0].ratio_to_tcp, Some(1.0));
        assert_eq!(results[1].wall_us.mean, 25.0);
        assert_eq!(results[1].cpu_us.mean, 12.5);
        assert_eq!(results[1].ratio_to_tcp, Some(1.25));
        assert_eq!((results[1].iterations, results[1].repeats), (10, 2));
    }

    #[test]
    fn without_tcp_there_is_no_ratio() {
        let results = summarise(vec![measured(Protocol::Http, &[300_000])]);
        assert_eq!(results[0].ratio_to_tcp, None);
    }

    #[test]
    fn errors_name_the_protocol_target_and_fix() {
        let error = RttError::Connect {
            protocol: Protocol::Ws,
            target: "127.0.0.1:9".into(),
            stage: Stage::Connect,
            error: io::Error::from(io::ErrorKind::ConnectionRefused),
        };
        let text = error.to_string();
        assert!(text.starts_with("ws target 127.0.0.1:9: connecting failed: "), "{text}");
        assert!(text.contains("--target ws=HOST:PORT"), "{text}");
        let error = RttError::RoundTrip {
            protocol: Protocol::Tcp,
            target: "h:1".into(),
            error: io::Error::from(io::ErrorKind::WouldBlock),
        };
        assert!(error.to_string().contains("no answer within 5 s"), "{error}");
    }
}
