//! `wsbench run --processes N`: one run split over N client processes of this machine.
//!
//! A process may open only so many files (20,000 on the project's machines, a hard limit),
//! one per connection, so bigger runs are run as N shards (`--shard i/N`) of the same
//! scenario, each its own process with its own limit, as the seed's five node.js clients
//! were. The parent starts the built-in server once (or uses the URL), samples the server
//! itself for the whole run (the children get `--no-probe`), spawns the children with one
//! `--start-at` instant about 1.5 s ahead so they start together, waits for them and merges
//! their result files losslessly ([`crate::merge`]), and their interval logs with `--hlog`
//! ([`crate::hlog::merge_files`]). The shards' files are kept next to the parent's `--json`
//! (`NAME.shards/shard-I.json`, `shard-I.hlog`), or in a temporary directory removed after.
//!
//! Each child re-runs this very binary as `wsbench run --settings-from-stdin`: the parent's
//! own [`RunSettings`], handed to it as data on its stdin (`wsbench_supervisor`), with the
//! resolved URL, the shard, the common start, its own result file and its share of the
//! client CPUs. Nothing holding them is written to disk: a `--bearer` token or a cookie
//! (redacted in result files) never lands beside the results that CI jobs upload, and
//! `NAME.shards/` holds the shards' result files and interval logs only. A protocol's
//! secret (`--password`) is not even in those settings: each child reads it from an
//! environment variable the parent sets for it alone (`crate::members::secrets_to_environment`).
//!
//! A loopback run of more than [`SOURCE_ADDRS_ABOVE`] connections would exhaust the ports
//! of one source address towards one destination, so unless `--source-addrs` is given the
//! children spread over `127.0.0.2`, `127.0.0.3`, … automatically.
//!
//! A child that dies is reported by name (`shard 3/5 (pid N) died: signal 9`) and its
//! partial result merged if it wrote one; the merged result is then marked interrupted. The
//! children run in process groups of their own, so a terminal's Ctrl-C, `timeout`'s signal to
//! the group or a SIGHUP reaches only the parent, which forwards it once as SIGINT: every
//! child stops, writes its partial result, and the merged, interrupted, result is still
//! written.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use wsbench_supervisor::{Group, Launch, Supervised};

use super::{RunError, Session, start_instant, start_probe};
use crate::config::Target;
use crate::config::{RunConfig, RunSettings};
use crate::live::shards::{ShardEvent, ShardsView};
use crate::merge::{ShardInput, merge};
use crate::result::{RunResult, ServerSummary, Target as ResultTarget};
use crate::samples::ServerReport;

