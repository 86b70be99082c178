//! The merge's rules, checked on shards whose whole is known exactly: sums, lossless
//! histograms, aligned timelines, one server, and every refusal.

use super::*;
use crate::fixture;
use crate::metrics::{Counters, new_histogram, record_us};
use crate::samples::ServerSample;

/// Shard `index` of `count` of one closed-loop run: every shard records its own slice of
/// one deterministic stream of samples, so the whole is known exactly.
fn shard(index: u64, count: u64, all: &mut Metrics) -> ShardInput {
    let mut rng = fixture::Rng::new(7);
    let mut metrics = Metrics::default();
    for n in 0..60_000u64 {
        let value = rng.latency_us(2_000);
        let connect = rng.latency_us(900);
        if n % count == index {
            record_us(&mut metrics.latency, value);
            record_us(&mut metrics.latency_uncorrected, value);
            record_us(&mut metrics.connect, connect);
            let second = n % 5;
            let point = metrics.second(second);
            point.exchanges += 1;
            point.p99_us = point.p99_us.max(value);
        }
        if index == 0 {
            record_us(&mut all.latency, value);
            record_us(&mut all.connect, connect);
        }
    }
    metrics.counters = Counters {
        connections_attempted: 100 + index,
        connections_established: 90 + index,
        connect_timeouts: 10,
        messages_sent: 1_000 * (index + 1),
        messages_received: 999 * (index + 1),
        bytes_sent: 38_000 * (index + 1),
        ..Counters::default()
    };
    metrics.counters.closed_by_server.insert(1001, index + 1);
    let mut outcome = fixture::closed_loop();
    outcome.metrics = metrics;
    outcome.measured_exchanges = 10_000 * (index + 1);
    outcome.measured_secs = 10.0;
    outcome.connections = 90 + index;
    outcome.started_at_unix_ms += index * 30; // started together, give or take
    outcome.client_workers.truncate(1);
    // Each shard a process of its own: 10 MiB resident and 4 MiB of heap before, 1 KiB more
    // heap per connection once open.
    outcome.client_memory = crate::samples::ClientMemory {
        rss_baseline_bytes: Some(10 << 20),
        rss_connected_bytes: Some((10 << 20) + (90 + index) * 2048),
        heap_baseline_bytes: Some(4 << 20),
        heap_connected_bytes: Some((4 << 20) + (90 + index) * 1024),
    };
    if let Some(config) = outcome.config.as_object_mut() {
        config.insert("shard".into(), serde_json::json!({ "index": index, "count": count }));
        config.insert("json".into(), serde_json::json!(format!("shard-{index}.json")));
    }
    ShardInput { name: format!("shard-{index}.json"), result: RunResult::from_outcome(&outcome), died: None }
}

fn shards(count: u64) -> (Vec<ShardInput>, Metrics) {
    let mut all = Metrics::default();
    let inputs = (0..count).map(|i| shard(i, count, &mut all)).collect();
    (inputs, all)
}

#[test]
fn counters_are_sums_and_histograms_equal_one_fed_all_samples() {
    let (inputs, all) = shards(3);
    let merged = merge(&inputs).unwrap();
    let mut sum = Counters::default();
    for input in &inputs {
        sum += &input.result.counters;
    }
    assert_eq!(merged.counters, sum);
    assert_eq!(merged.summary.connections.attempted, 303);
    assert_eq!(merged.summary.connections.established, 273);
    assert_eq!(merged.summary.errors.get("closed_1001"), Some(&6));
    let decoded = merged.common_metrics().unwrap();
    for (name, got, want) in
        [("latency", &decoded.latency, &all.latency), ("connect", &decoded.connect, &all.connect)]
    {
        assert_eq!(got.len(), want.len(), "{name}");
        assert_eq!(got.len(), 60_000, "{name}");
        for q in [0.0, 0.5, 0.75, 0.9, 0.99, 0.999, 0.9999, 1.0] {
            assert_eq!(got.value_at_quantile(q), want.value_at_quantile(q), "{name} q{q}");
        }
        assert_eq!((got.min(), got.max(), got.mean()), (want.min(), want.max(), want.mean()), "{name}");
    }
    assert_eq!(merged.summary.latency_us.count, 60_000);
    // The shards ran side by side: their rates add up.
    assert_eq!(merged.summary.measured_exchanges, 60_000);
    assert_eq!(merged.summary.exchanges_per_sec, 1_000.0 + 2_000.0 + 3_000.0);
    assert_eq!(merged.summary.littles_law.connections, 273);
    assert_eq!(merged.measured_s, 10.0);
    assert_eq!(merged.timeline.iter().map(|p| p.exchanges).sum::<u64>(), 60_000);
    assert_eq!(merged.shards.len(), 3);
    assert_eq!(merged.shards[2].shard.as_deref(), Some("2/3"));
    assert_eq!(merged.config["shard"], serde_json::Value::Null);
    assert_eq!(
        merged.client.workers.iter().map(|w| w.name.as_str()).collect::<Vec<_>>(),
        ["shard0/w0", "shard1/w0", "shard2/w0"]
    );
    assert!(!merged.interrupted);
}

