//! The head-of-line test's two clients, each keeping one echo in flight on each of several
//! WebSockets that share one connection and recording, for every echo, which message it
//! answered and in which *round* it arrived: over HTTP/3 on wsbench's own QUIC session
//! (`wsbench_transport::quic`, quinn-proto, driven here on a blocking UDP socket: a round is
//! a datagram handed in), over HTTP/2 on hyperium's `h2` (h2c with prior knowledge, driven by
//! one `poll_fn`: a round is a wake-up). Echoes of one round arrived together; an echo of an
//! earlier round arrived strictly before. Neither client is wsbench's engine, which keeps no
//! per-message record: what is measured is the transports' ordering, not a load figure.

use std::future::{Future, poll_fn};
use std::net::{SocketAddr, UdpSocket};
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use bytes::Bytes;
use wsbench_proto::{OpCode, parse_header, write_frame};
use wsbench_transport::quic::{self, Endpoint, Event};

/// One answered message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Echo {
    /// The WebSocket (stream) it went on.
    pub stream: usize,
    /// Its place among all messages sent on the connection (0, 1, 2, …).
    pub sent: u64,
    /// How many messages the connection had sent when its echo came.
    pub sent_by_answer: u64,
    /// The round its echo arrived in.
    pub round: u64,
    pub latency: Duration,
}

/// When the loss starts and stops: called once each, loss first on then off.
pub trait Loss {
    fn start(&mut self);
    fn stop(&mut self);
}

/// How long each WebSocket echoes before the loss starts (not recorded), and while it lasts.
#[derive(Debug, Clone, Copy)]
pub struct Phases {
    pub warm_up: Duration,
    pub lossy: Duration,
}

/// The echo loop both clients share: what is in flight, what was recorded, the phases.
struct Echoes {
    streams: usize,
    /// Per stream: the sent index and send time of its message in flight, and the bytes of
    /// its echo read so far.
    in_flight: Vec<Option<(u64, Instant)>>,
    received: Vec<Vec<u8>>,
    sent: u64,
    round: u64,
    recorded: Vec<Echo>,
    phases: Phases,
    started: Option<Instant>,
    recording: bool,
    done: bool,
}

impl Echoes {
    fn new(streams: usize, phases: Phases) -> Echoes {
        Echoes {
            streams,
            in_flight: vec![None; streams],
            received: vec![Vec::new(); streams],
            sent: 0,
            round: 0,
            recorded: Vec::new(),
            phases,
            started: None,
            recording: false,
            done: false,
        }
    }

    /// The next message of `stream` as a masked text frame; it is now in flight.
    fn next_message(&mut self, stream: usize) -> Vec<u8> {
        let payload = format!("stream {stream} message {}", self.sent);
        self.in_flight[stream] = Some((self.sent, Instant::now()));
        self.sent += 1;
        let mut frame = Vec::new();
        write_frame(&mut frame, true, OpCode::Text, Some([7, 1, 4, 9]), payload.as_bytes());
        frame
    }

    /// Takes echo bytes of `stream`; returns whether its message was answered (and the
    /// stream should send its next one).
    fn on_bytes(&mut self, stream: usize, bytes: &[u8]) -> Result<bool, String> {
        self.received[stream].extend_from_slice(bytes);
        let buf = &self.received[stream];
        let Some(header) = parse_header(buf).map_err(|e| format!("stream {stream}: {e}"))? else {
            return Ok(false);
        };
        let end = header.header_len + header.payload_len as usize;
        if buf.len() < end {
            return Ok(false);
        }
        let (sent, at) =
            self.in_flight[stream].take().ok_or(format!("stream {stream}: an echo of nothing"))?;
        let expected = format!("stream {stream} message {sent}");
        if header.opcode != OpCode::Text || &buf[header.header_len..end] != expected.as_bytes() {
            return Err(format!("stream {stream}: {:?} is not the echo of {expected:?}", &buf[..end]));
        }
        self.received[stream].drain(..end);
        if self.recording {
            let latency = at.elapsed();
            self.recorded.push(Echo { stream, sent, sent_by_answer: self.sent, round: self.round, latency });
        }
        Ok(!self.done)
    }

    /// Moves through the phases; returns when the next phase begins.
    fn tick(&mut self, loss: &mut dyn Loss) -> Option<Instant> {
        let started = self.started?;
        let lossy_at = started + self.phases.warm_up;
        let end_at = lossy_at + self.phases.lossy;
        let now = Instant::now();
        if !self.recording && !self.done && now >= lossy_at {
            loss.start();
            self.recording = true;
        }
        if self.recording && now >= end_at {
            loss.stop();
            self.recording = false;
            self.done = true;
        }
        Some(if self.recording { end_at } else { lossy_at })
    }

