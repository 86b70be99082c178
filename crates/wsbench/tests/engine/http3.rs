//! `wsbench run --transport h3` (RFC 9220) against `wsbench serve --h3`: WebSockets ride as
//! streams on a few QUIC connections with no error and the server echoes exactly what the
//! client counts; a plain HTTP/3 server (one without SETTINGS_ENABLE_CONNECT_PROTOCOL) and a
//! `ws://` target get one line and no load, and the QUIC connection of that check is closed
//! (H3_NO_ERROR), not left to the server's idle timeout. The server runs on a free port and
//! is stopped by the test that started it.

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use wsbench_transport::quic::{self, Endpoint, Event};

use crate::harness::{
    arg, assert_matches_schema, errors, heavy, read_result, scratch, summary_of, uint, wsbench,
};
use crate::support::Server;

/// The `wss://` URL of a server's HTTP/3 port (QUIC is always TLS).
fn h3_url(server: &Server) -> String {
    format!("wss://{}/", server.addr_for("h3"))
}

/// What `server` printed when asked for its counts (SIGUSR1).
fn server_counts(server: &Server) -> String {
    // SAFETY: kill(2) on the child's own pid.
    unsafe { libc::kill(server.pid() as i32, libc::SIGUSR1) };
    server.lines.recv_timeout(Duration::from_secs(20)).expect("the server printed its counts")
}

#[test]
fn websockets_ride_on_quic_connections_to_wsbench_serve_and_every_echo_is_counted() {
    let _slot = heavy(1);
    let server = Server::spawn(&["--h3"]);
    let json = scratch("h3-serve").join("r.json");
    let url = h3_url(&server);
    let args = [
        "run",
        "echo",
        &url,
        "--transport",
        "h3",
        "--insecure",
        "--connections",
        "200",
        "--streams-per-connection",
        "50",
        "--duration",
        "2s",
        "--json",
        arg(&json),
    ];
    let run = wsbench(&args, Duration::from_secs(60));
    run.assert_success();
    let result = read_result(&json);
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    assert_eq!(uint(&result, "/summary/connections/established"), 200, "{context}");
    assert_eq!(result["summary"]["transport"]["name"], "http3", "{context}");
    assert_eq!(uint(&result, "/summary/transport/quic_connections"), 4, "{context}");
    assert_eq!(uint(&result, "/summary/transport/streams_per_connection"), 50, "{context}");
    assert!(errors(&result).is_empty(), "errors==0\n{context}");
    assert!(run.stdout.contains("50 per QUIC connection; 4 QUIC connections carried them"), "{context}");
    assert_matches_schema(&result);
    let received = uint(&result, "/summary/messages/received");
    assert!(received >= 200, "every WebSocket echoed\n{context}");
    assert_eq!(
        server_counts(&server),
        format!("echoed {received} messages, 0 connections open"),
        "the server echoed what the client received\n{context}"
    );
}

#[test]
fn quic_packets_sent_and_lost_are_counted_over_h3_and_absent_over_h1() {
    let _slot = heavy(1);
    let server = Server::spawn(&["--h3"]);
    let packets = |result: &serde_json::Value, name: &str| {
        result.pointer(&format!("/summary/transport/{name}")).and_then(|v| v.as_u64()).unwrap_or(0)
    };
    let h3 = ["--transport", "h3", "--insecure", "--streams-per-connection", "10"];
    for (transport, url, extra) in
        [("h3", h3_url(&server), &h3[..]), ("h1", format!("ws://{}/", server.addr_for("ws")), &[][..])]
    {
        let json = scratch(&format!("quic-packets-{transport}")).join("r.json");
        let mut args =
            vec!["run", "echo", &url, "--connections", "20", "--duration", "1s", "--json", arg(&json)];
        args.extend_from_slice(extra);
        let run = wsbench(&args, Duration::from_secs(60));
        run.assert_success();
        let result = read_result(&json);
        let context = format!("{transport}\n{}\n{}", summary_of(&result), run.describe());
        assert_matches_schema(&result);
        let (sent, lost) = (packets(&result, "quic_packets_sent"), packets(&result, "quic_packets_lost"));
        if transport == "h3" {
            assert!(sent > 0, "{context}");
            assert!(lost <= sent, "{context}");
            assert!(run.stdout.contains("; QUIC packets: "), "{context}");
            assert_eq!(uint(&result, "/counters/quic_packets_sent"), sent, "{context}");
        } else {
            assert_eq!((sent, lost), (0, 0), "{context}");
            assert!(!run.stdout.contains("QUIC packets"), "{context}");
        }
    }
}

