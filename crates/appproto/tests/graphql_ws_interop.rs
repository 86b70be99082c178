//! graphql-transport-ws against a real graphql-ws 6 server (`servers/node-graphql-ws/server.js`),
//! spoken with `wsbench_appproto::graphql_ws`: init/ack, ping/pong, a query, subscriptions
//! yielding `next`s then `complete`, an invalid query's `error`, and the close without the
//! subprotocol.

mod support;

use support::{Message, Ws};
use wsbench_appproto::graphql_ws::{self, Subscribe};
use wsbench_testpeers::{Peer, or_skip, start_graphql_ws};

fn send(ws: &mut Ws, write: impl FnOnce(&mut Vec<u8>)) {
    let mut text = Vec::new();
    write(&mut text);
    ws.send_text(&text);
}

fn next_text(ws: &mut Ws) -> String {
    match ws.recv() {
        Message::Text(text) => text,
        other => panic!("expected a text message, got {other:?}"),
    }
}

/// Connected and acknowledged.
fn ready(server: &Peer) -> Ws {
    let mut ws =
        Ws::connect(server.port(), "/graphql", &[graphql_ws::SUBPROTOCOL]).expect("WebSocket upgrade");
    assert_eq!(ws.protocol.as_deref(), Some(graphql_ws::SUBPROTOCOL));
    send(&mut ws, |out| graphql_ws::encode_connection_init(out, Some("{}")));
    let text = next_text(&mut ws);
    assert!(
        matches!(graphql_ws::decode(text.as_bytes()), Ok(graphql_ws::Message::ConnectionAck { .. })),
        "{text}"
    );
    ws
}

/// The `next` payloads of operation `id` until its `complete`.
fn results(ws: &mut Ws, id: &str) -> Vec<String> {
    let mut payloads = Vec::new();
    loop {
        let text = next_text(ws);
        match graphql_ws::decode(text.as_bytes()).unwrap() {
            graphql_ws::Message::Next { id: got, payload } if got == id => payloads.push(payload.to_owned()),
            graphql_ws::Message::Complete { id: got } if got == id => return payloads,
            other => panic!("unexpected {other:?}"),
        }
    }
}

#[test]
fn graphql_ws_subscription_yields_its_nexts_then_completes() {
    let Some(server) = or_skip(start_graphql_ws()) else { return };
    let mut ws = ready(&server);
    let ticks = Subscribe {
        query: "subscription ($n: Int!) { ticks(count: $n) }",
        variables: Some(r#"{"n":3}"#),
        operation_name: None,
    };
    send(&mut ws, |out| graphql_ws::encode_subscribe(out, "1", &ticks));
    assert_eq!(
        results(&mut ws, "1"),
        [r#"{"data":{"ticks":1}}"#, r#"{"data":{"ticks":2}}"#, r#"{"data":{"ticks":3}}"#]
    );
    let echo = Subscribe {
        query: r#"subscription { echo(message: "hi \"there\"") }"#,
        variables: None,
        operation_name: None,
    };
    send(&mut ws, |out| graphql_ws::encode_subscribe(out, "2", &echo));
    assert_eq!(results(&mut ws, "2"), [r#"{"data":{"echo":"hi \"there\""}}"#]);
}

#[test]
fn graphql_ws_query_is_one_next_and_a_complete() {
    let Some(server) = or_skip(start_graphql_ws()) else { return };
    let mut ws = ready(&server);
    let query = Subscribe {
        query: "query Echo($m: String!) { echo(message: $m) }",
        variables: Some(r#"{"m":"x"}"#),
        operation_name: Some("Echo"),
    };
    send(&mut ws, |out| graphql_ws::encode_subscribe(out, "q", &query));
    assert_eq!(results(&mut ws, "q"), [r#"{"data":{"echo":"x"}}"#]);
}

#[test]
fn graphql_ws_ping_is_answered_with_pong() {
    let Some(server) = or_skip(start_graphql_ws()) else { return };
    let mut ws = ready(&server);
    send(&mut ws, |out| graphql_ws::encode_ping(out, None));
    let text = next_text(&mut ws);
    assert!(matches!(graphql_ws::decode(text.as_bytes()), Ok(graphql_ws::Message::Pong { .. })), "{text}");
}

#[test]
fn graphql_ws_invalid_query_is_an_error_with_its_message() {
    let Some(server) = or_skip(start_graphql_ws()) else { return };
    let mut ws = ready(&server);
    let bad = Subscribe { query: "{ nope }", variables: None, operation_name: None };
    send(&mut ws, |out| graphql_ws::encode_subscribe(out, "3", &bad));
    let text = next_text(&mut ws);
    let graphql_ws::Message::Error { id, message, .. } = graphql_ws::decode(text.as_bytes()).unwrap() else {
        panic!("expected error: {text}")
    };
    assert_eq!((id.as_ref(), message.as_ref()), ("3", "Cannot query field \"nope\" on type \"Query\"."));
}

#[test]
fn graphql_ws_without_the_subprotocol_closes_4406() {
    let Some(server) = or_skip(start_graphql_ws()) else { return };
    let mut ws = Ws::connect(server.port(), "/graphql", &[]).expect("WebSocket upgrade");
    let Message::Close(code, reason) = ws.recv() else { panic!("expected a close") };
    assert_eq!(
        (code, graphql_ws::close_code_name(code)),
        (4406, Some("subprotocol_not_acceptable")),
        "{reason}"
    );
}
