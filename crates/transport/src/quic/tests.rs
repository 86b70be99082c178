//! A client and a server endpoint over real UDP sockets on loopback, driven in one thread:
//! WebSockets opened as extended CONNECTs on one QUIC connection, their bytes echoed, and a
//! server that does not enable extended CONNECT seen as such.

use std::net::UdpSocket;
use std::time::{Duration, Instant};

use rustls::crypto::ring::default_provider;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use super::*;

/// The most a test waits for its exchange: far past what a busy machine needs, so only a
/// hang trips it.
const PATIENCE: Duration = Duration::from_secs(30);

fn tls_pair() -> (rustls::ClientConfig, rustls::ServerConfig) {
    let generated = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let cert: CertificateDer<'static> = generated.cert.der().clone();
    let key = PrivateKeyDer::try_from(generated.signing_key.serialize_der()).unwrap();
    let provider = std::sync::Arc::new(default_provider());
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.clone()).unwrap();
    let mut client = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    client.alpn_protocols = vec![crate::http3::ALPN.to_vec()];
    let mut server = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .unwrap();
    server.alpn_protocols = vec![crate::http3::ALPN.to_vec()];
    server.max_early_data_size = u32::MAX;
    (client, server)
}

/// Two endpoints, each on its own UDP socket.
struct Pair {
    client: Endpoint,
    server: Endpoint,
    client_socket: UdpSocket,
    server_socket: UdpSocket,
}

impl Pair {
    fn new(enable_connect: bool) -> (Pair, ConnectionHandle) {
        Pair::with_client(enable_connect, |_| {})
    }

    /// A pair whose client connection's QUIC configuration `tweak` changed.
    fn with_client(enable_connect: bool, tweak: impl FnOnce(&mut ClientConfig)) -> (Pair, ConnectionHandle) {
        let (client_tls, server_tls) = tls_pair();
        let server_socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        let client_socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        for socket in [&server_socket, &client_socket] {
            socket.set_read_timeout(Some(Duration::from_millis(5))).unwrap();
        }
        let server = Endpoint::server(server_config(server_tls, 100).unwrap(), enable_connect);
        let mut client = Endpoint::client();
        let to = server_socket.local_addr().unwrap();
        let mut config = client_config(std::sync::Arc::new(client_tls), 100).unwrap();
        tweak(&mut config);
        let handle = client.connect(Instant::now(), config, to, "localhost").unwrap();
        (Pair { client, server, client_socket, server_socket }, handle)
    }

    /// One turn: what each side has goes out, what came in is handed over, timers run.
    fn turn(&mut self) {
        let now = Instant::now();
        let mut buf = Vec::new();
        for (endpoint, socket) in
            [(&mut self.client, &self.client_socket), (&mut self.server, &self.server_socket)]
        {
            while let Some(to) = endpoint.transmit(now, &mut buf) {
                socket.send_to(&buf, to).unwrap();
            }
        }
        let mut datagram = vec![0; MAX_DATAGRAM];
        for (endpoint, socket) in
            [(&mut self.client, &self.client_socket), (&mut self.server, &self.server_socket)]
        {
            while let Ok((n, from)) = socket.recv_from(&mut datagram) {
                endpoint.receive(Instant::now(), from, &datagram[..n]);
            }
            endpoint.on_timeout(Instant::now());
        }
    }

    /// Turns until `done` holds; the server echoes every DATA payload and accepts every
    /// extended CONNECT; the client's events are collected.
    fn run(
        &mut self,
        handle: ConnectionHandle,
        mut done: impl FnMut(&mut Session, &[Event]) -> bool,
    ) -> Vec<Event> {
        let start = Instant::now();
        let mut seen = Vec::new();
        loop {
            self.turn();
            self.serve_echo();
            let session = self.client.session(handle).expect("the client's connection");
            while let Some(event) = session.next_event() {
                seen.push(event);
            }
            if done(session, &seen) {
                return seen;
            }
            self.client.touched(Instant::now(), handle);
            assert!(start.elapsed() < PATIENCE, "no end after {PATIENCE:?}: {seen:?}");
        }
    }

    fn serve_echo(&mut self) {
        for handle in self.server.handles() {
            let session = self.server.session(handle).unwrap();
            while let Some(event) = session.next_event() {
                match event {
                    Event::Request(stream, request) if request.protocol == b"websocket" => {
                        session.respond(stream, 200)
                    }
                    Event::Request(stream, _) => session.respond(stream, 501),
                    Event::Data(stream, bytes) => session.send_data(stream, &bytes),
                    Event::Finished(stream) => session.finish(stream),
                    _ => {}
                }
            }
            self.server.touched(Instant::now(), handle);
        }
    }
}

