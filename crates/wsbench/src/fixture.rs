//! Deterministic, realistic run outcomes for tests: the golden report files, the schema test
//! and the round-trip tests all build on them. Values come from a seeded integer generator
//! (no floating-point maths), so every platform records exactly the same histograms.
//! Not part of the public API.

use std::collections::BTreeMap;

use crate::metrics::{Counters, Interval, Metrics, TimelineSecond, record_us};
use crate::samples::{ClientMemory, MachineFacts, RunOutcome, ServerReport, ServerSample, WorkerCpu};
use crate::scenario::pubsub::section::{PubSubCounters, PubSubSection};
use crate::scenario::stream::section::{StreamCounters, StreamSection};
use crate::scenario::stream::window::Window;

/// SplitMix64: tiny, seeded, and the same everywhere.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..bound`.
    pub fn below(&mut self, bound: u64) -> u64 {
        self.next_u64() % bound.max(1)
    }

    /// A latency-like value around `median` µs: bell-shaped (sum of four uniforms) with a
    /// 1% tail up to 10× and a 0.1% tail up to 100×.
    pub fn latency_us(&mut self, median: u64) -> u64 {
        let spread = median / 2 + 1;
        let bell = (0..4).map(|_| self.below(spread)).sum::<u64>() / 2 + median / 2;
        let tail = self.below(1000);
        let value = match tail {
            0 => bell * (10 + self.below(90)),
            1..=10 => bell * (2 + self.below(8)),
            _ => bell,
        };
        value.max(1)
    }
}

/// `seconds` seconds of `samples / seconds` random latencies each, whole.
pub fn random_intervals(seed: u64, samples: u64, seconds: u64) -> Vec<Interval> {
    let mut rng = Rng::new(seed);
    (0..seconds)
        .map(|second| {
            let mut interval = Interval::new(second);
            interval.exchanges = samples / seconds.max(1);
            interval.connections_open = 100;
            for _ in 0..interval.exchanges {
                record_us(&mut interval.latency, rng.latency_us(2_000));
            }
            interval
        })
        .collect()
}

/// Metrics with `samples` random values in every histogram and a timeline of `seconds`.
pub fn random_metrics(seed: u64, samples: u64, seconds: u64) -> Metrics {
    let mut rng = Rng::new(seed);
    let mut metrics = Metrics::default();
    for _ in 0..samples {
        let value = rng.latency_us(2_000);
        record_us(&mut metrics.latency, value + rng.below(500));
        record_us(&mut metrics.latency_uncorrected, value);
        record_us(&mut metrics.connect, rng.latency_us(800));
        record_us(&mut metrics.send_lag, rng.below(300));
    }
    metrics.timeline = random_intervals(seed, samples, seconds).iter().map(TimelineSecond::of).collect();
    metrics.counters.messages_sent = samples + 7;
    metrics.counters.messages_received = samples;
    metrics.counters.messages_unanswered = 7;
    metrics.counters.closed_by_server.insert(1001, 3);
    metrics.counters.warmup_messages = 11;
    metrics
}

fn machine() -> MachineFacts {
    MachineFacts {
        cpu_model: "AMD EPYC 7B13".to_owned(),
        cores: 2,
        kernel: "Linux 6.1.0".to_owned(),
        hostname: "bench-1".to_owned(),
        wsbench_version: "0.1.0".to_owned(),
        open_files_limit: 1_048_576,
    }
}

/// Fills `metrics` the way a run at `rate` echoes per second for `seconds` (the first
/// `warmup` not measured) with latencies around `median_us` would.
fn simulate(
    rng: &mut Rng,
    metrics: &mut Metrics,
    seconds: u64,
    warmup: u64,
    rate: u64,
    median_us: u64,
    open: u64,
) -> u64 {
    // Each recorded value stands for `weight` round trips, to keep fixtures fast.
    let weight = 50;
    let mut measured = 0;
    for second in 0..seconds {
        let echoes = rate - rate / 50 + rng.below(rate / 25 + 1);
        let values: Vec<u64> = (0..echoes / weight).map(|_| rng.latency_us(median_us)).collect();
        if second >= warmup {
            for &value in &values {
                metrics.latency.saturating_record_n(value, weight);
                metrics.latency_uncorrected.saturating_record_n(value, weight);
            }
        }
        let mut interval = Interval::new(second);
        interval.exchanges = echoes;
        interval.connections_open = open;
        for &value in &values {
            interval.latency.saturating_record_n(value, weight);
        }
        *metrics.second(second) = TimelineSecond::of(&interval);
        if second >= warmup {
            measured += echoes / weight * weight;
        }
    }
    measured
}

