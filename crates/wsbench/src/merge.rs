//! `wsbench merge`: one result out of the results of a run's shards (`--shard I/N` on several
//! machines, or the children of `run --processes N`), without losing anything.
//!
//! A run past one process's open-file limit, or past one machine, is run as shards that
//! start together (`--start-at`). Their result files embed their HdrHistograms losslessly, so
//! the merge decodes them ([`RunResult::metrics`]) and adds them ([`Metrics::merge`]): the
//! merged percentiles are exactly those of one histogram fed every shard's samples, and the
//! counters are sums. The rest follows these rules:
//!
//! - **Timelines** are aligned on wall-clock seconds: a shard that started `k` seconds after
//!   the earliest one (rounded to the nearest second) has its seconds shifted by `k`.
//! - **Throughput**: the shards ran at the same time, so `echoes_per_sec` is the sum of the
//!   shards' own `echoes_per_sec`, and `measured_echoes` the sum of theirs. `measured_s` is
//!   the longest shard's window, `elapsed_s` spans from the first start to the last end.
//! - **Server**: when every shard probed the same processes on the same host, the merged
//!   `server` is the shard's with the most samples (the figures recomputed with the merged
//!   connections and echoes); otherwise it is the first shard's, as that shard saw it, with
//!   `found_by` saying so. Every shard's own server and client sections are kept in `shards`.
//! - **Client** workers are concatenated, named after their shard (`shard1/wsbench-w0`).
//! - `interrupted` if any shard was interrupted.
//!
//! Shards of different scenarios do not merge: their `config` objects must agree on every
//! key but the ones that legitimately differ between shards ([`SHARD_KEYS`]).

use std::path::{Path, PathBuf};

use crate::metrics::Metrics;
use crate::result::{LittlesLaw, ResultError, RunResult, ServerSummary, ShardSummary};
use crate::samples::{RunOutcome, ServerReport, WorkerCpu};

/// Configuration keys that may differ between shards of one scenario.
pub const SHARD_KEYS: &[&str] =
    &["shard", "start_at_unix_ms", "json", "hlog", "client_cpus", "source_addrs", "server_pid", "no_probe"];

/// Why results could not be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("nothing to merge: give the result files of the shards")]
    Empty,
    #[error(transparent)]
    Read(#[from] ResultError),
    #[error("{file}")]
    Decode { file: String, source: ResultError },
    #[error(
        "cannot merge {first} and {other}: they ran different scenarios (`{key}` is {first_value} in \
         {first} but {other_value} in {other})"
    )]
    DifferentScenarios { key: String, first: String, first_value: String, other: String, other_value: String },
}

/// One result to merge, with the name it is reported under (its file).
#[derive(Debug, Clone)]
pub struct ShardInput {
    pub name: String,
    pub result: RunResult,
    /// How the shard's process died, when it did (`run --processes` knows).
    pub died: Option<String>,
}

/// Reads and merges result files; errors name the file at fault.
pub fn merge_files(paths: &[PathBuf]) -> Result<RunResult, MergeError> {
    let inputs = paths
        .iter()
        .map(|path| {
            Ok(ShardInput {
                name: path.display().to_string(),
                result: RunResult::read_json(path)?,
                died: None,
            })
        })
        .collect::<Result<Vec<_>, MergeError>>()?;
    merge(&inputs)
}

/// `wsbench merge FILE… [-o OUT]`: merges, writes the merged result to `output` if given,
/// and returns it ([`crate::report::render_merge`] shows it).
pub fn command(files: &[PathBuf], output: Option<&Path>) -> Result<RunResult, MergeError> {
    let merged = merge_files(files)?;
    if let Some(path) = output {
        merged.write_json(path)?;
    }
    Ok(merged)
}

