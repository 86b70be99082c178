//! `wsbench diff` on recorded result files of real runs (`tests/diff_fixtures/`): ten trials
//! of 5 vs 5 runs of the same `wsbench serve` find no difference on every figure in at least
//! nine, and five trials of 5 vs 5 runs where one side's server holds each echo 200 µs find the
//! latency worse every time. Fewer runs a side: 3 vs 3 runs of 2 s and of 6 s have too little
//! data for the block bootstrap (no interval, no p-value, no verdict), 3 vs 3 runs of 12 s get
//! an interval of the change of the medians the columns show, and 1 or 2 runs a side of 12 s
//! find the 200 µs. The fixtures are re-recorded (never in a normal test run) with
//! `WSBENCH_RECORD_DIFF_FIXTURES=1 cargo test -p wsbench --test diff record -- --ignored`.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use support::scripted_server::Script;

/// Where the recorded result files live: `same/trialNN/`, `delay/trialNN/`, `short/2s/`,
/// `short/6s/`, `short/12s/` and `short/delay-12s/`, each with `base-K.json` and `new-K.json`.
fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/diff_fixtures")
}

/// Trials of runs of the same server.
const SAME_TRIALS: usize = 10;
/// Trials where the new side's server delays each echo.
const DELAY_TRIALS: usize = 5;
/// Runs a side in every trial.
const REPEATS: usize = 5;
/// The delay the new side's server adds to each echo in the `delay` trials.
const ECHO_DELAY: Duration = Duration::from_micros(200);
/// The short-run trials of one `wsbench serve`: three runs a side of each duration.
const SHORT_DURATIONS: [&str; 3] = ["2s", "6s", "12s"];
const SHORT_REPEATS: usize = 3;
/// Runs a side of the short delay trial (12 s each).
const SHORT_DELAY_REPEATS: usize = 2;

/// One short closed-loop run against `url`, its result written to `json`.
fn record_run(url: &str, json: &Path, probe: bool, duration: &str) {
    let mut args =
        vec!["run", "echo", url, "--connections", "4", "--warmup", "500ms", "--duration", duration];
    args.extend(["--quiet", "--json", json.to_str().unwrap()]);
    if !probe {
        args.push("--no-probe");
    }
    let finished =
        support::run_with_timeout(Command::new(support::wsbench_bin()).args(&args), Duration::from_secs(60));
    let what = finished.describe(&format!("wsbench {}", args.join(" ")));
    assert_eq!(finished.status.and_then(|s| s.code()), Some(0), "{what}");
}

/// The runs of one trial, base and new interleaved so that a change of the machine's load
/// during the trial falls on both sides alike, in the order base, new, new, base, base, …
/// so that neither side always goes first (a run right after another can differ: sockets
/// of the last one still closing, a cache warmed).
fn record_trial(dir: &Path, base_url: &str, new_url: &str, probe: bool, duration: &str, repeats: usize) {
    std::fs::create_dir_all(dir).unwrap();
    for k in 1..=repeats {
        let base = || record_run(base_url, &dir.join(format!("base-{k}.json")), probe, duration);
        let new = || record_run(new_url, &dir.join(format!("new-{k}.json")), probe, duration);
        match k % 2 {
            1 => (base(), new()),
            _ => (new(), base()),
        };
    }
}

