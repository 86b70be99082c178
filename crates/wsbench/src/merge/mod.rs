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
//!   the earliest one (rounded to the nearest second) has its seconds shifted by `k`. A
//!   second's counts are sums; its p50 and p99 the highest shard's, an upper bound (the
//!   files keep each second's percentiles, not its histogram).
//! - **Throughput**: the shards ran at the same time, so `exchanges_per_sec` is the sum of the
//!   shards' own `exchanges_per_sec`, and `measured_exchanges` the sum of theirs. `measured_s` is
//!   the longest shard's window, `elapsed_s` spans from the first start to the last end.
//! - **Server**: when every shard probed the same processes on the same host, the merged
//!   `server` is the shard's with the most samples (the figures recomputed with the merged
//!   connections and echoes); otherwise it is the first shard's, as that shard saw it, with
//!   `found_by` saying so. Every shard's own server and client sections are kept in `shards`.
//! - **Client** workers are concatenated, named after their shard (`shard1/wsbench-w0`); the
//!   shards' resident memory and heap in use are summed (each is a process of its own), so
//!   the client's bytes per connection are every process's heap growth over every connection.
//! - **Memory per connection** of the server and of the kernel (slab) follows the server
//!   section: the growth one probe saw, over the merged connections. The kernel's slab is the
//!   whole machine's, so shards on one machine each saw all of it: it is not summed.
//! - `interrupted` if any shard was interrupted; `ended_early` if every shard ended early.
//!
//! - **Coverage**: shards of `--shard I/N` must be all `N` of them, or the merge is refused
//!   naming the missing ones ([`check_whole_run`]); with `--partial` (and in a `--processes`
//!   run whose shard left no result) the merged result says which it holds (`partial`) and
//!   its report says "k of N shards". Its `config` is still the whole run's.
//!
//! Shards of different scenarios do not merge: their `config` objects must agree on every
//! key but the ones that legitimately differ between shards ([`SHARD_KEYS`]). Nor do
//! mistakes that would count a shard twice or mix runs ([`check_one_run`]): the same file
//! given twice (by any path), the same result twice (the same shard started at the same
//! instant, e.g. a copy), two results of the same shard `I/N`, or results of different runs
//! (`run_id`). Files written before wsbench recorded run ids merge with each other, but not
//! with files that have one. Nor does a merged result merge again with other files: its
//! shards are in it already.

use std::path::{Path, PathBuf};

use crate::metrics::Metrics;
use crate::result::{
    EndedEarly, LittlesLaw, PartialRun, ResultError, RunResult, ServerSummary, ShardSummary,
};
use crate::samples::{ClientMemory, RunOutcome, ServerReport, WorkerCpu};

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
    #[error(
        "cannot merge {merged} and {other}: {merged} is already the merged result of {shards} shards \
         (run --processes or wsbench merge); merge each shard's own file once (NAME.shards/shard-I.json \
         beside a --processes result), or use {merged} as it is"
    )]
    AlreadyMerged { merged: String, other: String, shards: usize },
    #[error("cannot merge {first} and {other}: they are the same file; give each shard's result once")]
    SameFile { first: String, other: String },
    #[error(
        "cannot merge {first} and {other}: they are the same result (shard {shard}, started at \
         {started_at_unix_ms} ms); give each shard's result once"
    )]
    SameResult { first: String, other: String, shard: String, started_at_unix_ms: u64 },
    #[error("cannot merge {first} and {other}: both are shard {shard} of the run; give each shard once")]
    SameShard { first: String, other: String, shard: String },
    #[error(
        "the files are {} of the run's {count} shards: {} missing; give every shard's result \
         file, or --partial to merge these alone (the merged result then says so)",
        given,
        if missing.len() == 1 { format!("shard {} is", missing[0]) } else { format!("shards {} are", missing.join(", ")) }
    )]
    MissingShards { given: u64, count: u64, missing: Vec<String> },
    #[error(
        "cannot merge {first} and {other}: {first} is shard {first_shard} and {other} shard \
         {other_shard}: shards of one run share their N"
    )]
    DifferentShardCounts { first: String, other: String, first_shard: String, other_shard: String },
    #[error(
        "cannot merge {first} and {other}: they are results of different runs (run id {first_id} \
         and {other_id}); merge the shards of one run (started by hand: give them one --run-id)"
    )]
    DifferentRuns { first: String, other: String, first_id: String, other_id: String },
}

