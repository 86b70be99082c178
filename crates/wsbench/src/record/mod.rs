//! `wsbench record`: a recording proxy. Real WebSocket clients (a browser, an app, a test
//! suite) connect to it; it opens the same path and query on the upstream server (ws or
//! wss), hands the upstream's 101 back, forwards every frame both ways unchanged, and writes
//! each connection's handshake and every message both ways, with its time and opcode, to a
//! JSONL file `wsbench import` turns into a flow ([`journal`]). No extension is negotiated
//! upstream (the client's `Sec-WebSocket-Extensions` is not forwarded), so the frames are
//! recorded as they travel. A thread per connection; every size bounded ([`RecordConfig`]).

mod inspect;
mod journal;
mod relay;
mod upgrade;

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use wsbench_transport::Transport;

use crate::config::{ConfigError, Target, check_output_file};
use crate::output_path::{OutputPath, resolve};
use crate::units::format::group;

pub use journal::{JournalBounds, Tally};

use inspect::{Inspector, Way};
use journal::Journal;
use relay::End;
use upgrade::{Answer, ClientRequest, Upstream};

/// Connections forwarded at once, at most (each holds two sockets and a thread).
pub const MAX_CONNECTIONS_AT_ONCE: u64 = 5_000;
/// Messages a recording may hold: as many as `wsbench import` reads.
pub const MAX_MESSAGES: u64 = crate::recording::MAX_MESSAGES as u64;
/// Bytes of one recorded message: as many as `wsbench import` reads.
pub const MAX_MESSAGE_BYTES: u64 = crate::recording::MAX_MESSAGE_BYTES as u64;
/// Bytes of the file: as many as `wsbench import` reads.
pub const MAX_FILE_BYTES: u64 = 256 << 20;
/// How long a stop waits for connections to end before the summary.
const STOP_WAIT: Duration = Duration::from_secs(2);

