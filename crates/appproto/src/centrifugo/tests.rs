//! The Centrifugo codec against replies as Centrifugo v6 writes them (copied from its
//! JSON protocol output) and commands as its server parses them.

use super::*;

fn one(line: &str) -> Reply<'_> {
    decode(line.as_bytes()).unwrap_or_else(|error| panic!("{line}: {error}"))
}

#[test]
fn commands_are_numbered_json_objects_with_one_request() {
    let mut out = Vec::new();
    encode_connect(&mut out, 1, Some("a.b\"c"), "wsbench");
    assert_eq!(out, br#"{"id":1,"connect":{"token":"a.b\"c","name":"wsbench"}}"#);
    out.clear();
    encode_connect(&mut out, 1, None, "wsbench");
    assert_eq!(out, br#"{"id":1,"connect":{"name":"wsbench"}}"#);
    out.clear();
    encode_subscribe(&mut out, 2, "chat:room \"1\"");
    assert_eq!(out, br#"{"id":2,"subscribe":{"channel":"chat:room \"1\""}}"#);
    out.clear();
    encode_publish(&mut out, 4294967295, "t1", r#"{"x":[1,2]}"#);
    assert_eq!(out, br#"{"id":4294967295,"publish":{"channel":"t1","data":{"x":[1,2]}}}"#);
    out.clear();
    encode_pong(&mut out);
    assert_eq!(out, b"{}");
}

#[test]
fn results_are_read_by_their_id() {
    assert_eq!(
        one(r#"{"id":1,"connect":{"client":"4c1c-9e","version":"6.9.1","ping":25,"pong":true}}"#),
        Reply::Connected { id: 1, client: "4c1c-9e".into(), ping: 25, pong: true }
    );
    assert_eq!(
        one(r#"{"id":1,"connect":{"client":"c"}}"#),
        Reply::Connected { id: 1, client: "c".into(), ping: 0, pong: false }
    );
    assert_eq!(one(r#"{"id":2,"subscribe":{}}"#), Reply::Done { id: 2 });
    assert_eq!(one(r#"{"id":3,"publish":{}}"#), Reply::Done { id: 3 });
    assert_eq!(one(r#"{"id":9}"#), Reply::Done { id: 9 });
}

#[test]
fn errors_keep_their_code_and_message() {
    assert_eq!(
        one(r#"{"id":3,"error":{"code":103,"message":"permission denied"}}"#),
        Reply::Error { id: 3, code: 103, message: "permission denied".into() }
    );
    assert_eq!(
        one(r#"{"id":4,"error":{"code":111,"message":"too \"many\"","temporary":true}}"#),
        Reply::Error { id: 4, code: 111, message: "too \"many\"".into() }
    );
}

#[test]
fn pushes_are_publications_unsubscribes_and_disconnects() {
    assert_eq!(
        one(r#"{"push":{"channel":"t1","pub":{"data":{"p":1,"s":[2]},"offset":7}}}"#),
        Reply::Publication { channel: "t1".into(), data: r#"{"p":1,"s":[2]}"# }
    );
    assert_eq!(
        one(r#"{"push":{"channel":"echo","pub":{"data":"a \"q\""}}}"#),
        Reply::Publication { channel: "echo".into(), data: r#""a \"q\"""# }
    );
    assert_eq!(
        one(r#"{"push":{"channel":"t2","unsubscribe":{"code":2000,"reason":"server unsubscribe"}}}"#),
        Reply::Unsubscribed { channel: "t2".into(), code: 2000, reason: "server unsubscribe".into() }
    );
    assert_eq!(
        one(r#"{"push":{"disconnect":{"code":3503,"reason":"force disconnect"}}}"#),
        Reply::Disconnect { code: 3503, reason: "force disconnect".into() }
    );
    assert_eq!(one(r#"{"push":{"channel":"t1","join":{"info":{"user":"u"}}}}"#), Reply::OtherPush);
    assert_eq!(decode(br#"{"push":{"channel":"t1","pub":{}}}"#), Err(DecodeError::PublicationWithoutData));
}

#[test]
fn an_empty_object_is_a_ping_and_lines_split_a_batch() {
    assert_eq!(one("{}"), Reply::Ping);
    assert_eq!(one("{ }"), Reply::Ping);
    let batch = b"{\"id\":2,\"subscribe\":{}}\n{}\n\n{\"push\":{\"channel\":\"a\",\"pub\":{\"data\":1}}}\n";
    let replies: Vec<Reply<'_>> = lines(batch).map(|line| decode(line).unwrap()).collect();
    assert_eq!(
        replies,
        [Reply::Done { id: 2 }, Reply::Ping, Reply::Publication { channel: "a".into(), data: "1" }]
    );
}

#[test]
fn what_is_not_a_reply_is_refused_with_why() {
    assert!(matches!(decode(b"[1]"), Err(DecodeError::NotJson(_))));
    assert!(matches!(decode(b"hello"), Err(DecodeError::NotJson(_))));
    assert!(matches!(decode(b"{\"id\":"), Err(DecodeError::NotJson(_))));
    assert_eq!(decode(br#"{"result":1}"#), Err(DecodeError::Unrecognised));
    assert!(matches!(decode(br#"{"id":-1}"#), Err(DecodeError::NotJson(_))));
}
