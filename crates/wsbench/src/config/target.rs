//! The benchmark target's URL (`ws://host:port/path`, `wss://…`), parsed once into the parts
//! the engine needs. Only IP literals and `localhost` are resolved: the machines wsbench
//! runs on reach loopback and their own test hosts.
//!
//! `ws://user:password@host/` is sent as browsers and k6 send it: the user and password
//! (percent-decoded) go in an `Authorization: Basic` header of the upgrade, never in the
//! `Host` header or the request line, and the password is shown as `<redacted>` wherever the
//! URL is printed or recorded ([`Target::url`]). A byte of the path or query that may not
//! appear raw in a request line (a space, a quote, a non-ASCII letter) is percent-encoded.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

use base64::Engine as _;
use serde::Serialize;

use super::ConfigError;

/// Shown in the result file instead of a secret: a secret header's value, the password of the
/// target URL.
pub const REDACTED: &str = crate::options::REDACTED;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Target {
    /// The URL as given, its password (if any) replaced by `<redacted>`: what is printed
    /// and recorded.
    pub url: String,
    pub tls: bool,
    /// Host as written (sent in the `Host` header and used for TLS SNI).
    pub host: String,
    pub addr: SocketAddr,
    /// The path and query as sent in the request line (percent-encoded where needed).
    pub path: String,
    /// Whether the URL names a path or a query (`ws://h:p/` does; `ws://h:p` does not, and
    /// gets `/` or the protocol's usual path).
    #[serde(skip)]
    pub names_path: bool,
    /// The URL's `user:password`, as written (still percent-encoded): never recorded.
    #[serde(skip)]
    userinfo: Option<Secret>,
}

/// A URL's `user:password`, kept out of `Debug` output.
#[derive(Clone, PartialEq, Eq)]
struct Secret(String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(REDACTED)
    }
}

impl Target {
    pub fn parse(url: &str) -> Result<Target, ConfigError> {
        let shown = redact_password(url);
        let bad = |problem: String| ConfigError::Url { url: shown.clone(), problem };
        let (tls, rest) = if let Some(rest) = url.strip_prefix("ws://") {
            (false, rest)
        } else if let Some(rest) = url.strip_prefix("wss://") {
            (true, rest)
        } else {
            let suggestion = match url.split_once("://") {
                Some(("http", rest)) => format!(" (a WebSocket on that server: ws://{rest})"),
                Some(("https", rest)) => format!(" (a WebSocket on that server: wss://{rest})"),
                _ => String::new(),
            };
            return Err(bad(format!("a server URL starts with ws:// or wss://{suggestion}")));
        };
        // The fragment is never sent; a query right after the authority gets the `/` path.
        let rest = rest.split_once('#').map_or(rest, |(before, _)| before);
        let names_path = rest.contains(['/', '?']);
        let (authority, path) = match rest.find(['/', '?']) {
            Some(i) if rest[i..].starts_with('?') => (&rest[..i], format!("/{}", &rest[i..])),
            Some(i) => (&rest[..i], rest[i..].to_owned()),
            None => (rest, "/".to_owned()),
        };
        let (userinfo, authority) = match authority.rsplit_once('@') {
            Some((userinfo, host)) => (Some(userinfo), host),
            None => (None, authority),
        };
        if let Some(userinfo) = userinfo {
            credentials_of(userinfo).map_err(|problem| bad(problem.to_owned()))?;
        }
        let path = encode_request_target(&path);
        let default_port = if tls { 443 } else { 80 };
        let (host, port) = if let Some(inner) = authority.strip_prefix('[') {
            let (host, after) =
                inner.split_once(']').ok_or_else(|| bad("unclosed [ in IPv6 address".into()))?;
            let port =
                after.strip_prefix(':').map(str::parse).transpose().map_err(|_| bad("bad port".into()))?;
            (host, port.unwrap_or(default_port))
        } else {
            match authority.rsplit_once(':') {
                Some((host, port)) => (host, port.parse().map_err(|_| bad(format!("bad port `{port}`")))?),
                None => (authority, default_port),
            }
        };
        if host.is_empty() {
            return Err(bad("no host".into()));
        }
        let addr = match host.parse::<IpAddr>() {
            Ok(ip) => SocketAddr::new(ip, port),
            Err(_) => (host, port)
                .to_socket_addrs()
                .map_err(|e| bad(format!("cannot resolve `{host}`: {e}")))?
                .next()
                .ok_or_else(|| bad(format!("`{host}` resolves to no address")))?,
        };
        let userinfo = userinfo.map(|userinfo| Secret(userinfo.to_owned()));
        Ok(Target { url: shown.clone(), tls, host: host.to_owned(), addr, path, names_path, userinfo })
    }

    /// Requests `path` (with its query) instead, in the URL too.
    pub fn set_path(&mut self, path: String) {
        let scheme = if self.tls { "wss://" } else { "ws://" };
        let rest = self.url.strip_prefix(scheme).unwrap_or(&self.url);
        let authority = rest.find(['/', '?', '#']).map_or(rest, |end| &rest[..end]);
        self.url = format!("{scheme}{authority}{path}");
        self.path = encode_request_target(&path);
    }

    /// The URL with its password, for a child process of this run (a shard, handed it on
    /// its stdin, never on disk): [`Target::url`] with the password put back.
    pub fn url_with_credentials(&self) -> String {
        match &self.userinfo {
            Some(Secret(userinfo)) => {
                let scheme = if self.tls { "wss://" } else { "ws://" };
                let rest = self.url.strip_prefix(scheme).unwrap_or(&self.url);
                let after = rest.split_once('@').map_or(rest, |(_, after)| after);
                format!("{scheme}{userinfo}@{after}")
            }
            None => self.url.clone(),
        }
    }

