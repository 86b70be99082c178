//! Fuzz target `nats_decode`: arbitrary bytes from a NATS server (split in two pieces) into
//! the incremental operation decoder. The logic is in
//! `wsbench_fuzz::appproto_checks::nats_decode`, shared with the corpus test.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wsbench_fuzz::appproto_checks::nats_decode(data));
