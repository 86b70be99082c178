//! An MQTT client over [`super::Ws`] for the interop tests: packets encoded with
//! `wsbench_appproto::mqtt` go out as binary messages; what comes back is fed, in whatever
//! pieces the broker's messages make, to the incremental decoder.

use wsbench_appproto::mqtt::{
    self, ConnAck, Connect, DEFAULT_MAX_PACKET, Decoder, Packet, Publish, QoS, Version, encode_connect,
};

use super::{Message, Ws};

pub struct MqttClient {
    pub ws: Ws,
    pub version: Version,
    decoder: Decoder,
    input: Vec<u8>,
}

/// What a broker does with a CONNECT: accepts or refuses it with a CONNACK, or closes.
#[derive(Debug)]
pub enum Connected {
    Accepted(MqttClient),
    Refused(ConnAck),
    Closed(u16, String),
}

impl MqttClient {
    /// Connects and sends `connect` (already encoded) for `version`.
    pub fn open(port: u16, path: &str, version: Version, connect: &[u8]) -> Connected {
        let ws = Ws::connect(port, path, &["mqtt"]).expect("WebSocket upgrade");
        let mut client =
            MqttClient { ws, version, decoder: Decoder::new(version, DEFAULT_MAX_PACKET), input: Vec::new() };
        client.ws.send_binary(connect);
        match client.next_or_close() {
            Ok(Packet::ConnAck(connack)) if connack.is_accepted() => Connected::Accepted(client),
            Ok(Packet::ConnAck(connack)) => Connected::Refused(connack),
            Ok(other) => panic!("expected CONNACK, got {other:?}"),
            Err((code, reason)) => Connected::Closed(code, reason),
        }
    }

    /// Connects with a clean session and a 30 s keep-alive; panics unless accepted.
    pub fn connect(port: u16, path: &str, version: Version, client_id: &str) -> MqttClient {
        let mut wire = Vec::new();
        let connect = Connect {
            client_id,
            keep_alive: 30,
            clean_start: true,
            username: None,
            password: None,
            session_expiry: None,
        };
        encode_connect(&mut wire, version, &connect).unwrap();
        match MqttClient::open(port, path, version, &wire) {
            Connected::Accepted(client) => client,
            other => panic!("CONNECT not accepted: {other:?}"),
        }
    }

    /// Encodes with `write` and sends the bytes as one binary message.
    pub fn send(&mut self, write: impl FnOnce(&mut Vec<u8>)) {
        let mut wire = Vec::new();
        write(&mut wire);
        self.ws.send_binary(&wire);
    }

    pub fn subscribe(&mut self, packet_id: u16, filter: &str, qos: QoS) -> Vec<u8> {
        let version = self.version;
        self.send(|out| mqtt::encode_subscribe(out, version, packet_id, filter, qos).unwrap());
        match self.next() {
            Packet::SubAck(suback) if suback.packet_id == packet_id => suback.codes.to_vec(),
            other => panic!("expected SUBACK {packet_id}, got {other:?}"),
        }
    }

    pub fn publish(&mut self, topic: &str, qos: QoS, packet_id: u16, payload: &[u8]) {
        let version = self.version;
        let publish = Publish { topic, qos, packet_id, retain: false, payload };
        self.send(|out| mqtt::encode_publish(out, version, &publish).unwrap());
    }

    /// The next packet; panics if the broker closes instead.
    pub fn next(&mut self) -> Packet<'static> {
        match self.next_or_close() {
            Ok(packet) => packet,
            Err((code, reason)) => panic!("connection closed ({code} {reason:?}) while waiting for a packet"),
        }
    }

    /// The next packet, or the close that came instead.
    pub fn next_or_close(&mut self) -> Result<Packet<'static>, (u16, String)> {
        loop {
            if let Some((_, used)) = self.decoder.decode(&self.input).expect("a valid MQTT packet") {
                // Leak the packet's bytes so the view can outlive the buffer (tests only).
                let bytes: &'static [u8] = Vec::leak(self.input.drain(..used).collect());
                let (packet, _) = self.decoder.decode(bytes).expect("decodes again").expect("whole");
                return Ok(packet);
            }
            match self.ws.recv() {
                Message::Binary(bytes) => self.input.extend_from_slice(&bytes),
                Message::Text(text) => panic!("MQTT broker sent a text message: {text:?}"),
                Message::Close(code, reason) => return Err((code, reason)),
            }
        }
    }
}

/// Subscribe at QoS 1, publish at QoS 0 and 1 to the connection's own topic, get both
/// back (acknowledging the QoS 1 delivery), then PINGREQ → PINGRESP and DISCONNECT.
pub fn round_trip(client: &mut MqttClient, topic: &str) {
    assert_eq!(client.subscribe(1, topic, QoS::AtLeastOnce), [1], "granted QoS 1");
    client.publish(topic, QoS::AtMostOnce, 0, b"qos0");
    let Packet::Publish(delivery) = client.next() else { panic!("expected the QoS 0 delivery") };
    assert_eq!((delivery.topic, delivery.qos, delivery.payload), (topic, QoS::AtMostOnce, &b"qos0"[..]));
    client.publish(topic, QoS::AtLeastOnce, 10, b"qos1");
    // The broker's PUBACK and its delivery may come in either order.
    let (mut acked, mut delivered) = (false, false);
    while !(acked && delivered) {
        match client.next() {
            Packet::PubAck { packet_id: 10, code } => {
                assert_eq!(code, 0);
                acked = true;
            }
            Packet::Publish(delivery) => {
                assert_eq!(
                    (delivery.topic, delivery.qos, delivery.payload),
                    (topic, QoS::AtLeastOnce, &b"qos1"[..])
                );
                let packet_id = delivery.packet_id.expect("a QoS 1 delivery has a packet id");
                client.send(|out| mqtt::encode_puback(out, packet_id));
                delivered = true;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    client.send(mqtt::encode_pingreq);
    assert_eq!(client.next(), Packet::PingResp);
    client.send(mqtt::encode_disconnect);
}

pub fn connect_bytes(version: Version, client_id: &str) -> Vec<u8> {
    let mut wire = Vec::new();
    let connect = Connect {
        client_id,
        keep_alive: 30,
        clean_start: true,
        username: None,
        password: None,
        session_expiry: None,
    };
    mqtt::encode_connect(&mut wire, version, &connect).unwrap();
    wire
}

/// CONNECT with its protocol level byte replaced by `level`.
pub fn connect_with_level(level: u8) -> Vec<u8> {
    let mut wire = connect_bytes(Version::V311, "bad-level");
    assert_eq!(wire[8], 4, "the level byte of a 3.1.1 CONNECT");
    wire[8] = level;
    wire
}

impl std::fmt::Debug for MqttClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MqttClient").field("version", &self.version).finish()
    }
}
