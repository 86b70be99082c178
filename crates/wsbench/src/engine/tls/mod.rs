//! The client's TLS configuration: the Mozilla root store by default (or the `--cacert`
//! CAs), or, with `--insecure`, a verifier that accepts any certificate (for self-signed
//! benchmark servers); a client certificate for mutual TLS; a pinned version. Signatures in the handshake are still checked, so the connection does real
//! TLS work either way. A run resumes no session unless `--tls-resume` asks: then its
//! share of new connections offers one from the process's [`sessions::SessionStore`].

mod sessions;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rustls::client::Resumption;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};

use crate::config::{TlsOptions, TlsVersion};

/// The client configuration of `wsbench run`: [`client_config`]'s, with `--cacert` (those
/// CAs instead of the Mozilla roots), a client certificate, a pinned version, and ALPN
/// `http/1.1` offered (the upgrade is an HTTP/1.1 request).
pub fn client_config_with(insecure: bool, options: &TlsOptions) -> Result<Arc<ClientConfig>, rustls::Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let versions: &[&rustls::SupportedProtocolVersion] = match options.version {
        None => rustls::DEFAULT_VERSIONS,
        Some(TlsVersion::Tls12) => &[&rustls::version::TLS12],
        Some(TlsVersion::Tls13) => &[&rustls::version::TLS13],
    };
    let builder = ClientConfig::builder_with_provider(provider.clone()).with_protocol_versions(versions)?;
    let builder = if insecure {
        builder.dangerous().with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate(provider)))
    } else if options.roots.is_empty() {
        builder.with_root_certificates(RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() })
    } else {
        let mut roots = RootCertStore::empty();
        for ca in &options.roots {
            roots.add(ca.clone())?;
        }
        builder.with_root_certificates(roots)
    };
    let mut config = match &options.identity {
        Some(identity) => {
            builder.with_client_auth_cert(identity.chain.clone(), identity.key.0.clone_key())?
        }
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// The TLS set-up of a run's connections: a configuration that resumes nothing and, with
/// `--tls-resume`, one that offers a stored session, and which new connection gets which.
#[derive(Debug)]
pub struct ClientTls {
    fresh: Arc<ClientConfig>,
    resuming: Option<Resuming>,
}

#[derive(Debug)]
struct Resuming {
    config: Arc<ClientConfig>,
    share: f64,
    /// New connections given a configuration so far.
    opened: AtomicU64,
}

impl ClientTls {
    /// [`client_config_with`]'s, offering `alpn` (none: its own), resuming nothing or, with
    /// `options.resume`, from a store of `connections` tickets (within its bounds).
    pub fn new(
        insecure: bool,
        options: &TlsOptions,
        alpn: &[&[u8]],
        connections: u64,
    ) -> Result<ClientTls, rustls::Error> {
        let mut config = (*client_config_with(insecure, options)?).clone();
        if !alpn.is_empty() {
            config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        }
        let resuming = options.resume.map(|share| {
            let mut resuming = config.clone();
            resuming.resumption = Resumption::store(Arc::new(sessions::SessionStore::new(connections)));
            Resuming { config: Arc::new(resuming), share, opened: AtomicU64::new(0) }
        });
        config.resumption = Resumption::disabled();
        Ok(ClientTls { fresh: Arc::new(config), resuming })
    }

    /// The configuration of the next new connection, and whether it may resume: the
    /// share's connections, spread evenly over the run (at 0.5 every other one), the same
    /// ones in every run, rather than drawn at random.
    pub fn next(&self) -> (&Arc<ClientConfig>, bool) {
        let Some(resuming) = &self.resuming else { return (&self.fresh, false) };
        let n = resuming.opened.fetch_add(1, Ordering::Relaxed) as f64;
        match ((n + 1.0) * resuming.share).floor() > (n * resuming.share).floor() {
            true => (&resuming.config, true),
            false => (&self.fresh, false),
        }
    }
}

pub fn client_config(insecure: bool) -> Arc<ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions");
    let config = if insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate(provider)))
            .with_no_client_auth()
    } else {
        let roots = RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    Arc::new(config)
}

#[derive(Debug)]
struct AcceptAnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tried(share: Option<f64>, connections: usize) -> Vec<bool> {
        let options = TlsOptions { resume: share, ..TlsOptions::default() };
        let tls = ClientTls::new(true, &options, &[], 100).unwrap();
        (0..connections).map(|_| tls.next().1).collect()
    }

    #[test]
    fn the_share_of_connections_that_may_resume_is_spread_evenly() {
        assert_eq!(tried(None, 4), [false; 4]);
        assert_eq!(tried(Some(0.0), 4), [false; 4]);
        assert_eq!(tried(Some(1.0), 4), [true; 4]);
        assert_eq!(tried(Some(0.5), 6), [false, true, false, true, false, true]);
        assert_eq!(tried(Some(0.25), 1000).iter().filter(|t| **t).count(), 250);
    }

    #[test]
    fn without_resume_no_configuration_keeps_sessions() {
        let options = TlsOptions { resume: Some(1.0), ..TlsOptions::default() };
        let tls = ClientTls::new(true, &options, &[b"h2"], 100).unwrap();
        let fresh = format!("{:?}", tls.fresh.resumption);
        assert!(
            fresh.contains("tls12_resumption: Disabled"),
            "a fresh connection offers no session: {fresh}"
        );
        assert_eq!(tls.fresh.alpn_protocols, [b"h2".to_vec()]);
        assert_eq!(tls.next().0.alpn_protocols, [b"h2".to_vec()]);
    }
}