/// How far ahead of now the children are told to start: time for N processes to exec and
/// check their limits.
pub const START_DELAY: Duration = Duration::from_millis(1500);
/// Loopback runs of more connections than this spread over source addresses.
pub const SOURCE_ADDRS_ABOVE: u64 = 20_000;
/// Connections per source address when they are spread automatically.
pub const CONNECTIONS_PER_SOURCE_ADDR: u64 = 10_000;
/// A shard asked to stop has this long to write its result before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// Runs `config` (validated from `settings`, with `processes > 1`) against `session`'s
/// server as that many child processes and merges their results.
pub(super) fn run(
    session: &Session,
    settings: &RunSettings,
    config: &RunConfig,
    interrupt: &AtomicBool,
) -> Result<RunResult, RunError> {
    let count = config.placement.processes;
    let now_ms = crate::machine::unix_ms();
    let start_at = config.load.start_at_unix_ms.unwrap_or(now_ms + START_DELAY.as_millis() as u64);
    let (start_ms, run_start) = start_instant(Some(start_at));
    let dir = ShardDir::new(config.outputs.json.as_deref(), count)?;
    let source_addrs = auto_source_addrs(config, &session.target);
    let probe = start_probe(config, &session.target, session.builtin(), run_start);
    let exchanges = crate::scenario::of(&config.load).exchange().many;
    let pids = probe.as_ref().map_or(Vec::new(), |probe| probe.pids().to_vec());
    let publisher = session.live.publisher(config.load.connections, pids);
    let view = ShardsView::start(count as usize, exchanges, config.live.quiet, publisher);
    // On failure the shards started so far are stopped as the group drops.
    let mut shards = Group::new();
    for index in 0..count {
        let mut child =
            shard_settings(settings, config, &session.target, &session.cpus.client, index, start_ms);
        child.json = Some(dir.result(index));
        child.hlog = config.outputs.hlog.as_ref().map(|_| dir.hlog(index));
        if source_addrs.is_some() {
            child.source_addrs.clone_from(&source_addrs);
        }
        let secrets = crate::members::secrets_to_environment(&mut child.options);
        shards.push(start_shard(&child, &secrets, index, count, &view.events())?);
    }
    let forwarded = shards.wait_all(interrupt);
    // The shards' last seconds and messages are shown before anything is said of them.
    view.finish();
    let server = match probe {
        Ok(probe) => probe.stop(),
        Err(report) => report,
    };
    let (inputs, incomplete) = collect_results(shards.members_mut(), &dir, forwarded);
    if inputs.is_empty() {
        return Err(RunError::Shards(format!("none of the {count} shards left a result")));
    }
    let mut merged = merge(&inputs)?;
    parents_view(&mut merged, config, session, source_addrs.as_deref(), server, start_ms);
    merged.interrupted |= incomplete || interrupt.load(Ordering::Relaxed);
    if let Some(path) = &config.outputs.hlog {
        let logs: Vec<PathBuf> = (0..count).map(|index| dir.hlog(index)).filter(|log| log.exists()).collect();
        crate::hlog::merge_files(&logs, path, merged.started_at_unix_ms)?;
    }
    dir.finish();
    Ok(merged)
}

/// Each shard's result, and whether any shard is missing or died (reported on stderr).
fn collect_results(shards: &mut [Supervised], dir: &ShardDir, forwarded: bool) -> (Vec<ShardInput>, bool) {
    let count = shards.len();
    let mut inputs = Vec::new();
    let mut incomplete = false;
    for (index, shard) in shards.iter_mut().enumerate() {
        // Every shard was waited for: `exited` is its status.
        let died = shard.exited().and_then(|status| death(status, forwarded));
        let file = dir.result(index as u64);
        let result = file.exists().then(|| RunResult::read_json(&file));
        let pid = shard.pid();
        if let Some(why) = &died {
            incomplete = true;
            let kept = match &result {
                Some(Ok(_)) => "its partial result is merged",
                Some(Err(_)) => "its result file is unreadable",
                None => "it left no result",
            };
            eprintln!("wsbench: shard {index}/{count} (pid {pid}) died: {why}; {kept}");
        }
        match result {
            Some(Ok(result)) => inputs.push(ShardInput { name: file.display().to_string(), result, died }),
            Some(Err(e)) => {
                incomplete = true;
                eprintln!("wsbench: shard {index}/{count}: {}", crate::causes::with_causes(&e));
            }
            None if died.is_none() => {
                incomplete = true;
                eprintln!("wsbench: shard {index}/{count} (pid {pid}) wrote no result");
            }
            None => {}
        }
    }
    (inputs, incomplete)
}

/// The merged result as the parent saw the run: its configuration, its target, its probe.
fn parents_view(
    merged: &mut RunResult,
    config: &RunConfig,
    session: &Session,
    source_addrs: Option<&str>,
    mut server: ServerReport,
    start_ms: u64,
) {
    merged.config = serde_json::to_value(config).unwrap_or_default();
    merged.run_id = Some(config.run_id.clone());
    if let Some(addrs) = source_addrs
        && let Ok(addrs) = crate::config::parse_addr_range(addrs)
    {
        // What the shards were given, though the parent's flags did not say it.
        merged.config["source_addrs"] = serde_json::to_value(addrs).unwrap_or_default();
    }
    merged.target = ResultTarget { url: session.target.url.clone(), builtin: session.builtin.is_some() };
    // The probe counted from `start_ms`; the merged clock from the first shard's start.
    let offset_ms = merged.started_at_unix_ms.saturating_sub(start_ms);
    for sample in &mut server.samples {
        sample.t_ms = sample.t_ms.saturating_sub(offset_ms);
    }
    merged.server = ServerSummary::from_report(
        &server,
        merged.summary.connections.established,
        merged.summary.measured_exchanges,
    )
    .per_round_trip(merged.counters.messages_received);
    // The shards did not probe: the scenario's figures are made again with the parent's
    // samples (taken until every shard had waited out its settling time).
    if let Ok(metrics) = crate::scenario::decode_metrics(merged)
        && let Some((key, figures)) = crate::scenario::figures_for(
            &merged.scenario,
            &metrics,
            &merged.config,
            merged.measured_s,
            &server,
        )
    {
        merged.scenario_figures.insert(key, figures);
    }
}

