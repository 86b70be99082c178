//! Golden-file tests of the comparison formats of `wsbench report`: the HTML page
//! (`--html`), the CSV table (`--format csv`) and the Markdown table (`--format md`), each
//! rendered from all the deterministic fixture runs at once and compared byte for byte with
//! `tests/golden/report.{html,csv,md}`, so layout changes are reviewed as diffs. The same
//! files must come out of the `wsbench` binary given the fixtures as result files.
//! Regenerate after an intended change with
//! `WSBENCH_UPDATE_GOLDEN=1 cargo test -p wsbench --test report_formats` (only the value `1`
//! rewrites; `.ci/run` fails when the tests leave a golden file unlike the committed one).

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use wsbench::fixture;
use wsbench::report::{render_csv, render_html, render_md};
use wsbench::result::RunResult;

const REGENERATE: &str = "WSBENCH_UPDATE_GOLDEN=1 cargo test -p wsbench --test report_formats";

fn golden_path(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(file)
}

/// Every fixture, labelled with its name (the file stem `wsbench report` would use).
fn fixtures() -> Vec<(String, RunResult)> {
    fixture::all()
        .into_iter()
        .map(|(name, outcome)| (name.to_owned(), RunResult::from_outcome(&outcome)))
        .collect()
}

/// The first differing line, with a little context, for a readable failure.
fn first_difference(expected: &str, actual: &str) -> String {
    let (expected, actual): (Vec<&str>, Vec<&str>) = (expected.lines().collect(), actual.lines().collect());
    let line = (0..expected.len().max(actual.len())).find(|&i| expected.get(i) != actual.get(i)).unwrap_or(0);
    format!(
        "first difference at line {}:\n- {}\n+ {}",
        line + 1,
        expected.get(line).unwrap_or(&"<end of file>"),
        actual.get(line).unwrap_or(&"<end of file>")
    )
}

fn check_golden(file: &str, actual: &str) {
    let path = golden_path(file);
    if support::update_golden() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}\nCreate it with {REGENERATE}", path.display()));
    assert!(
        expected == actual,
        "{file} differs from {} ({})\nIf the change is intended, regenerate with {REGENERATE}",
        path.display(),
        first_difference(&expected, actual)
    );
}

#[test]
fn html_report_matches_golden_file() {
    check_golden("report.html", &render_html(&fixtures()).unwrap());
}

#[test]
fn csv_report_matches_golden_file() {
    check_golden("report.csv", &render_csv(&fixtures()));
}

#[test]
fn markdown_report_matches_golden_file() {
    check_golden("report.md", &render_md(&fixtures()));
}

#[test]
fn html_report_is_deterministic_and_complete() {
    let page = render_html(&fixtures()).unwrap();
    assert_eq!(page, render_html(&fixtures()).unwrap());
    for chart in [
        "rate-over-time",
        "latency-over-time",
        "latency-spectrum",
        "connect-time",
        "server-rss",
        "server-cpu",
        "compare-echoes-per-sec",
        "compare-p99-latency",
        "compare-rss-peak",
        "compare-echoes-per-cpu-second",
    ] {
        let open = format!("<svg data-chart=\"{chart}\"");
        assert_eq!(page.matches(&open).count(), 1, "chart {chart}");
        let svg = &page[page.find(&open).unwrap()..];
        assert!(svg[..svg.find('\n').unwrap() + 1].contains("role=\"img\""), "chart {chart}");
        assert!(svg.lines().nth(1).unwrap().starts_with("<title id="), "chart {chart} has no <title>");
    }
    // Two of the three fixtures have no server samples; their absence is explained, not blank.
    assert!(page.contains("server not probed: the target is on another host."));
    assert!(page.contains("(uncorrected)"), "the open-loop fixture's uncorrected latency is drawn");
}

/// The fixtures written as result files named after them, in a fresh directory.
fn written_fixtures(dir: &Path) -> Vec<PathBuf> {
    std::fs::create_dir_all(dir).unwrap();
    fixtures()
        .into_iter()
        .map(|(name, result)| {
            let path = dir.join(format!("{name}.json"));
            result.write_json(&path).unwrap();
            path
        })
        .collect()
}

#[test]
fn the_binary_writes_the_golden_files() {
    if support::update_golden() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("wsbench-report-formats-{}", std::process::id()));
    let files = written_fixtures(&dir);
    let html = dir.join("out/report.html");
    std::fs::create_dir_all(html.parent().unwrap()).unwrap();
    for (format, golden) in [("csv", "report.csv"), ("md", "report.md")] {
        let mut command = Command::new(env!("CARGO_BIN_EXE_wsbench"));
        command.arg("report").args(&files).args(["--format", format]);
        if format == "csv" {
            command.arg("--html").arg(&html);
        }
        let output = command.output().unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        check_golden(golden, &String::from_utf8(output.stdout).unwrap());
    }
    // The footer names the command that really ran (with this test's temporary paths).
    let page = std::fs::read_to_string(&html).unwrap();
    let files: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    let ran = format!("wsbench report {} --format csv --html {}", files.join(" "), html.display());
    let footer = format!("Generated by <code>{ran}</code>.");
    assert!(page.contains(&footer), "the footer does not name `{ran}`");
    check_golden("report.html", &page.replace(&footer, "Generated by <code>wsbench report --html</code>."));
    std::fs::remove_dir_all(&dir).unwrap();
}
