//! JSON-RPC 2.0 against a real rpc-websockets 10 server (`servers/node-rpc-websockets/server.js`),
//! spoken with `wsbench_appproto::jsonrpc`: a call and its result, a missing method's
//! -32601, rpc-websockets' event pub/sub (`rpc.on`, then `{"notification":…}` pushes), and
//! its quirk of never answering a call with id 0.

mod support;

use std::time::Duration;

use support::{Message, Ws};
use wsbench_appproto::jsonrpc::{self, Id};
use wsbench_testpeers::{Peer, or_skip, start_rpc_websockets};

fn open(server: &Peer) -> Ws {
    Ws::connect(server.port(), "/", &[]).expect("WebSocket upgrade")
}

fn call(ws: &mut Ws, id: u64, method: &str, params: Option<&str>) -> String {
    let mut text = Vec::new();
    jsonrpc::encode_request(&mut text, &Id::Number(id), method, params);
    ws.send_text(&text);
    match ws.recv() {
        Message::Text(text) => text,
        other => panic!("expected a text message, got {other:?}"),
    }
}

#[test]
fn jsonrpc_call_returns_its_result() {
    let Some(server) = or_skip(start_rpc_websockets()) else { return };
    let mut ws = open(&server);
    let text = call(&mut ws, 1, "echo", Some(r#"{"ts":1,"s":"é\""}"#));
    assert_eq!(
        jsonrpc::decode(text.as_bytes()),
        Ok(jsonrpc::Message::Result { id: Id::Number(1), result: r#"{"ts":1,"s":"é\""}"# })
    );
}

#[test]
fn jsonrpc_missing_method_is_error_32601() {
    let Some(server) = or_skip(start_rpc_websockets()) else { return };
    let mut ws = open(&server);
    let text = call(&mut ws, 2, "nope", Some("[]"));
    let jsonrpc::Message::Error { id, code, message, .. } = jsonrpc::decode(text.as_bytes()).unwrap() else {
        panic!("expected an error: {text}")
    };
    assert_eq!((id, code, message.as_ref()), (Id::Number(2), -32601, "Method not found"));
    assert_eq!(jsonrpc::error_code_name(code), "method_not_found");
}

#[test]
fn jsonrpc_events_reach_their_subscribers() {
    let Some(server) = or_skip(start_rpc_websockets()) else { return };
    let (mut subscriber, mut publisher) = (open(&server), open(&server));
    let mut text = Vec::new();
    jsonrpc::encode_subscribe(&mut text, &Id::Number(1), &["t0", "nope"]);
    subscriber.send_text(&text);
    let Message::Text(reply) = subscriber.recv() else { panic!("expected the subscription's result") };
    let jsonrpc::Message::Result { result, .. } = jsonrpc::decode(reply.as_bytes()).unwrap() else {
        panic!("{reply}")
    };
    assert_eq!(result, r#"{"t0":"ok","nope":"provided event invalid"}"#);
    let published = call(&mut publisher, 1, "publish", Some(r#"{"topic":"t0","payload":{"id":"0-1"}}"#));
    assert!(matches!(
        jsonrpc::decode(published.as_bytes()),
        Ok(jsonrpc::Message::Result { result: "true", .. })
    ));
    let Message::Text(pushed) = subscriber.recv() else { panic!("expected the event") };
    let expected = jsonrpc::Message::Event {
        name: "t0".into(),
        params: Some(r#"{"topic":"t0","payload":{"id":"0-1"}}"#),
    };
    assert_eq!(jsonrpc::decode(pushed.as_bytes()), Ok(expected));
}

#[test]
fn jsonrpc_call_with_id_0_is_never_answered_by_rpc_websockets() {
    let Some(server) = or_skip(start_rpc_websockets()) else { return };
    let mut ws = open(&server);
    let mut text = Vec::new();
    jsonrpc::encode_request(&mut text, &Id::Number(0), "echo", Some("[1]"));
    ws.send_text(&text);
    assert_eq!(ws.recv_within(Duration::from_millis(500)), None, "id 0 is a notification to rpc-websockets");
    assert!(call(&mut ws, 1, "echo", Some("[1]")).contains(r#""id":1"#));
}
