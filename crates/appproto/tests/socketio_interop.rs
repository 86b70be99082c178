//! Socket.IO against a real socket.io 4.8 server (`servers/node-socketio/server.js`), spoken
//! with `wsbench_appproto::socketio`: the Engine.IO open packet, namespace connect,
//! ping/pong, emit with an acknowledgement (JSON and binary attachments), rooms, and the
//! connect error of an unknown namespace.

mod support;

use std::time::{Duration, Instant};

use support::{Message, Ws};
use wsbench_appproto::socketio::{self, Arg, EnginePacket, PacketType, WEBSOCKET_PATH};
use wsbench_testpeers::{Peer, or_skip, start_socketio, start_socketio_pinging_every};

/// A connection past the Engine.IO open packet; answers pings while it waits.
struct Client {
    ws: Ws,
    pongs: usize,
}

impl Client {
    fn open(server: &Peer) -> (Client, socketio::Open<'static>) {
        let mut ws = Ws::connect(server.port(), WEBSOCKET_PATH, &[]).expect("WebSocket upgrade");
        let Message::Text(text) = ws.recv() else { panic!("expected the open packet") };
        let EnginePacket::Open(open) =
            socketio::decode_engine(Box::leak(text.into_boxed_str()).as_bytes()).unwrap()
        else {
            panic!("expected the open packet")
        };
        (Client { ws, pongs: 0 }, open)
    }

    fn send(&mut self, write: impl FnOnce(&mut Vec<u8>)) {
        let mut text = Vec::new();
        write(&mut text);
        self.ws.send_text(&text);
    }

    /// The next Socket.IO packet's text (after Engine.IO's `4`), answering pings on the way.
    fn next_text(&mut self) -> String {
        loop {
            let Message::Text(text) = self.ws.recv() else { panic!("expected a text message") };
            match socketio::decode_engine(text.as_bytes()).unwrap() {
                EnginePacket::Ping(payload) => {
                    self.send(|out| socketio::encode_pong(out, payload));
                    self.pongs += 1;
                }
                EnginePacket::Message(packet) => return packet.to_owned(),
                other => panic!("unexpected {other:?}"),
            }
        }
    }

    fn binary(&mut self) -> Vec<u8> {
        match self.ws.recv() {
            Message::Binary(bytes) => bytes,
            other => panic!("expected an attachment, got {other:?}"),
        }
    }

    fn connect(&mut self) {
        self.send(|out| socketio::encode_connect(out, "/", None));
        let text = self.next_text();
        let packet = socketio::decode_packet(&text).unwrap();
        assert_eq!(packet.kind, PacketType::Connect, "{text}");
        assert!(packet.data.is_some_and(|data| data.contains("\"sid\"")), "{text}");
    }
}

#[test]
fn socketio_emit_is_acknowledged_with_its_arguments() {
    let Some(server) = or_skip(start_socketio()) else { return };
    let (mut client, open) = Client::open(&server);
    assert_eq!((open.ping_interval, open.ping_timeout), (25_000, 20_000));
    assert!(!open.sid.is_empty() && open.max_payload > 0);
    client.connect();
    client.send(|out| {
        socketio::encode_emit(out, "/", "echo", &[Arg::Json(r#"{"ts":1}"#), Arg::Json("\"x\"")], Some(7))
    });
    let text = client.next_text();
    let ack = socketio::decode_packet(&text).unwrap();
    assert_eq!((ack.kind, ack.ack_id), (PacketType::Ack, Some(7)), "{text}");
    let args: Vec<_> = ack.args().unwrap().map(Result::unwrap).collect();
    assert_eq!(args, [r#"{"ts":1}"#, "\"x\""]);
}

#[test]
fn socketio_binary_attachments_come_back_as_attachments() {
    let Some(server) = or_skip(start_socketio()) else { return };
    let (mut client, _) = Client::open(&server);
    client.connect();
    client.send(|out| socketio::encode_emit(out, "/", "echo", &[Arg::Attachment, Arg::Json("2")], Some(8)));
    client.ws.send_binary(&[0, 1, 2, 255]);
    let text = client.next_text();
    let ack = socketio::decode_packet(&text).unwrap();
    assert_eq!((ack.kind, ack.attachments, ack.ack_id), (PacketType::BinaryAck, 1, Some(8)), "{text}");
    let mut args = ack.args().unwrap();
    assert_eq!(args.next().and_then(Result::ok).and_then(socketio::placeholder_num), Some(0));
    assert_eq!(args.next(), Some(Ok("2")));
    assert_eq!(client.binary(), [0, 1, 2, 255]);
}

#[test]
fn socketio_pings_are_answered_and_the_connection_stays_open() {
    let Some(server) = or_skip(start_socketio_pinging_every(200)) else { return };
    let (mut client, open) = Client::open(&server);
    assert_eq!(open.ping_interval, 200);
    client.connect();
    let start = Instant::now();
    while client.pongs < 5 {
        assert!(start.elapsed() < Duration::from_secs(5), "only {} pings in 5 s", client.pongs);
        if let Some(message) = client.ws.recv_within(Duration::from_millis(500)) {
            assert_eq!(message, Message::Text("2".into()), "only pings are due");
            client.send(|out| socketio::encode_pong(out, ""));
            client.pongs += 1;
        }
    }
    // Still connected: an emit is answered.
    client.send(|out| socketio::encode_emit(out, "/", "echo", &[Arg::Json("1")], Some(1)));
    assert_eq!(client.next_text(), "31[1]");
}

#[test]
fn socketio_rooms_deliver_a_publish_to_subscribers() {
    let Some(server) = or_skip(start_socketio()) else { return };
    let (mut subscriber, _) = Client::open(&server);
    let (mut publisher, _) = Client::open(&server);
    subscriber.connect();
    publisher.connect();
    subscriber.send(|out| socketio::encode_emit(out, "/", "subscribe", &[Arg::Json("\"t0\"")], Some(1)));
    assert_eq!(subscriber.next_text(), "31[true]");
    let message = r#"{"topic":"t0","payload":{"id":"0-1","ts":5}}"#;
    publisher.send(|out| socketio::encode_emit(out, "/", "publish", &[Arg::Json(message)], Some(2)));
    assert_eq!(publisher.next_text(), "32[true]");
    let text = subscriber.next_text();
    let event = socketio::decode_packet(&text).unwrap();
    let socketio::Event { name, args } = event.event().unwrap();
    assert_eq!((name.as_ref(), args.rest()), ("message", message));
}

#[test]
fn socketio_unknown_namespace_is_a_connect_error() {
    let Some(server) = or_skip(start_socketio()) else { return };
    let (mut client, _) = Client::open(&server);
    client.send(|out| socketio::encode_connect(out, "/nope", Some(r#"{"token":"t"}"#)));
    let text = client.next_text();
    let refused = socketio::decode_packet(&text).unwrap();
    assert_eq!((refused.kind, refused.namespace), (PacketType::ConnectError, "/nope"), "{text}");
    assert_eq!(refused.error_message().as_deref(), Some("Invalid namespace"));
}
