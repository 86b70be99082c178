//! `wsbench run --http2` (RFC 8441) against real HTTP/2 servers: `wsbench serve` (h2c and
//! TLS with ALPN h2), HAProxy from Debian in front of `wsbench serve` (its `proto h2` and
//! `alpn h2,http/1.1` binds, speaking the HTTP/1.1 upgrade to it), node's built-in `http2`
//! module, and the fleet's axum 0.8 server. 1,000 WebSockets ride on 10 TCP connections with no error; a server
//! without extended CONNECT, or without HTTP/2 at all, gets one line and no load; a GOAWAY
//! and a reset stream are counted by cause while the other streams go on. Every peer runs
//! on a free port and is stopped by the process it started.

use serde_json::Value;
use std::time::Duration;
use wsbench_testpeers::{NodeH2, Peer, or_skip, start_axum, start_haproxy, start_node_h2};

use crate::harness::{
    NodeEchoServer, arg, assert_matches_schema, errors, heavy, read_result, scratch, summary_of, uint,
    wsbench,
};
use crate::support::Server;

/// Runs `wsbench run echo URL --http2` with 1,000 WebSockets, 100 per TCP connection, and
/// checks they all rode on 10 TCP connections without an error. Returns the result.
fn thousand_on_ten(test: &str, url: &str, extra: &[&str]) -> Value {
    let json = scratch(test).join("r.json");
    let mut args = vec![
        "run",
        "echo",
        url,
        "--http2",
        "--connections",
        "1000",
        "--streams-per-connection",
        "100",
        "--duration",
        "2s",
        "--json",
        arg(&json),
        "--quiet",
    ];
    args.extend_from_slice(extra);
    let run = wsbench(&args, Duration::from_secs(60));
    run.assert_success();
    let result = read_result(&json);
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    assert_eq!(uint(&result, "/summary/connections/established"), 1000, "{context}");
    assert_eq!(result["summary"]["transport"]["name"], "http2", "{context}");
    assert_eq!(uint(&result, "/summary/transport/tcp_connections"), 10, "{context}");
    assert_eq!(uint(&result, "/summary/transport/streams_per_connection"), 100, "{context}");
    assert!(errors(&result).is_empty(), "errors==0\n{context}");
    assert!(uint(&result, "/summary/messages/received") >= 1000, "every WebSocket echoed\n{context}");
    assert!(run.stdout.contains("10 TCP connections carried them"), "the report says so\n{context}");
    assert_matches_schema(&result);
    result
}

#[test]
fn a_thousand_websockets_ride_on_ten_tcp_connections_to_wsbench_serve() {
    let _slot = heavy(1);
    let server = Server::spawn(&[]);
    thousand_on_ten("h2-serve", &server.urls[0], &[]);
}

#[test]
fn over_tls_the_websockets_negotiate_h2_by_alpn() {
    let _slot = heavy(1);
    let server = Server::spawn(&["--tls"]);
    let url = server.urls.iter().find(|u| u.starts_with("wss://")).expect("a wss:// listener").clone();
    let result = thousand_on_ten("h2-serve-tls", &url, &["--insecure"]);
    let negotiated: u64 = result["counters"]["tls_negotiated"]
        .as_object()
        .expect("TLS counted")
        .values()
        .filter_map(Value::as_u64)
        .sum();
    assert_eq!(negotiated, 1000, "every WebSocket counted its TLS session: {}", result["counters"]);
}

#[test]
fn haproxy_in_front_of_wsbench_serve_carries_them_over_h2c_and_tls() {
    let _slot = heavy(1);
    let server = Server::spawn(&[]);
    let Some(haproxy) = or_skip(start_haproxy(server.addr)) else { return };
    let port = |name| haproxy.port_of(name).expect("haproxy port");
    thousand_on_ten("h2-haproxy", &format!("ws://127.0.0.1:{}/", port("h2c")), &[]);
    thousand_on_ten("h2-haproxy-tls", &format!("wss://127.0.0.1:{}/", port("tls")), &["--insecure"]);
}

#[test]
fn node_http2_with_enable_connect_protocol_carries_them() {
    let _slot = heavy(1);
    let Some(node) = or_skip(start_node_h2(NodeH2::Echo)) else { return };
    thousand_on_ten("h2-node", &node.url("/"), &[]);
}

#[test]
fn the_axum_fleet_server_carries_them_over_h2c_and_answers_http1_on_the_same_port() {
    let _slot = heavy(1);
    let Some(axum) = or_skip(start_axum()) else { return };
    let url = axum.url("/");
    thousand_on_ten("h2-axum", &url, &[]);
    let json = scratch("h1-axum").join("r.json");
    let run = wsbench(
        &["run", "echo", &url, "--connections", "200", "--duration", "1s", "--json", arg(&json)],
        Duration::from_secs(60),
    );
    run.assert_success();
    let result = read_result(&json);
    assert_eq!(result["summary"]["transport"]["name"], "http1", "{}", summary_of(&result));
    assert_eq!(uint(&result, "/summary/transport/tcp_connections"), 200, "{}", summary_of(&result));
}

