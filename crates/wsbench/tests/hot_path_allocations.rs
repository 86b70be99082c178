//! Proof that the engine's per-message path allocates nothing: this test binary counts every
//! heap allocation (a counting `#[global_allocator]`), runs the echo engine in-process against
//! a real `wsbench serve` started on port 0, and reads the count at moments inside the
//! measured window. A per-message allocation would add at least one allocation per round
//! trip; what remains (the live board's merged second, the coordinator's list of finished
//! seconds) depends on the seconds, not on the messages.
//!
//! Each run checks the backend its worker really ran on: where io_uring is refused the
//! engine falls back to epoll, and the uring test then fails instead of measuring epoll.
//!
//! The sampling closure runs on this thread while the workers run: it must itself allocate
//! nothing (it writes into preallocated arrays).

mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use support::Server;
use wsbench::config::RunSettings;
use wsbench::engine::{self, Control, Job, LiveSeconds};

/// Counts allocations (and reallocations, which may move and so cost as much) of the
/// whole process.
struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract is passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract is passed on.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract is passed on.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract is passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations allowed per worker-second of the measured window: the live board's merged
/// second and the coordinator's list of seconds, with room to spare. A per-message allocation costs
/// thousands per second here.
const PER_WORKER_SECOND: u64 = 50;

/// The count is the whole process's: the tests take turns.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// One sample: µs since the run's start, allocations so far.
#[derive(Clone, Copy, Default)]
struct Sample {
    at_us: u64,
    allocations: u64,
}

/// What one in-process run saw inside its measured window.
struct Window {
    allocations: u64,
    seconds: f64,
    echoes: u64,
}

/// Runs a closed-loop echo of `connections` against `url` for `duration`, one worker, in
/// this process; the allocations and echoes between the first and last sample that fell
/// inside the measured window.
fn measured_window(url: &str, io: &str, connections: u64, duration: &str) -> Window {
    let settings = RunSettings {
        target: Some(url.to_owned()),
        connections: Some(connections),
        duration: Some(duration.to_owned()),
        warmup: Some("500ms".to_owned()),
        payload: Some("bytes:20".to_owned()),
        binary: true,
        io: Some(io.to_owned()),
        ..RunSettings::default()
    };
    let config = settings.validate().expect("valid settings");
    let plan = wsbench::scenario::plan_of(&config.load);
    let job = Job::new(config.load, config.target.expect("a target"), plan).expect("job");
    let mut samples = vec![Sample::default(); 4096];
    let mut taken = 0;
    let mut window = (u64::MAX, u64::MAX);
    let interrupt = AtomicBool::new(false);
    let mut progress = |control: &Control, _seen: &LiveSeconds| {
        if taken < samples.len() {
            let at_us = control.start.elapsed().as_micros() as u64;
            samples[taken] = Sample { at_us, allocations: ALLOCATIONS.load(Ordering::Relaxed) };
            taken += 1;
            window = control.window();
        }
    };
    let output = engine::run(job, &[None], &interrupt, &mut progress).expect("engine run");
    // Where the kernel refuses io_uring the worker falls back to epoll: a uring test that
    // measured epoll has measured nothing it claims.
    let ran: Vec<&str> = output.workers.iter().map(|w| w.io.as_str()).collect();
    assert_eq!(ran, [io], "asked for --io {io} with one worker; the workers ran on {ran:?}");
    let (start, end) = window;
    let inside: Vec<Sample> =
        samples[..taken].iter().copied().filter(|s| s.at_us >= start && s.at_us <= end).collect();
    let (first, last) = (inside.first().expect("a sample in the window"), inside.last().unwrap());
    assert!(inside.len() >= 5, "{} samples in the window", inside.len());
    // Echoes in the whole seconds the samples span (the engine counts them per second).
    let (from_s, to_s) = (first.at_us / 1_000_000, last.at_us / 1_000_000);
    let echoes: u64 = output
        .metrics
        .timeline
        .iter()
        .filter(|i| i.second > from_s && i.second < to_s)
        .map(|i| i.exchanges)
        .sum();
    Window {
        allocations: last.allocations - first.allocations,
        seconds: (last.at_us - first.at_us) as f64 / 1e6,
        echoes,
    }
}

#[test]
fn the_echo_hot_path_allocates_nothing_per_message_on_epoll() {
    assert_no_allocation_per_message("epoll");
}

#[test]
fn the_echo_hot_path_allocates_nothing_per_message_on_uring() {
    assert_no_allocation_per_message("uring");
}

fn assert_no_allocation_per_message(io: &str) {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let server = Server::spawn(&[]);
    let url = format!("ws://{}/", server.addr);
    let short = measured_window(&url, io, 50, "2s");
    let long = measured_window(&url, io, 50, "4s");
    for window in [&short, &long] {
        let budget = (window.seconds.ceil() as u64 + 1) * PER_WORKER_SECOND;
        assert!(
            window.allocations <= budget,
            "{io}: {} allocations in {:.1} s of the measured window ({} echoes): more than {budget}",
            window.allocations,
            window.seconds,
            window.echoes
        );
    }
    // The test means something only if the messages outnumber the budget many times over.
    let budget = (long.seconds.ceil() as u64 + 1) * PER_WORKER_SECOND;
    assert!(long.echoes > 20 * budget, "{io}: {} echoes", long.echoes);
    // Twice the messages, not twice plus the messages' worth of allocations.
    assert!(
        long.allocations <= short.allocations + 3 * PER_WORKER_SECOND,
        "{io}: {} allocations for {} echoes, {} for {}",
        long.allocations,
        long.echoes,
        short.allocations,
        short.echoes
    );
    eprintln!(
        "{io}: {} allocations for {} echoes ({:.1} s), {} for {} ({:.1} s)",
        short.allocations, short.echoes, short.seconds, long.allocations, long.echoes, long.seconds
    );
}
