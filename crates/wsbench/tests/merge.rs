//! `wsbench merge` refuses what would count a shard twice or mix runs: the same file given
//! twice, the same result under two names, two results of one shard, results of different
//! runs or scenarios, a merged result with one of its shards. Each refusal is one line
//! naming both files, exit 2, and no merged file. Files that are missing, empty or cut
//! short are usage errors too (exit 2), for `merge` and `report` alike.

mod support;

use std::path::Path;
use std::process::{Command, Output};

use support::{fresh_dir, wsbench_bin};
use wsbench::fixture;
use wsbench::result::RunResult;

/// Shard `index` of a two-shard run `run_id` (`None`: written before run ids), started
/// `index` ms after the first.
fn shard(index: u64, run_id: Option<&str>) -> RunResult {
    let mut outcome = fixture::closed_loop();
    outcome.config["shard"] = serde_json::json!({ "index": index, "count": 2 });
    outcome.started_at_unix_ms += index;
    let mut result = RunResult::from_outcome(&outcome);
    result.run_id = run_id.map(str::to_owned);
    result
}

fn write(dir: &Path, name: &str, result: &RunResult) -> String {
    let path = dir.join(name);
    result.write_json(&path).unwrap();
    path.to_str().unwrap().to_owned()
}

/// `wsbench merge FILES… -o OUT`: the output, and whether OUT was written.
fn merge(dir: &Path, files: &[&str]) -> (Output, bool) {
    let out = dir.join("merged.json");
    let _ = std::fs::remove_file(&out);
    let output = Command::new(wsbench_bin()).arg("merge").args(files).arg("-o").arg(&out).output().unwrap();
    (output, out.exists())
}

/// Asserts a refusal: exit 2, one stderr line naming both files and saying why.
fn assert_refused(dir: &Path, files: &[&str], named: [&str; 2], why: &str) {
    let (output, written) = merge(dir, files);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(2), "{files:?}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with(&format!("wsbench: cannot merge {} and {}: ", named[0], named[1])),
        "{stderr}"
    );
    assert!(stderr.contains(why), "{stderr} should say {why:?}");
    assert!(!written, "nothing is written on a refusal");
}