#[test]
fn pubsub_fans_out_to_streams_of_the_built_in_server() {
    let _slot = heavy(1);
    let json = scratch("h2-pubsub").join("r.json");
    let args =
        "run pubsub --http2 --subscribers 200 --topics 4 --publishers 4 --rate 100/s --duration 2s --quiet";
    let mut args: Vec<&str> = args.split_whitespace().collect();
    args.extend(["--json", arg(&json)]);
    let run = wsbench(&args, Duration::from_secs(60));
    run.assert_success();
    let result = read_result(&json);
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    assert_eq!(result["pubsub"]["subscribed"], 200, "{context}");
    assert_eq!(result["pubsub"]["lost"], 0, "{context}");
    assert_eq!(result["pubsub"]["delivered"], result["pubsub"]["expected_deliveries"], "{context}");
    assert_eq!(
        uint(&result, "/summary/transport/tcp_connections"),
        3,
        "204 WebSockets on 3 TCP connections\n{context}"
    );
}

/// Runs `wsbench run --http2` against `url` expecting the server to refuse it before any
/// load: exit 3 (as a run whose handshakes were refused), one line on stderr containing
/// `expected`, no result file.
fn refused_before_load(test: &str, url: &str, expected: &str) {
    crate::harness::refused_before_load(test, url, &["--http2"], expected, 3);
}

#[test]
fn a_server_without_extended_connect_gets_one_line_and_no_load() {
    let _slot = heavy(1);
    let Some(node) = or_skip(start_node_h2(NodeH2::NoConnectProtocol)) else { return };
    refused_before_load("h2-no-connect", &node.url("/"), "SETTINGS_ENABLE_CONNECT_PROTOCOL");
    assert!(!node.log().contains("connect request"), "no extended CONNECT was sent\n{}", node.log());
}

#[test]
fn a_server_without_http2_gets_one_line_and_no_load() {
    let _slot = heavy(1);
    let Some(node) = NodeEchoServer::start() else { return };
    refused_before_load("h2-not-h2", &node.url, "does not speak HTTP/2");
}

#[test]
fn websockets_beyond_the_servers_max_concurrent_streams_are_refused_by_cause() {
    let _slot = heavy(1);
    let Some(node) = or_skip(start_node_h2(NodeH2::FewStreams)) else { return };
    let json = scratch("h2-few-streams").join("r.json");
    let args =
        ["run", "echo", &node.url("/"), "--http2", "--connections", "30", "--streams-per-connection", "20"];
    let run = wsbench(
        &[&args[..], &["--duration", "1s", "--quiet", "--json", arg(&json)]].concat(),
        Duration::from_secs(60),
    );
    run.assert_completed_with_failures();
    let result = read_result(&json);
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    // 20 WebSockets on the first connection, which takes 10 at once; 10 on the second.
    let want = [("handshake_h2_over_max_concurrent_streams".to_owned(), 10)];
    assert_eq!(errors(&result), want.into_iter().collect(), "{context}");
    assert_eq!(uint(&result, "/summary/connections/established"), 20, "{context}");
}

/// The number in the node peer's log line `goaway to a connection of N streams`.
fn streams_ended_by_goaway(node: &Peer) -> u64 {
    let log = node.log();
    let line =
        log.lines().find(|l| l.starts_with("goaway to a connection of")).unwrap_or_else(|| panic!("{log}"));
    line.split_whitespace().nth(5).and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("{line}"))
}

#[test]
fn a_goaway_and_a_reset_stream_are_counted_by_cause_and_the_other_streams_go_on() {
    let _slot = heavy(1);
    let Some(node) = or_skip(start_node_h2(NodeH2::Faults)) else { return };
    let json = scratch("h2-faults").join("r.json");
    let args = [
        "run",
        "echo",
        &node.url("/"),
        "--http2",
        "--connections",
        "300",
        "--header",
        "x-conn: {conn}",
        "--duration",
        "3s",
        "--json",
        arg(&json),
        "--quiet",
    ];
    let run = wsbench(&args, Duration::from_secs(60));
    run.assert_completed_with_failures();
    let result = read_result(&json);
    let context = format!("{}\n{}\n--- node ---\n{}", summary_of(&result), run.describe(), node.log());
    assert!(node.log().contains("reset stream of x-conn 7"), "{context}");
    let goaway = streams_ended_by_goaway(&node);
    assert!(goaway > 0, "{context}");
    let want = [("h2_goaway_enhance_your_calm".to_owned(), goaway), ("h2_rst_cancel".to_owned(), 1)];
    assert_eq!(
        errors(&result),
        want.into_iter().collect(),
        "each counted by its cause, nothing else\n{context}"
    );
    assert_eq!(uint(&result, "/summary/connections/established"), 300, "{context}");
    assert_eq!(uint(&result, "/summary/transport/tcp_connections"), 3, "{context}");
    // The others went on: each of the WebSockets left made 20 round trips at the very least
    // (the GOAWAY came after one of them made 20).
    let survivors = 300 - goaway - 1;
    assert!(uint(&result, "/summary/messages/received") >= survivors * 20, "{context}");
    assert_eq!(result["counters"]["transport_errors_by_cause"]["h2_rst_cancel"], 1, "{context}");
    assert_matches_schema(&result);
}
