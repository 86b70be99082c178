//! Tests of building, writing, reading and decoding result files.

use std::io;
use std::path::PathBuf;

use super::*;
use crate::fixture;
use crate::metrics::{Metrics, record_us};
use crate::samples::RunOutcome;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wsbench-result-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn outcome_with(metrics: Metrics) -> RunOutcome {
    let mut outcome = fixture::closed_loop();
    outcome.metrics = metrics;
    outcome
}

fn assert_histograms_equal(name: &str, a: &hdrhistogram::Histogram<u64>, b: &hdrhistogram::Histogram<u64>) {
    assert_eq!(a, b, "{name}");
    assert_eq!(a.len(), b.len(), "{name}");
    for quantile in [0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 0.9999, 0.99999, 1.0] {
        assert_eq!(a.value_at_quantile(quantile), b.value_at_quantile(quantile), "{name} q{quantile}");
    }
    assert_eq!(a.min(), b.min(), "{name}");
    assert_eq!(a.max(), b.max(), "{name}");
    assert_eq!(a.mean(), b.mean(), "{name}");
    assert_eq!(a.stdev(), b.stdev(), "{name}");
}

#[test]
fn histograms_survive_json_round_trip_losslessly() {
    let metrics = fixture::random_metrics(42, 20_000, 5);
    let result = RunResult::from_outcome(&outcome_with(metrics.clone()));
    let json = serde_json::to_string(&result).unwrap();
    let parsed = RunResult::from_json_bytes(Path::new("memory.json"), json.as_bytes()).unwrap();
    let decoded = parsed.common_metrics().unwrap();

    assert_histograms_equal("latency", &decoded.latency, &metrics.latency);
    assert_histograms_equal(
        "latency_uncorrected",
        &decoded.latency_uncorrected,
        &metrics.latency_uncorrected,
    );
    assert_histograms_equal("connect", &decoded.connect, &metrics.connect);
    assert_histograms_equal("send_lag", &decoded.send_lag, &metrics.send_lag);
    assert_eq!(decoded.counters, metrics.counters);
    assert_eq!(decoded.timeline, metrics.timeline, "the timeline's counts and percentiles");
}

#[test]
fn decoded_metrics_merge_like_the_originals() {
    let a = fixture::random_metrics(1, 3_000, 3);
    let b = fixture::random_metrics(2, 5_000, 4);
    let mut direct = a.clone();
    direct.merge(&b);
    let mut via_files = RunResult::from_outcome(&outcome_with(a)).common_metrics().unwrap();
    via_files.merge(&RunResult::from_outcome(&outcome_with(b)).common_metrics().unwrap());
    assert_histograms_equal("latency", &via_files.latency, &direct.latency);
    assert_eq!(via_files.counters, direct.counters);
    assert_eq!(via_files.timeline, direct.timeline);
    assert_eq!(via_files.timeline.len(), 4);
}

#[test]
fn histograms_use_hdrhistogram_v2_compressed_base64() {
    let result = RunResult::from_outcome(&fixture::closed_loop());
    // Cookie 0x1c849314 (V2 compressed) in base64 is "HISTFAAA…", as Java and Go write it.
    assert!(result.histograms.latency.starts_with("HISTFAAA"), "{}", &result.histograms.latency[..16]);
}

#[test]
fn a_result_holds_no_histogram_per_second_however_long_the_run() {
    let long = RunResult::from_outcome(&outcome_with(fixture::random_metrics(5, 20_000, 3_600)));
    assert_eq!(long.timeline.len(), 3_600);
    assert!(long.histograms.intervals.is_empty());
    let json = serde_json::to_value(&long).unwrap();
    assert!(json["histograms"].get("intervals").is_none(), "absent, not empty");
    // Under 100 bytes a second in the file (pretty-printed), not a histogram's kilobytes.
    let text = serde_json::to_string_pretty(&long).unwrap();
    let short = serde_json::to_string_pretty(&RunResult::from_outcome(&outcome_with(
        fixture::random_metrics(5, 20_000, 1),
    )))
    .unwrap();
    assert!(
        (text.len() - short.len()) / 3_600 < 150,
        "{} bytes a second",
        (text.len() - short.len()) / 3_600
    );
}