/// Re-records every fixture: the `same` trials against one `wsbench serve --threads 1` per
/// trial (probed: server CPU and memory are figures too), runs of 1 s; the `delay` trials
/// against the scripted echo server without and with [`ECHO_DELAY`] (not probed: the server
/// is this test process), runs of 3 s so that the tail percentiles of a busy machine settle;
/// the `short` trials, 3 vs 3 runs of 2, 6 and 12 s against one `wsbench serve --threads 1`
/// each (probed), and 2 vs 2 runs of 12 s of the scripted server without and with the delay.
/// `WSBENCH_RECORD_DIFF_ONLY=same`, `=delay` or `=short` records one kind;
/// `WSBENCH_RECORD_DIFF_DIR` records elsewhere (a live check of `diff` on fresh runs).
#[test]
#[ignore = "records the fixtures; run with WSBENCH_RECORD_DIFF_FIXTURES=1"]
fn record_fixtures() {
    if std::env::var("WSBENCH_RECORD_DIFF_FIXTURES").as_deref() != Ok("1") {
        return;
    }
    let only = std::env::var("WSBENCH_RECORD_DIFF_ONLY").unwrap_or_default();
    let wanted = |kind: &str| only.is_empty() || only == kind;
    let into = std::env::var_os("WSBENCH_RECORD_DIFF_DIR").map_or_else(fixtures, PathBuf::from);
    for trial in (1..=SAME_TRIALS).filter(|_| wanted("same")) {
        let server = support::Server::spawn(&["--threads", "1"]);
        let url = format!("ws://{}/", server.addr);
        record_trial(&into.join(format!("same/trial{trial:02}")), &url, &url, true, "1s", REPEATS);
    }
    for trial in (1..=DELAY_TRIALS).filter(|_| wanted("delay")) {
        let plain = Script::echo().start();
        let delayed = Script::echo().delay_each_echo(ECHO_DELAY).start();
        let dir = into.join(format!("delay/trial{trial:02}"));
        record_trial(&dir, &plain.url(), &delayed.url(), false, "3s", REPEATS);
    }
    for duration in SHORT_DURATIONS.into_iter().filter(|_| wanted("short")) {
        let server = support::Server::spawn(&["--threads", "1"]);
        let url = format!("ws://{}/", server.addr);
        record_trial(&into.join(format!("short/{duration}")), &url, &url, true, duration, SHORT_REPEATS);
    }
    if wanted("short") {
        let plain = Script::echo().start();
        let delayed = Script::echo().delay_each_echo(ECHO_DELAY).start();
        let dir = into.join("short/delay-12s");
        record_trial(&dir, &plain.url(), &delayed.url(), false, "12s", SHORT_DELAY_REPEATS);
    }
}

/// The result files of one side of a recorded trial, in order.
fn side(kind: &str, trial: usize, side: &str) -> Vec<String> {
    files(&format!("{kind}/trial{trial:02}"), side, REPEATS)
}

/// The `count` result files of one side of the fixtures in `dir`, in order.
fn files(dir: &str, side: &str, count: usize) -> Vec<String> {
    let dir = fixtures().join(dir);
    (1..=count).map(|k| dir.join(format!("{side}-{k}.json")).display().to_string()).collect()
}

/// `wsbench diff FLAGS… BASE… -- NEW…` of a recorded trial: its exit code and stdout.
fn diff(flags: &[&str], base: &[String], new: &[String]) -> (i32, String, String) {
    let mut args: Vec<&str> = vec!["diff"];
    args.extend(flags);
    args.extend(base.iter().map(String::as_str));
    args.push("--");
    args.extend(new.iter().map(String::as_str));
    let finished =
        support::run_with_timeout(Command::new(support::wsbench_bin()).args(&args), Duration::from_secs(60));
    let what = finished.describe(&format!("wsbench {}", args.join(" ")));
    let code = finished.status.and_then(|s| s.code()).unwrap_or_else(|| panic!("killed: {what}"));
    assert!(!finished.stderr.contains("panicked"), "{what}");
    (code, finished.stdout, finished.stderr)
}

