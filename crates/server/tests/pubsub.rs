//! `wsbench serve --pubsub` over real sockets: subscriptions are acknowledged, a publish
//! reaches exactly the subscribers of its topic with its payload unchanged, the publisher
//! gets nothing back unless it subscribed, and other messages are still echoed.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use wsbench_proto::handshake::{client_key, client_request};
use wsbench_proto::{OpCode, parse_header, write_frame};
use wsbench_server::{ServeConfig, start};

struct Client {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Client {
    /// A client whose socket receive buffer is small (8 KiB), so a subscriber that is not
    /// reading soon stops taking the server's writes.
    fn connect(addr: std::net::SocketAddr) -> Client {
        let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        socket.set_recv_buffer_size(8 * 1024).unwrap();
        socket.connect(&addr.into()).unwrap();
        let mut stream = TcpStream::from(socket);
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let key = client_key([7; 16]);
        stream.write_all(&client_request(&addr.to_string(), "/", &key, &[])).unwrap();
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        let end = loop {
            if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break end + 4;
            }
            let n = stream.read(&mut chunk).unwrap();
            assert!(n > 0, "server closed during the handshake");
            buf.extend_from_slice(&chunk[..n]);
        };
        assert!(buf.starts_with(b"HTTP/1.1 101"), "{}", String::from_utf8_lossy(&buf));
        buf.drain(..end);
        Client { stream, buf }
    }

    fn send(&mut self, text: &str) {
        let mut frame = Vec::new();
        write_frame(&mut frame, true, OpCode::Text, Some([1, 2, 3, 4]), text.as_bytes());
        self.stream.write_all(&frame).unwrap();
    }

    fn receive(&mut self) -> String {
        let mut chunk = [0u8; 4096];
        loop {
            if let Some(header) = parse_header(&self.buf).unwrap() {
                let end = header.header_len + header.payload_len as usize;
                if self.buf.len() >= end {
                    assert_eq!(header.opcode, OpCode::Text);
                    assert!(header.mask.is_none(), "server frames are unmasked");
                    let text = String::from_utf8(self.buf[header.header_len..end].to_vec()).unwrap();
                    self.buf.drain(..end);
                    return text;
                }
            }
            let n = self.stream.read(&mut chunk).unwrap();
            assert!(n > 0, "server closed the connection");
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }
}

#[test]
fn publishes_reach_exactly_the_topic_subscribers() {
    let config = ServeConfig { port: 0, pubsub: true, ..ServeConfig::default() };
    let server = start(&config).unwrap();
    let addr = server.endpoints.websocket;
    let mut subscribers: Vec<Client> = (0..3).map(|_| Client::connect(addr)).collect();
    for (client, topic) in subscribers.iter_mut().zip(["a", "a", "b"]) {
        client.send(&format!(r#"{{"sub":"{topic}"}}"#));
        assert_eq!(client.receive(), format!(r#"{{"subscribed":"{topic}"}}"#));
    }
    let mut publisher = Client::connect(addr);
    let to_a = r#"{"pub":"a","id":"0-1","ts":5,"pad":"xxxx"}"#;
    let to_b = r#"{ "pub" : "b", "id":"0-2" }"#;
    publisher.send(to_a);
    publisher.send(to_b);
    publisher.send("not a command");
    assert_eq!(publisher.receive(), "not a command", "the publisher gets no copy of its publishes");
    assert_eq!(subscribers[0].receive(), to_a);
    assert_eq!(subscribers[1].receive(), to_a);
    assert_eq!(subscribers[2].receive(), to_b);
    for client in &mut subscribers {
        client.send("end");
        assert_eq!(client.receive(), "end", "each subscriber got exactly its topic's publishes");
    }
    publisher.send(r#"{"sub":"b"}"#);
    assert_eq!(publisher.receive(), r#"{"subscribed":"b"}"#);
    let again = r#"{"pub":"b","id":"0-3"}"#;
    publisher.send(again);
    assert_eq!(publisher.receive(), again, "a subscribed publisher gets its own publish");
    assert_eq!(subscribers[2].receive(), again);
    server.shutdown_handle().shutdown();
    server.wait().unwrap();
}

/// Subscribers that read nothing until every publish is sent make the server keep most
/// deliveries as pending output (more than their sockets take) and write them when the
/// sockets become writable: each still gets exactly its topic's publishes, in order.
#[test]
fn deliveries_the_sockets_refuse_are_kept_and_arrive_complete_and_in_order() {
    const TOPICS: usize = 2;
    const SUBSCRIBERS: usize = 4;
    const PUBLISHES: usize = 200;
    let config = ServeConfig { port: 0, pubsub: true, ..ServeConfig::default() };
    let server = start(&config).unwrap();
    let addr = server.endpoints.websocket;
    let mut subscribers: Vec<Client> = (0..SUBSCRIBERS).map(|_| Client::connect(addr)).collect();
    for (i, client) in subscribers.iter_mut().enumerate() {
        client.send(&format!(r#"{{"sub":"t{}"}}"#, i % TOPICS));
        assert_eq!(client.receive(), format!(r#"{{"subscribed":"t{}"}}"#, i % TOPICS));
    }
    let mut publisher = Client::connect(addr);
    let pad = "x".repeat(64 * 1024);
    for seq in 0..PUBLISHES {
        publisher.send(&format!(r#"{{"pub":"t{}","id":"0-{seq}","pad":"{pad}"}}"#, seq % TOPICS));
    }
    publisher.send("sent");
    assert_eq!(publisher.receive(), "sent");
    for (i, client) in subscribers.iter_mut().enumerate() {
        for seq in (i % TOPICS..PUBLISHES).step_by(TOPICS) {
            let expected = format!(r#"{{"pub":"t{}","id":"0-{seq}","pad":"{pad}"}}"#, i % TOPICS);
            assert!(client.receive() == expected, "subscriber {i}: publish {seq} missing or out of order");
        }
        client.send("end");
        assert_eq!(client.receive(), "end", "subscriber {i} got more than its topic's publishes");
    }
    server.shutdown_handle().shutdown();
    server.wait().unwrap();
}
