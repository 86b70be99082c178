//! A server that produces a stream of its own, for the tests of the `stream` scenario: real
//! sockets on port 0, a thread per connection (on `raw_server.rs`). Each connection
//! completes the upgrade and waits for its subscription, the text message
//! `{"subscribe":"ticks","as":N}` (N: the subscriber's number, which wsbench fills in from
//! `{conn}`); from then on it is sent event `{"seq":K,"ts":UNIX_MS}` as the server's clock
//! reaches K × [`EVERY`], the same K to every subscriber at the same moment. Once the
//! expected number of subscribers have subscribed, event [`SKIP_AFTER`] later than the one
//! then due is not sent to subscriber `skip_for` (once, and only to it). The server answers
//! a close with a close, and pings with pongs.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use wsbench_proto::handshake::server_response;
use wsbench_proto::{Decoder, OpCode, Role, write_frame};

use super::raw_server::{RawServer, read_upgrade};

/// The stream's period.
pub const EVERY: Duration = Duration::from_millis(10);
/// How many events after the last subscription the skipped one comes.
pub const SKIP_AFTER: u64 = 50;
/// The longest client message the server reads.
const MAX_MESSAGE: u64 = 64 * 1024;

/// What every connection shares.
struct Shared {
    start: Instant,
    subscribers: u64,
    skip_for: u64,
    subscribed: AtomicU64,
    /// The event that subscriber `skip_for` does not get, set once all have subscribed.
    skip: OnceLock<u64>,
    /// Set once it was skipped.
    skipped: AtomicBool,
}

impl Shared {
    /// The event due now.
    fn due(&self) -> u64 {
        (self.start.elapsed().as_nanos() / EVERY.as_nanos()) as u64
    }
}

pub struct StreamServer {
    server: RawServer,
    shared: Arc<Shared>,
}

impl StreamServer {
    /// Streams to `subscribers` subscribers, skipping one event for subscriber `skip_for`.
    pub fn start(subscribers: u64, skip_for: u64) -> StreamServer {
        let shared = Arc::new(Shared {
            start: Instant::now(),
            subscribers,
            skip_for,
            subscribed: AtomicU64::new(0),
            skip: OnceLock::new(),
            skipped: AtomicBool::new(false),
        });
        let serving = shared.clone();
        let server = RawServer::start(move |stream, stop| {
            let _ = serve(stream, &serving, stop);
        });
        StreamServer { server, shared }
    }

    pub fn url(&self) -> String {
        format!("ws://{}/", self.server.addr())
    }

    /// The event skipped for subscriber `skip_for`, once it was.
    pub fn skipped(&self) -> Option<u64> {
        self.shared.skipped.load(Ordering::SeqCst).then(|| self.shared.skip.get().copied()).flatten()
    }
}

fn serve(mut stream: TcpStream, shared: &Shared, stop: &AtomicBool) -> io::Result<()> {
    let Some((upgrade, mut input)) = read_upgrade(&mut stream)? else { return Ok(()) };
    stream.write_all(&server_response(&upgrade, None))?;
    let mut decoder = Decoder::new(Role::Server, MAX_MESSAGE);
    let subscriber = loop {
        if let Some(message) = next_text(&mut decoder, &mut input)? {
            let text = String::from_utf8_lossy(&message);
            let number = text.split_once("\"as\":").and_then(|(_, rest)| {
                rest.trim_start().split(|c: char| !c.is_ascii_digit()).next()?.parse::<u64>().ok()
            });
            if let Some(number) = number {
                break number;
            }
            continue;
        }
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Ok(());
        }
        input.extend_from_slice(&chunk[..n]);
    };
    let writer = Arc::new(Mutex::new(stream.try_clone()?));
    let answering = writer.clone();
    thread::spawn(move || answer_control(stream, decoder, input, &answering));
    if shared.subscribed.fetch_add(1, Ordering::SeqCst) + 1 == shared.subscribers {
        let _ = shared.skip.set(shared.due() + SKIP_AFTER);
    }
    let mut next = shared.due() + 1;
    let mut frame = Vec::new();
    while !stop.load(Ordering::SeqCst) {
        let due_at = shared.start + EVERY * next as u32;
        if let Some(wait) = due_at.checked_duration_since(Instant::now()) {
            thread::sleep(wait);
        }
        let skip = subscriber == shared.skip_for && shared.skip.get() == Some(&next);
        if skip {
            shared.skipped.store(true, Ordering::SeqCst);
        } else {
            let unix_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
            let event = format!(r#"{{"seq":{next},"ts":{unix_ms}}}"#);
            frame.clear();
            write_frame(&mut frame, true, OpCode::Text, None, event.as_bytes());
            writer.lock().unwrap_or_else(|e| e.into_inner()).write_all(&frame)?;
        }
        next += 1;
    }
    Ok(())
}

/// The next whole text message in `input` (consumed), if one is there.
fn next_text(decoder: &mut Decoder, input: &mut Vec<u8>) -> io::Result<Option<Vec<u8>>> {
    let mut used = 0;
    let mut message = Vec::new();
    while let Some(piece) = decoder.decode(&mut input[used..]).map_err(io::Error::other)? {
        let payload = used + piece.payload.start..used + piece.payload.end;
        used += piece.consumed;
        if matches!(piece.opcode, OpCode::Text | OpCode::Continuation) {
            message.extend_from_slice(&input[payload]);
            if piece.last {
                input.drain(..used);
                return Ok(Some(message));
            }
        }
    }
    Ok(None)
}

/// Reads the rest of the connection: pings are answered, a close is answered and ends it.
fn answer_control(
    mut stream: TcpStream,
    mut decoder: Decoder,
    mut input: Vec<u8>,
    writer: &Mutex<TcpStream>,
) {
    let mut chunk = [0u8; 4096];
    loop {
        let mut used = 0;
        let mut reply = Vec::new();
        while let Ok(Some(piece)) = decoder.decode(&mut input[used..]) {
            let payload = used + piece.payload.start..used + piece.payload.end;
            used += piece.consumed;
            match piece.opcode {
                OpCode::Ping => write_frame(&mut reply, true, OpCode::Pong, None, &input[payload]),
                OpCode::Close => {
                    write_frame(&mut reply, true, OpCode::Close, None, &input[payload]);
                    let mut writer = writer.lock().unwrap_or_else(|e| e.into_inner());
                    let _ = writer.write_all(&reply);
                    let _ = writer.shutdown(std::net::Shutdown::Both);
                    return;
                }
                _ => {}
            }
        }
        input.drain(..used);
        if !reply.is_empty() {
            let _ = writer.lock().unwrap_or_else(|e| e.into_inner()).write_all(&reply);
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => input.extend_from_slice(&chunk[..n]),
        }
    }
}
