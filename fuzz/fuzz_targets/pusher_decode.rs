//! Fuzz target `pusher_decode`: arbitrary bytes as a Pusher message, and channel names whose
//! subscription comes back as succeeded. The logic is in
//! `wsbench_fuzz::appproto_checks::pusher_decode`, shared with the corpus test.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wsbench_fuzz::appproto_checks::pusher_decode(data));
