//! Runs every file of the committed `server_conn` fuzz corpus (`fuzz/corpus/server_conn/`)
//! through the same check the libFuzzer target uses, so `cargo test` on stable exercises the
//! seeds and every saved regression input of the server's connection state machine. The
//! check is included by path from the fuzz crate (it uses only this crate, wsbench_proto and
//! std), like crates/proto/tests/fuzz_corpus.rs does for the codec targets, and replayed by
//! the same `fuzz/src/corpus.rs`.

#[path = "../../../fuzz/src/corpus.rs"]
mod corpus;
#[path = "../../../fuzz/src/server_checks.rs"]
mod server_checks;

#[test]
fn server_conn_corpus() {
    corpus::replay("server_conn", server_checks::server_conn);
}

/// The seeds reach the states they are meant to: an echo after the handshake, and a 1009
/// close for a message announced past the limit.
#[test]
fn feed_connection_echoes_and_enforces_the_limit() {
    let upgrade: &[u8] = b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
    let mut frame = vec![0x81, 0x82, 0, 0, 0, 0];
    frame.extend_from_slice(b"hi");
    let out = wsbench_server::fuzzing::feed_connection(&[upgrade, &frame]);
    assert!(out.starts_with(b"HTTP/1.1 101"));
    assert!(out.ends_with(&[0x81, 2, b'h', b'i']));
    let huge = [0x82, 0xFF, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 1, 2, 3, 4];
    let out = wsbench_server::fuzzing::feed_connection(&[upgrade, &huge, b"more"]);
    let close = out.iter().position(|&b| b == 0x88).expect("a close frame");
    assert_eq!(&out[close + 2..close + 4], &1009u16.to_be_bytes());
    server_checks::check_output(&out);
}
