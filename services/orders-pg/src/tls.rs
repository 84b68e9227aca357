//! TLS to PostgreSQL as a setting of `DATABASE_URL`, in libpq's words: `sslmode` (`disable`,
//! `prefer`, `require`, `verify-ca`, `verify-full`) and `sslrootcert=<CA file>`. tokio-postgres
//! knows only the first three modes and no `sslrootcert`, so both are taken out of the URL here and
//! become a rustls connector (tokio-postgres-rustls over the rustls the MongoDB driver already
//! compiles; no OpenSSL). No `sslmode`, or `disable`, gives no connector: plaintext, as before.
//! As in libpq: `verify-full` checks the chain and the host name, `verify-ca` the chain only,
//! `require` with a CA file is `verify-ca`, `prefer` and `require` without one encrypt but trust
//! any certificate (they stop eavesdropping, not a man in the middle).

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_postgres_rustls::MakeRustlsConnect;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    fn parse(value: &str) -> Result<Self, String> {
        Ok(match value {
            "disable" => Self::Disable,
            "prefer" => Self::Prefer,
            "require" => Self::Require,
            "verify-ca" => Self::VerifyCa,
            "verify-full" => Self::VerifyFull,
            _ => {
                return Err(format!(
                    "DATABASE_URL's sslmode must be disable, prefer, require, verify-ca or verify-full, not {value:?}"
                ));
            }
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Disable => "disable",
            Self::Prefer => "prefer",
            Self::Require => "require",
            Self::VerifyCa => "verify-ca",
            Self::VerifyFull => "verify-full",
        }
    }

    /// The driver's own mode: whether it asks the server for TLS and whether it may do without.
    pub fn driver_mode(mode: Option<Self>) -> tokio_postgres::config::SslMode {
        use tokio_postgres::config::SslMode as Driver;
        match mode {
            None | Some(Self::Disable) => Driver::Disable,
            Some(Self::Prefer) => Driver::Prefer,
            Some(Self::Require | Self::VerifyCa | Self::VerifyFull) => Driver::Require,
        }
    }
}

/// The TLS part of `DATABASE_URL`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsSetting {
    pub mode: Option<SslMode>,
    pub root_cert: Option<PathBuf>,
}

impl TlsSetting {
    /// For error messages: `sslmode=verify-full sslrootcert=/etc/ca.crt` (no password is in it).
    pub fn describe(&self) -> String {
        let mode = self.mode.map_or("without sslmode, so no TLS".to_owned(), |mode| format!("sslmode={}", mode.name()));
        match &self.root_cert {
            Some(path) => format!("{mode} sslrootcert={}", path.display()),
            None => mode,
        }
    }
}

/// `DATABASE_URL` without `sslmode` and `sslrootcert` (for the driver), and the setting they made.
/// Both forms are read: a URL's query string and `key=value` words.
pub fn split_url(url: &str) -> Result<(String, TlsSetting), String> {
    let mut setting = TlsSetting::default();
    let mut take = |key: &str, value: String| -> Result<bool, String> {
        match key {
            "sslmode" => setting.mode = Some(SslMode::parse(&value)?),
            "sslrootcert" => setting.root_cert = Some(PathBuf::from(value)),
            _ => return Ok(false),
        }
        Ok(true)
    };
    let rest = if url.contains("://") {
        let Some((base, query)) = url.split_once('?') else { return Ok((url.to_owned(), setting)) };
        let mut kept = Vec::new();
        for pair in query.split('&') {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            if !take(key, percent_decode(value)?)? {
                kept.push(pair);
            }
        }
        if kept.is_empty() { base.to_owned() } else { format!("{base}?{}", kept.join("&")) }
    } else {
        let mut kept = Vec::new();
        for word in url.split_whitespace() {
            let (key, value) = word.split_once('=').unwrap_or((word, ""));
            if !take(key, value.to_owned())? {
                kept.push(word);
            }
        }
        kept.join(" ")
    };
    Ok((rest, setting))
}

fn percent_decode(value: &str) -> Result<String, String> {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = value.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(h, 16).ok());
            out.push(hex.ok_or("DATABASE_URL has a malformed %-escape in its TLS settings")?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "DATABASE_URL's TLS settings are not UTF-8".to_owned())
}