/// The JSON diff of a recorded trial, checked against `schema/diff.schema.json`.
fn json_diff(flags: &[&str], base: &[String], new: &[String]) -> serde_json::Value {
    let mut all = vec!["--format", "json"];
    all.extend(flags);
    let (code, stdout, stderr) = diff(&all, base, new);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let value: serde_json::Value = serde_json::from_str(&stdout).expect("diff --format json is JSON");
    let schema_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schema/diff.schema.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(schema_path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema is a valid JSON Schema");
    let errors: Vec<String> =
        validator.iter_errors(&value).map(|e| format!("{}: {e}", e.instance_path)).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    value
}

/// Each figure of a JSON diff with its verdict.
fn verdicts(diff: &serde_json::Value) -> Vec<(String, String)> {
    let figures = diff["figures"].as_array().expect("figures");
    figures
        .iter()
        .map(|f| (f["figure"].as_str().unwrap().to_owned(), f["verdict"].as_str().unwrap().to_owned()))
        .collect()
}

#[test]
fn runs_of_the_same_server_find_no_difference_in_at_least_nine_trials_of_ten() {
    let mut clean_trials = 0;
    let mut findings = Vec::new();
    for trial in 1..=SAME_TRIALS {
        let diff = json_diff(&[], &side("same", trial, "base"), &side("same", trial, "new"));
        let verdicts = verdicts(&diff);
        let figures: Vec<&str> = verdicts.iter().map(|(figure, _)| figure.as_str()).collect();
        // Every figure of a probed closed loop is there (the uncorrected latencies are the
        // corrected ones in a closed loop).
        let expected = [
            "round_trips_per_sec",
            "p50",
            "p90",
            "p99",
            "p999",
            "connect_p99",
            "errors_per_million",
            "server_cpu_us_per_round_trip",
            "server_rss_bytes",
        ];
        assert_eq!(figures, expected, "trial {trial}");
        let changed: Vec<&(String, String)> = verdicts.iter().filter(|(_, v)| v != "no_difference").collect();
        match changed.is_empty() {
            true => clean_trials += 1,
            false => findings.push(format!("trial {trial}: {changed:?}")),
        }
    }
    assert!(clean_trials >= 9, "{clean_trials} of {SAME_TRIALS} clean: {findings:#?}");
}

#[test]
fn a_server_that_holds_each_echo_200us_is_worse_in_latency_every_time() {
    let delay_us = ECHO_DELAY.as_micros() as f64;
    for trial in 1..=DELAY_TRIALS {
        let diff = json_diff(&[], &side("delay", trial, "base"), &side("delay", trial, "new"));
        let verdicts = verdicts(&diff);
        let of = |figure: &str| verdicts.iter().find(|(f, _)| f == figure).map(|(_, v)| v.as_str());
        for figure in ["p50", "p90", "p99", "round_trips_per_sec"] {
            assert_eq!(of(figure), Some("worse"), "trial {trial}: {verdicts:?}");
        }
        // p99.9 is never found better; on a busy machine (its milliseconds of waiting for a
        // CPU) it may be within the noise of five runs.
        assert!(matches!(of("p999"), Some("worse" | "no_difference")), "trial {trial}: {verdicts:?}");
        assert!(verdicts.iter().all(|(_, verdict)| verdict != "better"), "trial {trial}: {verdicts:?}");
        let p50 = diff["figures"].as_array().unwrap().iter().find(|f| f["figure"] == "p50").unwrap();
        let shift = &p50["shift"];
        // The interval holds at least most of the delay: a sleep overshoots, never undershoots.
        assert!(shift["low"].as_f64().unwrap() > 0.75 * delay_us, "trial {trial}: {p50}");
    }
}

#[test]
fn fail_on_exits_99_only_for_a_counted_change_past_its_limit() {
    let (base, new) = (side("delay", 1, "base"), side("delay", 1, "new"));
    let (code, stdout, _) =
        diff(&["--fail-on", "p50:+5%", "--fail-on", "round_trips_per_sec:-3%"], &base, &new);
    assert_eq!(code, 99, "{stdout}");
    assert!(stdout.contains("--fail-on p50:+5%: FAILED (change +"), "{stdout}");
    assert!(stdout.contains("--fail-on round_trips_per_sec:-3%: FAILED"), "{stdout}");
    // A limit above the change, a gate on the other direction, and identical runs pass.
    let (code, stdout, _) = diff(&["--fail-on", "p50:+5000%", "--fail-on", "p50:-5%"], &base, &new);
    assert_eq!(code, 0, "{stdout}");
    let (code, stdout, _) =
        diff(&["--fail-on", "p50:+0%"], &side("same", 1, "base"), &side("same", 1, "new"));
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.contains("--fail-on p50:+0%: passed (change "), "{stdout}");
}

