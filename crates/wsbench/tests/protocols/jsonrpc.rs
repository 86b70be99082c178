//! `--protocol jsonrpc` against rpc-websockets 10 (servers/node-rpc-websockets/server.js):
//! an echo is the call `echo` answered by its result; a method the server lacks is an
//! error by its JSON-RPC code, never a round trip.

use std::time::Duration;

use wsbench::units::format::group;
use wsbench_testpeers::{or_skip, start_rpc_websockets};

use crate::harness::{errors, summary_of, uint};
use crate::run;
use crate::support::raw_server::{RawServer, read_upgrade};

#[test]
fn a_thousand_connections_echo_through_rpc_websockets_without_an_error() {
    let Some(server) = or_skip(start_rpc_websockets()) else { return };
    let url = server.url("/");
    let load = ["--protocol", "jsonrpc", "--connections", "1000", "--warmup", "1s", "--duration", "4s"];
    let (finished, result) = run(
        "jsonrpc-echo",
        &[&[url.as_str()], &load[..], &["--threshold", "errors==0"]].concat(),
        Duration::from_secs(60),
    );
    finished.assert_success();
    assert_eq!(uint(&result, "/summary/connections/established"), 1000, "{}", summary_of(&result));
    // Every connection echoed in the measured window (not a rate: a busy machine is slower).
    assert_eq!(uint(&result, "/counters/connections_in_window"), 1000, "{}", summary_of(&result));
    assert_eq!(uint(&result, "/counters/payload_mismatches"), 0, "{}", summary_of(&result));
    assert_eq!(result["config"]["protocol"], "jsonrpc");
}

#[test]
fn calling_a_method_the_server_lacks_is_an_error_by_its_code() {
    let Some(server) = or_skip(start_rpc_websockets()) else { return };
    let url = server.url("/");
    let load =
        ["--protocol", "jsonrpc", "--method", "no_such_method", "--connections", "10", "--warmup", "0s"];
    let (finished, result) = run(
        "jsonrpc-missing-method",
        &[&[url.as_str()], &load[..], &["--duration", "1s"]].concat(),
        Duration::from_secs(30),
    );
    finished.assert_completed_with_failures();
    let errors = errors(&result);
    let refused = errors.get("jsonrpc_error_-32601").copied().unwrap_or(0);
    assert!(refused >= 10, "every connection's call is refused by its code: {errors:?}");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(uint(&result, "/summary/latency_us/count"), 0, "an error reply is no round trip");
    assert_eq!(uint(&result, "/counters/messages_unanswered"), 0, "{}", summary_of(&result));
    // The server's own words are kept once.
    let details = &result["counters"]["protocol_error_details"];
    assert_eq!(details["jsonrpc_error_-32601"], "Method not found", "{details}");
    let reported = format!("jsonrpc_error_-32601 {} (\"Method not found\")", group(refused));
    assert!(
        finished.stdout.contains(&reported),
        "the report shows the server's words\n{}",
        finished.describe()
    );
}

/// A JSON-RPC server of the kind geth is: every message is answered with a batch reply
/// (an array) holding two errors and one result. Real sockets, port 0; stopped on drop.
fn start_batch_answering_server() -> RawServer {
    use std::io::{Read, Write};
    use wsbench_proto::handshake::server_response;
    use wsbench_proto::{Decoder, OpCode, Role, write_frame};

    const BATCH: &[u8] = br#"[{"jsonrpc":"2.0","error":{"code":-32601,"message":"the method eth_x does not exist/is not available"},"id":"1"},{"jsonrpc":"2.0","result":"0x10","id":"2"},{"jsonrpc":"2.0","error":{"code":-32602,"message":"invalid argument 0"},"id":"3"}]"#;
    RawServer::start(|mut stream, _stop| {
        let Ok(Some((upgrade, mut input))) = read_upgrade(&mut stream) else { return };
        if stream.write_all(&server_response(&upgrade, None)).is_err() {
            return;
        }
        let mut decoder = Decoder::new(Role::Server, 1 << 20);
        let mut chunk = [0u8; 4096];
        loop {
            while let Ok(Some(frame)) = decoder.decode(&mut input) {
                let consumed = frame.consumed;
                if frame.opcode == OpCode::Text {
                    let mut reply = Vec::new();
                    write_frame(&mut reply, true, OpCode::Text, None, BATCH);
                    if stream.write_all(&reply).is_err() {
                        return;
                    }
                }
                input.drain(..consumed);
            }
            let Ok(n @ 1..) = stream.read(&mut chunk) else { return };
            input.extend_from_slice(&chunk[..n]);
        }
    })
}

