//! `wsbench run --transport h3` (RFC 9220) against real HTTP/3 servers, the fleet members
//! themselves: Caddy reverse-proxying WebSockets over HTTP/3 to `wsbench serve` (HTTP/1.1
//! upgrades behind it), and hypercorn with aioquic running an ASGI echo application.
//! 1,000 WebSockets ride on 10 QUIC connections with no error, and the echo server's own
//! count equals the round trips wsbench counted. Skipped when the peer is not installed
//! (`scripts/install-test-peers.sh`) unless `WSBENCH_REQUIRE_PEERS=1`.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::Value;
use wsbench_testpeers::{Peer, or_skip, start_caddy_h3, start_hypercorn_h3};

use crate::harness::{arg, errors, heavy, read_result, scratch, summary_of, uint, wsbench};
use crate::support::Server;

const WEBSOCKETS: u64 = 1000;
const PER_CONNECTION: u64 = 100;

/// One echo run of [`WEBSOCKETS`] over QUIC connections of [`PER_CONNECTION`] each against
/// the HTTP/3 port `h3`: success, every WebSocket up, no error. Returns the result and the
/// context for failure messages.
fn run_over_h3(test: &str, h3: SocketAddr) -> (Value, String) {
    let json = scratch(test).join("r.json");
    let url = format!("wss://{h3}/");
    let load = format!(
        "--connections {WEBSOCKETS} --streams-per-connection {PER_CONNECTION} --ramp 500/s --connect-timeout 10s --duration 3s"
    );
    let mut args = vec!["run", "echo", &url, "--transport", "h3", "--insecure", "--json", arg(&json)];
    args.extend(load.split(' '));
    let run = wsbench(&args, Duration::from_secs(120));
    println!("wsbench {}\n{}", args.join(" "), run.stdout);
    run.assert_success();
    let result = read_result(&json);
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    assert_eq!(uint(&result, "/summary/connections/established"), WEBSOCKETS, "{context}");
    assert_eq!(result["summary"]["transport"]["name"], "http3", "{context}");
    assert_eq!(
        uint(&result, "/summary/transport/quic_connections"),
        WEBSOCKETS / PER_CONNECTION,
        "{context}"
    );
    assert!(errors(&result).is_empty(), "errors==0\n{context}");
    assert!(uint(&result, "/summary/messages/received") >= WEBSOCKETS, "every WebSocket echoed\n{context}");
    (result, context)
}

/// What `wsbench serve` printed on SIGUSR1 (`echoed N messages, M connections open`), once
/// every WebSocket has gone (it counts a WebSocket open until its close is through, which may
/// trail the client's exit).
fn serve_counts(serve: &Server) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        // SAFETY: kill(2) on a child this test started.
        unsafe { libc::kill(serve.pid() as i32, libc::SIGUSR1) };
        let line = serve.lines.recv_timeout(Duration::from_secs(20)).expect("serve printed its counts");
        if line.ends_with(" 0 connections open") || Instant::now() > deadline {
            return line;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The echo count hypercorn's application printed on SIGUSR1 (`echoed N messages, …`).
fn hypercorn_echoes(hypercorn: &Peer) -> String {
    // SAFETY: kill(2) on a child this test started.
    unsafe { libc::kill(hypercorn.pid() as i32, libc::SIGUSR1) };
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if let Some(line) = hypercorn.log().lines().find(|line| line.starts_with("echoed ")) {
            return line.to_owned();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("hypercorn printed no count; its log:\n{}", hypercorn.log());
}

#[test]
fn a_thousand_websockets_on_ten_quic_connections_through_caddy_are_all_echoed_by_serve() {
    let _slot = heavy(2);
    let serve = Server::spawn(&[]);
    let Some(caddy) = or_skip(start_caddy_h3(serve.addr)) else { return };
    let (result, context) = run_over_h3("h3-caddy", h3_addr(&caddy));
    let received = uint(&result, "/summary/messages/received");
    let counts = serve_counts(&serve);
    println!("wsbench serve behind Caddy: {counts}");
    assert_eq!(
        counts,
        format!("echoed {received} messages, 0 connections open"),
        "serve echoed what wsbench received through Caddy\n{context}\ncaddy's log:\n{}",
        caddy.log()
    );
}

#[test]
fn a_thousand_websockets_on_ten_quic_connections_to_hypercorn_are_all_echoed() {
    let _slot = heavy(2);
    let Some(hypercorn) = or_skip(start_hypercorn_h3()) else { return };
    let (result, context) = run_over_h3("h3-hypercorn", h3_addr(&hypercorn));
    let received = uint(&result, "/summary/messages/received");
    let counts = hypercorn_echoes(&hypercorn);
    println!("hypercorn: {counts}");
    // hypercorn never tells the application that an HTTP/3 WebSocket closed: its count of
    // open connections keeps them (servers/python-hypercorn-h3/server.py).
    assert!(
        counts.starts_with(&format!("echoed {received} messages, ")),
        "hypercorn echoed what wsbench received: {counts}\n{context}\nhypercorn's log:\n{}",
        hypercorn.log()
    );
}

fn h3_addr(peer: &Peer) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], peer.port_of("h3").expect("an HTTP/3 port")))
}
