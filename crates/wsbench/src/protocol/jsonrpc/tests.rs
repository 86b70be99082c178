//! The JSON-RPC session through `Heard`: an echo call and its result, errors by code,
//! batch replies, params templates and batches of calls, and a flow's messages.

use std::time::Instant;

use super::*;
use crate::protocol::tests::{Heard, setup};

#[test]
fn an_echo_is_a_call_numbered_from_one_and_its_result() {
    let options = Options::default();
    let mut session = JsonRpc.session(&setup(Use::Requests, &options));
    let mut heard = Heard::default();
    session.request(0, b"a \"quoted\" line", &mut heard);
    assert_eq!(
        heard.sent_text(0),
        r#"{"jsonrpc":"2.0","method":"echo","params":["a \"quoted\" line"],"id":1}"#
    );
    session.receive(
        br#"{"jsonrpc":"2.0","result":["a \"quoted\" line"],"id":1}"#,
        false,
        Instant::now(),
        &mut heard,
    );
    session.receive(br#"{"jsonrpc":"2.0","result":"plain","id":7}"#, false, Instant::now(), &mut heard);
    assert_eq!(heard.replies, [(Some(0), b"a \"quoted\" line".to_vec()), (Some(6), b"plain".to_vec())]);
}

#[test]
fn an_error_reply_is_an_error_by_its_code_for_its_request() {
    let options = Options::with([("method", "nope".into())]);
    let mut session = JsonRpc.session(&setup(Use::Requests, &options));
    let mut heard = Heard::default();
    session.request(4, b"x", &mut heard);
    assert!(heard.sent_text(0).contains(r#""method":"nope""#));
    let error = br#"{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":5}"#;
    session.receive(error, false, Instant::now(), &mut heard);
    session.receive(b"not json", false, Instant::now(), &mut heard);
    assert!(heard.replies.is_empty());
    assert_eq!(heard.errors[0], ("jsonrpc_error_-32601".into(), "Method not found".into(), Some(4), false));
    assert_eq!(heard.errors[1].0, "jsonrpc_malformed");
}

#[test]
fn options_it_cannot_honour_are_refused() {
    let binary = Options { binary: true, ..Options::default() };
    assert!(JsonRpc.check(&binary).unwrap_err().contains("--binary"));
    assert!(JsonRpc.check(&Options::with([("method", "".into())])).is_err());
    assert!(!JsonRpc.serves(Use::PubSub));
}

#[test]
fn each_error_of_a_batch_reply_counts() {
    let options = Options::default();
    let batch =
        br#"[{"jsonrpc":"2.0","error":{"code":-32601,"message":"the method eth_x does not exist"},"id":"1"},
        {"jsonrpc":"2.0","result":"0x10","id":"2"},
        {"jsonrpc":"2.0","error":{"code":-32602,"message":"invalid argument"},"id":"3"}]"#;
    let mut flow = JsonRpc.session(&setup(Use::Messages, &options));
    let mut heard = Heard::default();
    flow.receive(batch, false, Instant::now(), &mut heard);
    assert_eq!(heard.messages, [(batch.to_vec(), Some("jsonrpc_error_-32601".to_owned()))]);
    assert_eq!(heard.errors, [("jsonrpc_error_-32602".into(), "invalid argument".into(), None, false)]);

    let mut requests = JsonRpc.session(&setup(Use::Requests, &options));
    let mut heard = Heard::default();
    let batch = br#"[{"jsonrpc":"2.0","result":"a","id":1},{"jsonrpc":"2.0","error":{"code":-32000,"message":"busy"},"id":2}]"#;
    requests.receive(batch, false, Instant::now(), &mut heard);
    assert_eq!(heard.replies, [(Some(0), b"a".to_vec())]);
    assert_eq!(heard.errors, [("jsonrpc_error_-32000".into(), "busy".into(), Some(1), false)]);
}

#[test]
fn a_flows_messages_pass_whole_with_error_replies_marked() {
    let options = Options::default();
    let mut session = JsonRpc.session(&setup(Use::Messages, &options));
    let mut heard = Heard::default();
    let result = br#"{"jsonrpc":"2.0","result":1,"id":"a"}"#;
    let error = br#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"busy"},"id":"b"}"#;
    for message in [&result[..], error, b"hello"] {
        session.receive(message, false, Instant::now(), &mut heard);
    }
    let marked = Some("jsonrpc_error_-32000".to_owned());
    assert_eq!(
        heard.messages,
        [(result.to_vec(), None), (error.to_vec(), marked), (b"hello".to_vec(), None)]
    );
}

#[test]
fn params_of_the_user_s_are_sent_as_given_with_the_payload_filled_in() {
    let none = Options::with([("params", "[]".into())]);
    assert!(!JsonRpc.replies_echo(&none), "a result for params of the user's is the server's own");
    let mut session = JsonRpc.session(&setup(Use::Requests, &none));
    let mut heard = Heard::default();
    session.request(0, b"x", &mut heard);
    assert_eq!(heard.sent_text(0), r#"{"jsonrpc":"2.0","method":"echo","params":[],"id":1}"#);

    let wrapped = Options::with([("params", r#"{"text":{payload},"n":2}"#.into())]);
    let mut session = JsonRpc.session(&setup(Use::Requests, &wrapped));
    session.request(1, b"a \"b\"", &mut heard);
    assert_eq!(
        heard.sent_text(1),
        r#"{"jsonrpc":"2.0","method":"echo","params":{"text":"a \"b\"","n":2},"id":2}"#
    );
    assert!(JsonRpc.replies_echo(&Options::default()));
}

#[test]
fn a_batch_is_one_message_of_calls_and_its_reply_matched_by_id_in_any_order() {
    let options = Options::with([("batch", 3.into())]);
    assert!(!JsonRpc.replies_echo(&options));
    let mut session = JsonRpc.session(&setup(Use::Requests, &options));
    let mut heard = Heard::default();
    session.request(2, b"x", &mut heard);
    let call = |id: u64| format!(r#"{{"jsonrpc":"2.0","method":"echo","params":["x"],"id":{id}}}"#);
    assert_eq!(heard.sent_text(0), format!("[{},{},{}]", call(7), call(8), call(9)));
    let reply = br#"[{"jsonrpc":"2.0","result":["x"],"id":9},{"jsonrpc":"2.0","result":["x"],"id":7},{"jsonrpc":"2.0","result":["x"],"id":8}]"#;
    session.receive(reply, false, Instant::now(), &mut heard);
    assert_eq!(heard.replies, [(Some(2), reply.to_vec())]);
    assert!(heard.errors.is_empty(), "{:?}", heard.errors);
}

#[test]
fn a_batch_reply_s_errors_count_by_code_and_the_first_answers_its_request() {
    let options = Options::with([("batch", 3.into())]);
    let mut session = JsonRpc.session(&setup(Use::Requests, &options));
    let mut heard = Heard::default();
    let failed = br#"[{"jsonrpc":"2.0","result":1,"id":1},{"jsonrpc":"2.0","error":{"code":-32602,"message":"too many arguments"},"id":2},{"jsonrpc":"2.0","error":{"code":-32000,"message":"busy"},"id":3}]"#;
    session.receive(failed, false, Instant::now(), &mut heard);
    let short = br#"[{"jsonrpc":"2.0","result":1,"id":4},{"jsonrpc":"2.0","result":1,"id":5},{"jsonrpc":"2.0","result":1,"id":5},{"jsonrpc":"2.0","result":1,"id":99}]"#;
    session.receive(short, false, Instant::now(), &mut heard);
    let refused = br#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid array"},"id":null}"#;
    session.receive(refused, false, Instant::now(), &mut heard);
    assert!(heard.replies.is_empty());
    let causes: Vec<(&str, Option<u64>)> =
        heard.errors.iter().map(|(cause, _, seq, _)| (cause.as_str(), *seq)).collect();
    assert_eq!(
        causes,
        [
            ("jsonrpc_error_-32602", Some(0)),
            ("jsonrpc_error_-32000", None),
            ("jsonrpc_batch_unmatched", None),
            ("jsonrpc_batch_unmatched", None),
            ("jsonrpc_batch_incomplete", Some(1)),
            ("jsonrpc_error_-32600", None),
        ]
    );
    assert_eq!(heard.errors[4].1, "a batch reply answering 2 of its 3 calls");
}

#[test]
fn params_and_batches_out_of_bounds_are_refused_before_the_load() {
    for params in ["x", "[{payload}", "1", r#""text""#] {
        let error = JsonRpc.check(&Options::with([("params", params.into())])).unwrap_err();
        assert!(error.starts_with("--params"), "{error}");
    }
    for params in ["[]", "{}", "[{payload}, {data.user}]", r#"{"to":"{data.account}"}"#] {
        assert_eq!(JsonRpc.check(&Options::with([("params", params.into())])), Ok(()), "{params}");
    }
    assert!(JsonRpc.check(&Options::with([("batch", 0.into())])).unwrap_err().contains("at least 1"));
    let error = JsonRpc.check(&Options::with([("batch", (MAX_BATCH as i64 + 1).into())])).unwrap_err();
    assert!(error.contains("at most 1000"), "{error}");
    assert_eq!(JsonRpc.check(&Options::with([("batch", (MAX_BATCH as i64).into())])), Ok(()));
}

#[test]
fn stream_options_it_cannot_honour_are_refused() {
    let params_alone = Options::with([("subscribe-params", "[1]".into())]);
    assert!(JsonRpc.check(&params_alone).unwrap_err().contains("--subscribe-method"));
    let not_json = Options::with([("subscribe-method", "s".into()), ("subscribe-params", "newHeads".into())]);
    assert!(JsonRpc.check(&not_json).unwrap_err().contains("JSON array or object"));
}

#[test]
fn a_stream_subscribes_once_and_takes_notifications_as_deliveries() {
    let options = Options::with([
        ("subscribe-method", "eth_subscribe".into()),
        ("subscribe-params", r#"["newHeads"]"#.into()),
    ]);
    assert_eq!(JsonRpc.check(&options), Ok(()));
    let mut session = JsonRpc.session(&setup(Use::Stream, &options));
    let mut heard = Heard::default();
    session.subscribe_stream(&mut heard);
    assert_eq!(
        heard.sent_text(0),
        r#"{"jsonrpc":"2.0","method":"eth_subscribe","params":["newHeads"],"id":1}"#
    );
    session.receive(br#"{"jsonrpc":"2.0","result":"0xcd0c","id":1}"#, false, Instant::now(), &mut heard);
    let head = br#"{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"0xcd0c","result":{"number":"0x1b4"}}}"#;
    session.receive(head, false, Instant::now(), &mut heard);
    let refused = br#"{"jsonrpc":"2.0","error":{"code":-32601,"message":"no"},"id":1}"#;
    session.receive(refused, false, Instant::now(), &mut heard);
    assert_eq!(heard.subscribed, ["eth_subscribe"]);
    assert_eq!(heard.deliveries, [("eth_subscription".to_owned(), head.to_vec())]);
    assert_eq!(heard.errors[0].0, "jsonrpc_error_-32601");
}