    fn finished(&self) -> bool {
        self.done && self.in_flight.iter().all(Option::is_none)
    }
}

/// How long either client may take beyond its phases before it gives up.
const SLACK: Duration = Duration::from_secs(30);

/// The WebSockets of one QUIC connection to `server` (TLS trusting `roots`, SNI `name`).
pub fn over_h3(
    server: SocketAddr,
    name: &str,
    roots: rustls::RootCertStore,
    streams: usize,
    phases: Phases,
    loss: &mut dyn Loss,
) -> Result<Vec<Echo>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let config = quic::client_config(Arc::new(tls), streams as u32)?;
    let socket = UdpSocket::bind("0.0.0.0:0").map_err(|e| format!("UDP socket: {e}"))?;
    let mut endpoint = Endpoint::client();
    let handle = endpoint.connect(Instant::now(), config, server, name)?;
    let echoes = Echoes::new(streams, phases);
    let mut run = H3Run { socket, endpoint, handle, echoes, ids: Vec::new(), open: 0, server };
    run.run(loss)
}

struct H3Run {
    socket: UdpSocket,
    endpoint: Endpoint,
    handle: quic::ConnectionHandle,
    echoes: Echoes,
    ids: Vec<quic::StreamId>,
    open: usize,
    server: SocketAddr,
}

impl H3Run {
    fn run(&mut self, loss: &mut dyn Loss) -> Result<Vec<Echo>, String> {
        let phases = self.echoes.phases;
        let deadline = Instant::now() + phases.warm_up + phases.lossy + SLACK;
        let mut datagram = vec![0u8; quic::MAX_DATAGRAM];
        while !self.echoes.finished() {
            let now = Instant::now();
            if now > deadline {
                return Err("the HTTP/3 client ran out of time".into());
            }
            self.flush()?;
            let phase = self.echoes.tick(loss).unwrap_or(deadline);
            let wake = self.endpoint.next_timeout().map_or(phase, |timer| timer.min(phase));
            let wait = wake.saturating_duration_since(now).max(Duration::from_micros(100));
            self.socket.set_read_timeout(Some(wait)).map_err(|e| e.to_string())?;
            match self.socket.recv_from(&mut datagram) {
                Ok((len, from)) => {
                    self.echoes.round += 1;
                    self.endpoint.receive(Instant::now(), from, &datagram[..len]);
                }
                Err(e)
                    if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                Err(e) => return Err(format!("receive: {e}")),
            }
            self.endpoint.on_timeout(Instant::now());
            let session = self.endpoint.session(self.handle).ok_or("the QUIC connection is gone")?;
            let events: Vec<Event> = std::iter::from_fn(|| session.next_event()).collect();
            for event in events {
                self.on_event(event)?;
            }
        }
        Ok(std::mem::take(&mut self.echoes.recorded))
    }

    fn on_event(&mut self, event: Event) -> Result<(), String> {
        let streams = self.echoes.streams;
        match event {
            Event::Ready(settings) if settings.enable_connect_protocol => {
                let session = self.endpoint.session(self.handle).ok_or("the QUIC connection is gone")?;
                for _ in 0..streams {
                    let id =
                        session.open_websocket("https", &self.server.to_string(), "/").ok_or("no stream")?;
                    self.ids.push(id);
                }
            }
            Event::Response(_, 200, _) => {
                self.open += 1;
                if self.open == streams {
                    self.echoes.started = Some(Instant::now());
                    for stream in 0..streams {
                        self.send_next(stream)?;
                    }
                }
            }
            Event::Data(id, bytes) => {
                let stream = self.ids.iter().position(|s| *s == id).ok_or("data on an unknown stream")?;
                if self.echoes.on_bytes(stream, &bytes)? {
                    self.send_next(stream)?;
                }
            }
            other => return Err(format!("HTTP/3: {other:?}")),
        }
        Ok(())
    }

    /// Sends the next message of `stream` in a packet of its own: one stream's bytes per
    /// packet, so that a lost packet holds back that stream alone.
    fn send_next(&mut self, stream: usize) -> Result<(), String> {
        let message = self.echoes.next_message(stream);
        let session = self.endpoint.session(self.handle).ok_or("the QUIC connection is gone")?;
        session.send_data(self.ids[stream], &message);
        self.flush()
    }

    /// Sends every datagram the connection has ready.
    fn flush(&mut self) -> Result<(), String> {
        let now = Instant::now();
        self.endpoint.touched(now, self.handle);
        let mut datagram = Vec::new();
        while let Some(to) = self.endpoint.transmit(now, &mut datagram) {
            self.socket.send_to(&datagram, to).map_err(|e| format!("send: {e}"))?;
        }
        Ok(())
    }
}

