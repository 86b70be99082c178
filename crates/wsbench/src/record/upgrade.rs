//! The opening handshake through the proxy: the client's upgrade request read and checked
//! (the proto crate's parser), the same path and query requested upstream with the client's
//! headers (`Host` rewritten; hop-by-hop headers and the client's
//! `Sec-WebSocket-Extensions` left out, so that no permessage-deflate is negotiated and every
//! frame can be recorded as it is; the client's key kept, so the upstream's 101 answers the
//! client as it is), over TCP or the transport crate's TLS. Blocking with timeouts: a
//! handshake is one request and one answer.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::ClientConnection;
use rustls_pki_types::ServerName;
use wsbench_proto::HandshakeError;
use wsbench_proto::handshake::{
    DEFAULT_MAX_HEADER_BYTES, Request, UpgradeRequest, client_request_with_headers, parse_request,
    parse_response,
};

use crate::config::Target;
use crate::options::REDACTED;

/// How long a client or the upstream may take over its part of the handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Headers that belong to one hop (RFC 9110 §7.6.1), and those the proxy writes itself.
const NOT_FORWARDED: [&str; 12] = [
    "host",
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "sec-websocket-version",
    "sec-websocket-protocol",
    "sec-websocket-extensions",
];

/// Header names whose values are secrets, wherever they appear in a name.
const SECRET_NAME_PARTS: [&str; 6] = ["authorization", "cookie", "token", "secret", "password", "api-key"];
/// Query parameter names whose values are secrets, wherever they appear in a name.
const SECRET_QUERY_PARTS: [&str; 7] = ["token", "secret", "password", "key", "auth", "session", "sig"];

/// The client's upgrade request: what the proto parser checked, and every header line.
pub struct ClientRequest {
    pub upgrade: UpgradeRequest,
    pub headers: Vec<(String, String)>,
    /// Bytes the client sent after its request (frames sent at once).
    pub early: Vec<u8>,
}

/// Why a client's request is not forwarded: answered with this status and text.
pub struct Refusal {
    pub status: &'static str,
    pub text: String,
}

/// Reads the client's request from `client` (blocking, with a timeout).
pub fn read_request(client: &mut TcpStream) -> Result<ClientRequest, Refusal> {
    let bad = |text: String| Refusal { status: "400 Bad Request", text };
    let deadline = Instant::now() + HANDSHAKE_TIMEOUT;
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || client.set_read_timeout(Some(left)).is_err() {
            let waited = HANDSHAKE_TIMEOUT.as_secs();
            return Err(Refusal {
                status: "408 Request Timeout",
                text: format!("no whole request within {waited} s"),
            });
        }
        match parse_request(&buf, DEFAULT_MAX_HEADER_BYTES) {
            Ok(Some((Request::Upgrade(upgrade), used))) => {
                let headers = header_lines(&buf[..used]);
                return Ok(ClientRequest { upgrade, headers, early: buf[used..].to_vec() });
            }
            Ok(Some((Request::Http { .. }, _))) => {
                return Err(bad("wsbench record forwards WebSocket upgrades only".into()));
            }
            Ok(None) => {}
            Err(error) => return Err(bad(format!("not a WebSocket upgrade: {error}"))),
        }
        match client.read(&mut chunk) {
            Ok(0) => return Err(bad("the request ended before its header did".into())),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(error) => return Err(bad(format!("the request could not be read: {error}"))),
        }
    }
}

/// Every `Name: value` line of a request or response head the proto parser accepted.
fn header_lines(head: &[u8]) -> Vec<(String, String)> {
    String::from_utf8_lossy(head)
        .split("\r\n")
        .skip(1)
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_owned(), value.trim().to_owned()))
        .collect()
}

/// The path to request upstream: the upstream URL's path (when it names one other than `/`)
/// joined with the client's path and query.
pub fn upstream_path(upstream: &Target, client_path: &str) -> String {
    match upstream.path.trim_end_matches('/') {
        "" => client_path.to_owned(),
        prefix => format!("{prefix}{client_path}"),
    }
}

/// The client's headers as recorded: secrets shown as `<redacted>` unless `keep_secrets`.
pub fn recorded_headers(headers: &[(String, String)], keep_secrets: bool) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(name, value)| match keep_secrets || !is_secret(name) {
            true => (name.clone(), value.clone()),
            false => (name.clone(), REDACTED.to_owned()),
        })
        .collect()
}

fn is_secret(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    SECRET_NAME_PARTS.iter().any(|part| name.contains(part)) || name == "x-api-key"
}

