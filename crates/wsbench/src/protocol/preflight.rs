//! An HTTP exchange a protocol makes on a connection before it asks for the WebSocket
//! upgrade there ([`Preflight`]; SignalR's negotiate, which names the connection's token),
//! sans-I/O like a session: it writes its request, reads the server's whole answer (an
//! HTTP/1.1 response, kept alive), may ask again (a redirect followed), and ends by naming
//! the path the upgrade asks for and the bearer it carries, or by a failure counted by its
//! cause as a failed handshake. The engine's HTTP/1.1 transport drives it; a protocol offers
//! one through [`super::Protocol::preflight`].

use std::fmt::Debug;

/// Where the connection goes, as the transport would ask for the upgrade there.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    /// The `Host` header.
    pub host: &'a str,
    /// The upgrade's path and query, as the run would ask for it.
    pub path: &'a str,
    /// The run's extra handshake headers (`--header`, `--bearer`, `--cookie`), checked.
    pub headers: &'a [(&'a str, &'a str)],
}

/// What an answer leads to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// The answer is not whole yet: read more.
    Incomplete,
    /// The answer (these many bytes) asks for another request, written to the output.
    Again(usize),
    /// Done (the answer took these many bytes): ask for the upgrade at `path`, with
    /// `bearer` as its `Authorization` when given (in place of the run's own), on this
    /// connection or, when the server closes it after its answer, on a new one.
    Upgrade { used: usize, path: String, bearer: Option<String>, new_connection: bool },
    /// No WebSocket can follow: the cause a failed handshake is counted by and what the
    /// server said (or why the answer is none).
    Failed { cause: String, detail: String },
}

/// One connection's exchange before its upgrade.
pub trait Preflight: Send + Debug {
    /// What it is called, for errors (`SignalR's negotiate`).
    fn name(&self) -> &'static str;
    /// The option that leaves it out (`--skip-negotiate`).
    fn skip_flag(&self) -> &'static str;
    /// Writes the first request to `out`.
    fn request(&mut self, target: &Target<'_>, out: &mut Vec<u8>);
    /// Reads the answer at the start of `data`; a further request goes to `out`.
    fn answer(&mut self, data: &[u8], target: &Target<'_>, out: &mut Vec<u8>) -> Step;
    /// No whole answer came (`data`: what did): the connection ended (`ended`) or the
    /// connect timeout passed. The cause it is counted by and what to say of it.
    fn unanswered(&self, data: &[u8], ended: bool) -> (String, String);
}
