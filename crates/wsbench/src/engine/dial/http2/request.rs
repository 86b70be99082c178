//! RFC 8441 §4–5 on the client side, as data: the extended CONNECT that opens WebSocket
//! `index` (`:method CONNECT`, `:protocol websocket`, `:scheme`, `:path`, `:authority`,
//! `sec-websocket-version: 13`, the offered subprotocols, the permessage-deflate offer and
//! the extra headers; no `Sec-WebSocket-Key`, no `Upgrade`/`Connection`), and the check of
//! the server's answer (`200`, not `101`; the subprotocol it chose; the extension it agreed).
//! HPACK and framing are the `h2` crate's.

use http::{HeaderName, HeaderValue, Method, Request, Response};
use wsbench_transport::http2::h2;

use crate::engine::Job;
use crate::engine::compression;
use crate::engine::conn::ClientConn;
use crate::engine::handshake_failure::HandshakeFailure;
use crate::metrics::Counters;

/// Headers HTTP/2 and HTTP/3 forbid (connection-specific, RFC 9113 §8.2.2, RFC 9114 §4.2)
/// or that the extended CONNECT replaces (`Host` by `:authority`, the key and the upgrade by
/// the CONNECT itself).
pub const NOT_SENT: [&str; 8] = [
    "connection",
    "upgrade",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "host",
    "sec-websocket-key",
    "te",
];

/// The extended CONNECT of connection `index`: `{conn}` in the extra headers replaced by
/// `index`. A header that is not valid HTTP is left out (validation has checked them).
pub fn extended_connect(job: &Job, index: u64) -> Request<()> {
    let target = &job.target;
    let scheme = if target.tls { "https" } else { "http" };
    let handshake = &job.load.handshake;
    let mut authority = target.host_header();
    let mut request = Request::builder().method(Method::CONNECT);
    for (name, value) in handshake.headers_for(index) {
        let lower = name.to_ascii_lowercase();
        if lower == "host" {
            authority = value;
            continue;
        }
        if NOT_SENT.contains(&lower.as_str()) {
            continue;
        }
        if let (Ok(name), Ok(value)) =
            (HeaderName::from_bytes(lower.as_bytes()), HeaderValue::from_str(&value))
        {
            request = request.header(name, value);
        }
    }
    request = request.header("sec-websocket-version", "13");
    if !handshake.subprotocols.is_empty() {
        request = request.header("sec-websocket-protocol", handshake.subprotocols.join(", "));
    }
    if let Some(offer) = &job.load.compression {
        request = request.header("sec-websocket-extensions", offer.header_value());
    }
    let uri = format!("{scheme}://{authority}{}", handshake.path_for(&target.path, index));
    let mut request = request.uri(uri.as_str()).body(()).unwrap_or_else(|_| {
        // An authority the URI parser refuses (validation has parsed the URL): the target's own.
        let uri = format!("{scheme}://{}{}", target.host_header(), target.path);
        Request::builder().method(Method::CONNECT).uri(uri.as_str()).body(()).unwrap_or_default()
    });
    request.extensions_mut().insert(h2::ext::Protocol::from_static("websocket"));
    request
}

/// Checks the server's answer to an extended CONNECT: a 2xx accepts (RFC 8441 §5), what it
/// agreed (subprotocol, permessage-deflate) is counted and set on `conn`; any other status
/// refuses (`http_status_CODE`).
pub fn check_answer(
    job: &Job,
    conn: &mut ClientConn,
    response: &Response<h2::RecvStream>,
    tls: Option<(rustls::ProtocolVersion, rustls::CipherSuite)>,
    counters: &mut Counters,
) -> Result<(), HandshakeFailure> {
    let status = Response::status(response);
    if !status.is_success() {
        return Err(HandshakeFailure::of(&format!("http_status_{}", status.as_u16())));
    }
    let header = |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let chosen = header("sec-websocket-protocol").map(|p| p.trim().to_owned());
    agree(job, conn, chosen, header("sec-websocket-extensions"), tls, counters)
}

/// What the server agreed in its answer to an extended CONNECT (HTTP/2 or HTTP/3), checked
/// and counted: the subprotocol it `chose`, the TLS it negotiated, and its answer to the
/// permessage-deflate offer (`extensions`), which is set on `conn`.
pub fn agree(
    job: &Job,
    conn: &mut ClientConn,
    chosen: Option<String>,
    extensions: Option<String>,
    tls: Option<(rustls::ProtocolVersion, rustls::CipherSuite)>,
    counters: &mut Counters,
) -> Result<(), HandshakeFailure> {
    super::super::http1::check_agreed(job, chosen, tls, counters)?;
    if let Some(offer) = &job.load.compression {
        let state = compression::attach_answer(
            offer,
            extensions.as_deref(),
            job.load.max_message,
            &mut conn.decoder,
            counters,
        )?;
        conn.compression = Some(state);
    }
    Ok(())
}