#[test]
fn each_error_in_a_batch_reply_is_counted_by_its_code() {
    let server = start_batch_answering_server();
    let file = crate::harness::repo_root().join("target/flow-jsonrpc-batch.toml");
    let steps = r#"scenario = "flow"
protocol = "jsonrpc"
connections = 2

[[flow.steps]]
repeat = 3
steps = [
    { name = "batch", send = '[{"jsonrpc":"2.0","id":"1","method":"eth_x","params":[]},{"jsonrpc":"2.0","id":"2","method":"eth_blockNumber","params":[]},{"jsonrpc":"2.0","id":"3","method":"eth_getBalance","params":[]}]' },
    { expect-regex = 'eth_x', timeout = "2s" },
]
"#;
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, steps).unwrap();
    let url = format!("ws://{}/", server.addr());
    let args = ["--scenario", file.to_str().unwrap(), &url, "--duration", "2s", "--threshold", "errors==0"];
    let (finished, result) = run("jsonrpc-batch-errors", &args, Duration::from_secs(30));
    assert_eq!(finished.code, Some(99), "errors==0 fails\n{}", finished.describe());
    let errors = errors(&result);
    // 2 connections × 3 batches, each holding two errors.
    assert_eq!(errors.get("jsonrpc_error_-32601"), Some(&6), "{errors:?}");
    assert_eq!(errors.get("jsonrpc_error_-32602"), Some(&6), "{errors:?}");
}

/// `wsbench run URL --protocol jsonrpc ARGS…` of 10 connections for 1 s.
fn jsonrpc_run(test: &str, url: &str, args: &[&str]) -> (crate::harness::Finished, serde_json::Value) {
    let load = ["--protocol", "jsonrpc", "--connections", "10", "--warmup", "0s", "--duration", "1s"];
    run(test, &[&[url], &load[..], args].concat(), Duration::from_secs(60))
}

#[test]
fn a_method_without_params_is_called_with_params_of_the_user_s() {
    let Some(server) = or_skip(start_rpc_websockets()) else { return };
    let url = server.url("/");
    // `block_number` refuses params as geth's eth_blockNumber does: the default params,
    // the payload, are refused by the server's code.
    let (finished, result) = jsonrpc_run("jsonrpc-default-params", &url, &["--method", "block_number"]);
    finished.assert_completed_with_failures();
    let errors = errors(&result);
    assert!(errors.get("jsonrpc_error_-32602").copied().unwrap_or(0) >= 10, "{errors:?}");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(uint(&result, "/summary/latency_us/count"), 0, "{}", summary_of(&result));

    let args = ["--method", "block_number", "--params", "[]", "--threshold", "errors==0"];
    let (finished, result) = jsonrpc_run("jsonrpc-empty-params", &url, &args);
    finished.assert_success();
    assert!(uint(&result, "/summary/latency_us/count") >= 10, "{}", summary_of(&result));
    assert_eq!(uint(&result, "/counters/payload_mismatches"), 0, "the result is the server's own answer");
    assert_eq!(result["config"]["protocol_options"]["params"], "[]", "{}", result["config"]);
}

#[test]
fn a_batch_of_calls_is_answered_by_a_batch_reply_matched_by_id() {
    let Some(server) = or_skip(start_rpc_websockets()) else { return };
    let url = server.url("/");
    let args = ["--batch", "4", "--threshold", "errors==0"];
    let (finished, result) = jsonrpc_run("jsonrpc-batch", &url, &args);
    finished.assert_success();
    let batches = uint(&result, "/summary/latency_us/count");
    assert!(batches >= 10, "{}", summary_of(&result));
    assert_eq!(uint(&result, "/counters/messages_unanswered"), 0, "{}", summary_of(&result));

    // Each failed call of a batch counts: four errors per batch, none a round trip.
    let args = ["--batch", "4", "--method", "block_number"];
    let (finished, result) = jsonrpc_run("jsonrpc-batch-refused", &url, &args);
    finished.assert_completed_with_failures();
    let errors = errors(&result);
    let refused = errors.get("jsonrpc_error_-32602").copied().unwrap_or(0);
    assert!(refused >= 40 && refused % 4 == 0, "4 per batch: {errors:?}");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(uint(&result, "/summary/latency_us/count"), 0, "{}", summary_of(&result));
}
