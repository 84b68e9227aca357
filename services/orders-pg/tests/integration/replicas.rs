//! Against the replicated local stack (`infra/local/stack.sh start --replicas 3`, issue 42): an
//! order the service acknowledged (`POST /orders` through the real HTTP app) is on the synchronous
//! standby that `pg_stat_replication` names, read there right after the 201 (its WAL received up
//! to the order's commit record; with `remote_apply`, the row itself); a commit waits for that
//! standby (with its WAL receiver stopped, no 201 comes until it runs again: root only); and
//! `/diagnostics` names the primary and what a commit waits for. Skipped, saying so, without
//! `REPLICA_DATABASE_URL` (`eval "$(infra/local/stack.sh env)"` while the replicas run).

use orders_core::sample::order_body;
use orders_http::HttpConfig;
use orders_pg::config::SynchronousCommit;
use orders_pg::{PgConfig, PgStore};
use orders_testkit::TestApp;
use orders_testkit::api::random_id;
use serde_json::Value;
use std::process::Command;
use std::time::Duration;
use tokio_postgres::{Client, NoTls};

/// How long a commit must stay unanswered while the synchronous standby cannot receive WAL (a
/// warm `POST /orders` answers in 5-30 ms on this stack).
const HELD: Duration = Duration::from_millis(1500);

fn replica_url() -> Option<String> {
    let url = std::env::var("REPLICA_DATABASE_URL").ok().filter(|url| !url.is_empty());
    if url.is_none() {
        eprintln!(
            "SKIPPED: REPLICA_DATABASE_URL is not set; start the replicas (as root: \
             infra/local/stack.sh start --replicas 3 --only-replicas) and eval \"$(infra/local/stack.sh env)\""
        );
    }
    url
}

/// `url` with its database replaced by `database` (the host list and the parameters kept).
fn with_database(url: &str, database: &str) -> String {
    let (base, query) = url.split_once('?').map_or((url, None), |(base, query)| (base, Some(query)));
    let (server, _) = base.rsplit_once('/').expect("REPLICA_DATABASE_URL names a database");
    match query {
        Some(query) => format!("{server}/{database}?{query}"),
        None => format!("{server}/{database}"),
    }
}

/// The port of `host` in the URL's host list (5432 when it is not listed).
fn port_of(url: &str, host: &str) -> u16 {
    let hosts = url.split_once("://").map_or(url, |(_, rest)| rest).split('/').next().unwrap_or("");
    let hosts = hosts.rsplit_once('@').map_or(hosts, |(_, hosts)| hosts);
    let port = hosts.split(',').find_map(|entry| entry.strip_prefix(host)?.strip_prefix(':')?.parse().ok());
    port.unwrap_or(5432)
}

async fn connect(url: &str) -> Client {
    let (client, connection) =
        tokio_postgres::connect(url, NoTls).await.unwrap_or_else(|error| panic!("connect to {url}: {error}"));
    tokio::spawn(connection);
    client
}

async fn spawn_app(url: &str, synchronous_commit: Option<SynchronousCommit>) -> TestApp {
    let mut config = PgConfig::with_url(url.to_owned());
    config.pool_size = 2;
    config.synchronous_commit = synchronous_commit;
    let store = PgStore::connect(&config).await.expect("connect to the primary and migrate");
    TestApp::spawn(store, HttpConfig::for_tests()).await
}

async fn create(app: &TestApp) -> i64 {
    let reply = app.post_json("/orders", &order_body(random_id(), [random_id(), random_id(), random_id()])).await;
    assert_eq!(reply.status, 201, "{}", reply.text);
    order_id(&reply.json)
}

fn order_id(order: &Value) -> i64 {
    order["id"].as_i64().expect("an order id")
}

async fn wal_insert_lsn(primary: &Client) -> String {
    primary.query_one("SELECT pg_current_wal_insert_lsn()::text", &[]).await.expect("WAL position").get(0)
}

/// Where the commit record of the transaction that wrote order `id` ends, found in the WAL from
/// `from` on (`pg_walinspect`): the position a synchronous standby has received once the commit
/// is acknowledged.
async fn commit_end_lsn(primary: &Client, id: i64, from: &str) -> String {
    let row = primary
        .query_one(
            "SELECT end_lsn::text FROM pg_get_wal_records_info($1::text::pg_lsn, pg_current_wal_flush_lsn())
             WHERE resource_manager = 'Transaction' AND record_type LIKE 'COMMIT%'
               AND xid = (SELECT xmin FROM orders WHERE id = $2)",
            &[&from, &id],
        )
        .await
        .unwrap_or_else(|error| panic!("the commit record of order {id} in the WAL from {from}: {error}"));
    row.get(0)
}

/// Asserts that `standby` has received (and flushed) the WAL up to `lsn`; says how far it got.
async fn assert_received(standby: &Client, name: &str, lsn: &str, what: &str) {
    let row = standby
        .query_one("SELECT pg_last_wal_receive_lsn() >= $1::text::pg_lsn, pg_last_wal_receive_lsn()::text", &[&lsn])
        .await
        .expect("the standby's received WAL");
    let (received, at): (bool, String) = (row.get(0), row.get(1));
    assert!(
        received,
        "{what}: the synchronous standby {name} had received the WAL up to {at} only, not the commit at {lsn}"
    );
}

