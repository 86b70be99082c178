//! Fuzz target `http3_decode`: arbitrary bytes as a peer's HTTP/3 control or request
//! stream (frames, SETTINGS, QPACK field sections). The logic is in
//! `wsbench_fuzz::http3_checks::http3_decode`, shared with the corpus test.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wsbench_fuzz::http3_checks::http3_decode(data));
