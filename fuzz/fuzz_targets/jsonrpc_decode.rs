//! Fuzz target `jsonrpc_decode`: arbitrary bytes as a JSON-RPC message, and request ids that
//! round-trip. The logic is in `wsbench_fuzz::appproto_checks::jsonrpc_decode`, shared with the
//! corpus test.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wsbench_fuzz::appproto_checks::jsonrpc_decode(data));
