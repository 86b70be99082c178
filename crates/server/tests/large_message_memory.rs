//! What one large message costs `wsbench serve` in memory it has to fill, counted instead of
//! timed: this test binary counts every byte of heap memory the process asks for (a counting
//! `#[global_allocator]`: new blocks and the growth of reallocated ones), echoes 64 MiB
//! messages through a real server started on port 0 in this process, and checks that the
//! server asked for at most one message's worth. Every such byte is filled by a copy (and,
//! for a buffer this large, first faulted in page by page by the kernel), so a receive path
//! that moves the message from buffer to buffer (reassembly, then the echo frame, then the
//! output kept for a slow socket) shows as two or three times the message here, however fast
//! the machine is.
//!
//! The test's own side allocates nothing between the two counts: the frame is built, the
//! receive buffer sized and the writer thread started before the first one.

mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};

use support::connect;
use wsbench_proto::{OpCode, write_frame};
use wsbench_server::{ServeConfig, start};

/// Counts the bytes of memory the process asks the allocator for.
struct Counting;

static REQUESTED: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        REQUESTED.fetch_add(layout.size() as u64, Ordering::Relaxed);
        // SAFETY: the caller's contract is passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract is passed on.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        REQUESTED.fetch_add(layout.size() as u64, Ordering::Relaxed);
        // SAFETY: the caller's contract is passed on.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // Only the growth: moving the old bytes may be a remap rather than a copy.
        REQUESTED.fetch_add(new_size.saturating_sub(layout.size()) as u64, Ordering::Relaxed);
        // SAFETY: the caller's contract is passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const MESSAGE: usize = 64 * 1024 * 1024;

/// Echoes one `opcode` message of `payload`, sent as `frames` frames, on `stream` and returns
/// how many bytes of memory the process asked for meanwhile.
fn requested_for_echo(
    stream: &mut std::net::TcpStream,
    opcode: OpCode,
    payload: &[u8],
    frames: usize,
) -> u64 {
    let mut frame = Vec::new();
    let pieces = payload.chunks(payload.len().div_ceil(frames));
    let last = pieces.len() - 1;
    for (i, piece) in pieces.enumerate() {
        let opcode = if i == 0 { opcode } else { OpCode::Continuation };
        write_frame(&mut frame, i == last, opcode, Some([0x5a, 0x13, 0xc7, 0x81]), piece);
    }
    let mut expected = Vec::new();
    write_frame(&mut expected, true, opcode, None, payload);
    let mut echo = vec![0u8; expected.len()];
    let start_line = Arc::new(Barrier::new(2));
    let mut writer = stream.try_clone().unwrap();
    let go = start_line.clone();
    let sender = std::thread::spawn(move || {
        go.wait();
        writer.write_all(&frame).unwrap();
        frame
    });
    let before = REQUESTED.load(Ordering::Relaxed);
    start_line.wait();
    stream.read_exact(&mut echo).unwrap();
    let requested = REQUESTED.load(Ordering::Relaxed) - before;
    drop(sender.join().unwrap());
    assert!(echo == expected, "the echo is the message, unmasked, in one unmasked frame");
    requested
}

/// A text message is reassembled (its UTF-8 is checked whole before it is echoed): one
/// message's buffer, and none for the next, which reuses it. A binary one is echoed as it
/// arrives: no buffer for it at all. A fragmented one is reassembled in the buffer kept from
/// before, which then becomes its echo: nothing new either.
#[test]
fn echoing_a_64_mib_message_asks_for_at_most_one_message_of_memory() {
    let config = ServeConfig { port: 0, ..ServeConfig::default() };
    let server = start(&config).unwrap();
    let mut stream = connect(server.endpoints.websocket);
    let payload: Vec<u8> = (0..MESSAGE).map(|i| b' ' + (i % 95) as u8).collect();
    // The small buffers a read or a write may take on the way.
    let small = MESSAGE as u64 / 8;
    for (opcode, frames, allowed, what) in [
        (OpCode::Text, 1, MESSAGE as u64 + small, "a text message: one buffer"),
        (OpCode::Text, 1, small, "the next text message: the same buffer again"),
        (OpCode::Binary, 1, small, "a binary message: no buffer for it"),
        (OpCode::Binary, 4, small, "a binary message in 4 frames: the same buffer again, as its echo"),
    ] {
        let requested = requested_for_echo(&mut stream, opcode, &payload, frames);
        assert!(
            requested <= allowed,
            "{what}: echoing one {MESSAGE}-byte message asked for {requested} bytes of memory \
             ({:.2} × the message; at most {allowed} expected): the message is copied from \
             buffer to buffer",
            requested as f64 / MESSAGE as f64
        );
        eprintln!("{what}: {:.3} × the message", requested as f64 / MESSAGE as f64);
    }
    server.shutdown_handle().shutdown();
    server.wait().unwrap();
}
