//! Before any load: one QUIC connection to the target, to learn whether it allows
//! WebSockets over HTTP/3 at all (its SETTINGS carry SETTINGS_ENABLE_CONNECT_PROTOCOL = 1).
//! A server that does not, or a `ws://` target (QUIC is always TLS), gets one line naming
//! the cause and what to do, and no load is sent. A target that does not answer within the
//! connect timeout is refused too: over UDP nothing else tells.

use std::time::{Duration, Instant};

use mio::{Events, Interest, Poll, Token};
use slab::Slab;

use super::new_carrier;
use crate::engine::Job;
use crate::engine::dial::CheckError;
use crate::engine::dial::carrier::{Carrier, CarrierCx};
use crate::metrics::Counters;

/// Longest wait for the server's SETTINGS once the connect timeout has passed.
const SETTINGS_WAIT: Duration = Duration::from_secs(5);

/// `Ok` when the target allows extended CONNECT over HTTP/3; else the one-line cause: a
/// refusal when the server's answer (or its silence) says it does not.
pub fn server_allows_websockets(job: &Job) -> Result<(), CheckError> {
    let url = &job.target.url;
    if !job.target.tls {
        return Err(CheckError::Failed(format!(
            "{url}: --transport h3 runs over QUIC, which is always TLS: use a wss:// URL"
        )));
    }
    let failed = |e: std::io::Error| CheckError::Failed(format!("{url}: opening a QUIC connection: {e}"));
    let mut carrier = new_carrier(job, 0).map_err(failed)?;
    let mut poll = Poll::new().map_err(failed)?;
    poll.registry().register(carrier.socket(), Token(0), Interest::READABLE).map_err(failed)?;
    let mut events = Events::with_capacity(8);
    let (mut conns, mut counters, mut stream_events) = (Slab::new(), Counters::default(), Vec::new());
    let wait = job.load.connect_timeout + SETTINGS_WAIT;
    let deadline = Instant::now() + wait;
    loop {
        let now = Instant::now();
        if now >= deadline {
            return Err(CheckError::Refused(format!(
                "{url} sent no HTTP/3 SETTINGS within {} s: it does not seem to speak HTTP/3 on UDP port {}; \
                 run with --transport h1 or h2, or check the server's QUIC port",
                wait.as_secs(),
                job.target.addr.port()
            )));
        }
        let timer = carrier.next_timer().map_or(deadline, |at| at.min(deadline));
        if poll.poll(&mut events, Some(timer.saturating_duration_since(now))).is_err() {
            continue;
        }
        let mut cx = CarrierCx { job, conns: &mut conns, counters: &mut counters, batch: None, now };
        if events.is_empty() {
            carrier.on_timer(&mut cx, &mut stream_events);
        } else {
            carrier.on_ready(&mut cx, &mut stream_events);
        }
        match carrier.verdict() {
            None => {}
            Some(Ok(())) => return Ok(()),
            Some(Err(cause)) => return Err(CheckError::Refused(refusal(url, &cause))),
        }
    }
}

/// The one line for a server that refused, by cause.
fn refusal(url: &str, cause: &str) -> String {
    match cause {
        "h3_no_connect_protocol" => format!(
            "{url} speaks HTTP/3 but does not allow WebSockets over it (its SETTINGS lack \
             SETTINGS_ENABLE_CONNECT_PROTOCOL, RFC 9220): enable extended CONNECT on the server, \
             or run with --transport h1 or h2"
        ),
        other => format!(
            "{url} refused HTTP/3 ({other}): check its QUIC port and certificate (--insecure for a \
             self-signed one), or run with --transport h1 or h2"
        ),
    }
}
