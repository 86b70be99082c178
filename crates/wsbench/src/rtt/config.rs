//! What `wsbench rtt` is asked to do, validated: which protocols, against which servers, how
//! many round trips. Flags land in [`RttSettings`]; [`RttConfig::from_settings`] turns
//! them into an [`RttConfig`] or a one-line [`ConfigError`] naming the flag and what to do,
//! which the binary reports as a usage error (exit 2).

use std::path::PathBuf;

use serde::Serialize;

use crate::config::ConfigError;
use crate::units::parse_bytes;

pub const DEFAULT_REPEATS: u32 = 20;
pub const DEFAULT_ITERATIONS: u64 = 2000;
pub const DEFAULT_PAYLOAD_BYTES: u64 = 20;

/// The flags of `wsbench rtt`, as given.
#[derive(Debug, Clone, clap::Args)]
pub struct RttSettings {
    /// A server to measure, as PROTO=HOST:PORT (e.g. ws=127.0.0.1:8080); repeatable.
    /// Without any, wsbench starts its built-in servers.
    #[arg(long = "target", value_name = "PROTO=HOST:PORT")]
    pub targets: Vec<String>,
    /// Protocols to measure, comma-separated [default: all eight, or those given a --target]
    #[arg(long, value_delimiter = ',', value_name = "tcp,http,https,ws,wss,ws-h2,wss-h2,wss-h3")]
    pub protocols: Vec<String>,
    /// Timed repeats per protocol (after one untimed warm-up repeat; at most 10,000).
    #[arg(long, default_value_t = DEFAULT_REPEATS, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub repeats: u32,
    /// Round trips per repeat (at most 100,000,000).
    #[arg(long, default_value_t = DEFAULT_ITERATIONS, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub iterations: u64,
    /// Bytes per tcp/ws message (e.g. 20, 4KiB; at most 16MiB).
    #[arg(long, value_parser = parse_bytes, default_value_t = DEFAULT_PAYLOAD_BYTES)]
    pub payload_bytes: u64,
    /// Also write the results as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Accept any TLS certificate (implied for the built-in server's self-signed one).
    #[arg(long)]
    pub insecure: bool,
}

/// Largest `--payload-bytes`: a message this size still echoes in one piece on loopback.
pub const MAX_PAYLOAD_BYTES: u64 = 16 * 1024 * 1024;

/// The five protocols of the seed's round-trip benchmark, in table order (the raw TCP
/// baseline first), WebSocket over HTTP/2 (RFC 8441) plain and over TLS, and over HTTP/3
/// (RFC 9220, QUIC: always TLS).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// Raw TCP echo: write N bytes, read N bytes back (the baseline).
    Tcp,
    /// `GET /` on a keep-alive HTTP/1.1 connection.
    Http,
    /// The same over TLS.
    Https,
    /// A masked binary WebSocket frame of N bytes and its echo.
    Ws,
    /// The same over TLS.
    Wss,
    /// A WebSocket opened as an HTTP/2 extended CONNECT stream (h2c), and the same frame.
    #[serde(rename = "ws-h2")]
    WsH2,
    /// The same over TLS (ALPN h2).
    #[serde(rename = "wss-h2")]
    WssH2,
    /// A WebSocket opened as an HTTP/3 extended CONNECT stream of a QUIC connection (TLS 1.3,
    /// ALPN h3), and the same frame.
    #[serde(rename = "wss-h3")]
    WssH3,
}

impl Protocol {
    pub const ALL: [Protocol; 8] = [
        Protocol::Tcp,
        Protocol::Http,
        Protocol::Https,
        Protocol::Ws,
        Protocol::Wss,
        Protocol::WsH2,
        Protocol::WssH2,
        Protocol::WssH3,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Protocol::Tcp => "tcp",
            Protocol::Http => "http",
            Protocol::Https => "https",
            Protocol::Ws => "ws",
            Protocol::Wss => "wss",
            Protocol::WsH2 => "ws-h2",
            Protocol::WssH2 => "wss-h2",
            Protocol::WssH3 => "wss-h3",
        }
    }

    /// Whether the protocol runs over TLS.
    pub fn is_tls(self) -> bool {
        matches!(self, Protocol::Https | Protocol::Wss | Protocol::WssH2 | Protocol::WssH3)
    }

    /// Parses a protocol name (case-insensitive); the error says which names exist.
    pub fn parse(name: &str, setting: &'static str) -> Result<Protocol, ConfigError> {
        Protocol::ALL.into_iter().find(|p| p.name().eq_ignore_ascii_case(name.trim())).ok_or_else(|| {
            ConfigError::Invalid {
                setting,
                problem: format!(
                    "unknown protocol `{}`: use tcp, http, https, ws, wss, ws-h2, wss-h2 or wss-h3",
                    name.trim()
                ),
            }
        })
    }
}

