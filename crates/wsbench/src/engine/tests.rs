//! A run of hours in a few seconds of test: what a worker and the coordinator keep for a
//! whole run (the echo workload and its connections, the recorder, the live board, the
//! timeline) driven through simulated seconds in the order the worker drives them, with
//! the bursts a busy machine causes: the server stopped for a few seconds and then every
//! reply at once, or the client stopped and then every send that fell due at once, the
//! stalls growing longer as the run goes on (a run of days meets longer ones than a run of
//! minutes). The heap this thread holds (the test allocator of `crate::test_heap` counts
//! it) is read once a simulated minute, away from the bursts, and must not grow with the
//! run's length beyond the one thing a run keeps per second, its timeline.

use std::collections::BTreeMap;
use std::io::Write;

use super::conn::{ClientConn, State};
use super::pacer::Pacer;
use super::recorder::Recorder;
use super::stream::ByteStream;
use super::timers::Timers;
use super::workload::{Cx, Message, Workload};
use super::*;
use crate::config::RunSettings;
use crate::test_heap::held_by_this_thread;
use wsbench_proto::{Decoder, Role};

/// Connections of the simulated run, each sending twice a second (as `--connections 1000
/// --rate 2000/s` does).
const CONNECTIONS: usize = 100;
const STEP_MS: u64 = 500;
const HOURS: u64 = 3;

/// Bytes the heap may grow per simulated second besides the timeline. Before the
/// connections' queues gave back the room bursts took, it grew 9.3 B/s here (100
/// connections), as each connection kept what its longest stall had needed.
const BESIDES_TIMELINE_BYTES_PER_SECOND: f64 = 1.0;

/// The server (or the client) stopped from second `at_s` for `secs` seconds.
#[derive(Debug, Clone, Copy)]
struct Stall {
    at_s: u64,
    secs: u64,
    server: bool,
}

/// Every five minutes a stall, of the server and of the client in turn, from 1 s at the
/// start to 8 s at the end; each starts 5 s into a minute and is over long before the next
/// minute's reading.
fn stalls() -> Vec<Stall> {
    let count = HOURS * 12;
    (1..count).map(|n| Stall { at_s: n * 300 + 5, secs: 1 + n * 8 / count, server: n % 2 == 0 }).collect()
}

/// One worker's share of the run and the coordinator's timeline, driven by hand.
struct Run {
    control: Arc<Control>,
    workload: Box<dyn Workload>,
    rec: Recorder,
    pacer: Pacer,
    timers: Timers,
    conns: Vec<ClientConn>,
    /// Per connection: when its next send falls due (ms), requests sent and answered.
    next_due_ms: Vec<u64>,
    sent: Vec<u64>,
    answered: Vec<u64>,
    kept: Kept,
    wire: Vec<u8>,
    reply: Vec<u8>,
}

impl Run {
    fn new() -> Run {
        let settings = RunSettings {
            target: Some("ws://127.0.0.1:9/".to_owned()),
            connections: Some(CONNECTIONS as u64),
            rate: Some(format!("{}/s", CONNECTIONS as u64 * 1000 / STEP_MS)),
            duration: Some(format!("{HOURS}h")),
            ..RunSettings::default()
        };
        let load = settings.validate().expect("valid settings").load;
        let control = Arc::new(Control::new());
        control.live.expect_workers(1);
        let start = control.start;
        let interval = Duration::from_millis(STEP_MS);
        let indexes = (0..CONNECTIONS as u64).collect();
        let mut run = Run {
            workload: crate::scenario::plan_of(&load).workload(&(0..CONNECTIONS as u64).collect::<Vec<_>>()),
            rec: Recorder::new(control.clone(), 0, true),
            pacer: Pacer::new(start, None, Some(interval), load.connect_timeout, CONNECTIONS as u64, indexes),
            timers: Timers::default(),
            conns: Vec::new(),
            next_due_ms: (0..CONNECTIONS as u64).map(|i| i * STEP_MS / CONNECTIONS as u64).collect(),
            sent: vec![0; CONNECTIONS],
            answered: vec![0; CONNECTIONS],
            kept: Kept { seconds: Vec::new(), stages: Vec::new() },
            wire: Vec::new(),
            reply: Vec::new(),
            control,
        };
        for slot in 0..CONNECTIONS {
            let stream = ByteStream::Carried { carrier: 0, stream: slot };
            let decoder = Decoder::new(Role::Client, load.max_message);
            let mut conn = ClientConn::new(stream, slot as u64, String::new(), decoder, start);
            (conn.state, conn.slot) = (State::Open, slot);
            let mut cx = Cx { rec: &mut run.rec, pacer: &mut run.pacer, timers: &mut run.timers };
            run.workload.on_open(&mut cx, &mut conn, start);
            run.conns.push(conn);
        }
        run
    }