fn config(scenario: &str, connections: u64, extra: serde_json::Value) -> serde_json::Value {
    let mut config = serde_json::json!({
        "scenario": scenario,
        "connections": connections,
        "duration_s": 30,
        "warmup_s": 5,
        "message_size": 32,
    });
    if let (Some(config), Some(extra)) = (config.as_object_mut(), extra.as_object()) {
        config.extend(extra.clone());
    }
    config
}

/// A clean closed-loop echo run against the built-in server, probed, not client-bound.
pub fn closed_loop() -> RunOutcome {
    let mut rng = Rng::new(1);
    let mut metrics = Metrics::default();
    let measured = simulate(&mut rng, &mut metrics, 35, 5, 52_300, 19_000, 1_000);
    for _ in 0..1_000 {
        record_us(&mut metrics.connect, rng.latency_us(1_200));
    }
    metrics.counters = Counters {
        connections_attempted: 1_000,
        connections_established: 1_000,
        messages_sent: measured + 1_000 + 5 * 52_300,
        messages_received: measured + 5 * 52_300,
        messages_unanswered: 1_000,
        bytes_sent: (measured + 1_000 + 5 * 52_300) * 38,
        bytes_received: (measured + 5 * 52_300) * 34,
        warmup_messages: 5 * 52_300,
        ..Counters::default()
    };
    let samples = (0..=140u64)
        .map(|i| ServerSample {
            t_ms: i * 250,
            rss_bytes: 12 * 1024 * 1024 + (i.min(8) * 4_800_000),
            cpu_seconds: 0.25 + i as f64 * 0.2,
            threads: 3,
            fds: 8 + i.min(8) * 125,
            // The machine's slab grows by 4,000 bytes per connection as they open.
            slab_bytes: 300 * 1024 * 1024 + i.min(8) * 500_000,
        })
        .collect();
    RunOutcome {
        scenario: "echo".to_owned(),
        target_url: "ws://127.0.0.1:9001/".to_owned(),
        target_builtin: true,
        config: config("echo", 1_000, serde_json::json!({ "in_flight": 1 })),
        started_at_unix_ms: 1_735_689_600_000,
        elapsed_secs: 35.0,
        measured_secs: 30.0,
        connect_phase_secs: 0.5,
        drain_secs: 0.0,
        measured_exchanges: measured,
        interrupted: false,
        connections: 1_000,
        in_flight: 1,
        metrics,
        server: ServerReport {
            pids: vec![4242],
            found_by: Some("spawned".to_owned()),
            samples,
            ..ServerReport::default()
        },
        client_workers: vec![
            WorkerCpu {
                name: "w0".to_owned(),
                cpu_seconds: 21.7,
                share: 0.62,
                user_seconds: 8.2,
                system_seconds: 13.5,
                io: "uring".to_owned(),
            },
            WorkerCpu {
                name: "w1".to_owned(),
                cpu_seconds: 21.0,
                share: 0.60,
                user_seconds: 8.0,
                system_seconds: 13.0,
                io: "uring".to_owned(),
            },
        ],
        // 612 bytes of heap per connection once the 1,000 are open.
        client_memory: ClientMemory {
            rss_baseline_bytes: Some(8 * 1024 * 1024),
            rss_connected_bytes: Some(8 * 1024 * 1024 + 700_000),
            heap_baseline_bytes: Some(2 * 1024 * 1024),
            heap_connected_bytes: Some(2 * 1024 * 1024 + 612_000),
        },
        machine: machine(),
        disruptions: Vec::new(),
        figures: None,
    }
}

