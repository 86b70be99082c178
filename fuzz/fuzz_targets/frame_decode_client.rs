//! Fuzz target `frame_decode_client`: arbitrary bytes, split like a socket would deliver them,
//! into a client-role (unmasked) decoder. The logic is in
//! `wsbench_fuzz::checks::frame_decode_client`, shared with the corpus test.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wsbench_fuzz::checks::frame_decode_client(data));
