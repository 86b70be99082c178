//! RFC 8441 (WebSockets over HTTP/2) §3–5 for `wsbench serve`, with an independent client:
//! hyperium's `h2` on a tokio runtime over h2c with prior knowledge (not wsbench's engine).
//! The server advertises SETTINGS_ENABLE_CONNECT_PROTOCOL (§3); an extended CONNECT is
//! answered `200`, never `101`, with no `Sec-WebSocket-Accept` (§5); a CONNECT without
//! `:protocol` is not a WebSocket (§4); END_STREAM or RST_STREAM ends one WebSocket and
//! neither the connection nor its other streams (§5); the WebSocket handshake's own options
//! (version, subprotocol, permessage-deflate) work as over HTTP/1.1.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use h2::client::{self, SendRequest};
use h2::{RecvStream, SendStream};
use http::{Method, Request, Response};

/// Longest wait for any answer.
const TIMEOUT: Duration = Duration::from_secs(10);

/// Runs `test` against the shared server on a fresh single-threaded runtime.
fn with_server<F: Future<Output = ()>>(test: impl FnOnce(SocketAddr) -> F) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let addr = crate::server();
    runtime.block_on(async move {
        tokio::time::timeout(TIMEOUT * 3, test(addr)).await.expect("the test finished in time");
    });
}

/// An h2c connection (its driver spawned), once the server's SETTINGS are in.
async fn connect(addr: SocketAddr) -> SendRequest<Bytes> {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (sender, mut connection) = client::handshake(tcp).await.unwrap();
    // A PING's answer comes after the server's SETTINGS (the first frame it sends).
    let mut ping = connection.ping_pong().unwrap();
    tokio::spawn(async move {
        let _ = connection.await;
    });
    tokio::time::timeout(TIMEOUT, ping.ping(h2::Ping::opaque())).await.unwrap().unwrap();
    sender
}

/// An extended CONNECT for a WebSocket at `/` with `headers` besides the version.
fn websocket_request(addr: SocketAddr, headers: &[(&str, &str)]) -> Request<()> {
    let mut request = Request::builder().method(Method::CONNECT).uri(format!("http://{addr}/"));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let mut request = request.body(()).unwrap();
    request.extensions_mut().insert(h2::ext::Protocol::from_static("websocket"));
    request
}

/// Opens a WebSocket stream: the response head, the sending and the receiving half.
async fn open(
    sender: &mut SendRequest<Bytes>,
    request: Request<()>,
) -> (Response<()>, SendStream<Bytes>, RecvStream) {
    let (response, send) = sender.send_request(request, false).unwrap();
    let response = tokio::time::timeout(TIMEOUT, response).await.unwrap().unwrap();
    let (head, body) = response.into_parts();
    (Response::from_parts(head, ()), send, body)
}

/// A masked client frame.
fn frame(opcode: u8, payload: &[u8]) -> Bytes {
    assert!(payload.len() < 126);
    let mask = [0x11, 0x22, 0x33, 0x44];
    let mut out = vec![0x80 | opcode, 0x80 | payload.len() as u8];
    out.extend_from_slice(&mask);
    out.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    Bytes::from(out)
}

/// Reads until `want` bytes came (or the stream ended).
async fn read(recv: &mut RecvStream, want: usize) -> Vec<u8> {
    let mut got = Vec::new();
    while got.len() < want {
        match tokio::time::timeout(TIMEOUT, recv.data()).await.unwrap() {
            Some(Ok(data)) => {
                let _ = recv.flow_control().release_capacity(data.len());
                got.extend_from_slice(&data);
            }
            _ => break,
        }
    }
    got
}

/// Sends a text message and expects it back, unmasked.
async fn echo(send: &mut SendStream<Bytes>, recv: &mut RecvStream, text: &[u8]) {
    send.send_data(frame(0x1, text), false).unwrap();
    let mut want = vec![0x81, text.len() as u8];
    want.extend_from_slice(text);
    assert_eq!(read(recv, want.len()).await, want, "the echo of {text:?}");
}

/// Whether the stream's receiving half has ended (the server's END_STREAM or a reset).
async fn ended(recv: &mut RecvStream) -> bool {
    loop {
        match tokio::time::timeout(TIMEOUT, recv.data()).await.unwrap() {
            Some(Ok(_)) => continue,
            Some(Err(_)) | None => return true,
        }
    }
}

#[test]
fn rfc8441_s3_the_server_settings_enable_extended_connect() {
    with_server(|addr| async move {
        let sender = connect(addr).await;
        assert!(sender.is_extended_connect_protocol_enabled(), "SETTINGS_ENABLE_CONNECT_PROTOCOL = 1");
    });
}