/// Shard `index`'s settings: the parent's, with the resolved URL, the shard, the common
/// start, its CPUs, and no probing or server of its own. The caller sets its result file.
fn shard_settings(
    parent: &RunSettings,
    config: &RunConfig,
    target: &Target,
    client_cpus: &[Option<usize>],
    index: u64,
    start_ms: u64,
) -> RunSettings {
    let cpus = cpus_of_shard(client_cpus, index, config.placement.processes);
    RunSettings {
        scenario: Some(config.load.scenario.to_owned()),
        target: Some(target.url_with_credentials()),
        shard: Some(format!("{index}/{}", config.placement.processes)),
        start_at: Some(start_ms),
        hlog: None,
        processes: None,
        server_processes: None,
        server_cpus: None,
        server_pid: None,
        no_probe: true,
        // One run: the shards carry its id, and only the merged result is judged (by the
        // thresholds, or by the parent's search, whose step each shard measures once).
        run_id: Some(config.run_id.clone()),
        threshold: Vec::new(),
        find_max_rate: false,
        slo: None,
        // Each shard hands its seconds to the parent, which shows, streams and serves one
        // second for all of them.
        metrics_addr: None,
        stream: None,
        dashboard: None,
        html: None,
        progress_to_parent: true,
        client_cpus: (!cpus.is_empty()).then(|| crate::affinity::format_cpu_list(&cpus)),
        ..parent.clone()
    }
}

/// Shard `index`'s client CPUs: an equal part of them, or, with fewer CPUs than shards, one
/// CPU shared round-robin. Empty when the client is not pinned.
pub fn cpus_of_shard(client: &[Option<usize>], index: u64, count: u64) -> Vec<usize> {
    let cpus: Vec<usize> = client.iter().flatten().copied().collect();
    if cpus.is_empty() {
        return Vec::new();
    }
    if cpus.len() as u64 >= count {
        cpus.iter().enumerate().filter(|(j, _)| *j as u64 % count == index).map(|(_, cpu)| *cpu).collect()
    } else {
        vec![cpus[(index % cpus.len() as u64) as usize]]
    }
}

/// `127.0.0.2-127.0.0.K` for a loopback (IPv4) target and more than [`SOURCE_ADDRS_ABOVE`]
/// connections, unless `--source-addrs` was given: one address per shard, and enough that
/// none carries more than [`CONNECTIONS_PER_SOURCE_ADDR`] connections.
pub fn auto_source_addrs(config: &RunConfig, target: &Target) -> Option<String> {
    let loopback_v4 = matches!(target.addr.ip(), std::net::IpAddr::V4(ip) if ip.is_loopback());
    if !config.load.source_addrs.is_empty() || !loopback_v4 || config.load.connections <= SOURCE_ADDRS_ABOVE {
        return None;
    }
    let count = config
        .placement
        .processes
        .max(config.load.connections.div_ceil(CONNECTIONS_PER_SOURCE_ADDR))
        .min(253);
    Some(format!("127.0.0.2-127.0.0.{}", 1 + count))
}

