//! SignalR's negotiate POST before the WebSocket, as the official clients make it unless told
//! `skipNegotiation`: `POST {hub}/negotiate?negotiateVersion=1` on the connection, then the
//! upgrade there at `{hub}?id={connectionToken}`. A redirect (`url`, `accessToken`) is
//! followed once when it stays on the same server (host and port), negotiating again with
//! its token as the bearer, which the WebSocket then carries too. Everything else ends the
//! connection as a failed handshake by its cause: `signalr_negotiate_status_NNN` (an HTTP
//! error status, with the first line of its body), `signalr_negotiate_error` (the answer's
//! `error`), `signalr_negotiate_no_websockets` (no WebSockets transport offered, or none for
//! the hub protocol's transfer format), `signalr_negotiate_redirect_elsewhere` (a redirect to
//! another server), `signalr_negotiate_redirect_loop` (a second redirect),
//! `signalr_negotiate_malformed` (no HTTP response, or no negotiate answer in it),
//! `signalr_negotiate_closed` (the connection ended before the answer, or after a redirect)
//! and `signalr_negotiate_timeout`. A server that closes the connection after its answer
//! (`Connection: close`) gets the WebSocket on a new connection, as the official clients
//! always open one.

use wsbench_appproto::signalr::negotiate::{self, NegotiateError, Negotiated};
use wsbench_proto::http_response;

use crate::protocol::preflight::{Preflight, Step, Target};

/// Longest piece of a server's answer kept in a failure's words, in characters.
const MAX_DETAIL: usize = 200;

#[derive(Debug)]
pub(super) struct Negotiate {
    /// The transfer format the hub protocol needs of the WebSocket (`Text`, `Binary`).
    format: &'static str,
    /// The hub's path after a redirect, and its bearer.
    redirect: Option<(String, Option<String>)>,
}

impl Negotiate {
    pub(super) fn new(format: &'static str) -> Negotiate {
        Negotiate { format, redirect: None }
    }

    /// The hub's path (and query): the run's, or the redirect's.
    fn hub<'t>(&'t self, target: &Target<'t>) -> &'t str {
        self.redirect.as_ref().map_or(target.path, |(path, _)| path)
    }

    fn bearer(&self) -> Option<&str> {
        self.redirect.as_ref().and_then(|(_, bearer)| bearer.as_deref())
    }

    /// A redirect to `url`: negotiated again on this connection, when it is this server.
    fn redirected(
        &mut self,
        url: &str,
        bearer: Option<String>,
        target: &Target<'_>,
        out: &mut Vec<u8>,
    ) -> Step {
        if self.redirect.is_some() {
            return failed(
                "signalr_negotiate_redirect_loop",
                format!("the hub redirected a second time (to {}), past the one redirect followed", cut(url)),
            );
        }
        let Some((_, authority, path)) = negotiate::split_url(url) else {
            return failed(
                "signalr_negotiate_malformed",
                format!("a redirect to {}, no http(s) URL", cut(url)),
            );
        };
        if !authority.eq_ignore_ascii_case(target.host) {
            return failed(
                "signalr_negotiate_redirect_elsewhere",
                format!(
                    "the hub redirects to {} (another server, as Azure SignalR Service does); wsbench negotiates on the WebSocket's own connection: give that URL as the target with its token as --bearer and --skip-negotiate",
                    cut(url)
                ),
            );
        }
        self.redirect = Some((path.to_owned(), bearer));
        self.request(target, out);
        Step::Incomplete
    }
}

