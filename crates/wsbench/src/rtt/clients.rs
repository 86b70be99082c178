//! The round-trip clients of `wsbench rtt`: raw TCP echo, HTTP and HTTPS `GET /`,
//! WebSocket and secure WebSocket echo (and over HTTP/2, `h2_client.rs`, and HTTP/3, `h3_client.rs`). Each owns one blocking std socket (TCP_NODELAY,
//! 5 s read/write timeouts so nothing ever hangs) and prepares its request bytes once, when
//! it connects, like the seed's benchmarks ("preparing the data once"): a round trip is then
//! one write of ready bytes and the reads needed for one complete answer, nothing else.
//!
//! The same masked frame is sent every time (one mask key per connection). RFC 6455 wants a
//! fresh key per frame against proxy cache poisoning, which does not apply between a
//! benchmark client and its server; re-masking would add work the TCP baseline does not do.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use rustls::{ClientConfig, ClientConnection, StreamOwned};
use rustls_pki_types::ServerName;
use wsbench_proto::handshake::{client_key, client_request, parse_response};
use wsbench_proto::{Decoder, OpCode, Role, write_frame};

use super::config::{Protocol, RttTarget};
use super::h2_client::WsH2Echo;
use super::h3_client::WsH3Echo;

/// Timeout of every connect, read and write.
pub const IO_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest HTTP response head or body accepted.
const MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;
const INITIAL_BUFFER: usize = 16 * 1024;

/// One request → one complete response, on a connection that stays open.
pub trait RoundTrip {
    fn round_trip(&mut self) -> io::Result<()>;
}

/// Where connecting failed, for the error message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    Resolve,
    Connect,
    Tls,
    Upgrade,
}

impl Stage {
    pub fn describe(self) -> &'static str {
        match self {
            Stage::Resolve => "resolving the address",
            Stage::Connect => "connecting",
            Stage::Tls => "the TLS handshake",
            Stage::Upgrade => "the WebSocket upgrade",
        }
    }
}

/// Why a client could not be set up.
#[derive(Debug)]
pub struct ConnectError {
    pub stage: Stage,
    pub source: io::Error,
}

fn at(stage: Stage) -> impl FnOnce(io::Error) -> ConnectError {
    move |source| ConnectError { stage, source }
}

/// A blocking TLS stream (rustls over a std socket).
pub type TlsStream = StreamOwned<ClientConnection, TcpStream>;

/// Connects a client for `target`'s protocol. `tls` is needed for https, wss and the
/// protocols over HTTP/2 with TLS and HTTP/3.
pub fn connect(
    target: &RttTarget,
    payload_bytes: usize,
    tls: Option<&Arc<ClientConfig>>,
) -> Result<Box<dyn RoundTrip + Send>, ConnectError> {
    let tcp = || connect_socket(target);
    let tls_config = || tls.expect("a TLS client configuration for the protocols over TLS");
    let tls_stream = |socket| tls_handshake(socket, &target.host, tls_config()).map_err(at(Stage::Tls));
    let payload = payload(payload_bytes);
    Ok(match target.protocol {
        Protocol::Tcp => Box::new(TcpEcho::new(tcp()?, payload)),
        Protocol::Http => Box::new(HttpGet::new(tcp()?, target)),
        Protocol::Https => Box::new(HttpGet::new(tls_stream(tcp()?)?, target)),
        Protocol::Ws => Box::new(WsEcho::upgrade(tcp()?, target, payload).map_err(at(Stage::Upgrade))?),
        Protocol::Wss => {
            Box::new(WsEcho::upgrade(tls_stream(tcp()?)?, target, payload).map_err(at(Stage::Upgrade))?)
        }
        Protocol::WsH2 => {
            Box::new(WsH2Echo::open(tcp()?, target, payload, false).map_err(at(Stage::Upgrade))?)
        }
        Protocol::WssH2 => {
            let mut config = (**tls_config()).clone();
            config.alpn_protocols = vec![b"h2".to_vec()];
            let stream = tls_handshake(tcp()?, &target.host, &Arc::new(config)).map_err(at(Stage::Tls))?;
            if stream.conn.alpn_protocol() != Some(b"h2") {
                let refused = invalid("the server did not agree to HTTP/2 in TLS (ALPN h2)");
                return Err(ConnectError { stage: Stage::Tls, source: refused });
            }
            Box::new(WsH2Echo::open(stream, target, payload, true).map_err(at(Stage::Upgrade))?)
        }
        Protocol::WssH3 => Box::new(open_h3(target, payload, tls_config())?),
    })
}

