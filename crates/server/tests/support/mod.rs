//! What the server's integration tests share: a WebSocket client connection made by hand
//! (the handshake written and its reply read byte by byte), so a test controls every byte
//! it sends and reads.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use wsbench_proto::handshake::{client_key, client_request};

/// A connected WebSocket client whose handshake reply has been read whole.
pub fn connect(addr: std::net::SocketAddr) -> TcpStream {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let key = client_key([3; 16]);
    stream.write_all(&client_request(&addr.to_string(), "/", &key, &[])).unwrap();
    let mut reply = Vec::new();
    let mut byte = [0u8; 1];
    while !reply.ends_with(b"\r\n\r\n") {
        assert_eq!(stream.read(&mut byte).unwrap(), 1, "server closed during the handshake");
        reply.push(byte[0]);
    }
    assert!(reply.starts_with(b"HTTP/1.1 101"), "{}", String::from_utf8_lossy(&reply));
    stream
}
