//! Unit tests of the MQTT codec: exact bytes of every encoder (checked against the
//! specification's layouts), every broker packet decoded in both versions, input split at
//! every byte and packets concatenated, and the limits.

use super::*;

fn connect(version: Version, connect: &Connect<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    encode_connect(&mut out, version, connect).unwrap();
    out
}

const PLAIN: Connect<'static> = Connect {
    client_id: "c1",
    keep_alive: 60,
    clean_start: true,
    username: None,
    password: None,
    session_expiry: None,
};

/// Decodes every packet of `wire`, failing on leftovers.
fn decode_all(version: Version, wire: &[u8]) -> Vec<Packet<'_>> {
    let decoder = Decoder::new(version, DEFAULT_MAX_PACKET);
    let mut packets = Vec::new();
    let mut at = 0;
    while let Some((packet, used)) = decoder.decode(&wire[at..]).unwrap() {
        packets.push(packet);
        at += used;
    }
    assert_eq!(at, wire.len(), "bytes left over");
    packets
}

#[test]
fn connect_3_1_1_is_laid_out_as_the_specification_says() {
    let expected = [0x10, 14, 0, 4, b'M', b'Q', b'T', b'T', 4, 0x02, 0, 60, 0, 2, b'c', b'1'];
    assert_eq!(connect(Version::V311, &PLAIN), expected);
}

#[test]
fn connect_5_has_empty_properties_and_credentials() {
    let with_login = Connect { username: Some("u"), password: Some(b"pw"), clean_start: false, ..PLAIN };
    let expected = [
        0x10, 22, 0, 4, b'M', b'Q', b'T', b'T', 5, 0xC0, 0, 60, 0, 0, 2, b'c', b'1', 0, 1, b'u', 0, 2, b'p',
        b'w',
    ];
    assert_eq!(connect(Version::V5, &with_login), expected);
}

#[test]
fn subscribe_and_unsubscribe_carry_one_filter() {
    let mut out = Vec::new();
    encode_subscribe(&mut out, Version::V311, 7, "t/1", QoS::AtLeastOnce).unwrap();
    assert_eq!(out, [0x82, 8, 0, 7, 0, 3, b't', b'/', b'1', 1]);
    out.clear();
    encode_subscribe(&mut out, Version::V5, 7, "t/1", QoS::AtMostOnce).unwrap();
    assert_eq!(out, [0x82, 9, 0, 7, 0, 0, 3, b't', b'/', b'1', 0]);
    out.clear();
    encode_unsubscribe(&mut out, Version::V311, 8, "t/1").unwrap();
    assert_eq!(out, [0xA2, 7, 0, 8, 0, 3, b't', b'/', b'1']);
    out.clear();
    encode_unsubscribe(&mut out, Version::V5, 8, "t/1").unwrap();
    assert_eq!(out, [0xA2, 8, 0, 8, 0, 0, 3, b't', b'/', b'1']);
}

#[test]
fn publish_qos_0_and_1_and_the_small_packets() {
    let mut out = Vec::new();
    let publish = Publish { topic: "t", qos: QoS::AtMostOnce, packet_id: 0, retain: true, payload: b"hi" };
    encode_publish(&mut out, Version::V311, &publish).unwrap();
    assert_eq!(out, [0x31, 5, 0, 1, b't', b'h', b'i']);
    out.clear();
    let publish = Publish { qos: QoS::AtLeastOnce, packet_id: 258, retain: false, ..publish };
    encode_publish(&mut out, Version::V5, &publish).unwrap();
    assert_eq!(out, [0x32, 8, 0, 1, b't', 1, 2, 0, b'h', b'i']);
    out.clear();
    encode_puback(&mut out, 258);
    encode_pingreq(&mut out);
    encode_disconnect(&mut out);
    assert_eq!(out, [0x40, 2, 1, 2, 0xC0, 0, 0xE0, 0]);
}

