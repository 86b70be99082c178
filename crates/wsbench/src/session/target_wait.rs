//! `--wait-for-target`: before a run, retry a plain TCP connection to the target until it
//! is accepted. Shard pods start beside their server (a Kubernetes Job and the server's
//! Deployment, or `podman kube play`); without a shell in the image, this is what lets a
//! shard wait for the server instead of failing every connection and being retried late.
//! It sends nothing over the connection and measures nothing: the run begins after it.

use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long one connection attempt may take, and the pause between attempts.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(1);
const RETRY_PAUSE: Duration = Duration::from_millis(200);

/// The target did not accept a connection within the wait.
#[derive(Debug, thiserror::Error)]
#[error("{url} did not accept a connection within --wait-for-target {waited} (last attempt: {last})")]
pub struct TargetNotUp {
    pub url: String,
    pub waited: String,
    pub last: String,
}

/// The wait ended without a target to run against.
#[derive(Debug, thiserror::Error)]
pub enum WaitError {
    #[error(transparent)]
    NotUp(#[from] TargetNotUp),
    /// A signal asked to stop while waiting: the run ends before it begins.
    #[error("{signal} while waiting for {url} to accept a connection (--wait-for-target): no load was sent")]
    Interrupted { url: String, signal: String },
}

/// Returns once `addr` accepts a TCP connection, or fails after `within`. A signal
/// (`interrupt` set) ends the wait at once with [`WaitError::Interrupted`], even if the
/// target has just come up: a run asked to stop opens no connection.
pub fn wait_for_target(
    url: &str,
    addr: SocketAddr,
    within: Duration,
    interrupt: &AtomicBool,
) -> Result<(), WaitError> {
    let deadline = Instant::now() + within;
    let stopped = || WaitError::Interrupted { url: url.to_owned(), signal: super::interrupt::interrupted() };
    loop {
        if interrupt.load(Ordering::SeqCst) {
            return Err(stopped());
        }
        let left = deadline.saturating_duration_since(Instant::now());
        let attempt = ATTEMPT_TIMEOUT.min(left).max(Duration::from_millis(10));
        let error = match TcpStream::connect_timeout(&addr, attempt) {
            Ok(_) if interrupt.load(Ordering::SeqCst) => return Err(stopped()),
            Ok(_) => return Ok(()),
            Err(error) => error,
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(WaitError::NotUp(TargetNotUp {
                url: url.to_owned(),
                waited: format!("{within:?}"),
                last: error.to_string(),
            }));
        }
        // Short naps, so that a signal ends the wait at once.
        let pause_until = Instant::now() + RETRY_PAUSE.min(left);
        while Instant::now() < pause_until && !interrupt.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn returns_once_a_late_server_listens() {
        // A free port, closed again, then listened on after a delay.
        let addr = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        let server = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(600));
            let listener = TcpListener::bind(addr).unwrap();
            listener.accept().map(|_| ())
        });
        let started = Instant::now();
        wait_for_target("ws://late", addr, Duration::from_secs(10), &AtomicBool::new(false)).unwrap();
        assert!(started.elapsed() >= Duration::from_millis(500), "waited {:?}", started.elapsed());
        server.join().unwrap().unwrap();
    }

    #[test]
    fn fails_in_one_line_naming_the_url_after_the_wait() {
        let addr = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        let started = Instant::now();
        let error =
            wait_for_target("ws://nobody:9/", addr, Duration::from_millis(700), &AtomicBool::new(false))
                .unwrap_err()
                .to_string();
        assert!(started.elapsed() < Duration::from_secs(3), "waited {:?}", started.elapsed());
        assert!(
            error.starts_with("ws://nobody:9/ did not accept a connection within --wait-for-target 700ms"),
            "{error}"
        );
        assert!(!error.contains('\n'), "{error}");
    }

    #[test]
    fn a_stop_request_ends_the_wait_without_a_connection() {
        // A listener that is up: even so, a run asked to stop does not go on to connect.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let error = wait_for_target("ws://up/", addr, Duration::from_secs(10), &AtomicBool::new(true))
            .unwrap_err()
            .to_string();
        assert!(
            error.ends_with(
                "while waiting for ws://up/ to accept a connection (--wait-for-target): no load was sent"
            ),
            "{error}"
        );
        listener.set_nonblocking(true).unwrap();
        assert!(listener.accept().is_err(), "no connection was opened");
    }
}
