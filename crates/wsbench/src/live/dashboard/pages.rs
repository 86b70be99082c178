//! The event streams open at once, and how a page that does not read is kept from holding a
//! place another page could use. What a page has taken is measured on its socket: the bytes
//! written to it that the kernel still holds, unsent or unacknowledged (`SIOCOUTQ`). Each
//! page's budget of such bytes is its socket's send buffer, [`BACKLOG`]: past it a write
//! waits, and a write that waits [`STALL`] fails. A page that has taken nothing for [`STALL`]
//! while bytes waited for it is dropped as well, by its own thread. And when [`MAX_PAGES`] are
//! open, a new page takes the place of the one furthest behind (the most bytes waiting), or of
//! the oldest when none is behind, instead of being refused: fifty clients that ask for the
//! events and never read cannot keep a browser out. Nothing here ever waits for a page.

use std::net::{Shutdown, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// Pages open at once; a further one takes the place of the one furthest behind.
pub const MAX_PAGES: usize = 32;
/// A page's budget of bytes written and not yet taken: its socket's send buffer (the kernel
/// doubles it for its bookkeeping). Past it a write waits for the page to take some.
pub const BACKLOG: usize = 256 * 1024;
/// A page that takes nothing for this long while bytes wait for it (or a write waits for
/// room in its budget) is dropped; its browser reconnects and is sent the history again.
pub const STALL: Duration = Duration::from_secs(2);

/// The open pages, in the order they opened.
#[derive(Debug, Default)]
pub(super) struct Pages {
    open: Vec<Page>,
    next_id: u64,
}

#[derive(Debug)]
struct Page {
    id: u64,
    /// The page's socket, to shut when another page takes its place.
    socket: TcpStream,
}

impl Pages {
    pub fn len(&self) -> usize {
        self.open.len()
    }

    /// Whether page `id` is still open (not dropped to make room for another).
    pub fn holds(&self, id: u64) -> bool {
        self.open.iter().any(|page| page.id == id)
    }

    /// Opens a page on `socket` (a clone of the stream its thread writes), making room when
    /// every place is taken; returns its id.
    pub fn admit(&mut self, socket: TcpStream) -> u64 {
        if self.open.len() >= MAX_PAGES {
            self.evict_furthest_behind();
        }
        let id = self.next_id;
        self.next_id += 1;
        self.open.push(Page { id, socket });
        id
    }

    /// Page `id` ended (its thread is done with it).
    pub fn close(&mut self, id: u64) {
        self.open.retain(|page| page.id != id);
    }

    /// Drops the page with the most bytes waiting for it; when none has any, the oldest.
    fn evict_furthest_behind(&mut self) {
        let behind = |page: &Page| waiting_bytes(&page.socket).unwrap_or(usize::MAX);
        let furthest = (0..self.open.len()).rev().max_by_key(|&at| behind(&self.open[at]));
        if let Some(at) = furthest {
            let page = self.open.remove(at);
            // Its thread's next write fails, and it ends; its browser would reconnect.
            let _ = page.socket.shutdown(Shutdown::Both);
        }
    }
}

/// How a page is keeping up: what it has taken of what was written to it, and since when it
/// has taken nothing while bytes waited.
#[derive(Debug)]
pub(super) struct Progress {
    written: u64,
    taken: u64,
    stalled_since: Option<Instant>,
}

impl Progress {
    /// Sets `socket` up for a page: a send buffer of [`BACKLOG`], writes that fail after
    /// waiting [`STALL`].
    pub fn start(socket: &TcpStream) -> Progress {
        let _ = socket2::SockRef::from(socket).set_send_buffer_size(BACKLOG);
        let _ = socket.set_write_timeout(Some(STALL));
        Progress { written: 0, taken: 0, stalled_since: None }
    }

    pub fn wrote(&mut self, bytes: usize) {
        self.written += bytes as u64;
    }

    /// Looks at what the page has taken by `now`: an error when it took nothing for
    /// [`STALL`] while bytes waited for it.
    pub fn check(&mut self, socket: &TcpStream, now: Instant) -> std::io::Result<()> {
        let waiting = waiting_bytes(socket)?;
        let taken = self.written.saturating_sub(waiting as u64);
        if waiting == 0 {
            self.stalled_since = None;
        } else if taken > self.taken {
            // Bytes still wait, but it took some: a stall counts from now.
            self.stalled_since = Some(now);
        } else if now.duration_since(*self.stalled_since.get_or_insert(now)) >= STALL {
            return Err(std::io::Error::other("the page took nothing while bytes waited for it"));
        }
        self.taken = taken;
        Ok(())
    }
}

/// Bytes written to `socket` that its peer has not yet taken: still in the send queue,
/// unsent or unacknowledged (`SIOCOUTQ`).
fn waiting_bytes(socket: &TcpStream) -> std::io::Result<usize> {
    let mut waiting: libc::c_int = 0;
    // SAFETY: an open socket and a c_int to write to, as SIOCOUTQ (TIOCOUTQ) takes.
    let rc = unsafe { libc::ioctl(socket.as_raw_fd(), libc::TIOCOUTQ, &mut waiting) };
    match rc {
        0 => Ok(waiting.max(0) as usize),
        _ => Err(std::io::Error::last_os_error()),
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpListener;

    use super::*;

    /// A connected pair: (the server's side, the client's side).
    fn pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        (listener.accept().unwrap().0, client)
    }

    #[test]
    fn a_full_table_makes_room_by_dropping_the_page_furthest_behind() {
        let mut pages = Pages::default();
        let mut clients = Vec::new();
        for _ in 0..MAX_PAGES {
            let (server, client) = pair();
            pages.admit(server);
            clients.push(client);
        }
        // None is behind: the oldest gives way, and its client sees the end of the stream.
        let (server, _client) = pair();
        let newest = pages.admit(server);
        assert_eq!(pages.len(), MAX_PAGES);
        assert!(!pages.holds(0) && pages.holds(1) && pages.holds(newest));
        let mut rest = Vec::new();
        assert_eq!(clients[0].read_to_end(&mut rest).unwrap(), 0);
        // Page 5's peer stops taking: more waits for it than for any other, and it goes next.
        let behind = &pages.open.iter().find(|page| page.id == 5).unwrap().socket;
        behind.set_nonblocking(true).unwrap();
        fill(behind);
        let (server, _client) = pair();
        pages.admit(server);
        assert!(!pages.holds(5) && pages.holds(1), "the page behind gave way, not the oldest");
    }

    /// Writes to `socket` until its peer's buffer and its own are full.
    fn fill(mut socket: &TcpStream) {
        let chunk = [b':'; 64 * 1024];
        while socket.write(&chunk).is_ok() {}
    }

    /// A connected pair whose client side takes at most a few KiB into its buffer.
    fn pair_with_a_small_client_buffer() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        client.set_recv_buffer_size(4096).unwrap();
        client.connect(&listener.local_addr().unwrap().into()).unwrap();
        (listener.accept().unwrap().0, client.into())
    }

    #[test]
    fn a_page_that_takes_nothing_while_bytes_wait_is_dropped_after_the_stall() {
        let (server, _client) = pair_with_a_small_client_buffer();
        let mut progress = Progress::start(&server);
        (&server).write_all(&[b':'; 64 * 1024]).unwrap();
        progress.wrote(64 * 1024);
        let waiting = waiting_bytes(&server).unwrap();
        assert!(waiting > 0 && waiting <= BACKLOG, "{waiting} bytes wait");
        let now = Instant::now();
        assert!(progress.check(&server, now).is_ok());
        assert!(progress.check(&server, now + STALL / 2).is_ok(), "dropped before its stall");
        let stalled = progress.check(&server, now + STALL).unwrap_err();
        assert!(stalled.to_string().contains("took nothing"), "{stalled}");
    }

    #[test]
    fn the_kernel_holds_no_more_than_the_budget_for_a_page_that_takes_nothing() {
        let (server, _client) = pair_with_a_small_client_buffer();
        let mut progress = Progress::start(&server);
        server.set_nonblocking(true).unwrap();
        let (chunk, mut written) = ([b':'; 64 * 1024], 0);
        while let Ok(n) = (&server).write(&chunk) {
            written += n;
            assert!(written <= 4 * BACKLOG, "{written} bytes taken for a page that reads nothing");
        }
        progress.wrote(written);
        assert!(waiting_bytes(&server).unwrap() >= BACKLOG / 2, "the budget is the page's buffer");
        // A blocking write past the budget fails after the stall, not never.
        server.set_nonblocking(false).unwrap();
        let started = Instant::now();
        let full = (&server).write_all(&chunk).unwrap_err();
        assert!(
            matches!(full.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut),
            "{full}"
        );
        assert!(started.elapsed() >= STALL / 2, "gave up at once: {:?}", started.elapsed());
    }

    #[test]
    fn a_page_that_reads_everything_is_never_behind() {
        let (server, mut reader) = pair();
        let mut progress = Progress::start(&server);
        let start = Instant::now();
        for at in 0..5 {
            (&server).write_all(b"data: {}\n\n").unwrap();
            progress.wrote(10);
            reader.read_exact(&mut [0u8; 10]).unwrap();
            // Loopback acknowledges what the client's kernel took at once (within a minute on
            // the busiest machine).
            let read_at = Instant::now();
            while waiting_bytes(&server).unwrap() > 0 {
                assert!(read_at.elapsed() < Duration::from_secs(60), "never acknowledged");
                std::thread::sleep(Duration::from_millis(1));
            }
            assert!(progress.check(&server, start + STALL * at).is_ok());
        }
    }
}