    /// The worker's turn at `ms` into the run: its second's work when a second began (and
    /// the coordinator's), the replies the server sent since the last turn unless it is
    /// stopped, then every send that fell due (each taken by the socket at once).
    fn turn(&mut self, ms: u64, server_stopped: bool) {
        let now = self.control.start + Duration::from_millis(ms);
        let awaiting = self.workload.awaiting(now);
        if self.rec.tick(now, CONNECTIONS as u64, awaiting, BTreeMap::new) {
            self.workload.each_second(now);
            for conn in &mut self.conns {
                let mut cx = Cx { rec: &mut self.rec, pacer: &mut self.pacer, timers: &mut self.timers };
                self.workload.expire_requests(&mut cx, conn, now);
            }
            self.kept.take(&self.control.live);
        }
        for slot in 0..CONNECTIONS {
            let conn = &mut self.conns[slot];
            let mut cx = Cx { rec: &mut self.rec, pacer: &mut self.pacer, timers: &mut self.timers };
            while !server_stopped && self.answered[slot] < self.sent[slot] {
                self.reply.clear();
                write!(self.reply, "{{\"seq\":{}}}", self.answered[slot]).unwrap();
                self.workload.on_message(&mut cx, conn, Message::Whole(&self.reply), now);
                self.answered[slot] += 1;
            }
            while self.next_due_ms[slot] <= ms {
                let due = self.control.start + Duration::from_millis(self.next_due_ms[slot]);
                self.workload.on_due(&mut cx, conn, due, now);
                self.wire.clear();
                conn.take_pending(self.workload.batch(), &mut self.wire);
                conn.ledger.send_done();
                conn.ledger.take_written();
                self.next_due_ms[slot] += STEP_MS;
                self.sent[slot] += 1;
            }
        }
    }

    /// Heap bytes the timeline holds.
    fn timeline_bytes(&self) -> i64 {
        (self.kept.seconds.capacity() * size_of::<TimelineSecond>()) as i64
    }
}

/// Least-squares slope of `(x, y)`.
fn slope(points: &[(f64, f64)]) -> f64 {
    let n = points.len() as f64;
    let (sx, sy) = points.iter().fold((0.0, 0.0), |(sx, sy), (x, y)| (sx + x, sy + y));
    let (sxx, sxy) = points.iter().fold((0.0, 0.0), |(a, b), (x, y)| (a + x * x, b + x * y));
    (n * sxy - sx * sy) / (n * sxx - sx * sx)
}

#[test]
fn hours_of_bursts_leave_the_heap_where_it_was_but_for_the_timeline() {
    let mut run = Run::new();
    let stalls = stalls();
    let stopped = |second: u64, server: bool| {
        stalls.iter().any(|s| s.server == server && (s.at_s..s.at_s + s.secs).contains(&second))
    };
    // (second, heap held besides the timeline) once a minute from minute 5 on.
    let mut readings = Vec::new();
    for step in 0..HOURS * 3600 * 1000 / STEP_MS {
        let ms = step * STEP_MS;
        if stopped(ms / 1000, false) {
            continue;
        }
        run.turn(ms, stopped(ms / 1000, true));
        if ms.is_multiple_of(60_000) && ms >= 300_000 {
            readings.push((ms as f64 / 1000.0, (held_by_this_thread() - run.timeline_bytes()) as f64));
        }
    }
    let growth = slope(&readings);
    let (first, last) = (readings[0].1, readings[readings.len() - 1].1);
    assert!(
        growth <= BESIDES_TIMELINE_BYTES_PER_SECOND,
        "the heap besides the timeline grew {growth:.2} B per simulated second ({first} B at minute 5, \
         {last} B after {HOURS} h)"
    );
    eprintln!("heap besides the timeline: {first} B at minute 5, {last} B after {HOURS} h: {growth:.3} B/s");
    // The timeline keeps one entry a second, and a vector's doubling at most as much again.
    let seconds = run.kept.seconds.len();
    assert!(seconds as u64 >= HOURS * 3600 - 2, "{seconds} seconds kept");
    assert!(run.timeline_bytes() as usize <= 2 * seconds * size_of::<TimelineSecond>());
}