impl Preflight for Negotiate {
    fn name(&self) -> &'static str {
        "SignalR's negotiate"
    }

    fn skip_flag(&self) -> &'static str {
        "--skip-negotiate"
    }

    fn request(&mut self, target: &Target<'_>, out: &mut Vec<u8>) {
        let path = negotiate::negotiate_path(self.hub(target));
        let authorization = self.bearer().map(|bearer| format!("Bearer {bearer}"));
        let mut headers: Vec<(&str, &str)> = target.headers.to_vec();
        if let Some(authorization) = &authorization {
            headers.retain(|(name, _)| !name.eq_ignore_ascii_case("authorization"));
            headers.push(("Authorization", authorization));
        }
        negotiate::encode_request(out, target.host, &path, &headers);
    }

    fn answer(&mut self, data: &[u8], target: &Target<'_>, out: &mut Vec<u8>) -> Step {
        let response = match http_response::read(data) {
            Ok(None) => return Step::Incomplete,
            Ok(Some(response)) => response,
            Err(error) => {
                return failed(
                    "signalr_negotiate_malformed",
                    format!("the answer to the negotiate POST: {error}"),
                );
            }
        };
        if !(200..300).contains(&response.status) {
            let line = String::from_utf8_lossy(&response.body);
            let line = line.lines().map(str::trim).find(|line| !line.is_empty()).unwrap_or_default();
            return failed(
                &format!("signalr_negotiate_status_{}", response.status),
                format!("the negotiate POST was answered {}: {}", response.status, cut(line)),
            );
        }
        let step = match negotiate::decode(&response.body, self.format) {
            Ok(Negotiated::Connect { token, .. }) => Step::Upgrade {
                used: response.used,
                path: negotiate::websocket_path(self.hub(target), &token),
                bearer: self.bearer().map(str::to_owned),
                new_connection: !response.keep_alive,
            },
            Ok(Negotiated::Redirect { .. }) if !response.keep_alive => {
                return failed(
                    "signalr_negotiate_closed",
                    "the server closes the connection after its redirect (Connection: close), where wsbench negotiates again: add --skip-negotiate".into(),
                );
            }
            Ok(Negotiated::Redirect { url, access_token }) => {
                self.redirected(&url, access_token, target, out)
            }
            Err(error) => return refused(&error),
        };
        match step {
            Step::Incomplete => Step::Again(response.used),
            step => step,
        }
    }

    fn unanswered(&self, data: &[u8], ended: bool) -> (String, String) {
        let (cause, detail) = match (ended, data.is_empty()) {
            (true, true) => ("signalr_negotiate_closed", "the server ended the connection without answering the negotiate POST: is the target a SignalR hub?".to_owned()),
            (true, false) => ("signalr_negotiate_malformed", format!("the connection ended within the negotiate answer: {}", cut(&String::from_utf8_lossy(data)))),
            (false, _) => ("signalr_negotiate_timeout", "no whole answer to the negotiate POST within the connect timeout".to_owned()),
        };
        (cause.to_owned(), detail)
    }
}

/// A negotiate answer that gives no connection, by its cause.
fn refused(error: &NegotiateError) -> Step {
    let cause = match error {
        NegotiateError::Refused(_) => "signalr_negotiate_error",
        NegotiateError::NoWebSockets(_) | NegotiateError::NoTransferFormat(..) => {
            "signalr_negotiate_no_websockets"
        }
        NegotiateError::NotJson(_) | NegotiateError::NoConnection => "signalr_negotiate_malformed",
    };
    failed(cause, cut(&error.to_string()).to_owned())
}

fn failed(cause: &str, detail: String) -> Step {
    Step::Failed { cause: cause.to_owned(), detail }
}

/// `text`'s first [`MAX_DETAIL`] characters.
fn cut(text: &str) -> &str {
    text.char_indices().nth(MAX_DETAIL).map_or(text, |(at, _)| &text[..at])
}

#[cfg(test)]
mod tests {
    use super::*;

    const TARGET: Target<'static> =
        Target { host: "127.0.0.1:5000", path: "/hub", headers: &[("Cookie", "a=1")] };

    fn ok(body: &str) -> Vec<u8> {
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    }

    const ANSWER: &str = r#"{"negotiateVersion":1,"connectionId":"c","connectionToken":"t+1","availableTransports":[{"transport":"WebSockets","transferFormats":["Text","Binary"]}]}"#;

    fn cause(step: Step) -> String {
        match step {
            Step::Failed { cause, .. } => cause,
            other => panic!("not a failure: {other:?}"),
        }
    }