/// `path` as recorded: the values of query parameters that look secret (`token=`,
/// `access_key=`) shown as `<redacted>` unless `keep_secrets`.
pub fn recorded_path(path: &str, keep_secrets: bool) -> String {
    let Some((before, query)) = path.split_once('?').filter(|_| !keep_secrets) else {
        return path.to_owned();
    };
    let pairs: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((name, _)) if SECRET_QUERY_PARTS.iter().any(|p| name.to_ascii_lowercase().contains(p)) => {
                format!("{name}={REDACTED}")
            }
            _ => pair.to_owned(),
        })
        .collect();
    format!("{before}?{}", pairs.join("&"))
}

/// The upstream's end of the connection after its 101.
pub enum Upstream {
    Plain(TcpStream),
    Tls(TcpStream, Box<ClientConnection>),
}

/// What the upstream answered.
pub enum Answer {
    /// 101: its head without any `Sec-WebSocket-Extensions`, the subprotocol, the bytes
    /// after the head.
    Upgraded { head: Vec<u8>, subprotocol: Option<String>, early: Vec<u8> },
    /// Another status: everything read so far, passed to the client as it is.
    Refused { status: u16, bytes: Vec<u8> },
}

/// Opens the upstream connection and sends it the client's upgrade.
pub fn connect(
    upstream: &Target,
    tls: Option<&Arc<rustls::ClientConfig>>,
    request: &ClientRequest,
) -> Result<(Upstream, Answer), String> {
    let socket = TcpStream::connect_timeout(&upstream.addr, HANDSHAKE_TIMEOUT)
        .map_err(|e| format!("cannot connect to {} ({}): {e}", upstream.url, upstream.addr))?;
    let _ = socket.set_nodelay(true);
    socket.set_read_timeout(Some(HANDSHAKE_TIMEOUT)).map_err(|e| e.to_string())?;
    socket.set_write_timeout(Some(HANDSHAKE_TIMEOUT)).map_err(|e| e.to_string())?;
    let bytes = upgrade_bytes(upstream, request);
    let key = request.upgrade.key.as_str();
    match tls {
        None => {
            let mut socket = socket;
            let answer = exchange(&mut socket, &bytes, key)?;
            Ok((Upstream::Plain(socket), answer))
        }
        Some(config) => {
            let name = ServerName::try_from(upstream.host.clone())
                .map_err(|e| format!("`{}` is not a TLS server name: {e}", upstream.host))?;
            let mut session = ClientConnection::new(config.clone(), name).map_err(|e| e.to_string())?;
            let mut socket = socket;
            let answer = exchange(&mut rustls::Stream::new(&mut session, &mut socket), &bytes, key)?;
            Ok((Upstream::Tls(socket, Box::new(session)), answer))
        }
    }
}

/// The upstream's `Host` header: its host, and its port unless the scheme's usual one.
fn host_header(upstream: &Target) -> String {
    let default_port = if upstream.tls { 443 } else { 80 };
    match upstream.addr.port() {
        port if port == default_port => upstream.host.clone(),
        port if upstream.host.contains(':') => format!("[{}]:{port}", upstream.host),
        port => format!("{}:{port}", upstream.host),
    }
}

/// `ws://host:port` or `wss://…` of the upstream, as recorded URLs begin.
pub fn origin(upstream: &Target) -> String {
    format!("{}://{}", if upstream.tls { "wss" } else { "ws" }, host_header(upstream))
}

/// The upgrade request sent upstream.
fn upgrade_bytes(upstream: &Target, request: &ClientRequest) -> Vec<u8> {
    let host = host_header(upstream);
    let protocols: Vec<&str> = request.upgrade.protocols.iter().map(String::as_str).collect();
    // Headers the client's `Connection` names are hop-by-hop too (RFC 9110 §7.6.1).
    let named: Vec<String> = request
        .headers
        .iter()
        .filter(|(name, _)| name.eq_ignore_ascii_case("connection"))
        .flat_map(|(_, value)| value.split(',').map(|token| token.trim().to_ascii_lowercase()))
        .collect();
    let headers: Vec<(&str, &str)> = request
        .headers
        .iter()
        .filter(|(name, _)| !NOT_FORWARDED.contains(&name.to_ascii_lowercase().as_str()))
        .filter(|(name, _)| !named.contains(&name.to_ascii_lowercase()))
        .filter(|(name, _)| !name.eq_ignore_ascii_case("sec-websocket-key"))
        .map(|(name, value)| (name.as_str(), value.as_str()))
        .collect();
    let path = upstream_path(upstream, &request.upgrade.path);
    client_request_with_headers(&host, &path, &request.upgrade.key, &protocols, &headers)
}