/// Merges the results of a run's shards (see the module documentation for the rules).
pub fn merge(inputs: &[ShardInput]) -> Result<RunResult, MergeError> {
    let first = inputs.first().ok_or(MergeError::Empty)?;
    for other in &inputs[1..] {
        check_same_scenario(first, other)?;
    }
    let start_ms = inputs.iter().map(|i| i.result.started_at_unix_ms).min().unwrap_or(0);
    let Sums {
        metrics,
        measured_echoes,
        echoes_per_sec,
        measured_secs,
        elapsed_secs,
        connections,
        workers,
        shards,
    } = Sums::of(inputs, start_ms)?;
    let same_server = inputs.iter().all(|i| server_identity(&i.result) == server_identity(&first.result));
    let (server_input, note) = if same_server {
        let most = inputs.iter().max_by_key(|i| i.result.server.samples.len()).unwrap_or(first);
        (most, None)
    } else {
        (
            first,
            Some(format!(
                "shard {} only; the shards probed different server processes, see `shards`",
                first.name
            )),
        )
    };
    let server_offset = server_input.result.started_at_unix_ms - start_ms;
    let mut config = first.result.config.clone();
    if let Some(object) = config.as_object_mut()
        && object.contains_key("shard")
    {
        object.insert("shard".to_owned(), serde_json::Value::Null);
    }
    let in_flight = first.result.summary.littles_law.in_flight;
    let outcome = RunOutcome {
        scenario: first.result.scenario.clone(),
        target_url: first.result.target.url.clone(),
        target_builtin: first.result.target.builtin,
        config,
        started_at_unix_ms: start_ms,
        elapsed_secs,
        measured_secs,
        measured_echoes,
        // Shards connect at the same time: the slowest one's connect phase is the run's.
        connect_phase_secs: inputs.iter().map(|i| i.result.summary.connect_phase_s).fold(0.0, f64::max),
        interrupted: inputs.iter().any(|i| i.result.interrupted),
        connections,
        in_flight,
        metrics,
        server: server_report(&server_input.result.server, server_offset),
        client_workers: workers,
        machine: first.result.machine.clone(),
    };
    let mut merged = RunResult::from_outcome(&outcome);
    merged.summary.echoes_per_sec = echoes_per_sec;
    merged.summary.littles_law =
        LittlesLaw::new(connections, in_flight, echoes_per_sec, merged.summary.latency_us.mean);
    if let Some(note) = note {
        // The first shard's figures as it measured them: its server served other shards too.
        let mut server = first.result.server.clone();
        server.found_by = Some(match server.found_by {
            Some(how) => format!("{how}; {note}"),
            None => note,
        });
        merged.server = server;
    }
    merged.shards = shards;
    Ok(merged)
}

/// What the shards add up to: their metrics on one clock, counts, rates and workers.
struct Sums {
    metrics: Metrics,
    measured_echoes: u64,
    echoes_per_sec: f64,
    measured_secs: f64,
    elapsed_secs: f64,
    connections: u64,
    workers: Vec<WorkerCpu>,
    shards: Vec<ShardSummary>,
}

impl Sums {
    /// Adds up every shard, its timeline shifted to start `start_ms` (the earliest start).
    fn of(inputs: &[ShardInput], start_ms: u64) -> Result<Sums, MergeError> {
        let mut sums = Sums {
            metrics: Metrics::default(),
            measured_echoes: 0,
            echoes_per_sec: 0.0,
            measured_secs: 0.0,
            elapsed_secs: 0.0,
            connections: 0,
            workers: Vec::new(),
            shards: Vec::with_capacity(inputs.len()),
        };
        for (position, input) in inputs.iter().enumerate() {
            let result = &input.result;
            let mut shard_metrics =
                result.metrics().map_err(|source| MergeError::Decode { file: input.name.clone(), source })?;
            let offset_ms = result.started_at_unix_ms - start_ms;
            let shift = (offset_ms + 500) / 1000;
            for interval in &mut shard_metrics.intervals {
                interval.second += shift;
            }
            sums.metrics.merge(&shard_metrics);
            sums.measured_echoes += result.summary.measured_echoes;
            sums.echoes_per_sec += result.summary.echoes_per_sec;
            sums.measured_secs = sums.measured_secs.max(result.measured_s);
            sums.elapsed_secs = sums.elapsed_secs.max(offset_ms as f64 / 1e3 + result.elapsed_s);
            sums.connections += result.summary.littles_law.connections;
            let label = shard_of(result).map_or(position as u64, |(index, _)| index);
            sums.workers.extend(
                result
                    .client
                    .workers
                    .iter()
                    .map(|w| WorkerCpu { name: format!("shard{label}/{}", w.name), ..w.clone() }),
            );
            sums.shards.push(ShardSummary {
                file: input.name.clone(),
                host: result.machine.hostname.clone(),
                shard: shard_of(result).map(|(index, count)| format!("{index}/{count}")),
                started_at_unix_ms: result.started_at_unix_ms,
                interrupted: result.interrupted,
                died: input.died.clone(),
                connections_established: result.summary.connections.established,
                echoes_per_sec: result.summary.echoes_per_sec,
                server: result.server.clone(),
                client: result.client.clone(),
            });
        }
        Ok(sums)
    }
}

/// `(index, count)` of a result's `config.load.shard`.
fn shard_of(result: &RunResult) -> Option<(u64, u64)> {
    let shard = result.config.get("shard")?;
    Some((shard.get("index")?.as_u64()?, shard.get("count")?.as_u64()?))
}

/// Which server processes a result probed: its host and pid set.
fn server_identity(result: &RunResult) -> (&str, Vec<u32>) {
    let mut pids = result.server.pids.clone();
    pids.sort_unstable();
    (&result.machine.hostname, pids)
}

/// The probe's raw report behind a server section, its sample times moved `offset_ms` later.
pub(crate) fn server_report(server: &ServerSummary, offset_ms: u64) -> ServerReport {
    ServerReport {
        pids: server.pids.clone(),
        found_by: server.found_by.clone(),
        unprobed_reason: if server.probed { None } else { server.unprobed_reason.clone() },
        samples: server
            .samples
            .iter()
            .map(|s| crate::samples::ServerSample { t_ms: s.t_ms + offset_ms, ..*s })
            .collect(),
    }
}

