//! Unit tests of the ring on real loopback sockets: a buffer pool smaller than the
//! connections receiving at once runs out, and every byte still arrives, in order; a ring that
//! times arrivals dates each receive by the kernel's stamp; a send with shared bytes arrives
//! after its staging, whole.

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use super::{Completion, Ring};

/// The byte at `offset` of what connection `key` is sent.
fn byte(key: usize, offset: usize) -> u8 {
    ((key * 7 + offset) % 251) as u8
}

/// A loopback connection: its client side (non-blocking, for the ring) and its server side.
fn connected() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let server = listener.accept().unwrap().0;
    client.set_nonblocking(true).unwrap();
    (client, server)
}

/// An epoll instance for a ring to watch (the caller closes it).
fn epoll_instance() -> i32 {
    // SAFETY: epoll_create1 has no preconditions; the caller closes the descriptor.
    let epoll = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    assert!(epoll >= 0);
    epoll
}

/// Turns the ring until a completion `wanted` picks comes, for `limit` at most; whether one
/// came.
fn wait_for(ring: &mut Ring, limit: Duration, wanted: impl Fn(&Completion) -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        ring.submit_and_wait(Duration::from_millis(10), false).unwrap();
        let completions = ring.take_completions();
        let found = completions.iter().any(&wanted);
        ring.restore_completions(completions);
        if found {
            return true;
        }
    }
    false
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
    let epoll = epoll_instance();
    let mut ring = Ring::new(epoll, CONNECTIONS, POOL, 20).expect("io_uring is available here");
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
        ring.submit_and_wait(Duration::from_millis(10), false).unwrap();
        let completions = ring.take_completions();
        let mut taken = Vec::new();
        for completion in &completions {
            match *completion {
                Completion::Received { key, buffer, offset, len, stamp } => {
                    assert_eq!(
                        (offset, stamp),
                        (0, None),
                        "a plain ring's receive has no header and no stamp"
                    );
                    // SAFETY: a Received buffer, recycled only after this slice's last use.
                    let bytes = unsafe { ring.received(buffer, offset, len) };
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

/// A ring that times arrivals: what a peer sends arrives with the kernel's stamp, dated
/// between the send and the reading, even when the ring is read long after the bytes came;
/// a deferred wait lasts its timeout although data is there; the end of the stream still
/// ends the connection.
#[test]
fn a_ring_with_arrival_times_dates_each_receive_by_the_kernel_stamp() {
    let _on = crate::engine::rx_time::stamping_on();
    let (client, mut server) = connected();
    let epoll = epoll_instance();
    let mut ring = Ring::new(epoll, 1, 4, 20).expect("io_uring is available here").with_arrival_times();
    ring.adopt(0, client.as_raw_fd()).unwrap();
    assert!(!ring.times_arrivals(), "no receive has shown a stamp yet");
    // A first receive shows that stamps come: only then may a wait be deferred.
    server.write_all(b"first").unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !ring.times_arrivals() && Instant::now() < deadline {
        ring.submit_and_wait(Duration::from_millis(10), false).unwrap();
        let completions = ring.take_completions();
        for completion in &completions {
            if let Completion::Received { buffer, .. } = *completion {
                ring.recycle(buffer);
            }
        }
        ring.restore_completions(completions);
    }
    assert!(ring.times_arrivals(), "the first receive came without its stamp");
    let before = Instant::now();
    server.write_all(b"stamped").unwrap();
    let sent = Instant::now();
    // The bytes sit in the socket for 50 ms before the ring is read.
    std::thread::sleep(Duration::from_millis(50));
    let waited = Instant::now();
    ring.submit_and_wait(Duration::from_millis(30), true).unwrap();
    assert!(waited.elapsed() >= Duration::from_millis(25), "a deferred wait ended before its timeout");
    let completions = ring.take_completions();
    let received: Vec<_> = completions
        .iter()
        .filter_map(|c| match *c {
            Completion::Received { key, buffer, offset, len, stamp } => {
                Some((key, buffer, offset, len, stamp))
            }
            _ => None,
        })
        .collect();
    assert_eq!(received.len(), 1, "{completions:?}");
    let (key, buffer, offset, len, stamp) = received[0];
    // SAFETY: a Received buffer, recycled right after.
    assert_eq!((key, unsafe { ring.received(buffer, offset, len) }), (0, &mut b"stamped".to_vec()[..]));
    ring.recycle(buffer);
    ring.restore_completions(completions);
    let arrived = crate::engine::rx_time::Clocks::now().instant_of(stamp.expect("the receive has its stamp"));
    let slack = Duration::from_millis(2);
    assert!(
        arrived + slack >= before && arrived <= sent + slack,
        "arrived {:?} after the send",
        arrived - before
    );
    assert!(ring.times_arrivals());
    // The end of the stream (a recvmsg with no payload) ends the connection.
    drop(server);
    let ended = wait_for(&mut ring, Duration::from_secs(5), |c| matches!(c, Completion::Ended { key: 0 }));
    assert!(ended, "the end of the stream was not reported");
    ring.forget(0);
    drop(ring);
    // SAFETY: our own descriptor, no longer used.
    unsafe { libc::close(epoll) };
}

/// A burst's send makes a connection's staging buffer large: its room is given back once
/// the send is done, never while the kernel still reads it, and once only.
#[test]
fn a_burst_s_staging_buffer_gives_its_room_back_once_the_send_is_done() {
    const BURST: usize = 512 * 1024;
    let (client, server) = connected();
    // The peer reads the burst whole, so that the send can finish.
    let reader = std::thread::spawn(move || {
        let mut bytes = vec![0u8; BURST];
        std::io::Read::read_exact(&mut &server, &mut bytes).map(|()| bytes.iter().all(|&b| b == 7))
    });
    let epoll = epoll_instance();
    let mut ring = Ring::new(epoll, 1, 4, 20).expect("io_uring is available here");
    ring.adopt(0, client.as_raw_fd()).unwrap();
    ring.send(0, |out| {
        out.resize(BURST, 7);
        None
    })
    .unwrap();
    let staging = |ring: &Ring| ring.slots[ring.by_key[0]].staging.capacity();
    assert!(!ring.give_back_room(0) && staging(&ring) >= BURST, "kept while the kernel reads it");
    let sent = wait_for(&mut ring, Duration::from_secs(20), |c| matches!(c, Completion::Sent { key: 0 }));
    assert!(sent, "the burst was not sent within 20 s");
    assert!(reader.join().unwrap().unwrap(), "the peer got the burst");
    assert!(ring.give_back_room(0), "given back once the send is done");
    assert!(staging(&ring) <= super::STAGING_FLOOR, "{} bytes kept", staging(&ring));
    assert!(!ring.give_back_room(0), "nothing more to give back");
    drop(ring);
    // SAFETY: our own descriptor, no longer used.
    unsafe { libc::close(epoll) };
}

/// A send of a staging buffer and shared bytes (a large frame's head, then its tail read
/// where it lies) arrives whole and in order, through a socket buffer too small to take it
/// in one piece, and holds the shared bytes only until it is done.
#[test]
fn a_send_with_shared_bytes_arrives_after_its_staging_whole_and_in_order() {
    const SHARED: usize = 3 << 20;
    let (client, server) = connected();
    let reader = std::thread::spawn(move || {
        let mut bytes = vec![0u8; 10 + SHARED];
        std::io::Read::read_exact(&mut &server, &mut bytes).map(|()| bytes)
    });
    let epoll = epoll_instance();
    let mut ring = Ring::new(epoll, 1, 4, 20).expect("io_uring is available here");
    ring.adopt(0, client.as_raw_fd()).unwrap();
    let shared: std::sync::Arc<[u8]> = (0..SHARED).map(|i| byte(1, i)).collect();
    ring.send(0, |out| {
        out.extend_from_slice(b"head bytes");
        Some(shared.clone())
    })
    .unwrap();
    let sent = wait_for(&mut ring, Duration::from_secs(20), |c| matches!(c, Completion::Sent { key: 0 }));
    assert!(sent, "the send did not finish within 20 s");
    let got = reader.join().unwrap().unwrap();
    assert_eq!(&got[..10], b"head bytes");
    assert!(got[10..] == shared[..], "the shared bytes arrived whole and in order after the head");
    assert_eq!(std::sync::Arc::strong_count(&shared), 1, "the ring let go of them once sent");
    drop(ring);
    // SAFETY: our own descriptor, no longer used.
    unsafe { libc::close(epoll) };
}

/// A ring for large messages receives in large buffers (each completion up to 64 KiB), one
/// for small messages in 4 KiB ones.
#[test]
fn a_ring_for_large_messages_receives_more_than_4_kib_at_a_time() {
    for (message_bytes, most) in [(20, 4096), (1 << 20, 64 * 1024)] {
        let (client, mut server) = connected();
        let epoll = epoll_instance();
        let mut ring = Ring::new(epoll, 1, 64, message_bytes).expect("io_uring is available here");
        ring.adopt(0, client.as_raw_fd()).unwrap();
        server.write_all(&vec![1u8; 256 * 1024]).unwrap();
        let (mut received, mut longest) = (0, 0);
        let deadline = Instant::now() + Duration::from_secs(20);
        while received < 256 * 1024 && Instant::now() < deadline {
            ring.submit_and_wait(Duration::from_millis(10), false).unwrap();
            let completions = ring.take_completions();
            for completion in &completions {
                if let Completion::Received { buffer, len, .. } = *completion {
                    (received, longest) = (received + len, longest.max(len));
                    ring.recycle(buffer);
                }
            }
            ring.restore_completions(completions);
        }
        assert_eq!(received, 256 * 1024, "everything arrived");
        assert!(longest <= most, "{longest} bytes in one buffer of {most}");
        assert!(longest > most / 2, "receives of up to {longest} bytes for messages of {message_bytes}");
        drop(ring);
        // SAFETY: our own descriptor, no longer used.
        unsafe { libc::close(epoll) };
    }
}

/// Runs of messages of 4 MiB or more receive in 256 KiB buffers, fewer of them, so that the
/// pool's memory stays what it is for 64 KiB ones.
#[test]
fn a_ring_for_huge_messages_has_fewer_larger_buffers_in_the_same_memory() {
    let epoll = epoll_instance();
    let mut memory = Vec::new();
    for (message_bytes, bytes) in
        [(20, 4096), (1 << 20, 64 * 1024), (16 << 20, 256 * 1024), (100_000_000, 256 * 1024)]
    {
        let ring =
            Ring::new(epoll, 1, super::POOL_BUFFERS, message_bytes).expect("io_uring is available here");
        assert_eq!(ring.buffers.buffer_bytes(), bytes, "buffers for messages of {message_bytes} bytes");
        memory.push(ring.buffers.memory_bytes());
    }
    assert_eq!(memory, [1 << 20, 16 << 20, 16 << 20, 16 << 20], "the pools' memory");
    // SAFETY: our own descriptor, no longer used.
    unsafe { libc::close(epoll) };
}
