//! The client's TLS configuration: the Mozilla root store by default (or the `--cacert`
//! CAs), or, with `--insecure`, a verifier that accepts any certificate (for self-signed
//! benchmark servers); a client certificate for mutual TLS; a pinned version. Signatures in the handshake are still checked, so the connection does real
//! TLS work either way.

use std::sync::Arc;

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
