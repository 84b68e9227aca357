//! TLS to MongoDB on a real mongod that requires it (`--tlsMode requireTLS`; issue 45, point 5):
//! the service binary started with `tls=true&tlsCAFile=<CA>` in `MONGODB_URI` serves, and its
//! `/diagnostics` says its connections are encrypted and verified, that the server requires TLS
//! (`tlsMode`) and that it counted TLS connections; a CA file that did not sign the server's
//! certificate stops start-up at once (not after the 30 s wait for a server) with a message naming
//! the setting, and so does an unreadable CA file, each with no panic and not the URI's password.
//! Skipped, saying so, without the openssl command.

use orders_core::sample::order_body;
use orders_testkit::TestApp;
use orders_testkit::faults::{PrivateMongo, ServiceProcess};
use orders_testkit::tls::TestCerts;
use std::process::Command;
use std::time::{Duration, Instant};

const BINARY: &str = env!("CARGO_BIN_EXE_orders-mongo");
const PASSWORD: &str = "hunter2";

fn uri(server: &PrivateMongo, certs: &TestCerts, ca: &str) -> String {
    format!("mongodb://127.0.0.1:{}/?tls=true&tlsCAFile={}", server.port, certs.file(ca).display())
}

/// The service started with `MONGODB_URI=uri` must stop: its output, checked for a panic and for
/// the password.
fn refused(uri: &str) -> (String, Duration) {
    let started = Instant::now();
    let output = Command::new(BINARY)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("BIND_ADDR", "127.0.0.1:0")
        .env("MONGODB_URI", uri)
        .env("MONGODB_DB", "orders")
        .output()
        .expect("run orders-mongo");
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(!output.status.success(), "{uri} must stop start-up: {text}");
    assert!(!text.contains("panicked"), "{text}");
    assert!(!text.contains(PASSWORD), "the password is echoed: {text}");
    eprintln!("refused as it should be: {}", text.trim_end());
    (text, started.elapsed())
}

#[tokio::test]
async fn tls_true_with_the_ca_is_encrypted_and_diagnostics_says_so() {
    let Some(certs) = TestCerts::make() else { return };
    let server = certs.mongo();
    let env = [("MONGODB_URI", uri(&server, &certs, "ca.crt")), ("MONGODB_DB", "orders".to_owned())];
    let service = ServiceProcess::start(BINARY, &env);
    let app = TestApp::at(service.base_url());
    let created = app.post_json("/orders", &order_body(7, [1, 2, 3])).await;
    assert_eq!(created.status, 201, "{}", created.text);
    let diagnostics = app.get("/diagnostics").await;
    assert_eq!(diagnostics.status, 200, "{}", diagnostics.text);
    let tls = &diagnostics.json["tls"];
    eprintln!("/diagnostics tls: {tls}");
    assert_eq!((&tls["encrypted"], &tls["verified"]), (&true.into(), &true.into()), "{tls}");
    assert_eq!(tls["server_tls_mode"], "requireTLS", "the server accepts nothing else: {tls}");
    let counted: u64 =
        tls["server_tls_connections"].as_object().into_iter().flatten().filter_map(|(_, n)| n.as_u64()).sum();
    assert!(counted > 0, "the server counted TLS connections: {tls}");
}

#[test]
fn a_wrong_ca_and_an_unreadable_ca_file_stop_start_up_by_name() {
    let Some(certs) = TestCerts::make() else { return };
    let server = certs.mongo();
    let with_password = |uri: String| uri.replacen("mongodb://", &format!("mongodb://orders:{PASSWORD}@"), 1);

    let (text, took) = refused(&with_password(uri(&server, &certs, "other-ca.crt")));
    assert!(text.contains("TLS to MongoDB failed") && text.contains("tlsCAFile="), "{text}");
    assert!(text.contains("UnknownIssuer"), "the certificate is refused for its issuer: {text}");
    assert!(took < Duration::from_secs(20), "a refused certificate is not waited out: {took:?}");

    let missing =
        format!("mongodb://orders:{PASSWORD}@127.0.0.1:{}/?tls=true&tlsCAFile=/nonexistent/ca.crt", server.port);
    let (text, _) = refused(&missing);
    assert!(text.contains("MONGODB_URI") && text.contains("/nonexistent/ca.crt"), "{text}");
}
