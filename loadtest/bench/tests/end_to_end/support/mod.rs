//! Test support for the bench's end-to-end tests: a new, empty PostgreSQL database per test
//! (`orders_pg::testing`, shared with the services' tests), a MongoDB
//! database of its own that is dropped when the test is done, the `orders-bench` binary run
//! against both, and both services started in-process on loopback ports over those databases.

use mongodb::Client;
use orders_http::HttpConfig;
use orders_mongo::{MongoConfig, MongoStore};
use orders_pg::{PgConfig, PgStore};
use orders_testkit::TestApp;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
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

/// The repository's root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn stack(command: &str) -> Output {
    Command::new("bash").arg(repo().join("infra/local/stack.sh")).arg(command).output().expect("stack.sh")
}

pub fn stack_running() -> bool {
    stack("status").status.success()
}

/// The value of a line `export NAME=value` of `stack.sh env`.
pub fn stack_env(name: &str) -> Option<String> {
    let text = String::from_utf8_lossy(&stack("env").stdout).into_owned();
    let prefix = format!("export {name}=");
    text.lines().find_map(|line| line.strip_prefix(&prefix).map(|v| v.trim_matches('\'').to_owned()))
}

/// `STACK_BUDGET_METHOD`, `STACK_DB_CPUS` and `STACK_DB_MEMORY` of `infra/local/stack.sh env`.
pub fn stack_budgets() -> Vec<String> {
    ["STACK_BUDGET_METHOD", "STACK_DB_CPUS", "STACK_DB_MEMORY"]
        .iter()
        .map(|name| stack_env(name).unwrap_or_else(|| "?".into()))
        .collect()
}

/// Processes whose environment holds `marker` (`ORDERS_BENCH_DEMO=<out>`): what a command left
/// running.
pub fn marked_processes(marker: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().chars().all(|c| c.is_ascii_digit()))
        .filter_map(|e| {
            let environ = std::fs::read(e.path().join("environ")).ok()?;
            let marked = environ.split(|b| *b == 0).any(|var| var == marker.as_bytes());
            let cmdline = std::fs::read_to_string(e.path().join("cmdline")).unwrap_or_default().replace('\0', " ");
            marked.then(|| format!("{}: {cmdline}", e.file_name().to_string_lossy()))
        })
        .collect()
}

/// The service binaries of this build profile beside the orders-bench binary under test, built
/// from this checkout (a run of this crate alone would otherwise drive whatever binaries an older
/// build left there: an orders-pg from before a fix once made the failover test fail as the fix's
/// own bug did). Built as `cargo build --workspace --bins`, CI's first step, so cargo finds
/// nothing to do there (a `-p orders-pg -p orders-mongo` build resolves other features).
pub fn ensure_services(services: &[&str]) {
    let dir = Path::new(env!("CARGO_BIN_EXE_orders-bench")).parent().expect("target folder").to_path_buf();
    let mut cargo = Command::new(env!("CARGO"));
    cargo.args(["build", "-q", "--workspace", "--bins"]).current_dir(repo());
    // What cargo set for this test process (CARGO_MANIFEST_DIR, CARGO_PKG_NAME): left in, ring's
    // build script runs again and ring, rustls and everything above them compile again (64 s in
    // CI's replica stage, and the next nextest compiled them back).
    orders_bench::scaffold::services::without_cargo_run_vars(&mut cargo);
    if dir.file_name().is_some_and(|n| n == "release") {
        cargo.arg("--release");
    }
    let output = cargo.output().expect("run cargo");
    assert!(output.status.success(), "building the services:\n{}", describe(&output));
    for service in services {
        assert!(dir.join(service).is_file(), "{service} was not built in {}", dir.display());
    }
}

/// Drops database `name` on both PostgreSQL servers of the stack and on mongod.
pub async fn drop_databases(name: &str) {
    let admin = pg_server_url().rsplit_once('/').map(|(server, _)| format!("{server}/postgres")).expect("url");
    for admin in std::iter::once(admin).chain(stack_env("STACK_PGH_ADMIN_URL")) {
        if let Ok((client, connection)) = tokio_postgres::connect(&admin, NoTls).await {
            tokio::spawn(connection);
            let _ = client.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await;
        }
    }
    if let Ok(client) = Client::with_uri_str(mongodb_uri()).await {
        let _ = client.database(name).drop().await;
    }
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

/// Whether the replicated stack's URLs are set (as scripts/test.sh sets them); says SKIPPED if not.
pub fn replicas_running() -> bool {
    let set = std::env::var("REPLICA_DATABASE_URL").is_ok_and(|url| !url.is_empty());
    if !set {
        eprintln!(
            "SKIPPED: REPLICA_DATABASE_URL is not set; start the replicas (as root: infra/local/stack.sh start \
             --replicas 3 --only-replicas) and eval \"$(infra/local/stack.sh env)\""
        );
    }
    set
}

/// `orders-bench experiment NAME --quick FLAGS...` on the replicated stack, in a database of its own that is
/// dropped after; checks it succeeded, left no process and left the stacks running. Its folder.
pub async fn replicated_experiment(name: &str, flags: &[&str]) -> PathBuf {
    assert!(stack_running(), "the local stack must run (bash infra/local/stack.sh start), as for every database test");
    ensure_services(&["orders-pg", "orders-mongo"]);
    let out = scratch_dir(&format!("experiment_{name}"));
    let db = format!("exp_test_{}_{name}", std::process::id());
    let output = tokio::task::spawn_blocking({
        let (out, db, name) = (out.clone(), db.clone(), name.to_owned());
        let flags: Vec<String> = flags.iter().map(|f| f.to_string()).collect();
        move || {
            std::process::Command::new(env!("CARGO_BIN_EXE_orders-bench"))
                .args(["experiment", &name, "--quick", "--no-build", "--db-name", &db])
                .args(&flags)
                .arg("--out")
                .arg(&out)
                .current_dir(repo())
                .output()
                .expect("run orders-bench experiment")
        }
    })
    .await
    .expect("join");
    drop_databases(&db).await;
    assert!(output.status.success(), "{}", describe(&output));
    let left = marked_processes(&format!("ORDERS_BENCH_EXPERIMENT={}", out.display()));
    assert!(left.is_empty(), "processes the experiment started are still running: {left:#?}");
    assert!(replicas_running() && stack_running(), "what ran before the experiment runs after it");
    out
}