#[test]
fn text_and_markdown_show_each_figure_with_its_interval_and_verdict() {
    let (base, new) = (side("delay", 1, "base"), side("delay", 1, "new"));
    let (code, text, _) = diff(&[], &base, &new);
    assert_eq!(code, 0);
    assert!(text.starts_with("5 base runs vs 5 new runs of echo\n"), "{text}");
    let p50 = text.lines().find(|l| l.starts_with("latency p50")).unwrap_or_else(|| panic!("{text}"));
    assert!(p50.ends_with("worse") && p50.contains(" [+") && p50.contains("%]"), "{p50}");
    assert!(text.contains("round trips/s"), "{text}");
    assert!(text.contains("90% interval"), "{text}");
    assert!(text.contains("Mann–Whitney U"), "{text}");
    let (code, md, _) = diff(&["--format", "md"], &base, &new);
    assert_eq!(code, 0);
    assert!(md.contains("| figure | base | new | change | 90% interval | p | verdict |"), "{md}");
    let row = md.lines().find(|l| l.starts_with("| latency p50 |")).unwrap_or_else(|| panic!("{md}"));
    assert!(row.ends_with("| **worse** |"), "{row}");
}

#[test]
fn one_run_a_side_is_decided_from_its_seconds_and_says_what_it_cannot_see() {
    let (base, new) = (files("short/delay-12s", "base", 2), files("short/delay-12s", "new", 2));
    for runs in [1, 2] {
        let diff_json = json_diff(&[], &base[..runs], &new[..runs]);
        let method = |figure: &str| figure_of(&diff_json, figure)["method"].clone();
        assert_eq!(method("p50"), "block_bootstrap");
        assert_eq!(method("round_trips_per_sec"), "block_bootstrap");
        let verdicts = verdicts(&diff_json);
        for figure in ["p50", "p99", "round_trips_per_sec"] {
            assert!(verdicts.contains(&(figure.to_owned(), "worse".to_owned())), "{runs}: {verdicts:?}");
        }
        assert!(verdicts.contains(&("p90".to_owned(), "untested".to_owned())), "{verdicts:?}");
        let shift = &figure_of(&diff_json, "p50")["shift"];
        // The interval holds at least most of the delay: a sleep overshoots, never undershoots.
        assert!(shift["low"].as_f64().unwrap() > 0.75 * ECHO_DELAY.as_micros() as f64, "{runs}: {shift}");
        let (_, text, _) = diff(&[], &base[..runs], &new[..runs]);
        assert!(text.contains("the variation from run to run is not seen"), "{text}");
    }
    // One run a side of 3 s (two measured seconds): too little data for any verdict.
    let (base, new) = (side("delay", 1, "base"), side("delay", 1, "new"));
    let verdicts = verdicts(&json_diff(&[], &base[..1], &new[..1]));
    assert!(verdicts.contains(&("p50".to_owned(), "too_little_data".to_owned())), "{verdicts:?}");
}

/// The figure `key` of a JSON diff.
fn figure_of<'a>(diff: &'a serde_json::Value, key: &str) -> &'a serde_json::Value {
    let figures = diff["figures"].as_array().expect("figures");
    figures.iter().find(|f| f["figure"] == key).unwrap_or_else(|| panic!("no {key} in {diff}"))
}

/// The figures a result keeps per second, which the block bootstrap tests.
const PER_SECOND: [&str; 3] = ["round_trips_per_sec", "p50", "p99"];

#[test]
fn three_runs_a_side_of_two_or_six_seconds_have_too_little_data_for_a_verdict() {
    for (duration, seconds) in [("2s", "1 measured second"), ("6s", "5 measured seconds")] {
        let dir = format!("short/{duration}");
        let (base, new) = (files(&dir, "base", SHORT_REPEATS), files(&dir, "new", SHORT_REPEATS));
        let diff_json = json_diff(&[], &base, &new);
        for key in PER_SECOND {
            let figure = figure_of(&diff_json, key);
            assert_eq!(figure["verdict"], "too_little_data", "{duration}: {figure}");
            for field in ["method", "shift", "change", "p_value", "p_holm"] {
                assert!(figure[field].is_null(), "{duration}: {field} of {figure}");
            }
            let reason = figure["reason"].as_str().unwrap_or_else(|| panic!("{figure}"));
            assert!(reason.contains(&format!("a run of only {seconds}")), "{reason}");
            assert!(reason.contains("the block bootstrap needs 10 from every run"), "{reason}");
        }
        let verdicts = verdicts(&diff_json);
        assert!(verdicts.iter().all(|(_, v)| v != "better" && v != "worse"), "{duration}: {verdicts:?}");
        let (code, text, _) = diff(&[], &base, &new);
        assert_eq!(code, 0, "{text}");
        let rate = text.lines().find(|l| l.starts_with("round trips/s")).unwrap_or_else(|| panic!("{text}"));
        assert!(rate.ends_with("too little data") && !rate.contains('%') && !rate.contains('['), "{rate}");
        assert!(
            text.contains("too little data (round trips/s, latency p50, latency p99): 3 base runs"),
            "{text}"
        );
    }
}

