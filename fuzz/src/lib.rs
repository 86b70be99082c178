//! wsbench's fuzzing crate: the invariant checks live in [`checks`] so that the libFuzzer
//! targets in `fuzz_targets/` and the corpus test in `crates/proto/tests/fuzz_corpus.rs` run
//! exactly the same code ([`deflate_checks`] for the permessage-deflate `inflate` target);
//! [`server_checks`] does the same for the echo server's `server_conn`
//! target and `crates/server/tests/fuzz_corpus.rs`, and [`appproto_checks`] for the
//! application-protocol decoders (`mqtt_decode`, `stomp_decode`, `socketio_decode`,
//! `graphql_ws_decode`, `jsonrpc_decode`, `nats_decode`) and `crates/appproto/tests/fuzz_corpus.rs`. The three
//! corpus tests replay the corpora with [`corpus::replay`]; [`http3_checks`] serves the `http3_decode`
//! target and `crates/transport/tests/fuzz_corpus.rs`.

pub mod appproto_checks;
pub mod checks;
pub mod corpus;
pub mod deflate_checks;
pub mod http3_checks;
pub mod server_checks;
