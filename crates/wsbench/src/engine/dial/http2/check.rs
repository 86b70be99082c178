//! Before any load: one HTTP/2 connection to the target, to learn whether it allows
//! WebSockets over HTTP/2 at all (TLS agreed to `h2`; its SETTINGS carry
//! SETTINGS_ENABLE_CONNECT_PROTOCOL = 1). A server that does not gets one line naming the
//! cause and what to do, and no load is sent. A target that cannot be reached is left to
//! the run, which counts connect errors as it always does.

use std::time::{Duration, Instant};

use mio::{Events, Interest, Poll, Token};
use slab::Slab;

use super::carrier::H2Carrier;
use crate::engine::Job;
use crate::engine::dial::CheckError;
use crate::engine::dial::carrier::{Carrier, CarrierCx};
use crate::engine::dial::http1;
use crate::metrics::Counters;

/// Longest wait for the server's SETTINGS once connected.
const SETTINGS_WAIT: Duration = Duration::from_secs(5);

/// `Ok` when the target allows extended CONNECT (or cannot be reached: the run says so);
/// else the one-line cause, a refusal by the server.
pub fn server_allows_websockets(job: &Job) -> Result<(), CheckError> {
    let url = &job.target.url;
    let Ok(transport) = http1::connect(job, 0) else { return Ok(()) };
    let mut carrier = H2Carrier::new(transport, 0);
    let Ok(mut poll) = Poll::new() else { return Ok(()) };
    if poll.registry().register(carrier.socket(), Token(0), Interest::READABLE | Interest::WRITABLE).is_err()
    {
        return Ok(());
    }
    let mut events = Events::with_capacity(8);
    let mut conns = Slab::new();
    let mut counters = Counters::default();
    let mut stream_events = Vec::new();
    let deadline = Instant::now() + job.load.connect_timeout + SETTINGS_WAIT;
    loop {
        let now = Instant::now();
        if now >= deadline {
            return Err(CheckError::Refused(format!(
                "{url} sent no HTTP/2 SETTINGS within {} s: it does not seem to speak HTTP/2; \
                 run without --http2, or put an HTTP/2 front (e.g. HAProxy) before it",
                (job.load.connect_timeout + SETTINGS_WAIT).as_secs()
            )));
        }
        if poll.poll(&mut events, Some(deadline - now)).is_err() {
            return Ok(());
        }
        let mut cx = CarrierCx { job, conns: &mut conns, counters: &mut counters, batch: None, now };
        carrier.on_ready(&mut cx, &mut stream_events);
        match carrier.verdict() {
            None => {}
            Some(Ok(())) => return Ok(()),
            Some(Err(cause)) => return refusal(url, &cause),
        }
    }
}

/// The one line for a server that refused, by cause.
fn refusal(url: &str, cause: &str) -> Result<(), CheckError> {
    let line = match cause {
        _ if cause.starts_with("connect:") => return Ok(()),
        "h2_no_connect_protocol" => format!(
            "{url} speaks HTTP/2 but does not allow WebSockets over it (its SETTINGS lack \
             SETTINGS_ENABLE_CONNECT_PROTOCOL, RFC 8441): enable extended CONNECT on the server, \
             or run without --http2"
        ),
        "alpn_not_h2" => format!(
            "{url} did not agree to HTTP/2 in the TLS handshake (ALPN h2): enable h2 on the server, \
             or run without --http2"
        ),
        _ if cause.starts_with("tls_") => return Ok(()),
        other => format!(
            "{url} does not speak HTTP/2 ({other}): run without --http2, or put an HTTP/2 front \
             (e.g. HAProxy) before it"
        ),
    };
    Err(CheckError::Refused(line))
}