/// The synchronous standby's WAL receiver, stopped (SIGSTOP) until this is dropped (SIGCONT).
struct StoppedReceiver(String);

impl StoppedReceiver {
    /// `None` (and a line saying so) when the test may not signal it (not root).
    async fn stop(standby: &Client) -> Option<StoppedReceiver> {
        let pid: i32 =
            standby.query_one("SELECT pid FROM pg_stat_wal_receiver", &[]).await.expect("the WAL receiver").get(0);
        let pid = pid.to_string();
        match Command::new("kill").args(["-STOP", &pid]).status() {
            Ok(status) if status.success() => Some(StoppedReceiver(pid)),
            _ => {
                eprintln!("SKIPPED (that part): cannot stop the standby's WAL receiver (pid {pid}): not root?");
                None
            }
        }
    }
}

impl Drop for StoppedReceiver {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-CONT", &self.0]).status();
    }
}

#[tokio::test]
async fn an_acknowledged_order_is_on_the_synchronous_standby_and_diagnostics_say_so() {
    let Some(url) = replica_url() else { return };
    let database = format!("replica_test_{}_{}", std::process::id(), random_id() % 1_000_000);
    let admin = connect(&with_database(&url, "postgres")).await;
    admin.batch_execute(&format!("CREATE DATABASE {database}")).await.expect("create the test database");
    let database_url = with_database(&url, &database);
    let app = spawn_app(&database_url, None).await;
    let primary = connect(&database_url).await;
    primary.batch_execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect").await.expect("pg_walinspect");

    // /diagnostics: the member written to, and the synchronous standby a commit waits for.
    let reply = app.get("/diagnostics").await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let replication = &reply.json["replication"];
    let row = primary.query_one("SELECT host(inet_server_addr()), inet_server_port()", &[]).await.expect("address");
    let (address, port): (String, i32) = (row.get(0), row.get(1));
    assert_eq!(replication["role"], "primary", "{replication:#}");
    assert_eq!(replication["server_addr"], address.as_str(), "the primary: {replication:#}");
    assert_eq!(replication["server_port"], port, "{replication:#}");
    assert_eq!(replication["in_recovery"], false, "{replication:#}");
    assert_eq!(replication["synchronous_commit"], "on", "{replication:#}");
    let standbys = replication["standbys"].as_array().expect("standbys");
    let synchronous: Vec<&Value> = standbys.iter().filter(|s| s["sync_state"] == "sync").collect();
    assert_eq!(synchronous.len(), 1, "one synchronous standby of {} streaming: {replication:#}", standbys.len());
    let name = synchronous[0]["name"].as_str().expect("its name");
    let standby_host = synchronous[0]["client_addr"].as_str().expect("its address");
    let names = replication["synchronous_standby_names"].as_str().expect("synchronous_standby_names");
    assert!(names.contains(name), "synchronous_standby_names '{names}' names {name}");
    assert_eq!(
        replication["commit_waits_for"],
        format!("the WAL flush on this server and the WAL flushed on the synchronous standby {name}").as_str()
    );
    // Its `postgres` database: the test's own may not be replayed there yet (only its WAL is sure).
    let standby_server = format!("postgres://postgres@{standby_host}:{}", port_of(&url, standby_host));
    let standby = connect(&format!("{standby_server}/postgres")).await;
    let in_recovery: bool = standby.query_one("SELECT pg_is_in_recovery()", &[]).await.expect("recovery").get(0);
    assert!(in_recovery, "{standby_host} is a standby");

    // Right after the 201, the synchronous standby has the commit's WAL.
    let from = wal_insert_lsn(&primary).await;
    let id = create(&app).await;
    let lsn = commit_end_lsn(&primary, id, &from).await;
    assert_received(&standby, name, &lsn, "right after the 201").await;

    // The commit waits for it: with its WAL receiver stopped, no 201 until it runs again.
    let from = wal_insert_lsn(&primary).await;
    if let Some(stopped) = StoppedReceiver::stop(&standby).await {
        let body = order_body(random_id(), [random_id(), random_id(), random_id()]);
        let post = app.post_json("/orders", &body);
        tokio::pin!(post);
        let early = tokio::time::timeout(HELD, &mut post).await;
        drop(stopped);
        if let Ok(reply) = early {
            panic!(
                "answered {} within {HELD:?} while the synchronous standby {name} could not receive WAL (order {})",
                reply.status, reply.json["id"]
            );
        }
        let reply = post.await;
        assert_eq!(reply.status, 201, "once the standby runs again: {}", reply.text);
        let lsn = commit_end_lsn(&primary, order_id(&reply.json), &from).await;
        assert_received(&standby, name, &lsn, "after the held commit").await;
    }

    // remote_apply (PG_SYNCHRONOUS_COMMIT): the row itself is visible on the standby after the 201.
    let applying = spawn_app(&database_url, Some(SynchronousCommit::RemoteApply)).await;
    let reply = applying.get("/diagnostics").await;
    let waits = reply.json["replication"]["commit_waits_for"].as_str().unwrap_or_default().to_owned();
    assert!(waits.contains(&format!("replayed (visible to reads) on the synchronous standby {name}")), "{waits}");
    let id = create(&applying).await;
    let standby = connect(&format!("{standby_server}/{database}")).await;
    let seen: i64 = standby
        .query_one("SELECT count(*) FROM orders WHERE id = $1", &[&id])
        .await
        .expect("read on the standby")
        .get(0);
    assert_eq!(seen, 1, "with remote_apply, order {id} is visible on {name} right after the 201");

    let _ = admin.batch_execute(&format!("DROP DATABASE {database} WITH (FORCE)")).await;
}

