//! `serve --h3`'s server against a client made of wsbench's own QUIC endpoint, both driven
//! in the test's thread over real UDP sockets on loopback: a client that sends many echo
//! requests and does not read its echoes meets the event loops' backpressure (the
//! server's queue for that WebSocket stays near [`BACKPRESSURE_BYTES`] and the client is
//! held back), and once it reads again every echo comes back.

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::Events;
use wsbench_proto::{OpCode, write_frame};
use wsbench_transport::quic::{self, ConnectionHandle, Endpoint, Event, StreamId};

use super::*;

/// The most a test waits for its exchange: far past what a busy machine needs, so only a
/// hang trips it.
const PATIENCE: Duration = Duration::from_secs(60);

fn shared() -> Arc<Shared> {
    Arc::new(Shared {
        stopping: Default::default(),
        close_all: Default::default(),
        connections: Default::default(),
        echoed: Default::default(),
        wakers: Default::default(),
        handshakes: None,
        message_memory: wsbench_proto::MessageMemory::new(1 << 30),
    })
}

/// The server's TLS (a self-signed certificate, as `serve --h3` without `--tls`) and a
/// client that trusts that certificate, ALPN `h3`.
fn tls_pair() -> (rustls::ClientConfig, rustls::ServerConfig) {
    let (cert, key) = crate::tls::self_signed().unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.clone()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let server = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .and_then(|builder| builder.with_no_client_auth().with_single_cert(vec![cert], key))
        .unwrap();
    let mut client = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map(|builder| builder.with_root_certificates(roots).with_no_client_auth())
        .unwrap();
    client.alpn_protocols = vec![wsbench_transport::http3::ALPN.to_vec()];
    (client, server)
}

/// The server and one client connection to it.
struct Rig {
    server: H3Server,
    events: Events,
    client: Endpoint,
    socket: UdpSocket,
    handle: ConnectionHandle,
    seen: Vec<Event>,
}

impl Rig {
    fn new() -> Rig {
        let (client_tls, server_tls) = tls_pair();
        let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let server = H3Server::bind(addr, &server_tls, &ServeConfig::default(), shared()).unwrap();
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket.set_read_timeout(Some(Duration::from_millis(1))).unwrap();
        let mut client = Endpoint::client();
        let config = quic::client_config(Arc::new(client_tls), 10).unwrap();
        let to = server.local_addr().unwrap();
        let handle = client.connect(Instant::now(), config, to, "localhost").unwrap();
        Rig { server, events: Events::with_capacity(64), client, socket, handle, seen: Vec::new() }
    }

    /// One turn of each side; the client's events are collected.
    fn turn(&mut self) {
        let mut buf = Vec::new();
        while let Some(to) = self.client.transmit(Instant::now(), &mut buf) {
            let _ = self.socket.send_to(&buf, to);
        }
        self.server.turn(&mut self.events, Duration::from_millis(1)).unwrap();
        let mut datagram = vec![0; quic::MAX_DATAGRAM];
        while let Ok((n, from)) = self.socket.recv_from(&mut datagram) {
            self.client.receive(Instant::now(), from, &datagram[..n]);
        }
        self.client.on_timeout(Instant::now());
        let session = self.client.session(self.handle).expect("the client's connection");
        while let Some(event) = session.next_event() {
            self.seen.push(event);
        }
        self.client.touched(Instant::now(), self.handle);
    }

    /// Turns until `done` holds, at most [`PATIENCE`].
    fn until(&mut self, what: &str, mut done: impl FnMut(&mut Rig) -> bool) {
        let start = Instant::now();
        while !done(self) {
            assert!(start.elapsed() < PATIENCE, "{what}: not after {PATIENCE:?}; events {:?}", self.seen);
            self.turn();
        }
    }

    fn session(&mut self) -> &mut quic::Session {
        self.client.session(self.handle).expect("the client's connection")
    }

    /// Opens a WebSocket once the server's SETTINGS allow it and waits for its `200`.
    fn open_websocket(&mut self) -> StreamId {
        self.until("the server's SETTINGS", |rig| rig.seen.iter().any(|e| matches!(e, Event::Ready(_))));
        let stream = self.session().open_websocket("https", "localhost", "/").unwrap();
        self.until("the answer", |rig| {
            rig.seen.iter().any(|e| matches!(e, Event::Response(s, 200, _) if *s == stream))
        });
        stream
    }

    /// The bytes the server has queued on `stream` that QUIC has not taken.
    fn server_queued(&mut self, stream: StreamId) -> usize {
        let endpoint = &mut self.server.endpoint;
        endpoint.handles().into_iter().map(|h| endpoint.session(h).map_or(0, |s| s.pending(stream))).sum()
    }
}

#[test]
fn a_client_that_does_not_read_its_echoes_is_held_back_and_the_servers_queue_stays_bounded() {
    let mut rig = Rig::new();
    let stream = rig.open_websocket();
    rig.session().pause_reading(stream);
    // 256 binary messages of 60,000 bytes (15.4 MB), masked as a client sends them.
    let payload = vec![0x5a; 60_000];
    let mut frame = Vec::new();
    write_frame(&mut frame, true, OpCode::Binary, Some([1, 2, 3, 4]), &payload);
    for _ in 0..256 {
        rig.session().send_data(stream, &frame);
    }
    let mut peak = 0;
    rig.until("the server pausing the stream or the client sending all", |rig| {
        peak = peak.max(rig.server_queued(stream));
        !rig.server.paused.is_empty() || rig.session().pending(stream) == 0
    });
    assert!(
        rig.session().pending(stream) > 0,
        "the client sent all 15.4 MB to a server it never read from: the server queued {peak} bytes"
    );
    // Reading again: every echo comes back, the server's queue never past the budget and
    // what one turn reads of the stream (QUIC's stream window, 1.25 MB by default).
    rig.session().resume_reading(Instant::now(), stream);
    let echo_len = 256 * (payload.len() + 4);
    let mut received = 0;
    rig.until("every echo", |rig| {
        peak = peak.max(rig.server_queued(stream));
        for event in rig.seen.drain(..) {
            if let Event::Data(s, bytes) = event
                && s == stream
            {
                received += bytes.len();
            }
        }
        received >= echo_len
    });
    assert_eq!(received, echo_len);
    let bound = BACKPRESSURE_BYTES + 1_250_000 + 64 * 1024;
    assert!(peak <= bound, "the server queued {peak} bytes for one WebSocket, past {bound}");
    assert!(peak > BACKPRESSURE_BYTES, "the budget was reached ({peak} bytes queued)");
}

#[test]
fn a_stopping_server_closes_its_quic_connections_with_h3_no_error() {
    let mut rig = Rig::new();
    rig.open_websocket();
    rig.server.close();
    rig.until("the connection's end", |rig| rig.seen.iter().any(|e| matches!(e, Event::Closed(_))));
    let cause = rig.seen.iter().find_map(|e| match e {
        Event::Closed(cause) => Some(cause.clone()),
        _ => None,
    });
    // The server's H3_NO_ERROR, not the client's idle timeout.
    assert_eq!(cause.map(|c| c.name()).as_deref(), Some("h3_peer_closed"), "{:?}", rig.seen);
}
