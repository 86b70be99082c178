//! Fuzz target `signalr_decode`: arbitrary bytes as a negotiate answer's body, a binary
//! message of SignalR's MessagePack hub protocol and a WebSocket message of its JSON hub
//! protocol, and invocations whose target is the input. The logic is in
//! `wsbench_fuzz::appproto_checks::signalr_decode`, shared with the corpus test.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wsbench_fuzz::appproto_checks::signalr_decode(data));
