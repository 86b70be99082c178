//! Fuzz target `server_conn`: arbitrary byte streams, cut into pieces, fed to the echo
//! server's per-connection state machine; its output must be valid HTTP then frames, with
//! nothing after a close. The logic is in `wsbench_fuzz::server_checks::server_conn`, shared
//! with the corpus test in crates/server/tests/fuzz_corpus.rs.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wsbench_fuzz::server_checks::server_conn(data));