/// An interrupted open-loop run against a remote server: errors, a client worker at 97%,
/// coordinated omission visible (corrected ≠ uncorrected latency), server not probed.
pub fn open_loop_troubled() -> RunOutcome {
    let mut rng = Rng::new(2);
    let mut metrics = Metrics::default();
    let measured = simulate(&mut rng, &mut metrics, 12, 2, 9_800, 850, 480);
    // The corrected histogram adds the time each send waited behind the client.
    metrics.latency.reset();
    for _ in 0..measured / 50 {
        let lag = rng.latency_us(400);
        record_us(&mut metrics.send_lag, lag);
        metrics.latency.saturating_record_n(rng.latency_us(850) + lag, 50);
    }
    for _ in 0..485 {
        record_us(&mut metrics.connect, rng.latency_us(3_500));
    }
    let mut closed_by_server = BTreeMap::new();
    closed_by_server.insert(1001, 4);
    closed_by_server.insert(1011, 1);
    metrics.counters = Counters {
        connections_attempted: 500,
        connections_established: 485,
        connect_timeouts: 12,
        connections_refused: 3,
        closed_by_server,
        resets: 2,
        messages_sent: measured + 2 * 9_800 + 310,
        messages_received: measured + 2 * 9_800,
        messages_unanswered: 310,
        bytes_sent: (measured + 2 * 9_800 + 310) * 1_030,
        bytes_received: (measured + 2 * 9_800) * 1_026,
        warmup_messages: 2 * 9_800,
        ..Counters::default()
    };
    RunOutcome {
        scenario: "throughput".to_owned(),
        target_url: "wss://bench.example.net:8443/echo".to_owned(),
        target_builtin: false,
        config: config(
            "throughput",
            500,
            serde_json::json!({ "rate_per_connection": 20, "message_size": 1024, "message_interval": 0.05 }),
        ),
        started_at_unix_ms: 1_735_693_200_000,
        elapsed_secs: 12.4,
        measured_secs: 10.0,
        connect_phase_secs: 0.5,
        drain_secs: 0.0,
        measured_exchanges: measured,
        interrupted: true,
        connections: 500,
        in_flight: 1,
        metrics,
        server: ServerReport {
            pids: Vec::new(),
            found_by: None,
            unprobed_reason: Some("the target is on another host".to_owned()),
            samples: Vec::new(),
            tls_handshakes: None,
        },
        client_workers: vec![
            WorkerCpu { name: "w0".to_owned(), cpu_seconds: 12.0, share: 0.97, ..WorkerCpu::default() },
            WorkerCpu { name: "w1".to_owned(), cpu_seconds: 7.1, share: 0.57, ..WorkerCpu::default() },
        ],
        client_memory: ClientMemory::default(),
        machine: machine(),
        disruptions: Vec::new(),
        figures: None,
    }
}

/// A run in which no connection was ever established: everything zero, no throughput.
pub fn nothing_answered() -> RunOutcome {
    let metrics = Metrics {
        counters: Counters { connections_attempted: 10, connections_refused: 10, ..Counters::default() },
        ..Metrics::default()
    };
    RunOutcome {
        scenario: "echo".to_owned(),
        target_url: "ws://127.0.0.1:9/".to_owned(),
        target_builtin: false,
        config: config("echo", 10, serde_json::json!({})),
        started_at_unix_ms: 1_735_696_800_000,
        elapsed_secs: 0.3,
        measured_secs: 0.0,
        connect_phase_secs: 0.5,
        drain_secs: 0.0,
        measured_exchanges: 0,
        interrupted: false,
        connections: 10,
        in_flight: 1,
        metrics,
        server: ServerReport {
            pids: vec![77],
            found_by: Some("listening-port".to_owned()),
            unprobed_reason: None,
            samples: Vec::new(),
            tls_handshakes: None,
        },
        client_workers: vec![WorkerCpu {
            name: "w0".to_owned(),
            cpu_seconds: 0.01,
            share: 0.03,
            ..WorkerCpu::default()
        }],
        client_memory: ClientMemory::default(),
        machine: machine(),
        disruptions: Vec::new(),
        figures: None,
    }
}

