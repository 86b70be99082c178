//! HTTP/2 (RFC 9113) run by hyperium's `h2` crate without an async runtime, for both the
//! load engine's client connections and `wsbench serve`: the crate reads and writes a
//! [`PipeIo`], an in-memory stream whose two buffers the caller's event loop fills from the
//! socket and drains to it ([`Pipe`]); its futures are polled with a waker that does nothing
//! ([`poll_now`]), since the event loop polls again whenever bytes came or a stream wrote.
//! Framing, HPACK and flow control stay the crate's: nothing here parses HTTP/2.
//!
//! Never blocks and never touches a socket itself.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::Transport;

pub use h2;

/// What an HTTP/2 client sends first (RFC 9113 §3.4): a server that sees it on a fresh
/// connection speaks HTTP/2 with prior knowledge (h2c).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Bytes of output the pipe holds before `h2` is told to wait (the socket is slow).
pub const OUTPUT_LIMIT: usize = 1 << 20;
/// The most one read from the socket takes into the pipe.
const READ_CHUNK: usize = 64 * 1024;

#[derive(Debug, Default)]
struct Buffers {
    /// Bytes from the peer not yet taken by `h2`, from `input_pos` on.
    input: Vec<u8>,
    input_pos: usize,
    /// The peer's stream ended.
    input_ended: bool,
    /// Bytes `h2` wrote, for the socket.
    output: Vec<u8>,
}

/// The event loop's side of an HTTP/2 connection's bytes.
#[derive(Debug, Clone, Default)]
pub struct Pipe(Arc<Mutex<Buffers>>);

/// `h2`'s side: what it reads and writes.
#[derive(Debug)]
pub struct PipeIo(Arc<Mutex<Buffers>>);

impl Pipe {
    pub fn new() -> Pipe {
        Pipe::default()
    }

    /// The stream to hand to `h2`'s handshake.
    pub fn io(&self) -> PipeIo {
        PipeIo(self.0.clone())
    }

    fn lock(&self) -> MutexGuard<'_, Buffers> {
        lock(&self.0)
    }

    /// Bytes that came from the peer.
    pub fn push_input(&self, data: &[u8]) {
        let mut buffers = self.lock();
        buffers.compact();
        buffers.input.extend_from_slice(data);
    }

    /// Reads what the socket has into the pipe (no copy through another buffer): the bytes
    /// read, 0 at the end of the peer's stream (then marked ended), `WouldBlock` when none.
    pub fn read_from(&self, transport: &mut Transport) -> io::Result<usize> {
        let mut buffers = self.lock();
        buffers.compact();
        let start = buffers.input.len();
        buffers.input.resize(start + READ_CHUNK, 0);
        let result = transport.read(&mut buffers.input[start..]);
        let n = *result.as_ref().unwrap_or(&0);
        buffers.input.truncate(start + n);
        if matches!(result, Ok(0)) {
            buffers.input_ended = true;
        }
        result
    }

    /// The peer's stream ended.
    pub fn end_input(&self) {
        self.lock().input_ended = true;
    }

    /// Whether `h2` has taken every byte that came.
    pub fn input_taken(&self) -> bool {
        let buffers = self.lock();
        buffers.input_pos == buffers.input.len()
    }

    /// Moves what `h2` wrote to the end of `out`.
    pub fn take_output(&self, out: &mut Vec<u8>) {
        let mut buffers = self.lock();
        if out.is_empty() {
            std::mem::swap(out, &mut buffers.output);
        } else {
            out.extend_from_slice(&buffers.output);
            buffers.output.clear();
        }
    }

    /// Whether `h2` wrote something not yet taken.
    pub fn has_output(&self) -> bool {
        !self.lock().output.is_empty()
    }
}

impl Buffers {
    /// Drops the input already taken.
    fn compact(&mut self) {
        if self.input_pos == self.input.len() {
            self.input.clear();
            self.input_pos = 0;
        } else if self.input_pos > READ_CHUNK {
            self.input.drain(..self.input_pos);
            self.input_pos = 0;
        }
    }
}

fn lock(buffers: &Mutex<Buffers>) -> MutexGuard<'_, Buffers> {
    buffers.lock().unwrap_or_else(|e| e.into_inner())
}

