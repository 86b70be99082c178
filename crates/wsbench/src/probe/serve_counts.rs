//! What the server's processes say of themselves, when they are `wsbench serve`: each
//! answers its counts on an abstract socket named after its process id (the server crate's
//! `counts` module), which the probe asks when it starts and when it stops. The difference
//! is what the server did during the run, as it counted it; today its TLS handshakes, full
//! and resumed, with the CPU each kind cost it. Any other server answers nothing, and the
//! report says nothing of it.

use crate::metrics::TlsHandshakes;

/// The TLS handshakes the `wsbench serve` processes among `pids` have completed so far,
/// summed; `None` when none of them answers, or none serves TLS.
pub(crate) fn tls_handshakes(pids: &[u32]) -> Option<TlsHandshakes> {
    let answers: Vec<TlsHandshakes> = pids
        .iter()
        .filter_map(|pid| wsbench_server::counts::ask(*pid)?.tls)
        .map(TlsHandshakes::from)
        .collect();
    let mut total = TlsHandshakes::default();
    for answer in &answers {
        total += *answer;
    }
    (!answers.is_empty()).then_some(total)
}

/// The handshakes between a count taken at the start and one at the end; `None` when
/// either is missing or the second does not follow on from the first (a restarted server).
pub(crate) fn during(before: Option<TlsHandshakes>, pids: &[u32]) -> Option<TlsHandshakes> {
    before?.until(&tls_handshakes(pids)?)
}