#[test]
fn websockets_share_a_connection_and_their_bytes_come_back() {
    let (mut pair, handle) = Pair::new(true);
    let events = pair.run(handle, |_, seen| seen.iter().any(|e| matches!(e, Event::Ready(_))));
    let Some(Event::Ready(settings)) = events.last() else { panic!("{events:?}") };
    assert!(settings.enable_connect_protocol);
    let session = pair.client.session(handle).unwrap();
    let streams: Vec<StreamId> =
        (0..3).map(|_| session.open_websocket("https", "localhost", "/echo").unwrap()).collect();
    for (i, stream) in streams.iter().enumerate() {
        // A masked text frame, as a WebSocket client sends it (opaque to this layer).
        session.send_data(*stream, format!("frame {i}").as_bytes());
    }
    let mut echoed = vec![Vec::new(); 3];
    let events = pair.run(handle, |_, seen| {
        for event in seen {
            if let Event::Data(stream, bytes) = event {
                let i = streams.iter().position(|s| s == stream).unwrap();
                if echoed[i].len() < 7 {
                    echoed[i].extend_from_slice(bytes);
                }
            }
        }
        echoed.iter().all(|e| e.len() >= 7)
    });
    for stream in &streams {
        assert!(events.iter().any(|e| matches!(e, Event::Response(s, 200, _) if s == stream)), "{events:?}");
    }
    for (i, bytes) in echoed.iter().enumerate() {
        assert_eq!(bytes, format!("frame {i}").as_bytes());
    }
}

#[test]
fn a_connection_counts_the_packets_it_sent_and_lost() {
    let (mut pair, handle) = Pair::new(true);
    pair.run(handle, |_, seen| seen.iter().any(|e| matches!(e, Event::Ready(_))));
    let before = pair.client.session(handle).unwrap().packet_stats();
    // The Initial and the handshake's packets went, at least.
    assert!(before.sent >= 2, "{before:?}");
    let session = pair.client.session(handle).unwrap();
    let stream = session.open_websocket("https", "localhost", "/echo").unwrap();
    session.send_data(stream, b"frame");
    pair.run(handle, |_, seen| seen.iter().any(|e| matches!(e, Event::Data(..))));
    let after = pair.client.session(handle).unwrap().packet_stats();
    assert!(after.sent > before.sent, "{before:?} then {after:?}");
    assert!(after.lost <= after.sent, "{after:?}");
}

#[test]
fn a_server_without_extended_connect_says_so_in_its_settings() {
    let (mut pair, handle) = Pair::new(false);
    let events = pair.run(handle, |_, seen| seen.iter().any(|e| matches!(e, Event::Ready(_))));
    let Some(Event::Ready(settings)) = events.last() else { panic!("{events:?}") };
    assert!(!settings.enable_connect_protocol);
    assert_eq!(pair.client.session(handle).unwrap().peer_settings(), Some(*settings));
}

#[test]
fn a_connection_that_times_out_is_told_before_it_is_dropped() {
    // A connection whose idle timeout is 1 s, to a server that then goes silent.
    let (mut pair, handle) = Pair::with_client(true, |config| {
        let mut short = transport(100);
        short.max_idle_timeout(Some(Duration::from_secs(1).try_into().unwrap()));
        config.transport_config(std::sync::Arc::new(short));
    });
    pair.run(handle, |_, seen| seen.iter().any(|e| matches!(e, Event::Ready(_))));
    let start = Instant::now();
    let mut datagram = vec![0; MAX_DATAGRAM];
    let cause = loop {
        assert!(start.elapsed() < PATIENCE, "no end after {PATIENCE:?}");
        let mut buf = Vec::new();
        while pair.client.transmit(Instant::now(), &mut buf).is_some() {}
        // The server reads nothing now: what came is thrown away.
        while pair.server_socket.recv_from(&mut datagram).is_ok() {}
        pair.client.on_timeout(Instant::now());
        let session = pair.client.session(handle).expect("the session stays until its end is read");
        if let Some(Event::Closed(cause)) = std::iter::from_fn(|| session.next_event()).last() {
            break cause;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    assert_eq!(cause, Cause::TimedOut);
    // Told, it goes at the next turn of the timers.
    pair.client.on_timeout(Instant::now());
    assert!(pair.client.session(handle).is_none());
}