    /// The `Authorization` header value the URL's `user:password` asks for (`Basic …`).
    pub fn basic_authorization(&self) -> Option<String> {
        let Secret(userinfo) = self.userinfo.as_ref()?;
        let (user, password) = credentials_of(userinfo).ok()?;
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        Some(format!("Basic {token}"))
    }

    /// `Host` header value.
    pub fn host_header(&self) -> String {
        let default_port = if self.tls { 443 } else { 80 };
        if self.addr.port() == default_port {
            self.host.clone()
        } else {
            format!("{}:{}", self.host, self.addr.port())
        }
    }
}

/// `url` with the password of its `user:password@` replaced by `<redacted>` (any other
/// text as it is).
pub fn redact_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, after) = rest.split_at(authority_end);
    match authority.rsplit_once('@').and_then(|(userinfo, host)| Some((userinfo.split_once(':')?, host))) {
        Some(((user, _password), host)) => format!("{scheme}://{user}:{REDACTED}@{host}{after}"),
        None => url.to_owned(),
    }
}

/// The percent-decoded user and password of a URL's `user:password` (no `:`: an empty
/// password), or why they cannot be sent.
fn credentials_of(userinfo: &str) -> Result<(String, String), &'static str> {
    let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
    let user = percent_decode(user).ok_or("the user name in the URL is not valid percent-encoded UTF-8")?;
    let password =
        percent_decode(password).ok_or("the password in the URL is not valid percent-encoded UTF-8")?;
    if user.contains(':') {
        return Err("the user name in the URL holds a `:` (Basic authentication cannot send it)");
    }
    if user.chars().chain(password.chars()).any(char::is_control) {
        return Err("the user name or password in the URL holds a control character");
    }
    Ok((user, password))
}

/// `%XX` sequences to bytes, read as UTF-8; `None` for a broken `%` or invalid UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The path and query as a request line may carry them (RFC 3986 `pchar`, `/` and `?`):
/// every other byte percent-encoded, and a `%` that starts no `%XX` too. What is already
/// encoded stays as it is.
fn encode_request_target(path: &str) -> String {
    let bytes = path.as_bytes();
    let mut out = String::with_capacity(path.len());
    for (i, &byte) in bytes.iter().enumerate() {
        let escape_start =
            byte == b'%' && bytes.get(i + 1..i + 3).is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit));
        if escape_start || byte.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/?".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_urls() {
        let t = Target::parse("ws://127.0.0.1:8080/echo").unwrap();
        assert_eq!((t.tls, t.addr.port(), t.path.as_str()), (false, 8080, "/echo"));
        let t = Target::parse("wss://localhost:9443").unwrap();
        assert!(t.tls);
        assert_eq!(t.path, "/");
        assert_eq!(t.host_header(), "localhost:9443");
        let t = Target::parse("ws://127.0.0.1:8080/echo?room=1&token=a#top").unwrap();
        assert_eq!(t.path, "/echo?room=1&token=a", "the path and query are sent, the fragment is not");
        let t = Target::parse("ws://127.0.0.1:8080?room=1").unwrap();
        assert_eq!((t.addr.port(), t.path.as_str()), (8080, "/?room=1"));
        let t = Target::parse("ws://[::1]:7000/").unwrap();
        assert_eq!(t.addr, "[::1]:7000".parse().unwrap());
    }

    #[test]
    fn credentials_become_basic_auth_and_leave_the_url_shown() {
        let t = Target::parse("ws://alice:p%40ss%20word@127.0.0.1:8080/echo").unwrap();
        assert_eq!(t.host_header(), "127.0.0.1:8080");
        assert_eq!(t.path, "/echo");
        assert_eq!(t.url, "ws://alice:<redacted>@127.0.0.1:8080/echo");
        // base64("alice:p@ss word")
        assert_eq!(t.basic_authorization().as_deref(), Some("Basic YWxpY2U6cEBzcyB3b3Jk"));
        assert_eq!(t.url_with_credentials(), "ws://alice:p%40ss%20word@127.0.0.1:8080/echo");
        assert_eq!(Target::parse(&t.url_with_credentials()).unwrap(), t);
        let shown = format!("{t:?} {}", serde_json::to_string(&t).unwrap());
        assert!(!shown.contains("p%40ss") && !shown.contains("YWxp"), "{shown}");
        let user_only = Target::parse("ws://bob@127.0.0.1:1/").unwrap();
        assert_eq!(user_only.basic_authorization().as_deref(), Some("Basic Ym9iOg=="));
        assert_eq!(user_only.url, "ws://bob@127.0.0.1:1/");
        assert_eq!(Target::parse("ws://127.0.0.1:1/").unwrap().basic_authorization(), None);
        let error = Target::parse("ws://u:secret%zz@127.0.0.1:1/").unwrap_err().to_string();
        assert!(error.contains("not valid percent-encoded") && !error.contains("secret"), "{error}");
    }

    #[test]
    fn a_path_is_sent_percent_encoded() {
        let t = Target::parse("ws://127.0.0.1:1/a b/é?q=\"x\"&r=%20ok&s=100%").unwrap();
        assert_eq!(t.path, "/a%20b/%C3%A9?q=%22x%22&r=%20ok&s=100%25");
        let mut t = Target::parse("ws://127.0.0.1:1/").unwrap();
        t.set_path("/room 1".into());
        assert_eq!(t.path, "/room%201");
    }

    #[test]
    fn rejects_bad_urls() {
        for url in ["http://a:1", "ws://:1", "ws://a:notaport", "127.0.0.1:80"] {
            assert!(Target::parse(url).is_err(), "{url}");
        }
    }
}
