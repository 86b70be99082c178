//! The flags of `wsbench serve` (not part of the library): the built-in server's listeners,
//! limits and protocols, mapped onto [`ServeConfig`] (`wsbench_server`), whose constants
//! are the defaults shown in `--help`.

use std::net::IpAddr;
use std::path::PathBuf;

use clap::Args;
use wsbench::units::{UnitError, parse_bytes};
use wsbench_server::{
    DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_MAX_CONNECTIONS, DEFAULT_PORT, DEFAULT_PROCESSES, DEFAULT_THREADS,
    ServeConfig, TlsSource,
};

use crate::cli::DurationArg;

/// `serve --max-message`: a size of at most 1 GiB (the largest payload `run` sends).
fn max_message(text: &str) -> Result<u64, UnitError> {
    let bytes = parse_bytes(text)?;
    if bytes == 0 || bytes > wsbench::config::bounds::MAX_PAYLOAD_BYTES {
        return Err(UnitError {
            input: text.to_owned(),
            problem: format!("`{text}`: give a size above zero and at most 1GiB"),
        });
    }
    Ok(bytes)
}

/// `serve --close-code`: a close code a server may send (RFC 6455 §7.4).
fn close_code(text: &str) -> Result<u16, String> {
    text.trim().parse::<u16>().ok().filter(|code| wsbench_proto::is_valid_close_code(*code)).ok_or_else(
        || format!("`{text}` is not a close code a server may send: give 1000–1003, 1007–1014 or 3000–4999"),
    )
}

/// `serve --max-message-memory`: a size above zero and at most 64 GiB.
fn max_message_memory(text: &str) -> Result<u64, UnitError> {
    let bytes = parse_bytes(text)?;
    if bytes == 0 || bytes > wsbench::config::bounds::MAX_MESSAGE_MEMORY {
        return Err(UnitError {
            input: text.to_owned(),
            problem: format!("`{text}`: give a size above zero and at most 64GiB"),
        });
    }
    Ok(bytes)
}

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: IpAddr,
    /// Port for WebSocket and HTTP (0 picks a free port).
    #[arg(long, default_value_t = DEFAULT_PORT)]
    pub port: u16,
    /// Event-loop threads sharing the port (SO_REUSEPORT).
    #[arg(long, default_value_t = DEFAULT_THREADS as u16, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: u16,
    /// Serve wss/https; without --cert/--key a self-signed certificate is generated.
    #[arg(long)]
    pub tls: bool,
    /// PEM certificate chain (needs --key, implies --tls).
    #[arg(long, requires = "key")]
    pub cert: Option<PathBuf>,
    /// PEM private key (needs --cert, implies --tls).
    #[arg(long, requires = "cert")]
    pub key: Option<PathBuf>,
    /// Extra raw TCP echo port (0 picks a free port).
    #[arg(long)]
    pub tcp_port: Option<u16>,
    /// Largest message accepted, in bytes (e.g. 16MiB, at most 1GiB); larger ones are closed
    /// with 1009.
    #[arg(long, value_parser = max_message, default_value = "128MiB")]
    pub max_message: u64,
    /// What all connections of one server process may hold together in messages still
    /// arriving, reassembled or inflated (e.g. 256MiB, at most 64GiB); a connection that
    /// would pass it is closed with 1009.
    #[arg(long, value_parser = max_message_memory, default_value = "1GiB")]
    pub max_message_memory: u64,
    /// Refuse connections beyond this many (at most 10,000,000) [default: the open-file
    /// limit]
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub max_connections: Option<u64>,
    /// Close connections that have not completed their handshake by then (at most 7 days).
    #[arg(long, default_value_t = DurationArg(DEFAULT_HANDSHAKE_TIMEOUT), allow_hyphen_values = true)]
    pub handshake_timeout: DurationArg,
    /// Server processes sharing the port (SO_REUSEPORT), each with its own open-file limit.
    #[arg(long, default_value_t = DEFAULT_PROCESSES as u16, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub processes: u16,
    /// Decline permessage-deflate (RFC 7692) offers; by default they are accepted.
    #[arg(long)]
    pub no_deflate: bool,
    /// Serve the pub/sub protocol of docs/protocols.md (`{"sub":…}`, `{"pub":…}`) on one
    /// event-loop thread; other messages are still echoed.
    #[arg(long, conflicts_with_all = ["threads", "processes"])]
    pub pubsub: bool,
    /// The close code `kill -USR2` closes every connection with, the server going on (as a
    /// graceful restart closes them): 1012 (Service Restart), 1001 (Going Away), or another
    /// code a client may be sent (1000–1003, 1007–1014, 3000–4999)
    #[arg(long, value_parser = close_code, default_value_t = wsbench_server::DEFAULT_CLOSE_CODE)]
    pub close_code: u16,
    /// Also serve WebSockets over HTTP/3 (RFC 9220) on UDP port --port, with --tls's certificate.
    #[arg(long, conflicts_with_all = ["processes", "pubsub"])]
    pub h3: bool,
    /// With --h3, refuse WebSockets as a plain HTTP/3 server (no SETTINGS_ENABLE_CONNECT_PROTOCOL).
    #[arg(long, requires = "h3")]
    pub h3_refuse_websockets: bool,
    /// Read the whole configuration as JSON from stdin: how wsbench starts a server of its
    /// own (the built-in server of a run, each process of `--processes N`).
    #[arg(long = wsbench_supervisor::SETTINGS_FLAG, hide = true, exclusive = true)]
    pub settings_from_stdin: bool,
}

