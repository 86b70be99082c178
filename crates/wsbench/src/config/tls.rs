//! The client's TLS options for a `wss://` target: `--cacert` (trust this CA *instead of*
//! the built-in Mozilla roots, as curl's `--cacert` does), `--client-cert`/`--client-key`
//! (mutual TLS), `--sni` (the name sent and verified), `--tls-version` (pin 1.2 or 1.3) and
//! `--tls-resume` (the share of new connections that offer a stored session to resume).
//! The PEM files are read and parsed here, at validation, so an unreadable or invalid file
//! is a one-line usage error before any load; the engine gets the parsed certificates.

use std::path::{Path, PathBuf};

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use serde::Serialize;

use super::error::{ConfigError, invalid};
use crate::input_file::{InputFileError, InputKind};

/// A TLS version to pin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum TlsVersion {
    #[serde(rename = "1.2")]
    Tls12,
    #[serde(rename = "1.3")]
    Tls13,
}

/// The client's private key, parsed; never shown (`Debug` and the result omit it).
pub struct ClientKey(pub PrivateKeyDer<'static>);

impl Clone for ClientKey {
    fn clone(&self) -> Self {
        ClientKey(self.0.clone_key())
    }
}

impl PartialEq for ClientKey {
    fn eq(&self, other: &Self) -> bool {
        self.0.secret_der() == other.0.secret_der()
    }
}

impl std::fmt::Debug for ClientKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClientKey(<redacted>)")
    }
}

/// The client's certificate chain and key for mutual TLS.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientIdentity {
    pub chain: Vec<CertificateDer<'static>>,
    pub key: ClientKey,
}

/// TLS options as validated; all empty: the defaults (Mozilla roots, TLS 1.2 and 1.3, the
/// URL's host as SNI, no client certificate).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TlsOptions {
    /// `--cacert`: the file the trusted CAs came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cacert: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_cert: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_key: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sni: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<TlsVersion>,
    /// `--tls-resume`: the share of new connections (first connects, reconnections, churn's
    /// cycles) that may offer a stored session, 0 to 1; `None`: none, every handshake full.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resume: Option<f64>,
    /// The CAs of `cacert` (empty: the built-in roots).
    #[serde(skip)]
    pub roots: Vec<CertificateDer<'static>>,
    #[serde(skip)]
    pub identity: Option<ClientIdentity>,
}

impl TlsOptions {
    /// No option given.
    pub fn is_default(&self) -> bool {
        self.cacert.is_none()
            && self.client_cert.is_none()
            && self.sni.is_none()
            && self.version.is_none()
            && self.resume.is_none()
    }
}

/// The TLS settings as given.
#[derive(Debug, Clone, Copy, Default)]
pub struct TlsSettings<'a> {
    pub cacert: Option<&'a Path>,
    pub client_cert: Option<&'a Path>,
    pub client_key: Option<&'a Path>,
    pub sni: Option<&'a str>,
    pub version: Option<&'a str>,
    pub resume: Option<&'a str>,
    pub insecure: bool,
    /// The target is `wss://`.
    pub tls_target: bool,
}

impl TlsSettings<'_> {
    /// Checks the combination and reads every file.
    pub fn validate(&self) -> Result<TlsOptions, ConfigError> {
        let given = [
            ("cacert", self.cacert.is_some()),
            ("client-cert", self.client_cert.is_some()),
            ("client-key", self.client_key.is_some()),
            ("sni", self.sni.is_some()),
            ("tls-version", self.version.is_some()),
            ("tls-resume", self.resume.is_some()),
        ];
        if let Some((setting, _)) = given.iter().find(|(_, set)| *set)
            && !self.tls_target
        {
            return Err(invalid(setting, "only applies to a wss:// URL"));
        }
        if self.insecure && self.cacert.is_some() {
            return Err(invalid(
                "cacert",
                "give either --cacert or --insecure (which trusts any certificate)",
            ));
        }
        let identity = match (self.client_cert, self.client_key) {
            (Some(cert), Some(key)) => {
                Some(ClientIdentity { chain: certificates("client-cert", cert)?, key: private_key(key)? })
            }
            (None, None) => None,
            (Some(_), None) => {
                return Err(invalid("client-cert", "needs --client-key too (mutual TLS takes both)"));
            }
            (None, Some(_)) => {
                return Err(invalid("client-key", "needs --client-cert too (mutual TLS takes both)"));
            }
        };
        let roots = self.cacert.map(|path| certificates("cacert", path)).transpose()?.unwrap_or_default();
        Ok(TlsOptions {
            cacert: self.cacert.map(Path::to_owned),
            client_cert: self.client_cert.map(Path::to_owned),
            client_key: self.client_key.map(Path::to_owned),
            sni: self.sni.map(sni).transpose()?,
            version: self.version.map(version).transpose()?,
            resume: self.resume.map(resume_share).transpose()?,
            roots,
            identity,
        })
    }
}

fn read(setting: &'static str, path: &Path) -> Result<Vec<u8>, ConfigError> {
    crate::input_file::read(path, InputKind::Pem).map_err(|e| match e {
        InputFileError::Read { source, .. } => {
            invalid(setting, format!("cannot read {}: {source}", path.display()))
        }
        too_big => invalid(setting, too_big.to_string()),
    })
}

