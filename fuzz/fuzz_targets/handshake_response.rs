//! Fuzz target `handshake_response`: arbitrary bytes as a server's answer to the opening
//! handshake, and as a plain HTTP response (a negotiate's, before the upgrade). The logic
//! is in `wsbench_fuzz::checks::handshake_response`, shared with the corpus test.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wsbench_fuzz::checks::handshake_response(data));