#[test]
fn encoders_refuse_what_mqtt_cannot_say_and_leave_the_buffer_alone() {
    let mut out = vec![9];
    let long = "x".repeat(65_536);
    let error = encode_connect(&mut out, Version::V311, &Connect { client_id: &long, ..PLAIN });
    assert_eq!(error, Err(EncodeError::StringTooLong { field: "client id", len: 65_536 }));
    let publish = Publish { topic: "t", qos: QoS::AtLeastOnce, packet_id: 0, retain: false, payload: b"" };
    assert_eq!(encode_publish(&mut out, Version::V311, &publish), Err(EncodeError::MissingPacketId(1)));
    let publish = Publish { qos: QoS::ExactlyOnce, ..publish };
    assert_eq!(encode_publish(&mut out, Version::V311, &publish), Err(EncodeError::MissingPacketId(2)));
    assert_eq!(
        encode_subscribe(&mut out, Version::V5, 0, "t", QoS::AtMostOnce),
        Err(EncodeError::MissingPacketId(1))
    );
    let huge = vec![0u8; MAX_REMAINING_LENGTH];
    let publish = Publish { topic: "t", qos: QoS::AtMostOnce, packet_id: 0, retain: false, payload: &huge };
    assert!(matches!(encode_publish(&mut out, Version::V311, &publish), Err(EncodeError::PacketTooLarge(_))));
    assert_eq!(out, [9]);
}

#[test]
fn long_packets_use_a_multi_byte_remaining_length() {
    let payload = vec![7u8; 20_000];
    let mut out = Vec::new();
    let publish =
        Publish { topic: "t", qos: QoS::AtMostOnce, packet_id: 0, retain: false, payload: &payload };
    encode_publish(&mut out, Version::V311, &publish).unwrap();
    assert_eq!(&out[..4], [0x30, 0xA3, 0x9C, 0x01]); // 20,003 = 0x23 + 0x1C·128 + 1·16384
    let [Packet::Publish(view)] = decode_all(Version::V311, &out)[..] else { panic!("one publish") };
    assert_eq!(view.payload.len(), 20_000);
}

#[test]
fn broker_packets_of_3_1_1_are_decoded() {
    let wire = [
        &[0x20, 2, 1, 5][..],                           // CONNACK session present, not authorized
        &[0x90, 4, 0, 7, 1, 0x80],                      // SUBACK QoS 1, failure
        &[0xB0, 2, 0, 8],                               // UNSUBACK
        &[0x3B, 8, 0, 1, b't', 1, 2, b'h', b'i', b'!'], // PUBLISH dup, QoS 1, retain
        &[0x40, 2, 1, 2],                               // PUBACK
        &[0xD0, 0],                                     // PINGRESP
    ]
    .concat();
    let packets = decode_all(Version::V311, &wire);
    let Packet::ConnAck(connack) = packets[0] else { panic!("{:?}", packets[0]) };
    assert!(connack.session_present && !connack.is_accepted());
    assert_eq!(connack.code_name(), "not_authorized");
    let Packet::SubAck(suback) = packets[1] else { panic!("{:?}", packets[1]) };
    assert_eq!((suback.packet_id, suback.codes, suback.refusal()), (7, &[1, 0x80][..], Some(0x80)));
    assert_eq!(suback.code_name(0x80), "failure");
    assert_eq!(packets[2], Packet::UnsubAck { packet_id: 8, codes: &[] });
    let expected = PublishView {
        topic: "t",
        qos: QoS::AtLeastOnce,
        packet_id: Some(258),
        dup: true,
        retain: true,
        payload: b"hi!",
    };
    assert_eq!(packets[3], Packet::Publish(expected));
    assert_eq!(packets[4], Packet::PubAck { packet_id: 258, code: 0 });
    assert_eq!(packets[5], Packet::PingResp);
}

