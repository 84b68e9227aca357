//! TLS between the service and MongoDB: `tls=true` (or `ssl=true`) and `tlsCAFile=<CA file>` in
//! `MONGODB_URI`, which the driver honours itself (rustls, its `rustls-tls` feature). This module
//! says what `/diagnostics` reports about it and how start-up names a refused certificate. How we
//! know a connection is encrypted: the driver opens every connection of a `tls=true` client with
//! a TLS handshake and has no plaintext fallback, so this client's connections are encrypted or do
//! not exist; the server confirms it with its `tlsMode` (`requireTLS`: it accepts nothing else)
//! and counts the TLS connections it accepted by version (`serverStatus.transportSecurity`).

use crate::section::{Section, section};
use mongodb::bson::{Bson, Document};
use mongodb::options::{ClientOptions, Tls as DriverTls};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The TLS this client was configured with (from `MONGODB_URI`), kept for reports and errors.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientTls {
    pub enabled: bool,
    pub ca_file: Option<String>,
    /// `tlsInsecure` or `tlsAllowInvalidCertificates`: encrypted, not verified.
    pub unverified: bool,
}

impl ClientTls {
    pub fn from_options(options: &ClientOptions) -> Self {
        match &options.tls {
            Some(DriverTls::Enabled(tls)) => Self {
                enabled: true,
                ca_file: tls.ca_file_path.as_ref().map(|path| path.display().to_string()),
                unverified: tls.allow_invalid_certificates == Some(true),
            },
            _ => Self::default(),
        }
    }

    /// For error messages: `tls=true tlsCAFile=/etc/ca.crt` (no password is in it).
    pub fn describe(&self) -> String {
        match (&self.enabled, &self.ca_file) {
            (false, _) => "without tls=true (no TLS)".to_owned(),
            (true, Some(file)) => format!("tls=true tlsCAFile={file}"),
            (true, None) => "tls=true (system CAs)".to_owned(),
        }
    }
}

/// Whether the driver's error is a server certificate that failed verification (rustls's words).
pub fn is_certificate_refusal(error: &mongodb::error::Error) -> bool {
    crate::error::describe(error).contains("invalid peer certificate")
}

/// The `tls` section of `/diagnostics`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Tls {
    /// Whether this client's connections are encrypted: `tls=true` in `MONGODB_URI`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub encrypted: Option<bool>,
    /// Whether the server's certificate is verified (false with `tlsInsecure` and its kin).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verified: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<String>,
    /// The server's `tlsMode`: `requireTLS`, `preferTLS`, `allowTLS` or `disabled`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_tls_mode: Option<Section<String>>,
    /// TLS connections the server accepted since it started, by version (`transportSecurity`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_tls_connections: Option<Section<Value>>,
}

/// The section from the client's setting, `getParameter` and `serverStatus` as read.
pub fn report(client: &ClientTls, parameter: &Result<Document, String>, status: &Result<Document, String>) -> Tls {
    let mode = |p: &Document| p.get_str("tlsMode").unwrap_or("unknown").to_owned();
    let connections =
        |s: &Document| s.get("transportSecurity").cloned().map_or(Value::Null, Bson::into_relaxed_extjson);
    Tls {
        encrypted: Some(client.enabled),
        verified: Some(client.enabled && !client.unverified),
        ca_file: client.ca_file.clone(),
        server_tls_mode: Some(section(parameter, mode)),
        server_tls_connections: Some(section(status, connections)),
    }
}
