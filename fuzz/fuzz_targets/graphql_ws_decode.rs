//! Fuzz target `graphql_ws_decode`: arbitrary bytes as a graphql-transport-ws message, and
//! subscribes that round-trip. The logic is in
//! `wsbench_fuzz::appproto_checks::graphql_ws_decode`, shared with the corpus test.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wsbench_fuzz::appproto_checks::graphql_ws_decode(data));