#[test]
fn a_schema_version_1_file_with_per_second_histograms_still_reads() {
    let mut json = serde_json::to_value(RunResult::from_outcome(&fixture::closed_loop())).unwrap();
    json["schema_version"] = 1.into();
    let seconds = json["timeline"].as_array().unwrap().len();
    let one = json["histograms"]["latency"].clone();
    json["histograms"]["intervals"] = serde_json::Value::Array(vec![one; seconds]);
    let bytes = serde_json::to_vec(&json).unwrap();
    let read = RunResult::from_json_bytes(Path::new("v1.json"), &bytes).unwrap();
    let metrics = read.common_metrics().unwrap();
    assert_eq!(metrics.timeline.len(), seconds);
    assert_eq!(metrics.timeline[3].p99_us, read.timeline[3].p99_us);
}

#[test]
fn histogram_with_other_bounds_is_rerecorded_into_wsbench_bounds() {
    let mut foreign = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
    foreign.record_n(1_234, 10).unwrap();
    let decoded = decode_histogram("x", &encode_histogram(&foreign)).unwrap();
    assert_eq!(decoded.high(), crate::metrics::HISTOGRAM_MAX_US);
    assert_eq!(decoded.len(), 10);
    assert_eq!(decoded.value_at_quantile(0.5), foreign.value_at_quantile(0.5));
}

#[test]
fn garbage_histogram_error_names_the_field() {
    let mut result = RunResult::from_outcome(&fixture::closed_loop());
    result.histograms.connect = "not base64!".to_owned();
    let error = result.common_metrics().unwrap_err().to_string();
    assert!(error.contains("histograms.connect") && error.contains("base64"), "{error}");
    result.histograms.connect = "AAAA".to_owned();
    let error = result.common_metrics().unwrap_err().to_string();
    assert!(error.contains("HdrHistogram"), "{error}");
}

#[test]
fn summary_derives_throughput_percentiles_and_counts() {
    let outcome = fixture::closed_loop();
    let result = RunResult::from_outcome(&outcome);
    let summary = &result.summary;
    assert_eq!(summary.exchanges_per_sec, outcome.measured_exchanges as f64 / 30.0);
    assert_eq!(summary.latency_us.count, outcome.metrics.latency.len());
    assert_eq!(summary.latency_us.p99, outcome.metrics.latency.value_at_quantile(0.99));
    assert_eq!(summary.latency_us.max, outcome.metrics.latency.max());
    assert!(
        summary.latency_us.p50 <= summary.latency_us.p90 && summary.latency_us.p999 <= summary.latency_us.max
    );
    assert_eq!(summary.connect_us.count, 1_000);
    assert_eq!(summary.send_lag_us, LatencyStats::default());
    assert_eq!(
        summary.connections,
        ConnectionCounts { attempted: 1_000, established: 1_000, failed: 0, unfinished: 0 }
    );
    assert!(summary.errors.is_empty());
    assert_eq!(result.timeline.len(), 35);
    assert_eq!(result.timeline[3].second, 3);
    assert_eq!(result.timeline[3].exchanges, outcome.metrics.timeline[3].exchanges);
}

#[test]
fn echoes_per_sec_is_zero_when_nothing_was_measured() {
    let result = RunResult::from_outcome(&fixture::nothing_answered());
    assert_eq!(result.summary.exchanges_per_sec, 0.0);
    assert_eq!(result.summary.latency_us, LatencyStats::default());
    assert_eq!(result.summary.connect_us, ConnectStats::default());
    assert_eq!(result.summary.connections.failed, 10);
    assert_eq!(result.summary.errors.get("connection_refused"), Some(&10));
    assert_eq!(result.summary.littles_law.predicted_mean_latency_us, None);
    assert_eq!(result.summary.littles_law.ratio, None);
}