/// One result to merge, with the name it is reported under (its file).
#[derive(Debug, Clone)]
pub struct ShardInput {
    pub name: String,
    pub result: RunResult,
    /// How the shard's process died, when it did (`run --processes` knows).
    pub died: Option<String>,
}

/// Reads and merges result files; errors name the file at fault. Unless `partial`, the files
/// must be every shard of their run ([`check_whole_run`]).
pub fn merge_files(paths: &[PathBuf], partial: bool) -> Result<RunResult, MergeError> {
    check_distinct_files(paths)?;
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
    let merged = merge(&inputs)?;
    match merged.partial {
        Some(coverage) if !partial => Err(MergeError::MissingShards {
            given: coverage.shards,
            count: coverage.of,
            missing: coverage.missing,
        }),
        _ => Ok(merged),
    }
}

/// `wsbench merge FILE… [-o OUT] [--partial]`: merges, writes the merged result to `output`
/// if given, and returns it ([`crate::report::render_merge`] shows it).
pub fn command(files: &[PathBuf], output: Option<&Path>, partial: bool) -> Result<RunResult, MergeError> {
    let merged = merge_files(files, partial)?;
    if let Some(path) = output {
        merged.write_json(path)?;
    }
    Ok(merged)
}

/// Merges the results of a run's shards (see the module documentation for the rules).
pub fn merge(inputs: &[ShardInput]) -> Result<RunResult, MergeError> {
    let first = check_mergeable(inputs)?;
    let start_ms = inputs.iter().map(|i| i.result.started_at_unix_ms).min().unwrap_or(0);
    let Sums {
        metrics,
        measured_exchanges,
        exchanges_per_sec,
        measured_secs,
        elapsed_secs,
        connections,
        workers,
        client_memory,
        shards,
    } = Sums::of(inputs, start_ms)?;
    let (server_input, note) = server_of(inputs, first);
    let server_offset = server_input.result.started_at_unix_ms - start_ms;
    let mut config = first.result.config.clone();
    if let Some(object) = config.as_object_mut()
        && object.contains_key("shard")
    {
        object.insert("shard".to_owned(), serde_json::Value::Null);
    }
    let in_flight = first.result.summary.littles_law.in_flight;
    let server = server_report(&server_input.result.server, server_offset);
    let figures =
        crate::scenario::figures_for(&first.result.scenario, &metrics, &config, measured_secs, &server);
    let outcome = RunOutcome {
        scenario: first.result.scenario.clone(),
        target_url: first.result.target.url.clone(),
        target_builtin: first.result.target.builtin,
        config,
        started_at_unix_ms: start_ms,
        elapsed_secs,
        measured_secs,
        measured_exchanges,
        // Shards connect at the same time: the slowest one's connect phase is the run's.
        connect_phase_secs: inputs.iter().map(|i| i.result.summary.connect_phase_s).fold(0.0, f64::max),
        drain_secs: inputs.iter().map(|i| i.result.drain_s).fold(0.0, f64::max),
        interrupted: inputs.iter().any(|i| i.result.interrupted),
        connections,
        in_flight,
        metrics,
        figures,
        server,
        client_workers: workers,
        client_memory,
        machine: first.result.machine.clone(),
        disruptions: first.result.recovery.as_ref().map(|r| r.disruptions.clone()).unwrap_or_default(),
    };
    let mut merged = RunResult::from_outcome(&outcome);
    merged.run_id.clone_from(&first.result.run_id);
    merged.summary.exchanges_per_sec = exchanges_per_sec;
    merged.summary.littles_law =
        LittlesLaw::new(connections, in_flight, exchanges_per_sec, merged.summary.latency_us.mean)
            .varying_if(!merged.stages.is_empty());
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
    merged.partial = check_whole_run(inputs)?;
    // Every shard ran out of connections: so did the run, for the reasons all of them say.
    let early = |input: &ShardInput| input.result.ended_early.as_ref().map(|e| e.planned_measured_s);
    if let Some(Some(planned)) = inputs.iter().map(early).reduce(|all, one| all.and(one)) {
        merged.ended_early = Some(EndedEarly::new(planned, &merged.counters));
    }
    Ok(merged)
}

