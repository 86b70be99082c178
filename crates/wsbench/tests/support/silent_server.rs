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
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use wsbench_proto::handshake::{DEFAULT_MAX_HEADER_BYTES, Request, parse_request, server_response};

/// How a [`SilentServer`] says nothing once upgraded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Silence {
    ReadsAndDrops,
    StopsReading,
}

#[derive(Debug)]
struct Shared {
    silence: Silence,
    stop: AtomicBool,
    streams: Mutex<Vec<TcpStream>>,
}

/// A running silent server; stopped on drop.
#[derive(Debug)]
pub struct SilentServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

impl SilentServer {
    pub fn start(silence: Silence) -> SilentServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local address");
        let shared =
            Arc::new(Shared { silence, stop: AtomicBool::new(false), streams: Mutex::new(Vec::new()) });
        let accepting = shared.clone();
        let acceptor = thread::spawn(move || accept_loop(listener, accepting));
        SilentServer { addr, shared, acceptor: Some(acceptor) }
    }

    /// `ws://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("ws://{}", self.addr)
    }
}

impl Drop for SilentServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wake the blocking accept() with a connection of our own.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
        let streams = std::mem::take(&mut *self.shared.streams.lock().unwrap_or_else(|e| e.into_inner()));
        for stream in streams {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }
}

fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    for stream in listener.incoming() {
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = stream else {
            thread::sleep(Duration::from_millis(10));
            continue;
        };
        if let Ok(copy) = stream.try_clone() {
            shared.streams.lock().unwrap_or_else(|e| e.into_inner()).push(copy);
        }
        let serving = shared.clone();
        let _ =
            thread::Builder::new().stack_size(64 * 1024).spawn(move || serve_connection(stream, &serving));
    }
}

fn serve_connection(mut stream: TcpStream, shared: &Shared) -> io::Result<()> {
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    let request = loop {
        if let Some((request, used)) =
            parse_request(&buf, DEFAULT_MAX_HEADER_BYTES).map_err(io::Error::other)?
        {
            buf.drain(..used);
            break request;
        }
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let Request::Upgrade(upgrade) = request else {
        stream.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")?;
        return Ok(());
    };
    stream.write_all(&server_response(&upgrade, None))?;
    match shared.silence {
        Silence::ReadsAndDrops => while stream.read(&mut chunk)? > 0 {},
        // Parked until the test drops the server (which shuts the socket down).
        Silence::StopsReading => {
            while !shared.stop.load(Ordering::SeqCst) {
                thread::sleep(Duration::from_millis(50));
            }
        }
    }
    Ok(())
}