#[test]
fn the_same_file_twice_under_any_name_is_refused() {
    let dir = fresh_dir("merge-same-file");
    let a = write(&dir, "a.json", &shard(0, Some("r1")));
    let b = write(&dir, "b.json", &shard(1, Some("r1")));
    let again = format!("{}/../{}/a.json", dir.display(), dir.file_name().unwrap().to_str().unwrap());
    assert_refused(&dir, &[&a, &b, &again], [&a, &again], "they are the same file");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_copy_of_a_result_and_a_shard_given_twice_are_refused() {
    let dir = fresh_dir("merge-same-shard");
    let a = write(&dir, "a.json", &shard(0, Some("r1")));
    let copy = write(&dir, "copy.json", &shard(0, Some("r1")));
    assert_refused(&dir, &[&a, &copy], [&a, &copy], "they are the same result (shard 0/2");
    let mut rerun = shard(0, Some("r1"));
    rerun.started_at_unix_ms += 60_000;
    let rerun = write(&dir, "rerun.json", &rerun);
    assert_refused(&dir, &[&a, &rerun], [&a, &rerun], "both are shard 0/2 of the run");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn results_of_different_runs_are_refused_and_one_runs_shards_merge() {
    let dir = fresh_dir("merge-runs");
    let a = write(&dir, "a.json", &shard(0, Some("r1")));
    let other = write(&dir, "other.json", &shard(1, Some("r2")));
    assert_refused(
        &dir,
        &[&a, &other],
        [&a, &other],
        "they are results of different runs (run id r1 and r2)",
    );
    let old = write(&dir, "old.json", &shard(1, None));
    assert_refused(&dir, &[&a, &old], [&a, &old], "(run id r1 and unknown (an older wsbench))");

    let b = write(&dir, "b.json", &shard(1, Some("r1")));
    let (output, written) = merge(&dir, &[&a, &b]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(written);
    assert_eq!(RunResult::read_json(&dir.join("merged.json")).unwrap().run_id.as_deref(), Some("r1"));
    // Files from before run ids merge with each other.
    let old_a = write(&dir, "old-a.json", &shard(0, None));
    let (output, _) = merge(&dir, &[&old_a, &old]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_bad_run_id_is_a_usage_error() {
    let output = Command::new(wsbench_bin()).args(["run", "--run-id", "my run"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim(), "wsbench: --run-id: `my run`: use 1 to 64 letters, digits, `.`, `_` or `-`");
}

#[test]
fn a_merged_result_given_with_one_of_its_shards_is_refused() {
    let dir = fresh_dir("merge-merged-again");
    let a = write(&dir, "shard-0.json", &shard(0, Some("r1")));
    let b = write(&dir, "shard-1.json", &shard(1, Some("r1")));
    let (output, written) = merge(&dir, &[&a, &b]);
    assert!(output.status.success() && written, "{}", String::from_utf8_lossy(&output.stderr));
    let merged = dir.join("p.json");
    std::fs::rename(dir.join("merged.json"), &merged).unwrap();
    let merged = merged.to_str().unwrap();
    assert_refused(&dir, &[&a, merged], [merged, &a], "is already the merged result of 2 shards");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn shards_of_different_scenarios_are_a_usage_error() {
    let dir = fresh_dir("merge-scenarios");
    let a = write(&dir, "a.json", &shard(0, Some("r1")));
    let mut other = shard(1, Some("r1"));
    other.config["connections"] = 7.into();
    let b = write(&dir, "b.json", &other);
    assert_refused(&dir, &[&a, &b], [&a, &b], "they ran different scenarios (`connections` is");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn missing_empty_and_cut_short_files_are_usage_errors_for_merge_and_report() {
    let dir = fresh_dir("merge-bad-files");
    let good = write(&dir, "good.json", &shard(0, Some("r1")));
    let text = std::fs::read_to_string(&good).unwrap();
    std::fs::write(dir.join("empty.json"), "").unwrap();
    std::fs::write(dir.join("cut.json"), &text[..text.len() / 2]).unwrap();
    let path = |name: &str| dir.join(name).to_str().unwrap().to_owned();
    for (name, why) in [
        ("missing.json", "cannot read"),
        ("empty.json", "is empty: not a wsbench result file"),
        ("cut.json", "ends in the middle: a wsbench file cut short"),
    ] {
        let file = path(name);
        let line = support::refused(&["report", &file], 2, why);
        assert!(line.contains(&file), "{line}");
        support::refused(&["merge", &good, &file], 2, why);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `wsbench ARGS…`: exit code, stdout and stderr.
fn wsbench(args: &[&str]) -> (Option<i32>, String, String) {
    let output = Command::new(wsbench_bin()).args(args).output().unwrap();
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    (output.status.code(), text(&output.stdout), text(&output.stderr))
}

#[test]
fn one_of_two_shards_is_refused_naming_the_missing_one_unless_partial() {
    let dir = fresh_dir("merge-partial");
    let a = write(&dir, "shard-0.json", &shard(0, Some("r1")));
    let (output, written) = merge(&dir, &[&a]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr,
        "wsbench: the files are 1 of the run's 2 shards: shard 1/2 is missing; give every shard's \
         result file, or --partial to merge these alone (the merged result then says so)\n"
    );
    assert!(!written, "nothing is written on a refusal");

    let out = dir.join("merged.json");
    let out = out.to_str().unwrap();
    let (code, stdout, stderr) = wsbench(&["merge", "--partial", &a, "-o", out]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.contains("[PARTIAL: 1 of 2 shards (missing 1/2); the figures cover those shards only]"),
        "{stdout}"
    );
    let merged = RunResult::read_json(Path::new(out)).unwrap();
    let partial = merged.partial.expect("the merged result says it is partial");
    assert_eq!((partial.shards, partial.of, partial.missing), (1, 2, vec!["1/2".to_owned()]));
    assert!(support::result_schema_errors(Path::new(out)).is_empty());
    let (code, stdout, stderr) = wsbench(&["report", out]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("1 of 2 shards"), "{stdout}");
    let html = dir.join("report.html");
    let (code, _, stderr) = wsbench(&["report", out, "--html", html.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{stderr}");
    let page = std::fs::read_to_string(&html).unwrap();
    let header = &page[page.find("<header>").unwrap()..page.find("</header>").unwrap()];
    assert!(header.contains("1 of 2 shards (missing 1/2)"), "{header}");

    // Both shards: whole, nothing said.
    let b = write(&dir, "shard-1.json", &shard(1, Some("r1")));
    let (code, stdout, stderr) = wsbench(&["merge", "--partial", &a, &b, "-o", out]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stdout.contains("PARTIAL"), "{stdout}");
    assert_eq!(RunResult::read_json(Path::new(out)).unwrap().partial, None);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Shard 1 of run r1 with its latency histogram's bytes changed by `edit` (base64 decoded).
fn shard_with_latency(edit: impl FnOnce(&mut Vec<u8>)) -> RunResult {
    use base64::Engine as _;
    let base64 = base64::engine::general_purpose::STANDARD;
    let mut result = shard(1, Some("r1"));
    let mut bytes = base64.decode(&result.histograms.latency).unwrap();
    edit(&mut bytes);
    result.histograms.latency = base64.encode(bytes);
    result
}

/// `merge` with a good shard and `bad`, and `report` of `bad`: both exit 2 with one line
/// naming `bad` and saying `why`.
fn assert_damaged_refused(dir: &Path, bad: &RunResult, why: &str) {
    let good = write(dir, "shard-0.json", &shard(0, Some("r1")));
    let bad = write(dir, "shard-1.json", bad);
    let expected = format!("{bad} is damaged or was edited: its `histograms.latency` ");
    for line in
        [support::refused(&["merge", &good, &bad], 2, why), support::refused(&["report", &bad], 2, why)]
    {
        assert!(line.starts_with(&format!("wsbench: {expected}")), "{line}");
    }
    let (_, written) = merge(dir, &[&good, &bad]);
    assert!(!written);
}

#[test]
fn a_shard_whose_histogram_fails_its_zlib_checksum_is_refused_naming_the_file() {
    let dir = fresh_dir("merge-checksum");
    let bad = shard_with_latency(|bytes| {
        let last = bytes.len() - 1;
        bytes[last] ^= 0x01;
    });
    assert_damaged_refused(&dir, &bad, "cannot be decoded: fails its zlib checksum (Adler-32)");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_shard_whose_counts_were_edited_is_refused_naming_the_file() {
    let dir = fresh_dir("merge-edited-count");
    // A bucket of 2^63 − 1 samples at 2 µs (once merged as p50 = p99 = 2 µs, exit 0).
    let mut absurd = shard(1, Some("r1"));
    let mut histogram = wsbench::metrics::new_histogram();
    histogram.record_n(2, i64::MAX as u64).unwrap();
    absurd.histograms.latency = wsbench::result::encode_histogram(&histogram);
    assert_damaged_refused(&dir, &absurd, "cannot be decoded: counts add up to more than");
    // Counts that disagree with the file's own summary.
    let mut edited = shard(1, Some("r1"));
    let mut histogram = wsbench::metrics::new_histogram();
    histogram.record_n(2, edited.summary.latency_us.count + 1).unwrap();
    edited.histograms.latency = wsbench::result::encode_histogram(&histogram);
    let why =
        format!("holds {} samples but `summary.latency_us.count` says", edited.summary.latency_us.count + 1);
    assert_damaged_refused(&dir, &edited, &why);
    std::fs::remove_dir_all(&dir).unwrap();
}