/// Sends `request` on `stream` and reads the answer's head.
fn exchange(stream: &mut impl ReadWrite, request: &[u8], key: &str) -> Result<Answer, String> {
    stream
        .write_all(request)
        .and_then(|()| stream.flush())
        .map_err(|e| format!("cannot send the upgrade: {e}"))?;
    let deadline = Instant::now() + HANDSHAKE_TIMEOUT;
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        if Instant::now() > deadline {
            return Err(format!("no answer to the upgrade within {} s", HANDSHAKE_TIMEOUT.as_secs()));
        }
        match parse_response(&buf, key) {
            Ok(Some((response, used))) => {
                let head = without_extensions(&buf[..used]);
                let early = buf[used..].to_vec();
                return Ok(Answer::Upgraded { head, subprotocol: response.protocol, early });
            }
            Ok(None) => {}
            Err(HandshakeError::UnexpectedStatus(status)) => {
                return Ok(Answer::Refused { status, bytes: buf });
            }
            Err(error) => return Err(format!("its answer to the upgrade: {error}")),
        }
        match stream.read(&mut chunk) {
            Ok(0) => return Err("it closed the connection before answering the upgrade".into()),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(error) => return Err(format!("its answer to the upgrade could not be read: {error}")),
        }
    }
}

trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

/// A response head without its `Sec-WebSocket-Extensions` lines (none was offered upstream;
/// a server that agrees to one anyway is not passed on).
fn without_extensions(head: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(head);
    let kept: Vec<&str> = text
        .split("\r\n")
        .filter(|line| !line.to_ascii_lowercase().starts_with("sec-websocket-extensions:"))
        .collect();
    kept.join("\r\n").into_bytes()
}

/// An HTTP answer with a one-line text body, for a request the proxy does not forward.
pub fn http_answer(status: &str, text: &str) -> Vec<u8> {
    let body = format!("wsbench record: {text}\n");
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(headers: &[(&str, &str)]) -> ClientRequest {
        ClientRequest {
            upgrade: UpgradeRequest {
                path: "/chat?room=1".into(),
                key: "dGhlIHNhbXBsZSBub25jZQ==".into(),
                protocols: vec!["graphql-transport-ws".into()],
                extensions: vec!["permessage-deflate".into()],
            },
            headers: headers.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect(),
            early: Vec::new(),
        }
    }

    #[test]
    fn the_upstream_request_rewrites_host_and_drops_hop_by_hop_headers_and_extensions() {
        let upstream = Target::parse("ws://127.0.0.1:9001/api/").unwrap();
        let request = request(&[
            ("Host", "proxy:8080"),
            ("Connection", "Upgrade, Keep-Alive, X-Hop"),
            ("Keep-Alive", "300"),
            ("X-Hop", "1"),
            ("Sec-WebSocket-Extensions", "permessage-deflate; client_max_window_bits"),
            ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
            ("Cookie", "sid=1"),
            ("Origin", "http://app"),
        ]);
        let text = String::from_utf8(upgrade_bytes(&upstream, &request)).unwrap();
        assert!(text.starts_with("GET /api/chat?room=1 HTTP/1.1\r\nHost: 127.0.0.1:9001\r\n"), "{text}");
        assert!(text.contains("Sec-WebSocket-Protocol: graphql-transport-ws\r\n"), "{text}");
        assert!(text.contains("Cookie: sid=1\r\nOrigin: http://app\r\n"), "{text}");
        for gone in ["proxy:8080", "Keep-Alive", "X-Hop", "permessage-deflate"] {
            assert!(!text.contains(gone), "{gone} forwarded: {text}");
        }
        assert_eq!(text.matches("Sec-WebSocket-Key").count(), 1, "{text}");
    }

    #[test]
    fn secrets_are_redacted_in_headers_and_the_query_unless_kept() {
        let headers = vec![
            ("Authorization".to_owned(), "Bearer s3cret".to_owned()),
            ("Cookie".to_owned(), "sid=abc".to_owned()),
            ("X-Auth-Token".to_owned(), "t".to_owned()),
            ("Origin".to_owned(), "http://app".to_owned()),
        ];
        let shown = recorded_headers(&headers, false);
        assert_eq!(shown.iter().filter(|(_, v)| v == REDACTED).count(), 3, "{shown:?}");
        assert_eq!(shown[3].1, "http://app");
        assert_eq!(recorded_headers(&headers, true), headers);
        assert_eq!(recorded_path("/s?room=1&access_token=abc", false), "/s?room=1&access_token=<redacted>");
        assert_eq!(recorded_path("/s?access_token=abc", true), "/s?access_token=abc");
    }

    #[test]
    fn extensions_the_upstream_agreed_to_are_not_passed_on() {
        let head = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nSec-WebSocket-Extensions: permessage-deflate\r\n\r\n";
        let kept = String::from_utf8(without_extensions(head)).unwrap();
        assert_eq!(kept, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n");
    }
}
