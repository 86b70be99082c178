//! RFC 6455 conformance suite for `wsbench serve`: the server-side cases of the
//! Autobahn|Testsuite (sections 1–7, 9, 10.1.1, 12 and 13) re-created as named Rust tests, plus a few
//! extra checks of the server contract (unmasked frames, `--max-message`, fail-fast UTF-8);
//! and RFC 8441's WebSockets over HTTP/2 (`conformance/s8441_http2.rs`).
//!
//! Each case opens its own connection to a shared server (see `support::shared_server`) with
//! an independent raw client (`conformance/raw_client.rs`), so the harness runs cases in
//! parallel. Case `X.Y.Z` lives in `conformance/sNN_*.rs` as `case_X_Y_Z_<what it does>`;
//! checks beyond Autobahn are named `extra_X_<what it does>`.
//!
//! Run: `cargo test -p wsbench --test conformance` (filter e.g. with `case_6_4`).

// `support` is shared with other test binaries and not ours to restyle.
#[allow(clippy::type_complexity)]
mod support;

#[path = "conformance/raw_client.rs"]
mod raw_client;
#[path = "conformance/raw_frame.rs"]
mod raw_frame;
#[path = "conformance/s01_framing.rs"]
mod s01_framing;
#[path = "conformance/s02_ping_pong.rs"]
mod s02_ping_pong;
#[path = "conformance/s03_reserved_bits.rs"]
mod s03_reserved_bits;
#[path = "conformance/s04_opcodes.rs"]
mod s04_opcodes;
#[path = "conformance/s05_fragmentation.rs"]
mod s05_fragmentation;
#[path = "conformance/s06_utf8.rs"]
mod s06_utf8;
#[path = "conformance/s06_utf8_sequences.rs"]
mod s06_utf8_sequences;
#[path = "conformance/s07_close.rs"]
mod s07_close;
#[path = "conformance/s09_limits.rs"]
mod s09_limits;
#[path = "conformance/s10_autofragment.rs"]
mod s10_autofragment;
#[path = "conformance/s12_s13_deflate.rs"]
mod s12_s13_deflate;
#[path = "conformance/s8441_http2.rs"]
mod s8441_http2;

use std::net::SocketAddr;

use raw_client::Client;

/// The shared `wsbench serve` with default limits.
fn server() -> SocketAddr {
    support::shared_server(&[])
}

/// A fresh, handshaken connection to the shared default server.
fn connect() -> Client {
    Client::connect(server())
}
