//! Unit tests of a connection's writes on real loopback sockets: batches whole and in order,
//! a batch cut by a full socket finished before anything else, a large frame written from
//! its shared tail.

use std::io::Read;
use std::net::TcpListener;
use std::time::Instant;

use wsbench_proto::{Decoder, Role};

use super::*;
use wsbench_proto::{OpCode, write_frame};

/// A connection whose socket is connected to a plain std peer.
fn connected() -> (ClientConn, std::net::TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    client.set_nonblocking(true).unwrap();
    let (peer, _) = listener.accept().unwrap();
    // Small buffers, so that a few hundred kB fill the socket.
    small_buffer(&client, libc::SO_SNDBUF);
    small_buffer(&peer, libc::SO_RCVBUF);
    let transport = wsbench_transport::Transport::Plain(mio::net::TcpStream::from_std(client)).into();
    let conn =
        ClientConn::new(transport, 0, String::new(), Decoder::new(Role::Client, 1 << 20), Instant::now());
    (conn, peer)
}

#[test]
fn an_open_connection_keeps_no_buffer_of_its_handshake() {
    let (mut conn, mut peer) = connected();
    conn.key = "dGhlIHNhbXBsZSBub25jZQ==".to_owned();
    conn.output.extend_from_slice(&[b'x'; 200]);
    assert!(conn.flush(None).unwrap(), "the request is written whole");
    let mut request = [0u8; 200];
    peer.read_exact(&mut request).unwrap();
    assert!(conn.output.capacity() >= 200);
    conn.release_handshake();
    assert_eq!((conn.output.capacity(), conn.key.capacity()), (0, 0));
    // Nor does it owe anything a deferred-request queue.
    assert!(conn.deferred.queue.is_none());
}

fn small_buffer(socket: &std::net::TcpStream, option: libc::c_int) {
    use std::os::fd::AsRawFd;
    let bytes: libc::c_int = 16 * 1024;
    // SAFETY: a valid socket and a c_int option value of the size given.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            option,
            (&bytes as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0);
}

/// Reads from `peer` until `want` bytes came, flushing `conn` whenever the peer has
/// drained what was written (the socket buffer was full).
fn drain(conn: &mut ClientConn, peer: &mut std::net::TcpStream, batch: &Batch, want: usize) -> Vec<u8> {
    let mut got = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    while got.len() < want {
        let n = peer.read(&mut buf).unwrap();
        assert!(n > 0, "the peer saw the end of the stream after {} bytes", got.len());
        got.extend_from_slice(&buf[..n]);
        conn.flush(Some(batch)).unwrap();
    }
    got
}

#[test]
fn queued_batches_go_out_whole_and_in_order_in_one_write() {
    let (mut conn, mut peer) = connected();
    let bytes: Vec<u8> = (0..26u8).collect();
    let batch = Batch::new(&bytes, 1, 20, [0; 4], None);
    conn.batches_pending = 200;
    assert!(conn.flush(Some(&batch)).unwrap(), "200 small batches fit the socket buffer");
    assert_eq!(conn.batches_pending, 0);
    let got = drain(&mut conn, &mut peer, &batch, 200 * batch.len());
    assert_eq!(got, bytes.repeat(200));
    assert_eq!(conn.ledger.take_written().messages, 200, "what was written counts as sent");
}

#[test]
fn a_batch_cut_by_a_full_socket_is_finished_before_anything_else() {
    let (mut conn, mut peer) = connected();
    // Batches of 100,003 bytes: the socket buffer fills in the middle of one.
    let bytes: Vec<u8> = (0..100_003u32).map(|i| (i % 251) as u8).collect();
    let batch = Batch::new(&bytes, 1, 100_000, [0; 4], None);
    conn.batches_pending = 40;
    assert!(!conn.flush(Some(&batch)).unwrap(), "4 MB do not fit the socket buffers");
    let written = conn.ledger.take_written().messages;
    assert!(written < 40, "only the batches the socket took count as sent: {written}");
    assert!(conn.batches_pending > 0);
    // A control frame queued meanwhile goes out after the batch being written, not inside it.
    conn.output.extend_from_slice(b"PONG");
    let want = 40 * batch.len() + 4;
    let got = drain(&mut conn, &mut peer, &batch, want);
    let sent = conn.batches_pending;
    assert_eq!(sent, 0);
    let whole: usize = got.len() - 4;
    let pong_at = got.windows(4).position(|w| w == b"PONG").unwrap();
    assert_eq!(pong_at % batch.len(), 0, "the pong went out between two batches");
    let mut without_pong = got.clone();
    without_pong.drain(pong_at..pong_at + 4);
    assert_eq!(whole, without_pong.len());
    assert_eq!(without_pong, bytes.repeat(40));
}

