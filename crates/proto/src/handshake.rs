//! The opening handshake (RFC 6455 §4): parsing a client's upgrade request and answering it,
//! building a client's request and checking the server's answer. Plain HTTP requests are
//! recognised too, because the echo server answers them for the rtt scenario's HTTP baseline.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;

use crate::HandshakeError;

/// The GUID that RFC 6455 appends to the client's key.
pub const WEBSOCKET_GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
/// Largest request or response header accepted by default.
pub const DEFAULT_MAX_HEADER_BYTES: usize = 8 * 1024;
/// Most header fields accepted in one request or response.
pub const MAX_HEADERS: usize = 64;

/// `Sec-WebSocket-Accept` for a `Sec-WebSocket-Key`.
pub fn accept_key(key: &[u8]) -> String {
    let mut sha1 = sha1_smol::Sha1::new();
    sha1.update(key);
    sha1.update(WEBSOCKET_GUID.as_bytes());
    BASE64.encode(sha1.digest().bytes())
}

/// A `Sec-WebSocket-Key` from 16 bytes the caller chose (randomly, per RFC 6455).
pub fn client_key(nonce: [u8; 16]) -> String {
    BASE64.encode(nonce)
}

/// A valid WebSocket upgrade request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpgradeRequest {
    pub path: String,
    pub key: String,
    /// Offered subprotocols, in the client's order of preference.
    pub protocols: Vec<String>,
    /// The `Sec-WebSocket-Extensions` values, one per header line (see [`crate::deflate`]).
    pub extensions: Vec<String>,
}

/// What a client asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    Upgrade(UpgradeRequest),
    /// A request without any upgrade headers (answered as plain HTTP).
    Http {
        method: String,
        path: String,
    },
}

fn header_has_token(value: &[u8], token: &str) -> bool {
    value.split(|&b| b == b',').any(|part| part.trim_ascii().eq_ignore_ascii_case(token.as_bytes()))
}

fn malformed(error: httparse::Error) -> HandshakeError {
    match error {
        httparse::Error::TooManyHeaders => HandshakeError::TooManyHeaders(MAX_HEADERS),
        httparse::Error::Version => HandshakeError::Malformed("bad HTTP version"),
        httparse::Error::Token => HandshakeError::Malformed("bad token in request line"),
        httparse::Error::HeaderName => HandshakeError::Malformed("bad header name"),
        httparse::Error::HeaderValue => HandshakeError::Malformed("bad header value"),
        httparse::Error::Status => HandshakeError::Malformed("bad status line"),
        _ => HandshakeError::Malformed("bad line ending"),
    }
}

/// Parses a request from the start of `buf`. `Ok(None)` asks for more bytes; the `usize` is
/// how many bytes the request header took.
pub fn parse_request(
    buf: &[u8],
    max_header_bytes: usize,
) -> Result<Option<(Request, usize)>, HandshakeError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    let consumed = match request.parse(buf).map_err(malformed)? {
        httparse::Status::Partial if buf.len() >= max_header_bytes => {
            return Err(HandshakeError::HeaderTooLarge(max_header_bytes));
        }
        httparse::Status::Partial => return Ok(None),
        httparse::Status::Complete(n) if n > max_header_bytes => {
            return Err(HandshakeError::HeaderTooLarge(max_header_bytes));
        }
        httparse::Status::Complete(n) => n,
    };
    let method = request.method.unwrap_or_default();
    let path = request.path.unwrap_or("/").to_owned();
    let find =
        |name: &str| request.headers.iter().find(|h| h.name.eq_ignore_ascii_case(name)).map(|h| h.value);
    let upgrade = find("Upgrade");
    let key = find("Sec-WebSocket-Key");
    if upgrade.is_none() && key.is_none() {
        return Ok(Some((Request::Http { method: method.to_owned(), path }, consumed)));
    }
    if method != "GET" {
        return Err(HandshakeError::BadUpgrade("method must be GET"));
    }
    if request.version != Some(1) {
        return Err(HandshakeError::BadUpgrade("HTTP/1.1 or later is required"));
    }
    if !upgrade.is_some_and(|v| header_has_token(v, "websocket")) {
        return Err(HandshakeError::BadUpgrade("missing `Upgrade: websocket`"));
    }
    if !find("Connection").is_some_and(|v| header_has_token(v, "upgrade")) {
        return Err(HandshakeError::BadUpgrade("missing `Connection: Upgrade`"));
    }
    let key = key.ok_or(HandshakeError::BadUpgrade("missing Sec-WebSocket-Key"))?;
    let key = std::str::from_utf8(key.trim_ascii())
        .map_err(|_| HandshakeError::BadUpgrade("Sec-WebSocket-Key is not ASCII"))?;
    if BASE64.decode(key).map(|k| k.len()) != Ok(16) {
        return Err(HandshakeError::BadUpgrade("Sec-WebSocket-Key is not 16 bytes in base64"));
    }
    match find("Sec-WebSocket-Version") {
        None => return Err(HandshakeError::BadUpgrade("missing Sec-WebSocket-Version")),
        Some(v) if v.trim_ascii() != b"13" => return Err(HandshakeError::UnsupportedVersion),
        Some(_) => {}
    }
    let protocols = request
        .headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("Sec-WebSocket-Protocol"))
        .flat_map(|h| h.value.split(|&b| b == b','))
        .filter_map(|p| std::str::from_utf8(p.trim_ascii()).ok())
        .filter(|p| !p.is_empty())
        .map(str::to_owned)
        .collect();
    let extensions = header_values(request.headers, "Sec-WebSocket-Extensions");
    Ok(Some((
        Request::Upgrade(UpgradeRequest { path, key: key.to_owned(), protocols, extensions }),
        consumed,
    )))
}

