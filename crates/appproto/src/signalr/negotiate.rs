//! SignalR's negotiate step, the client's side, as the transport specification
//! (dotnet/aspnetcore `src/SignalR/docs/specs/TransportProtocols.md`) and the official
//! clients make it: `POST {hub}/negotiate?negotiateVersion=1` before the WebSocket, answered
//! with the connection's id and token (version 1; version 0 servers give the id alone, which
//! is then the token) and the transports the server offers with their transfer formats; or a
//! redirect (`url`, `accessToken`: negotiate again there, with that bearer, as Azure SignalR
//! Service asks); or an `error`. The WebSocket then opens at `{hub}?id={token}`.

use std::fmt::Write as _;

/// The transport this client uses, as the negotiate answer names it.
pub const WEBSOCKETS: &str = "WebSockets";

/// What a negotiate answer tells the client to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Negotiated {
    /// Open the WebSocket with this token (`?id=`).
    Connect { connection_id: String, token: String },
    /// Negotiate again at `url` (a hub URL), with `access_token` as the bearer when given.
    Redirect { url: String, access_token: Option<String> },
}

/// Why a negotiate answer gives no connection.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NegotiateError {
    #[error("not a negotiate answer: {0}")]
    NotJson(String),
    #[error("the server refused the negotiation: {0:?}")]
    Refused(String),
    #[error("the server offers no WebSockets transport (it offers {0})")]
    NoWebSockets(String),
    #[error("the server's WebSockets transport does not carry {0} frames (it names {1})")]
    NoTransferFormat(&'static str, String),
    #[error("a negotiate answer without a connectionId or connectionToken")]
    NoConnection,
}

#[derive(serde::Deserialize)]
struct Answer {
    #[serde(rename = "connectionId")]
    connection_id: Option<String>,
    #[serde(rename = "connectionToken")]
    connection_token: Option<String>,
    #[serde(rename = "negotiateVersion", default)]
    negotiate_version: u64,
    #[serde(rename = "availableTransports")]
    available_transports: Option<Vec<Transport>>,
    url: Option<String>,
    #[serde(rename = "accessToken")]
    access_token: Option<String>,
    error: Option<String>,
}

#[derive(serde::Deserialize)]
struct Transport {
    transport: String,
    #[serde(rename = "transferFormats", default)]
    transfer_formats: Vec<String>,
}

/// The path and query of the negotiate request for the hub at `hub` (a path with its query):
/// `/negotiate` added to the path, `negotiateVersion=1` to the query.
pub fn negotiate_path(hub: &str) -> String {
    let (path, query) = hub.split_once('?').map_or((hub, None), |(path, query)| (path, Some(query)));
    let mut out = String::with_capacity(hub.len() + 32);
    out.push_str(path.trim_end_matches('/'));
    out.push_str("/negotiate?");
    if let Some(query) = query.filter(|query| !query.is_empty()) {
        out.push_str(query);
        out.push('&');
    }
    out.push_str("negotiateVersion=1");
    out
}

/// The path and query of the WebSocket for the hub at `hub` once negotiated: `id` added.
pub fn websocket_path(hub: &str, token: &str) -> String {
    let mut out = String::with_capacity(hub.len() + token.len() + 4);
    out.push_str(hub);
    out.push(if hub.contains('?') { '&' } else { '?' });
    out.push_str("id=");
    percent_encode(&mut out, token);
    out
}

fn percent_encode(out: &mut String, text: &str) {
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(byte as char),
            _ => {
                let _ = write!(out, "%{byte:02X}");
            }
        }
    }
}

