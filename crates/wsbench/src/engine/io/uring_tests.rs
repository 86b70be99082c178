//! Unit tests of the ring's buffer pool on real loopback sockets: a pool smaller than the
//! connections receiving at once runs out, and every byte still arrives, in order.

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use super::{Completion, Ring};

/// The byte at `offset` of what connection `key` is sent.
fn byte(key: usize, offset: usize) -> u8 {
    ((key * 7 + offset) % 251) as u8
}

#[test]
fn receives_stopped_by_a_short_pool_are_armed_again_and_lose_nothing() {
    const CONNECTIONS: usize = 64;
    const BYTES_EACH: usize = 40 * 1024;
    const POOL: u16 = 4;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let clients: Vec<TcpStream> =
        (0..CONNECTIONS).map(|_| TcpStream::connect(listener.local_addr().unwrap()).unwrap()).collect();
    let mut servers: Vec<TcpStream> = (0..CONNECTIONS).map(|_| listener.accept().unwrap().0).collect();
    // SAFETY: epoll_create1 has no preconditions; the descriptor is closed at the end.
    let epoll = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    assert!(epoll >= 0);
    let mut ring = Ring::new(epoll, CONNECTIONS, POOL).expect("io_uring is available here");
    // Accepted in any order: each server side learns its client's key from the first byte.
    for (key, client) in clients.iter().enumerate() {
        (&*client).write_all(&[key as u8]).unwrap();
        client.set_nonblocking(true).unwrap();
    }
    let mut by_key: Vec<Option<TcpStream>> = (0..CONNECTIONS).map(|_| None).collect();
    for mut server in servers.drain(..) {
        let mut first = [0u8; 1];
        std::io::Read::read_exact(&mut server, &mut first).unwrap();
        by_key[first[0] as usize] = Some(server);
    }
    for (key, client) in clients.iter().enumerate() {
        ring.adopt(key, client.as_raw_fd()).unwrap();
    }
    // Every connection has more waiting than the whole pool holds, all at once.
    for (key, server) in by_key.iter_mut().enumerate() {
        let data: Vec<u8> = (0..BYTES_EACH).map(|offset| byte(key, offset)).collect();
        server.as_mut().unwrap().write_all(&data).unwrap();
    }
    let mut received = [0usize; CONNECTIONS];
    let deadline = Instant::now() + Duration::from_secs(20);
    while received.iter().any(|&n| n < BYTES_EACH) && Instant::now() < deadline {
        ring.submit_and_wait(Duration::from_millis(10)).unwrap();
        let completions = ring.take_completions();
        let mut taken = Vec::new();
        for completion in &completions {
            match *completion {
                Completion::Received { key, buffer, len } => {
                    // SAFETY: a Received buffer, recycled only after this slice's last use.
                    let bytes = unsafe { ring.received(buffer, len) };
                    for (i, &b) in bytes.iter().enumerate() {
                        assert_eq!(
                            b,
                            byte(key, received[key] + i),
                            "connection {key} at {}",
                            received[key] + i
                        );
                    }
                    received[key] += len;
                    taken.push(buffer);
                }
                Completion::Ended { key } | Completion::SendFailed { key } => {
                    panic!("connection {key} broke")
                }
                Completion::Sent { .. } | Completion::EpollReady => {}
            }
        }
        // As the worker does: every buffer of the turn goes back after its bytes are handled.
        for buffer in taken {
            ring.recycle(buffer);
        }
        ring.restore_completions(completions);
    }
    assert_eq!(received, [BYTES_EACH; CONNECTIONS], "every byte of every connection arrived");
    assert!(ring.buffer_shortages > 0, "the pool of {POOL} buffers never ran out: the test proves nothing");
    drop(ring);
    // SAFETY: our own descriptor, no longer used.
    unsafe { libc::close(epoll) };
}
