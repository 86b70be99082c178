//! The `ws-h2` and `wss-h2` round-trip clients of `wsbench rtt`: one WebSocket opened as an
//! RFC 8441 extended CONNECT stream (h2c with prior knowledge, or TLS after ALPN `h2`) on a
//! blocking socket, and one masked binary frame of N bytes echoed per round trip, as
//! `WsEcho` does over HTTP/1.1. HTTP/2 is hyperium's `h2` crate run over an in-memory pipe
//! (`wsbench_transport::http2`), driven here by blocking reads and writes; the frame is
//! encoded once, so a round trip costs what HTTP/2 adds to WebSocket framing.

use std::io::{self, Read, Write};

use bytes::Bytes;
use wsbench_proto::{Decoder, OpCode, Role, write_frame};
use wsbench_transport::http2::h2::client::{self, Connection, SendRequest};
use wsbench_transport::http2::h2::{self, RecvStream, SendStream};
use wsbench_transport::http2::{Pipe, PipeIo, context, poll_now};

use super::config::RttTarget;

const READ_BYTES: usize = 64 * 1024;

/// WebSocket echo over an HTTP/2 stream.
pub struct WsH2Echo<S> {
    stream: S,
    pipe: Pipe,
    connection: Connection<PipeIo, Bytes>,
    send: SendStream<Bytes>,
    recv: RecvStream,
    /// The whole masked frame, encoded once (sent as a shared buffer).
    frame: Bytes,
    payload: Vec<u8>,
    decoder: Decoder,
    /// Echo bytes not yet decoded.
    input: Vec<u8>,
    out: Vec<u8>,
    read_buf: Vec<u8>,
}

impl<S> std::fmt::Debug for WsH2Echo<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WsH2Echo").field("payload", &self.payload.len()).finish_non_exhaustive()
    }
}

fn invalid(message: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.into())
}

fn h2_error(error: h2::Error) -> io::Error {
    invalid(format!("HTTP/2: {error}"))
}

impl<S: Read + Write> WsH2Echo<S> {
    /// Opens the WebSocket on `stream`: the preface, the server's SETTINGS (they must allow
    /// extended CONNECT), and the CONNECT answered 200.
    pub fn open(mut stream: S, target: &RttTarget, payload: Vec<u8>, tls: bool) -> io::Result<WsH2Echo<S>> {
        let pipe = Pipe::new();
        let mut handshake = Box::pin(client::handshake(pipe.io()));
        let (mut sender, mut connection) = match poll_now(&mut handshake) {
            std::task::Poll::Ready(result) => result.map_err(h2_error)?,
            std::task::Poll::Pending => return Err(invalid("the HTTP/2 handshake did not start")),
        };
        let mut probe = connection.ping_pong().ok_or_else(|| invalid("no PING handle"))?;
        probe.send_ping(h2::Ping::opaque()).map_err(h2_error)?;
        let mut out = Vec::new();
        let mut read_buf = vec![0; READ_BYTES];
        // The server's SETTINGS come before its PONG.
        loop {
            drive(&mut connection, &pipe, &mut stream, &mut out)?;
            if poll_now_pong(&mut probe)? {
                drive(&mut connection, &pipe, &mut stream, &mut out)?;
                break;
            }
            read_into(&mut stream, &pipe, &mut read_buf)?;
        }
        if !sender.is_extended_connect_protocol_enabled() {
            return Err(invalid(
                "the server does not allow WebSockets over HTTP/2 (no SETTINGS_ENABLE_CONNECT_PROTOCOL)",
            ));
        }
        let (mut response, send) = request(&mut sender, target, tls)?;
        let response = loop {
            drive(&mut connection, &pipe, &mut stream, &mut out)?;
            if let std::task::Poll::Ready(result) = poll_now(&mut response) {
                break result.map_err(h2_error)?;
            }
            read_into(&mut stream, &pipe, &mut read_buf)?;
        };
        let status = http::Response::status(&response);
        if !status.is_success() {
            return Err(invalid(format!("the server answered the CONNECT with {status}")));
        }
        let mut frame = Vec::new();
        write_frame(&mut frame, true, OpCode::Binary, Some(rand::random()), &payload);
        let decoder = Decoder::new(Role::Client, payload.len() as u64);
        Ok(WsH2Echo {
            stream,
            pipe,
            connection,
            send,
            recv: response.into_body(),
            frame: Bytes::from(frame),
            payload,
            decoder,
            input: Vec::new(),
            out,
            read_buf,
        })
    }