/// What `wsbench record` was asked, checked ([`RecordConfig::check`]).
#[derive(Debug, Clone)]
pub struct RecordConfig {
    pub listen: SocketAddr,
    pub upstream: Target,
    pub out: PathBuf,
    /// Keep `Authorization`, `Cookie` and other secrets in the file.
    pub record_secrets: bool,
    /// Accept any certificate from a wss upstream.
    pub insecure: bool,
    pub max_connections: u64,
    pub max_message: u64,
    pub max_messages: u64,
    pub max_bytes: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("cannot listen on {addr} (give a free address with --listen)")]
    Listen {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    /// The listener failed while recording (what was recorded is complete).
    #[error("stopped accepting connections on {addr}")]
    Accept {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot create --out {}", path.display())]
    Create {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl crate::exit::ExitCode for RecordError {
    /// Bad flags, an address taken or a file that cannot be made are the user's to fix.
    fn exit_code(&self) -> u8 {
        match self {
            RecordError::Accept { .. } => crate::exit::FAILED,
            _ => crate::exit::USAGE,
        }
    }
}

impl RecordConfig {
    /// Every bound and the output file, checked before anything listens.
    pub fn check(&self) -> Result<(), ConfigError> {
        let bounds: [(&'static str, u64, u64, String); 4] = [
            ("max-connections", self.max_connections, MAX_CONNECTIONS_AT_ONCE, String::new()),
            ("max-message", self.max_message, MAX_MESSAGE_BYTES, " bytes (what import reads)".into()),
            ("max-messages", self.max_messages, MAX_MESSAGES, " (what import reads)".into()),
            ("max-bytes", self.max_bytes, MAX_FILE_BYTES, " bytes (what import reads)".into()),
        ];
        for (setting, value, most, unit) in bounds {
            if value == 0 || value > most {
                let problem = format!("{} is out of range: give 1 to {}{unit}", group(value), group(most));
                return Err(ConfigError::Invalid { setting, problem });
            }
        }
        check_out(&self.out)
    }
}

/// Open files each forwarded connection holds: its two sockets and its poll.
const FILES_PER_CONNECTION: u64 = 3;
/// Open files kept for the rest (the listener, the file, stdio, the poll).
const SPARE_FILES: u64 = 32;

/// `max_connections` connections at once fit in the open-file limit (raised as far as the
/// hard limit lets it first).
fn check_open_files(max_connections: u64) -> Result<(), ConfigError> {
    let limit = crate::machine::raise_open_file_limit().unwrap_or(1024);
    let needed = max_connections * FILES_PER_CONNECTION + SPARE_FILES;
    if needed <= limit {
        return Ok(());
    }
    let problem = format!(
        "{} connections at once need {} open files and the limit is {}: give fewer, or raise the limit (ulimit -n)",
        group(max_connections),
        group(needed),
        group(limit)
    );
    Err(ConfigError::Invalid { setting: "max-connections", problem })
}

/// `--out` is a regular file (or none yet) in a folder that may be written: a recording is
/// written as it goes and read back by import, so a FIFO or a device is refused.
fn check_out(path: &Path) -> Result<(), ConfigError> {
    if let Ok(OutputPath::InPlace(_)) = resolve(path) {
        let problem =
            format!("{} is not a regular file (a FIFO or a device): give a file name", path.display());
        return Err(ConfigError::Invalid { setting: "out", problem });
    }
    check_output_file("out", path)
}

/// What one connection's thread needs.
struct Shared {
    config: RecordConfig,
    journal: Journal,
    tls: Option<Arc<rustls::ClientConfig>>,
    stop: Arc<AtomicBool>,
    active: AtomicUsize,
}

/// Records until `stop` is set: listens on `config.listen` (telling `listening` the address
/// bound), forwards and records every connection, and returns what was recorded.
pub fn record(
    config: RecordConfig,
    stop: Arc<AtomicBool>,
    listening: impl FnOnce(SocketAddr),
) -> Result<Tally, RecordError> {
    config.check()?;
    check_open_files(config.max_connections)?;
    let addr = config.listen;
    let listener = TcpListener::bind(addr).map_err(|source| RecordError::Listen { addr, source })?;
    let bound = listener.local_addr().map_err(|source| RecordError::Listen { addr, source })?;
    let bounds = JournalBounds { messages: config.max_messages, bytes: config.max_bytes };
    let journal = Journal::create(&config.out, bounds)
        .map_err(|source| RecordError::Create { path: config.out.clone(), source })?;
    listener.set_nonblocking(true).map_err(|source| RecordError::Listen { addr, source })?;
    let tls = config.upstream.tls.then(|| crate::engine::tls::client_config(config.insecure));
    let shared = Arc::new(Shared { config, journal, tls, stop, active: AtomicUsize::new(0) });
    listening(bound);
    let accepted = accept_until_stopped(listener, &shared);
    let deadline = Instant::now() + STOP_WAIT;
    while shared.active.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let tally = shared.journal.close();
    accepted.map_err(|source| RecordError::Accept { addr: bound, source })?;
    Ok(tally)
}

fn accept_until_stopped(listener: TcpListener, shared: &Arc<Shared>) -> std::io::Result<()> {
    let mut listener = mio::net::TcpListener::from_std(listener);
    let mut poll = mio::Poll::new()?;
    poll.registry().register(&mut listener, mio::Token(0), mio::Interest::READABLE)?;
    let mut events = mio::Events::with_capacity(4);
    let mut said_full = false;
    while !shared.stop.load(Ordering::SeqCst) {
        if let Err(error) = poll.poll(&mut events, Some(Duration::from_millis(200)))
            && error.kind() != std::io::ErrorKind::Interrupted
        {
            return Err(error);
        }
        // Every connection waiting is taken: readiness is reported once per arrival.
        while let Ok((client, _)) = listener.accept() {
            let Ok(client) = blocking(client) else { continue };
            let most = shared.config.max_connections as usize;
            if shared.active.load(Ordering::SeqCst) >= most {
                if !std::mem::replace(&mut said_full, true) {
                    eprintln!(
                        "wsbench record: {most} connections at once (--max-connections): answering more with 503"
                    );
                }
                let text = format!("more than {most} connections at once (--max-connections)");
                refuse(client, "503 Service Unavailable", &text);
                continue;
            }
            shared.active.fetch_add(1, Ordering::SeqCst);
            let thread = shared.clone();
            let spawned = std::thread::Builder::new().name("record-conn".into()).spawn(move || {
                connection(client, &thread);
                thread.active.fetch_sub(1, Ordering::SeqCst);
            });
            if spawned.is_err() {
                shared.active.fetch_sub(1, Ordering::SeqCst);
                eprintln!("wsbench record: cannot start a thread for a connection: it was closed");
            }
        }
    }
    Ok(())
}

/// An accepted socket as a blocking std one (the handshake blocks, with timeouts).
fn blocking(socket: mio::net::TcpStream) -> std::io::Result<TcpStream> {
    use std::os::fd::{FromRawFd, IntoRawFd};
    // SAFETY: the descriptor is taken out of the mio socket, which no longer owns it.
    let socket = unsafe { TcpStream::from_raw_fd(socket.into_raw_fd()) };
    socket.set_nonblocking(false)?;
    Ok(socket)
}

/// Answers `client` with an HTTP error and closes it.
fn refuse(mut client: TcpStream, status: &str, text: &str) {
    use std::io::Write;
    let _ = client.set_write_timeout(Some(Duration::from_secs(1)));
    let _ = client.write_all(&upgrade::http_answer(status, text));
}

/// One client connection, from its upgrade request to its end.
fn connection(mut client: TcpStream, shared: &Shared) {
    let config = &shared.config;
    let _ = client.set_nodelay(true);
    let _ = client.set_read_timeout(Some(upgrade::HANDSHAKE_TIMEOUT));
    let request = match upgrade::read_request(&mut client) {
        Ok(request) => request,
        Err(refusal) => return refuse(client, refusal.status, &refusal.text),
    };
    let path = upgrade::upstream_path(&config.upstream, &request.upgrade.path);
    let shown_path = upgrade::recorded_path(&path, config.record_secrets);
    let url = format!("{}{shown_path}", upgrade::origin(&config.upstream));
    let conn = shared.journal.next_connection();
    let write = |event: serde_json::Value, message: bool| {
        conn.is_some_and(|conn| shared.journal.write(conn, event, message))
    };
    match upgrade::connect(&config.upstream, shared.tls.as_ref(), &request) {
        Err(error) => {
            shared.journal.count_upstream_failure();
            write(json!({"event": "upstream_failed", "url": url, "path": shown_path, "error": error}), false);
            refuse(client, "502 Bad Gateway", &format!("the upstream failed: {error}"));
        }
        Ok((upstream, Answer::Refused { status, bytes })) => {
            write(
                json!({"event": "upstream_refused", "url": url, "path": shown_path, "status": status}),
                false,
            );
            forward(client, upstream, (bytes, 0), &request, None, shared);
        }
        Ok((upstream, Answer::Upgraded { head, subprotocol, early })) => {
            let headers = upgrade::recorded_headers(&request.headers, config.record_secrets);
            let open = json!({"event": "open", "url": url, "path": shown_path, "headers": headers,
                "subprotocol": subprotocol});
            let inspect = write(open, false).then_some(conn).flatten();
            let frames_at = head.len();
            let mut to_client = head;
            to_client.extend_from_slice(&early);
            forward(client, upstream, (to_client, frames_at), &request, inspect, shared);
        }
    }
}

/// Forwards between `client` and `upstream` (`to_client` first, its frames from the offset
/// given), recording as connection `conn` when given.
fn forward(
    client: TcpStream,
    upstream: Upstream,
    (to_client, frames_at): (Vec<u8>, usize),
    request: &ClientRequest,
    conn: Option<usize>,
    shared: &Shared,
) {
    let max_message = shared.config.max_message as usize;
    let mut sent = conn.map(|_| Inspector::new(Way::Send, max_message));
    let mut received = conn.map(|_| Inspector::new(Way::Receive, max_message));
    let mut record = |event: serde_json::Value, message: bool| {
        if let Some(conn) = conn {
            shared.journal.write(conn, event, message);
        }
    };
    // What came with the handshakes is read first, in the order it will be forwarded.
    for (inspector, bytes) in [(&mut received, &to_client[frames_at..]), (&mut sent, &request.early)] {
        for (event, message) in inspector.as_mut().map(|i| i.feed(bytes)).unwrap_or_default() {
            record(event, message);
        }
    }
    let (Ok(client), Ok(upstream)) = (transport(client), upstream_transport(upstream)) else { return };
    let client = End::new(client, to_client, sent);
    let upstream = End::new(upstream, request.early.clone(), received);
    relay::relay(client, upstream, &shared.stop, &mut record);
}

fn transport(socket: TcpStream) -> std::io::Result<Transport> {
    socket.set_nonblocking(true)?;
    Ok(Transport::Plain(mio::net::TcpStream::from_std(socket)))
}

fn upstream_transport(upstream: Upstream) -> std::io::Result<Transport> {
    match upstream {
        Upstream::Plain(socket) => transport(socket),
        Upstream::Tls(socket, session) => {
            socket.set_nonblocking(true)?;
            Ok(Transport::tls(mio::net::TcpStream::from_std(socket), *session))
        }
    }
}
