//! The corpus replay every crate's `tests/fuzz_corpus.rs` shares: each file of
//! `fuzz/corpus/<target>/` through the check its libFuzzer target runs, so `cargo test` on
//! stable exercises the seeds and every saved regression input without nightly or
//! cargo-fuzz. The tests include this file by path (`#[path]`), as they include the checks,
//! so it may only use std.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

/// Fewest files a corpus must hold: fewer means the folder was not found whole.
const MIN_CORPUS_FILES: usize = 10;

/// The `fuzz/corpus/` folder, found from the crate being built (`crates/NAME` or `fuzz`).
fn corpus_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .map(|dir| dir.join("fuzz/corpus"))
        .find(|dir| dir.is_dir())
        .unwrap_or_else(|| panic!("no fuzz/corpus above {}", manifest.display()))
}

/// Runs `check` on every file of `fuzz/corpus/<target>/` and fails with the names of the
/// files whose check panicked.
pub fn replay(target: &str, check: fn(&[u8])) {
    let dir = corpus_root().join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    assert!(files.len() >= MIN_CORPUS_FILES, "only {} seeds in {}", files.len(), dir.display());
    let failed: Vec<String> = files
        .iter()
        .filter(|path| {
            let data = std::fs::read(path).expect("reading a corpus file");
            catch_unwind(AssertUnwindSafe(|| check(&data))).is_err()
        })
        .map(|path| path.display().to_string())
        .collect();
    assert!(failed.is_empty(), "{target}: {} of {} inputs failed: {failed:#?}", failed.len(), files.len());
}