impl std::fmt::Display for Protocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One server to measure: `PROTO=HOST:PORT[/path]` (a `scheme://` prefix is accepted too).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RttTarget {
    pub protocol: Protocol,
    /// Host name or IP address, without brackets (TLS server name).
    pub host: String,
    pub port: u16,
    /// Request path for http/https/ws/wss (`/` unless given).
    pub path: String,
}

impl RttTarget {
    /// `HOST:PORT` as written in a Host header (IPv6 addresses in brackets).
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// Parses `PROTO=HOST:PORT[/path]`.
    pub fn parse(spec: &str) -> Result<RttTarget, ConfigError> {
        let invalid = |problem: String| ConfigError::Invalid { setting: "target", problem };
        let (name, address) = spec.split_once('=').ok_or_else(|| {
            invalid(format!("`{spec}` is not PROTO=HOST:PORT (e.g. --target ws=127.0.0.1:8080)"))
        })?;
        let protocol = Protocol::parse(name, "target")?;
        let address = address.trim();
        let without_scheme = address.split_once("://").map_or(address, |(_, rest)| rest);
        let (authority, path) = match without_scheme.find('/') {
            Some(at) => (&without_scheme[..at], &without_scheme[at..]),
            None => (without_scheme, "/"),
        };
        let bad =
            || invalid(format!("`{address}` is not HOST:PORT (e.g. --target {protocol}=127.0.0.1:8080)"));
        let (host, port) = authority.rsplit_once(':').ok_or_else(bad)?;
        let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
        let port: u16 = port.parse().map_err(|_| bad())?;
        if host.is_empty() || port == 0 {
            return Err(bad());
        }
        Ok(RttTarget { protocol, host: host.to_owned(), port, path: path.to_owned() })
    }
}

/// A validated `wsbench rtt` configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RttConfig {
    /// In table order, without duplicates.
    pub protocols: Vec<Protocol>,
    /// Explicit servers, one per protocol; empty means "start the built-in servers".
    pub targets: Vec<RttTarget>,
    /// Timed repeats per protocol (one untimed warm-up repeat comes first).
    pub repeats: u32,
    /// Round trips per repeat.
    pub iterations: u64,
    /// Bytes per tcp/ws/wss message.
    pub payload_bytes: u64,
    /// Accept any TLS certificate (always for the built-in server).
    pub insecure: bool,
    #[serde(skip)]
    pub json: Option<PathBuf>,
}

impl RttConfig {
    /// Validates the flags. With targets and no `--protocols`, the targeted protocols run;
    /// with both, every protocol asked for needs a target.
    pub fn from_settings(args: RttSettings) -> Result<RttConfig, ConfigError> {
        let mut targets = Vec::new();
        for spec in &args.targets {
            let target = RttTarget::parse(spec)?;
            if targets.iter().any(|t: &RttTarget| t.protocol == target.protocol) {
                return Err(ConfigError::Invalid {
                    setting: "target",
                    problem: format!("{} is given twice: one --target per protocol", target.protocol),
                });
            }
            targets.push(target);
        }
        let mut protocols = if args.protocols.is_empty() {
            if targets.is_empty() {
                Protocol::ALL.to_vec()
            } else {
                targets.iter().map(|t| t.protocol).collect()
            }
        } else {
            args.protocols.iter().map(|name| Protocol::parse(name, "protocols")).collect::<Result<_, _>>()?
        };
        protocols.sort();
        protocols.dedup();
        if !targets.is_empty() {
            if let Some(missing) = protocols.iter().find(|p| !targets.iter().any(|t| t.protocol == **p)) {
                return Err(ConfigError::Invalid {
                    setting: "target",
                    problem: format!(
                        "{missing} has no target: add --target {missing}=HOST:PORT, or leave it out of \
                         --protocols (without any --target the built-in servers are used)"
                    ),
                });
            }
            targets.retain(|t| protocols.contains(&t.protocol));
            targets.sort_by_key(|t| t.protocol);
        }
        if args.payload_bytes == 0 || args.payload_bytes > MAX_PAYLOAD_BYTES {
            return Err(ConfigError::Invalid {
                setting: "payload-bytes",
                problem: format!("{} is out of range: give 1 B to 16 MiB", args.payload_bytes),
            });
        }
        if let Some(path) = &args.json {
            // Fail before measuring, not after, when the file cannot go where it is asked to.
            crate::config::check_output_file("json", path)?;
        }
        Ok(RttConfig {
            protocols,
            targets,
            repeats: args.repeats.max(1),
            iterations: args.iterations.max(1),
            payload_bytes: args.payload_bytes,
            insecure: args.insecure,
            json: args.json,
        })
    }

