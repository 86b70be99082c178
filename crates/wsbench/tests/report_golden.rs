//! Golden-file tests of the terminal report: `render_text` of each deterministic fixture
//! run must equal `tests/golden/NAME.txt` byte for byte, so layout changes are reviewed
//! as diffs; so must a sweep's table and page (`sweep.txt`, `sweep.html`). Regenerate after an intended change with
//! `WSBENCH_UPDATE_GOLDEN=1 cargo test -p wsbench --test report_golden` (only the value `1`
//! rewrites; `.ci/run` fails when the tests leave a golden file unlike the committed one).

mod support;

use std::path::PathBuf;

use wsbench::fixture;
use wsbench::report::render_text;
use wsbench::result::RunResult;

/// `tests/golden/NAME.txt`, or `tests/golden/NAME` when the name has its extension.
fn golden_path(name: &str) -> PathBuf {
    let file = if name.contains('.') { name.to_owned() } else { format!("{name}.txt") };
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(file)
}

/// A line-by-line diff of two texts: `-` lines from `expected`, `+` lines from `actual`.
fn line_diff(expected: &str, actual: &str) -> String {
    let expected: Vec<&str> = expected.lines().collect();
    let actual: Vec<&str> = actual.lines().collect();
    let mut diff = String::new();
    for i in 0..expected.len().max(actual.len()) {
        match (expected.get(i), actual.get(i)) {
            (Some(e), Some(a)) if e == a => diff.push_str(&format!("  {e}\n")),
            (e, a) => {
                if let Some(e) = e {
                    diff.push_str(&format!("- {e}\n"));
                }
                if let Some(a) = a {
                    diff.push_str(&format!("+ {a}\n"));
                }
            }
        }
    }
    diff
}

fn check_golden(name: &str, actual: &str) {
    let path = golden_path(name);
    if support::update_golden() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!("cannot read {}: {e}\nCreate it with WSBENCH_UPDATE_GOLDEN=1 cargo test -p wsbench --test report_golden", path.display())
    });
    if expected != actual {
        panic!(
            "the report for `{name}` differs from {} (- golden, + rendered):\n{}\n\
             If the change is intended, regenerate with \
             WSBENCH_UPDATE_GOLDEN=1 cargo test -p wsbench --test report_golden",
            path.display(),
            line_diff(&expected, actual)
        );
    }
}

#[test]
fn reports_match_golden_files() {
    for (name, outcome) in fixture::all() {
        check_golden(name, &render_text(&RunResult::from_outcome(&outcome)));
    }
}

#[test]
fn report_from_a_written_file_matches_the_golden_file() {
    // What `wsbench report FILE` prints must equal what the run printed.
    let dir = std::env::temp_dir().join(format!("wsbench-golden-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("closed_loop.json");
    RunResult::from_outcome(&fixture::closed_loop()).write_json(&path).unwrap();
    let rendered =
        wsbench::report::report_command(std::slice::from_ref(&path), wsbench::report::ReportFormat::Text)
            .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    if !support::update_golden() {
        check_golden("closed_loop", &rendered);
    }
}

#[test]
fn a_sweeps_table_and_page_match_golden_files() {
    let sweep = fixture::sweep();
    check_golden("sweep", &wsbench::report::render_sweep(&sweep));
    let page =
        wsbench::report::render_sweep_page(&[sweep], "wsbench sweep --connections 1..4096 --holdout 2");
    check_golden("sweep.html", &page);
}

#[test]
fn line_diff_marks_changed_lines() {
    assert_eq!(line_diff("a\nb\n", "a\nc\nd\n"), "  a\n- b\n+ c\n+ d\n");
}

/// The labels of a terminal report's lines (`latency`, `connect:`, …, `Little's law:`), in
/// order: the first 14 characters of each line that starts with one, as the report pads them.
fn labels(report: &str) -> Vec<String> {
    report
        .lines()
        .filter(|line| !line.starts_with(' '))
        .filter_map(|line| {
            let head: String = line.chars().take(14).collect();
            (head.chars().count() == 14 && head.ends_with(' ')).then(|| head.trim_end().to_owned())
        })
        .collect()
}

/// The README opens with a report of a real run: it must have every line the report of a
/// closed-loop run prints (the golden file), in the same order, so that it is brought
/// current when the report gains a line.
#[test]
fn the_readme_sample_report_has_the_lines_of_the_current_report() {
    let readme =
        std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../README.md")).unwrap();
    let sample = readme
        .split("$ cargo run --release -- run\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the README's sample report after `$ cargo run --release -- run`");
    let golden = std::fs::read_to_string(golden_path("closed_loop")).unwrap();
    assert!(labels(&golden).len() >= 10, "{:?}", labels(&golden));
    assert_eq!(labels(sample), labels(&golden), "README sample:\n{sample}");
}
