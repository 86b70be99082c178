//! Fuzz target `stomp_decode`: arbitrary bytes from a STOMP broker (split in two pieces) into
//! the incremental frame decoder, and header escaping that round-trips. The logic is in
//! `wsbench_fuzz::appproto_checks::stomp_decode`, shared with the corpus test.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wsbench_fuzz::appproto_checks::stomp_decode(data));