#[test]
fn a_merged_result_reads_back_and_merges_again() {
    let (inputs, _) = shards(2);
    let merged = merge(&inputs).unwrap();
    let json = serde_json::to_vec(&merged).unwrap();
    let back = RunResult::from_json_bytes(Path::new("merged.json"), &json).unwrap();
    assert_eq!(back, merged);
    assert_eq!(back.common_metrics().unwrap().latency.len(), 60_000);
}

#[test]
fn timelines_align_on_wall_clock_seconds() {
    let (mut inputs, _) = shards(2);
    inputs[1].result.started_at_unix_ms = inputs[0].result.started_at_unix_ms + 2_000;
    let merged = merge(&inputs).unwrap();
    let own = |i: usize| inputs[i].result.timeline.iter().map(|p| p.exchanges).collect::<Vec<_>>();
    let (a, b) = (own(0), own(1));
    let got: Vec<u64> = merged.timeline.iter().map(|p| p.exchanges).collect();
    assert_eq!(got.len(), 7);
    assert_eq!(got[..2], a[..2]);
    assert_eq!(got[2], a[2] + b[0]);
    assert_eq!(got[5..], b[3..]);
    assert_eq!(merged.started_at_unix_ms, inputs[0].result.started_at_unix_ms);
    assert_eq!(merged.elapsed_s, 2.0 + inputs[1].result.elapsed_s);
}

#[test]
fn one_server_is_kept_once_different_servers_per_shard() {
    let (mut inputs, _) = shards(2);
    inputs[1].result.server.samples.push(ServerSample {
        t_ms: 35_250,
        rss_bytes: 60 << 20,
        cpu_seconds: 30.0,
        threads: 3,
        fds: 1_008,
        slab_bytes: 0,
    });
    let merged = merge(&inputs).unwrap();
    assert_eq!(merged.server.samples.len(), inputs[1].result.server.samples.len());
    assert_eq!(merged.server.found_by.as_deref(), Some("spawned"));
    // Shifted onto the merged clock (shard 1 started 30 ms later).
    assert_eq!(merged.server.samples[1].t_ms, inputs[1].result.server.samples[1].t_ms + 30);
    let established = merged.summary.connections.established;
    let growth = merged.server.rss_peak_bytes.unwrap() - merged.server.rss_baseline_bytes.unwrap();
    assert_eq!(merged.server.connections_per_mb, Some(established as f64 / (growth as f64 / 1_048_576.0)));

    inputs[1].result.server.pids = vec![99];
    let merged = merge(&inputs).unwrap();
    assert_eq!(merged.server.pids, inputs[0].result.server.pids);
    assert_eq!(merged.server.connections_per_mb, inputs[0].result.server.connections_per_mb);
    let found_by = merged.server.found_by.unwrap();
    assert!(found_by.starts_with("spawned; shard shard-0.json only"), "{found_by}");
    assert_eq!(merged.shards[1].server.pids, [99]);
}

#[test]
fn interrupted_if_any_shard_was() {
    let (mut inputs, _) = shards(2);
    inputs[1].result.interrupted = true;
    inputs[1].died = Some("exit status 3".into());
    let merged = merge(&inputs).unwrap();
    assert!(merged.interrupted);
    assert_eq!(merged.shards[1].died.as_deref(), Some("exit status 3"));
}