/// A large frame of `payload_len` bytes (its first 8 for the number, unmasked with a zero
/// key), as the worker's batch holds it.
fn large_batch(payload_len: usize) -> (Batch, usize) {
    let payload: Vec<u8> = (0..payload_len).map(|i| (i % 253) as u8).collect();
    let mut frame = Vec::new();
    write_frame(&mut frame, true, OpCode::Binary, Some([0; 4]), &payload);
    let header = frame.len() - payload.len();
    (Batch::new(&frame, 1, payload_len, [0; 4], Some(header)), header)
}

/// The numbers and payloads past them of the frames in `bytes`, as a server reads them.
fn frames_read(mut bytes: Vec<u8>) -> Vec<(u64, Vec<u8>)> {
    let mut decoder = Decoder::new(Role::Server, 1 << 30);
    let mut frames = Vec::new();
    let mut message = Vec::new();
    while let Some(chunk) = decoder.decode(&mut bytes).unwrap() {
        message.extend_from_slice(&bytes[chunk.payload.clone()]);
        bytes.drain(..chunk.consumed);
        if chunk.last {
            let number = crate::engine::batch::decode_number(message[..8].try_into().unwrap()).unwrap();
            frames.push((number, message.split_off(8)));
            message.clear();
        }
    }
    assert!(bytes.is_empty(), "{} bytes left over", bytes.len());
    frames
}

#[test]
fn large_frames_go_out_numbered_and_whole_through_a_full_socket() {
    let (mut conn, mut peer) = connected();
    let (batch, _) = large_batch(300_000);
    assert!(!batch.tail().is_empty(), "a large frame shares its bytes past the number");
    assert!(conn.queue_batch(&batch, 5) && conn.queue_batch(&batch, 6) && conn.queue_batch(&batch, 7));
    assert!(!conn.flush(Some(&batch)).unwrap(), "900 kB do not fit the socket buffers");
    let got = drain(&mut conn, &mut peer, &batch, 3 * batch.len());
    let expected: Vec<u8> = (8..300_000).map(|i| (i % 253) as u8).collect();
    let frames = frames_read(got);
    assert_eq!(frames.iter().map(|(number, _)| *number).collect::<Vec<_>>(), [5, 6, 7]);
    assert!(frames.iter().all(|(_, rest)| *rest == expected), "every frame carries the payload");
}

#[test]
fn a_send_from_the_shared_tail_carries_the_same_bytes_as_a_copy() {
    let (batch, _) = large_batch(100_000);
    let (mut copied, _) = connected();
    let (mut shared, _) = connected();
    for conn in [&mut copied, &mut shared] {
        conn.output.extend_from_slice(b"PONG");
        assert!(conn.queue_batch(&batch, 9) && conn.queue_batch(&batch, 10));
    }
    let mut by_copy = Vec::new();
    copied.take_pending(Some(&batch), &mut by_copy);
    let mut by_share = Vec::new();
    let tail = shared.take_pending_shared(Some(&batch), &mut by_share).expect("the tail is shared");
    assert_eq!(by_share.len() + tail.len(), by_copy.len(), "one frame per send");
    by_share.extend_from_slice(&tail);
    assert!(by_share == by_copy);
    assert_eq!((copied.batches_pending, shared.batches_pending), (1, 1), "the next frame waits");
    assert_eq!(frames_read(by_copy[4..].to_vec()).len(), 1);
}
