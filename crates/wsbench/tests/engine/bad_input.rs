//! Bad input fails fast and clearly: one line on stderr, exit status 2, nothing started; an
//! unreachable server is counted, not waited on forever; a run that cannot fit the open-file
//! limit is refused before any connection is opened.

use std::time::Duration;

use crate::harness::{arg, errors, heavy, read_result, scratch, summary_of, uint, wsbench};

/// What a usage error must look like: exit 2, one `wsbench: …` line naming `mentions`.
pub fn assert_usage_error(args: &[&str], mentions: &str) {
    let _slot = heavy(1);
    let run = wsbench(args, Duration::from_secs(10));
    assert_eq!(run.code, Some(2), "a usage error exits with 2\n{}", run.describe());
    let stderr = run.stderr.trim_end();
    assert_eq!(stderr.lines().count(), 1, "a usage error is one line\n{}", run.describe());
    assert!(stderr.starts_with("wsbench: "), "{}", run.describe());
    assert!(stderr.contains(mentions), "the error should mention {mentions:?}\n{}", run.describe());
    assert!(run.stdout.is_empty(), "nothing on stdout\n{}", run.describe());
    assert!(
        run.elapsed < Duration::from_secs(5),
        "rejected only after {:.2?}\n{}",
        run.elapsed,
        run.describe()
    );
}

#[test]
fn unknown_flag_value_is_a_one_line_error_with_exit_2() {
    let dir = scratch("bad-input");
    let json = dir.join("never.json");
    assert_usage_error(&["run", "--payload", "words", "--json", arg(&json)], "--payload");
    assert_usage_error(&["run", "--connections", "0", "--json", arg(&json)], "--connections");
    assert_usage_error(&["run", "--duration", "soon", "--json", arg(&json)], "soon");
    assert_usage_error(&["run", "c1m", "--json", arg(&json)], "c1m");
    assert_usage_error(&["run", "echo", "--frames-per-send", "3", "--json", arg(&json)], "--frames-per-send");
    let scenario = dir.join("typo.toml");
    std::fs::write(&scenario, "scenario = \"echo\"\nconections = 5\n").unwrap();
    assert_usage_error(&["run", "--scenario", arg(&scenario), "--json", arg(&json)], "conections");
    assert_usage_error(&["run", "--scenario", arg(&dir.join("missing.toml"))], "missing.toml");
    assert_usage_error(
        &["run", "--threshold", "lost==0", "--json", arg(&json)],
        "unknown figure `lost` (latency: p50, p99, …; connect_p99, …; errors; echoes_per_sec; the echo \
         scenario has no figures of its own)",
    );
    assert_usage_error(
        &["run", "pubsub", "--threshold", "lots==0", "--json", arg(&json)],
        "the pubsub scenario's own are lost, duplicated, out_of_order",
    );
    assert!(!json.exists(), "a rejected run wrote a result file");
}

#[test]
fn bad_compression_and_text_file_payloads_are_one_line_errors() {
    let dir = scratch("bad-input-deflate");
    let json = dir.join("never.json");
    let missing = dir.join("no-such-feed.txt");
    assert_usage_error(
        &["run", "--payload", &format!("text:{}", arg(&missing)), "--json", arg(&json)],
        "no-such-feed.txt",
    );
    let empty = dir.join("empty.txt");
    std::fs::write(&empty, "\n\n").unwrap();
    assert_usage_error(
        &["run", "--payload", &format!("text:{}", arg(&empty)), "--json", arg(&json)],
        "has no lines",
    );
    assert_usage_error(&["run", "--compression", "gzip", "--json", arg(&json)], "--compression");
    let bits = "deflate; server_max_window_bits=16";
    assert_usage_error(&["run", "--compression", bits, "--json", arg(&json)], "server_max_window_bits");
    assert!(!json.exists(), "a rejected run wrote a result file");
}

#[test]
fn unreachable_url_counts_connection_refused_and_ends_quickly() {
    let _slot = heavy(1);
    let json = scratch("unreachable").join("r.json");
    let run = wsbench(
        &[
            "run",
            "echo",
            "ws://127.0.0.1:1",
            "--connections",
            "5",
            "--warmup",
            "0s",
            "--duration",
            "2s",
            "--json",
            arg(&json),
        ],
        Duration::from_secs(15),
    );
    assert!(run.elapsed < Duration::from_secs(8), "took {:.2?}\n{}", run.elapsed, run.describe());
    run.assert_completed_with_failures();
    assert!(json.exists(), "no result file\n{}", run.describe());
    let result = read_result(&json);
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    assert_eq!(errors(&result).get("connection_refused").copied(), Some(5), "{context}");
    assert_eq!(uint(&result, "/summary/connections/attempted"), 5, "{context}");
    assert_eq!(uint(&result, "/summary/connections/established"), 0, "{context}");
    assert_eq!(uint(&result, "/summary/connections/failed"), 5, "{context}");
    assert!(run.stdout.contains("connection_refused 5"), "the report shows the refusals\n{}", run.describe());
}

/// The hard open-file limit as `wsbench run` computes it (RLIM_INFINITY: `fs.nr_open`).
fn open_file_limit() -> u64 {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `limit` is a valid rlimit to write to.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) }, 0);
    if limit.rlim_max == libc::RLIM_INFINITY {
        let nr_open =
            std::fs::read_to_string("/proc/sys/fs/nr_open").ok().and_then(|n| n.trim().parse().ok());
        return nr_open.unwrap_or(1 << 20);
    }
    limit.rlim_max
}

#[test]
fn too_many_connections_for_the_file_limit_is_refused_before_starting() {
    /// Files `wsbench run` keeps for itself (`run::RESERVED_FILES`).
    const RESERVED: u64 = 64;
    let limit = open_file_limit();
    let fits = limit.saturating_sub(RESERVED);
    let connections = (fits + 1).max(50_000).to_string();
    let json = scratch("too-many").join("r.json");
    let _slot = heavy(1);
    let run = wsbench(&["run", "--connections", &connections, "--json", arg(&json)], Duration::from_secs(10));
    assert_ne!(run.code, Some(0), "{}", run.describe());
    assert!(run.code.is_some(), "killed by a signal\n{}", run.describe());
    assert!(
        run.stderr.contains(&format!("at most {fits} connections")),
        "stderr should say how many fit ({fits})\n{}",
        run.describe()
    );
    assert_eq!(run.stderr.trim_end().lines().count(), 1, "one line\n{}", run.describe());
    assert!(
        run.elapsed < Duration::from_secs(3),
        "refused only after {:.2?}\n{}",
        run.elapsed,
        run.describe()
    );
    assert!(!json.exists(), "a refused run wrote a result file");
}