/// Starts `wsbench run --settings-from-stdin` as shard `index`, handed `settings` on its
/// stdin and `secrets` as environment variables; what it writes on stdout (its seconds) and stderr goes to `events`, the parent's
/// one view of all shards.
fn start_shard(
    settings: &RunSettings,
    secrets: &[(String, String)],
    index: u64,
    count: u64,
    events: &Sender<ShardEvent>,
) -> Result<Supervised, RunError> {
    let name = format!("shard {index}/{count}");
    let mut launch = Launch::this_program(name, "run", settings)?.grace(STOP_GRACE);
    launch.command_mut().stdout(Stdio::piped()).stderr(Stdio::piped()).envs(secrets.iter().cloned());
    let mut process = launch.start()?;
    let shard = index as usize;
    if let Some(stderr) = process.take_stderr() {
        let events = events.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = events.send(ShardEvent::Stderr(shard, line));
            }
        });
    }
    let stdout = process.take_stdout();
    let events = events.clone();
    std::thread::spawn(move || {
        for line in stdout.into_iter().flat_map(|out| BufReader::new(out).lines().map_while(Result::ok)) {
            let _ = events.send(ShardEvent::Stdout(shard, line));
        }
        let _ = events.send(ShardEvent::Ended(shard));
    });
    Ok(process)
}

/// How a shard's process ended abnormally, or `None`: success, a run that completed with
/// failures counted (exit 3: they are in its result), or the 130 of a shard that was
/// interrupted because the parent forwarded a stop request.
pub fn death(status: ExitStatus, forwarded: bool) -> Option<String> {
    let completed_with_failures = status.code() == Some(i32::from(crate::exit::RUN_FAILURES));
    if status.success()
        || completed_with_failures
        || (forwarded && status.code() == Some(i32::from(crate::exit::INTERRUPTED)))
    {
        return None;
    }
    Some(wsbench_supervisor::describe(status))
}

/// Where the shards write their results.
struct ShardDir {
    dir: PathBuf,
    /// A temporary directory, removed when the run is over.
    temporary: bool,
}

impl ShardDir {
    /// `NAME.shards/` next to `--json NAME.json` (next to a symlink's target), or a
    /// temporary directory (also when `--json` is a FIFO or a device: nothing goes beside
    /// `/dev/null`); stale shard files of an earlier run are removed first, so they cannot
    /// be mistaken for new ones.
    fn new(json: Option<&Path>, count: u64) -> Result<ShardDir, RunError> {
        let file = json.and_then(|path| match crate::output_path::resolve(path) {
            Ok(crate::output_path::OutputPath::Replace(file)) => Some(file),
            _ => None,
        });
        let (dir, temporary) = match file {
            Some(path) => (path.with_extension("shards"), false),
            None => {
                let unique = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
                (std::env::temp_dir().join(format!("wsbench-shards-{}-{unique}", std::process::id())), true)
            }
        };
        std::fs::create_dir_all(&dir)
            .map_err(|e| RunError::Shards(format!("cannot create {}: {e}", dir.display())))?;
        let shard_dir = ShardDir { dir, temporary };
        for index in 0..count {
            let _ = std::fs::remove_file(shard_dir.result(index));
            let _ = std::fs::remove_file(shard_dir.hlog(index));
        }
        Ok(shard_dir)
    }

    fn result(&self, index: u64) -> PathBuf {
        self.dir.join(format!("shard-{index}.json"))
    }

    /// Shard `index`'s interval log, when the run writes one (merged into the parent's).
    fn hlog(&self, index: u64) -> PathBuf {
        self.dir.join(format!("shard-{index}.hlog"))
    }