/// Appends the negotiate request: an empty POST to `path` (from [`negotiate_path`]) on
/// `host`, keeping the connection open for the WebSocket, with `headers` (the caller's,
/// checked: no CR or LF) after the official clients' own.
pub fn encode_request(out: &mut Vec<u8>, host: &str, path: &str, headers: &[(&str, &str)]) {
    let _ = write!(
        StrOut(out),
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\
         Content-Type: text/plain;charset=UTF-8\r\nX-Requested-With: XMLHttpRequest\r\n"
    );
    for (name, value) in headers {
        let _ = write!(StrOut(out), "{name}: {value}\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

struct StrOut<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for StrOut<'_> {
    fn write_str(&mut self, text: &str) -> std::fmt::Result {
        self.0.extend_from_slice(text.as_bytes());
        Ok(())
    }
}

/// Reads a negotiate answer's body; the WebSocket must carry `format` (`Text` for the JSON
/// hub protocol, `Binary` for MessagePack).
pub fn decode(body: &[u8], format: &'static str) -> Result<Negotiated, NegotiateError> {
    let text = body.trim_ascii();
    if text.first() != Some(&b'{') {
        return Err(NegotiateError::NotJson("not a JSON object".into()));
    }
    let answer: Answer = serde_json::from_slice(text).map_err(|e| NegotiateError::NotJson(e.to_string()))?;
    if let Some(error) = answer.error {
        return Err(NegotiateError::Refused(error));
    }
    if let Some(url) = answer.url {
        return Ok(Negotiated::Redirect { url, access_token: answer.access_token });
    }
    let transports = answer.available_transports.unwrap_or_default();
    let Some(websockets) = transports.iter().find(|t| t.transport == WEBSOCKETS) else {
        let offered: Vec<&str> = transports.iter().map(|t| t.transport.as_str()).collect();
        let offered = if offered.is_empty() { "none".to_owned() } else { offered.join(", ") };
        return Err(NegotiateError::NoWebSockets(offered));
    };
    if !websockets.transfer_formats.iter().any(|f| f == format) {
        return Err(NegotiateError::NoTransferFormat(format, websockets.transfer_formats.join(", ")));
    }
    let connection_id = answer.connection_id.ok_or(NegotiateError::NoConnection)?;
    let token = match answer.negotiate_version {
        0 => connection_id.clone(),
        _ => answer.connection_token.ok_or(NegotiateError::NoConnection)?,
    };
    Ok(Negotiated::Connect { connection_id, token })
}

/// A redirect's `url` split into its origin (`scheme://authority`, lowercased scheme) and its
/// path with its query (`/` when it names none); None when it is no absolute http(s) or
/// ws(s) URL.
pub fn split_url(url: &str) -> Option<(&str, &str, &str)> {
    let (scheme, rest) = url.split_once("://")?;
    if !["http", "https", "ws", "wss"].iter().any(|s| s.eq_ignore_ascii_case(scheme)) {
        return None;
    }
    let at = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(at);
    if authority.is_empty() {
        return None;
    }
    Some((scheme, authority, if path.is_empty() { "/" } else { path }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The transport specification's example answer (version 1).
    const SPEC_ANSWER: &str = r#"{"connectionToken":"05265228-1e2c-46c5-82a1-6a5bcc3f0143","connectionId":"807809a5-31bf-470d-9e23-afaee35d8a0d","negotiateVersion":1,"availableTransports":[{"transport":"WebSockets","transferFormats":["Text","Binary"]},{"transport":"ServerSentEvents","transferFormats":["Text"]},{"transport":"LongPolling","transferFormats":["Text","Binary"]}]}"#;

    #[test]
    fn the_specifications_answer_gives_its_token() {
        assert_eq!(
            decode(SPEC_ANSWER.as_bytes(), "Text"),
            Ok(Negotiated::Connect {
                connection_id: "807809a5-31bf-470d-9e23-afaee35d8a0d".into(),
                token: "05265228-1e2c-46c5-82a1-6a5bcc3f0143".into()
            })
        );
    }

    #[test]
    fn a_version_0_answer_uses_the_connection_id_as_token() {
        let answer = r#"{"connectionId":"abc","availableTransports":[{"transport":"WebSockets","transferFormats":["Text"]}]}"#;
        assert_eq!(
            decode(answer.as_bytes(), "Text"),
            Ok(Negotiated::Connect { connection_id: "abc".into(), token: "abc".into() })
        );
        assert_eq!(
            decode(answer.as_bytes(), "Binary"),
            Err(NegotiateError::NoTransferFormat("Binary", "Text".into()))
        );
    }

    #[test]
    fn errors_redirects_and_missing_transports_are_told_apart() {
        assert_eq!(
            decode(br#"{"error":"Negotiate failed"}"#, "Text"),
            Err(NegotiateError::Refused("Negotiate failed".into()))
        );
        assert_eq!(
            decode(br#"{"url":"https://x.service.signalr.net/client/?hub=chat","accessToken":"t"}"#, "Text"),
            Ok(Negotiated::Redirect {
                url: "https://x.service.signalr.net/client/?hub=chat".into(),
                access_token: Some("t".into())
            })
        );
        let polling = br#"{"connectionId":"a","connectionToken":"b","negotiateVersion":1,"availableTransports":[{"transport":"LongPolling","transferFormats":["Text"]}]}"#;
        assert_eq!(decode(polling, "Text"), Err(NegotiateError::NoWebSockets("LongPolling".into())));
        assert_eq!(decode(b"{}", "Text"), Err(NegotiateError::NoWebSockets("none".into())));
        assert!(matches!(decode(b"<html>", "Text"), Err(NegotiateError::NotJson(_))));
        assert!(matches!(decode(b"{\"connectionId\":", "Text"), Err(NegotiateError::NotJson(_))));
        let tokenless = br#"{"connectionId":"a","negotiateVersion":1,"availableTransports":[{"transport":"WebSockets","transferFormats":["Text"]}]}"#;
        assert_eq!(decode(tokenless, "Text"), Err(NegotiateError::NoConnection));
    }

    #[test]
    fn paths_keep_the_hubs_query() {
        assert_eq!(negotiate_path("/hub"), "/hub/negotiate?negotiateVersion=1");
        assert_eq!(negotiate_path("/hub/?room=1"), "/hub/negotiate?room=1&negotiateVersion=1");
        assert_eq!(websocket_path("/hub", "a+b/c="), "/hub?id=a%2Bb%2Fc%3D");
        assert_eq!(websocket_path("/client/?hub=chat", "t"), "/client/?hub=chat&id=t");
    }

    #[test]
    fn the_request_is_an_empty_post_that_keeps_the_connection() {
        let mut out = Vec::new();
        encode_request(
            &mut out,
            "127.0.0.1:5000",
            "/hub/negotiate?negotiateVersion=1",
            &[("Authorization", "Bearer t")],
        );
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.starts_with("POST /hub/negotiate?negotiateVersion=1 HTTP/1.1\r\nHost: 127.0.0.1:5000\r\n")
        );
        assert!(text.contains("Content-Length: 0\r\n") && text.ends_with("Authorization: Bearer t\r\n\r\n"));
    }

    #[test]
    fn redirect_urls_split_into_origin_and_path() {
        assert_eq!(split_url("http://127.0.0.1:5000/hub?x=1"), Some(("http", "127.0.0.1:5000", "/hub?x=1")));
        assert_eq!(split_url("https://host"), Some(("https", "host", "/")));
        assert_eq!(split_url("host/hub"), None);
        assert_eq!(split_url("ftp://host/hub"), None);
        assert_eq!(split_url("http:///hub"), None);
    }
}
