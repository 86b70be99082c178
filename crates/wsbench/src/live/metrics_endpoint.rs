//! `--metrics-addr`: a small HTTP/1.1 server on its own thread that answers `GET /metrics`
//! with the latest exposition page ([`super::exposition`]), for Prometheus (or anything that
//! scrapes its text format) to read during the run. Bound when the session starts, before
//! any load, so a taken port is a usage error and not a lost run. One request per
//! connection (`Connection: close`), answered from a page rendered once a second, so a
//! scrape never waits for the engine.

use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use super::http_head::read_request_line;

/// How often the idle accept loop looks at its stop flag.
const POLL: Duration = Duration::from_millis(50);
/// A client gets this long to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(2);
/// Request heads longer than this are refused.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

#[derive(Debug)]
pub struct MetricsEndpoint {
    addr: SocketAddr,
    page: Arc<Mutex<String>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl MetricsEndpoint {
    /// Listens on `addr` and serves from a thread until dropped.
    pub fn start(addr: SocketAddr) -> std::io::Result<MetricsEndpoint> {
        let listener = TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let page = Arc::new(Mutex::new(String::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (page_, stop_) = (page.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("wsbench-metrics".to_owned())
            .spawn(move || serve(&listener, &page_, &stop_))?;
        Ok(MetricsEndpoint { addr, page, stop, thread: Some(thread) })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The page scrapes get from now on.
    pub fn publish(&self, page: String) {
        *self.page.lock().unwrap_or_else(PoisonError::into_inner) = page;
    }
}

impl Drop for MetricsEndpoint {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve(listener: &TcpListener, page: &Mutex<String>, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((stream, _)) => {
                let _ = answer(stream, page);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(POLL),
            Err(_) => std::thread::sleep(POLL),
        }
    }
}

/// Reads one request head and writes the response.
fn answer(stream: TcpStream, page: &Mutex<String>) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(READ_TIMEOUT))?;
    stream.set_write_timeout(Some(READ_TIMEOUT))?;
    let head = read_request_line(&stream)?;
    let request_line = head.as_deref().unwrap_or("");
    let (status, content_type, body) = respond(request_line, head.is_none(), page);
    let mut out = stream;
    write!(
        out,
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n{}\r\n",
        body.len(),
        if status.starts_with("405") { "Allow: GET, HEAD\r\n" } else { "" },
    )?;
    if !request_line.starts_with("HEAD ") {
        out.write_all(body.as_bytes())?;
    }
    out.flush()
}

/// Status, content type and body for `request_line`.
pub fn respond(
    request_line: &str,
    too_long: bool,
    page: &Mutex<String>,
) -> (&'static str, &'static str, String) {
    let mut parts = request_line.split_whitespace();
    let (method, target, version) = (parts.next(), parts.next(), parts.next());
    let text = "text/plain; charset=utf-8";
    if too_long || version.is_none_or(|v| !v.starts_with("HTTP/1.")) {
        return ("400 Bad Request", text, "bad request\n".to_owned());
    }
    if !matches!(method, Some("GET" | "HEAD")) {
        return ("405 Method Not Allowed", text, "only GET\n".to_owned());
    }
    let path = target.unwrap_or("").split('?').next().unwrap_or("");
    if path != "/metrics" {
        return ("404 Not Found", text, "the metrics are at /metrics\n".to_owned());
    }
    ("200 OK", CONTENT_TYPE, page.lock().unwrap_or_else(PoisonError::into_inner).clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::live::http_head::exchange as get;

    #[test]
    fn serves_the_latest_page_at_metrics_and_refuses_the_rest() {
        let endpoint = MetricsEndpoint::start("127.0.0.1:0".parse().unwrap()).unwrap();
        endpoint.publish("wsbench_up 1\n".to_owned());
        let response = get(endpoint.addr(), "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
        assert!(response.contains(&format!("Content-Type: {CONTENT_TYPE}\r\n")), "{response}");
        assert!(response.contains("Content-Length: 13\r\n"), "{response}");
        assert!(response.ends_with("\r\n\r\nwsbench_up 1\n"), "{response}");
        assert!(get(endpoint.addr(), "GET / HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404 "));
        let refused = get(endpoint.addr(), "POST /metrics HTTP/1.1\r\n\r\n");
        assert!(
            refused.starts_with("HTTP/1.1 405 ") && refused.contains("Allow: GET, HEAD\r\n"),
            "{refused}"
        );
        assert!(get(endpoint.addr(), "nonsense\r\n\r\n").starts_with("HTTP/1.1 400 "));
    }

    #[test]
    fn a_taken_port_fails_to_bind() {
        let first = MetricsEndpoint::start("127.0.0.1:0".parse().unwrap()).unwrap();
        assert!(MetricsEndpoint::start(first.addr()).is_err());
    }
}
