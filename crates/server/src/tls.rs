//! TLS for wss and https: a rustls server configuration from PEM files, or from a
//! self-signed certificate generated at start (benchmark clients run with `--insecure`).
//! Sessions resume as real servers resume them: session tickets from a [`Ticketer`] (TLS
//! 1.3 PSK tickets and TLS 1.2 tickets, encrypted under a key made at start and rotated
//! by rustls) and a session cache of fixed size for TLS 1.2 clients that resume by id.
//! A restarted server has a new ticket key: its old tickets no longer resume.

use std::sync::{Arc, Mutex};

use mio::net::TcpStream;
use rustls::crypto::ring::Ticketer;
use rustls::server::ServerSessionMemoryCache;
use rustls::{ServerConfig, ServerConnection};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use wsbench_transport::{HandshakeTally, Transport, take_handshakes};

use crate::{ServeError, TlsSource};

/// TLS 1.2 sessions the server remembers by id (the oldest go first): a fixed bound.
pub const SESSION_CACHE_ENTRIES: usize = 4096;

pub fn server_config(source: &TlsSource) -> Result<Arc<ServerConfig>, ServeError> {
    let (certs, key) = match source {
        TlsSource::SelfSigned => {
            let (cert, key) = self_signed()?;
            (vec![cert], key)
        }
        TlsSource::Files { cert, key } => {
            let read = |path: &std::path::Path| {
                std::fs::read(path)
                    .map_err(|source| ServeError::ReadFile { path: path.display().to_string(), source })
            };
            let cert_pem = read(cert)?;
            let key_pem = read(key)?;
            let certs = CertificateDer::pem_slice_iter(&cert_pem)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| ServeError::Tls(format!("{}: {e}", cert.display())))?;
            if certs.is_empty() {
                return Err(ServeError::Tls(format!("{}: no certificate found", cert.display())));
            }
            let key = PrivateKeyDer::from_pem_slice(&key_pem)
                .map_err(|e| ServeError::Tls(format!("{}: {e}", key.display())))?;
            (certs, key)
        }
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ServeError::Tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| ServeError::Tls(e.to_string()))?;
    let mut config = config;
    config.ticketer = Ticketer::new().map_err(|e| ServeError::Tls(e.to_string()))?;
    config.session_storage = ServerSessionMemoryCache::new(SESSION_CACHE_ENTRIES);
    // HTTP/2 first (WebSockets over it, RFC 8441), HTTP/1.1 for everyone else.
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// A certificate for `localhost` and `127.0.0.1`, made now, and its key.
pub fn self_signed() -> Result<(CertificateDer<'static>, PrivateKeyDer<'static>), ServeError> {
    let names = vec!["localhost".to_owned(), "127.0.0.1".to_owned()];
    let generated = rcgen::generate_simple_self_signed(names).map_err(|e| ServeError::Tls(e.to_string()))?;
    let key = PrivateKeyDer::try_from(generated.signing_key.serialize_der())
        .map_err(|e| ServeError::Tls(e.to_string()))?;
    Ok((generated.cert.der().clone(), key))
}

/// The TLS stream of an accepted connection, its handshake counted when it completes;
/// `None` (said on stderr) if rustls cannot set the session up.
pub fn accepted(stream: TcpStream, config: &Arc<ServerConfig>) -> Option<Transport> {
    match Transport::tls_counted(stream, false, || ServerConnection::new(config.clone())) {
        Ok(transport) => Some(transport),
        Err(e) => {
            eprintln!("wsbench serve: TLS session set-up failed: {e}");
            None
        }
    }
}

/// Adds the handshakes this thread completed since it last looked to `total`, when it
/// serves TLS (once per turn of an event loop, so a handshake costs no lock of its own).
pub fn add_handshakes(total: &Option<Mutex<HandshakeTally>>) {
    let Some(total) = total else { return };
    let done = take_handshakes();
    if !done.is_empty() {
        *total.lock().unwrap_or_else(|e| e.into_inner()) += done;
    }
}
