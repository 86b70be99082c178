//! `--dashboard [ADDR]`: a web page to watch the command while it runs. A small HTTP/1.1
//! server on its own threads answers `GET /` with one self-contained page ([`PAGE`]: its
//! script, styles and charts inline, nothing fetched from elsewhere) and `GET /events` with
//! a server-sent-events stream of the seconds the live view shows ([`event::second`]), the
//! lines of progress a comparison prints, and at the end the final figures
//! ([`event::ending`]). A page that connects late, or is reloaded, is sent the command's
//! [`history`] first (bounded, thinned past two hours), so it always charts the whole run.
//!
//! One page per process, for every measurement the command makes (a comparison's runs, a
//! search's steps, a warm-up run): it is opened by the command before any load ([`serve`],
//! a taken port is a usage error then, not a lost run) and every [`super::Publisher`] of
//! the process writes to it ([`current`]). It never holds the command up: nothing waits for
//! a browser to connect, a page that takes nothing for [`STALL`] while bytes wait for it, or
//! leaves more than [`BACKLOG`] untaken, is dropped, and at the end the pages still open get
//! at most [`CLOSE_GRACE`] to take the last event before the listener closes. Nor can pages
//! that never read keep another out: when [`MAX_PAGES`] are open, a new one takes the place of
//! the one furthest behind ([`pages`]).

pub mod event;
pub mod history;
mod pages;

use std::collections::VecDeque;
use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use history::{Event, History};
pub use pages::{BACKLOG, MAX_PAGES, STALL};
use pages::{Pages, Progress};

use super::http_head::read_request_line;
use super::{Second, Steps};
use crate::samples::ServerSample;

/// The page: HTML, styles, script and charts in one file.
pub const PAGE: &str = include_str!("page.html");
/// At the end, how long the pages still open get to take the last event.
pub const CLOSE_GRACE: Duration = Duration::from_secs(1);
/// Events kept for the open pages to catch up on; one further behind starts again.
const RECENT: usize = 1_024;
/// An idle stream sends a comment this often, so proxies and browsers keep it open.
const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// How often the idle accept loop looks at its stop flag.
const POLL: Duration = Duration::from_millis(50);

/// The page of this process, while it is open.
static CURRENT: Mutex<Option<Arc<Dashboard>>> = Mutex::new(None);

/// The port is taken (or the address is not this machine's): said before any load.
#[derive(Debug, thiserror::Error)]
#[error(
    "--dashboard {addr}: cannot listen there (is another program, or another wsbench, using the \
     port?): give another address, e.g. --dashboard 127.0.0.1:0 for any free port"
)]
pub struct BindError {
    pub addr: SocketAddr,
    #[source]
    pub source: std::io::Error,
}

/// The page of this process, when `--dashboard` opened one.
pub fn current() -> Option<Arc<Dashboard>> {
    CURRENT.lock().unwrap_or_else(PoisonError::into_inner).clone()
}

/// Opens the page at `addr` for this process's measurements; it closes when the returned
/// [`Open`] is dropped.
pub fn serve(addr: SocketAddr) -> Result<Open, BindError> {
    let dashboard = Dashboard::start(addr).map_err(|source| BindError { addr, source })?;
    *CURRENT.lock().unwrap_or_else(PoisonError::into_inner) = Some(dashboard.clone());
    Ok(Open { dashboard })
}

/// The open page: written to through [`current`], closed when this is dropped.
#[derive(Debug)]
pub struct Open {
    dashboard: Arc<Dashboard>,
}

impl Open {
    /// Where the page listens (its port when `ADDR` gave port 0).
    pub fn addr(&self) -> SocketAddr {
        self.dashboard.addr
    }

    /// The command ended: the page shows `ending`.
    pub fn finish(&self, ending: &event::Ending<'_>) {
        self.dashboard.push(Event::new(END, event::ending(ending).to_string()));
    }

