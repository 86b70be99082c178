//! Runs every file of the committed fuzz corpora (`fuzz/corpus/<target>/`) through the same
//! checks the libFuzzer targets use, so `cargo test` on stable exercises the seeds and every
//! saved regression input without nightly or cargo-fuzz. The checks are included by path
//! from the fuzz crate, which is why that file may only use `wsbench_proto` and std; so is
//! the replay (`fuzz/src/corpus.rs`), which the appproto and server corpus tests share.

#[path = "../../../fuzz/src/checks.rs"]
mod checks;
#[path = "../../../fuzz/src/corpus.rs"]
mod corpus;
#[path = "../../../fuzz/src/deflate_checks.rs"]
mod deflate_checks;

#[test]
fn frame_decode_server_corpus() {
    corpus::replay("frame_decode_server", checks::frame_decode_server);
}

#[test]
fn frame_decode_client_corpus() {
    corpus::replay("frame_decode_client", checks::frame_decode_client);
}

#[test]
fn handshake_request_corpus() {
    corpus::replay("handshake_request", checks::handshake_request);
}

#[test]
fn handshake_response_corpus() {
    corpus::replay("handshake_response", checks::handshake_response);
}

#[test]
fn roundtrip_corpus() {
    corpus::replay("roundtrip", checks::roundtrip);
}

#[test]
fn inflate_corpus() {
    corpus::replay("inflate", deflate_checks::inflate);
}
