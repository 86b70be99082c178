//! A blocking WebSocket client for the interop tests, on wsbench-proto's handshake and
//! frame codec over a std `TcpStream`: enough to carry the application protocols to a real
//! server and back. Pings are answered; a read that waits over `TIMEOUT` fails the test.
#![allow(dead_code)] // each test binary uses part of it

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use wsbench_proto::handshake::{client_key, client_request, parse_response};
use wsbench_proto::{Decoder, OpCode, Role, parse_close_payload, write_frame};

/// How long a test waits for any one message.
pub const TIMEOUT: Duration = Duration::from_secs(10);
const MASK: [u8; 4] = [0x5a, 0x13, 0xc7, 0x2e];

/// A whole message from the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    Text(String),
    Binary(Vec<u8>),
    /// The server's close frame (code, reason), or (1006, "") when the TCP connection ended.
    Close(u16, String),
}

/// One client connection.
#[derive(Debug)]
pub struct Ws {
    stream: TcpStream,
    decoder: Decoder,
    input: Vec<u8>,
    message: Vec<u8>,
    /// The subprotocol the server chose.
    pub protocol: Option<String>,
}

impl Ws {
    /// Opens `ws://127.0.0.1:port{path}` offering `protocols`; `Err` carries the server's
    /// refusal (e.g. its HTTP status).
    pub fn connect(port: u16, path: &str, protocols: &[&str]) -> Result<Ws, String> {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).map_err(|e| format!("connect: {e}"))?;
        stream.set_read_timeout(Some(TIMEOUT)).map_err(|e| e.to_string())?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        let key = client_key(*b"wsbench appproto");
        let request = client_request(&format!("127.0.0.1:{port}"), path, &key, protocols);
        stream.write_all(&request).map_err(|e| format!("sending the upgrade: {e}"))?;
        let mut input = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            let n = stream.read(&mut chunk).map_err(|e| format!("reading the upgrade: {e}"))?;
            if n == 0 {
                return Err("connection closed during the upgrade".into());
            }
            input.extend_from_slice(&chunk[..n]);
            if let Some((response, used)) = parse_response(&input, &key).map_err(|e| e.to_string())? {
                input.drain(..used);
                let decoder = Decoder::new(Role::Client, 64 * 1024 * 1024);
                return Ok(Ws { stream, decoder, input, message: Vec::new(), protocol: response.protocol });
            }
        }
    }

    fn send(&mut self, opcode: OpCode, payload: &[u8]) {
        let mut frame = Vec::with_capacity(payload.len() + 14);
        write_frame(&mut frame, true, opcode, Some(MASK), payload);
        self.stream.write_all(&frame).expect("sending a frame");
    }

    pub fn send_text(&mut self, payload: &[u8]) {
        self.send(OpCode::Text, payload);
    }

    pub fn send_binary(&mut self, payload: &[u8]) {
        self.send(OpCode::Binary, payload);
    }

    pub fn send_close(&mut self, code: u16) {
        self.send(OpCode::Close, &code.to_be_bytes());
    }

    /// The next whole message; panics after `TIMEOUT`.
    pub fn recv(&mut self) -> Message {
        self.recv_within(TIMEOUT).unwrap_or_else(|| panic!("no message from the server within {TIMEOUT:?}"))
    }

    /// The next whole message, or `None` if none comes within `wait`.
    pub fn recv_within(&mut self, wait: Duration) -> Option<Message> {
        let deadline = Instant::now() + wait;
        loop {
            if let Some(message) = self.decode_one() {
                return Some(message);
            }
            let left = deadline.checked_duration_since(Instant::now()).filter(|d| !d.is_zero())?;
            self.stream.set_read_timeout(Some(left)).expect("setting a timeout");
            let mut chunk = [0u8; 16 * 1024];
            match self.stream.read(&mut chunk) {
                Ok(0) => return Some(Message::Close(1006, String::new())),
                Ok(n) => self.input.extend_from_slice(&chunk[..n]),
                Err(e)
                    if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) =>
                {
                    return None;
                }
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                    return Some(Message::Close(1006, String::new()));
                }
                Err(e) => panic!("reading: {e}"),
            }
        }
    }

    /// Decodes buffered frames until a message is whole; answers pings on the way.
    fn decode_one(&mut self) -> Option<Message> {
        loop {
            let chunk = self.decoder.decode(&mut self.input).expect("a valid frame from the server")?;
            let payload = self.input[chunk.payload.clone()].to_vec();
            self.input.drain(..chunk.consumed);
            match chunk.opcode {
                OpCode::Ping => self.send(OpCode::Pong, &payload),
                OpCode::Pong => {}
                OpCode::Close => {
                    let (code, reason) = match parse_close_payload(&payload) {
                        Ok(Some((code, reason))) => (code, reason.to_owned()),
                        _ => (1005, String::new()),
                    };
                    return Some(Message::Close(code, reason));
                }
                opcode => {
                    self.message.extend_from_slice(&payload);
                    if chunk.last {
                        let bytes = std::mem::take(&mut self.message);
                        return Some(if opcode == OpCode::Text {
                            Message::Text(String::from_utf8(bytes).expect("UTF-8 text"))
                        } else {
                            Message::Binary(bytes)
                        });
                    }
                }
            }
        }
    }
}

pub mod mqtt;
pub mod stomp;