    #[test]
    fn the_token_names_the_websockets_path() {
        let mut negotiate = Negotiate::new("Text");
        let mut out = Vec::new();
        negotiate.request(&TARGET, &mut out);
        let request = String::from_utf8(out).unwrap();
        assert!(request.starts_with("POST /hub/negotiate?negotiateVersion=1 HTTP/1.1\r\n"), "{request}");
        assert!(request.contains("Cookie: a=1\r\n"));
        let answer = ok(ANSWER);
        assert_eq!(negotiate.answer(&answer[..20], &TARGET, &mut Vec::new()), Step::Incomplete);
        assert_eq!(
            negotiate.answer(&answer, &TARGET, &mut Vec::new()),
            Step::Upgrade {
                used: answer.len(),
                path: "/hub?id=t%2B1".into(),
                bearer: None,
                new_connection: false
            }
        );
    }

    #[test]
    fn a_redirect_here_is_followed_once_with_its_token() {
        let mut negotiate = Negotiate::new("Text");
        let mut out = Vec::new();
        let redirect = ok(r#"{"url":"http://127.0.0.1:5000/other?hub=x","accessToken":"tok"}"#);
        assert_eq!(negotiate.answer(&redirect, &TARGET, &mut out), Step::Again(redirect.len()));
        let again = String::from_utf8(out).unwrap();
        assert!(again.starts_with("POST /other/negotiate?hub=x&negotiateVersion=1 HTTP/1.1\r\n"), "{again}");
        assert!(again.contains("Authorization: Bearer tok\r\n"), "{again}");
        assert_eq!(
            negotiate.answer(&ok(ANSWER), &TARGET, &mut Vec::new()),
            Step::Upgrade {
                used: ok(ANSWER).len(),
                path: "/other?hub=x&id=t%2B1".into(),
                bearer: Some("tok".into()),
                new_connection: false
            }
        );
        let mut twice = Negotiate::new("Text");
        twice.answer(&redirect, &TARGET, &mut Vec::new());
        assert_eq!(
            cause(twice.answer(&redirect, &TARGET, &mut Vec::new())),
            "signalr_negotiate_redirect_loop"
        );
        let elsewhere = ok(r#"{"url":"https://x.service.signalr.net/client/?hub=chat","accessToken":"t"}"#);
        let step = Negotiate::new("Text").answer(&elsewhere, &TARGET, &mut Vec::new());
        assert_eq!(cause(step), "signalr_negotiate_redirect_elsewhere");
    }

    #[test]
    fn failures_are_counted_by_their_cause() {
        let answer = |bytes: &[u8]| cause(Negotiate::new("Text").answer(bytes, &TARGET, &mut Vec::new()));
        let unauthorized = b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 13\r\n\r\nUnauthorized\n";
        assert_eq!(answer(unauthorized), "signalr_negotiate_status_401");
        assert_eq!(answer(&ok(r#"{"error":"nope"}"#)), "signalr_negotiate_error");
        let polling = r#"{"connectionId":"c","availableTransports":[{"transport":"LongPolling","transferFormats":["Text"]}]}"#;
        assert_eq!(answer(&ok(polling)), "signalr_negotiate_no_websockets");
        assert_eq!(answer(&ok("{\"connectionId\":")), "signalr_negotiate_malformed");
        assert_eq!(answer(b"SSH-2.0-OpenSSH_9.6\r\n\r\n"), "signalr_negotiate_malformed");
        let redirect = r#"{"url":"http://127.0.0.1:5000/hub","accessToken":"t"}"#;
        let closing = format!(
            "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{redirect}",
            redirect.len()
        );
        assert_eq!(answer(closing.as_bytes()), "signalr_negotiate_closed");
        let closed = format!(
            "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{ANSWER}",
            ANSWER.len()
        );
        let step = Negotiate::new("Text").answer(closed.as_bytes(), &TARGET, &mut Vec::new());
        assert!(matches!(step, Step::Upgrade { new_connection: true, .. }), "{step:?}");
        let negotiate = Negotiate::new("Text");
        assert_eq!(negotiate.unanswered(b"", true).0, "signalr_negotiate_closed");
        assert_eq!(negotiate.unanswered(b"HTTP/1.1 200", true).0, "signalr_negotiate_malformed");
        assert_eq!(negotiate.unanswered(b"", false).0, "signalr_negotiate_timeout");
    }
}
