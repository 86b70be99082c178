//! The checks behind the fuzz targets of the application-protocol codecs
//! (`wsbench_appproto`), shared with the corpus test `crates/appproto/tests/fuzz_corpus.rs`,
//! which includes this file by path: it may use only `wsbench_appproto` and std. Every
//! decoder must end in a value or a typed error on any input, never a panic; the
//! incremental decoders must decode the same items whatever the input's split; views must
//! answer every question asked of them; and what an encoder writes must decode back.

use wsbench_appproto::{
    actioncable, centrifugo, graphql_ws, jsonrpc, mqtt, nats, pusher, signalr, socketio, stomp,
};

/// Decodes everything `decode` finds in `input` (item, bytes used), stopping at the first
/// error or incomplete item, after checking every item used some bytes within the input.
fn drain<'a, T>(
    input: &'a [u8],
    decode: impl Fn(&'a [u8]) -> Result<Option<(T, usize)>, String>,
) -> (Vec<T>, usize) {
    let mut items = Vec::new();
    let mut at = 0;
    while let Ok(Some((item, used))) = decode(&input[at..]) {
        assert!(used > 0 && used <= input.len() - at, "used {used} of {} bytes", input.len() - at);
        items.push(item);
        at += used;
    }
    (items, at)
}

/// The split point of a fuzz input: a position chosen by the control byte.
fn split_point(control: u8, len: usize) -> usize {
    if len == 0 { 0 } else { usize::from(control) * 7 % (len + 1) }
}

/// First byte: MQTT version (bit 0), a small packet limit (bit 1), where to split the rest.
pub fn mqtt_decode(data: &[u8]) {
    let Some((&control, body)) = data.split_first() else { return };
    let version = if control & 1 == 0 { mqtt::Version::V311 } else { mqtt::Version::V5 };
    let limit = if control & 2 == 0 { mqtt::DEFAULT_MAX_PACKET } else { 64 };
    let decoder = mqtt::Decoder::new(version, limit);
    let decode = |bytes| decoder.decode(bytes).map_err(|e| e.to_string());
    let (whole, _) = drain(body, decode);
    for packet in &whole {
        match packet {
            mqtt::Packet::ConnAck(connack) => assert!(!connack.code_name().is_empty()),
            mqtt::Packet::SubAck(suback) => {
                assert!(suback.codes.iter().all(|&code| !suback.code_name(code).is_empty()));
                let _ = suback.refusal();
            }
            mqtt::Packet::Publish(publish) => assert!(publish.payload.len() < limit),
            _ => {}
        }
    }
    assert_split_decodes_the_same(body, control >> 2, &whole, decode);
}

/// Decoding `body` in two pieces (the items of a prefix, then those of everything after
/// what the prefix used) gives the items decoding it whole gave.
fn assert_split_decodes_the_same<'a, T: PartialEq + std::fmt::Debug>(
    body: &'a [u8],
    control: u8,
    whole: &[T],
    decode: impl Fn(&'a [u8]) -> Result<Option<(T, usize)>, String> + Copy,
) {
    let split = split_point(control, body.len());
    let (mut pieces, used) = drain(&body[..split], decode);
    pieces.extend(drain(&body[used..], decode).0);
    assert_eq!(pieces, whole, "split at {split}");
}

/// First byte: a small frame limit (bit 0), where to split the rest. Heart-beats are left
/// out of the comparison: a frame's trailing end of line is a heart-beat once split off.
pub fn stomp_decode(data: &[u8]) {
    let Some((&control, body)) = data.split_first() else { return };
    let limit = if control & 1 == 0 { stomp::DEFAULT_MAX_FRAME } else { 64 };
    let decoder = stomp::Decoder::new(limit);
    let decode = |bytes| match decoder.decode(bytes) {
        Ok(Some((stomp::Item::HeartBeat, used))) => Ok(Some((None, used))),
        Ok(Some((stomp::Item::Frame(frame), used))) => Ok(Some((Some(frame), used))),
        Ok(None) => Ok(None),
        Err(error) => Err(error.to_string()),
    };
    let (items, _) = drain(body, decode);
    let whole: Vec<_> = items.into_iter().flatten().collect();
    for frame in &whole {
        assert!(frame.body.len() < limit);
        let headers: Vec<_> = frame.headers().collect();
        if let Some((name, value)) = headers.first() {
            assert_eq!(frame.header(name).as_ref(), Some(value), "the first header wins");
        }
        let _ = frame.server_frame();
    }
    let (first, used) = drain(&body[..split_point(control >> 1, body.len())], decode);
    let mut pieces: Vec<_> = first.into_iter().flatten().collect();
    pieces.extend(drain(&body[used..], decode).0.into_iter().flatten());
    assert_eq!(pieces, whole);
    // A header value sent escaped comes back as it was.
    let value = String::from_utf8_lossy(body);
    let mut wire = Vec::new();
    stomp::encode_subscribe(&mut wire, &value, "/topic/t", None);
    if let Ok(Some((stomp::Item::Frame(frame), _))) = stomp::Decoder::new(usize::MAX).decode(&wire) {
        assert_eq!(frame.header("id").as_deref(), Some(value.as_ref()));
    } else if !value.contains('\0') {
        panic!("an encoded SUBSCRIBE did not decode");
    }
}