/// Every shard ran out of connections: the merged reason counts what ended them over all
/// of them (each shard's server closed 1 or 2 with 1001; the second also failed 5 itself).
#[test]
fn ended_early_if_every_shard_did_for_the_reasons_of_all_of_them() {
    let (mut inputs, _) = shards(2);
    inputs[0].result.ended_early = Some(EndedEarly::new(10.0, &inputs[0].result.counters));
    assert_eq!(merge(&inputs).unwrap().ended_early, None, "one shard ran its window");
    let masked = "protocol_error_1002_masked_server_frame";
    inputs[1].result.counters.framing_errors_by_cause.insert(masked.into(), 5);
    inputs[1].result.ended_early = Some(EndedEarly::new(10.0, &inputs[1].result.counters));
    let early = merge(&inputs).unwrap().ended_early.unwrap();
    assert_eq!(
        early.reason,
        format!(
            "no connection left (the server closed or reset 3; wsbench closed 5 because the server broke \
             RFC 6455: {masked} 5)"
        )
    );
    assert_eq!(early.planned_measured_s, 10.0);
}

#[test]
fn different_scenarios_are_refused_naming_the_key_and_files() {
    let (mut inputs, _) = shards(2);
    inputs[1].result.config["connections"] = serde_json::json!(2_000);
    let message = merge(&inputs).unwrap_err().to_string();
    assert_eq!(
        message,
        "cannot merge shard-0.json and shard-1.json: they ran different scenarios (`connections` is \
         1000 in shard-0.json but 2000 in shard-1.json)"
    );
    assert!(!message.contains('\n'));
    let (mut inputs, _) = shards(2);
    inputs[1].result.config.as_object_mut().unwrap().insert("ramp_per_sec".into(), 75.0.into());
    let message = merge(&inputs).unwrap_err().to_string();
    assert!(
        message.contains("`ramp_per_sec` is absent in shard-0.json but 75.0 in shard-1.json"),
        "{message}"
    );
    // What legitimately differs between shards does not stop the merge.
    let (mut inputs, _) = shards(2);
    for key in SHARD_KEYS {
        inputs[1].result.config[*key] = serde_json::json!("elsewhere");
    }
    merge(&inputs).unwrap();
    assert!(matches!(merge(&[]), Err(MergeError::Empty)));
}

#[test]
fn the_same_result_or_shard_twice_and_other_runs_are_refused_naming_both() {
    let (inputs, _) = shards(2);
    let copy = ShardInput { name: "copy.json".into(), ..inputs[0].clone() };
    let message = merge(&[inputs[0].clone(), inputs[1].clone(), copy]).unwrap_err().to_string();
    assert!(
        message.starts_with("cannot merge shard-0.json and copy.json: they are the same result (shard 0/2")
    );

    let (mut inputs, _) = shards(2);
    inputs[1].result.config["shard"] = serde_json::json!({ "index": 0, "count": 2 });
    let message = merge(&inputs).unwrap_err().to_string();
    assert_eq!(
        message,
        "cannot merge shard-0.json and shard-1.json: both are shard 0/2 of the run; give each shard once"
    );

    let (mut inputs, _) = shards(2);
    inputs[0].result.run_id = Some("a1".into());
    inputs[1].result.run_id = Some("b2".into());
    let message = merge(&inputs).unwrap_err().to_string();
    assert!(message.contains("they are results of different runs (run id a1 and b2)"), "{message}");
    inputs[1].result.run_id = None;
    let message = merge(&inputs).unwrap_err().to_string();
    assert!(message.contains("(run id a1 and unknown (an older wsbench))"), "{message}");
    // One run's shards merge and keep its id; files without ids merge with each other.
    inputs[1].result.run_id = Some("a1".into());
    assert_eq!(merge(&inputs).unwrap().run_id.as_deref(), Some("a1"));
    let (inputs, _) = shards(2);
    assert_eq!(merge(&inputs).unwrap().run_id, None);
}

