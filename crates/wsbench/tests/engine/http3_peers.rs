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
    let load = format!("--connections {WEBSOCKETS} --streams-per-connection {PER_CONNECTION} --duration 3s");
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

/// The count line a server prints on SIGUSR1 (`echoed N messages, M connections open`),
/// once every WebSocket has gone (the servers count a WebSocket open until its close is
/// through, which may trail the client's exit).
fn echo_count_line(pid: u32, next_line: impl Fn() -> Option<String>) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        // SAFETY: kill(2) on a child this test started.
        unsafe { libc::kill(pid as i32, libc::SIGUSR1) };
        let line = next_line().expect("the server printed its counts");
        if line.ends_with(" 0 connections open") || Instant::now() > deadline {
            return line;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_thousand_websockets_on_ten_quic_connections_through_caddy_are_all_echoed_by_serve() {
    let _slot = heavy(2);
    let serve = Server::spawn(&[]);
    let Some(caddy) = or_skip(start_caddy_h3(serve.addr)) else { return };
    let h3 = h3_addr(&caddy);
    let (result, context) = run_over_h3("h3-caddy", h3);
    let received = uint(&result, "/summary/messages/received");
    let counts = echo_count_line(serve.pid(), || serve.lines.recv_timeout(Duration::from_secs(20)).ok());
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
    let seen = std::cell::Cell::new(0);
    let counts = echo_count_line(hypercorn.pid(), || {
        // The log grows by one count line per SIGUSR1: wait for the next.
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let lines: Vec<String> =
                hypercorn.log().lines().filter(|l| l.starts_with("echoed ")).map(str::to_owned).collect();
            if lines.len() > seen.get() {
                seen.set(lines.len());
                return lines.last().cloned();
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    println!("hypercorn: {counts}");
    assert_eq!(
        counts,
        format!("echoed {received} messages, 0 connections open"),
        "hypercorn echoed what wsbench received\n{context}\nhypercorn's log:\n{}",
        hypercorn.log()
    );
}

fn h3_addr(peer: &Peer) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], peer.port_of("h3").expect("an HTTP/3 port")))
}
