//! `--protocol graphql-ws` against graphql-ws 6 (servers/node-graphql-ws/server.js): an echo
//! is the `echo` subscription answered by its first result; an invalid operation is a
//! `graphql_error` with the server's message, never a round trip; a server that refuses the
//! connection, or one that speaks another protocol, ends the run with its cause on the
//! report's errors line and exit 3, instead of waiting for the run's end. The init payload
//! carries the token the server's `onConnect` checks; pub/sub is a subscription fed by a
//! mutation through the server's PubSub, with operations of the user's.

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
    let load = ["--connections", "1000", "--warmup", "1s", "--duration", "4s", "--threshold", "errors==0"];
    let (finished, result) = graphql_run("graphql-ws-echo", &server.url("/graphql"), &load);
    finished.assert_success();
    assert_eq!(uint(&result, "/summary/connections/established"), 1000, "{}", summary_of(&result));
    // Every connection echoed in the measured window (not a rate: a busy machine is slower).
    assert_eq!(uint(&result, "/counters/connections_in_window"), 1000, "{}", summary_of(&result));
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
    assert_eq!(errors.get("graphql_ws_init_forbidden"), Some(&10), "{errors:?}");
    assert_eq!(errors.len(), 2, "{errors:?}");
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

#[test]
fn the_init_payload_carries_the_token_the_server_checks() {
    let Some(server) = or_skip(start_graphql_ws()) else { return };
    // The peer's onConnect lets a connection on /private in only with {"token":"let-me-in"}.
    let url = server.url("/private");
    let load = ["--connections", "10", "--warmup", "0s", "--duration", "1s", "--threshold", "errors==0"];
    let right = ["--init-payload", r#"{"token":"let-me-in"}"#];
    let (finished, result) = graphql_run("graphql-ws-init-token", &url, &[&right[..], &load].concat());
    finished.assert_success();
    assert_eq!(uint(&result, "/summary/connections/established"), 10, "{}", summary_of(&result));
    assert!(uint(&result, "/summary/latency_us/count") >= 10, "{}", summary_of(&result));
    assert_eq!(uint(&result, "/counters/payload_mismatches"), 0, "{}", summary_of(&result));

    // A wrong token is refused at connection_init: each connection closed 4403, named by
    // its cause, exit 3 as for any refused connection.
    let wrong = ["--init-payload", r#"{"token":"guess"}"#];
    let (finished, result) = failing_run("graphql-ws-init-wrong-token", &url, &wrong);
    let errors = errors(&result);
    assert_eq!(errors.get("closed_4403"), Some(&10), "{errors:?}");
    assert_eq!(errors.get("graphql_ws_init_forbidden"), Some(&10), "{errors:?}");
    assert_eq!(errors.len(), 2, "{errors:?}");
    let detail =
        result["counters"]["protocol_error_details"]["graphql_ws_init_forbidden"].as_str().unwrap_or("");
    assert_eq!(
        detail,
        r#"the server refused connection_init (close 4403 "Forbidden"): check the --init-payload given"#
    );
    assert!(errors_line(&finished).contains("graphql_ws_init_forbidden 10"), "{}", finished.describe());
}

#[test]
fn pub_sub_goes_through_a_subscription_fed_by_a_mutation() {
    let Some(server) = or_skip(start_graphql_ws()) else { return };
    // Operations of the user's: the room subscription selects one field of an object, and
    // the say mutation takes the message as its body.
    let subscription = r#"{"query":"subscription($r: String!) { room(name: $r) { body } }","variables":{"r":"room-{topic}"}}"#;
    let mutation = r#"{"query":"mutation($r: String!, $b: String!) { say(room: $r, body: $b) }","variables":{"r":"room-{topic}","b":{payload}}}"#;
    let operations = ["--subscription", subscription, "--mutation", mutation];
    let shape = ["--subscribers", "100", "--topics", "10", "--publishers", "10", "--rate", "50/s"];
    let gates = ["--threshold", "errors==0", "--threshold", "lost==0", "--threshold", "duplicated==0"];
    let url = server.url("/graphql");
    let head = ["pubsub", url.as_str(), "--protocol", "graphql-ws", "--duration", "2s"];
    let args = [&head[..], &operations, &shape, &gates].concat();
    let (finished, result) = run("graphql-ws-pubsub", &args, Duration::from_secs(120));
    let context = || format!("{}\n{}", summary_of(&result), finished.describe());
    finished.assert_success();
    assert_eq!(result["config"]["protocol_options"]["subscription"], subscription, "{}", context());
    assert_eq!(uint(&result, "/pubsub/subscribed"), 100, "{}", context());
    let published = uint(&result, "/pubsub/published");
    assert!(published > 0, "nothing published\n{}", context());
    // Each topic has 10 subscribers.
    assert_eq!(uint(&result, "/pubsub/expected_deliveries"), published * 10, "{}", context());
    assert_eq!(uint(&result, "/pubsub/delivered"), published * 10, "{}", context());
    for key in ["lost", "duplicated", "out_of_order", "unexpected", "subscribe_failures"] {
        assert_eq!(uint(&result, &format!("/pubsub/{key}")), 0, "{key}\n{}", context());
    }
}

#[test]
fn a_subscription_the_server_refuses_is_a_graphql_error_and_its_deliveries_lost() {
    let Some(server) = or_skip(start_graphql_ws()) else { return };
    let subscription = r#"{"query":"subscription { nope }"}"#;
    let shape = ["--subscribers", "4", "--topics", "2", "--publishers", "2", "--rate", "20/s"];
    let url = server.url("/graphql");
    let head = ["pubsub", url.as_str(), "--protocol", "graphql-ws", "--subscription", subscription];
    let args = [&head[..], &shape, &["--duration", "1s"]].concat();
    let (finished, result) = run("graphql-ws-pubsub-refused", &args, Duration::from_secs(60));
    finished.assert_completed_with_failures();
    let errors = errors(&result);
    assert_eq!(errors.get("graphql_error"), Some(&4), "one per subscriber: {errors:?}");
    // graphql-ws answers the ping sent after the subscribe before it has validated the
    // operation, so the refusal may come after the acknowledgement: then every publish to
    // the subscriber is lost; before it, the subscribe failed.
    let pubsub = |key: &str| uint(&result, &format!("/pubsub/{key}"));
    assert_eq!(pubsub("subscribed") + pubsub("subscribe_failures"), 4, "{}", summary_of(&result));
    assert_eq!(pubsub("delivered"), 0, "{}", summary_of(&result));
    assert_eq!(pubsub("lost"), pubsub("expected_deliveries"), "{}", summary_of(&result));
    let details = &result["counters"]["protocol_error_details"];
    assert_eq!(details["graphql_error"], r#"Cannot query field "nope" on type "Subscription"."#, "{details}");
}

#[test]
fn an_error_with_an_extensions_code_is_counted_by_its_code() {
    let Some(server) = or_skip(start_graphql_ws()) else { return };
    // The peer's `secret` field throws a GraphQLError with extensions.code FORBIDDEN: the
    // result is a `next` carrying it in `errors`.
    let load = ["--query", "{ secret }", "--connections", "10", "--warmup", "0s", "--duration", "1s"];
    let (finished, result) = graphql_run("graphql-ws-error-code", &server.url("/"), &load);
    finished.assert_completed_with_failures();
    let errors = errors(&result);
    assert!(errors.get("graphql_error_forbidden").copied().unwrap_or(0) >= 10, "{errors:?}");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(uint(&result, "/summary/latency_us/count"), 0, "an error is no round trip");
    let details = &result["counters"]["protocol_error_details"];
    assert_eq!(details["graphql_error_forbidden"], "not allowed to read the secret", "{details}");
}
