//! WebSocket servers that do not answer what they are sent, for the tests of how wsbench
//! matches a reply to its request and counts what it sent: real sockets on port 0, one std
//! thread per connection. Each completes the upgrade, then:
//!
//! - [`Unsolicited::Flood`]: writes 64 KiB binary messages as fast as the client takes
//!   them and never reads (what the client sends piles up in the socket);
//! - [`Unsolicited::PingFlood`]: writes pings (125-byte payloads) as fast as the client
//!   takes them and never reads: every pong the client owes piles up on its side;
//! - [`Unsolicited::NeverRead`]: says nothing and never reads.
//!
//! Dropping the server shuts every connection down.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use wsbench_proto::handshake::{DEFAULT_MAX_HEADER_BYTES, Request, parse_request, server_response};
use wsbench_proto::{OpCode, write_frame};

/// Bytes of each message a flooding server sends.
pub const FLOOD_MESSAGE_BYTES: usize = 64 * 1024;

/// What the server does after the upgrade.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unsolicited {
    Flood,
    PingFlood,
    NeverRead,
}

pub struct UnsolicitedServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    streams: Arc<Mutex<Vec<TcpStream>>>,
    /// Messages the flood wrote, over every connection.
    flooded: Arc<AtomicU64>,
    acceptor: Option<JoinHandle<()>>,
}

impl UnsolicitedServer {
    pub fn start(behaviour: Unsolicited) -> UnsolicitedServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the server");
        let addr = listener.local_addr().expect("server address");
        let stop = Arc::new(AtomicBool::new(false));
        let streams = Arc::new(Mutex::new(Vec::new()));
        let flooded = Arc::new(AtomicU64::new(0));
        let (accept_stop, accept_streams, accept_flooded) = (stop.clone(), streams.clone(), flooded.clone());
        let acceptor = thread::spawn(move || {
            for stream in listener.incoming() {
                if accept_stop.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(stream) = stream else { continue };
                if let Ok(clone) = stream.try_clone() {
                    accept_streams.lock().unwrap_or_else(|e| e.into_inner()).push(clone);
                }
                let (stop, flooded) = (accept_stop.clone(), accept_flooded.clone());
                thread::spawn(move || {
                    let _ = serve(stream, behaviour, &stop, &flooded);
                });
            }
        });
        UnsolicitedServer { addr, stop, streams, flooded, acceptor: Some(acceptor) }
    }

    pub fn url(&self) -> String {
        format!("ws://{}", self.addr)
    }

    /// Messages the flood wrote so far (the kernel took them; the client may not have read
    /// them all).
    pub fn flooded(&self) -> u64 {
        self.flooded.load(Ordering::SeqCst)
    }
}

impl Drop for UnsolicitedServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for stream in self.streams.lock().unwrap_or_else(|e| e.into_inner()).drain(..) {
            let _ = stream.shutdown(Shutdown::Both);
        }
        // Wakes the acceptor so that it sees the stop.
        let _ = TcpStream::connect(self.addr);
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

fn serve(
    mut stream: TcpStream,
    behaviour: Unsolicited,
    stop: &AtomicBool,
    flooded: &AtomicU64,
) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let upgrade = loop {
        if let Some((request, _)) =
            parse_request(&buf, DEFAULT_MAX_HEADER_BYTES).map_err(std::io::Error::other)?
        {
            break request;
        }
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let Request::Upgrade(upgrade) = upgrade else { return Ok(()) };
    stream.write_all(&server_response(&upgrade, None))?;
    match behaviour {
        Unsolicited::Flood | Unsolicited::PingFlood => {
            let mut frame = Vec::new();
            if behaviour == Unsolicited::Flood {
                let payload: Vec<u8> = (0..FLOOD_MESSAGE_BYTES).map(|i| (i * 7 % 251) as u8).collect();
                write_frame(&mut frame, true, OpCode::Binary, None, &payload);
            } else {
                // Many pings to a write.
                for _ in 0..400 {
                    write_frame(&mut frame, true, OpCode::Ping, None, &[b'p'; 125]);
                }
            }
            while !stop.load(Ordering::SeqCst) {
                stream.write_all(&frame)?;
                flooded.fetch_add(1, Ordering::SeqCst);
            }
        }
        Unsolicited::NeverRead => {
            while !stop.load(Ordering::SeqCst) {
                thread::sleep(Duration::from_millis(50));
            }
        }
    }
    Ok(())
}