/// Replay paused (`pg_wal_replay_pause()`) on every listed standby until this is dropped.
struct PausedReplay(Vec<String>);

impl PausedReplay {
    async fn pause(servers: Vec<String>) -> PausedReplay {
        for server in &servers {
            connect(server).await.batch_execute("SELECT pg_wal_replay_pause()").await.expect("pause replay");
        }
        PausedReplay(servers)
    }
}

impl Drop for PausedReplay {
    fn drop(&mut self) {
        for server in self.0.clone() {
            let resumed = std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
                runtime.block_on(async { connect(&server).await.batch_execute("SELECT pg_wal_replay_resume()").await })
            });
            let _ = resumed.join();
        }
    }
}

/// `GET /orders/{id}` until it answers 200, for up to two seconds; whether it did.
async fn found_within_two_seconds(app: &TestApp, id: i64) -> bool {
    let began = std::time::Instant::now();
    while began.elapsed() < Duration::from_secs(2) {
        if app.get(&format!("/orders/{id}")).await.status == 200 {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

#[tokio::test]
async fn with_read_database_url_reads_go_to_a_standby_and_diagnostics_say_which() {
    let Some(url) = replica_url() else { return };
    let database = format!("replica_reads_{}_{}", std::process::id(), random_id() % 1_000_000);
    let admin = connect(&with_database(&url, "postgres")).await;
    admin.batch_execute(&format!("CREATE DATABASE {database}")).await.expect("create the test database");
    let database_url = with_database(&url, &database);
    let primary = connect(&database_url).await;
    let standbys: Vec<String> = primary
        .query("SELECT host(client_addr) FROM pg_stat_replication", &[])
        .await
        .expect("the standbys")
        .iter()
        .map(|row| row.get::<_, String>(0))
        .map(|host| format!("postgres://postgres@{host}:{}/postgres", port_of(&url, &host)))
        .collect();
    assert_eq!(standbys.len(), 2, "two standbys stream from the primary");
    let base = database_url.split_once('?').map_or(database_url.as_str(), |(base, _)| base);
    let mut config = PgConfig::with_url(database_url.clone());
    config.read_database_url = Some(format!("{base}?target_session_attrs=read-only&load_balance_hosts=random"));
    config.pool_size = 2;
    // The reads' pool connects on the first read (the standbys may still be replaying the new
    // database: `found_within_two_seconds` asks again).
    let store = PgStore::connect(&config).await.expect("connect to the primary and migrate");
    let app = TestApp::spawn(store, HttpConfig::for_tests()).await;
    let id = create(&app).await;
    assert!(found_within_two_seconds(&app, id).await, "order {id} found through the standbys");

    let reply = app.get("/diagnostics").await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let reads = &reply.json["reads"];
    assert_eq!(reads["pool"], "READ_DATABASE_URL", "{reads:#}");
    assert_eq!(reads["server"]["in_recovery"], true, "reads on a standby: {reads:#}");
    assert_ne!(reads["server"]["server_addr"], reply.json["replication"]["server_addr"], "{:#}", reply.json);

    // Replay paused on both standbys: a new order is acknowledged (the synchronous standby has its
    // WAL) but not found, since reads go to the standbys; found once replay resumes.
    let paused = PausedReplay::pause(standbys).await;
    let id = create(&app).await;
    assert_eq!(app.get(&format!("/orders/{id}")).await.status, 404, "order {id} read on a paused standby");
    drop(paused);
    assert!(found_within_two_seconds(&app, id).await, "order {id} found once replay resumed");
    let _ = admin.batch_execute(&format!("DROP DATABASE {database} WITH (FORCE)")).await;
}

#[test]
fn urls_keep_their_hosts_and_parameters() {
    let url = "postgres://postgres@198.18.42.21:5432,198.18.42.22:5433/orders?target_session_attrs=read-write";
    assert_eq!(
        with_database(url, "postgres"),
        "postgres://postgres@198.18.42.21:5432,198.18.42.22:5433/postgres?target_session_attrs=read-write"
    );
    assert_eq!(port_of(url, "198.18.42.22"), 5433);
    assert_eq!(port_of(url, "198.18.42.9"), 5432);
}