    /// A line of progress (a comparison's next server), shown above the charts.
    pub fn note(&self, line: &str) {
        self.dashboard.note(line);
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        CURRENT.lock().unwrap_or_else(PoisonError::into_inner).take();
        self.dashboard.close();
    }
}

/// The name of the final event.
const END: &str = "end";

/// The page's server and what it has been sent.
#[derive(Debug)]
pub struct Dashboard {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Mutex<Option<JoinHandle<()>>>,
}

#[derive(Debug, Default)]
struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    stop: AtomicBool,
}

#[derive(Debug, Default)]
struct State {
    history: History,
    /// The latest events, for the open pages to send on.
    recent: VecDeque<(u64, Event)>,
    /// Events pushed so far (the next one's number).
    seq: u64,
    steps: Steps,
    /// Pages open now.
    pages: Pages,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Dashboard {
    fn start(addr: SocketAddr) -> std::io::Result<Arc<Dashboard>> {
        let listener = TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared::default());
        let serving = shared.clone();
        let accept = std::thread::Builder::new()
            .name("wsbench-dashboard".to_owned())
            .spawn(move || accept_loop(&listener, &serving))?;
        Ok(Arc::new(Dashboard { addr, shared, accept: Mutex::new(Some(accept)) }))
    }

    /// Seconds just published, each with its p99.9, and the server (`server`) and this
    /// process (`own`) as sampled after them.
    pub fn seconds(
        &self,
        seconds: &[(Second, u64)],
        server: Option<&ServerSample>,
        own: Option<&ServerSample>,
    ) {
        for (index, (second, p999_us)) in seconds.iter().enumerate() {
            let step = self.shared.lock().steps.of(second.second);
            // The samples belong to the latest second.
            let last = index + 1 == seconds.len();
            let (server, own) = if last { (server, own) } else { (None, None) };
            let value = event::second(second, step, *p999_us, server, own);
            self.push(Event::new(history::SECOND, value.to_string()));
        }
    }

    fn note(&self, line: &str) {
        self.push(Event::new("note", serde_json::json!({ "text": line }).to_string()));
    }

    fn push(&self, event: Event) {
        let mut state = self.shared.lock();
        let seq = state.seq;
        state.seq += 1;
        state.history.push(seq, event.clone());
        if state.recent.len() == RECENT {
            state.recent.pop_front();
        }
        state.recent.push_back((seq, event));
        drop(state);
        self.shared.changed.notify_all();
    }

    /// Stops accepting; the open pages get [`CLOSE_GRACE`] to take what is left.
    fn close(&self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        self.shared.changed.notify_all();
        let deadline = Instant::now() + CLOSE_GRACE;
        let mut state = self.shared.lock();
        while state.pages.len() > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            state = self.shared.changed.wait_timeout(state, left).unwrap_or_else(PoisonError::into_inner).0;
        }
        drop(state);
        if let Some(accept) = self.accept.lock().unwrap_or_else(PoisonError::into_inner).take() {
            let _ = accept.join();
        }
    }
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    while !shared.stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((stream, _)) => {
                let shared = shared.clone();
                // A page's thread is not joined: the process may end while a browser holds it.
                let _ =
                    std::thread::Builder::new().name("wsbench-dashboard-page".to_owned()).spawn(move || {
                        let _ = answer(stream, &shared);
                    });
            }
            Err(_) => std::thread::sleep(POLL),
        }
    }
}

/// Reads one request head and answers it: the page, the event stream, or an error.
fn answer(stream: TcpStream, shared: &Shared) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(STALL))?;
    stream.set_write_timeout(Some(STALL))?;
    let request_line = read_request_line(&stream)?.unwrap_or_default();
    let mut out = stream;
    match route(&request_line) {
        Route::Page => respond(&mut out, "200 OK", "text/html; charset=utf-8", PAGE),
        Route::Events => stream_events(out, shared),
        Route::Refused(status, body) => respond(&mut out, status, "text/plain; charset=utf-8", body),
    }
}

