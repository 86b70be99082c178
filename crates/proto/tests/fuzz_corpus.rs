//! Runs every file of the committed fuzz corpora (`fuzz/corpus/<target>/`) through the same
//! checks the libFuzzer targets use, so `cargo test` on stable exercises the seeds and every
//! saved regression input without nightly or cargo-fuzz. The checks are included by path
//! from the fuzz crate, which is why that file may only use `wsbench_proto` and std.

#[path = "../../../fuzz/src/checks.rs"]
mod checks;
#[path = "../../../fuzz/src/deflate_checks.rs"]
mod deflate_checks;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

/// Runs `check` on every file of `fuzz/corpus/<target>/` and fails with the names of the
/// files whose check panicked.
fn run_corpus(target: &str, check: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus").join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    assert!(files.len() >= 10, "only {} seeds in {}", files.len(), dir.display());
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

#[test]
fn frame_decode_server_corpus() {
    run_corpus("frame_decode_server", checks::frame_decode_server);
}

#[test]
fn frame_decode_client_corpus() {
    run_corpus("frame_decode_client", checks::frame_decode_client);
}

#[test]
fn handshake_request_corpus() {
    run_corpus("handshake_request", checks::handshake_request);
}

#[test]
fn handshake_response_corpus() {
    run_corpus("handshake_response", checks::handshake_response);
}

#[test]
fn roundtrip_corpus() {
    run_corpus("roundtrip", checks::roundtrip);
}

#[test]
fn inflate_corpus() {
    run_corpus("inflate", deflate_checks::inflate);
}