    /// Whether wsbench starts its own servers (no `--target`).
    pub fn builtin(&self) -> bool {
        self.targets.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(targets: &[&str], protocols: &[&str]) -> RttSettings {
        RttSettings {
            targets: targets.iter().map(|s| s.to_string()).collect(),
            protocols: protocols.iter().map(|s| s.to_string()).collect(),
            repeats: 3,
            iterations: 10,
            payload_bytes: 20,
            json: None,
            insecure: false,
        }
    }

    #[test]
    fn targets_parse_with_or_without_scheme_and_path() {
        let t = RttTarget::parse("ws=127.0.0.1:8080").unwrap();
        assert_eq!(
            (t.protocol, t.host.as_str(), t.port, t.path.as_str()),
            (Protocol::Ws, "127.0.0.1", 8080, "/")
        );
        let t = RttTarget::parse("WSS=wss://localhost:443/echo").unwrap();
        assert_eq!(
            (t.protocol, t.host.as_str(), t.port, t.path.as_str()),
            (Protocol::Wss, "localhost", 443, "/echo")
        );
        let t = RttTarget::parse("tcp=[::1]:9000").unwrap();
        assert_eq!((t.host.as_str(), t.authority()), ("::1", "[::1]:9000".to_owned()));
        for bad in ["ws", "ws=127.0.0.1", "ws=:80", "ws=h:0", "ws=h:http", "gopher=h:70"] {
            assert!(RttTarget::parse(bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn protocols_default_to_all_or_to_the_targeted_ones() {
        assert_eq!(RttConfig::from_settings(args(&[], &[])).unwrap().protocols, Protocol::ALL);
        let config = RttConfig::from_settings(args(&["ws=h:1", "tcp=h:2"], &[])).unwrap();
        assert_eq!(config.protocols, [Protocol::Tcp, Protocol::Ws]);
        assert_eq!(config.targets[0].protocol, Protocol::Tcp);
        let config = RttConfig::from_settings(args(&[], &["wss", "tcp", "tcp"])).unwrap();
        assert_eq!(config.protocols, [Protocol::Tcp, Protocol::Wss]);
    }

    #[test]
    fn usage_errors_name_the_flag_and_the_fix() {
        let error = RttConfig::from_settings(args(&[], &["tcp", "quic"])).unwrap_err().to_string();
        assert_eq!(
            error,
            "--protocols: unknown protocol `quic`: use tcp, http, https, ws, wss, ws-h2, wss-h2 or wss-h3"
        );
        let error = RttConfig::from_settings(args(&["tcp=h:1"], &["tcp", "https"])).unwrap_err().to_string();
        assert!(error.contains("https has no target: add --target https=HOST:PORT"), "{error}");
        let error = RttConfig::from_settings(args(&["tcp=h:1", "tcp=h:2"], &[])).unwrap_err().to_string();
        assert!(error.contains("given twice"), "{error}");
        let mut zero = args(&[], &[]);
        zero.payload_bytes = 0;
        assert!(RttConfig::from_settings(zero).unwrap_err().to_string().starts_with("--payload-bytes"));
    }
}