    /// Decodes the echo from `input`: `Some` once it is whole (or wrong).
    fn echo_complete(&mut self) -> Option<io::Result<()>> {
        echo_complete(&mut self.decoder, &mut self.input, &self.payload)
    }
}

/// Decodes an echo of `payload` (one binary frame) from `input`, taking what it used:
/// `Some` once it is whole (or wrong). Shared by the clients over HTTP/2 and HTTP/3.
pub fn echo_complete(decoder: &mut Decoder, input: &mut Vec<u8>, payload: &[u8]) -> Option<io::Result<()>> {
    let chunk = match decoder.decode(input) {
        Ok(Some(chunk)) => chunk,
        Ok(None) => return None,
        Err(error) => return Some(Err(invalid(error.to_string()))),
    };
    let result = match chunk.opcode {
        OpCode::Binary if chunk.last && input[chunk.payload.clone()] == payload[..] => Ok(()),
        OpCode::Binary => Err(invalid("the echo differs from what was sent")),
        OpCode::Close => Err(invalid("the server closed the WebSocket")),
        _ => Err(invalid("the server answered a binary message with something else")),
    };
    input.drain(..chunk.consumed);
    Some(result)
}

/// The extended CONNECT for the target's path.
fn request(
    sender: &mut SendRequest<Bytes>,
    target: &RttTarget,
    tls: bool,
) -> io::Result<(client::ResponseFuture, SendStream<Bytes>)> {
    let scheme = if tls { "https" } else { "http" };
    let uri = format!("{scheme}://{}{}", target.authority(), target.path);
    let mut request = http::Request::builder()
        .method(http::Method::CONNECT)
        .uri(uri.as_str())
        .header("sec-websocket-version", "13")
        .body(())
        .map_err(|e| invalid(e.to_string()))?;
    request.extensions_mut().insert(h2::ext::Protocol::from_static("websocket"));
    sender.send_request(request, false).map_err(h2_error)
}

/// Whether the PING's answer came.
fn poll_now_pong(probe: &mut h2::PingPong) -> io::Result<bool> {
    match probe.poll_pong(&mut context()) {
        std::task::Poll::Ready(Ok(_)) => Ok(true),
        std::task::Poll::Ready(Err(error)) => Err(h2_error(error)),
        std::task::Poll::Pending => Ok(false),
    }
}

/// Polls the connection (it reads what came and frames what was sent) and writes its
/// output to the socket.
fn drive<S: Write>(
    connection: &mut Connection<PipeIo, Bytes>,
    pipe: &Pipe,
    stream: &mut S,
    out: &mut Vec<u8>,
) -> io::Result<()> {
    if let std::task::Poll::Ready(result) = poll_now(connection) {
        result.map_err(h2_error)?;
        return Err(invalid("the server closed the HTTP/2 connection"));
    }
    out.clear();
    pipe.take_output(out);
    if !out.is_empty() {
        stream.write_all(out)?;
        stream.flush()?;
    }
    Ok(())
}

/// One blocking read into the pipe.
fn read_into<S: Read>(stream: &mut S, pipe: &Pipe, buf: &mut [u8]) -> io::Result<()> {
    loop {
        match stream.read(buf) {
            Ok(0) => {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the server closed the connection"));
            }
            Ok(n) => {
                pipe.push_input(&buf[..n]);
                return Ok(());
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

impl<S: Read + Write> WsH2Echo<S> {
    /// One round trip: the frame sent, its echo read and checked.
    pub fn echo(&mut self) -> io::Result<()> {
        self.send.send_data(self.frame.clone(), false).map_err(h2_error)?;
        drive(&mut self.connection, &self.pipe, &mut self.stream, &mut self.out)?;
        loop {
            match self.recv.poll_data(&mut context()) {
                std::task::Poll::Ready(Some(Ok(data))) => {
                    let _ = self.recv.flow_control().release_capacity(data.len());
                    self.input.extend_from_slice(&data);
                    if let Some(result) = self.echo_complete() {
                        return result;
                    }
                }
                std::task::Poll::Ready(Some(Err(error))) => return Err(h2_error(error)),
                std::task::Poll::Ready(None) => {
                    return Err(invalid("the server ended the WebSocket's stream"));
                }
                std::task::Poll::Pending => {
                    read_into(&mut self.stream, &self.pipe, &mut self.read_buf)?;
                    drive(&mut self.connection, &self.pipe, &mut self.stream, &mut self.out)?;
                }
            }
        }
    }
}