    fn finish(self) {
        if self.temporary {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;

    use super::*;
    use crate::config::RunSettings;

    #[test]
    fn deaths_are_named_by_exit_status_or_signal() {
        assert_eq!(death(ExitStatus::from_raw(0), false), None);
        assert_eq!(death(ExitStatus::from_raw(1 << 8), false).as_deref(), Some("exit status 1"));
        // Completed, with failures counted in its result: not a death.
        assert_eq!(death(ExitStatus::from_raw(3 << 8), false), None);
        assert_eq!(death(ExitStatus::from_raw(libc::SIGKILL), false).as_deref(), Some("signal 9"));
        // Interrupted on the parent's request is not a death; unasked, it is.
        assert_eq!(death(ExitStatus::from_raw(130 << 8), true), None);
        assert_eq!(death(ExitStatus::from_raw(130 << 8), false).as_deref(), Some("exit status 130"));
    }

    #[test]
    fn client_cpus_are_split_or_shared_round_robin() {
        let some = |cpus: &[usize]| cpus.iter().copied().map(Some).collect::<Vec<_>>();
        assert_eq!(cpus_of_shard(&some(&[1]), 3, 5), [1]);
        assert_eq!(cpus_of_shard(&some(&[1, 2]), 3, 5), [2]);
        assert_eq!(cpus_of_shard(&some(&[0, 1, 2, 3, 4]), 1, 2), [1, 3]);
        assert_eq!(cpus_of_shard(&some(&[0, 1, 2, 3, 4]), 0, 2), [0, 2, 4]);
        assert!(cpus_of_shard(&[None], 0, 2).is_empty());
    }

    fn config(f: impl FnOnce(&mut RunSettings)) -> RunConfig {
        let mut settings = RunSettings::default();
        f(&mut settings);
        settings.validate().unwrap()
    }

    #[test]
    fn big_loopback_runs_spread_over_source_addresses() {
        let local = Target::parse("ws://127.0.0.1:9000/").unwrap();
        let big = config(|s| {
            s.connections = Some(25_000);
            s.processes = Some(5);
        });
        assert_eq!(auto_source_addrs(&big, &local).as_deref(), Some("127.0.0.2-127.0.0.6"));
        let bigger = config(|s| {
            s.connections = Some(60_000);
            s.processes = Some(4);
        });
        assert_eq!(auto_source_addrs(&bigger, &local).as_deref(), Some("127.0.0.2-127.0.0.7"));
        let small = config(|s| s.processes = Some(2));
        assert_eq!(auto_source_addrs(&small, &local), None);
        let given = config(|s| {
            s.connections = Some(25_000);
            s.processes = Some(5);
            s.source_addrs = Some("127.0.0.9".into());
        });
        assert_eq!(auto_source_addrs(&given, &local), None);
        let remote = Target::parse("ws://10.0.0.1:9000/").unwrap();
        assert_eq!(auto_source_addrs(&big, &remote), None);
    }

    #[test]
    fn children_run_the_same_scenario_as_one_shard_each() {
        let given = RunSettings {
            connections: Some(300),
            ramp: Some("150/s".into()),
            duration: Some("3s".into()),
            processes: Some(3),
            server_processes: Some(2),
            json: Some("out.json".into()),
            hlog: Some("out.hlog".into()),
            ..RunSettings::default()
        };
        let parent = given.validate().unwrap();
        let target = Target::parse("ws://127.0.0.1:4567/").unwrap();
        let mut settings = shard_settings(&given, &parent, &target, &[Some(1)], 2, 1_000);
        // A folder that exists: validation checks it.
        let result = std::env::temp_dir().join("shard-2.json");
        settings.json = Some(result.clone());
        // What the child reads is what the parent writes to its stdin.
        let bytes = wsbench_supervisor::encode_settings(&settings).unwrap();
        let read: RunSettings = wsbench_supervisor::read_settings(bytes.as_slice()).unwrap();
        assert_eq!(read, settings);
        let child = read.validate().unwrap();
        assert_eq!(child.load.shard, Some(crate::config::Shard { index: 2, count: 3 }));
        assert_eq!(child.load.start_at_unix_ms, Some(1_000));
        assert_eq!(child.outputs.json, Some(result));
        assert_eq!(child.outputs.hlog, None);
        assert_eq!((child.placement.processes, child.placement.server_processes), (1, 1));
        assert_eq!(child.placement.client_cpus, Some(vec![1]));
        assert!(child.sampling.no_probe);
        assert_eq!(child.target.as_ref(), Some(&target));
        // Everything that defines the scenario is the parent's.
        let scenario = |c: &RunConfig| {
            let mut value = serde_json::to_value(c).unwrap();
            for key in crate::merge::SHARD_KEYS.iter().chain(&["target", "processes", "server_processes"]) {
                value.as_object_mut().unwrap().remove(*key);
            }
            value
        };
        assert_eq!(scenario(&child), scenario(&parent));
    }
}