#[test]
fn littles_law_predicts_mean_latency_from_concurrency_and_throughput() {
    let law = LittlesLaw::new(1_000, 1, 52_300.0, 19_400.0);
    let predicted = law.predicted_mean_latency_us.unwrap();
    assert!((predicted - 19_120.46).abs() < 0.01, "{predicted}");
    assert!((law.ratio.unwrap() - 19_400.0 / predicted).abs() < 1e-12);
    assert_eq!(LittlesLaw::new(0, 1, 100.0, 5.0).ratio, None);
}

#[test]
fn server_numbers_come_from_the_probe_samples() {
    let outcome = fixture::closed_loop();
    let server = RunResult::from_outcome(&outcome).server;
    let samples = &outcome.server.samples;
    assert!(server.probed);
    assert_eq!(server.rss_baseline_bytes, Some(samples[0].rss_bytes));
    assert_eq!(server.rss_peak_bytes, samples.iter().map(|s| s.rss_bytes).max());
    let cpu = samples.last().unwrap().cpu_seconds - samples[0].cpu_seconds;
    assert_eq!(server.cpu_seconds, Some(cpu));
    let growth_mib = (server.rss_peak_bytes.unwrap() - server.rss_baseline_bytes.unwrap()) as f64 / 1048576.0;
    assert_eq!(server.connections_per_mb, Some(1_000.0 / growth_mib));
    assert_eq!(server.exchanges_per_cpu_second, Some(outcome.measured_exchanges as f64 / cpu));
    assert_eq!(server.fds_peak, Some(1_008));
    assert_eq!(server.samples.len(), samples.len());
}

#[test]
fn unprobed_server_has_null_resource_numbers_and_a_reason() {
    let server = RunResult::from_outcome(&fixture::open_loop_troubled()).server;
    assert!(!server.probed);
    assert_eq!(server.unprobed_reason.as_deref(), Some("the target is on another host"));
    assert_eq!((server.rss_peak_bytes, server.cpu_seconds, server.connections_per_mb), (None, None, None));
    let json = serde_json::to_value(&server).unwrap();
    assert!(json["rss_peak_bytes"].is_null() && json["cpu_seconds"].is_null());

    let found_without_samples = RunResult::from_outcome(&fixture::nothing_answered()).server;
    assert_eq!(found_without_samples.unprobed_reason.as_deref(), Some("no samples were taken"));
}

#[test]
fn flat_rss_gives_no_connections_per_mb() {
    let mut outcome = fixture::closed_loop();
    for sample in &mut outcome.server.samples {
        sample.rss_bytes = 10 << 20;
    }
    assert_eq!(RunResult::from_outcome(&outcome).server.connections_per_mb, None);
}

#[test]
fn client_is_bound_when_a_worker_is_ninety_percent_busy() {
    let troubled = RunResult::from_outcome(&fixture::open_loop_troubled()).client;
    assert!(troubled.bound);
    let reason = troubled.bound_reason.unwrap();
    assert!(reason.contains("w0") && reason.contains("97%"), "{reason}");
    assert!(reason.contains("bounded by the client, not the server"), "{reason}");

    let calm = RunResult::from_outcome(&fixture::closed_loop()).client;
    assert!(!calm.bound);
    assert_eq!(calm.bound_reason, None);

    let edge = ClientSummary::from_workers(
        &[
            crate::samples::WorkerCpu {
                name: "a".into(),
                cpu_seconds: 9.0,
                share: 0.9,
                ..crate::samples::WorkerCpu::default()
            },
            crate::samples::WorkerCpu {
                name: "b".into(),
                cpu_seconds: 9.5,
                share: 0.95,
                ..crate::samples::WorkerCpu::default()
            },
        ],
        0,
    );
    assert!(edge.bound_reason.unwrap().starts_with("2 workers used at least 90% of a core"));
}

