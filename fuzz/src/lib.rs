//! wsbench's fuzzing crate: the invariant checks live in [`checks`] so that the libFuzzer
//! targets in `fuzz_targets/` and the corpus test in `crates/proto/tests/fuzz_corpus.rs` run
//! exactly the same code.

pub mod checks;