/// The input as one text or binary message: its Engine.IO packet, its Socket.IO packet and
/// every view of it; then an emit of the input as an event name decodes back to that name.
pub fn socketio_decode(data: &[u8]) {
    if let Ok(socketio::EnginePacket::Message(text)) = socketio::decode_engine(data)
        && let Ok(packet) = socketio::decode_packet(text)
    {
        if let Ok(args) = packet.args() {
            let rest = args.rest();
            for element in args.flatten() {
                let _ = socketio::placeholder_num(element);
            }
            assert!(text.contains(rest));
        }
        if let Ok(event) = packet.event() {
            let _ = event.args.count();
        }
        let _ = packet.error_message();
    }
    let name = String::from_utf8_lossy(data);
    let mut wire = Vec::new();
    socketio::encode_emit(&mut wire, "/", &name, &[socketio::Arg::Attachment], Some(9));
    let text = std::str::from_utf8(&wire).expect("an emit is UTF-8");
    let socketio::EnginePacket::Message(payload) =
        socketio::decode_engine(text.as_bytes()).expect("an emit decodes")
    else {
        panic!("an emit is a message")
    };
    let packet = socketio::decode_packet(payload).expect("an emit is a packet");
    assert_eq!((packet.attachments, packet.ack_id), (1, Some(9)));
    assert_eq!(packet.event().expect("an emit is an event").name, name);
}

/// The input as one graphql-transport-ws message; then a subscribe with the input as its
/// id and query decodes back to them.
pub fn graphql_ws_decode(data: &[u8]) {
    if let Ok(graphql_ws::Message::Next { payload, .. }) = graphql_ws::decode(data) {
        if let Some((_, code)) = graphql_ws::execution_error(payload) {
            let mut cause = String::new();
            let cause = graphql_ws::error_cause(&mut cause, code.as_deref());
            assert!(cause.len() <= "graphql_error_".len() + graphql_ws::MAX_CODE, "{cause}");
        }
        if let Some(data) = graphql_ws::result_data(payload) {
            let _ = graphql_ws::only_field(data);
            let _ = graphql_ws::innermost_field(data);
        }
    }
    let text = String::from_utf8_lossy(data);
    let mut wire = Vec::new();
    let subscribe = graphql_ws::Subscribe { query: &text, variables: None, operation_name: Some(&text) };
    graphql_ws::encode_subscribe(&mut wire, &text, &subscribe);
    match graphql_ws::decode(&wire) {
        Ok(graphql_ws::Message::Subscribe { id, payload }) => {
            assert_eq!(id, text);
            assert!(payload.starts_with("{\"query\":"));
        }
        other => panic!("an encoded subscribe decoded as {other:?}"),
    }
}

/// The input as one JSON-RPC message; then a request with the input as its string id and
/// method, answered by a result echoing that id, decodes back to the id.
pub fn jsonrpc_decode(data: &[u8]) {
    if let Ok(jsonrpc::Message::Error { code, .. }) = jsonrpc::decode(data) {
        assert!(!jsonrpc::error_code_name(code).is_empty());
    }
    let text = String::from_utf8_lossy(data);
    let id = jsonrpc::Id::Str(text.clone());
    let mut request = Vec::new();
    jsonrpc::encode_request(&mut request, &id, &text, Some("[]"));
    let request = std::str::from_utf8(&request).expect("a request is UTF-8");
    // The server's answer, made from the request's own id text.
    let id_text = &request[request.rfind(",\"id\":").expect("the request has an id") + 6..request.len() - 1];
    let response = format!("{{\"jsonrpc\":\"2.0\",\"result\":null,\"id\":{id_text}}}");
    assert_eq!(jsonrpc::decode(response.as_bytes()), Ok(jsonrpc::Message::Result { id, result: "null" }));
}