#[test]
fn three_runs_a_side_of_twelve_seconds_get_an_interval_of_the_change_of_the_medians() {
    let (base, new) = (files("short/12s", "base", SHORT_REPEATS), files("short/12s", "new", SHORT_REPEATS));
    let diff_json = json_diff(&[], &base, &new);
    let mut bootstrapped = 0;
    for key in PER_SECOND {
        let figure = figure_of(&diff_json, key);
        if figure["method"] == "identical" {
            continue; // every run the same (a p50 of whole microseconds): nothing to resample
        }
        bootstrapped += 1;
        assert_eq!(figure["method"], "block_bootstrap", "{figure}");
        let number = |value: &serde_json::Value| value.as_f64().unwrap_or_else(|| panic!("{figure}"));
        let (base, new) = (number(&figure["base"]), number(&figure["new"]));
        let (shift, change) = (&figure["shift"], &figure["change"]);
        let (estimate, low, high) =
            (number(&shift["estimate"]), number(&shift["low"]), number(&shift["high"]));
        // The change is that of the columns, and its interval holds it and has a width.
        assert!((estimate - (new - base)).abs() <= 1e-9 * base.abs(), "{figure}");
        assert!((number(&change["estimate"]) - (new - base) / base).abs() < 1e-12, "{figure}");
        assert!(low <= estimate && estimate <= high && low < high, "{figure}");
        assert!(figure["p_value"].as_f64().is_some() && figure["reason"].is_null(), "{figure}");
    }
    assert!(bootstrapped >= 2, "{diff_json}");
}

#[test]
fn a_gate_on_a_figure_with_too_little_data_is_not_judged() {
    let (base, new) = (files("short/2s", "base", SHORT_REPEATS), files("short/2s", "new", SHORT_REPEATS));
    let (code, stdout, _) = diff(&["--fail-on", "p99:+0%", "--fail-on", "p90:+0%"], &base, &new);
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.contains("--fail-on p99:+0%: passed (not judged: too little data)"), "{stdout}");
    assert!(stdout.contains("--fail-on p90:+0%: passed (not judged: untested)"), "{stdout}");
}

/// The text of a diff of recorded runs, compared with `tests/golden/NAME.txt` (rewritten
/// under `WSBENCH_UPDATE_GOLDEN=1`).
fn check_golden(name: &str, text: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(format!("{name}.txt"));
    if support::update_golden() {
        std::fs::write(&path, text).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        expected == text,
        "`wsbench diff` differs from {}; if intended, regenerate with \
         WSBENCH_UPDATE_GOLDEN=1 cargo test -p wsbench --test diff\n--- golden\n{expected}\n--- now\n{text}",
        path.display()
    );
}

#[test]
fn short_runs_print_as_the_golden_files_show() {
    for (dir, golden) in [("short/2s", "diff_two_second_runs"), ("short/12s", "diff_twelve_second_runs")] {
        let (base, new) = (files(dir, "base", SHORT_REPEATS), files(dir, "new", SHORT_REPEATS));
        let (code, text, _) = diff(&[], &base, &new);
        assert_eq!(code, 0, "{text}");
        check_golden(golden, &text);
    }
}

