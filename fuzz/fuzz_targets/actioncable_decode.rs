//! Fuzz target `actioncable_decode`: arbitrary bytes as an Action Cable message, and channel
//! names whose subscription comes back confirmed. The logic is in
//! `wsbench_fuzz::appproto_checks::actioncable_decode`, shared with the corpus test.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wsbench_fuzz::appproto_checks::actioncable_decode(data));
