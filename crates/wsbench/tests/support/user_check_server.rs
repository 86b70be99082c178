//! A WebSocket server that admits only the users it knows, for tests of `--data`: the
//! upgrade request must carry `X-User: NAME` and `Authorization: Bearer TOKEN` with NAME's
//! own token, and its URL `?user=NAME`; any other request is refused with 403. Admitted
//! connections are held open (they read and drop what comes), and the server records each
//! user it admitted, so a test can check that every connection brought its own row.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use wsbench_proto::handshake::accept_key;

use super::raw_server::RawServer;

/// A running server; stopped on drop.
pub struct UserCheckServer {
    server: RawServer,
    admitted: Arc<Mutex<Vec<String>>>,
}

impl UserCheckServer {
    /// Admits the users of `tokens` (name → token).
    pub fn start(tokens: BTreeMap<String, String>) -> UserCheckServer {
        let admitted = Arc::new(Mutex::new(Vec::new()));
        let seen = admitted.clone();
        let server = RawServer::start(move |stream, stop| serve(stream, stop, &tokens, &seen));
        UserCheckServer { server, admitted }
    }

    pub fn url(&self) -> String {
        format!("ws://{}/feed?user={{data.user}}", self.server.addr())
    }

    /// The users admitted so far, in the order they came.
    pub fn admitted(&self) -> Vec<String> {
        self.admitted.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// The value of header `name` in the request head (case-insensitive name).
fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().skip(1).find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.trim().eq_ignore_ascii_case(name).then(|| value.trim())
    })
}

fn serve(
    mut stream: TcpStream,
    stop: &AtomicBool,
    tokens: &BTreeMap<String, String>,
    seen: &Mutex<Vec<String>>,
) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let user = header(&head, "X-User").unwrap_or("");
    let admitted = tokens.get(user).is_some_and(|token| {
        header(&head, "Authorization") == Some(format!("Bearer {token}").as_str())
            && head.lines().next().is_some_and(|line| line.contains(&format!("?user={user} ")))
    });
    let Some(key) = header(&head, "Sec-WebSocket-Key").filter(|_| admitted) else {
        let _ = stream.write_all(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        return;
    };
    seen.lock().unwrap_or_else(|e| e.into_inner()).push(user.to_owned());
    let response = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n\r\n",
        accept_key(key.as_bytes())
    );
    if stream.write_all(response.as_bytes()).is_err() {
        return;
    }
    let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
    let mut sink = [0u8; 4096];
    while !stop.load(Ordering::Relaxed) {
        match stream.read(&mut sink) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => return,
        }
    }
}
