//! Fuzz target `roundtrip`: frames built from the input, written with write_frame and decoded
//! back whole and in pieces. The logic is in `wsbench_fuzz::checks::roundtrip`, shared with the
//! corpus test.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wsbench_fuzz::checks::roundtrip(data));
