//! `http2`: WebSockets over HTTP/2 (RFC 8441), many on one TCP connection. `ws://` speaks
//! h2c with prior knowledge, `wss://` negotiates ALPN `h2`. A WebSocket joins the carrier
//! being filled ([`carrier::H2Carrier`]) until it holds `--streams-per-connection`, then a
//! new one connects; it opens as an extended CONNECT stream ([`request`]) once the server's
//! SETTINGS allow it. Before any load, [`check`] makes sure the server does. HTTP/2 itself
//! (framing, HPACK, flow control) is the `h2` crate's.

mod carrier;
mod check;
mod request;

pub use request::{NOT_SENT, agree};

use std::io;

use super::{Carrier, CheckError, Dial, http1};
use crate::config::{ConfigError, TransportSpec, invalid_setting};
use crate::engine::Job;
use crate::options::{Kind, OptionSpec, OptionValues};
use carrier::H2Carrier;

/// RFC 8441's extended CONNECT over HTTP/2.
#[derive(Debug)]
pub struct Http2;

/// `--streams-per-connection` when not given.
pub const DEFAULT_STREAMS_PER_CONNECTION: u64 = 100;
/// The most `--streams-per-connection` allows (servers cap streams far lower: HAProxy at
/// 100, nghttp2 and h2 at a few hundred by default).
pub const MAX_STREAMS_PER_CONNECTION: u64 = 10_000;

/// `--streams-per-connection`.
pub const STREAMS_PER_CONNECTION: OptionSpec = OptionSpec {
    flag: "streams-per-connection",
    key: "streams-per-connection",
    kind: Kind::Count,
    value_name: "S",
    default: "100",
    bound: "1 to 10,000",
    help: "WebSockets per TCP or QUIC connection (--transport h2 or h3)",
    scenarios: &[],
};

/// `--http2`: the same as `--transport h2`.
pub const HTTP2: OptionSpec = OptionSpec {
    flag: "http2",
    key: "http2",
    kind: Kind::Switch,
    value_name: "",
    default: "",
    bound: "",
    help: "the same as --transport h2 (h2c with prior knowledge for ws://, ALPN h2 for wss://)",
    scenarios: &[],
};

impl Dial for Http2 {
    fn name(&self) -> &'static str {
        "http2"
    }
    fn flag_name(&self) -> &'static str {
        "h2"
    }
    fn title(&self) -> &'static str {
        "HTTP/2 (RFC 8441)"
    }
    fn options(&self) -> &'static [OptionSpec] {
        &[STREAMS_PER_CONNECTION, HTTP2]
    }
    /// `--streams-per-connection`: 1 to [`MAX_STREAMS_PER_CONNECTION`].
    fn spec(&self, given: &OptionValues) -> Result<TransportSpec, ConfigError> {
        shared_spec(self.name(), given)
    }

    fn alpn(&self) -> &'static [&'static [u8]] {
        &[b"h2"]
    }

    fn carries(&self) -> bool {
        true
    }

    fn check(&self, job: &Job) -> Result<(), CheckError> {
        check::server_allows_websockets(job)
    }

    fn new_carrier(&self, job: &Job, index: u64, room: usize) -> io::Result<Box<dyn Carrier>> {
        Ok(Box::new(H2Carrier::new(http1::connect(job, index)?, room)))
    }
}

/// The transport block of a member whose WebSockets share connections: its name and
/// `--streams-per-connection`, 1 to [`MAX_STREAMS_PER_CONNECTION`] (HTTP/2 and HTTP/3 alike).
pub fn shared_spec(name: &'static str, given: &OptionValues) -> Result<TransportSpec, ConfigError> {
    let streams = given.count(&STREAMS_PER_CONNECTION).unwrap_or(DEFAULT_STREAMS_PER_CONNECTION);
    if !(1..=MAX_STREAMS_PER_CONNECTION).contains(&streams) {
        return Err(invalid_setting(
            STREAMS_PER_CONNECTION.flag,
            format!("{streams} is out of range: use 1 to {MAX_STREAMS_PER_CONNECTION}"),
        ));
    }
    Ok(TransportSpec { name, streams_per_connection: streams, default: false })
}