#[test]
fn client_and_server_cpu_per_round_trip_count_every_echo() {
    let outcome = fixture::closed_loop();
    let received = outcome.metrics.counters.messages_received;
    let result = RunResult::from_outcome(&outcome);
    let client = &result.client;
    assert_eq!(client.cpu_seconds, 21.7 + 21.0);
    assert!((client.user_seconds - 16.2).abs() < 1e-9 && (client.system_seconds - 26.5).abs() < 1e-9);
    let client_us = client.cpu_us_per_round_trip.unwrap();
    assert!((client_us - 42.7e6 / received as f64).abs() < 1e-9, "{client_us}");
    let server_cpu = result.server.cpu_seconds.unwrap();
    let server_us = result.server.cpu_us_per_round_trip.unwrap();
    assert!((server_us - server_cpu * 1e6 / received as f64).abs() < 1e-9, "{server_us}");
    // Written and read back: the fields survive the file.
    let json = serde_json::to_vec(&result).unwrap();
    let parsed = RunResult::from_json_bytes(Path::new("cpu.json"), &json).unwrap();
    assert_eq!(parsed.client, result.client);
    assert_eq!(parsed.server.cpu_us_per_round_trip, Some(server_us));
    // Nothing echoed: no figure, rather than an infinity.
    let none = RunResult::from_outcome(&fixture::nothing_answered());
    assert_eq!((none.client.cpu_us_per_round_trip, none.server.cpu_us_per_round_trip), (None, None));
}

#[test]
fn non_finite_inputs_still_give_valid_json() {
    let mut outcome = fixture::closed_loop();
    outcome.elapsed_secs = f64::NAN;
    outcome.client_workers[0].share = f64::INFINITY;
    let result = RunResult::from_outcome(&outcome);
    let json = serde_json::to_vec(&result).unwrap();
    let parsed = RunResult::from_json_bytes(Path::new("nan.json"), &json).unwrap();
    assert_eq!(parsed.elapsed_s, 0.0);
}

