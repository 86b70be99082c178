//! Fuzz target `inflate`: arbitrary bytes inflated as a peer's permessage-deflate messages,
//! compressed and inflated back, and parsed as an extension offer. The logic is in
//! `wsbench_fuzz::deflate_checks::inflate`, shared with the corpus test.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wsbench_fuzz::deflate_checks::inflate(data));