/// The WebSockets of one HTTP/2 connection (h2c with prior knowledge) to `server`.
pub fn over_h2(
    server: SocketAddr,
    streams: usize,
    phases: Phases,
    loss: &mut dyn Loss,
) -> Result<Vec<Echo>, String> {
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    runtime.block_on(async move {
        let tcp = tokio::net::TcpStream::connect(server).await.map_err(|e| format!("connect: {e}"))?;
        tcp.set_nodelay(true).map_err(|e| e.to_string())?;
        let (sender, connection) = h2::client::handshake(tcp).await.map_err(|e| format!("h2: {e}"))?;
        let deadline = tokio::time::sleep(phases.warm_up + phases.lossy + SLACK);
        let echoes = Echoes::new(streams, phases);
        H2Run { sender, connection, echoes, opening: Vec::new(), open: Vec::new(), timer: None }
            .run(loss, Box::pin(deadline))
            .await
    })
}

type Opening = h2::client::ResponseFuture;

struct H2Run {
    sender: h2::client::SendRequest<Bytes>,
    connection: h2::client::Connection<tokio::net::TcpStream, Bytes>,
    echoes: Echoes,
    opening: Vec<(Opening, h2::SendStream<Bytes>)>,
    open: Vec<(h2::SendStream<Bytes>, h2::RecvStream)>,
    /// Wakes the loop when the next phase begins.
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl H2Run {
    async fn run(
        mut self,
        loss: &mut dyn Loss,
        mut deadline: Pin<Box<tokio::time::Sleep>>,
    ) -> Result<Vec<Echo>, String> {
        poll_fn(|cx| {
            if deadline.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Err("the HTTP/2 client ran out of time".to_string()));
            }
            self.echoes.round += 1;
            if let Poll::Ready(ended) = Pin::new(&mut self.connection).poll(cx) {
                return Poll::Ready(Err(format!("the HTTP/2 connection ended: {ended:?}")));
            }
            if let Err(e) = self.step(cx) {
                return Poll::Ready(Err(e));
            }
            if let Some(next) = self.echoes.tick(loss) {
                let mut sleep = Box::pin(tokio::time::sleep_until(next.into()));
                if sleep.as_mut().poll(cx).is_ready() {
                    cx.waker().wake_by_ref();
                }
                self.timer = Some(sleep);
            }
            if self.echoes.finished() {
                return Poll::Ready(Ok(std::mem::take(&mut self.echoes.recorded)));
            }
            // What the streams wrote goes out now.
            let _ = Pin::new(&mut self.connection).poll(cx);
            Poll::Pending
        })
        .await
    }

    /// Opens the WebSockets once the server allows extended CONNECT, then echoes.
    fn step(&mut self, cx: &mut std::task::Context<'_>) -> Result<(), String> {
        let streams = self.echoes.streams;
        if self.opening.is_empty()
            && self.open.is_empty()
            && self.sender.is_extended_connect_protocol_enabled()
        {
            for _ in 0..streams {
                let mut request = http::Request::builder()
                    .method(http::Method::CONNECT)
                    .uri(format!("http://{}/", "wsbench.test"))
                    .header("sec-websocket-version", "13")
                    .body(())
                    .map_err(|e| e.to_string())?;
                request.extensions_mut().insert(h2::ext::Protocol::from_static("websocket"));
                let (response, send) = self.sender.send_request(request, false).map_err(|e| e.to_string())?;
                self.opening.push((response, send));
            }
        }
        while let Some((response, _)) = self.opening.first_mut() {
            let Poll::Ready(answer) = Pin::new(response).poll(cx) else { break };
            let answer = answer.map_err(|e| format!("extended CONNECT: {e}"))?;
            if answer.status() != 200 {
                return Err(format!("extended CONNECT answered {}", answer.status()));
            }
            let (_, send) = self.opening.remove(0);
            self.open.push((send, answer.into_body()));
            if self.open.len() == streams {
                self.echoes.started = Some(Instant::now());
                for stream in 0..streams {
                    let message = self.echoes.next_message(stream);
                    self.open[stream].0.send_data(message.into(), false).map_err(|e| e.to_string())?;
                }
            }
        }
        for stream in 0..self.open.len() {
            while let Poll::Ready(Some(data)) = self.open[stream].1.poll_data(cx) {
                let data = data.map_err(|e| format!("stream {stream}: {e}"))?;
                let _ = self.open[stream].1.flow_control().release_capacity(data.len());
                if self.echoes.on_bytes(stream, &data)? {
                    let message = self.echoes.next_message(stream);
                    self.open[stream].0.send_data(message.into(), false).map_err(|e| e.to_string())?;
                }
            }
        }
        Ok(())
    }
}