/// The connector `setting` asks for; `None` when it asks for no TLS.
pub fn connector(setting: &TlsSetting) -> Result<Option<MakeRustlsConnect>, String> {
    let mode = match setting.mode {
        None | Some(SslMode::Disable) => return Ok(None),
        Some(mode) => mode,
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let roots = setting.root_cert.as_deref().map(read_roots).transpose()?;
    let webpki = |roots: RootCertStore| {
        WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .build()
            .map_err(|e| format!("DATABASE_URL's sslrootcert: {e}"))
    };
    let verifier: Arc<dyn ServerCertVerifier> = match (mode, roots) {
        (SslMode::VerifyFull, Some(roots)) => webpki(roots)?,
        (SslMode::VerifyCa | SslMode::Require, Some(roots)) => Arc::new(ChainOnly(webpki(roots)?)),
        (SslMode::VerifyCa | SslMode::VerifyFull, None) => {
            return Err(format!("DATABASE_URL's sslmode={} needs sslrootcert=<CA file>", mode.name()));
        }
        _ => Arc::new(AnyCertificate(provider.signature_verification_algorithms)),
    };
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS for DATABASE_URL: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(Some(MakeRustlsConnect::new(config)))
}

/// The CA certificates of `path` (PEM), named by the setting when they cannot be read.
fn read_roots(path: &Path) -> Result<RootCertStore, String> {
    let what = || format!("DATABASE_URL's sslrootcert ({})", path.display());
    std::fs::metadata(path).map_err(|e| format!("{}: {e}", what()))?;
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(path).map_err(|e| format!("{}: {e}", what()))? {
        let cert = cert.map_err(|e| format!("{}: not PEM certificates: {e}", what()))?;
        roots.add(cert).map_err(|e| format!("{}: {e}", what()))?;
    }
    if roots.is_empty() {
        return Err(format!("{}: no certificate in it", what()));
    }
    Ok(roots)
}

/// `verify-ca`: the chain must lead to the CA file; the name in the certificate is not checked
/// (webpki checks the chain first, so a wrong name means the chain was good).
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.0.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// `prefer` and `require` without a CA file: any certificate, but the handshake's signatures are
/// still checked against it (the session is encrypted to whoever holds its key).
#[derive(Debug)]
struct AnyCertificate(WebPkiSupportedAlgorithms);

impl ServerCertVerifier for AnyCertificate {
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
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sslmode_and_sslrootcert_are_taken_out_of_the_url() {
        let (rest, setting) =
            split_url("postgres://u:p@h:5/db?application_name=x&sslmode=verify-full&sslrootcert=%2Fetc%2Fca.crt")
                .expect("valid");
        assert_eq!(rest, "postgres://u:p@h:5/db?application_name=x");
        assert_eq!(setting.mode, Some(SslMode::VerifyFull));
        assert_eq!(setting.root_cert.as_deref(), Some(Path::new("/etc/ca.crt")));
        let (rest, setting) = split_url("host=h sslmode=require dbname=d").expect("valid");
        assert_eq!((rest.as_str(), setting.mode), ("host=h dbname=d", Some(SslMode::Require)));
        let (rest, setting) = split_url("postgres://h/db").expect("valid");
        assert_eq!((rest.as_str(), setting), ("postgres://h/db", TlsSetting::default()));
    }

    #[test]
    fn an_unknown_sslmode_names_the_setting() {
        let error = split_url("postgres://u:hunter2@h/db?sslmode=maybe").expect_err("invalid");
        assert!(error.contains("sslmode") && error.contains("verify-full"), "{error}");
        assert!(!error.contains("hunter2"), "{error}");
    }

    #[test]
    fn no_sslmode_is_no_connector_and_verification_needs_a_ca_file() {
        assert!(connector(&TlsSetting::default()).expect("plaintext").is_none());
        let disabled = TlsSetting { mode: Some(SslMode::Disable), root_cert: None };
        assert!(connector(&disabled).expect("plaintext").is_none());
        let without_ca = TlsSetting { mode: Some(SslMode::VerifyFull), root_cert: None };
        let error = connector(&without_ca).err().expect("needs a CA");
        assert!(error.contains("sslrootcert"), "{error}");
        let missing = TlsSetting { mode: Some(SslMode::VerifyCa), root_cert: Some("/nonexistent/ca.crt".into()) };
        let error = connector(&missing).err().expect("unreadable");
        assert!(error.contains("sslrootcert (/nonexistent/ca.crt)"), "{error}");
    }
}
