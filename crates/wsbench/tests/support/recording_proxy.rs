//! A TCP proxy that records the head (request line and headers) of every upgrade request
//! passing through it, then relays bytes both ways: what the client wrote on the wire,
//! exactly, in front of any echo server (tests of the request line and its headers).

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;

/// A running proxy; its listener thread lives as long as the test process.
pub struct RecordingProxy {
    addr: SocketAddr,
    heads: Arc<Mutex<Vec<String>>>,
}

impl RecordingProxy {
    /// Listens on a free port of 127.0.0.1 and relays every connection to `upstream`.
    pub fn start(upstream: SocketAddr) -> RecordingProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the recording proxy");
        let addr = listener.local_addr().unwrap();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let recorded = heads.clone();
        thread::spawn(move || {
            for client in listener.incoming().map_while(Result::ok) {
                let recorded = recorded.clone();
                thread::spawn(move || relay(client, upstream, &recorded));
            }
        });
        RecordingProxy { addr, heads }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The request heads seen so far (up to and without the blank line), in order.
    pub fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }
}

fn relay(mut client: TcpStream, upstream: SocketAddr, heads: &Mutex<Vec<String>>) {
    let Ok(mut server) = TcpStream::connect(upstream) else { return };
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    // Byte by byte up to the blank line: nothing after it is read here.
    while !head.ends_with(b"\r\n\r\n") && head.len() < 64 * 1024 {
        match client.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    heads.lock().unwrap().push(String::from_utf8_lossy(&head[..head.len().saturating_sub(4)]).into_owned());
    if server.write_all(&head).is_err() {
        return;
    }
    let (Ok(mut client_reader), Ok(mut server_writer)) = (client.try_clone(), server.try_clone()) else {
        return;
    };
    let upward = thread::spawn(move || {
        let _ = std::io::copy(&mut client_reader, &mut server_writer);
        let _ = server_writer.shutdown(Shutdown::Write);
    });
    let _ = std::io::copy(&mut server, &mut client);
    let _ = client.shutdown(Shutdown::Write);
    let _ = upward.join();
}
