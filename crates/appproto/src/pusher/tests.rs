//! The Pusher codec against messages as sockudo 5.2 writes them (copied from its output),
//! commands as pusher-js writes them, and the signatures of Pusher's own worked examples.

use super::*;

fn one(message: &str) -> ServerEvent<'_> {
    decode(message.as_bytes()).unwrap_or_else(|error| panic!("{message}: {error}"))
}

#[test]
fn the_connection_is_established_with_a_socket_id_inside_a_json_string() {
    let established = r#"{"event":"pusher:connection_established","data":"{\"socket_id\":\"341576051.1131946837\",\"activity_timeout\":120}"}"#;
    assert_eq!(
        one(established),
        ServerEvent::Established { socket_id: "341576051.1131946837".into(), activity_timeout: Some(120) }
    );
    let object = r#"{"event":"pusher:connection_established","data":{"socket_id":"1.2"}}"#;
    assert_eq!(one(object), ServerEvent::Established { socket_id: "1.2".into(), activity_timeout: None });
    let without = r#"{"event":"pusher:connection_established","data":"{}"}"#;
    assert_eq!(decode(without.as_bytes()), Err(DecodeError::NoSocketId));
}

#[test]
fn subscriptions_errors_and_heartbeats_are_read_by_their_event() {
    assert_eq!(
        one(r#"{"event":"pusher_internal:subscription_succeeded","channel":"private-t1","data":"{}"}"#),
        ServerEvent::Subscribed { channel: "private-t1".into() }
    );
    assert_eq!(
        one(
            r#"{"event":"pusher:error","data":{"message":"Authentication error: Channel requires authentication","code":4009}}"#
        ),
        ServerEvent::Error {
            code: Some(4009),
            message: "Authentication error: Channel requires authentication".into()
        }
    );
    assert_eq!(
        one(r#"{"event":"pusher:error","data":"{\"message\":\"Over capacity\",\"code\":4100}"}"#),
        ServerEvent::Error { code: Some(4100), message: "Over capacity".into() }
    );
    assert_eq!(
        one(
            r#"{"event":"pusher:subscription_error","channel":"private-x","data":{"type":"AuthError","error":"bad","status":401}}"#
        ),
        ServerEvent::SubscriptionError {
            channel: "private-x".into(),
            status: Some(401),
            error: "bad".into()
        }
    );
    assert_eq!(one(r#"{"event":"pusher:pong"}"#), ServerEvent::Pong);
    assert_eq!(one(r#"{"event":"pusher:ping","data":{}}"#), ServerEvent::Ping);
}

#[test]
fn other_events_keep_their_data_as_raw_json() {
    assert_eq!(
        one(r#"{"event":"client-x","channel":"private-t1","data":{"id":"0-1","n":[1]}}"#),
        ServerEvent::Event {
            event: "client-x".into(),
            channel: Some("private-t1".into()),
            data: r#"{"id":"0-1","n":[1]}"#
        }
    );
    assert_eq!(
        one(r#"{"event":"tick","channel":"pub-1","data":"{\"seq\": 1}"}"#),
        ServerEvent::Event { event: "tick".into(), channel: Some("pub-1".into()), data: r#""{\"seq\": 1}""# }
    );
    assert_eq!(
        one(r#"{"event":"e"}"#),
        ServerEvent::Event { event: "e".into(), channel: None, data: "null" }
    );
}

#[test]
fn what_is_not_pusher_is_refused_by_why() {
    assert!(matches!(decode(b"hello"), Err(DecodeError::NotJson(_))));
    assert!(matches!(decode(b"[1]"), Err(DecodeError::NotJson(_))));
    assert_eq!(decode(br#"{"channel":"x"}"#), Err(DecodeError::NoEvent));
}

#[test]
fn commands_are_written_as_pusher_js_writes_them() {
    let mut out = Vec::new();
    encode_subscribe(&mut out, "public-1", None, None);
    assert_eq!(out, br#"{"event":"pusher:subscribe","data":{"channel":"public-1"}}"#);
    out.clear();
    let member = presence_member("u\"7");
    assert_eq!(member, r#"{"user_id":"u\"7","user_info":{}}"#);
    encode_subscribe(&mut out, "presence-t2", Some("key:sig"), Some(&member));
    assert_eq!(
        out,
        br#"{"event":"pusher:subscribe","data":{"channel":"presence-t2","auth":"key:sig","channel_data":"{\"user_id\":\"u\\\"7\",\"user_info\":{}}"}}"#
    );
    out.clear();
    encode_client_event(&mut out, "client-wsbench", "private-t1", r#"{"id":"0-1"}"#);
    assert_eq!(out, br#"{"event":"client-wsbench","channel":"private-t1","data":{"id":"0-1"}}"#);
    out.clear();
    encode_ping(&mut out);
    encode_pong(&mut out);
    assert_eq!(out, br#"{"event":"pusher:ping","data":{}}{"event":"pusher:pong","data":{}}"#);
    assert_eq!(
        path("app-key", "wsbench", "0.1.0"),
        "/app/app-key?protocol=7&client=wsbench&version=0.1.0&flash=false"
    );
}

/// Pusher's worked example of a private channel's authentication (key 278d…, secret
/// 7ad3…, socket 1234.1234, channel private-foobar), as its server libraries test it.
#[test]
fn a_private_channel_is_signed_as_pushers_worked_example() {
    let auth =
        channel_auth("278d425bdf160c739803", "7ad3773142a6692b25b8", "1234.1234", "private-foobar", None);
    assert_eq!(auth, "278d425bdf160c739803:58df8b0c36d6982b82c3ecf6b4662e34fe8c25bba48f5369f135bf843651c3a4");
    let presence = channel_auth("k", "s", "1.2", "presence-x", Some(r#"{"user_id":"u"}"#));
    assert_eq!(presence, format!("k:{}", sign("s", r#"1.2:presence-x:{"user_id":"u"}"#)));
}

/// Pusher's worked example of an HTTP API request (POST /apps/3/events at 1353088179).
#[test]
fn an_api_request_is_signed_as_pushers_worked_example() {
    let body = br#"{"name":"foo","channels":["project-3"],"data":"{\"some\":\"data\"}"}"#;
    let query =
        api_query("POST", "/apps/3/events", body, "278d425bdf160c739803", "7ad3773142a6692b25b8", 1353088179);
    assert_eq!(
        query,
        "auth_key=278d425bdf160c739803&auth_timestamp=1353088179&auth_version=1.0\
         &body_md5=ec365a775a4cd0599faeb73354201b6f\
         &auth_signature=da454824c97ba181a32ccc17a72625ba02771f50b50e1e7430e47a1f3f457e6c"
    );
    let bodiless = api_query("get", "/apps/3/channels", b"", "k", "s", 1);
    assert!(
        bodiless.starts_with("auth_key=k&auth_timestamp=1&auth_version=1.0&auth_signature="),
        "{bodiless}"
    );
}