/// The first of `inputs`, once they are shown to be shards of one run of one scenario, none
/// of them merged already.
fn check_mergeable(inputs: &[ShardInput]) -> Result<&ShardInput, MergeError> {
    let first = inputs.first().ok_or(MergeError::Empty)?;
    check_not_merged(inputs)?;
    for other in &inputs[1..] {
        check_same_scenario(first, other)?;
    }
    for (n, input) in inputs.iter().enumerate() {
        for other in &inputs[n + 1..] {
            check_one_run(input, other)?;
        }
    }
    Ok(first)
}

/// What the shards add up to: their metrics on one clock, counts, rates and workers.
/// Whose server figures the merge keeps: when every shard probed the same processes on the
/// same host, the shard's with the most samples; otherwise the first shard's, with a note
/// saying so.
fn server_of<'a>(inputs: &'a [ShardInput], first: &'a ShardInput) -> (&'a ShardInput, Option<String>) {
    let same_server = inputs.iter().all(|i| server_identity(&i.result) == server_identity(&first.result));
    if same_server {
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
    }
}

struct Sums {
    metrics: Metrics,
    measured_exchanges: u64,
    exchanges_per_sec: f64,
    measured_secs: f64,
    elapsed_secs: f64,
    connections: u64,
    workers: Vec<WorkerCpu>,
    /// Every shard's client process's memory, summed (unknown if one shard's is).
    client_memory: ClientMemory,
    shards: Vec<ShardSummary>,
}

