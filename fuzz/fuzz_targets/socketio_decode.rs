//! Fuzz target `socketio_decode`: arbitrary bytes as an Engine.IO/Socket.IO message and every
//! view of it, and emits that round-trip. The logic is in
//! `wsbench_fuzz::appproto_checks::socketio_decode`, shared with the corpus test.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wsbench_fuzz::appproto_checks::socketio_decode(data));