/// Refuses shards whose configurations differ in anything but [`SHARD_KEYS`].
fn check_same_scenario(first: &ShardInput, other: &ShardInput) -> Result<(), MergeError> {
    let differ = |key: &str, a: Option<&serde_json::Value>, b: Option<&serde_json::Value>| {
        let show = |v: Option<&serde_json::Value>| match v {
            None => "absent".to_owned(),
            Some(v) => {
                let text = v.to_string();
                if text.chars().count() > 60 {
                    format!("{}…", text.chars().take(60).collect::<String>())
                } else {
                    text
                }
            }
        };
        MergeError::DifferentScenarios {
            key: key.to_owned(),
            first: first.name.clone(),
            first_value: show(a),
            other: other.name.clone(),
            other_value: show(b),
        }
    };
    let (a, b) = (&first.result, &other.result);
    if a.scenario != b.scenario {
        let (x, y) =
            (serde_json::Value::from(a.scenario.clone()), serde_json::Value::from(b.scenario.clone()));
        return Err(differ("scenario", Some(&x), Some(&y)));
    }
    match (a.config.as_object(), b.config.as_object()) {
        (Some(x), Some(y)) => {
            let keys = x.keys().chain(y.keys().filter(|k| !x.contains_key(*k)));
            for key in keys {
                if SHARD_KEYS.contains(&key.as_str()) {
                    continue;
                }
                if x.get(key) != y.get(key) {
                    return Err(differ(key, x.get(key), y.get(key)));
                }
            }
            Ok(())
        }
        _ if a.config != b.config => Err(differ("config", Some(&a.config), Some(&b.config))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{Counters, new_histogram, record_us};
    use crate::result::fixture;
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
                let interval = metrics.interval(second);
                interval.echoes += 1;
                record_us(&mut interval.latency, value);
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
        outcome.measured_echoes = 10_000 * (index + 1);
        outcome.measured_secs = 10.0;
        outcome.connections = 90 + index;
        outcome.started_at_unix_ms += index * 30; // started together, give or take
        outcome.client_workers.truncate(1);
        if let Some(config) = outcome.config.as_object_mut() {
            config.insert("shard".into(), serde_json::json!({ "index": index, "count": count }));
            config.insert("json".into(), serde_json::json!(format!("shard-{index}.json")));
        }
        ShardInput {
            name: format!("shard-{index}.json"),
            result: RunResult::from_outcome(&outcome),
            died: None,
        }
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
        let decoded = merged.metrics().unwrap();
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
        assert_eq!(merged.summary.measured_echoes, 60_000);
        assert_eq!(merged.summary.echoes_per_sec, 1_000.0 + 2_000.0 + 3_000.0);
        assert_eq!(merged.summary.littles_law.connections, 273);
        assert_eq!(merged.measured_s, 10.0);
        assert_eq!(merged.timeline.iter().map(|p| p.echoes).sum::<u64>(), 60_000);
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
        assert_eq!(back.metrics().unwrap().latency.len(), 60_000);
    }

    #[test]
    fn timelines_align_on_wall_clock_seconds() {
        let (mut inputs, _) = shards(2);
        inputs[1].result.started_at_unix_ms = inputs[0].result.started_at_unix_ms + 2_000;
        let merged = merge(&inputs).unwrap();
        let own = |i: usize| inputs[i].result.timeline.iter().map(|p| p.echoes).collect::<Vec<_>>();
        let (a, b) = (own(0), own(1));
        let got: Vec<u64> = merged.timeline.iter().map(|p| p.echoes).collect();
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
        });
        let merged = merge(&inputs).unwrap();
        assert_eq!(merged.server.samples.len(), inputs[1].result.server.samples.len());
        assert_eq!(merged.server.found_by.as_deref(), Some("spawned"));
        // Shifted onto the merged clock (shard 1 started 30 ms later).
        assert_eq!(merged.server.samples[1].t_ms, inputs[1].result.server.samples[1].t_ms + 30);
        let established = merged.summary.connections.established;
        let growth = merged.server.rss_peak_bytes.unwrap() - merged.server.rss_baseline_bytes.unwrap();
        assert_eq!(
            merged.server.connections_per_mb,
            Some(established as f64 / (growth as f64 / 1_048_576.0))
        );

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
    fn empty_shards_merge_to_empty_histograms() {
        let mut outcome = fixture::nothing_answered();
        outcome.metrics.latency = new_histogram();
        let input = |name: &str| ShardInput {
            name: name.into(),
            result: RunResult::from_outcome(&outcome),
            died: None,
        };
        let merged = merge(&[input("a"), input("b")]).unwrap();
        assert_eq!(merged.summary.connections.attempted, 20);
        assert_eq!(merged.summary.latency_us.count, 0);
        assert_eq!(merged.summary.echoes_per_sec, 0.0);
    }
}
