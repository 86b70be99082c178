//! Runs every file of the application-protocol fuzz corpora (`fuzz/corpus/<target>/`)
//! through the same checks the libFuzzer targets use, so `cargo test` on stable exercises the
//! seeds and every saved regression input without nightly or cargo-fuzz. The checks are
//! included by path from the fuzz crate, which is why that file may only use
//! `wsbench_appproto` and std; so is the replay (`fuzz/src/corpus.rs`), shared with the
//! codec's and the server's corpus tests.

#[path = "../../../fuzz/src/appproto_checks.rs"]
mod appproto_checks;
#[path = "../../../fuzz/src/corpus.rs"]
mod corpus;

#[test]
fn mqtt_decode_corpus() {
    corpus::replay("mqtt_decode", appproto_checks::mqtt_decode);
}

#[test]
fn stomp_decode_corpus() {
    corpus::replay("stomp_decode", appproto_checks::stomp_decode);
}

#[test]
fn socketio_decode_corpus() {
    corpus::replay("socketio_decode", appproto_checks::socketio_decode);
}

#[test]
fn graphql_ws_decode_corpus() {
    corpus::replay("graphql_ws_decode", appproto_checks::graphql_ws_decode);
}

#[test]
fn jsonrpc_decode_corpus() {
    corpus::replay("jsonrpc_decode", appproto_checks::jsonrpc_decode);
}

#[test]
fn centrifugo_decode_corpus() {
    corpus::replay("centrifugo_decode", appproto_checks::centrifugo_decode);
}

#[test]
fn nats_decode_corpus() {
    corpus::replay("nats_decode", appproto_checks::nats_decode);
}

#[test]
fn actioncable_decode_corpus() {
    corpus::replay("actioncable_decode", appproto_checks::actioncable_decode);
}

#[test]
fn pusher_decode_corpus() {
    corpus::replay("pusher_decode", appproto_checks::pusher_decode);
}

#[test]
fn signalr_decode_corpus() {
    corpus::replay("signalr_decode", appproto_checks::signalr_decode);
}

/// Every byte string up to two bytes, and some longer runs, through every check: the
/// decoders' edges (empty input, lone bytes) without waiting for the fuzzer.
#[test]
fn short_inputs_pass_every_check() {
    let checks: [fn(&[u8]); 10] = [
        appproto_checks::mqtt_decode,
        appproto_checks::stomp_decode,
        appproto_checks::socketio_decode,
        appproto_checks::graphql_ws_decode,
        appproto_checks::jsonrpc_decode,
        appproto_checks::centrifugo_decode,
        appproto_checks::nats_decode,
        appproto_checks::actioncable_decode,
        appproto_checks::pusher_decode,
        appproto_checks::signalr_decode,
    ];
    for check in checks {
        check(&[]);
        for a in 0..=255u8 {
            check(&[a]);
            for b in [0u8, b'\n', b'\r', b'"', b'\\', b'[', b'{', b'0', b'4', 0x80, 0xff] {
                check(&[a, b]);
                check(&[a, b, b, b'\n', 0, a]);
            }
        }
    }
}
