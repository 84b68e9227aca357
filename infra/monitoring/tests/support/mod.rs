//! What the monitoring tests need around real processes: the workspace's binaries (built once
//! with the workspace's features), free loopback ports, child processes that end with the test, a
//! PostgreSQL and a MongoDB database of the test's own on the local stack, a client of
//! Prometheus' HTTP API, and the metric names a PromQL expression reads (`promql`).

#![allow(dead_code)] // each test file uses its own part of this module

pub mod prometheus;
pub mod promql;

use std::net::TcpStream;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The project's Grafana dashboard (`infra/monitoring/grafana/dashboards/orders.json`).
pub fn dashboard() -> serde_json::Value {
    let path = repo().join("infra/monitoring/grafana/dashboards/orders.json");
    serde_json::from_str(&std::fs::read_to_string(&path).expect("dashboard")).expect("dashboard JSON")
}

/// Every query of the panels whose row's title (`""` before the first row) `in_row` accepts:
/// (panel title, legend, expression).
pub fn panel_queries(dashboard: &serde_json::Value, in_row: impl Fn(&str) -> bool) -> Vec<(String, String, String)> {
    let mut queries = Vec::new();
    let mut row = "";
    for panel in dashboard["panels"].as_array().expect("panels") {
        if panel["type"] == "row" {
            row = panel["title"].as_str().unwrap_or_default();
            continue;
        }
        if !in_row(row) {
            continue;
        }
        for target in panel["targets"].as_array().into_iter().flatten() {
            queries.push((
                panel["title"].as_str().unwrap_or("?").to_owned(),
                target["legendFormat"].as_str().unwrap_or("").to_owned(),
                target["expr"].as_str().expect("expr").to_owned(),
            ));
        }
    }
    queries
}

/// The repository's root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("repository root")
}

/// The folder of this test's binaries (`target/debug`, or the profile it was built with), after
/// `cargo build --workspace --bins --tests` there: the services and `orders-bench` are other
/// packages' binaries, and building the workspace's binaries and tests resolves the same features
/// `cargo nextest run --workspace` compiled with, so this takes a second or two when nothing
/// changed (and rebuilds a stale binary when something did).
pub fn workspace_binaries() -> PathBuf {
    let exporter = PathBuf::from(env!("CARGO_BIN_EXE_mongo-serverstatus-exporter"));
    let dir = exporter.parent().expect("binary folder").to_path_buf();
    let mut cargo = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cargo.current_dir(repo()).args(["build", "--quiet", "--workspace", "--bins", "--tests"]);
    // What cargo set for this test process: left in, CARGO_MANIFEST_DIR alone makes ring's build
    // script (rerun-if-env-changed) and everything above it compile again, twice per change.
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        let set_for_tests =
            ["CARGO_MANIFEST_", "CARGO_PKG_", "CARGO_BIN_", "CARGO_CRATE_", "CARGO_PRIMARY_", "CARGO_TARGET_TMPDIR"]
                .iter()
                .any(|prefix| name.starts_with(prefix));
        if set_for_tests || name == "OUT_DIR" {
            cargo.env_remove(name.as_ref());
        }
    }
    if dir.file_name().is_some_and(|name| name == "release") {
        cargo.arg("--release");
    }
    let status = cargo.status().expect("run cargo build");
    assert!(status.success(), "cargo build --workspace --bins --tests failed");
    for name in ["orders-pg", "orders-mongo", "orders-bench", "mongo-serverstatus-exporter"] {
        assert!(dir.join(name).is_file(), "{} was not built", dir.join(name).display());
    }
    dir
}

/// A loopback port nobody listens on right now.
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    listener.local_addr().expect("local address").port()
}

/// Waits until something accepts connections on `port`.
pub fn wait_for_port(port: u16, what: &str) {
    let started = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(started.elapsed() < Duration::from_secs(30), "{what} did not listen on 127.0.0.1:{port} within 30 s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A child process (in a process group of its own) that is stopped when this value is dropped.
pub struct Running {
    pub name: String,
    child: Child,
}

impl Running {
    /// Starts `command` with its output in `log`.
    pub fn start(name: &str, command: &mut Command, log: &Path) -> Self {
        let file = std::fs::File::create(log).expect("log file");
        let err = file.try_clone().expect("log file");
        let child = command
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(err)
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {name}: {e}"));
        Self { name: name.into(), child }
    }

    pub fn stop(mut self) {
        self.terminate();
    }

    fn terminate(&mut self) {
        // SAFETY: a signal to the process group this test started.
        unsafe { libc::kill(-(self.child.id() as i32), libc::SIGTERM) };
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.terminate();
        }
    }
}

/// Seconds since the Unix epoch, as Prometheus' API takes them.
pub fn unix_now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).expect("clock after 1970").as_secs_f64()
}