#[test]
fn a_file_given_on_both_sides_or_twice_is_refused() {
    let base = side("same", 1, "base");
    let (one, other) = (base[0].as_str(), base[1].as_str());
    let dir = support::fresh_dir("diff-same-file");
    let link = dir.join("link.json");
    std::os::unix::fs::symlink(one, &link).unwrap();
    let copy = dir.join("copy.json");
    std::fs::copy(one, &copy).unwrap();
    let (link, copy) = (link.display().to_string(), copy.display().to_string());
    let both = "on both sides of `--`: a run compared with itself shows nothing";
    support::refused(&["diff", one, "--", one], 2, &format!("`{one}` and `{one}` are the same file, {both}"));
    support::refused(
        &["diff", one, "--", &link],
        2,
        &format!("`{one}` and `{link}` are the same file, {both}"),
    );
    support::refused(&["diff", one, other, one, "--", other], 2, "are the same file, given twice in BASE");
    support::refused(&["diff", other, "--", one, &link], 2, "are the same file, given twice in NEW");
    let copied =
        support::refused(&["diff", one, "--", &copy], 2, &format!("`{one}` and `{copy}` are the same run"));
    assert!(copied.contains(both), "{copied}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_empty_side_is_named_with_how_to_write_the_command() {
    let one = side("same", 1, "base")[0].clone();
    let how = "(`wsbench diff BASE… -- NEW…`)";
    support::refused(
        &["diff", "--", &one],
        2,
        &format!("the base side is empty: give the base runs' result files before `--` {how}"),
    );
    support::refused(&["diff"], 2, "the base side is empty");
    support::refused(
        &["diff", &one],
        2,
        &format!("the new side is empty: give the new runs' result files after `--` {how}"),
    );
}

#[test]
fn diff_help_tells_a_newcomer_how_it_decides() {
    let finished = support::run_with_timeout(
        Command::new(support::wsbench_bin()).args(["diff", "--help"]),
        Duration::from_secs(30),
    );
    let help = finished.stdout;
    for said in [
        "5 or more runs a side: the Mann–Whitney U rank test",
        "Fewer runs: a block bootstrap of each run's per-second values",
        "(rate, latency p50, latency p99)",
        "Every run needs 10 measured seconds",
        "the verdict is \"too little data\"",
        "correction raises the p-values so that the chance of even one false",
        "Noise band: a change counts only when",
        "--fail-on FIGURE:+N% (a rise) or FIGURE:-N% (a drop) makes diff exit 99",
        "Usage: wsbench diff [OPTIONS] <BASE>... -- <NEW>...",
    ] {
        assert!(help.contains(said), "`{said}` not in:\n{help}");
    }
    assert!(!help.contains("family-wise"), "{help}");
    // No repository paths: a newcomer has the binary, not the source.
    assert!(!help.contains("schema/") && !help.contains("crates/"), "{help}");
}

#[test]
fn runs_that_differ_in_settings_are_refused_unless_forced() {
    let base = side("same", 1, "base");
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("diff-settings");
    std::fs::create_dir_all(&dir).unwrap();
    let mut other: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&base[0]).unwrap()).unwrap();
    other["config"]["connections"] = 8.into();
    // Another run, as a run with other settings is (a copy of the same run is refused).
    other["run_id"] = "another-run".into();
    let changed = dir.join("eight-connections.json");
    std::fs::write(&changed, serde_json::to_string_pretty(&other).unwrap()).unwrap();
    let new = vec![changed.display().to_string()];
    let (code, stdout, stderr) = diff(&[], &base, &new);
    assert_eq!((code, stdout.as_str()), (2, ""), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("eight-connections.json differ in settings: connections = 4 vs connections = 8"),
        "{stderr}"
    );
    assert!(stderr.trim_end().ends_with("give --force to compare them anyway"), "{stderr}");
    let (code, stdout, _) = diff(&["--force"], &base, &new);
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.starts_with("warning: ") && stdout.contains("(compared anyway: --force)"), "{stdout}");
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let base = side("same", 1, "base");
    let one = base[0].as_str();
    support::refused(&["diff", one], 2, "the new side is empty: give the new runs' result files after `--`");
    support::refused(&["diff", "--noise", "80%", one, "--", one], 2, "give a percentage from 0% to 50%");
    support::refused(&["diff", "--alpha", "0", one, "--", one], 2, "from 0.001 to 0.5");
    support::refused(&["diff", "--fail-on", "p98:+5%", one, "--", one], 2, "no figure `p98`");
    support::refused(&["diff", one, "--", one, "--format", "json"], 2, "`--format` looks like a flag");
    support::refused(&["diff", one, "--", "/nonexistent/new.json"], 2, "cannot read /nonexistent/new.json");
}