impl Sums {
    /// Adds up every shard, its timeline shifted to start `start_ms` (the earliest start).
    fn of(inputs: &[ShardInput], start_ms: u64) -> Result<Sums, MergeError> {
        let mut sums = Sums {
            metrics: Metrics::default(),
            measured_exchanges: 0,
            exchanges_per_sec: 0.0,
            measured_secs: 0.0,
            elapsed_secs: 0.0,
            connections: 0,
            workers: Vec::new(),
            client_memory: ClientMemory {
                rss_baseline_bytes: Some(0),
                rss_connected_bytes: Some(0),
                heap_baseline_bytes: Some(0),
                heap_connected_bytes: Some(0),
            },
            shards: Vec::with_capacity(inputs.len()),
        };
        for (position, input) in inputs.iter().enumerate() {
            let result = &input.result;
            let mut shard_metrics = crate::scenario::decode_metrics(result)
                .map_err(|source| MergeError::Decode { file: input.name.clone(), source })?;
            let offset_ms = result.started_at_unix_ms - start_ms;
            let shift = (offset_ms + 500) / 1000;
            for point in &mut shard_metrics.timeline {
                point.second += shift;
            }
            sums.metrics.merge(&shard_metrics);
            sums.measured_exchanges += result.summary.measured_exchanges;
            sums.exchanges_per_sec += result.summary.exchanges_per_sec;
            sums.measured_secs = sums.measured_secs.max(result.measured_s);
            sums.elapsed_secs = sums.elapsed_secs.max(offset_ms as f64 / 1e3 + result.elapsed_s);
            sums.connections += result.summary.littles_law.connections;
            sums.client_memory = sums.client_memory.plus(ClientMemory {
                rss_baseline_bytes: result.client.rss_baseline_bytes,
                rss_connected_bytes: result.client.rss_connected_bytes,
                heap_baseline_bytes: result.client.heap_baseline_bytes,
                heap_connected_bytes: result.client.heap_connected_bytes,
            });
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
                exchanges_per_sec: result.summary.exchanges_per_sec,
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
        tls_handshakes: server.tls_handshakes.map(Box::new),
    }
}

/// Refuses a file given twice, under any name (`a.json`, `./a.json`, a link to it). Files
/// that cannot be resolved are left to the reading that follows, which names them.
fn check_distinct_files(paths: &[PathBuf]) -> Result<(), MergeError> {
    let resolved: Vec<Option<PathBuf>> = paths.iter().map(|p| std::fs::canonicalize(p).ok()).collect();
    for (n, path) in resolved.iter().enumerate() {
        let Some(path) = path else { continue };
        if let Some(m) = resolved[n + 1..].iter().position(|other| other.as_ref() == Some(path)) {
            return Err(MergeError::SameFile {
                first: paths[n].display().to_string(),
                other: paths[n + 1 + m].display().to_string(),
            });
        }
    }
    Ok(())
}

/// Refuses two results that cannot both be shards of one run: the same result twice (the
/// same shard, or both unsharded, started at the same instant), the same shard twice, or
/// results of different runs. A result without a run id (an older wsbench) only merges
/// with others without one.
fn check_one_run(first: &ShardInput, other: &ShardInput) -> Result<(), MergeError> {
    let (a, b) = (&first.result, &other.result);
    let names = || (first.name.clone(), other.name.clone());
    let shard = shard_of(a).map_or("none".to_owned(), |(index, count)| format!("{index}/{count}"));
    if shard_of(a) == shard_of(b) && a.started_at_unix_ms == b.started_at_unix_ms {
        let (first, other) = names();
        return Err(MergeError::SameResult { first, other, shard, started_at_unix_ms: a.started_at_unix_ms });
    }
    if shard_of(a).is_some() && shard_of(a) == shard_of(b) {
        let (first, other) = names();
        return Err(MergeError::SameShard { first, other, shard });
    }
    if a.run_id != b.run_id {
        let id = |id: &Option<String>| id.clone().unwrap_or_else(|| "unknown (an older wsbench)".to_owned());
        let (first, other) = names();
        return Err(MergeError::DifferentRuns {
            first,
            other,
            first_id: id(&a.run_id),
            other_id: id(&b.run_id),
        });
    }
    Ok(())
}

/// Which shards of `--shard I/N` the inputs lack: `None` when they are all there (or the
/// inputs are not shards of `--shard`). Shards of different `N` are refused. (The same
/// shard twice is [`check_one_run`]'s.)
fn check_whole_run(inputs: &[ShardInput]) -> Result<Option<PartialRun>, MergeError> {
    let sharded: Vec<(&ShardInput, (u64, u64))> =
        inputs.iter().filter_map(|input| Some((input, shard_of(&input.result)?))).collect();
    let Some(&(first, (first_index, count))) = sharded.first() else { return Ok(None) };
    if let Some(&(other, (index, other_count))) = sharded.iter().find(|(_, (_, n))| *n != count) {
        return Err(MergeError::DifferentShardCounts {
            first: first.name.clone(),
            other: other.name.clone(),
            first_shard: format!("{first_index}/{count}"),
            other_shard: format!("{index}/{other_count}"),
        });
    }
    let missing: Vec<String> = (0..count)
        .filter(|index| !sharded.iter().any(|(_, (given, _))| given == index))
        .map(|index| format!("{index}/{count}"))
        .collect();
    if missing.is_empty() {
        return Ok(None);
    }
    Ok(Some(PartialRun { shards: count - missing.len() as u64, of: count, missing }))
}

/// Refuses a merged result given with other files: its shards are in it already (given
/// with one of them, that shard would count twice).
fn check_not_merged(inputs: &[ShardInput]) -> Result<(), MergeError> {
    if inputs.len() < 2 {
        return Ok(());
    }
    let Some(at) = inputs.iter().position(|input| !input.result.shards.is_empty()) else { return Ok(()) };
    let other = inputs.iter().enumerate().find(|(n, _)| *n != at).map_or("", |(_, input)| &input.name);
    Err(MergeError::AlreadyMerged {
        merged: inputs[at].name.clone(),
        other: other.to_owned(),
        shards: inputs[at].result.shards.len(),
    })
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
mod tests;
