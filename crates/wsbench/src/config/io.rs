//! `--io`: which socket I/O the engine's workers use. Its own file so that the choice, its
//! names and its default (decided by measurement, bench/RESULTS.md) are in one place.

use serde::Serialize;

/// How the engine's workers do their socket I/O (`--io`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum IoBackend {
    /// io_uring: every connection's sends of a loop turn in one submission, multishot
    /// receives into a ring of provided buffers; epoll where io_uring is unavailable.
    Uring,
    /// Readiness from epoll, one read and one write per socket and turn.
    Epoll,
}

impl IoBackend {
    /// What `--io` means when not given (chosen by measurement: bench/RESULTS.md).
    pub const DEFAULT: IoBackend = IoBackend::Uring;

    pub fn name(self) -> &'static str {
        match self {
            IoBackend::Uring => "uring",
            IoBackend::Epoll => "epoll",
        }
    }
}
