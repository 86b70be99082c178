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

use std::io::Write;
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::Duration;

use wsbench_proto::handshake::server_response;
use wsbench_proto::{OpCode, write_frame};

use super::raw_server::{RawServer, read_upgrade};

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
    server: RawServer,
    /// Messages the flood wrote, over every connection.
    flooded: Arc<AtomicU64>,
}

impl UnsolicitedServer {
    pub fn start(behaviour: Unsolicited) -> UnsolicitedServer {
        let flooded = Arc::new(AtomicU64::new(0));
        let counted = flooded.clone();
        let server = RawServer::start(move |stream, stop| {
            let _ = serve(stream, behaviour, stop, &counted);
        });
        UnsolicitedServer { server, flooded }
    }

    pub fn url(&self) -> String {
        format!("ws://{}", self.server.addr())
    }

    /// Messages the flood wrote so far (the kernel took them; the client may not have read
    /// them all).
    pub fn flooded(&self) -> u64 {
        self.flooded.load(Ordering::SeqCst)
    }
}

fn serve(
    mut stream: TcpStream,
    behaviour: Unsolicited,
    stop: &AtomicBool,
    flooded: &AtomicU64,
) -> std::io::Result<()> {
    let Some((upgrade, _)) = read_upgrade(&mut stream)? else { return Ok(()) };
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