fn refused_before_load(test: &str, url: &str, expected: &str, code: i32) {
    crate::harness::refused_before_load(test, url, &["--transport", "h3", "--insecure"], expected, code);
}

#[test]
fn a_plain_http3_server_without_extended_connect_gets_one_line_and_no_load() {
    let _slot = heavy(1);
    let server = Server::spawn(&["--h3", "--h3-refuse-websockets"]);
    // Refused by the server: exit 3, as a run whose handshakes were refused.
    refused_before_load("h3-no-connect", &h3_url(&server), "SETTINGS_ENABLE_CONNECT_PROTOCOL", 3);
    assert_eq!(server_counts(&server), "echoed 0 messages, 0 connections open");
}

#[test]
fn a_ws_url_over_h3_gets_one_line_and_no_load() {
    let _slot = heavy(1);
    let server = Server::spawn(&["--h3"]);
    let url = format!("ws://{}/", server.addr_for("h3"));
    // Nothing was asked of the server: wsbench's own failure, exit 1.
    refused_before_load("h3-ws-url", &url, "use a wss:// URL", 1);
}

/// An HTTP/3 server of wsbench's own QUIC layer, in a thread of the test on a free UDP
/// port: with `enable_connect` it accepts every extended CONNECT (and echoes nothing), else
/// it is a plain HTTP/3 server. It returns how its first `closes` connections ended (the
/// causes' names), or stops waiting after 60 s.
fn h3_server(enable_connect: bool, closes: usize) -> (SocketAddr, JoinHandle<Vec<String>>) {
    let generated = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let cert: CertificateDer<'static> = generated.cert.der().clone();
    let key = PrivateKeyDer::try_from(generated.signing_key.serialize_der()).unwrap();
    let mut tls =
        rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_protocol_versions(&[&rustls::version::TLS13])
            .and_then(|builder| builder.with_no_client_auth().with_single_cert(vec![cert], key))
            .unwrap();
    tls.alpn_protocols = vec![wsbench_transport::http3::ALPN.to_vec()];
    let mut endpoint = Endpoint::server(quic::server_config(tls, 100).unwrap(), enable_connect);
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket.set_read_timeout(Some(Duration::from_millis(5))).unwrap();
    let addr = socket.local_addr().unwrap();
    let thread = std::thread::spawn(move || {
        let (start, mut datagram, mut out) = (Instant::now(), vec![0; quic::MAX_DATAGRAM], Vec::new());
        let mut ended = Vec::new();
        while start.elapsed() < Duration::from_secs(60) && ended.len() < closes {
            while let Ok((n, from)) = socket.recv_from(&mut datagram) {
                endpoint.receive(Instant::now(), from, &datagram[..n]);
            }
            endpoint.on_timeout(Instant::now());
            for handle in endpoint.handles() {
                while let Some(session) = endpoint.session(handle)
                    && let Some(event) = session.next_event()
                {
                    match event {
                        Event::Request(stream, _) => session.respond(stream, 200),
                        Event::Closed(cause) => ended.push(cause.name()),
                        _ => {}
                    }
                }
                endpoint.touched(Instant::now(), handle);
            }
            while let Some(to) = endpoint.transmit(Instant::now(), &mut out) {
                let _ = socket.send_to(&out, to);
            }
        }
        ended
    });
    (addr, thread)
}

#[test]
fn the_checks_quic_connection_is_closed_with_h3_no_error_not_left_to_time_out() {
    let _slot = heavy(1);
    let (addr, server) = h3_server(false, 1);
    let url = format!("wss://{addr}/");
    refused_before_load("h3-check-closes", &url, "SETTINGS_ENABLE_CONNECT_PROTOCOL", 3);
    // The client's CONNECTION_CLOSE, not the server's idle timeout (30 s).
    assert_eq!(server.join().unwrap(), ["h3_peer_closed"]);
}

#[test]
fn a_finished_runs_quic_connections_are_closed_with_h3_no_error() {
    let _slot = heavy(1);
    // The check's connection, then the run's two (3 WebSockets, 2 per connection).
    let (addr, server) = h3_server(true, 3);
    let url = format!("wss://{addr}/");
    let args = ["run", "echo", &url, "--transport", "h3", "--insecure", "--connections", "3"];
    let more = ["--streams-per-connection", "2", "--duration", "1s", "--quiet"];
    let run = wsbench(&[&args[..], &more[..]].concat(), Duration::from_secs(60));
    // The server answers no echo: the run counts its requests unanswered (exit 3).
    assert_eq!(run.code, Some(3), "{}", run.describe());
    assert_eq!(server.join().unwrap(), ["h3_peer_closed"; 3], "{}", run.describe());
}