/// The `wss-h3` client: QUIC on a UDP socket of its own, to the target's first address.
fn open_h3(target: &RttTarget, payload: Vec<u8>, tls: &ClientConfig) -> Result<WsH3Echo, ConnectError> {
    let mut addrs = (target.host.as_str(), target.port).to_socket_addrs().map_err(at(Stage::Resolve))?;
    let no_address = || io::Error::new(io::ErrorKind::NotFound, "the name has no address");
    let server = addrs.next().ok_or_else(no_address).map_err(at(Stage::Resolve))?;
    let (mut echo, settings) =
        WsH3Echo::handshake(server, &target.host, payload, tls, IO_TIMEOUT).map_err(at(Stage::Tls))?;
    echo.upgrade(target, settings).map_err(at(Stage::Upgrade))?;
    Ok(echo)
}

impl<S: Read + Write> RoundTrip for WsH2Echo<S> {
    fn round_trip(&mut self) -> io::Result<()> {
        self.echo()
    }
}

impl RoundTrip for WsH3Echo {
    fn round_trip(&mut self) -> io::Result<()> {
        self.echo()
    }
}

/// The bytes every tcp/ws message carries: printable, so a capture is easy to read.
pub fn payload(len: usize) -> Vec<u8> {
    (0..len).map(|i| b'a' + (i % 26) as u8).collect()
}

fn connect_socket(target: &RttTarget) -> Result<TcpStream, ConnectError> {
    let addrs: Vec<SocketAddr> =
        (target.host.as_str(), target.port).to_socket_addrs().map_err(at(Stage::Resolve))?.collect();
    let mut last = io::Error::new(io::ErrorKind::NotFound, "the name has no address");
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, IO_TIMEOUT) {
            Ok(socket) => {
                let setup = socket
                    .set_nodelay(true)
                    .and_then(|()| socket.set_read_timeout(Some(IO_TIMEOUT)))
                    .and_then(|()| socket.set_write_timeout(Some(IO_TIMEOUT)));
                return setup.map(|()| socket).map_err(at(Stage::Connect));
            }
            Err(error) => last = error,
        }
    }
    Err(ConnectError { stage: Stage::Connect, source: last })
}

/// Completes the TLS handshake before any timing starts.
pub fn tls_handshake(socket: TcpStream, host: &str, config: &Arc<ClientConfig>) -> io::Result<TlsStream> {
    let name = ServerName::try_from(host.to_owned()).map_err(|e| {
        io::Error::new(io::ErrorKind::InvalidInput, format!("`{host}` is no server name: {e}"))
    })?;
    let session = ClientConnection::new(config.clone(), name).map_err(io::Error::other)?;
    let mut stream = StreamOwned::new(session, socket);
    while stream.conn.is_handshaking() {
        stream.conn.complete_io(&mut stream.sock)?;
    }
    Ok(stream)
}

fn closed() -> io::Error {
    io::Error::new(io::ErrorKind::UnexpectedEof, "the server closed the connection")
}

fn invalid(message: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.into())
}

/// Raw TCP echo: write N bytes, read N bytes back.
#[derive(Debug)]
pub struct TcpEcho {
    socket: TcpStream,
    request: Vec<u8>,
    response: Vec<u8>,
}

impl TcpEcho {
    pub fn new(socket: TcpStream, payload: Vec<u8>) -> TcpEcho {
        TcpEcho { socket, response: vec![0; payload.len()], request: payload }
    }
}

