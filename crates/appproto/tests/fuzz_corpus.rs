//! Runs every file of the application-protocol fuzz corpora (`fuzz/corpus/<target>/`)
//! through the same checks the libFuzzer targets use, so `cargo test` on stable exercises the
//! seeds and every saved regression input without nightly or cargo-fuzz. The checks are
//! included by path from the fuzz crate, which is why that file may only use
//! `wsbench_appproto` and std.

#[path = "../../../fuzz/src/appproto_checks.rs"]
mod appproto_checks;

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
fn mqtt_decode_corpus() {
    run_corpus("mqtt_decode", appproto_checks::mqtt_decode);
}

#[test]
fn stomp_decode_corpus() {
    run_corpus("stomp_decode", appproto_checks::stomp_decode);
}

#[test]
fn socketio_decode_corpus() {
    run_corpus("socketio_decode", appproto_checks::socketio_decode);
}

#[test]
fn graphql_ws_decode_corpus() {
    run_corpus("graphql_ws_decode", appproto_checks::graphql_ws_decode);
}

#[test]
fn jsonrpc_decode_corpus() {
    run_corpus("jsonrpc_decode", appproto_checks::jsonrpc_decode);
}

/// Every byte string up to two bytes, and some longer runs, through every check: the
/// decoders' edges (empty input, lone bytes) without waiting for the fuzzer.
#[test]
fn short_inputs_pass_every_check() {
    let checks: [fn(&[u8]); 5] = [
        appproto_checks::mqtt_decode,
        appproto_checks::stomp_decode,
        appproto_checks::socketio_decode,
        appproto_checks::graphql_ws_decode,
        appproto_checks::jsonrpc_decode,
    ];
    for check in checks {
        check(&[]);
        for a in 0..=255u8 {
            check(&[a]);
            for b in [0u8, b'\n', b'\r', b'"', b'\\', b'[', b'{', b'0', b'4', 0x80, 0xff] {
                check(&[a, b]);
                check(&[a, b, b, b'\n', 0, a]);
            }
        }
    }
}
