//! `wsbench serve`: the built-in echo server, wsbench's default benchmark target.
//!
//! It must never be the reason a benchmark looks bad, so it is small and lean: one mio event
//! loop per thread (default one, like the seeds' single-threaded servers), listeners shared
//! with `SO_REUSEPORT`, per-connection state of a few hundred bytes while idle, and no
//! allocation per echoed message on the hot path (a whole frame is echoed straight from the
//! thread's read buffer). Besides WebSocket echo it answers plain HTTP GETs and, on an extra
//! port, echoes raw TCP: the baselines of the rtt scenario.
//! Past one process's open-file limit it runs as several processes sharing the port the
//! same way ([`serve_processes`], `--processes N`).

mod compression;
mod config;
mod conn;
pub mod counts;
mod echo_count;
mod event_loop;
mod h3;
mod large_buffers;
mod listener;
mod processes;
mod pubsub;
mod tls;

use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;

pub use processes::serve_processes;

/// Drives one connection's protocol state machine without a socket, for the `server_conn`
/// fuzz target (fuzz/fuzz_targets/server_conn.rs) and its corpus test. Not a stable API.
#[doc(hidden)]
pub mod fuzzing {
    use crate::conn::{ConnState, Limits, Next, Phase};

    /// The message limit `feed_connection` uses: small, so fuzzed lengths can cross it.
    pub const MAX_MESSAGE: u64 = 64 * 1024;
    /// The request header limit `feed_connection` uses (the server's default).
    pub const MAX_HEADER_BYTES: usize = wsbench_proto::handshake::DEFAULT_MAX_HEADER_BYTES;
    /// The least of a binary frame still to come, after its first piece, for its echo to
    /// start before it has all arrived: only such an echo can be cut short by input that
    /// ends inside its frame.
    pub const MIN_STREAMED_REST: u64 = crate::conn::MIN_STREAMED_REST;

    /// Feeds `chunks` to a new WebSocket-port connection one after the other, the way the
    /// event loop hands over socket reads (keeping unused input for the next read), and
    /// returns everything the server would have written. Stops where the event loop would
    /// stop reading: after a reply that ends the connection, or at an oversized pending
    /// request header.
    pub fn feed_connection(chunks: &[&[u8]]) -> Vec<u8> {
        let limits = Limits {
            max_message: MAX_MESSAGE,
            max_header_bytes: MAX_HEADER_BYTES,
            deflate: true,
            pubsub: false,
        };
        let mut state = ConnState::new(Phase::Handshake);
        let mut input: Vec<u8> = Vec::new();
        let mut out = Vec::new();
        for chunk in chunks {
            input.extend_from_slice(chunk);
            let before = out.len();
            let (used, next) = state.process(&mut input, &mut out, limits);
            assert!(used <= input.len(), "process used more bytes than it was given");
            input.drain(..used);
            if next == Next::CloseAfterFlush {
                break;
            }
            if state.phase == Phase::Handshake && out.len() == before && input.len() > MAX_HEADER_BYTES {
                break;
            }
        }
        out
    }
}

pub use config::{
    DEFAULT_CLOSE_CODE, DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_MESSAGE_MEMORY,
    DEFAULT_PORT, DEFAULT_PROCESSES, DEFAULT_THREADS, ServeConfig, TlsSource,
};

/// Why the server could not start or stopped abnormally.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot listen on {addr} (is the port in use? try --port 0)")]
    Bind { addr: SocketAddr, source: std::io::Error },
    #[error("TLS set-up failed: {0}")]
    Tls(String),
    #[error("cannot read {path}")]
    ReadFile { path: String, source: std::io::Error },
    #[error("event loop failed")]
    Io(#[from] std::io::Error),
    #[error("an event loop thread panicked")]
    Panicked,
    #[error("the reserved port is not an IP socket")]
    NotIp,
    /// A process of a multi-process server (`--processes N`) failed, or a server started as
    /// a child could not read its settings.
    #[error(transparent)]
    Child(#[from] wsbench_supervisor::Error),
}

/// Listener addresses of a started server.
#[derive(Debug, Clone)]
pub struct Endpoints {
    /// The WebSocket (and HTTP) listener.
    pub websocket: SocketAddr,
    /// The raw TCP echo listener, when asked for.
    pub tcp: Option<SocketAddr>,
    pub tls: bool,
    /// The UDP address of WebSockets over HTTP/3, when served.
    pub h3: Option<SocketAddr>,
}

impl Endpoints {
    /// The `listening on …` line tools wait for.
    pub fn listening_line(&self) -> String {
        let scheme = if self.tls { "wss" } else { "ws" };
        let mut line = format!("listening on {scheme}://{}", self.websocket);
        if let Some(tcp) = self.tcp {
            line.push_str(&format!(" tcp://{tcp}"));
        }
        if let Some(h3) = self.h3 {
            line.push_str(&format!(" h3://{h3}"));
        }
        line
    }
}

/// A running server: its endpoints and a handle to stop it.
#[derive(Debug)]
pub struct RunningServer {
    pub endpoints: Endpoints,
    shared: Arc<event_loop::Shared>,
    threads: Vec<JoinHandle<std::io::Result<()>>>,
}

impl RunningServer {
    /// Asks every event loop to close its connections with 1001 and exit.
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        ShutdownHandle { shared: self.shared.clone() }
    }

    /// Waits for every event loop to finish.
    pub fn wait(self) -> Result<(), ServeError> {
        for thread in self.threads {
            thread.join().map_err(|_| ServeError::Panicked)??;
        }
        Ok(())
    }
}