#[test]
fn rfc8441_s5_the_websocket_is_answered_200_without_accept_and_echoes() {
    with_server(|addr| async move {
        let mut sender = connect(addr).await;
        let (response, mut send, mut recv) =
            open(&mut sender, websocket_request(addr, &[("sec-websocket-version", "13")])).await;
        assert_eq!(response.status(), 200, "2xx, not 101");
        assert!(
            response.headers().get("sec-websocket-accept").is_none(),
            "no Sec-WebSocket-Accept over HTTP/2"
        );
        assert!(
            response.headers().get("upgrade").is_none() && response.headers().get("connection").is_none()
        );
        echo(&mut send, &mut recv, b"hello over h2").await;
    });
}

#[test]
fn rfc8441_s4_a_connect_without_protocol_is_not_a_websocket() {
    with_server(|addr| async move {
        let mut sender = connect(addr).await;
        let request = Request::builder().method(Method::CONNECT).uri(addr.to_string()).body(()).unwrap();
        let (response, _, _) = open(&mut sender, request).await;
        assert_eq!(response.status(), 400, "a plain CONNECT (a tunnel) is refused");
    });
}

#[test]
fn rfc8441_s5_a_version_other_than_13_is_refused_naming_13() {
    with_server(|addr| async move {
        let mut sender = connect(addr).await;
        let (response, _, _) =
            open(&mut sender, websocket_request(addr, &[("sec-websocket-version", "8")])).await;
        assert_eq!(response.status(), 400);
        assert_eq!(response.headers()["sec-websocket-version"], "13");
    });
}

#[test]
fn rfc8441_s5_end_stream_ends_the_websocket_not_the_connection() {
    with_server(|addr| async move {
        let mut sender = connect(addr).await;
        let request = || websocket_request(addr, &[("sec-websocket-version", "13")]);
        let (_, mut send, mut recv) = open(&mut sender, request()).await;
        echo(&mut send, &mut recv, b"first").await;
        send.send_data(Bytes::new(), true).unwrap();
        assert!(ended(&mut recv).await, "the server ends its side too");
        let (response, mut send, mut recv) = open(&mut sender, request()).await;
        assert_eq!(response.status(), 200, "the connection still opens WebSockets");
        echo(&mut send, &mut recv, b"second").await;
    });
}

#[test]
fn rfc8441_s5_a_reset_stream_does_not_take_the_others_down() {
    with_server(|addr| async move {
        let mut sender = connect(addr).await;
        let request = || websocket_request(addr, &[("sec-websocket-version", "13")]);
        let (_, mut reset, mut reset_recv) = open(&mut sender, request()).await;
        let (_, mut send, mut recv) = open(&mut sender, request()).await;
        echo(&mut reset, &mut reset_recv, b"before").await;
        reset.send_reset(h2::Reason::CANCEL);
        echo(&mut send, &mut recv, b"still here").await;
        let (_, mut third, mut third_recv) = open(&mut sender, request()).await;
        echo(&mut third, &mut third_recv, b"and new ones").await;
    });
}

#[test]
fn rfc8441_s5_the_close_handshake_ends_the_stream() {
    with_server(|addr| async move {
        let mut sender = connect(addr).await;
        let (_, mut send, mut recv) =
            open(&mut sender, websocket_request(addr, &[("sec-websocket-version", "13")])).await;
        send.send_data(frame(0x8, &1000u16.to_be_bytes()), false).unwrap();
        assert_eq!(read(&mut recv, 4).await, [0x88, 2, 0x03, 0xe8], "the close is echoed");
        assert!(ended(&mut recv).await, "then END_STREAM");
    });
}

#[test]
fn rfc8441_the_subprotocol_and_permessage_deflate_are_negotiated_as_over_http1() {
    with_server(|addr| async move {
        let mut sender = connect(addr).await;
        let headers = [
            ("sec-websocket-version", "13"),
            ("sec-websocket-protocol", "chat, superchat"),
            ("sec-websocket-extensions", "permessage-deflate; client_max_window_bits"),
        ];
        let (response, mut send, mut recv) = open(&mut sender, websocket_request(addr, &headers)).await;
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["sec-websocket-protocol"], "chat", "the first offered");
        let extensions = response.headers()["sec-websocket-extensions"].to_str().unwrap();
        assert!(extensions.starts_with("permessage-deflate"), "{extensions}");
        echo(&mut send, &mut recv, b"uncompressed is still allowed").await;
    });
}

#[test]
fn rfc8441_a_ping_is_answered_on_its_stream() {
    with_server(|addr| async move {
        let mut sender = connect(addr).await;
        let (_, mut send, mut recv) =
            open(&mut sender, websocket_request(addr, &[("sec-websocket-version", "13")])).await;
        send.send_data(frame(0x9, b"beat"), false).unwrap();
        assert_eq!(read(&mut recv, 6).await, [0x8a, 4, b'b', b'e', b'a', b't']);
    });
}
