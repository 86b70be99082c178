//! The plumbing every small misbehaving server of these tests shares, so that each of them
//! is only its misbehaviour: a listener on port 0 whose connections each get a thread of
//! their own running the server's behaviour, every socket shut down when the server is
//! dropped, and the upgrade request read, with the bytes that followed it.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use wsbench_proto::handshake::{DEFAULT_MAX_HEADER_BYTES, Request, UpgradeRequest, parse_request};

/// Stack of each connection's thread: the behaviours need little.
const CONNECTION_STACK: usize = 256 * 1024;

/// A listener on 127.0.0.1:0 serving each connection on a thread; stopped on drop (the
/// listener closes and every connection is shut down, which ends their threads' reads and
/// writes).
pub struct RawServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    streams: Arc<Mutex<Vec<TcpStream>>>,
    acceptor: Option<JoinHandle<()>>,
}

impl RawServer {
    /// Starts the listener: each accepted connection runs `serve(stream, stop)` on a thread
    /// of its own; `stop` is set when the server is dropped.
    pub fn start<F>(serve: F) -> RawServer
    where
        F: Fn(TcpStream, &AtomicBool) + Send + Sync + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local address");
        let stop = Arc::new(AtomicBool::new(false));
        let streams = Arc::new(Mutex::new(Vec::new()));
        let (accept_stop, accept_streams, serve) = (stop.clone(), streams.clone(), Arc::new(serve));
        let acceptor = thread::spawn(move || {
            for stream in listener.incoming() {
                if accept_stop.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(stream) = stream else {
                    thread::sleep(Duration::from_millis(10));
                    continue;
                };
                if let Ok(copy) = stream.try_clone() {
                    accept_streams.lock().unwrap_or_else(|e| e.into_inner()).push(copy);
                }
                let (stop, serve) = (accept_stop.clone(), serve.clone());
                let _ =
                    thread::Builder::new().stack_size(CONNECTION_STACK).spawn(move || serve(stream, &stop));
            }
        });
        RawServer { addr, stop, streams, acceptor: Some(acceptor) }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for RawServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for stream in self.streams.lock().unwrap_or_else(|e| e.into_inner()).drain(..) {
            let _ = stream.shutdown(Shutdown::Both);
        }
        // Wakes the blocking accept() so that it sees the stop.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

/// Reads the client's upgrade request from `stream`: the request and the bytes that came
/// after it, or None when the client went away first or asked for something else (it is
/// then answered 400).
pub fn read_upgrade(stream: &mut TcpStream) -> io::Result<Option<(UpgradeRequest, Vec<u8>)>> {
    let mut input = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some((request, used)) =
            parse_request(&input, DEFAULT_MAX_HEADER_BYTES).map_err(io::Error::other)?
        {
            input.drain(..used);
            let Request::Upgrade(upgrade) = request else {
                stream.write_all(
                    b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                )?;
                return Ok(None);
            };
            return Ok(Some((upgrade, input)));
        }
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Ok(None);
        }
        input.extend_from_slice(&chunk[..n]);
    }
}
