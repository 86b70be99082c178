//! `--protocol jsonrpc` against rpc-websockets 10 (servers/node-rpc-websockets/server.js):
//! an echo is the call `echo` answered by its result; a method the server lacks is an
//! error by its JSON-RPC code, never a round trip.

use std::time::Duration;

use wsbench::units::format::group;
use wsbench_testpeers::{or_skip, start_rpc_websockets};

use crate::harness::{errors, summary_of, uint};
use crate::run;

#[test]
fn a_thousand_connections_echo_through_rpc_websockets_without_an_error() {
    let Some(server) = or_skip(start_rpc_websockets()) else { return };
    let url = server.url("/");
    let load = ["--protocol", "jsonrpc", "--connections", "1000", "--warmup", "1s", "--duration", "2s"];
    let (finished, result) = run(
        "jsonrpc-echo",
        &[&[url.as_str()], &load[..], &["--threshold", "errors==0"]].concat(),
        Duration::from_secs(60),
    );
    finished.assert_success();
    assert_eq!(uint(&result, "/summary/connections/established"), 1000, "{}", summary_of(&result));
    assert!(uint(&result, "/summary/latency_us/count") > 1000, "{}", summary_of(&result));
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
