//! `--protocol graphql-ws` against graphql-ws 6 (servers/node-graphql-ws/server.js): an echo
//! is the `echo` subscription answered by its first result; an invalid operation is a
//! `graphql_error` with the server's message, never a round trip; a server that refuses the
//! connection, or one that speaks another protocol, ends the run with its cause on the
//! report's errors line and exit 3, instead of waiting for the run's end.

use std::time::Duration;

use serde_json::Value;
use wsbench_testpeers::{or_skip, start_graphql_ws, start_rpc_websockets};

use crate::harness::{Finished, errors, summary_of, uint};
use crate::run;

/// The report's errors line.
fn errors_line(finished: &Finished) -> &str {
    finished.stdout.lines().find(|line| line.starts_with("errors:")).unwrap_or_default()
}

/// `wsbench run URL --protocol graphql-ws ARGS…`, patient with each connection's opening
/// (far more than a loaded machine needs, so a slow `connection_ack` is never what a test
/// sees); a run that does not end on its own fails the test.
fn graphql_run(test: &str, url: &str, args: &[&str]) -> (Finished, Value) {
    let patient = ["--protocol", "graphql-ws", "--connect-timeout", "20s"];
    run(test, &[&[url], &patient[..], args].concat(), Duration::from_secs(120))
}

/// A run of 10 connections whose every connection fails: it ends once none is left (long
/// before its duration), having established none, with exit 3.
fn failing_run(test: &str, url: &str, extra: &[&str]) -> (Finished, Value) {
    let load = ["--connections", "10", "--warmup", "0s", "--duration", "300s"];
    let (finished, result) = graphql_run(test, url, &[&load[..], extra].concat());
    finished.assert_completed_with_failures();
    assert_eq!(uint(&result, "/summary/connections/established"), 0, "{}", summary_of(&result));
    assert_eq!(uint(&result, "/summary/latency_us/count"), 0, "{}", summary_of(&result));
    (finished, result)
}

#[test]
fn a_thousand_connections_echo_through_graphql_ws_without_an_error() {
    let Some(server) = or_skip(start_graphql_ws()) else { return };
    let load = ["--connections", "1000", "--warmup", "1s", "--duration", "2s", "--threshold", "errors==0"];
    let (finished, result) = graphql_run("graphql-ws-echo", &server.url("/graphql"), &load);
    finished.assert_success();
    assert_eq!(uint(&result, "/summary/connections/established"), 1000, "{}", summary_of(&result));
    assert!(uint(&result, "/summary/latency_us/count") > 1000, "{}", summary_of(&result));
    assert_eq!(uint(&result, "/counters/payload_mismatches"), 0, "{}", summary_of(&result));
    assert_eq!(result["counters"]["subprotocols_chosen"]["graphql-transport-ws"], 1000);
    assert_eq!(result["config"]["protocol"], "graphql-ws");
}

#[test]
fn a_query_of_the_user_s_counts_its_first_result_without_checking_it() {
    let Some(server) = or_skip(start_graphql_ws()) else { return };
    // Two results per request: the first is the round trip, the second and the complete
    // are nothing the load asked for; `{"ticks":1}` is no echo of the payload.
    let query = ["--query", "subscription { ticks(count: 2) }"];
    let load = ["--connections", "10", "--warmup", "0s", "--duration", "1s"];
    let (finished, result) =
        graphql_run("graphql-ws-user-query", &server.url("/"), &[&query[..], &load].concat());
    finished.assert_success();
    assert!(uint(&result, "/summary/latency_us/count") >= 10, "{}", summary_of(&result));
    assert_eq!(uint(&result, "/counters/payload_mismatches"), 0, "{}", summary_of(&result));
}

#[test]
fn an_invalid_query_is_a_graphql_error_with_the_server_s_message() {
    let Some(server) = or_skip(start_graphql_ws()) else { return };
    let load = ["--query", "{ nope }", "--connections", "10", "--warmup", "0s", "--duration", "1s"];
    let (finished, result) = graphql_run("graphql-ws-invalid-query", &server.url("/"), &load);
    finished.assert_completed_with_failures();
    let errors = errors(&result);
    assert!(errors.get("graphql_error").copied().unwrap_or(0) >= 10, "every request is refused: {errors:?}");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(uint(&result, "/summary/latency_us/count"), 0, "an error is no round trip");
    assert_eq!(uint(&result, "/counters/messages_unanswered"), 0, "{}", summary_of(&result));
    let said = r#"Cannot query field "nope" on type "Query"."#;
    let details = &result["counters"]["protocol_error_details"];
    assert_eq!(details["graphql_error"], said, "{details}");
    // Quoted on the report's errors line.
    let shown = format!("({said:?})");
    assert!(errors_line(&finished).contains(&shown), "{shown}\n{}", finished.describe());
}

#[test]
fn the_legacy_subprotocol_is_refused_at_the_upgrade() {
    let Some(server) = or_skip(start_graphql_ws()) else { return };
    // graphql-ws 6 accepts the upgrade choosing no subprotocol, then closes 4406; wsbench
    // fails the upgrade first, since the server chose none of those offered.
    let (finished, result) =
        failing_run("graphql-ws-legacy-subprotocol", &server.url("/"), &["--subprotocol", "graphql-ws"]);
    let errors = errors(&result);
    assert_eq!(errors.get("handshake_subprotocol_not_chosen"), Some(&10), "{errors:?}");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        finished.stdout.contains("subprotocol offered graphql-ws, none chosen"),
        "{}",
        finished.describe()
    );
}

#[test]
fn a_server_closing_at_connection_init_shows_its_code_and_reason() {
    let Some(server) = or_skip(start_graphql_ws()) else { return };
    // The peer refuses connection_init on /forbidden (its onConnect says no): close 4403.
    let (finished, result) = failing_run("graphql-ws-forbidden", &server.url("/forbidden"), &[]);
    let errors = errors(&result);
    assert_eq!(errors.get("closed_4403"), Some(&10), "{errors:?}");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(result["counters"]["close_reasons"]["4403"], "Forbidden");
    assert!(errors_line(&finished).contains(r#"closed_4403 10 ("Forbidden")"#), "{}", finished.describe());
}

#[test]
fn a_server_that_is_not_graphql_ws_ends_with_one_clear_cause() {
    let Some(server) = or_skip(start_rpc_websockets()) else { return };
    // rpc-websockets answers connection_init with a JSON-RPC error.
    let (finished, result) = failing_run("graphql-ws-wrong-server", &server.url("/"), &[]);
    let errors = errors(&result);
    assert_eq!(errors.get("graphql_ws_malformed"), Some(&10), "{errors:?}");
    assert_eq!(errors.len(), 1, "{errors:?}");
    let detail = result["counters"]["protocol_error_details"]["graphql_ws_malformed"].as_str().unwrap_or("");
    assert!(detail.starts_with("not a graphql-transport-ws message"), "{detail}");
    assert!(detail.contains("jsonrpc"), "what the server sent is quoted: {detail}");
    assert!(errors_line(&finished).contains("not a graphql-transport-ws message"), "{}", finished.describe());
}
