//! The `orders-pg` binary itself: started with only `DATABASE_URL` (and a port-0 `BIND_ADDR`)
//! against an empty database it migrates and serves; SIGTERM stops it cleanly; `WORKER_THREADS`
//! chooses the runtime `/diagnostics` reports; a bad value of any setting stops start-up with a
//! message naming the variable. `WORKER_THREADS` of the test's environment reaches the binary
//! (`WORKER_THREADS=1 cargo nextest run -p orders-pg` runs these on a current-thread runtime).

use orders_core::sample::order_body;
use orders_testkit::TestApp;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

const BINARY: &str = env!("CARGO_BIN_EXE_orders-pg");

/// Runs the binary with `env` (and nothing inherited that could change its settings but
/// `WORKER_THREADS`).
fn command(env: &[(&str, &str)]) -> Command {
    let mut command = Command::new(BINARY);
    command.env_clear().env("PATH", std::env::var("PATH").unwrap_or_default());
    if let Some(threads) = std::env::var_os("WORKER_THREADS") {
        command.env("WORKER_THREADS", threads);
    }
    for (key, value) in env {
        command.env(key, value);
    }
    command
}

#[tokio::test]
async fn starts_on_an_empty_database_with_only_database_url_and_stops_on_sigterm() {
    let url = orders_pg::testing::fresh_database().await;
    // One crate's debug events (a line per request) and the others' from info on.
    let env = [("DATABASE_URL", url.as_str()), ("BIND_ADDR", "127.0.0.1:0"), ("LOG_FORMAT", "json")];
    let mut child = command(&env)
        .env("RUST_LOG", "orders_http=debug,info")
        .stdout(Stdio::piped())
        .spawn()
        .expect("start orders-pg");
    let stdout = child.stdout.take().expect("stdout");
    let (address_tx, address_rx) = std::sync::mpsc::channel();
    let events = std::thread::spawn(move || {
        let mut events = Vec::new();
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let Ok(event) = serde_json::from_str::<serde_json::Value>(&line) else { continue };
            if let Some(address) = event["message"].as_str().and_then(|m| m.strip_prefix("listening on ")) {
                let _ = address_tx.send(address.to_owned());
            }
            events.push(event);
        }
        events
    });
    let address = address_rx.recv_timeout(Duration::from_secs(30)).expect("orders-pg logs its address");
    let app = TestApp::at(format!("http://{address}"));
    assert_eq!(app.get("/readyz").await.status, 200);
    let created = app.post_json("/orders", &order_body(5, [1, 2, 3])).await;
    assert_eq!(created.status, 201, "{}", created.text);
    let fetched = app.get(created.headers["location"].to_str().expect("location")).await;
    assert_eq!(fetched.json, created.json);

    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().expect("kill");
    assert!(status.success());
    let exit = tokio::task::spawn_blocking(move || child.wait()).await.expect("join").expect("wait");
    assert!(exit.success(), "a clean exit after SIGTERM, got {exit:?}");
    let events = events.join().expect("the log reader");
    let requests = events.iter().filter(|e| e["level"] == "DEBUG" && e["message"] == "request").count();
    assert!(requests >= 3, "RUST_LOG=orders_http=debug logs every request: {events:#?}");
}

#[tokio::test]
async fn worker_threads_choose_the_runtime_that_diagnostics_report() {
    let url = orders_pg::testing::fresh_database().await;
    let checks = orders_testkit::runtime::check_worker_threads(BINARY, &[("DATABASE_URL", url)]).await;
    orders_testkit::runtime::assert_worker_threads_applied(&checks);
}

#[test]
fn a_bad_setting_stops_start_up_with_a_message_naming_it() {
    for (variable, value) in [
        ("PG_GIN_FASTUPDATE", "maybe"),
        ("PG_PLAN_CACHE_MODE", "sometimes"),
        ("PG_STATEMENT_MODE", "cached"),
        ("PG_SYNCHRONOUS_COMMIT", "yes"),
        ("PG_POOL_SIZE", "0"),
        ("BIND_ADDR", "not-an-address"),
        ("LOG_FORMAT", "xml"),
        ("REQUEST_TIMEOUT_MS", "soon"),
        ("POOL_TIMEOUT_MS", "0"),
        ("SHUTDOWN_TIMEOUT_MS", "later"),
        ("MAX_BODY_BYTES", "-1"),
        ("HEADER_READ_TIMEOUT_MS", "0"),
        ("IDLE_TIMEOUT_MS", "soon"),
        ("MAX_CONNECTIONS", "0"),
        ("MAX_IN_FLIGHT", "-3"),
        ("RUST_LOG", "info,[="),
        ("WORKER_THREADS", "0"),
        ("WORKER_THREADS", "1025"),
        ("WORKER_THREADS", "many"),
    ] {
        let output = command(&[("DATABASE_URL", "postgres://postgres@127.0.0.1:1/none"), (variable, value)])
            .output()
            .expect("run orders-pg");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{variable}={value} must stop start-up");
        assert!(stderr.contains(variable), "{variable}={value}: {stderr}");
    }
}

#[test]
fn an_invalid_database_url_is_reported_by_name() {
    let output = command(&[("DATABASE_URL", "postgres://[::1")]).output().expect("run orders-pg");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("DATABASE_URL"), "{stderr}");
}

#[test]
fn help_lists_every_setting() {
    let output = command(&[]).arg("--help").output().expect("run orders-pg --help");
    let help = String::from_utf8_lossy(&output.stdout);
    for variable in [
        "BIND_ADDR",
        "RUST_LOG",
        "LOG_FORMAT",
        "REQUEST_TIMEOUT_MS",
        "POOL_TIMEOUT_MS",
        "SHUTDOWN_TIMEOUT_MS",
        "MAX_BODY_BYTES",
        "WORKER_THREADS",
        "HEADER_READ_TIMEOUT_MS",
        "IDLE_TIMEOUT_MS",
        "MAX_CONNECTIONS",
        "MAX_IN_FLIGHT",
        "DATABASE_URL",
        "PG_POOL_SIZE",
        "PG_GIN_FASTUPDATE",
        "PG_PLAN_CACHE_MODE",
        "PG_STATEMENT_MODE",
        "PG_SYNCHRONOUS_COMMIT",
    ] {
        assert!(help.contains(variable), "--help mentions {variable}");
    }
}
