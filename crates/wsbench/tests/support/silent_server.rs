//! A WebSocket server that completes the upgrade and then never answers, for tests of the
//! reply deadline: a server that is up, takes connections and says nothing must fail a run,
//! never pass it with every request "unanswered". Two ways of saying nothing:
//!
//! - [`Silence::ReadsAndDrops`]: it reads every byte the client sends and throws it away
//!   (a server whose handler is stuck, or that ignores the client's protocol);
//! - [`Silence::StopsReading`]: it never reads after the upgrade, so the socket's buffers
//!   fill and the client's writes stop going out (a server whose event loop is blocked).
//!
//! Real sockets on port 0, one thread per connection. Dropping the [`SilentServer`] stops
//! it: the listener closes and every open connection is shut down.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use wsbench_proto::handshake::server_response;

use super::raw_server::{RawServer, read_upgrade};

/// How a [`SilentServer`] says nothing once upgraded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Silence {
    ReadsAndDrops,
    StopsReading,
}

/// A running silent server; stopped on drop.
pub struct SilentServer {
    server: RawServer,
}

impl SilentServer {
    pub fn start(silence: Silence) -> SilentServer {
        let server = RawServer::start(move |stream, stop| {
            let _ = serve_connection(stream, silence, stop);
        });
        SilentServer { server }
    }

    /// `ws://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("ws://{}", self.server.addr())
    }
}

fn serve_connection(mut stream: TcpStream, silence: Silence, stop: &AtomicBool) -> io::Result<()> {
    let Some((upgrade, _)) = read_upgrade(&mut stream)? else { return Ok(()) };
    stream.write_all(&server_response(&upgrade, None))?;
    match silence {
        Silence::ReadsAndDrops => {
            let mut chunk = vec![0u8; 64 * 1024];
            while stream.read(&mut chunk)? > 0 {}
        }
        // Parked until the test drops the server (which shuts the socket down).
        Silence::StopsReading => {
            while !stop.load(Ordering::SeqCst) {
                thread::sleep(Duration::from_millis(50));
            }
        }
    }
    Ok(())
}
