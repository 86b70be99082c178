//! Why an opening handshake failed, in a word a report can count by (docs/failure-counters.md):
//! the HTTP status the server answered with (and the first line of what it said), the TLS
//! alert or certificate problem (with rustls' words for it: which name was expected and
//! which the certificate holds), an answer that is not an upgrade response, one whose head
//! is past what wsbench reads of it, a wrong `Sec-WebSocket-Accept`, no complete answer in
//! time, or a connection that ended before any answer. The worker counts them with `Counters::count_handshake_failure`; the result
//! shows each as `handshake_CAUSE`. Every transport of `dial/` judges its answers with these, and
//! the compression negotiation refuses an answer with them too, so they sit beside both, below
//! them, and import neither.

use std::io;
use std::time::Duration;

use wsbench_proto::HandshakeError;
use wsbench_proto::handshake::parse_response;

/// Longest first line of a refused upgrade's body that is kept, in bytes.
const MAX_RESPONSE_LINE: usize = 200;
/// Longest TLS failure's detail that is kept, in characters (a certificate's names included).
const MAX_TLS_DETAIL: usize = 400;

/// One failed handshake: its cause (`http_status_403`, `tls_unknown_ca`, …) and, for a
/// refused upgrade, the first line of the server's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandshakeFailure {
    pub cause: String,
    pub response: Option<String>,
    /// A refusal's `Retry-After` (503, 429; delay-seconds): the server asks for no new
    /// attempt sooner.
    pub retry_after: Option<Duration>,
}

/// The server's answer to the upgrade request.
#[derive(Debug, PartialEq, Eq)]
pub enum Upgrade {
    /// Not complete yet: read more.
    Incomplete,
    /// A valid `101`, of this many bytes (frames may follow).
    Accepted(usize),
    /// The answer to a request made before the upgrade (a protocol's preflight), of this
    /// many bytes: the next request is queued; its answer is to come.
    Continue(usize),
    /// The answer to a request made before the upgrade, after which the server closes the
    /// connection: the upgrade request is queued for a new connection to the same server.
    Redial,
    Refused(HandshakeFailure),
}

impl HandshakeFailure {
    pub fn of(cause: &str) -> HandshakeFailure {
        HandshakeFailure { cause: cause.to_owned(), response: None, retry_after: None }
    }

    /// A protocol's exchange before the upgrade failed: its cause and what it said.
    pub fn of_preflight((cause, detail): (String, String)) -> HandshakeFailure {
        HandshakeFailure { cause, response: Some(detail), retry_after: None }
    }

    /// Connected, and no complete answer within the connect timeout; `data` is what came.
    pub fn timed_out(data: &[u8], key: &str) -> HandshakeFailure {
        match answer(data, key, true) {
            Upgrade::Refused(failure) if failure.cause.starts_with("http_status_") => failure,
            _ => HandshakeFailure::of("timeout"),
        }
    }

    /// The connection ended (EOF, reset, failed write) before the upgrade; `data` is what came.
    pub fn ended(data: &[u8], key: &str) -> HandshakeFailure {
        match answer(data, key, true) {
            _ if data.is_empty() => HandshakeFailure::of("closed"),
            Upgrade::Refused(failure) => failure,
            // A partial answer, or a valid one the worker did not get to: not an upgrade.
            Upgrade::Incomplete | Upgrade::Accepted(_) | Upgrade::Continue(_) | Upgrade::Redial => {
                HandshakeFailure::of("not_websocket")
            }
        }
    }

    /// The TLS handshake failed with `error` (rustls' error inside an `InvalidData`). A
    /// certificate no trusted CA signed says what to do about it; any other failure keeps
    /// rustls' words for it (a certificate for other names: the name expected and the ones
    /// it holds).
    pub fn of_tls(error: &io::Error) -> HandshakeFailure {
        let tls = error.get_ref().and_then(|e| e.downcast_ref::<rustls::Error>());
        let reason = tls.map_or_else(|| "error".to_owned(), tls_reason);
        let response = match (reason.as_str(), tls) {
            ("unknown_ca", _) => Some(UNKNOWN_CA_HINT.to_owned()),
            (_, Some(tls)) => Some(shortened(&tls_detail(tls), MAX_TLS_DETAIL)),
            (_, None) => None,
        };
        HandshakeFailure { cause: format!("tls_{reason}"), response, retry_after: None }
    }
}

