//! Runs every file of the HTTP/3 fuzz corpus (`fuzz/corpus/http3_decode/`) through the check
//! its libFuzzer target uses, so `cargo test` on stable exercises the seeds and every saved
//! regression input without nightly or cargo-fuzz. The check and the replay are included
//! by path from the fuzz crate.

#[path = "../../../fuzz/src/corpus.rs"]
mod corpus;
#[path = "../../../fuzz/src/http3_checks.rs"]
mod http3_checks;

#[test]
fn http3_decode_corpus() {
    corpus::replay("http3_decode", http3_checks::http3_decode);
}
