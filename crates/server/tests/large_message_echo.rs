//! A binary message of one frame is echoed by `wsbench serve` as it arrives, over a real
//! socket: checked here where that could go wrong. A peer that stops reading its echo must
//! stop the server reading the message (the server holds no buffer for it, so reading on
//! would only pile the echo up in memory); the echo that then comes out is the message, whole
//! and in order; and a server stopping while such an echo is half-written ends the connection
//! instead of writing a close frame into the middle of the echo.

mod support;

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use support::connect;
use wsbench_proto::{OpCode, write_frame};
use wsbench_server::{ServeConfig, start};

/// Writes `frame` from a thread in 64 KiB pieces, counting what the socket took; stops at the
/// first error (the server closing).
fn write_counting(
    stream: &TcpStream,
    frame: Arc<Vec<u8>>,
    taken: Arc<AtomicUsize>,
) -> std::thread::JoinHandle<()> {
    let mut writer = stream.try_clone().unwrap();
    std::thread::spawn(move || {
        for piece in frame.chunks(64 * 1024) {
            if writer.write_all(piece).is_err() {
                return;
            }
            taken.fetch_add(piece.len(), Ordering::Relaxed);
        }
    })
}

/// Waits until `taken` has not moved for a second (the writer is blocked), at most a minute.
fn until_still(taken: &AtomicUsize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = taken.load(Ordering::Relaxed);
    loop {
        std::thread::sleep(Duration::from_secs(1));
        let now = taken.load(Ordering::Relaxed);
        if now == last || Instant::now() > deadline {
            return now;
        }
        last = now;
    }
}

#[test]
fn a_peer_not_reading_its_echo_stops_the_read_and_then_gets_the_whole_echo() {
    const MESSAGE: usize = 96 * 1024 * 1024;
    let server = start(&ServeConfig { port: 0, ..ServeConfig::default() }).unwrap();
    let mut stream = connect(server.endpoints.websocket);
    let payload: Vec<u8> = (0..MESSAGE).map(|i| (i % 251) as u8).collect();
    let mut frame = Vec::new();
    write_frame(&mut frame, true, OpCode::Binary, Some([0x11, 0x22, 0x33, 0x44]), &payload);
    let taken = Arc::new(AtomicUsize::new(0));
    let writer = write_counting(&stream, Arc::new(frame), taken.clone());
    let stuck_at = until_still(&taken);
    // What the two sockets' buffers hold, plus the server's bounded output: far below the
    // message (the kernel's buffers grow to a few MiB each at most).
    assert!(
        stuck_at < MESSAGE / 2,
        "the server read {stuck_at} bytes of a {MESSAGE}-byte message whose echo nobody read"
    );
    let mut expected = Vec::new();
    write_frame(&mut expected, true, OpCode::Binary, None, &payload);
    drop(payload);
    let mut echo = vec![0u8; expected.len()];
    stream.read_exact(&mut echo).unwrap();
    writer.join().unwrap();
    assert!(echo == expected, "the echo is the message, unmasked, in one frame");
    server.shutdown_handle().shutdown();
    server.wait().unwrap();
}

#[test]
fn a_server_stopping_during_a_half_written_echo_ends_the_connection_without_a_close_frame_inside_it() {
    const MESSAGE: usize = 64 * 1024 * 1024;
    let server = start(&ServeConfig { port: 0, ..ServeConfig::default() }).unwrap();
    let mut stream = connect(server.endpoints.websocket);
    let mut frame = Vec::new();
    write_frame(&mut frame, true, OpCode::Binary, Some([1, 2, 3, 4]), &vec![7u8; MESSAGE]);
    // Only the first quarter of the message is ever sent: its echo stays half-written.
    frame.truncate(MESSAGE / 4);
    let taken = Arc::new(AtomicUsize::new(0));
    let writer = write_counting(&stream, Arc::new(frame), taken);
    let mut head = [0u8; 10];
    stream.read_exact(&mut head).unwrap();
    assert_eq!(head[..2], [0x82, 127], "the echo's header, announcing the whole message");
    let handle = server.shutdown_handle();
    handle.shutdown();
    server.wait().unwrap();
    let mut rest = Vec::new();
    match stream.read_to_end(&mut rest) {
        Ok(_) => {}
        Err(e) if e.kind() == ErrorKind::ConnectionReset => {}
        Err(e) => panic!("reading the rest of the echo: {e}"),
    }
    assert!(
        rest.len() + 10 < MESSAGE / 4,
        "no more than what arrived was echoed ({} bytes after the header)",
        rest.len()
    );
    assert!(rest.iter().all(|&b| b == 7), "the echo's payload only: no close frame inside it");
    writer.join().unwrap();
}