impl ServeArgs {
    /// Serves until SIGINT or SIGTERM: in this process, or with `--processes N` as N
    /// processes of this program sharing the port. A server started by wsbench itself
    /// (`--settings-from-stdin`) takes its whole configuration from stdin instead of flags.
    pub fn serve(self) -> Result<(), wsbench_server::ServeError> {
        let config = if self.settings_from_stdin {
            wsbench_supervisor::read_settings(std::io::stdin().lock())?
        } else {
            self.into_config()
        };
        if config.processes <= 1 {
            wsbench_server::serve_until_signalled(&config)
        } else {
            wsbench_server::serve_processes(&config, "serve")
        }
    }

    pub fn into_config(self) -> ServeConfig {
        // Destructured without `..`: a new flag does not compile until it is mapped.
        let ServeArgs {
            host,
            port,
            threads,
            tls,
            cert,
            key,
            tcp_port,
            max_message,
            max_message_memory,
            max_connections,
            handshake_timeout,
            processes,
            no_deflate,
            pubsub,
            close_code,
            h3,
            h3_refuse_websockets,
            settings_from_stdin: _,
        } = self;
        let tls = match (cert, key) {
            (Some(cert), Some(key)) => Some(TlsSource::Files { cert, key }),
            _ if tls => Some(TlsSource::SelfSigned),
            _ => None,
        };
        ServeConfig {
            host,
            port,
            threads: usize::from(threads),
            processes: usize::from(processes),
            tls,
            tcp_port,
            max_message,
            max_message_memory,
            max_connections: max_connections.map_or(DEFAULT_MAX_CONNECTIONS, |n| n as usize),
            handshake_timeout: handshake_timeout.0,
            deflate: !no_deflate,
            pubsub,
            close_code,
            h3,
            h3_refuse_websockets,
            ..ServeConfig::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    fn parse_serve(args: &[&str]) -> ServeArgs {
        match Cli::try_parse_from(std::iter::once("wsbench").chain(args.iter().copied())).unwrap().command {
            Command::Serve(serve) => serve,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn every_serve_flag_reaches_the_config() {
        let given = parse_serve(&[
            "serve",
            "--host",
            "127.0.0.2",
            "--port",
            "0",
            "--threads",
            "3",
            "--cert",
            "c.pem",
            "--key",
            "k.pem",
            "--tcp-port",
            "0",
            "--max-message",
            "1MiB",
            "--max-message-memory",
            "64MiB",
            "--max-connections",
            "500",
            "--handshake-timeout",
            "3s",
            "--processes",
            "4",
            "--no-deflate",
        ]);
        let expected = ServeConfig {
            host: IpAddr::from([127, 0, 0, 2]),
            port: 0,
            threads: 3,
            processes: 4,
            tls: Some(TlsSource::Files { cert: "c.pem".into(), key: "k.pem".into() }),
            tcp_port: Some(0),
            max_message: 1 << 20,
            max_message_memory: 64 << 20,
            max_connections: 500,
            handshake_timeout: Duration::from_secs(3),
            deflate: false,
            ..ServeConfig::default()
        };
        assert_eq!(given.into_config(), expected);
        assert!(parse_serve(&["serve", "--pubsub"]).into_config().pubsub);
        assert_eq!(parse_serve(&["serve", "--tls"]).into_config().tls, Some(TlsSource::SelfSigned));
    }
}
