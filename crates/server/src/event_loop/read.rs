//! One read from a connection's socket: into the event loop's read buffer, or, for the rest
//! of a frame larger than one read, straight where its payload goes (the message's buffer, or
//! the output after the echo so far for a binary frame echoed as it arrives), so the bytes
//! pass through no buffer but their last.

use std::io;

use wsbench_transport::Transport;

use super::EventLoop;
use crate::conn::{Next, PayloadInto};
use crate::large_buffers;

/// The most of a binary frame echoed as it arrives read at once (and written straight back).
const ECHO_READ_BYTES: usize = 256 * 1024;

impl EventLoop {
    /// One read from `key`'s socket, handed to its state machine: the bytes read, how many
    /// were asked for, and what the state machine said. `None` when nothing is to be read
    /// now (reading paused, or the socket is drained) or the connection was closed. The rest
    /// of a large frame is read straight into its message's buffer (plain sockets; TLS
    /// records are decrypted into the read buffer).
    pub(super) fn read_once(&mut self, key: usize) -> Option<(usize, usize, Next)> {
        let conn = &mut self.conns[key];
        if conn.reading_paused {
            return None;
        }
        loop {
            if conn.input.is_empty()
                && let Transport::Plain(stream) = &conn.transport
                && let Some((into, wanted)) = conn.state.payload_target()
            {
                let (buf, asked) = match into {
                    PayloadInto::Message => (conn.state.message_buffer(), wanted),
                    PayloadInto::Echo => {
                        let asked = wanted.min(ECHO_READ_BYTES);
                        self.out.reserve(asked);
                        (&mut self.out, asked)
                    }
                };
                let from = buf.len();
                match large_buffers::recv_into_spare(stream, buf, asked) {
                    Ok(0) => break,
                    Ok(n) => {
                        let next = conn.state.payload_arrived(from, into, &mut self.out, self.limits);
                        return Some((n, asked, next));
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return None,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                }
            }
            let n = match conn.transport.read(&mut self.read_buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return None,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            let next = if conn.input.is_empty() {
                let (used, next) = conn.process(&mut self.read_buf[..n], &mut self.out, self.limits);
                if used < n {
                    conn.input.extend_from_slice(&self.read_buf[used..n]);
                }
                next
            } else {
                conn.input.extend_from_slice(&self.read_buf[..n]);
                let mut input = std::mem::take(&mut conn.input);
                let (used, next) = conn.process(&mut input, &mut self.out, self.limits);
                input.drain(..used);
                if !input.is_empty() {
                    conn.input = input;
                }
                next
            };
            return Some((n, self.read_buf.len(), next));
        }
        self.close(key);
        None
    }
}