/// A pub/sub fan-out, 4 publishers → 100 subscribers on 4 topics at 400 publishes/s, in
/// which the server dropped everything for subscriber 17 and one publish twice for
/// subscriber 42.
pub fn pubsub_one_short() -> RunOutcome {
    let mut rng = Rng::new(4);
    let mut metrics = Metrics::default();
    let measured = simulate(&mut rng, &mut metrics, 11, 1, 10_000, 900, 104);
    let mut spread = crate::metrics::new_histogram();
    for _ in 0..4_000 {
        record_us(&mut spread, rng.latency_us(300));
    }
    for _ in 0..104 {
        record_us(&mut metrics.connect, rng.latency_us(700));
    }
    let published_per_topic = 1_000;
    let mut pubsub = PubSubCounters {
        published: (0..4).map(|topic| (topic, published_per_topic)).collect(),
        duplicates: 1,
        ..Default::default()
    };
    for index in 0..100u64 {
        let received = if index == 17 { 0 } else { published_per_topic };
        pubsub.received.insert(index, (index % 4, received));
    }
    metrics.counters.connections_attempted = 104;
    metrics.counters.connections_established = 104;
    metrics.section = Some(Box::new(PubSubSection { counters: pubsub, spread, ..PubSubSection::default() }));
    with_figures(RunOutcome {
        scenario: "pubsub".to_owned(),
        target_url: "ws://127.0.0.1:9001/".to_owned(),
        target_builtin: true,
        config: config(
            "pubsub",
            104,
            serde_json::json!({ "pubsub": { "subscribers": 100, "topics": 4, "publishers": 4 } }),
        ),
        started_at_unix_ms: 1_735_700_000_000,
        elapsed_secs: 11.5,
        measured_secs: 10.0,
        connect_phase_secs: 0.1,
        drain_secs: 0.0,
        measured_exchanges: measured,
        interrupted: false,
        connections: 104,
        in_flight: u64::MAX,
        metrics,
        server: ServerReport {
            pids: vec![4243],
            found_by: Some("spawned".to_owned()),
            unprobed_reason: None,
            samples: Vec::new(),
            tls_handshakes: None,
        },
        client_workers: vec![WorkerCpu {
            name: "w0".to_owned(),
            cpu_seconds: 3.1,
            share: 0.27,
            user_seconds: 1.2,
            system_seconds: 1.9,
            io: "uring".to_owned(),
        }],
        client_memory: ClientMemory::default(),
        machine: machine(),
        disruptions: Vec::new(),
        figures: None,
    })
}

/// A stream the server produces, 1,000 ids (a head every 10 ms) to 10 subscribers stamped
/// with the server's time, in which subscriber 3 missed two ids and subscriber 7 got one
/// twice.
pub fn stream_one_missing() -> RunOutcome {
    let mut rng = Rng::new(5);
    let mut metrics = Metrics::default();
    let measured = simulate(&mut rng, &mut metrics, 11, 1, 1_000, 40_000, 10);
    for _ in 0..10 {
        record_us(&mut metrics.connect, rng.latency_us(900));
    }
    let start = std::time::Instant::now();
    let mut window = Window::new(10);
    for id in 0..1_000u64 {
        let first = start + std::time::Duration::from_millis(10 * id);
        for subscriber in 0..10 {
            if subscriber == 3 && (id == 400 || id == 401) {
                continue;
            }
            let at = first + std::time::Duration::from_micros(subscriber * rng.latency_us(60));
            window.receive(subscriber, id, at, true, Some(rng.latency_us(40_000)));
        }
    }
    window.receive(7, 500, start + std::time::Duration::from_millis(5_001), true, None);
    let shared = std::sync::Arc::new(std::sync::Mutex::new(window));
    let mut section = StreamSection::of_worker(shared, StreamCounters::default());
    crate::metrics::Section::complete(&mut section);
    metrics.counters.connections_attempted = 10;
    metrics.counters.connections_established = 10;
    metrics.section = Some(Box::new(section));
    let mut outcome = pubsub_one_short();
    let stream = serde_json::json!({ "stream": {
        "subscribers": 10, "message_id": "/params/result/number",
        "message_time": "/params/result/timestamp", "message_time_unit": "s",
    }});
    outcome.scenario = "stream".to_owned();
    outcome.target_url = "ws://127.0.0.1:8546/".to_owned();
    outcome.target_builtin = false;
    outcome.server.found_by = Some("listening-port".to_owned());
    outcome.config = config("stream", 10, stream);
    outcome.measured_exchanges = measured;
    outcome.connections = 10;
    outcome.metrics = metrics;
    with_figures(outcome)
}