#[test]
fn written_file_reads_back_equal() {
    let dir = temp_dir("roundtrip");
    let path = dir.join("run.json");
    let result = RunResult::from_outcome(&fixture::open_loop_troubled());
    result.write_json(&path).unwrap();
    assert_eq!(RunResult::read_json(&path).unwrap(), result);
    let leftovers: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers, [std::ffi::OsString::from("run.json")]);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn failed_write_keeps_the_previous_file_and_removes_the_temporary() {
    let dir = temp_dir("diskfull");
    let path = dir.join("run.json");
    std::fs::write(&path, b"previous complete file").unwrap();
    let error = write_atomically(&path, |out| {
        out.write_all(b"{\"schema_version\": 1, \"trunc")?;
        Err(io::Error::new(io::ErrorKind::StorageFull, "No space left on device"))
    })
    .unwrap_err();
    let message = crate::causes::with_causes(&error);
    assert!(message.contains(&path.display().to_string()) && message.contains("No space left"), "{message}");
    assert_eq!(std::fs::read(&path).unwrap(), b"previous complete file");
    assert!(!atomic::temp_path(&path).exists());
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn failed_write_leaves_no_file_where_there_was_none() {
    let dir = temp_dir("nofile");
    let path = dir.join("run.json");
    let _ = write_atomically(&path, |out| {
        out.write_all(&[b'x'; 100_000])?;
        Err(io::Error::new(io::ErrorKind::StorageFull, "No space left on device"))
    });
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn writing_into_a_missing_directory_names_the_path() {
    let path = Path::new("/nonexistent-wsbench-dir/run.json");
    let error = RunResult::from_outcome(&fixture::nothing_answered()).write_json(path).unwrap_err();
    assert_eq!(error.to_string(), "cannot write /nonexistent-wsbench-dir/run.json");
    let message = crate::causes::with_causes(&error);
    assert_eq!(message.matches("No such file or directory").count(), 1, "{message}");
}

#[test]
fn reading_a_missing_file_names_it() {
    let error = RunResult::read_json(Path::new("/nonexistent-wsbench-dir/run.json")).unwrap_err();
    assert_eq!(error.to_string(), "cannot read /nonexistent-wsbench-dir/run.json");
}

#[test]
fn reading_non_json_says_so_and_names_the_file() {
    let error = RunResult::from_json_bytes(Path::new("run.json"), b"wrk 4.2.0 output").unwrap_err();
    let message = error.to_string();
    assert!(message.starts_with("run.json is not a wsbench result file: it is not valid JSON"), "{message}");
}

#[test]
fn reading_a_newer_schema_says_a_newer_wsbench_wrote_it() {
    let mut json = serde_json::to_value(RunResult::from_outcome(&fixture::nothing_answered())).unwrap();
    let newer = SCHEMA_VERSION + 1;
    json["schema_version"] = newer.into();
    let error = RunResult::from_json_bytes(Path::new("new.json"), json.to_string().as_bytes()).unwrap_err();
    assert!(matches!(error, ResultError::NewerSchema { found, .. } if found == u64::from(newer)));
    assert!(error.to_string().contains("new.json was written by a newer wsbench"), "{error}");
}

#[test]
fn reading_json_that_is_not_a_result_says_what_is_wrong() {
    let read = |text: &str| {
        RunResult::from_json_bytes(Path::new("x.json"), text.as_bytes()).unwrap_err().to_string()
    };
    assert_eq!(read("[1, 2]"), "x.json is not a wsbench result file: it is JSON but not an object");
    assert_eq!(read("{\"a\": 1}"), "x.json is not a wsbench result file: it has no `schema_version`");
    assert!(read("{\"schema_version\": \"one\"}").contains("not a version number"));
    let mut json = serde_json::to_value(RunResult::from_outcome(&fixture::nothing_answered())).unwrap();
    json.as_object_mut().unwrap().remove("summary");
    let error = RunResult::from_json_bytes(Path::new("x.json"), json.to_string().as_bytes()).unwrap_err();
    assert!(error.to_string().contains("missing field `summary`"), "{error}");
}

#[test]
fn saturated_values_are_kept_at_the_histogram_maximum() {
    let mut metrics = Metrics::default();
    record_us(&mut metrics.latency, u64::MAX);
    let decoded = RunResult::from_outcome(&outcome_with(metrics.clone())).common_metrics().unwrap();
    assert_eq!(decoded.latency, metrics.latency);
}

#[test]
fn printed_result_sits_between_the_markers_the_collect_script_cuts_on() {
    let dir = temp_dir("markers");
    let path = dir.join("shard-3.json");
    std::fs::write(&path, "{\n  \"a\": 1\n}").unwrap();
    let printed = between_markers(&path).unwrap();
    assert_eq!(
        printed,
        "----- BEGIN wsbench result shard-3.json -----\n{\n  \"a\": 1\n}\n----- END wsbench result shard-3.json -----\n"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_open_loop_gives_its_cpu_per_paced_message_and_a_closed_loop_none() {
    let outcome = fixture::open_loop_troubled();
    let client = RunResult::from_outcome(&outcome).client;
    let sent = outcome.metrics.counters.messages_sent;
    assert!(sent > 0 && client.cpu_seconds > 0.0);
    let expected = client.cpu_seconds * 1e6 / sent as f64;
    assert_eq!(client.cpu_us_per_paced_message, Some(expected));
    let json = serde_json::to_value(&client).unwrap();
    assert_eq!(json["cpu_us_per_paced_message"].as_f64(), Some(expected));

    let closed = RunResult::from_outcome(&fixture::closed_loop()).client;
    assert!(closed.cpu_us_per_round_trip.is_some());
    assert_eq!(closed.cpu_us_per_paced_message, None);
}

/// The V2 + DEFLATE bytes of `text` (base64), and back.
fn raw(text: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(text).unwrap()
}

fn text(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A V2 + DEFLATE histogram of the uncompressed V2 bytes `plain`.
fn compressed(plain: &[u8]) -> String {
    use std::io::Write as _;
    let mut deflater = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    deflater.write_all(plain).unwrap();
    let zlib = deflater.finish().unwrap();
    let mut bytes = 0x1c84_9314u32.to_be_bytes().to_vec();
    bytes.extend_from_slice(&(zlib.len() as u32).to_be_bytes());
    bytes.extend_from_slice(&zlib);
    text(&bytes)
}

/// An uncompressed V2 header of wsbench's bounds announcing `payload` bytes of counts.
fn v2_header(payload: u32) -> Vec<u8> {
    let mut header = 0x1c84_9313u32.to_be_bytes().to_vec();
    header.extend_from_slice(&payload.to_be_bytes());
    header.extend_from_slice(&0u32.to_be_bytes());
    header.extend_from_slice(&3u32.to_be_bytes());
    header.extend_from_slice(&1u64.to_be_bytes());
    header.extend_from_slice(&crate::metrics::HISTOGRAM_MAX_US.to_be_bytes());
    header.extend_from_slice(&1f64.to_be_bytes());
    header
}

#[test]
fn a_histogram_failing_its_zlib_checksum_is_refused() {
    let mut histogram = crate::metrics::new_histogram();
    histogram.record_n(250, 7).unwrap();
    let mut bytes = raw(&encode_histogram(&histogram));
    let last = bytes.len() - 1;
    bytes[last] ^= 0x55;
    let error = decode_histogram("histograms.latency", &text(&bytes)).unwrap_err().to_string();
    assert!(error.contains("histograms.latency") && error.contains("fails its zlib checksum"), "{error}");
}

#[test]
fn a_histogram_inflating_past_its_bound_is_refused_before_it_is_decoded() {
    let payload = (codec::MAX_HISTOGRAM_DECODED_BYTES + 4096) as u32;
    let mut plain = v2_header(payload);
    plain.resize(plain.len() + payload as usize, 0);
    let error = decode_histogram("histograms.connect", &compressed(&plain)).unwrap_err().to_string();
    assert!(error.contains("inflates to more than 4 MiB"), "{error}");
}

#[test]
fn a_histogram_header_promising_more_counts_than_it_holds_is_refused() {
    let mut plain = v2_header(1 << 30);
    plain.extend_from_slice(&[2, 0]);
    let error = decode_histogram("x", &compressed(&plain)).unwrap_err().to_string();
    assert!(error.contains("its header says 1073741824 bytes of counts but it holds 2"), "{error}");
}

#[test]
fn a_histogram_whose_bounds_need_too_many_counters_is_refused() {
    let mut plain = v2_header(0);
    plain[12..16].copy_from_slice(&5u32.to_be_bytes());
    plain[24..32].copy_from_slice(&u64::MAX.to_be_bytes());
    let error = decode_histogram("x", &compressed(&plain)).unwrap_err().to_string();
    assert!(error.contains("need too many counters"), "{error}");
}

#[test]
fn a_histogram_with_an_absurd_count_is_refused() {
    let mut histogram = crate::metrics::new_histogram();
    histogram.record_n(2, i64::MAX as u64).unwrap();
    let error =
        decode_histogram("histograms.latency", &encode_histogram(&histogram)).unwrap_err().to_string();
    assert!(error.contains("counts add up to more than"), "{error}");
}

#[test]
fn a_result_whose_histogram_disagrees_with_its_summary_is_refused_naming_the_file() {
    let mut metrics = Metrics::default();
    record_us(&mut metrics.latency, 100);
    record_us(&mut metrics.latency, 200);
    let mut result = RunResult::from_outcome(&outcome_with(metrics));
    let mut edited = crate::metrics::new_histogram();
    edited.record_n(100, 5).unwrap();
    result.histograms.latency = encode_histogram(&edited);
    let bytes = serde_json::to_vec(&result).unwrap();
    let error = RunResult::from_json_bytes(Path::new("shard-1.json"), &bytes).unwrap_err();
    assert!(matches!(error, ResultError::DamagedHistogram { .. }));
    assert_eq!(
        error.to_string(),
        "shard-1.json is damaged or was edited: its `histograms.latency` holds 5 samples but \
         `summary.latency_us.count` says 2; give the file as its run wrote it"
    );
}

#[test]
fn a_scenario_histogram_that_does_not_decode_is_refused_naming_the_file() {
    let mut result = RunResult::from_outcome(&fixture::closed_loop());
    result.histograms.scenario.insert("flow_steps".into(), serde_json::json!({ "call": "AAAA" }));
    let bytes = serde_json::to_vec(&result).unwrap();
    let error = RunResult::from_json_bytes(Path::new("r.json"), &bytes).unwrap_err().to_string();
    assert!(
        error.starts_with(
            "r.json is damaged or was edited: its `histograms.flow_steps.call` cannot be decoded"
        ),
        "{error}"
    );
}
