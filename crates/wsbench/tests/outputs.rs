//! A finished run is never lost: when its result file cannot be written at the end (the
//! folder was removed during the run), the report is still printed, the result goes to a
//! fallback file named on stderr, and the exit code (1) says the write failed.

mod support;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use support::{run_with_timeout, wsbench_bin};

#[test]
fn a_result_whose_folder_vanished_goes_to_a_fallback_file() {
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("outputs-vanished");
    let _ = std::fs::remove_dir_all(&base);
    let (dir, tmp) = (base.join("results"), base.join("tmp"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::create_dir_all(&tmp).unwrap();
    let json = dir.join("r.json");
    let remover = {
        let dir = dir.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(1));
            std::fs::remove_dir_all(&dir).unwrap();
        })
    };
    let mut command = Command::new(wsbench_bin());
    command
        .args(["run", "--connections", "4", "--warmup", "0s", "--duration", "3s", "--json"])
        .arg(&json)
        .env("TMPDIR", &tmp);
    let finished = run_with_timeout(&mut command, Duration::from_secs(30));
    remover.join().unwrap();
    let what = finished.describe("wsbench run whose --json folder was removed");
    assert_eq!(finished.status.and_then(|s| s.code()), Some(1), "{what}");
    assert!(finished.stdout.contains("round trips/s (after warm-up): "), "the report is printed: {what}");
    let line = finished.stderr.lines().find(|l| l.contains("instead")).unwrap_or_else(|| panic!("{what}"));
    assert!(line.starts_with(&format!("wsbench: cannot write {}: ", json.display())), "{what}");
    let fallback = line.split("the result was written to ").nth(1).unwrap().trim_end_matches(" instead");
    assert!(fallback.starts_with(tmp.to_str().unwrap()) && fallback.contains("wsbench-result-"), "{what}");
    let result = wsbench::result::RunResult::read_json(std::path::Path::new(fallback)).unwrap();
    assert!(result.summary.connections.established > 0, "{what}");
    std::fs::remove_dir_all(&base).unwrap();
}