#[test]
fn broker_packets_of_5_skip_properties_and_read_reason_codes() {
    let wire = [
        &[0x20, 6, 0, 0x87, 3, 0x21, 0, 10][..], // CONNACK not authorized, receive maximum
        &[0x90, 5, 0, 7, 0, 0x87, 0],            // SUBACK not authorized, QoS 0
        &[0xB0, 4, 0, 8, 0, 0x11],               // UNSUBACK no subscription existed
        &[0x30, 10, 0, 1, b't', 5, 0x01, 1, 0x23, 0, 9, b'x'], // PUBLISH, payload format + topic alias
        &[0x40, 3, 0, 9, 0x10],                  // PUBACK no matching subscribers
        &[0xE0, 1, 0x8B],                        // DISCONNECT server shutting down
        &[0xE0, 0],                              // DISCONNECT normal, code left out
    ]
    .concat();
    let packets = decode_all(Version::V5, &wire);
    let Packet::ConnAck(connack) = packets[0] else { panic!("{:?}", packets[0]) };
    assert_eq!((connack.code, connack.code_name()), (0x87, "not_authorized"));
    let Packet::SubAck(suback) = packets[1] else { panic!("{:?}", packets[1]) };
    assert_eq!((suback.refusal(), suback.code_name(0x87)), (Some(0x87), "not_authorized"));
    assert_eq!(packets[2], Packet::UnsubAck { packet_id: 8, codes: &[0x11] });
    let Packet::Publish(publish) = packets[3] else { panic!("{:?}", packets[3]) };
    assert_eq!((publish.topic, publish.qos, publish.payload), ("t", QoS::AtMostOnce, &b"x"[..]));
    assert_eq!(packets[4], Packet::PubAck { packet_id: 9, code: 0x10 });
    assert_eq!(reason_code_name(0x10), "no_matching_subscribers");
    assert_eq!(packets[5], Packet::Disconnect { code: 0x8B });
    assert_eq!(packets[6], Packet::Disconnect { code: 0 });
}

#[test]
fn a_3_1_1_connack_is_read_by_a_version_5_decoder() {
    let packets = decode_all(Version::V5, &[0x20, 2, 0, 1]);
    let Packet::ConnAck(connack) = packets[0] else { panic!("{:?}", packets[0]) };
    assert_eq!(connack.code_name(), "unacceptable_protocol_version");
}

#[test]
fn input_split_at_every_byte_decodes_the_same() {
    let mut wire = Vec::new();
    let publish =
        Publish { topic: "a/b", qos: QoS::AtLeastOnce, packet_id: 3, retain: false, payload: &[1; 300] };
    encode_publish(&mut wire, Version::V5, &publish).unwrap();
    wire.extend_from_slice(&[0x20, 3, 0, 0, 0, 0xD0, 0]);
    let whole = decode_all(Version::V5, &wire);
    assert_eq!(whole.len(), 3);
    let decoder = Decoder::new(Version::V5, DEFAULT_MAX_PACKET);
    for split in 0..wire.len() {
        // Only the first `split` bytes arrived: a prefix never yields a wrong packet.
        let mut at = 0;
        let mut got = Vec::new();
        while let Some((packet, used)) = decoder.decode(&wire[at..split]).unwrap() {
            got.push(packet);
            at += used;
        }
        assert_eq!(got[..], whole[..got.len()], "split at {split}");
        while let Some((packet, used)) = decoder.decode(&wire[at..]).unwrap() {
            got.push(packet);
            at += used;
        }
        assert_eq!(got, whole, "split at {split}");
    }
}

#[test]
fn a_packet_over_the_limit_is_refused_before_its_body_arrives() {
    let decoder = Decoder::new(Version::V311, 100);
    // Only the fixed header of a 200-byte PUBLISH has arrived.
    assert_eq!(
        decoder.decode(&[0x30, 0xC6, 0x01]),
        Err(DecodeError::PacketTooLarge { size: 201, limit: 100 })
    );
    assert_eq!(decoder.decode(&[0x30, 0xFF, 0xFF, 0xFF, 0xFF]), Err(DecodeError::MalformedLength));
    assert_eq!(decoder.decode(&[0x30, 0xFF, 0xFF]), Ok(None));
}

