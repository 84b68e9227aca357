//! Test support, public so every crate's tests share it: `fresh_database` makes a new, empty
//! database on the test server (`DATABASE_URL`, as `infra/local/stack.sh env` prints it) and
//! drops the ones left by test processes that have exited, so every test starts from nothing;
//! `OrdersLocked` and `terminate_when_blocked` end a service's connection in the middle of a write
//! (the write-outcome tests of both Postgres layouts). Only tests call them; the service never does.

use crate::{PgConfig, PgStore};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};
use tokio_postgres::NoTls;

const PREFIX: &str = "orders_test_";

/// The server the tests use: `DATABASE_URL`, or the local stack's default address.
pub fn server_url() -> String {
    // Tests read the environment directly; the service's settings never come from here.
    std::env::var("DATABASE_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:55432/orders".into())
}

fn url_for(database: &str) -> String {
    let url = server_url();
    let base = url.split('?').next().unwrap_or(&url);
    let (server, _) = base.rsplit_once('/').expect("DATABASE_URL has a database name");
    format!("{server}/{database}")
}

/// Creates an empty database and returns its URL. Panics when the server is unreachable: it is
/// for tests only.
pub async fn fresh_database() -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let (admin, connection) = tokio_postgres::connect(&url_for("postgres"), NoTls)
        .await
        .expect("PostgreSQL is running (start it with infra/local/stack.sh start)");
    tokio::spawn(connection);
    drop_databases_of_exited_processes(&admin).await;
    let name = format!("{PREFIX}{}_{}", std::process::id(), COUNTER.fetch_add(1, Ordering::SeqCst));
    admin.batch_execute(&format!("CREATE DATABASE {name}")).await.expect("create test database");
    url_for(&name)
}

async fn drop_databases_of_exited_processes(admin: &tokio_postgres::Client) {
    let rows = admin
        .query("SELECT datname FROM pg_database WHERE datname LIKE $1", &[&format!("{PREFIX}%")])
        .await
        .expect("list test databases");
    for row in rows {
        let name: String = row.get(0);
        let pid = name.trim_start_matches(PREFIX).split('_').next().unwrap_or("");
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = admin.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await;
        }
    }
}

/// A store with default settings over a new, empty database.
pub async fn fresh_store() -> PgStore {
    PgStore::connect(&PgConfig::with_url(fresh_database().await)).await.expect("connect and migrate")
}

/// A transaction holding `LOCK TABLE orders IN ACCESS EXCLUSIVE MODE` on the database at `url`
/// (either layout has an `orders` table): every statement on `orders` from another session waits
/// until `release`.
pub struct OrdersLocked {
    client: tokio_postgres::Client,
}

impl OrdersLocked {
    pub async fn take(url: &str) -> Self {
        let (client, connection) = tokio_postgres::connect(url, NoTls).await.expect("connect to lock orders");
        tokio::spawn(connection);
        client.batch_execute("BEGIN; LOCK TABLE orders IN ACCESS EXCLUSIVE MODE").await.expect("lock orders");
        Self { client }
    }

    pub async fn release(self) {
        self.client.batch_execute("ROLLBACK").await.expect("release the lock on orders");
    }
}

/// Waits (up to 10 s) until a session of `application_name` on the server of `url` waits for a
/// lock, then terminates it with `pg_terminate_backend` (the server answers its statement with
/// `FATAL 57P01`). Returns the statement it was running.
pub async fn terminate_when_blocked(url: &str, application_name: &str) -> String {
    let (admin, connection) = tokio_postgres::connect(url, NoTls).await.expect("connect to terminate");
    tokio::spawn(connection);
    let started = Instant::now();
    loop {
        let rows = admin
            .query(
                "SELECT pid, query FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'",
                &[&application_name],
            )
            .await
            .expect("read pg_stat_activity");
        if let Some(row) = rows.first() {
            let pid: i32 = row.get(0);
            let terminated: bool =
                admin.query_one("SELECT pg_terminate_backend($1)", &[&pid]).await.expect("terminate").get(0);
            assert!(terminated, "backend {pid} terminated");
            return row.get(1);
        }
        assert!(started.elapsed() < Duration::from_secs(10), "no session of {application_name} waited for a lock");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
