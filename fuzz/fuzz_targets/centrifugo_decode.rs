//! Fuzz target `centrifugo_decode`: arbitrary bytes as a Centrifugo JSON message (its
//! lines), and channel names that round-trip. The logic is in
//! `wsbench_fuzz::appproto_checks::centrifugo_decode`, shared with the corpus test.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wsbench_fuzz::appproto_checks::centrifugo_decode(data));