#[test]
fn a_file_given_twice_is_refused_under_any_name() {
    let dir = std::env::temp_dir().join(format!("wsbench-merge-same-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("a.json");
    std::fs::write(&file, "{}").unwrap();
    let other = dir.join(".").join("a.json");
    let message =
        check_distinct_files(&[file.clone(), dir.join("b.json"), other.clone()]).unwrap_err().to_string();
    assert_eq!(
        message,
        format!(
            "cannot merge {} and {}: they are the same file; give each shard's result once",
            file.display(),
            other.display()
        )
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn empty_shards_merge_to_empty_histograms() {
    let mut outcome = fixture::nothing_answered();
    outcome.metrics.latency = new_histogram();
    let input = |name: &str, index: u64| {
        let mut result = RunResult::from_outcome(&outcome);
        result.config["shard"] = serde_json::json!({ "index": index, "count": 2 });
        ShardInput { name: name.into(), result, died: None }
    };
    let merged = merge(&[input("a", 0), input("b", 1)]).unwrap();
    assert_eq!(merged.summary.connections.attempted, 20);
    assert_eq!(merged.summary.latency_us.count, 0);
    assert_eq!(merged.summary.exchanges_per_sec, 0.0);
}

#[test]
fn client_memory_of_the_shards_is_summed_and_per_connection_over_all_of_them() {
    let (inputs, _) = shards(3);
    assert_eq!(inputs[1].result.client.bytes_per_connection, Some(1024.0));
    let merged = merge(&inputs).unwrap();
    let established = 90 + 91 + 92;
    assert_eq!(merged.summary.connections.established, established);
    assert_eq!(merged.client.rss_baseline_bytes, Some(3 * (10 << 20)));
    assert_eq!(merged.client.rss_connected_bytes, Some(3 * (10 << 20) + established * 2048));
    assert_eq!(merged.client.heap_baseline_bytes, Some(3 * (4 << 20)));
    assert_eq!(merged.client.heap_connected_bytes, Some(3 * (4 << 20) + established * 1024));
    assert_eq!(merged.client.bytes_per_connection, Some(1024.0));
    // One probe's view of the one server and machine, over every shard's connections.
    let server = &inputs[0].result.server;
    let growth = server.rss_peak_bytes.unwrap() - server.rss_baseline_bytes.unwrap();
    assert_eq!(merged.server.bytes_per_connection, Some(growth as f64 / established as f64));
    let slab = server.kernel_slab_delta_bytes.unwrap();
    assert_eq!(merged.server.kernel_slab_delta_bytes, Some(slab));
    assert_eq!(merged.server.kernel_bytes_per_connection, Some(slab as f64 / established as f64));
}

#[test]
fn a_shard_without_client_memory_leaves_the_sum_unknown() {
    let (mut inputs, _) = shards(2);
    inputs[1].result.client.heap_connected_bytes = None;
    let merged = merge(&inputs).unwrap();
    assert_eq!((merged.client.heap_connected_bytes, merged.client.bytes_per_connection), (None, None));
}

#[test]
fn a_whole_run_records_no_partial_and_some_of_its_shards_say_which_are_missing() {
    let (inputs, _) = shards(3);
    assert_eq!(merge(&inputs).unwrap().partial, None);
    let merged = merge(&inputs[..2]).unwrap();
    let partial = merged.partial.clone().unwrap();
    assert_eq!(partial, PartialRun { shards: 2, of: 3, missing: vec!["2/3".to_owned()] });
    assert_eq!(partial.describe(), "2 of 3 shards (missing 2/3)");
    let report = crate::report::render_text(&merged);
    assert!(
        report.contains("[PARTIAL: 2 of 3 shards (missing 2/3); the figures cover those shards only]"),
        "{report}"
    );
}

#[test]
fn shards_of_different_counts_are_refused_naming_both() {
    let mut all = Metrics::default();
    let inputs = [shard(0, 2, &mut all), shard(1, 3, &mut all)];
    let error = merge(&inputs).unwrap_err().to_string();
    assert_eq!(
        error,
        "cannot merge shard-0.json and shard-1.json: shard-0.json is shard 0/2 and shard-1.json shard 1/3: \
         shards of one run share their N"
    );
}

#[test]
fn missing_shards_are_named_in_one_line() {
    let error = MergeError::MissingShards { given: 1, count: 3, missing: vec!["1/3".into(), "2/3".into()] };
    assert_eq!(
        error.to_string(),
        "the files are 1 of the run's 3 shards: shards 1/3, 2/3 are missing; give every shard's result \
         file, or --partial to merge these alone (the merged result then says so)"
    );
}