impl AsyncRead for PipeIo {
    fn poll_read(self: Pin<&mut Self>, _: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let mut buffers = lock(&self.0);
        let available = buffers.input.len() - buffers.input_pos;
        if available == 0 {
            return match buffers.input_ended {
                true => Poll::Ready(Ok(())),
                false => Poll::Pending,
            };
        }
        let n = available.min(buf.remaining());
        let start = buffers.input_pos;
        buf.put_slice(&buffers.input[start..start + n]);
        buffers.input_pos += n;
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for PipeIo {
    fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        let mut buffers = lock(&self.0);
        if buffers.output.len() >= OUTPUT_LIMIT {
            return Poll::Pending;
        }
        buffers.output.extend_from_slice(data);
        Poll::Ready(Ok(data.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// The streams `h2` woke since the last look (by the caller's number for each): a stream
/// polled with [`Ready::waker`] is noted here when it has something, so a turn reads only
/// those instead of every stream of the connection.
#[derive(Debug, Clone, Default)]
pub struct Ready(Arc<Mutex<Vec<usize>>>);

impl Ready {
    /// The waker of stream `stream`.
    pub fn waker(&self, stream: usize) -> Waker {
        Waker::from(Arc::new(StreamWaker { stream, ready: self.0.clone() }))
    }

    /// Moves the woken streams to the end of `into`.
    pub fn take(&self, into: &mut Vec<usize>) {
        into.append(&mut lock_ready(&self.0));
    }

    pub fn is_empty(&self) -> bool {
        lock_ready(&self.0).is_empty()
    }
}

struct StreamWaker {
    stream: usize,
    ready: Arc<Mutex<Vec<usize>>>,
}

impl std::task::Wake for StreamWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        let mut ready = lock_ready(&self.ready);
        if !ready.contains(&self.stream) {
            ready.push(self.stream);
        }
    }
}

fn lock_ready(ready: &Mutex<Vec<usize>>) -> MutexGuard<'_, Vec<usize>> {
    ready.lock().unwrap_or_else(|e| e.into_inner())
}

/// A context whose waker does nothing: the event loop polls again on its own.
pub fn context() -> Context<'static> {
    Context::from_waker(Waker::noop())
}

/// Polls `future` once.
pub fn poll_now<F: Future + Unpin>(future: &mut F) -> Poll<F::Output> {
    Pin::new(future).poll(&mut context())
}

/// An HTTP/2 error code as a word for counters: `refused_stream`, `cancel`,
/// `enhance_your_calm`, … (`0x1f` for one RFC 9113 does not name).
pub fn reason_name(reason: h2::Reason) -> String {
    let name = format!("{reason:?}");
    match name.chars().all(|c| c.is_ascii_uppercase() || c == '_') {
        true => name.to_ascii_lowercase(),
        false => format!("{:#x}", u32::from(reason)),
    }
}

/// The cause an `h2` error is counted by: `h2_goaway_<code>` (the server's GOAWAY),
/// `h2_rst_<code>` (its RST_STREAM), `h2_<code>` (a protocol error found here), or
/// `h2_io` (the connection broke).
pub fn error_cause(error: &h2::Error) -> String {
    match error.reason() {
        Some(reason) if error.is_go_away() && error.is_remote() => {
            format!("h2_goaway_{}", reason_name(reason))
        }
        Some(reason) if error.is_reset() && error.is_remote() => format!("h2_rst_{}", reason_name(reason)),
        Some(reason) => format!("h2_{}", reason_name(reason)),
        None => "h2_io".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_codes_are_named_in_snake_case() {
        assert_eq!(reason_name(h2::Reason::REFUSED_STREAM), "refused_stream");
        assert_eq!(reason_name(h2::Reason::ENHANCE_YOUR_CALM), "enhance_your_calm");
        assert_eq!(reason_name(h2::Reason::from(0x1f)), "0x1f");
    }

    #[test]
    fn the_pipe_hands_input_to_h2_and_its_output_back() {
        let pipe = Pipe::new();
        let mut io = pipe.io();
        let mut cx = context();
        let mut space = [0u8; 8];
        let mut buf = ReadBuf::new(&mut space);
        assert!(Pin::new(&mut io).poll_read(&mut cx, &mut buf).is_pending());
        pipe.push_input(b"hello");
        assert!(Pin::new(&mut io).poll_read(&mut cx, &mut buf).is_ready());
        assert_eq!(buf.filled(), b"hello");
        assert!(pipe.input_taken());
        assert!(matches!(Pin::new(&mut io).poll_write(&mut cx, b"out"), Poll::Ready(Ok(3))));
        let mut out = Vec::new();
        pipe.take_output(&mut out);
        assert_eq!(out, b"out");
        pipe.end_input();
        let mut buf = ReadBuf::new(&mut space);
        assert!(Pin::new(&mut io).poll_read(&mut cx, &mut buf).is_ready());
        assert!(buf.filled().is_empty(), "the end of the peer's stream reads as 0 bytes");
    }
}
