//! The Centrifugo server, built from its Go module into `.tools/` by
//! `scripts/install-centrifugo.sh`, with a JSON configuration of its own: connection tokens
//! signed with [`CENTRIFUGO_SECRET`] (HS256), anonymous connections allowed, channels
//! without a namespace open to every client (subscribe, publish, presence), the namespace
//! `guarded` open to clients with a token only, and the server HTTP API behind
//! [`CENTRIFUGO_API_KEY`]; one free loopback port serves the WebSocket endpoint
//! `/connection/websocket` and the API `/api/...`. [`centrifugo_token`] makes the JWT a
//! test connects with.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use wsbench_supervisor::Launch;

use crate::process::{Peer, free_ports, installed, io, temp_dir};
use crate::{PeerError, repo_root};

/// The HMAC secret connection tokens are signed with.
pub const CENTRIFUGO_SECRET: &str = "wsbench-test-secret";
/// The key of the server HTTP API (header `X-API-Key`).
pub const CENTRIFUGO_API_KEY: &str = "wsbench-test-api-key";

/// Centrifugo with its default application-level pings (every 25 s). Port: main.
pub fn start_centrifugo() -> Result<Peer, PeerError> {
    start_centrifugo_pinging_every(25)
}

/// Centrifugo pinging every client every `seconds` (and wanting its pong within half of it).
pub fn start_centrifugo_pinging_every(seconds: u64) -> Result<Peer, PeerError> {
    const PEER: &str = "centrifugo";
    let binary = repo_root().join(".tools/centrifugo");
    installed(PEER, &binary)?;
    let dir = temp_dir(PEER)?;
    let [port] = free_ports(PEER)?;
    let config = dir.join("config.json");
    let open = r#""allow_subscribe_for_client": true, "allow_subscribe_for_anonymous": true,
        "allow_publish_for_client": true, "allow_publish_for_anonymous": true,
        "allow_presence_for_client": true, "presence": true"#;
    let guarded =
        r#""name": "guarded", "allow_subscribe_for_client": true, "allow_publish_for_client": true"#;
    let text = format!(
        r#"{{
  "http_server": {{ "address": "127.0.0.1", "port": {port} }},
  "log": {{ "level": "error" }},
  "usage_stats": {{ "disabled": true }},
  "client": {{
    "token": {{ "hmac_secret_key": "{CENTRIFUGO_SECRET}" }},
    "allow_anonymous_connect_without_token": true,
    "allowed_origins": ["*"],
    "ping_interval": "{seconds}s",
    "pong_timeout": "{pong}ms"
  }},
  "channel": {{
    "without_namespace": {{ {open} }},
    "namespaces": [{{ {guarded} }}]
  }},
  "http_api": {{ "key": "{CENTRIFUGO_API_KEY}" }}
}}
"#,
        pong = seconds * 500,
    );
    write(PEER, &config, &text)?;
    let command = Launch::new(PEER, &binary).arg("--config").arg(&config);
    let mut peer = Peer::spawn(PEER, command, dir)?.with_port("websocket", port);
    peer.wait_for_ports(Duration::from_secs(30))?;
    Ok(peer)
}

fn write(peer: &'static str, path: &Path, text: &str) -> Result<(), PeerError> {
    std::fs::write(path, text).map_err(|source| io(peer, format!("writing {}", path.display()), source))
}

/// A connection token for `user`: an HS256 JWT signed with `secret`, valid for an hour.
pub fn centrifugo_token(secret: &str, user: &str) -> String {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| since.as_secs());
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"HS256","typ":"JWT"}"#);
    let claims = URL_SAFE_NO_PAD.encode(format!(r#"{{"sub":"{user}","iat":{now},"exp":{}}}"#, now + 3600));
    let signed = format!("{header}.{claims}");
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes());
    let signature = URL_SAFE_NO_PAD.encode(ring::hmac::sign(&key, signed.as_bytes()).as_ref());
    format!("{signed}.{signature}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of RFC 7515's appendix A.1 is HS256 over other bytes; this checks the
    /// token's shape and that its signature is HMAC-SHA256 of its first two parts.
    #[test]
    fn a_token_is_a_signed_hs256_jwt_for_its_user() {
        let token = centrifugo_token("secret", "bench");
        let parts: Vec<&str> = token.split('.').collect();
        assert_eq!(parts.len(), 3);
        let claims = String::from_utf8(URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        assert!(claims.starts_with(r#"{"sub":"bench","iat":"#), "{claims}");
        let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, b"secret");
        let signature = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
        let signed = format!("{}.{}", parts[0], parts[1]);
        assert!(ring::hmac::verify(&key, signed.as_bytes(), &signature).is_ok());
        assert!(ring::hmac::verify(&key, b"other", &signature).is_err());
    }
}