/// Every certificate of a PEM file; at least one.
fn certificates(setting: &'static str, path: &Path) -> Result<Vec<CertificateDer<'static>>, ConfigError> {
    let pem = read(setting, path)?;
    let bad = |why: String| invalid(setting, format!("{}: {why}", path.display()));
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(format!("not a valid PEM file ({e})")))?;
    if certs.is_empty() {
        return Err(bad("holds no `BEGIN CERTIFICATE` block: give a PEM certificate file".into()));
    }
    if setting == "cacert" {
        let mut store = rustls::RootCertStore::empty();
        for cert in &certs {
            store.add(cert.clone()).map_err(|e| bad(format!("not a usable CA certificate ({e})")))?;
        }
    }
    Ok(certs)
}

/// The first private key of a PEM file (PKCS#8, PKCS#1 or SEC1).
fn private_key(path: &Path) -> Result<ClientKey, ConfigError> {
    let pem = read("client-key", path)?;
    let key = PrivateKeyDer::from_pem_slice(&pem).map_err(|e| {
        invalid(
            "client-key",
            format!("{}: no PEM private key in it ({e}): give the key file", path.display()),
        )
    })?;
    rustls::crypto::ring::sign::any_supported_type(&key)
        .map_err(|e| invalid("client-key", format!("{}: not a usable private key ({e})", path.display())))?;
    Ok(ClientKey(key))
}

fn sni(name: &str) -> Result<String, ConfigError> {
    match ServerName::try_from(name) {
        Ok(ServerName::DnsName(_)) => Ok(name.to_owned()),
        _ => Err(invalid("sni", format!("`{name}` is not a DNS name, e.g. api.example.com"))),
    }
}

fn version(text: &str) -> Result<TlsVersion, ConfigError> {
    match text {
        "1.2" => Ok(TlsVersion::Tls12),
        "1.3" => Ok(TlsVersion::Tls13),
        other => Err(invalid("tls-version", format!("`{other}`: use 1.2 or 1.3"))),
    }
}

/// `--tls-resume`'s share: 0 to 1, as a fraction (`0.5`) or a percentage (`50%`).
fn resume_share(text: &str) -> Result<f64, ConfigError> {
    let trimmed = text.trim();
    let share = match trimmed.strip_suffix('%') {
        Some(percent) => percent.trim().parse::<f64>().map(|p| p / 100.0),
        None => trimmed.parse::<f64>(),
    };
    match share {
        Ok(share) if (0.0..=1.0).contains(&share) => Ok(share),
        _ => Err(invalid(
            "tls-resume",
            format!(
                "`{text}`: give the share of new connections that may resume, from 0 to 1 (e.g. 0.5 \
                 or 50%), or the flag alone for all of them"
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wss<'a>() -> TlsSettings<'a> {
        TlsSettings { tls_target: true, ..TlsSettings::default() }
    }

    #[test]
    fn options_need_a_wss_url_and_mtls_needs_both_files() {
        let error = |settings: TlsSettings| settings.validate().unwrap_err().to_string();
        let plain = TlsSettings { sni: Some("a.example"), ..TlsSettings::default() };
        assert_eq!(error(plain), "--sni: only applies to a wss:// URL");
        let half = TlsSettings { client_cert: Some(Path::new("c.pem")), ..wss() };
        assert_eq!(error(half), "--client-cert: needs --client-key too (mutual TLS takes both)");
        let half = TlsSettings { client_key: Some(Path::new("k.pem")), ..wss() };
        assert_eq!(error(half), "--client-key: needs --client-cert too (mutual TLS takes both)");
        let both = TlsSettings { cacert: Some(Path::new("ca.pem")), insecure: true, ..wss() };
        assert!(error(both).starts_with("--cacert: give either --cacert or --insecure"));
        assert_eq!(
            error(TlsSettings { version: Some("1.1"), ..wss() }),
            "--tls-version: `1.1`: use 1.2 or 1.3"
        );
        assert!(error(TlsSettings { sni: Some("10.0.0.1"), ..wss() }).contains("is not a DNS name"));
        let plain = TlsSettings { resume: Some("1"), ..TlsSettings::default() };
        assert_eq!(error(plain), "--tls-resume: only applies to a wss:// URL");
        for bad in ["1.5", "-0.1", "NaN", "half", "150%", ""] {
            let message = error(TlsSettings { resume: Some(bad), ..wss() });
            assert!(message.starts_with(&format!("--tls-resume: `{bad}`: give the share")), "{message}");
        }
        let share = |text| TlsSettings { resume: Some(text), ..wss() }.validate().unwrap().resume;
        assert_eq!(
            (share("1"), share("0.25"), share("50%"), share("0")),
            (Some(1.0), Some(0.25), Some(0.5), Some(0.0))
        );
        assert_eq!(
            TlsSettings { version: Some("1.2"), ..wss() }.validate().unwrap().version,
            Some(TlsVersion::Tls12)
        );
    }

    #[test]
    fn unreadable_and_invalid_pem_files_are_usage_errors() {
        let not_pem = std::env::temp_dir().join(format!("wsbench-not-pem-{}.txt", std::process::id()));
        std::fs::write(&not_pem, "hello\n").unwrap();
        let error = |settings: TlsSettings| settings.validate().unwrap_err().to_string();
        let missing = TlsSettings { cacert: Some(Path::new("/nonexistent/ca.pem")), ..wss() };
        assert!(error(missing).starts_with("--cacert: cannot read /nonexistent/ca.pem: "));
        let empty = TlsSettings { cacert: Some(&not_pem), ..wss() };
        assert!(error(empty).contains("holds no `BEGIN CERTIFICATE` block"));
        let key = TlsSettings { client_cert: Some(&not_pem), client_key: Some(&not_pem), ..wss() };
        assert!(error(key).starts_with("--client-cert: "));
        std::fs::remove_file(&not_pem).unwrap();
    }
}