/// What a request asks for.
#[derive(Debug, PartialEq, Eq)]
enum Route {
    Page,
    Events,
    Refused(&'static str, &'static str),
}

fn route(request_line: &str) -> Route {
    let mut parts = request_line.split_whitespace();
    let (method, target, version) = (parts.next(), parts.next(), parts.next());
    if version.is_none_or(|v| !v.starts_with("HTTP/1.")) {
        return Route::Refused("400 Bad Request", "bad request\n");
    }
    if method != Some("GET") {
        return Route::Refused("405 Method Not Allowed", "only GET\n");
    }
    match target.unwrap_or("").split('?').next() {
        Some("/" | "/index.html") => Route::Page,
        Some("/events") => Route::Events,
        _ => Route::Refused("404 Not Found", "the page is at /, its events at /events\n"),
    }
}

fn respond(out: &mut TcpStream, status: &str, content_type: &str, body: &str) -> std::io::Result<()> {
    write!(
        out,
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nCache-Control: no-store\r\n\
         Connection: close\r\n\r\n{body}",
        body.len(),
    )?;
    out.flush()
}

/// One page's event stream: the history, then each event as it comes, until the command
/// ends (or the page stops taking what it is sent, falls [`RECENT`] events behind, or gives
/// its place to a new page: its browser then reconnects and is sent the history again).
fn stream_events(mut out: TcpStream, shared: &Shared) -> std::io::Result<()> {
    let (id, backlog, mut next) = {
        let mut state = shared.lock();
        if shared.stop.load(Ordering::Relaxed) {
            drop(state);
            return respond(&mut out, "503 Service Unavailable", "text/plain; charset=utf-8", "ended\n");
        }
        let id = state.pages.admit(out.try_clone()?);
        let backlog: String = state.history.events().map(|(_, event)| event.wire()).collect();
        (id, backlog, state.seq)
    };
    // A page that gave its place to this one ends now, not at its next event.
    shared.changed.notify_all();
    let mut progress = Progress::start(&out);
    let mut send = |out: &mut TcpStream, bytes: &[u8]| {
        out.write_all(bytes)?;
        out.flush()?;
        progress.wrote(bytes.len());
        progress.check(out, Instant::now())
    };
    let streamed = (|| {
        let head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n\
                     Connection: close\r\n\r\nevent: hello\ndata: {}\n\n";
        send(&mut out, &[&head[..], backlog.as_bytes()].concat())?;
        loop {
            let (batch, stopping) = wait_for_events(shared, id, &mut next)?;
            send(&mut out, batch.as_bytes())?;
            if stopping {
                return Ok(());
            }
        }
    })();
    shared.lock().pages.close(id);
    shared.changed.notify_all();
    streamed
}

/// The events from number `next` on, once there are any (a keep-alive comment after
/// [`KEEP_ALIVE`] without one), and whether the page is closing; an error once page `id`
/// gave its place to another.
fn wait_for_events(shared: &Shared, id: u64, next: &mut u64) -> std::io::Result<(String, bool)> {
    let mut state = shared.lock();
    let waited = Instant::now();
    while state.seq == *next && !shared.stop.load(Ordering::Relaxed) && state.pages.holds(id) {
        let left = KEEP_ALIVE.saturating_sub(waited.elapsed());
        if left.is_zero() {
            return Ok((": still running\n\n".to_owned(), false));
        }
        state = shared.changed.wait_timeout(state, left).unwrap_or_else(PoisonError::into_inner).0;
    }
    if !state.pages.holds(id) {
        return Err(std::io::Error::other("the page gave its place to another"));
    }
    if state.recent.front().is_some_and(|(seq, _)| *seq > *next) {
        return Err(std::io::Error::other("the page fell behind"));
    }
    let batch = state.recent.iter().filter(|(seq, _)| *seq >= *next).map(|(_, event)| event.wire()).collect();
    *next = state.seq;
    Ok((batch, shared.stop.load(Ordering::Relaxed)))
}

#[cfg(test)]
mod tests;
