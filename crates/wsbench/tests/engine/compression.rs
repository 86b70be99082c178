//! `wsbench run --compression deflate` (RFC 7692) against `wsbench serve`, Python
//! `websockets` and node `ws` with `perMessageDeflate`: every connection negotiates the
//! extension, every echo arrives compressed (RSV1 seen by the engine), every echo is verified
//! byte for byte (no payload mismatch), and json-ts messages cross the wire in fewer bytes
//! than their payload. A server that declines the offer fails the handshake by name.

use std::process::Command;

use serde_json::Value;

use crate::harness::{
    NodeEchoServer, arg, assert_matches_schema, errors, heavy, read_result, repo_root, scratch, summary_of,
    uint, wsbench,
};
use crate::support::scripted_server::Script;
use crate::support::{Server, peer_missing};

const CONNECTIONS: u64 = 8;

/// json-ts: small JSON messages, the realistic case of a feed.
const JSON_TS: &[&str] = &["--payload", "json-ts"];

/// Runs a short compressed echo run against `url` and checks what the must-show asks for;
/// returns the result.
fn compressed_run(name: &str, url: &str, compression: &str, payload: &[&str]) -> Value {
    let _slot = heavy(1);
    let json = scratch(name).join("r.json");
    let connections = CONNECTIONS.to_string();
    let args = [
        "run",
        "echo",
        url,
        "--connections",
        &connections,
        "--duration",
        "2s",
        "--warmup",
        "0s",
        "--compression",
        compression,
        "--json",
        arg(&json),
    ];
    let args = [&args[..], payload].concat();
    let run = wsbench(&args, std::time::Duration::from_secs(30));
    assert!(json.exists(), "no result file\n{}", run.describe());
    let result = read_result(&json);
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    assert_eq!(uint(&result, "/summary/connections/established"), CONNECTIONS, "{context}");
    assert!(errors(&result).is_empty(), "errors (a payload mismatch among them?)\n{context}");
    let received = uint(&result, "/summary/messages/received");
    assert!(received > 0, "{context}");
    let compression = &result["summary"]["compression"];
    let negotiated: u64 =
        compression["negotiated"].as_object().expect("negotiated").values().filter_map(Value::as_u64).sum();
    assert_eq!(negotiated, CONNECTIONS, "every connection negotiated deflate\n{context}");
    // Echoes that cross our close at the end are read but not counted as round trips.
    let compressed = uint(&result, "/summary/compression/compressed_messages_received");
    assert!(compressed >= received, "every echo arrived with RSV1\n{context}");
    for way in ["sent", "received"] {
        let wire = uint(&result, &format!("/summary/compression/wire_bytes/{way}"));
        let payload = uint(&result, &format!("/summary/compression/payload_bytes/{way}"));
        assert!(wire < payload, "{way}: {wire} wire bytes, {payload} payload bytes\n{context}");
    }
    assert!(run.stdout.contains("wire bytes:"), "the report shows wire against payload bytes\n{context}");
    assert_matches_schema(&result);
    result
}

#[test]
fn deflate_against_wsbench_serve_compresses_and_verifies_every_echo() {
    let server = Server::spawn(&[]);
    let result = compressed_run("deflate-serve", &server.urls[0], "deflate", JSON_TS);
    let negotiated = result["summary"]["compression"]["negotiated"].as_object().unwrap();
    assert!(negotiated.contains_key("permessage-deflate"), "{negotiated:?}");
}

#[test]
fn deflate_with_no_context_takeover_against_wsbench_serve() {
    let server = Server::spawn(&[]);
    let offer = "deflate; server_no_context_takeover; client_no_context_takeover";
    // Without context takeover a 40-byte JSON message compressed alone is no smaller; a 4 KiB
    // printable-ASCII one is.
    let payload = ["--payload", "bytes:4096", "--text"];
    let result = compressed_run("deflate-serve-nct", &server.urls[0], offer, &payload);
    let negotiated = result["summary"]["compression"]["negotiated"].as_object().unwrap();
    assert!(
        negotiated.contains_key("permessage-deflate; server_no_context_takeover; client_no_context_takeover"),
        "{negotiated:?}"
    );
}

#[test]
fn text_file_lines_are_sent_cycled_compressed_and_each_echo_checked() {
    let server = Server::spawn(&[]);
    let feed = scratch("deflate-text-file").join("feed.jsonl");
    let lines: Vec<String> = (0..50)
        .map(|i| {
            format!(
                r#"{{"type":"trade","symbol":"SYM{}","price":{}.{:02},"size":{}}}"#,
                i % 7,
                100 + i,
                i,
                i * 10
            )
        })
        .collect();
    std::fs::write(&feed, lines.join("\n") + "\n").unwrap();
    let payload = ["--payload".to_owned(), format!("text:{}", feed.display())];
    let payload: Vec<&str> = payload.iter().map(String::as_str).collect();
    let result = compressed_run("deflate-text-file-run", &server.urls[0], "deflate", &payload);
    // Every echo was checked against the line it answers (no sampling for text:FILE).
    let received = uint(&result, "/summary/messages/received");
    let payload_received = uint(&result, "/summary/compression/payload_bytes/received");
    assert!(payload_received >= received * 50, "{payload_received} bytes for {received} echoes");
}

