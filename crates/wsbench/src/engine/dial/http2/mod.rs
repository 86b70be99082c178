//! `http2`: WebSockets over HTTP/2 (RFC 8441), many on one TCP connection. `ws://` speaks
//! h2c with prior knowledge, `wss://` negotiates ALPN `h2`. A WebSocket joins the carrier
//! being filled ([`carrier::H2Carrier`]) until it holds `--streams-per-connection`, then a
//! new one connects; it opens as an extended CONNECT stream ([`request`]) once the server's
//! SETTINGS allow it. Before any load, [`check`] makes sure the server does. HTTP/2 itself
//! (framing, HPACK, flow control) is the `h2` crate's.

mod carrier;
mod check;
mod request;

use std::io;
use std::time::Instant;

use wsbench_proto::{Decoder, Reservation, Role};

use super::{Carriers, Dial, http1};
use crate::config::{ConfigError, TransportSpec, invalid_setting};
use crate::engine::Job;
use crate::engine::conn::ClientConn;
use crate::engine::handshake_failure::Upgrade;
use crate::engine::stream::ByteStream;
use crate::metrics::Counters;
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
    help: "WebSockets per TCP connection",
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
        let streams = given.count(&STREAMS_PER_CONNECTION).unwrap_or(DEFAULT_STREAMS_PER_CONNECTION);
        if !(1..=MAX_STREAMS_PER_CONNECTION).contains(&streams) {
            return Err(invalid_setting(
                STREAMS_PER_CONNECTION.flag,
                format!("{streams} is out of range: use 1 to {MAX_STREAMS_PER_CONNECTION}"),
            ));
        }
        Ok(TransportSpec { name: self.name(), streams_per_connection: streams, default: false })
    }

    fn alpn(&self) -> &'static [&'static [u8]] {
        &[b"h2"]
    }

    fn carries(&self) -> bool {
        true
    }

    fn check(&self, job: &Job) -> Result<(), String> {
        check::server_allows_websockets(job)
    }

    fn open(
        &self,
        job: &Job,
        index: u64,
        now: Instant,
        key: usize,
        carriers: &mut Carriers,
    ) -> io::Result<ClientConn> {
        let carrier = match carriers.with_room() {
            Some(carrier) => carrier,
            None => {
                let room = job.load.transport.streams_per_connection as usize;
                carriers.add(Box::new(H2Carrier::new(http1::connect(job, index)?, room)))
            }
        };
        let stream = match carriers.get_mut(carrier) {
            Some(carrier) => carrier.attach(key, index),
            None => return Err(io::Error::other("the carrier just chosen is gone")),
        };
        // A carrier already up sends the CONNECT in the next flush, not at its next read.
        carriers.touch(carrier);
        let decoder = Decoder::new(Role::Client, job.load.max_message);
        let mut conn =
            ClientConn::new(ByteStream::Carried { carrier, stream }, index, String::new(), decoder, now);
        conn.budget = Reservation::new(job.message_memory.clone());
        Ok(conn)
    }

    /// A carried WebSocket is connected when its carrier says so.
    fn connected(&self, _conn: &mut ClientConn) -> io::Result<bool> {
        Ok(true)
    }

    /// A carried WebSocket's answer is a HEADERS frame its carrier reads.
    fn answer(&self, _: &Job, _: &mut ClientConn, _: &mut [u8], _: &mut Counters) -> Upgrade {
        Upgrade::Incomplete
    }
}
