//! Fuzz target `mqtt_decode`: arbitrary bytes from an MQTT broker (3.1.1 or 5, split in two
//! pieces) into the incremental decoder. The logic is in
//! `wsbench_fuzz::appproto_checks::mqtt_decode`, shared with the corpus test.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wsbench_fuzz::appproto_checks::mqtt_decode(data));