/// Checks the answer at the start of `data` to a request sent with `key`. `ended`: no more
/// bytes will come. A refused upgrade waits for the first line of its body while more can come.
pub fn answer(data: &[u8], key: &str, ended: bool) -> Upgrade {
    match parse_response(data, key) {
        Ok(Some((_, used))) => Upgrade::Accepted(used),
        Ok(None) if ended => Upgrade::Refused(HandshakeFailure::of("not_websocket")),
        Ok(None) => Upgrade::Incomplete,
        Err(HandshakeError::UnexpectedStatus(status)) => match first_body_line(data) {
            None if !ended => Upgrade::Incomplete,
            line => Upgrade::Refused(HandshakeFailure {
                cause: format!("http_status_{status}"),
                response: line.flatten(),
                retry_after: retry_after(data),
            }),
        },
        Err(HandshakeError::BadAccept) => Upgrade::Refused(HandshakeFailure::of("bad_accept")),
        Err(HandshakeError::HeaderTooLarge(bound)) => Upgrade::Refused(HandshakeFailure {
            cause: "response_too_large".to_owned(),
            response: Some(format!("the answer's head is past {bound} bytes, the most wsbench reads of it")),
            retry_after: None,
        }),
        Err(HandshakeError::TooManyHeaders(bound)) => Upgrade::Refused(HandshakeFailure {
            cause: "response_too_large".to_owned(),
            response: Some(format!("the answer has more than {bound} header fields, the most wsbench reads")),
            retry_after: None,
        }),
        Err(_) => Upgrade::Refused(HandshakeFailure::of("not_websocket")),
    }
}

/// The `Retry-After` of a refusal's head, in delay-seconds (an HTTP date is not read).
fn retry_after(data: &[u8]) -> Option<Duration> {
    let end = data.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&data[..end]).ok()?;
    head.lines().skip(1).find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.trim().eq_ignore_ascii_case("retry-after").then_some(())?;
        value.trim().parse::<u64>().ok().map(Duration::from_secs)
    })
}

