//! The benchmark target's URL (`ws://host:port/path`, `wss://…`), parsed once into the parts
//! the engine needs. Only IP literals and `localhost` are resolved: the machines wsbench
//! runs on reach loopback and their own test hosts.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

use serde::Serialize;

use super::ConfigError;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Target {
    pub url: String,
    pub tls: bool,
    /// Host as written (sent in the `Host` header and used for TLS SNI).
    pub host: String,
    pub addr: SocketAddr,
    pub path: String,
}

impl Target {
    pub fn parse(url: &str) -> Result<Target, ConfigError> {
        let bad = |problem: String| ConfigError::Url { url: url.to_owned(), problem };
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
        let (authority, path) = match rest.find(['/', '?']) {
            Some(i) if rest[i..].starts_with('?') => (&rest[..i], format!("/{}", &rest[i..])),
            Some(i) => (&rest[..i], rest[i..].to_owned()),
            None => (rest, "/".to_owned()),
        };
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
        Ok(Target { url: url.to_owned(), tls, host: host.to_owned(), addr, path })
    }

    /// Requests `path` (with its query) instead, in the URL too.
    pub fn set_path(&mut self, path: String) {
        let scheme = if self.tls { "wss://" } else { "ws://" };
        let rest = self.url.strip_prefix(scheme).unwrap_or(&self.url);
        let authority = rest.find(['/', '?', '#']).map_or(rest, |end| &rest[..end]);
        self.url = format!("{scheme}{authority}{path}");
        self.path = path;
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
    fn rejects_bad_urls() {
        for url in ["http://a:1", "ws://:1", "ws://a:notaport", "127.0.0.1:80"] {
            assert!(Target::parse(url).is_err(), "{url}");
        }
    }
}