/// `outcome` with the figures its scenario computes from it.
fn with_figures(mut outcome: RunOutcome) -> RunOutcome {
    outcome.figures = crate::scenario::figures_for(
        &outcome.scenario,
        &outcome.metrics,
        &outcome.config,
        outcome.measured_secs,
        &outcome.server,
    );
    outcome
}

/// Every fixture by name, as the golden files are named.
pub fn all() -> Vec<(&'static str, RunOutcome)> {
    vec![
        ("closed_loop", closed_loop()),
        ("open_loop_troubled", open_loop_troubled()),
        ("nothing_answered", nothing_answered()),
        ("pubsub_one_short", pubsub_one_short()),
        ("stream_one_missing", stream_one_missing()),
    ]
}

/// A closed-loop sweep of 1 to 4,096 connections (eleven steps, the last client-bound)
/// whose throughput follows the Universal Scalability Law (σ 0.03, κ 4e-6, λ 9,000/s,
/// times a fixed ±2 % wobble) and whose latency follows Little's law, each step the
/// closed-loop fixture run with those figures; analysed as `wsbench sweep` analyses it,
/// with `--holdout 2` and two thresholds judged.
pub fn sweep() -> crate::result::sweep::Sweep {
    use crate::result::RunResult;
    use crate::result::sweep::{Sweep, SweepStep, Varied};
    let loads = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 1024.0, 4096.0];
    let wobble = [1.0, 1.02, 0.98, 1.01, 0.99, 1.02, 0.98, 1.0, 1.01, 0.99, 1.0];
    let model = crate::curve::usl::Model { sigma: 0.03, kappa: 4e-6, lambda: 9_000.0 };
    let steps: Vec<SweepStep> = loads
        .iter()
        .zip(wobble)
        .enumerate()
        .map(|(index, (&n, wobble))| {
            let mut result = RunResult::from_outcome(&closed_loop());
            let throughput = (model.rate_at(n) * wobble).round();
            let mean_us = n / throughput * 1e6;
            let summary = &mut result.summary;
            summary.exchanges_per_sec = throughput;
            summary.connections.established = n as u64;
            let latency = &mut summary.latency_us;
            latency.mean = mean_us;
            (latency.p50, latency.p90) = ((mean_us * 0.9) as u64, (mean_us * 1.6) as u64);
            latency.p99 = (mean_us * (2.0 + index as f64 * 0.4)) as u64;
            latency.p999 = latency.p99 * 2;
            result.client.bound = index == loads.len() - 1;
            result.client.bound_reason =
                result.client.bound.then(|| "worker w0 used 97% of a core".to_owned());
            SweepStep::of(n, result)
        })
        .collect();
    let mut sweep = Sweep {
        label: "builtin".to_owned(),
        scenario: "echo".to_owned(),
        varied: Varied::Connections,
        closed_loop: true,
        planned: loads.to_vec(),
        warmup_s: 1.0,
        duration_s: 10.0,
        analysis: crate::sweep::analyse(&steps, Varied::Connections, true, Some(2)),
        steps,
        thresholds: Vec::new(),
        interrupted: false,
    };
    let thresholds = ["knee_rate>50000".to_owned(), "usl_peak>300".to_owned()];
    let parsed = crate::sweep::thresholds::parse_all(&thresholds, Varied::Connections, true, true)
        .expect("valid thresholds");
    sweep.thresholds = crate::sweep::thresholds::judge(&parsed, &sweep);
    sweep
}