/// The input as one Centrifugo message (its lines decoded each); then a subscribe and a
/// publication on the input as a channel name decode back to it.
pub fn centrifugo_decode(data: &[u8]) {
    for line in centrifugo::lines(data) {
        assert!(!line.is_empty() && !line.contains(&b'\n'));
        let _ = centrifugo::decode(line);
    }
    let channel = String::from_utf8_lossy(data);
    let mut wire = Vec::new();
    centrifugo::encode_subscribe(&mut wire, 7, &channel);
    let command = std::str::from_utf8(&wire).expect("a command is UTF-8");
    let quoted = &command[command.find(":{\"channel\":").expect("the channel") + 12..command.len() - 2];
    let push = format!("{{\"push\":{{\"channel\":{quoted},\"pub\":{{\"data\":[1]}}}}}}");
    assert_eq!(
        centrifugo::decode(push.as_bytes()),
        Ok(centrifugo::Reply::Publication { channel: channel.clone(), data: "[1]" })
    );
}

/// First byte: a small payload limit (bit 0), where to split the rest. Every INFO's JSON is
/// read, every message's payload is within the limit and its headers within it too.
pub fn nats_decode(data: &[u8]) {
    let Some((&control, body)) = data.split_first() else { return };
    let limit = if control & 1 == 0 { nats::DEFAULT_MAX_PAYLOAD } else { 64 };
    let decoder = nats::Decoder::new(limit);
    let decode = |bytes| decoder.decode(bytes).map_err(|e| e.to_string());
    let (whole, _) = drain(body, decode);
    for op in &whole {
        match op {
            nats::ServerOp::Info(json) => _ = nats::Info::parse(json),
            nats::ServerOp::Msg(msg) => {
                let headers = msg.headers.map_or(0, <[u8]>::len);
                assert!(headers + msg.payload.len() <= limit);
            }
            _ => {}
        }
    }
    assert_split_decodes_the_same(body, control >> 1, &whole, decode);
}

/// The input as an Action Cable message (a transmitted message's fields read too); then a
/// subscription to the input as a channel name comes back confirmed by the identifier it
/// was sent with, as the server quotes it.
pub fn actioncable_decode(data: &[u8]) {
    if let Ok(actioncable::ServerMessage::Message { message, .. }) = actioncable::decode(data) {
        let _ = actioncable::action_fields(message);
    }
    let channel = String::from_utf8_lossy(data);
    let mut identifier = Vec::new();
    actioncable::write_identifier(&mut identifier, &channel, "");
    let identifier = std::str::from_utf8(&identifier).expect("an identifier is UTF-8");
    let mut command = Vec::new();
    actioncable::encode_subscribe(&mut command, identifier);
    let command = std::str::from_utf8(&command).expect("a command is UTF-8");
    let quoted = &command[command.find(",\"identifier\":").expect("the identifier") + 14..command.len() - 1];
    let confirmation = format!("{{\"identifier\":{quoted},\"type\":\"confirm_subscription\"}}");
    assert_eq!(
        actioncable::decode(confirmation.as_bytes()),
        Ok(actioncable::ServerMessage::Confirmed { identifier: identifier.into() })
    );
}

/// The input as a Pusher message; then a subscription to the input as a channel name comes
/// back as the server's `subscription_succeeded` for that channel.
pub fn pusher_decode(data: &[u8]) {
    let _ = pusher::decode(data);
    let channel = String::from_utf8_lossy(data);
    let mut wire = Vec::new();
    pusher::encode_subscribe(&mut wire, &channel, Some("k:s"), None);
    let command = std::str::from_utf8(&wire).expect("a command is UTF-8");
    let start = command.find("{\"channel\":").expect("the channel") + 11;
    let end = command.rfind(",\"auth\":").expect("the auth");
    let succeeded = format!(
        "{{\"event\":\"pusher_internal:subscription_succeeded\",\"channel\":{}}}",
        &command[start..end]
    );
    assert_eq!(
        pusher::decode(succeeded.as_bytes()),
        Ok(pusher::ServerEvent::Subscribed { channel: channel.clone() })
    );
}

/// The input as a WebSocket message of SignalR's JSON hub protocol: its records as hub
/// messages and as a handshake answer; then an invocation whose target is the input comes
/// back as the same target, and an echo's argument as a completion's result.
pub fn signalr_decode(data: &[u8]) {
    for record in signalr::records(data).flatten() {
        let _ = signalr::decode(record);
        let _ = signalr::decode_handshake(record);
    }
    let target = String::from_utf8_lossy(data);
    let mut argument = Vec::new();
    wsbench_appproto::json::write_str(&mut argument, &target);
    let mut wire = Vec::new();
    signalr::encode_invocation(&mut wire, Some("1"), &target, &[&argument]);
    let records: Vec<_> = signalr::records(&wire).collect();
    assert_eq!(records.len(), 1, "one record: the separator is never inside a string written");
    let record = records[0].clone().expect("a terminated record");
    match signalr::decode(record) {
        Ok(signalr::HubMessage::Invocation { target: decoded, arguments, .. }) => {
            assert_eq!(decoded, target);
            assert_eq!(arguments.as_bytes(), [b"[", &argument[..], b"]"].concat());
        }
        other => panic!("{other:?}"),
    }
}