pub fn mongodb_uri() -> String {
    std::env::var("MONGODB_URI").unwrap_or_else(|_| "mongodb://127.0.0.1:57017".into())
}

/// The server part of `DATABASE_URL` with another database.
fn pg_url_for(database: &str) -> String {
    let url = orders_pg::testing::server_url();
    let base = url.split('?').next().unwrap_or(&url).to_owned();
    let (server, _) = base.rsplit_once('/').expect("DATABASE_URL has a database name");
    format!("{server}/{database}")
}

/// The hybrid layout's PostgreSQL server (`HYBRID_DATABASE_URL`, as `stack.sh env` prints it) with
/// another database.
fn hybrid_url_for(database: &str) -> String {
    let url =
        std::env::var("HYBRID_DATABASE_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:55433/orders".into());
    let (server, _) =
        url.split('?').next().unwrap_or(&url).rsplit_once('/').expect("HYBRID_DATABASE_URL has a database name");
    format!("{server}/{database}")
}

/// A PostgreSQL database of this test's own (`orders_pg::testing`, which also drops those left by
/// test processes that died), one on the hybrid layout's server and a MongoDB database name, all
/// dropped when this value is.
pub struct Databases {
    pub pg_url: String,
    pub pgh_url: String,
    pub mongo_name: String,
    runtime: tokio::runtime::Runtime,
}

impl Databases {
    pub fn create() -> Self {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let pg_url = runtime.block_on(orders_pg::testing::fresh_database());
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
        let name = format!("monitoring_test_{}_{nanos}", std::process::id());
        runtime.block_on(admin_execute(&hybrid_url_for("postgres"), &format!("CREATE DATABASE {name}")));
        Self { pg_url, pgh_url: hybrid_url_for(&name), mongo_name: name, runtime }
    }
}

async fn admin_execute(url: &str, sql: &str) {
    let (admin, connection) =
        tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap_or_else(|e| panic!("connect to {url}: {e}"));
    tokio::spawn(connection);
    admin.batch_execute(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
}

impl Databases {
    /// Runs `sql` in the test's PostgreSQL database.
    pub fn pg_execute(&self, sql: &str) {
        self.runtime.block_on(async {
            let (client, connection) = tokio_postgres::connect(&self.pg_url, tokio_postgres::NoTls)
                .await
                .expect("connect to the test database");
            tokio::spawn(connection);
            client.batch_execute(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
        });
    }
}

impl Drop for Databases {
    fn drop(&mut self) {
        let name = |url: &str| url.rsplit('/').next().unwrap_or_default().to_owned();
        let (pg_name, pgh_name, mongo_name) = (name(&self.pg_url), name(&self.pgh_url), self.mongo_name.clone());
        self.runtime.block_on(async {
            if let Ok((admin, connection)) =
                tokio_postgres::connect(&pg_url_for("postgres"), tokio_postgres::NoTls).await
            {
                tokio::spawn(connection);
                let _ = admin.batch_execute(&format!("DROP DATABASE IF EXISTS {pg_name} WITH (FORCE)")).await;
            }
            if let Ok((admin, connection)) =
                tokio_postgres::connect(&hybrid_url_for("postgres"), tokio_postgres::NoTls).await
            {
                tokio::spawn(connection);
                let _ = admin.batch_execute(&format!("DROP DATABASE IF EXISTS {pgh_name} WITH (FORCE)")).await;
            }
            if let Ok(client) = mongodb::Client::with_uri_str(mongodb_uri()).await {
                let _ = client.database(&mongo_name).drop().await;
            }
        });
    }
}

/// The k6 binary: `$K6`, else the local stack's `.venv/bin/k6`, else `k6` on the `PATH`.
pub fn k6_binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("K6").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    let venv = repo().join(".venv/bin/k6");
    if venv.is_file() {
        return Some(venv);
    }
    std::env::var_os("PATH")
        .and_then(|paths| std::env::split_paths(&paths).map(|dir| dir.join("k6")).find(|p| p.is_file()))
}

/// The commands this test needs that are missing from the `PATH`.
pub fn missing_commands(commands: &[&str]) -> Vec<String> {
    let paths = std::env::var_os("PATH").unwrap_or_default();
    commands
        .iter()
        .filter(|command| !std::env::split_paths(&paths).any(|dir| dir.join(command).is_file()))
        .map(|command| (*command).to_owned())
        .collect()
}