/// The server's `101 Switching Protocols` answer; `protocol` is the chosen subprotocol.
pub fn server_response(request: &UpgradeRequest, protocol: Option<&str>) -> Vec<u8> {
    let mut response = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n",
        accept_key(request.key.as_bytes())
    );
    if let Some(protocol) = protocol {
        response.push_str(&format!("Sec-WebSocket-Protocol: {protocol}\r\n"));
    }
    response.push_str("\r\n");
    response.into_bytes()
}

/// A client's upgrade request for `ws://host/path`.
pub fn client_request(host: &str, path: &str, key: &str, protocols: &[&str]) -> Vec<u8> {
    client_request_with_headers(host, path, key, protocols, &[])
}

/// [`client_request`] with `headers` (name, value) added after the WebSocket ones, in order.
/// The caller has checked them: a name is an HTTP token, a value has no CR or LF.
pub fn client_request_with_headers(
    host: &str,
    path: &str,
    key: &str,
    protocols: &[&str],
    headers: &[(&str, &str)],
) -> Vec<u8> {
    let mut request = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
    );
    if !protocols.is_empty() {
        request.push_str(&format!("Sec-WebSocket-Protocol: {}\r\n", protocols.join(", ")));
    }
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.into_bytes()
}

/// Parses a response head at the start of `buf` into `response`: its length, `Ok(None)`
/// while incomplete; `Err(None)` past [`DEFAULT_MAX_HEADER_BYTES`], else httparse's error.
pub(crate) fn response_head<'b>(
    response: &mut httparse::Response<'_, 'b>,
    buf: &'b [u8],
) -> Result<Option<usize>, Option<httparse::Error>> {
    match response.parse(buf).map_err(Some)? {
        httparse::Status::Partial if buf.len() >= DEFAULT_MAX_HEADER_BYTES => Err(None),
        httparse::Status::Partial => Ok(None),
        httparse::Status::Complete(n) if n > DEFAULT_MAX_HEADER_BYTES => Err(None),
        httparse::Status::Complete(n) => Ok(Some(n)),
    }
}

/// What the server agreed to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpgradeResponse {
    pub protocol: Option<String>,
    /// The `Sec-WebSocket-Extensions` the server agreed to, header lines joined by ", ".
    pub extensions: Option<String>,
}

/// Checks the server's answer to a request sent with `key`. `Ok(None)` asks for more bytes;
/// the `usize` is how many bytes the response header took (frames may follow it).
pub fn parse_response(buf: &[u8], key: &str) -> Result<Option<(UpgradeResponse, usize)>, HandshakeError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    let consumed = match response_head(&mut response, buf) {
        Ok(Some(n)) => n,
        Ok(None) => return Ok(None),
        Err(None) => return Err(HandshakeError::HeaderTooLarge(DEFAULT_MAX_HEADER_BYTES)),
        Err(Some(error)) => return Err(malformed(error)),
    };
    let status = response.code.unwrap_or(0);
    if status != 101 {
        return Err(HandshakeError::UnexpectedStatus(status));
    }
    let find =
        |name: &str| response.headers.iter().find(|h| h.name.eq_ignore_ascii_case(name)).map(|h| h.value);
    if !find("Upgrade").is_some_and(|v| header_has_token(v, "websocket")) {
        return Err(HandshakeError::BadUpgrade("response lacks `Upgrade: websocket`"));
    }
    if find("Sec-WebSocket-Accept").map(<[u8]>::trim_ascii) != Some(accept_key(key.as_bytes()).as_bytes()) {
        return Err(HandshakeError::BadAccept);
    }
    let protocol = find("Sec-WebSocket-Protocol")
        .and_then(|v| std::str::from_utf8(v.trim_ascii()).ok())
        .map(str::to_owned);
    let extensions = Some(header_values(response.headers, "Sec-WebSocket-Extensions").join(", "))
        .filter(|joined| !joined.is_empty());
    Ok(Some((UpgradeResponse { protocol, extensions }, consumed)))
}