#[test]
fn malformed_and_unexpected_packets_are_errors() {
    let decoder = Decoder::new(Version::V5, DEFAULT_MAX_PACKET);
    let malformed = |wire: &[u8]| matches!(decoder.decode(wire), Err(DecodeError::Malformed { .. }));
    assert!(malformed(&[0x36, 3, 0, 1, b't'])); // QoS 3
    assert!(malformed(&[0x30, 3, 0, 5, b't'])); // topic longer than the packet
    assert!(malformed(&[0x30, 4, 0, 1, 0xff, 0])); // topic not UTF-8
    assert!(malformed(&[0x21, 2, 0, 0])); // reserved flags
    assert!(malformed(&[0x20, 2, 2, 0])); // reserved acknowledge flags
    assert!(malformed(&[0x90, 3, 0, 1, 0])); // SUBACK without codes
    assert!(malformed(&[0x20, 3, 0, 0, 5])); // properties longer than the packet
    assert_eq!(decoder.decode(&[0x80, 2, 0, 1]), Err(DecodeError::UnexpectedPacket(8))); // SUBSCRIBE
    assert_eq!(decoder.decode(&[0x10, 0]), Err(DecodeError::UnexpectedPacket(1)));
}

#[test]
fn qos_2_flows_both_ways_encode_and_decode() {
    let mut out = Vec::new();
    let publish = Publish { topic: "t", qos: QoS::ExactlyOnce, packet_id: 7, retain: true, payload: b"p" };
    encode_publish(&mut out, Version::V311, &publish).unwrap();
    assert_eq!(out, [0x35, 6, 0, 1, b't', 0, 7, b'p']);
    out.clear();
    encode_pubrec(&mut out, 0x0102);
    encode_pubrel(&mut out, 0x0102);
    encode_pubcomp(&mut out, 0x0102);
    assert_eq!(out, [0x50, 2, 1, 2, 0x62, 2, 1, 2, 0x70, 2, 1, 2]);
    let decoder = Decoder::new(Version::V5, DEFAULT_MAX_PACKET);
    fn decode<'a>(decoder: &Decoder, bytes: &'a [u8]) -> Packet<'a> {
        decoder.decode(bytes).unwrap().unwrap().0
    }
    assert_eq!(decode(&decoder, &[0x50, 2, 1, 2]), Packet::PubRec { packet_id: 0x0102, code: 0 });
    assert_eq!(decode(&decoder, &[0x50, 3, 1, 2, 0x87]), Packet::PubRec { packet_id: 0x0102, code: 0x87 });
    assert_eq!(decode(&decoder, &[0x62, 2, 0, 9]), Packet::PubRel { packet_id: 9, code: 0 });
    assert_eq!(decode(&decoder, &[0x70, 2, 0, 9]), Packet::PubComp { packet_id: 9, code: 0 });
    let wrong_flags = decoder.decode(&[0x60, 2, 0, 9]);
    assert_eq!(
        wrong_flags,
        Err(DecodeError::Malformed { packet: "PUBREL", reason: "reserved flags are set" })
    );
    let Packet::Publish(view) = decode(&decoder, &[0x3D, 7, 0, 1, b't', 0, 7, 0, b'p']) else {
        panic!("a PUBLISH")
    };
    assert_eq!((view.qos, view.packet_id, view.dup, view.retain), (QoS::ExactlyOnce, Some(7), true, true));
}

#[test]
fn connect_carries_the_session_expiry_under_mqtt_5_alone() {
    let connect = Connect { clean_start: false, session_expiry: Some(0x0102_0304), ..PLAIN };
    let mut v5 = Vec::new();
    encode_connect(&mut v5, Version::V5, &connect).unwrap();
    assert_eq!(v5[..2], [0x10, 10 + 6 + 4]);
    assert_eq!(
        v5[8..18],
        [5, 0, 0, 60, 5, 0x11, 1, 2, 3, 4],
        "level, flags (no clean start), keep-alive, properties"
    );
    let mut v311 = Vec::new();
    encode_connect(&mut v311, Version::V311, &connect).unwrap();
    assert_eq!(v311[..2], [0x10, 10 + 4], "3.1.1 has no properties");
}