/// `tests/interop/echo_server.py` (Python websockets, deflate on), or None (after saying why)
/// when the peer is not installed and peers are optional.
fn python_echo_server() -> Option<NodeEchoServer> {
    let python = repo_root().join(".venv/bin/python");
    if !python.exists() {
        peer_missing(&format!("peer python websockets not installed ({} does not exist)", python.display()));
        return None;
    }
    let script = repo_root().join("tests/interop/echo_server.py");
    let mut command = Command::new(&python);
    command.arg(&script);
    Some(NodeEchoServer::spawn(command, "python echo_server.py"))
}

#[test]
fn deflate_against_python_websockets_compresses_and_verifies_every_echo() {
    let Some(server) = python_echo_server() else { return };
    compressed_run("deflate-python", &server.url, "deflate", JSON_TS);
}

#[test]
fn deflate_against_node_ws_with_per_message_deflate() {
    let Some(node) = NodeEchoServer::start_with(&["--deflate"]) else {
        return;
    };
    compressed_run("deflate-node", &node.url, "deflate", JSON_TS);
}

/// A one-second run against `url` with `args`: the run, its result and a description.
fn short_run(name: &str, url: &str, args: &[&str]) -> (crate::harness::Finished, Value, String) {
    let json = scratch(name).join("r.json");
    let base = ["run", url, "--duration", "1s", "--warmup", "0s", "--json", arg(&json)];
    let run = wsbench(&[&base[..], args].concat(), std::time::Duration::from_secs(30));
    let result = read_result(&json);
    let context = format!("{}\n{}", summary_of(&result), run.describe());
    (run, result, context)
}

#[test]
fn a_server_that_declines_deflate_fails_every_handshake_by_name() {
    let _slot = heavy(1);
    let server = Server::spawn(&["--no-deflate"]);
    let (run, result, context) =
        short_run("deflate-declined", &server.urls[0], &["--connections", "3", "--compression", "deflate"]);
    assert_eq!(errors(&result).get("handshake_deflate_declined").copied(), Some(3), "{context}");
    assert!(run.stdout.contains("did not accept permessage-deflate"), "{context}");
}

#[test]
fn an_answer_with_parameters_not_offered_fails_the_handshake_with_its_reason() {
    let _slot = heavy(1);
    let server = Script::echo().answer_extensions("permessage-deflate; server_max_window_bits=12").start();
    let offer = ["--connections", "2", "--compression", "deflate; server_max_window_bits=10"];
    let (_, result, context) = short_run("deflate-bad-answer", &server.url(), &offer);
    assert_eq!(errors(&result).get("handshake_deflate_bad_answer").copied(), Some(2), "{context}");
    let response =
        result["counters"]["handshake_responses"]["deflate_bad_answer"].as_str().unwrap_or_default();
    assert!(response.contains("server_max_window_bits"), "the reason names the parameter\n{context}");
}

/// The client side of Autobahn section 13: each offer the engine can make, against Python
/// `websockets` (which honours every parameter), with messages of several sizes; every echo
/// inflated and verified, every connection on the parameters asked for.
#[test]
fn client_offers_with_each_parameter_combination_against_python_websockets() {
    let Some(server) = python_echo_server() else { return };
    let cases: [(&str, &str, &str); 5] = [
        ("deflate; client_no_context_takeover", "bytes:16", "client_no_context_takeover"),
        ("deflate; server_no_context_takeover", "bytes:4096", "server_no_context_takeover"),
        ("deflate; server_max_window_bits=10", "bytes:65536", "server_max_window_bits=10"),
        ("deflate; client_max_window_bits=9", "bytes:1024", "client_max_window_bits=9"),
        (
            "deflate; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=9; client_max_window_bits=9",
            "bytes:131072",
            "server_max_window_bits=9",
        ),
    ];
    for (offer, payload, expect) in cases {
        let _slot = heavy(1);
        let args = ["--connections", "2", "--payload", payload, "--text", "--compression", offer];
        let (_, result, context) = short_run("deflate-client-offers", &server.url, &args);
        let context = format!("offer {offer}\n{context}");
        assert!(errors(&result).is_empty(), "{context}");
        assert!(uint(&result, "/summary/messages/received") > 0, "{context}");
        let negotiated = result["summary"]["compression"]["negotiated"].as_object().expect("negotiated");
        assert!(!negotiated.is_empty(), "no connection negotiated deflate\n{context}");
        assert!(negotiated.keys().all(|answer| answer.contains(expect)), "{negotiated:?}\n{context}");
        let compressed = uint(&result, "/summary/compression/compressed_messages_received");
        assert!(compressed >= uint(&result, "/summary/messages/received"), "{context}");
    }
}
