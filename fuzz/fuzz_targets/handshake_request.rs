//! Fuzz target `handshake_request`: arbitrary bytes as a client's opening handshake; accepted
//! upgrades must round-trip through the server's answer. The logic is in
//! `wsbench_fuzz::checks::handshake_request`, shared with the corpus test.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wsbench_fuzz::checks::handshake_request(data));
