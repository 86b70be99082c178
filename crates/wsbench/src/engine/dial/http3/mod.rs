//! `http3`: WebSockets over HTTP/3 (RFC 9220), many on one QUIC connection. QUIC is always
//! TLS (1.3, ALPN `h3`), so the target is a `wss://` URL whose port is the server's UDP
//! port. A WebSocket joins the carrier being filled ([`carrier::H3Carrier`]) until it holds
//! `--streams-per-connection`, then a new one connects; it opens as an extended CONNECT
//! stream ([`request`]) once the server's SETTINGS allow it. Before any load, [`check`]
//! makes sure the server does. QUIC is quinn-proto's, HTTP/3 framing and QPACK
//! `wsbench_transport::http3`'s.

mod carrier;
mod check;
mod request;

use std::io;

use super::http2::{STREAMS_PER_CONNECTION, shared_spec};
use super::{Carrier, CheckError, Dial};
use crate::config::{ConfigError, TransportSpec};
use crate::engine::Job;
use crate::options::{OptionSpec, OptionValues};
use carrier::H3Carrier;

/// RFC 9220's extended CONNECT over HTTP/3.
#[derive(Debug)]
pub struct Http3;

impl Dial for Http3 {
    fn name(&self) -> &'static str {
        "http3"
    }
    fn flag_name(&self) -> &'static str {
        "h3"
    }
    fn title(&self) -> &'static str {
        "HTTP/3 (RFC 9220)"
    }
    fn options(&self) -> &'static [OptionSpec] {
        &[STREAMS_PER_CONNECTION]
    }
    /// `--streams-per-connection`: 1 to the same bound as over HTTP/2.
    fn spec(&self, given: &OptionValues) -> Result<TransportSpec, ConfigError> {
        shared_spec(self.name(), given)
    }

    fn alpn(&self) -> &'static [&'static [u8]] {
        &[wsbench_transport::http3::ALPN]
    }

    fn carries(&self) -> bool {
        true
    }

    fn over_udp(&self) -> bool {
        true
    }

    fn check(&self, job: &Job) -> Result<(), CheckError> {
        check::server_allows_websockets(job)
    }

    fn new_carrier(&self, job: &Job, _index: u64, room: usize) -> io::Result<Box<dyn Carrier>> {
        Ok(Box::new(new_carrier(job, room)?))
    }
}

/// A QUIC connection to the target for up to `room` WebSockets.
fn new_carrier(job: &Job, room: usize) -> io::Result<H3Carrier> {
    let tls = job.tls.as_ref().ok_or_else(|| io::Error::other("HTTP/3 needs TLS: use a wss:// URL"))?;
    let (config, _) = tls.next();
    let streams = u32::try_from(room).unwrap_or(u32::MAX);
    let config = wsbench_transport::quic::client_config(config.clone(), streams).map_err(io::Error::other)?;
    let name = job.load.tls.sni.as_ref().unwrap_or(&job.target.host);
    H3Carrier::new(job.target.addr, name, config, room)
}
