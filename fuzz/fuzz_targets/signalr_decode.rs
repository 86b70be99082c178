//! Fuzz target `signalr_decode`: arbitrary bytes as a WebSocket message of SignalR's JSON hub
//! protocol, and invocations whose target is the input. The logic is in
//! `wsbench_fuzz::appproto_checks::signalr_decode`, shared with the corpus test.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wsbench_fuzz::appproto_checks::signalr_decode(data));
