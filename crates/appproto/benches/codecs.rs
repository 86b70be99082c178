//! Micro-benchmarks of each protocol's per-message work on the engine's hot path: encoding
//! the message a client sends and decoding the one it gets back, with a typical ~80-byte
//! JSON payload (the shape of wsbench's timestamped messages). One figure per protocol, in
//! ns per encode+decode, so a change to a codec can be measured before it hides in network
//! noise. The buffer is reused, as the engine reuses its per-connection buffers.
//!
//! Run: `cargo bench -p wsbench-appproto --bench codecs -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use wsbench_appproto::{graphql_ws, jsonrpc, mqtt, socketio, stomp};

const PAYLOAD: &str = r#"{"id":"2-117","ts":81170000,"sent":81170012,"measured":true,"pad":"xxxxxxxx"}"#;

fn mqtt_publish(c: &mut Criterion) {
    let decoder = mqtt::Decoder::new(mqtt::Version::V5, mqtt::DEFAULT_MAX_PACKET);
    let publish = mqtt::Publish {
        topic: "wsbench/t17",
        qos: mqtt::QoS::AtLeastOnce,
        packet_id: 4711,
        retain: false,
        payload: PAYLOAD.as_bytes(),
    };
    let mut out = Vec::with_capacity(256);
    c.bench_function("mqtt/publish_qos1_v5", |b| {
        b.iter(|| {
            out.clear();
            mqtt::encode_publish(&mut out, mqtt::Version::V5, black_box(&publish)).unwrap();
            let Ok(Some((mqtt::Packet::Publish(view), _))) = decoder.decode(black_box(&out)) else {
                panic!()
            };
            black_box(view.payload.len())
        })
    });
}

fn stomp_send_message(c: &mut Criterion) {
    let decoder = stomp::Decoder::new(stomp::DEFAULT_MAX_FRAME);
    let message = format!(
        "MESSAGE\nsubscription:s1\ndestination:/topic/t17\nmessage-id:T_s1@@session-Ab3@@17\nredelivered:false\ncontent-length:{}\n\n{PAYLOAD}\0\n",
        PAYLOAD.len()
    );
    let send = stomp::Send {
        destination: "/topic/t17",
        content_type: None,
        receipt: None,
        body: PAYLOAD.as_bytes(),
    };
    let mut out = Vec::with_capacity(256);
    c.bench_function("stomp/send_and_message", |b| {
        b.iter(|| {
            out.clear();
            stomp::encode_send(&mut out, black_box(&send));
            let Ok(Some((stomp::Item::Frame(frame), _))) = decoder.decode(black_box(message.as_bytes()))
            else {
                panic!()
            };
            let Ok(stomp::ServerFrame::Message { body, .. }) = frame.server_frame() else { panic!() };
            black_box(body.len() + out.len())
        })
    });
}

fn socketio_emit_ack(c: &mut Criterion) {
    let ack = format!("43117[{PAYLOAD}]");
    let mut out = Vec::with_capacity(256);
    c.bench_function("socketio/emit_and_ack", |b| {
        b.iter(|| {
            out.clear();
            socketio::encode_emit(
                &mut out,
                "/",
                "echo",
                &[socketio::Arg::Json(black_box(PAYLOAD))],
                Some(117),
            );
            let Ok(socketio::EnginePacket::Message(text)) =
                socketio::decode_engine(black_box(ack.as_bytes()))
            else {
                panic!()
            };
            let packet = socketio::decode_packet(text).unwrap();
            let first = packet.args().unwrap().next().unwrap().unwrap();
            black_box((packet.ack_id, first.len() + out.len()))
        })
    });
}

fn graphql_ws_subscribe_next(c: &mut Criterion) {
    let next =
        format!(r#"{{"id":"117","type":"next","payload":{{"data":{{"echo":{}}}}}}}"#, serde_json_string());
    let subscribe = graphql_ws::Subscribe {
        query: "subscription ($m: String!) { echo(message: $m) }",
        variables: Some(r#"{"m":"x"}"#),
        operation_name: None,
    };
    let mut out = Vec::with_capacity(256);
    c.bench_function("graphql_ws/subscribe_and_next", |b| {
        b.iter(|| {
            out.clear();
            graphql_ws::encode_subscribe(&mut out, "117", black_box(&subscribe));
            let Ok(graphql_ws::Message::Next { id, payload }) =
                graphql_ws::decode(black_box(next.as_bytes()))
            else {
                panic!()
            };
            black_box((id.len(), payload.len() + out.len()))
        })
    });
}

/// The payload as a JSON string, the way a GraphQL `String` field carries it.
fn serde_json_string() -> String {
    let mut out = String::from('"');
    out.push_str(&PAYLOAD.replace('"', "\\\""));
    out.push('"');
    out
}

fn jsonrpc_call_result(c: &mut Criterion) {
    let result = format!(r#"{{"jsonrpc":"2.0","result":{PAYLOAD},"id":117}}"#);
    let mut out = Vec::with_capacity(256);
    c.bench_function("jsonrpc/request_and_result", |b| {
        b.iter(|| {
            out.clear();
            jsonrpc::encode_request(&mut out, &jsonrpc::Id::Number(117), "echo", Some(black_box(PAYLOAD)));
            let Ok(jsonrpc::Message::Result { id, result }) = jsonrpc::decode(black_box(result.as_bytes()))
            else {
                panic!()
            };
            black_box((id, result.len() + out.len()))
        })
    });
}

criterion_group!(
    codecs,
    mqtt_publish,
    stomp_send_message,
    socketio_emit_ack,
    graphql_ws_subscribe_next,
    jsonrpc_call_result
);
criterion_main!(codecs);
