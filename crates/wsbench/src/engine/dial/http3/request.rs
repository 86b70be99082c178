//! RFC 9220 on the client side, as data: the extended CONNECT fields that open WebSocket
//! `index` (as over HTTP/2: `:protocol websocket`, `:scheme`, `:path`, `:authority`, the
//! offered subprotocols, the permessage-deflate offer and the extra headers, lower case;
//! no key, no upgrade), and the check of the server's answer (a 2xx; the subprotocol it
//! chose; the extension it agreed). QPACK and framing are `wsbench_transport::http3`'s.

use wsbench_transport::http3::qpack::Field;
use wsbench_transport::http3::{self, field};

use crate::engine::Job;
use crate::engine::conn::ClientConn;
use crate::engine::handshake_failure::HandshakeFailure;
use crate::metrics::Counters;

use super::super::http2::NOT_SENT;

/// The HEADERS frame of connection `index`'s extended CONNECT.
pub fn extended_connect(job: &Job, index: u64) -> Vec<u8> {
    let handshake = &job.load.handshake;
    let mut authority = job.target.host_header();
    let mut extra: Vec<(String, String)> = Vec::new();
    for (name, value) in handshake.headers_for(index) {
        let lower = name.to_ascii_lowercase();
        if lower == "host" {
            authority = value;
        } else if !NOT_SENT.contains(&lower.as_str()) {
            extra.push((lower, value));
        }
    }
    if !handshake.subprotocols.is_empty() {
        extra.push(("sec-websocket-protocol".into(), handshake.subprotocols.join(", ")));
    }
    if let Some(offer) = &job.load.compression {
        extra.push(("sec-websocket-extensions".into(), offer.header_value()));
    }
    let path = handshake.path_for(&job.target.path, index);
    let extra: Vec<(&str, &str)> = extra.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    http3::websocket_request("https", &authority, &path, &extra)
}

/// Checks the answer to an extended CONNECT: a 2xx accepts, what it agreed is counted and
/// set on `conn`; any other status refuses (`http_status_CODE`).
pub fn check_answer(
    job: &Job,
    conn: &mut ClientConn,
    status: u16,
    fields: &[Field],
    counters: &mut Counters,
) -> Result<(), HandshakeFailure> {
    if !(200..300).contains(&status) {
        return Err(HandshakeFailure::of(&format!("http_status_{status}")));
    }
    let header = |name: &str| field(fields, name).map(|v| String::from_utf8_lossy(v).trim().to_owned());
    // QUIC is TLS 1.3; quinn does not say which suite it agreed, so none is counted.
    super::super::http2::agree(
        job,
        conn,
        header("sec-websocket-protocol"),
        header("sec-websocket-extensions"),
        None,
        counters,
    )
}
