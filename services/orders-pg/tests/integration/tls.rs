//! TLS to PostgreSQL on a real server that accepts TLS only (issue 45, point 5; `hostssl` lines
//! alone in its `pg_hba.conf`): the service binary started with `sslmode=verify-full` and the CA
//! serves, and `pg_stat_ssl` says each of its sessions is encrypted (read as `/diagnostics` reads
//! it: that server is Debian's PostgreSQL 15, where the report's generic plan cannot be had, and
//! the report itself says `ssl: false` on the stack's plaintext server); a CA file that did not
//! sign the server's certificate, a certificate for another name under `verify-full`, no TLS, an
//! unknown `sslmode` and an unreadable CA file each stop start-up with a message naming the
//! setting, no panic and not the URL's password; `verify-ca` (and `require` without a CA file)
//! accepts the other name. Shared with orders-pg-hybrid (`SERVICE`). Skipped, saying so, without
//! the openssl command.

use super::{SERVICE, SERVICE_BINARY};
use orders_core::OrderStore;
use orders_core::sample::order_body;
use orders_pg::PgConfig;
use orders_pg::testing::fresh_database;
use orders_testkit::TestApp;
use orders_testkit::faults::{PrivatePostgres, ServiceProcess};
use orders_testkit::tls::TestCerts;
use std::process::Command;

/// A password the server never asks for (trust): it must not appear in any message.
const PASSWORD: &str = "hunter2";

fn url(server: &PrivatePostgres, query: &str) -> String {
    format!("postgres://postgres:{PASSWORD}@127.0.0.1:{}/postgres?{query}", server.port)
}

fn verify(mode: &str, certs: &TestCerts, ca: &str) -> String {
    format!("sslmode={mode}&sslrootcert={}", certs.file(ca).display())
}

/// The service started against `database_url` must stop: its output, checked for a panic and for
/// the password.
fn refused(database_url: &str) -> String {
    let output = Command::new(SERVICE_BINARY)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("BIND_ADDR", "127.0.0.1:0")
        .env("DATABASE_URL", database_url)
        .output()
        .expect("run the service");
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(!output.status.success(), "{database_url} must stop start-up: {text}");
    assert!(!text.contains("panicked"), "{text}");
    assert!(!text.contains(PASSWORD), "the password is echoed: {text}");
    eprintln!("refused as it should be: {}", text.trim_end());
    text
}

/// The service serves over TLS, and the server says each of its sessions is encrypted.
async fn assert_encrypted(database_url: String) {
    let service = ServiceProcess::start(SERVICE_BINARY, &[("DATABASE_URL", database_url.clone())]);
    let app = TestApp::at(service.base_url());
    let created = app.post_json("/orders", &order_body(7, [1, 2, 3])).await;
    assert_eq!(created.status, 201, "{}", created.text);

    let reader = orders_pg::pool::connection_config(&PgConfig::with_url(database_url), "orders-tls-test").expect("URL");
    let client = orders_pg::pool::connect_with_retry(&reader).await.expect("connect with the same setting");
    let own = orders_pg::diagnostics::connection_tls(&client).await.expect("pg_stat_ssl");
    assert_eq!(own.ssl, Some(true), "/diagnostics' reader on this session: {own:?}");
    assert!(own.version.as_deref().is_some_and(|v| v.starts_with("TLSv1.")), "{own:?}");
    let sessions = client
        .query(
            "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.application_name = $1",
            &[&SERVICE],
        )
        .await
        .expect("pg_stat_ssl of the service's sessions");
    assert!(!sessions.is_empty(), "the service holds a session");
    assert!(sessions.iter().all(|row| row.get::<_, bool>(0)), "every session of {SERVICE} is encrypted");
}

#[tokio::test]
async fn without_sslmode_the_session_is_plaintext_and_diagnostics_says_so() {
    let store = crate::connect_store(&PgConfig::with_url(fresh_database().await)).await;
    let report = store.diagnostics().await.expect("diagnostics");
    assert_eq!(report["tls"]["ssl"], false, "{}", report["tls"]);
}

#[tokio::test]
async fn verify_full_with_the_ca_connects_and_pg_stat_ssl_says_encrypted() {
    let Some(certs) = TestCerts::make() else { return };
    let server = certs.postgres("server");
    assert_encrypted(url(&server, &verify("verify-full", &certs, "ca.crt"))).await;
}

#[test]
fn a_wrong_ca_no_tls_a_bad_sslmode_and_an_unreadable_ca_are_refused_by_name() {
    let Some(certs) = TestCerts::make() else { return };
    let server = certs.postgres("server");

    let text = refused(&url(&server, &verify("verify-full", &certs, "other-ca.crt")));
    assert!(text.contains("TLS to PostgreSQL failed") && text.contains("sslrootcert="), "{text}");
    assert!(text.contains("UnknownIssuer"), "the certificate is refused for its issuer: {text}");

    for query in ["sslmode=disable", "application_name=plain"] {
        let text = refused(&url(&server, query));
        assert!(text.contains("no encryption"), "the server refuses a session without TLS: {text}");
        let named = text.contains("DATABASE_URL sslmode=disable") || text.contains("DATABASE_URL without sslmode");
        assert!(named, "the message names the setting: {text}");
    }

    let text = refused(&url(&server, "sslmode=maybe"));
    assert!(text.contains("DATABASE_URL") && text.contains("sslmode") && text.contains("verify-full"), "{text}");

    let text = refused(&url(&server, "sslmode=verify-full&sslrootcert=/nonexistent/ca.crt"));
    assert!(text.contains("sslrootcert (/nonexistent/ca.crt)"), "{text}");
}

#[tokio::test]
async fn verify_full_checks_the_host_name_and_verify_ca_and_require_do_not() {
    let Some(certs) = TestCerts::make() else { return };
    let server = certs.postgres("wrong-name");
    let text = refused(&url(&server, &verify("verify-full", &certs, "ca.crt")));
    assert!(text.contains("TLS to PostgreSQL failed") && text.contains("not valid for name"), "{text}");
    assert_encrypted(url(&server, &verify("verify-ca", &certs, "ca.crt"))).await;
    // `require` without a CA file encrypts and checks no certificate at all.
    assert_encrypted(url(&server, "sslmode=require")).await;
}