pub use counts::ServerCounts;

/// Stops a running server from another thread (or a signal handler thread).
#[derive(Debug, Clone)]
pub struct ShutdownHandle {
    shared: Arc<event_loop::Shared>,
}

impl ShutdownHandle {
    /// The server's counts now.
    pub fn counts(&self) -> ServerCounts {
        ServerCounts {
            echoed: (self.shared.echoed.lock().unwrap_or_else(|e| e.into_inner()).iter())
                .map(|count| count.load(Ordering::Relaxed))
                .sum(),
            connections: self.shared.connections.load(Ordering::Relaxed),
            tls: self
                .shared
                .handshakes
                .as_ref()
                .map(|tally| *tally.lock().unwrap_or_else(|e| e.into_inner())),
        }
    }

    /// Closes every connection with the configured close code; the server goes on.
    pub fn close_all(&self) {
        self.shared.close_all.fetch_add(1, Ordering::SeqCst);
        for waker in self.shared.wakers.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            let _ = waker.wake();
        }
    }

    pub fn shutdown(&self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        for waker in self.shared.wakers.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            let _ = waker.wake();
        }
    }
}

/// Binds every listener and starts the event loops.
pub fn start(config: &ServeConfig) -> Result<RunningServer, ServeError> {
    let tls = match &config.tls {
        Some(source) => Some(tls::server_config(source)?),
        None => None,
    };
    // Pub/sub keeps every subscription in one table: one event-loop thread.
    let threads = if config.pubsub { 1 } else { config.threads.max(1) };
    let mut websocket_listeners = listener::bind_group(config.host, config.port, threads)?;
    let websocket = websocket_listeners[0].local_addr()?;
    let mut tcp_listeners = match config.tcp_port {
        Some(port) => listener::bind_group(config.host, port, threads)?,
        None => Vec::new(),
    };
    let tcp = tcp_listeners.first().map(|l| l.local_addr()).transpose()?;
    let shared = Arc::new(event_loop::Shared {
        stopping: AtomicBool::new(false),
        close_all: Default::default(),
        connections: AtomicUsize::new(0),
        echoed: Default::default(),
        wakers: Default::default(),
        handshakes: tls.is_some().then(Default::default),
        message_memory: wsbench_proto::MessageMemory::new(config.max_message_memory),
    });
    let mut handles = Vec::with_capacity(threads);
    for index in 0..threads {
        let websocket_listener = websocket_listeners.remove(0);
        let tcp_listener = (!tcp_listeners.is_empty()).then(|| tcp_listeners.remove(0));
        let mut event_loop = event_loop::EventLoop::new(
            config.clone(),
            tls.clone(),
            websocket_listener,
            tcp_listener,
            shared.clone(),
        )?;
        handles.push(
            std::thread::Builder::new().name(format!("serve-{index}")).spawn(move || event_loop.run())?,
        );
    }
    let h3 = match config.h3 {
        true => {
            let h3_tls = match &tls {
                Some(tls) => tls.clone(),
                None => tls::server_config(&TlsSource::SelfSigned)?,
            };
            let server = h3::H3Server::bind(websocket, &h3_tls, config, shared.clone())?;
            let addr = server.local_addr()?;
            handles.push(std::thread::Builder::new().name("serve-h3".into()).spawn(move || server.run())?);
            Some(addr)
        }
        false => None,
    };
    Ok(RunningServer {
        endpoints: Endpoints { websocket, tcp, tls: tls.is_some(), h3 },
        shared,
        threads: handles,
    })
}

/// Runs the server until SIGINT or SIGTERM: prints the `listening on` line, then closes every
/// connection with 1001 and returns. On SIGUSR1, and once more when it stops, it prints its
/// counts ([`ServerCounts::line`]) on stdout, and it answers them on its abstract socket too
/// ([`counts::answer_on_socket`]); on SIGUSR2 it closes every connection with its close code
/// ([`ServeConfig::close_code`]) and goes on.
pub fn serve_until_signalled(config: &ServeConfig) -> Result<(), ServeError> {
    use signal_hook::consts::{SIGINT, SIGTERM, SIGUSR1, SIGUSR2};
    // Handlers go in before the `listening on` line: a starter may signal as soon as it
    // reads it, and the default action would kill the process instead of closing cleanly.
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGUSR1, SIGUSR2])?;
    let server = start(config)?;
    print_line(&server.endpoints.listening_line());
    let handle = server.shutdown_handle();
    let counts = server.shutdown_handle();
    let asked = server.shutdown_handle();
    if let Err(e) = counts::answer_on_socket(move || asked.counts()) {
        eprintln!("wsbench serve: no counts socket ({e}); SIGUSR1 still prints them");
    }
    let signal_handle = signals.handle();
    std::thread::Builder::new().name("serve-signals".into()).spawn(move || {
        for signal in signals.forever() {
            if signal == SIGUSR1 {
                print_line(&handle.counts().line());
            } else if signal == SIGUSR2 {
                handle.close_all();
            } else {
                handle.shutdown();
                break;
            }
        }
    })?;
    let result = server.wait();
    signal_handle.close();
    print_line(&counts.counts().line());
    result
}

/// Prints one line on stdout at once. A closed stdout (the starter went away) must not stop
/// the server.
fn print_line(line: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}");
    let _ = stdout.flush();
}
