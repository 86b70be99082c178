//! Fuzz target `frame_decode_server`: arbitrary bytes, split like a socket would deliver them,
//! into a server-role (masked) decoder. The logic is in
//! `wsbench_fuzz::checks::frame_decode_server`, shared with the corpus test.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wsbench_fuzz::checks::frame_decode_server(data));
