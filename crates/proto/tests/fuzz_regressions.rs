//! Minimal reproducers of the bugs the fuzz checks (`fuzz/src/checks.rs`) found in the
//! handshake, kept as plain tests so a fix is verified by `cargo test` on stable. The same
//! inputs are saved as `fuzz/corpus/<target>/regression-*`.

use wsbench_proto::HandshakeError;
use wsbench_proto::handshake::{
    DEFAULT_MAX_HEADER_BYTES, Request, accept_key, parse_request, parse_response, server_response,
};

const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";

/// `parse_response` rejects a header still incomplete at 8 KiB, but accepts a longer one
/// when it happens to arrive in a single read: the outcome depends on TCP segmentation.
/// (`parse_request` already rejects `Complete(n)` with `n > max_header_bytes`.)
#[test]
fn response_header_limit_does_not_depend_on_how_the_bytes_arrive() {
    let mut response = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Accept: {}\r\nX-Pad: ",
        accept_key(KEY.as_bytes())
    )
    .into_bytes();
    response.resize(9000, b'a');
    response.extend_from_slice(b"\r\n\r\n");
    let limit = DEFAULT_MAX_HEADER_BYTES;
    assert_eq!(
        parse_response(&response[..limit], KEY),
        Err(HandshakeError::HeaderTooLarge(limit)),
        "read in pieces"
    );
    assert_eq!(parse_response(&response, KEY), Err(HandshakeError::HeaderTooLarge(limit)), "read whole");
}

/// `parse_request` trims offered subprotocols with `trim_ascii`, `parse_response` trims the
/// chosen one with `str::trim`, which also strips Unicode whitespace (here U+00A0). The
/// server picks "chat\u{a0}" and the client is told "chat", a protocol it never offered.
#[test]
fn chosen_subprotocol_reaches_the_client_unchanged() {
    let request = "GET / HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
                   Sec-WebSocket-Key: AQIDBAUGBwgJCgsMDQ4PEA==\r\nSec-WebSocket-Version: 13\r\n\
                   Sec-WebSocket-Protocol: chat\u{a0}, superchat\r\n\r\n";
    let Ok(Some((Request::Upgrade(upgrade), _))) = parse_request(request.as_bytes(), 8192) else {
        panic!("the request is a valid upgrade");
    };
    let chosen = upgrade.protocols.first().map(String::as_str);
    let response = server_response(&upgrade, chosen);
    let (answer, _) = parse_response(&response, &upgrade.key).unwrap().unwrap();
    assert_eq!(answer.protocol.as_deref(), chosen);
}
