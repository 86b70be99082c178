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

/// A large binary message is echoed as it arrives, so input that ends inside it leaves its
/// echo cut short, unmasked byte for byte so far; the check accepts exactly that, and not a
/// short frame cut short or a text echo begun before its message was whole.
#[test]
fn an_echo_is_cut_short_only_inside_a_large_binary_message() {
    let upgrade: &[u8] = b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
    let mask = [1, 2, 3, 4];
    let announced: u16 = 60_000;
    let arrived: Vec<u8> = (0..1_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    let masked: Vec<u8> = arrived.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]).collect();
    let mut frame = vec![0x82, 0xFE];
    frame.extend_from_slice(&announced.to_be_bytes());
    frame.extend_from_slice(&mask);
    frame.extend_from_slice(&masked);
    let out = wsbench_server::fuzzing::feed_connection(&[upgrade, &frame]);
    let frames = &out[out.windows(4).position(|w| w == b"\r\n\r\n").expect("a 101") + 4..];
    let mut echo = vec![0x82, 0x7E];
    echo.extend_from_slice(&announced.to_be_bytes());
    echo.extend_from_slice(&arrived);
    assert_eq!(frames, &echo[..], "the echo so far: its header, then the bytes unmasked");
    server_checks::check_output(&out);

    frame[0] = 0x81;
    let out = wsbench_server::fuzzing::feed_connection(&[upgrade, &frame]);
    assert!(out.ends_with(b"\r\n\r\n"), "a text message is not echoed before it is whole");

    let cut_short = |frame: &[u8]| {
        let wire = [&out[..], frame].concat();
        std::panic::catch_unwind(|| server_checks::check_output(&wire)).is_err()
    };
    assert!(!cut_short(&echo), "the large binary echo cut short passes");
    let mut text = echo.clone();
    text[0] = 0x81;
    assert!(cut_short(&text), "a text echo cut short is refused");
    assert!(cut_short(&[0x82, 100, 1, 2, 3]), "a short frame cut short is refused");
}
