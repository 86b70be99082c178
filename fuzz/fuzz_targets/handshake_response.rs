//! Fuzz target `handshake_response`: arbitrary bytes as a server's answer to the opening
//! handshake. The logic is in `wsbench_fuzz::checks::handshake_response`, shared with the
//! corpus test.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wsbench_fuzz::checks::handshake_response(data));