/// What went wrong in rustls' words; a certificate for other names, shorter (the report
/// shows the first hundred characters): the name expected and the names it holds.
fn tls_detail(error: &rustls::Error) -> String {
    let rustls::Error::InvalidCertificate(rustls::CertificateError::NotValidForNameContext {
        expected,
        presented,
    }) = error
    else {
        return error.to_string();
    };
    // rustls writes each name as its kind around it: `DnsName("localhost")`.
    let bare = |name: &str| {
        let inner = name.split_once('(').map_or(name, |(_, inner)| inner.strip_suffix(')').unwrap_or(inner));
        inner.trim_matches('"').to_owned()
    };
    match presented.as_slice() {
        [] => format!("expected {}, the certificate names no host (no subjectAltName)", expected.to_str()),
        names => format!(
            "expected {}, the certificate is for {}",
            expected.to_str(),
            names.iter().map(|name| bare(name)).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// `text` cut to `most` characters, an ellipsis saying so.
fn shortened(text: &str, most: usize) -> String {
    match text.char_indices().nth(most) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// The first line of the body after a complete response header: `None` while more of it
/// may come, `Some(None)` when the body is empty or blank.
fn first_body_line(data: &[u8]) -> Option<Option<String>> {
    let end = find(data, b"\r\n\r\n")? + 4;
    let (head, mut body) = (&data[..end], &data[end..]);
    let chunked =
        header(head, "transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    if chunked {
        // The chunk size line comes first.
        body = &body[find(body, b"\r\n")? + 2..];
    }
    let length = header(head, "content-length").and_then(|v| v.trim().parse::<usize>().ok());
    let wanted = length.unwrap_or(usize::MAX).min(MAX_RESPONSE_LINE);
    let line_end = body.iter().position(|&b| b == b'\n');
    if line_end.is_none() && body.len() < wanted {
        return None;
    }
    let line = &body[..line_end.unwrap_or(body.len()).min(MAX_RESPONSE_LINE)];
    let line = String::from_utf8_lossy(line).trim().to_owned();
    Some((!line.is_empty()).then_some(line))
}

/// The value of header `name` (lowercase) in a response header.
fn header(head: &[u8], name: &str) -> Option<String> {
    String::from_utf8_lossy(head).lines().find_map(|line| {
        let (field, value) = line.split_once(':')?;
        field.trim().eq_ignore_ascii_case(name).then(|| value.trim().to_owned())
    })
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// What a user does about a server certificate no trusted CA signed.
const UNKNOWN_CA_HINT: &str = "certificate of an unknown CA (self-signed?): use --cacert FILE or --insecure";

/// A TLS failure in a word: the alert received, or the one a certificate problem sends
/// (`unknown_ca`, `bad_certificate`, `certificate_expired`, …), or `not_tls` when the
/// server's bytes are not TLS records at all (a plain server on a `wss://` URL). A
/// self-signed certificate is `unknown_ca` whichever way the verifier words it: an unknown
/// issuer, or (a certificate marked as a CA, as `openssl req -x509` makes) a CA certificate
/// presented as the server's own.
fn tls_reason(error: &rustls::Error) -> String {
    use rustls::InvalidMessage as Invalid;
    match error {
        rustls::Error::InvalidCertificate(rustls::CertificateError::Other(other))
            if format!("{other:?}").contains("CaUsedAsEndEntity") =>
        {
            "unknown_ca".to_owned()
        }
        rustls::Error::AlertReceived(alert) => snake_case(&format!("{alert:?}")),
        rustls::Error::InvalidCertificate(problem) => {
            snake_case(&format!("{:?}", rustls::AlertDescription::from(problem.clone())))
        }
        rustls::Error::InvalidMessage(
            Invalid::InvalidContentType | Invalid::UnknownProtocolVersion | Invalid::MessageTooLarge,
        ) => "not_tls".to_owned(),
        rustls::Error::InvalidMessage(_) => "invalid_message".to_owned(),
        rustls::Error::InappropriateMessage { .. } | rustls::Error::InappropriateHandshakeMessage { .. } => {
            "unexpected_message".to_owned()
        }
        rustls::Error::NoCertificatesPresented => "no_certificate".to_owned(),
        rustls::Error::PeerIncompatible(_) => "peer_incompatible".to_owned(),
        rustls::Error::PeerMisbehaved(_) => "peer_misbehaved".to_owned(),
        rustls::Error::DecryptError => "decrypt_error".to_owned(),
        _ => "error".to_owned(),
    }
}

/// `UnknownCA` → `unknown_ca`; stops at the first non-alphanumeric (`Unknown(12)` → `unknown`).
fn snake_case(name: &str) -> String {
    let mut out = String::new();
    let mut previous_lower = false;
    for c in name.chars().take_while(char::is_ascii_alphanumeric) {
        if c.is_ascii_uppercase() && previous_lower {
            out.push('_');
        }
        previous_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        out.push(c.to_ascii_lowercase());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";

    fn refused(cause: &str, response: Option<&str>) -> Upgrade {
        Upgrade::Refused(HandshakeFailure {
            cause: cause.to_owned(),
            response: response.map(str::to_owned),
            retry_after: None,
        })
    }

    #[test]
    fn a_refused_upgrade_waits_for_the_first_line_of_its_body() {
        let head = "HTTP/1.1 403 Forbidden\r\nContent-Length: 25\r\n\r\n";
        assert_eq!(answer(head.as_bytes(), KEY, false), Upgrade::Incomplete);
        assert_eq!(answer(format!("{head}no tok").as_bytes(), KEY, false), Upgrade::Incomplete);
        let full = format!("{head}no token\r\nsecond line\n");
        assert_eq!(answer(full.as_bytes(), KEY, false), refused("http_status_403", Some("no token")));
        assert_eq!(answer(head.as_bytes(), KEY, true), refused("http_status_403", None));
        let empty = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n";
        assert_eq!(answer(empty, KEY, false), refused("http_status_503", None));
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n";
        assert_eq!(answer(chunked, KEY, false), refused("http_status_200", Some("hello")));
    }

    #[test]
    fn causes_of_answers_that_are_not_upgrades() {
        let wrong_accept = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: nope\r\n\r\n";
        assert_eq!(answer(wrong_accept, KEY, false), refused("bad_accept", None));
        assert_eq!(answer(b"SSH-2.0-OpenSSH\r\n\r\n", KEY, false), refused("not_websocket", None));
        assert_eq!(HandshakeFailure::ended(b"HTTP/1.1 10", KEY).cause, "not_websocket");
        assert_eq!(HandshakeFailure::ended(b"", KEY).cause, "closed");
        assert_eq!(HandshakeFailure::timed_out(b"", KEY).cause, "timeout");
        let head = b"HTTP/1.1 429 Too Many Requests\r\nContent-Length: 9\r\n\r\n";
        assert_eq!(HandshakeFailure::timed_out(head, KEY).cause, "http_status_429");
    }

    #[test]
    fn tls_failures_are_named_by_their_alert() {
        let tls = |error: rustls::Error| {
            HandshakeFailure::of_tls(&io::Error::new(io::ErrorKind::InvalidData, error)).cause
        };
        let unknown_issuer = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        assert_eq!(tls(unknown_issuer), "tls_unknown_ca");
        let failure = HandshakeFailure::of_tls(&io::Error::new(
            io::ErrorKind::InvalidData,
            rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer),
        ));
        let hint = failure.response.unwrap_or_default();
        assert!(hint.contains("--cacert") && hint.contains("--insecure"), "{hint}");
        let alert = rustls::Error::AlertReceived(rustls::AlertDescription::HandshakeFailure);
        assert_eq!(tls(alert), "tls_handshake_failure");
        let garbage = rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType);
        assert_eq!(tls(garbage), "tls_not_tls");
    }

    #[test]
    fn a_certificate_for_other_names_keeps_its_cause_and_says_which_names() {
        let wrong_name =
            rustls::Error::InvalidCertificate(rustls::CertificateError::NotValidForNameContext {
                expected: rustls_pki_types::ServerName::try_from("127.0.0.1").unwrap().to_owned(),
                presented: vec!["DnsName(\"localhost\")".to_owned()],
            });
        let failure = HandshakeFailure::of_tls(&io::Error::new(io::ErrorKind::InvalidData, wrong_name));
        assert_eq!(failure.cause, "tls_bad_certificate");
        assert_eq!(failure.response.as_deref(), Some("expected 127.0.0.1, the certificate is for localhost"));
        let expired = rustls::Error::InvalidCertificate(rustls::CertificateError::Expired);
        let failure = HandshakeFailure::of_tls(&io::Error::new(io::ErrorKind::InvalidData, expired));
        assert_eq!(failure.cause, "tls_certificate_expired");
        assert_eq!(failure.response.as_deref(), Some("invalid peer certificate: Expired"), "rustls' words");
        let long = "x".repeat(MAX_TLS_DETAIL + 10);
        assert_eq!(shortened(&long, MAX_TLS_DETAIL).chars().count(), MAX_TLS_DETAIL + 1);
        assert_eq!(shortened("short", MAX_TLS_DETAIL), "short");
    }

    #[test]
    fn an_answer_whose_head_is_past_the_bound_is_too_large_naming_it() {
        let mut huge = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nX-Filler: ".to_vec();
        huge.resize(huge.len() + (1 << 20), b'a');
        let Upgrade::Refused(failure) = answer(&huge, KEY, false) else { panic!("refused") };
        assert_eq!(failure.cause, "response_too_large");
        assert_eq!(
            failure.response.as_deref(),
            Some("the answer's head is past 8192 bytes, the most wsbench reads of it")
        );
        let many: String = (0..100).map(|n| format!("X-{n}: a\r\n")).collect();
        let many = format!("HTTP/1.1 101 Switching Protocols\r\n{many}\r\n");
        let Upgrade::Refused(failure) = answer(many.as_bytes(), KEY, false) else { panic!("refused") };
        assert_eq!(failure.cause, "response_too_large");
        assert!(failure.response.unwrap_or_default().contains("more than 64 header fields"));
    }

    #[test]
    fn a_refusal_asking_for_a_pause_says_how_long() {
        let busy = "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 3\r\nContent-Length: 4\r\n\r\nbusy";
        let Upgrade::Refused(failure) = answer(busy.as_bytes(), KEY, false) else { panic!("refused") };
        assert_eq!(failure.retry_after, Some(Duration::from_secs(3)));
        let dated = "HTTP/1.1 503 X\r\nretry-after: Wed, 21 Oct 2015 07:28:00 GMT\r\n\r\n";
        let Upgrade::Refused(failure) = answer(dated.as_bytes(), KEY, true) else { panic!("refused") };
        assert_eq!(failure.retry_after, None, "an HTTP date is not read");
    }
}