impl RoundTrip for TcpEcho {
    fn round_trip(&mut self) -> io::Result<()> {
        self.socket.write_all(&self.request)?;
        let mut got = 0;
        while got < self.response.len() {
            match self.socket.read(&mut self.response[got..]) {
                Ok(0) => return Err(closed()),
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if self.response != self.request {
            return Err(invalid("the echo differs from what was sent"));
        }
        Ok(())
    }
}

/// Bytes read from a stream and not yet used: `buf[start..end]`.
#[derive(Debug)]
struct InBuffer {
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl InBuffer {
    fn new() -> InBuffer {
        InBuffer { buf: vec![0; INITIAL_BUFFER], start: 0, end: 0 }
    }

    fn data(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    fn consume(&mut self, n: usize) {
        self.start += n;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// Reads more bytes after the unused ones (moving them to the front first).
    fn fill(&mut self, stream: &mut impl Read) -> io::Result<()> {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            if self.buf.len() >= MAX_RESPONSE_BYTES {
                return Err(invalid(format!("the answer is larger than {MAX_RESPONSE_BYTES} bytes")));
            }
            self.buf.resize(self.buf.len() * 2, 0);
        }
        loop {
            match stream.read(&mut self.buf[self.end..]) {
                Ok(0) => return Err(closed()),
                Ok(n) => {
                    self.end += n;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// `GET /` on a keep-alive HTTP/1.1 connection; reads the whole response (headers and the
/// `Content-Length` body).
#[derive(Debug)]
pub struct HttpGet<S> {
    stream: S,
    request: Vec<u8>,
    input: InBuffer,
}

impl<S: Read + Write> HttpGet<S> {
    pub fn new(stream: S, target: &RttTarget) -> HttpGet<S> {
        let request = format!(
            "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: wsbench/{}\r\nAccept: */*\r\n\r\n",
            target.path,
            target.authority(),
            env!("CARGO_PKG_VERSION")
        );
        HttpGet { stream, request: request.into_bytes(), input: InBuffer::new() }
    }
}

impl<S: Read + Write> RoundTrip for HttpGet<S> {
    fn round_trip(&mut self) -> io::Result<()> {
        self.stream.write_all(&self.request)?;
        self.stream.flush()?;
        let total = loop {
            if let Some(head) = find_head_end(self.input.data()) {
                break head + parse_head(&self.input.data()[..head])?;
            }
            if self.input.data().len() > 64 * 1024 {
                return Err(invalid("the response head is larger than 64 KiB"));
            }
            self.input.fill(&mut self.stream)?;
        };
        while self.input.data().len() < total {
            self.input.fill(&mut self.stream)?;
        }
        self.input.consume(total);
        Ok(())
    }
}

/// Length of the response head including its blank line, once complete.
pub fn find_head_end(data: &[u8]) -> Option<usize> {
    data.windows(4).position(|w| w == b"\r\n\r\n").map(|at| at + 4)
}

/// Checks a response head (2xx) and returns its body length (`Content-Length`).
pub fn parse_head(head: &[u8]) -> io::Result<usize> {
    let text = std::str::from_utf8(head).map_err(|_| invalid("the response head is not text"))?;
    let mut lines = text.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .strip_prefix("HTTP/1.")
        .and_then(|rest| rest.split(' ').nth(1))
        .and_then(|code| code.parse::<u16>().ok())
        .ok_or_else(|| invalid(format!("not an HTTP/1.x response: `{status_line}`")))?;
    if !(200..300).contains(&status) {
        return Err(invalid(format!("the server answered `{status_line}`")));
    }
    for line in lines {
        if let Some((name, value)) = line.split_once(':') {
            if name.trim().eq_ignore_ascii_case("content-length") {
                return value
                    .trim()
                    .parse()
                    .map_err(|_| invalid(format!("bad Content-Length `{}`", value.trim())));
            }
            if name.trim().eq_ignore_ascii_case("transfer-encoding") {
                return Err(invalid(
                    "chunked responses are not supported: the server must send Content-Length",
                ));
            }
        }
    }
    Err(invalid("the response has no Content-Length"))
}

/// WebSocket echo: one masked binary frame of N bytes, then its echo read and checked.
#[derive(Debug)]
pub struct WsEcho<S> {
    stream: S,
    /// The whole masked frame, encoded once.
    frame: Vec<u8>,
    payload: Vec<u8>,
    decoder: Decoder,
    input: InBuffer,
}

impl<S: Read + Write> WsEcho<S> {
    /// Performs the opening handshake on `stream`.
    pub fn upgrade(mut stream: S, target: &RttTarget, payload: Vec<u8>) -> io::Result<WsEcho<S>> {
        let key = client_key(rand::random());
        stream.write_all(&client_request(&target.authority(), &target.path, &key, &[]))?;
        stream.flush()?;
        let mut input = InBuffer::new();
        loop {
            match parse_response(input.data(), &key) {
                Ok(Some((_, used))) => {
                    input.consume(used);
                    break;
                }
                Ok(None) => input.fill(&mut stream)?,
                Err(error) => return Err(invalid(error.to_string())),
            }
        }
        let mut frame = Vec::new();
        write_frame(&mut frame, true, OpCode::Binary, Some(rand::random()), &payload);
        let decoder = Decoder::new(Role::Client, payload.len() as u64);
        Ok(WsEcho { stream, frame, payload, decoder, input })
    }
}

impl<S: Read + Write> RoundTrip for WsEcho<S> {
    fn round_trip(&mut self) -> io::Result<()> {
        self.stream.write_all(&self.frame)?;
        self.stream.flush()?;
        let mut received = 0;
        loop {
            let start = self.input.start;
            let end = self.input.end;
            let decoded = if start < end {
                self.decoder.decode(&mut self.input.buf[start..end]).map_err(|e| invalid(e.to_string()))?
            } else {
                None
            };
            let Some(chunk) = decoded else {
                self.input.fill(&mut self.stream)?;
                continue;
            };
            let payload = &self.input.buf[start + chunk.payload.start..start + chunk.payload.end];
            match chunk.opcode {
                OpCode::Binary => {
                    let expected = self.payload.get(received..received + payload.len());
                    if expected != Some(payload) {
                        return Err(invalid("the echo differs from what was sent"));
                    }
                    received += payload.len();
                    self.input.consume(chunk.consumed);
                    if chunk.last {
                        if received != self.payload.len() {
                            return Err(invalid("the echo is shorter than what was sent"));
                        }
                        return Ok(());
                    }
                }
                OpCode::Close => {
                    let code = payload.get(..2).map(|c| u16::from_be_bytes([c[0], c[1]]));
                    return Err(invalid(match code {
                        Some(code) => format!("the server closed the WebSocket with code {code}"),
                        None => "the server closed the WebSocket".to_owned(),
                    }));
                }
                OpCode::Text => return Err(invalid("the server answered a binary message with text")),
                // Pings and pongs do not answer the message; skip them.
                _ => self.input.consume(chunk.consumed),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_heads_give_their_body_length() {
        let head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\ncontent-length: 3\r\n\r\n";
        assert_eq!(find_head_end(b"HTTP/1.1 200 OK\r\n"), None);
        assert_eq!(find_head_end(head), Some(head.len()));
        assert_eq!(parse_head(head).unwrap(), 3);
        let error = parse_head(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n").unwrap_err();
        assert!(error.to_string().contains("404 Not Found"), "{error}");
        assert!(parse_head(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n").is_err());
        assert!(parse_head(b"SSH-2.0-OpenSSH\r\n\r\n").is_err());
    }

    #[test]
    fn payload_is_printable_and_sized() {
        let p = payload(30);
        assert_eq!(p.len(), 30);
        assert_eq!(&p[..3], b"abc");
        assert_eq!(p[26], b'a');
    }
}
