//! How the run's WebSockets reach the server, as the engine gets it: the transport chosen
//! (`--transport`, one of `engine::dial`'s registry, which checks its own options) and how
//! many WebSockets share one TCP connection.

use serde::Serialize;

/// How WebSockets reach the server: the transport (one of `engine::dial`'s registry) and how
/// many share one TCP connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TransportSpec {
    /// The transport's recorded name (its `Dial::name`).
    pub name: &'static str,
    /// WebSockets per TCP connection (1 unless the transport shares connections).
    pub streams_per_connection: u64,
    /// It is the default transport (the first of the registry): the result's `config`
    /// leaves it out.
    #[serde(skip)]
    pub default: bool,
}

impl TransportSpec {
    pub fn is_default(&self) -> bool {
        self.default
    }
}
