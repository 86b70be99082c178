//! The certificate of a comparison's rows over a transport that is always TLS (QUIC): made
//! once per comparison for `127.0.0.1` and `localhost`, written as PEM files into a folder
//! of its own (only its owner may read the key) that goes when the comparison ends. The
//! servers of those rows serve it (`fleet::TLS_CERT_ENV`) and the client trusts it alone
//! (`--cacert`), so every handshake is verified as against a real server's, not waved through
//! with `--insecure`.

use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::PathBuf;

use crate::fleet::{TLS_CERT_ENV, TLS_KEY_ENV};

/// The names the certificate is for: where compare's servers listen.
const NAMES: [&str; 2] = ["127.0.0.1", "localhost"];

/// A self-signed certificate and its key as files, removed on drop.
#[derive(Debug)]
pub struct Certificate {
    dir: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl Certificate {
    /// A new certificate in a new folder under the system's temporary one.
    pub fn make() -> io::Result<Certificate> {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        let dir = std::env::temp_dir().join(format!(
            "wsbench-compare-tls-{}-{}",
            std::process::id(),
            now.subsec_nanos()
        ));
        std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
        let certificate = Certificate { cert: dir.join("cert.pem"), key: dir.join("key.pem"), dir };
        let generated = rcgen::generate_simple_self_signed(NAMES.map(str::to_owned).to_vec())
            .map_err(io::Error::other)?;
        write_new(&certificate.cert, generated.cert.pem().as_bytes())?;
        write_new(&certificate.key, generated.signing_key.serialize_pem().as_bytes())?;
        Ok(certificate)
    }

    /// The environment a server is started with to serve it.
    pub fn env(&self) -> [(String, String); 2] {
        [
            (TLS_CERT_ENV.to_owned(), self.cert.display().to_string()),
            (TLS_KEY_ENV.to_owned(), self.key.display().to_string()),
        ]
    }
}

impl Drop for Certificate {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Writes a new file that only its owner may read.
fn write_new(path: &std::path::Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write as _;
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?;
    file.write_all(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_files_are_pem_the_key_private_and_all_gone_on_drop() {
        let certificate = Certificate::make().unwrap();
        let cert = std::fs::read_to_string(&certificate.cert).unwrap();
        assert!(cert.starts_with("-----BEGIN CERTIFICATE-----"), "{cert}");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&certificate.key).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "the key is its owner's alone: {mode:o}");
        let env = certificate.env();
        assert_eq!(env[0], (TLS_CERT_ENV.to_owned(), certificate.cert.display().to_string()));
        let dir = certificate.cert.parent().unwrap().to_owned();
        drop(certificate);
        assert!(!dir.exists());
    }
}
