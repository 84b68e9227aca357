//! Test support for the seeder's end-to-end tests: a new, empty PostgreSQL database per test
//! (`orders_pg::testing`, shared with the services' tests), a MongoDB
//! database of its own that is dropped when the test is done, the `orders-bench` binary run
//! against both, and both services started in-process on loopback ports over those databases.

#![allow(dead_code)] // each test file uses its own part of this module

use mongodb::Client;
use orders_http::HttpConfig;
use orders_mongo::{MongoConfig, MongoStore};
use orders_pg::{PgConfig, PgStore};
use orders_testkit::TestApp;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};
use tokio_postgres::NoTls;

/// The PostgreSQL server the tests use: `DATABASE_URL` (as `infra/local/stack.sh env` prints it).
pub fn pg_server_url() -> String {
    orders_pg::testing::server_url()
}

pub fn mongodb_uri() -> String {
    std::env::var("MONGODB_URI").unwrap_or_else(|_| "mongodb://127.0.0.1:57017".into())
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

fn unique_suffix() -> String {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    format!("{}_{}_{nanos}", std::process::id(), COUNTER.fetch_add(1, Ordering::SeqCst))
}

/// Creates an empty PostgreSQL database and returns its URL (the one helper every crate's tests
/// share: `orders_pg::testing`, which also drops those of test processes that have exited).
pub async fn fresh_pg_database() -> String {
    orders_pg::testing::fresh_database().await
}

/// A client of the test's PostgreSQL database.
pub async fn pg_client(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, NoTls).await.expect("connect to the test database");
    tokio::spawn(connection);
    client
}

/// A MongoDB database of the test's own, dropped when this value is.
pub struct MongoDatabase {
    pub name: String,
}

impl MongoDatabase {
    pub fn fresh() -> Self {
        Self { name: format!("bench_test_{}", unique_suffix()) }
    }

    pub async fn client(&self) -> Client {
        Client::with_uri_str(mongodb_uri()).await.expect("MongoDB client")
    }
}

impl Drop for MongoDatabase {
    fn drop(&mut self) {
        // Drop cannot await: use a thread with a runtime and a client of its own.
        let name = self.name.clone();
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
            runtime.block_on(async { Client::with_uri_str(mongodb_uri()).await?.database(&name).drop().await })
        });
        let _ = dropped.join();
    }
}

/// An empty folder for this test's files (manifest, k6 summary).
pub fn scratch_dir(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{test}_{}", unique_suffix()));
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir
}

/// Runs `orders-bench seed` with `args` against these databases, writing `manifest`.
pub fn seed(args: &[&str], pg_url: &str, mongo: &MongoDatabase, manifest: &Path) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_orders-bench"))
        .arg("seed")
        .args(args)
        .arg("--database-url")
        .arg(pg_url)
        .arg("--mongodb-uri")
        .arg(mongodb_uri())
        .arg("--mongodb-db")
        .arg(&mongo.name)
        .arg("--manifest")
        .arg(manifest)
        .output()
        .expect("run orders-bench")
}

pub fn describe(output: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

pub fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// Both services, in this process, over the two test databases (service defaults otherwise).
pub async fn spawn_services(pg_url: &str, mongo: &MongoDatabase) -> (TestApp, TestApp) {
    let pg_store = PgStore::connect(&PgConfig::with_url(pg_url)).await.expect("orders-pg store");
    let mongo_store =
        MongoStore::connect(&MongoConfig::new(mongodb_uri(), &mongo.name)).await.expect("orders-mongo store");
    let pg = TestApp::spawn(pg_store, HttpConfig::for_tests()).await;
    let mongo = TestApp::spawn(mongo_store, HttpConfig::for_tests()).await;
    (pg, mongo)
}

/// `STACK_BUDGET_METHOD`, `STACK_DB_CPUS` and `STACK_DB_MEMORY` of `infra/local/stack.sh env`.
pub fn stack_budgets() -> Vec<String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../infra/local/stack.sh");
    let output = std::process::Command::new("bash").arg(script).arg("env").output().expect("stack.sh");
    let text = String::from_utf8_lossy(&output.stdout).to_string();
    ["STACK_BUDGET_METHOD=", "STACK_DB_CPUS=", "STACK_DB_MEMORY="]
        .iter()
        .map(|name| text.lines().find_map(|l| l.strip_prefix("export ")?.strip_prefix(name)).unwrap_or("?").to_owned())
        .collect()
}

/// The k6 binary: `$K6`, else the local stack's `.venv/bin/k6`, else `k6` on the `PATH`.
pub fn k6_binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("K6").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        assert!(path.is_file(), "K6={} is set but is not a file", path.display());
        return Some(path);
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/k6");
    if venv.is_file() {
        return Some(venv);
    }
    std::env::var_os("PATH")
        .and_then(|paths| std::env::split_paths(&paths).map(|dir| dir.join("k6")).find(|p| p.is_file()))
}

pub mod stub;