/// The values of every header line called `name`, as text (invalid UTF-8 skipped).
fn header_values(headers: &[httparse::Header<'_>], name: &str) -> Vec<String> {
    headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case(name))
        .filter_map(|h| std::str::from_utf8(h.value.trim_ascii()).ok())
        .map(str::to_owned)
        .collect()
}

/// Adds the header line `name: value` to a complete request or response header built above
/// (before its blank line), e.g. `Sec-WebSocket-Extensions`.
pub fn add_header(head: &mut Vec<u8>, name: &str, value: &str) {
    debug_assert!(head.ends_with(b"\r\n\r\n"));
    head.truncate(head.len() - 2);
    head.extend_from_slice(format!("{name}: {value}\r\n\r\n").as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    const RFC_REQUEST: &[u8] = b"GET /chat HTTP/1.1\r\nHost: server.example.com\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: chat, superchat\r\nSec-WebSocket-Version: 13\r\n\r\n";

    #[test]
    fn rfc_example_accept_key() {
        assert_eq!(accept_key(b"dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    }

    #[test]
    fn parses_the_rfc_example_request_at_every_split() {
        for split in 0..RFC_REQUEST.len() {
            assert_eq!(parse_request(&RFC_REQUEST[..split], 8192), Ok(None));
        }
        let (request, used) = parse_request(RFC_REQUEST, 8192).unwrap().unwrap();
        assert_eq!(used, RFC_REQUEST.len());
        let Request::Upgrade(upgrade) = request else { panic!("not an upgrade") };
        assert_eq!(upgrade.path, "/chat");
        assert_eq!(upgrade.protocols, ["chat", "superchat"]);
        let response = server_response(&upgrade, Some("chat"));
        let (answer, _) = parse_response(&response, &upgrade.key).unwrap().unwrap();
        assert_eq!(answer.protocol.as_deref(), Some("chat"));
    }

    #[test]
    fn plain_get_is_http() {
        let (request, _) = parse_request(b"GET /x HTTP/1.1\r\nHost: a\r\n\r\n", 8192).unwrap().unwrap();
        assert_eq!(request, Request::Http { method: "GET".into(), path: "/x".into() });
    }

    #[test]
    fn bad_upgrades_are_rejected_with_a_reason() {
        let no_key = b"GET / HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\r\n";
        assert_eq!(parse_request(no_key, 8192), Err(HandshakeError::BadUpgrade("missing Sec-WebSocket-Key")));
        let old = String::from_utf8_lossy(RFC_REQUEST).replace("Version: 13", "Version: 8");
        let error = parse_request(old.as_bytes(), 8192).unwrap_err();
        assert_eq!(error, HandshakeError::UnsupportedVersion);
        assert!(String::from_utf8(error.http_response()).unwrap().starts_with("HTTP/1.1 400"));
    }

    #[test]
    fn oversized_header_is_rejected() {
        let mut big = b"GET / HTTP/1.1\r\nX: ".to_vec();
        big.resize(9000, b'a');
        assert_eq!(parse_request(&big, 8192), Err(HandshakeError::HeaderTooLarge(8192)));
    }

    #[test]
    fn extra_headers_follow_the_websocket_ones_in_order() {
        let headers = [("Authorization", "Bearer t0k"), ("X-Id", "7")];
        let request = client_request_with_headers("h", "/a?b=1", KEY_FOR_TESTS, &["chat"], &headers);
        let (parsed, _) = parse_request(&request, 8192).unwrap().unwrap();
        let Request::Upgrade(upgrade) = parsed else { panic!("not an upgrade") };
        assert_eq!(
            (upgrade.path.as_str(), upgrade.protocols.as_slice()),
            ("/a?b=1", ["chat".to_owned()].as_slice())
        );
        let text = String::from_utf8(request).unwrap();
        assert!(
            text.ends_with("Sec-WebSocket-Protocol: chat\r\nAuthorization: Bearer t0k\r\nX-Id: 7\r\n\r\n"),
            "{text}"
        );
        assert_eq!(
            client_request("h", "/", KEY_FOR_TESTS, &[]),
            client_request_with_headers("h", "/", KEY_FOR_TESTS, &[], &[])
        );
    }

    const KEY_FOR_TESTS: &str = "dGhlIHNhbXBsZSBub25jZQ==";

    #[test]
    fn wrong_accept_is_rejected() {
        let response = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: nope\r\n\r\n";
        assert_eq!(parse_response(response, "dGhlIHNhbXBsZSBub25jZQ=="), Err(HandshakeError::BadAccept));
        let refused = b"HTTP/1.1 403 Forbidden\r\n\r\n";
        assert_eq!(parse_response(refused, "x"), Err(HandshakeError::UnexpectedStatus(403)));
    }
}
