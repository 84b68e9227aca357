//! The dashboard's Replication row proven on the replicated local stack (`stack.sh start
//! --replicas 3`: a three-member MongoDB replica set, a PostgreSQL primary and two synchronous
//! standbys under Patroni, each member in its own network namespace). It starts
//! `infra/local/monitor.sh start --replicas` (one postgres_exporter with the project's queries and
//! one mongo-serverstatus-exporter per member, a real Prometheus), writes for a few seconds through
//! the drivers to both primaries (inserts and updates of documents of about 1 KB), then checks
//! that every query of every panel of the row returns finite series, that both engines show a lag
//! per standby / secondary and more than 0 bytes shipped per write, and that the primary panel
//! names the member Patroni's REST API and MongoDB's `hello` say is primary. Without the REPLICA_*
//! variables of `stack.sh env` it says SKIPPED; `scripts/replica-tests.sh` runs it in CI.

mod support;

use serde_json::Value;
use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};
use support::prometheus::{Point, Prometheus};

/// How long the writes run, the wait after them so the last scrapes are in, and how much longer
/// the test waits for every panel's series when a scrape or two failed (on a loaded two-core
/// machine every scrape, Prometheus' own too, once failed for several seconds).
const WRITE_SECONDS: u64 = 6;
const SETTLE: Duration = Duration::from_secs(3);
const PATIENCE: Duration = Duration::from_secs(15);
/// The pause between two writes of one engine (about 100 writes per second at most).
const WRITE_PAUSE: Duration = Duration::from_millis(10);
/// The panels this test proves: those of the dashboard's row whose title starts so.
const ROW: &str = "Replication";
/// The table and collection the test writes, in the replicated stack's `orders` database.
const PROBE: &str = "dashboard_replication_probe";

struct Replicas {
    pg_url: String,
    mongodb_uri: String,
    patroni_urls: String,
}

fn replicas() -> Option<Replicas> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    Some(Replicas {
        pg_url: var("REPLICA_DATABASE_URL")?,
        mongodb_uri: var("REPLICA_MONGODB_URI")?,
        patroni_urls: var("REPLICA_PATRONI_URLS")?,
    })
}

/// `infra/local/monitor.sh` with the test's ports and folder; stopped on drop.
struct Monitor {
    env: Vec<(String, String)>,
}

impl Monitor {
    fn run(&self, args: &[&str]) -> std::process::Output {
        Command::new("bash")
            .arg(support::repo().join("infra/local/monitor.sh"))
            .args(args)
            .envs(self.env.iter().cloned())
            .output()
            .expect("run infra/local/monitor.sh")
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        let _ = self.run(&["stop"]);
    }
}

/// The JSON of `GET url` (`http://host:port/path`), as Patroni's REST API answers it.
fn http_get_json(url: &str) -> Option<Value> {
    let rest = url.strip_prefix("http://")?;
    let (host, path) = rest.split_once('/').map_or((rest, "/".to_owned()), |(h, p)| (h, format!("/{p}")));
    let mut stream = TcpStream::connect(host).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n").ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    serde_json::from_str(answer.split_once("\r\n\r\n")?.1).ok()
}

/// host:port of the PostgreSQL primary, as Patroni's `/cluster` names its leader.
fn patroni_leader(patroni_urls: &str) -> String {
    for url in patroni_urls.split(',') {
        let Some(cluster) = http_get_json(&format!("{}/cluster", url.trim_end_matches('/'))) else { continue };
        let leader = cluster["members"].as_array().into_iter().flatten().find(|m| m["role"] == "leader");
        if let Some(leader) = leader {
            return format!("{}:{}", leader["host"].as_str().expect("host"), leader["port"].as_u64().expect("port"));
        }
    }
    panic!("no Patroni REST API of {patroni_urls} named a leader")
}

/// Inserts and updates documents of about 1 KB through the drivers on both primaries for
/// `WRITE_SECONDS`; returns (PostgreSQL rows, MongoDB documents) written, and the MongoDB primary
/// `hello` names.
async fn write_to_both(replicas: &Replicas) -> (u64, u64, String) {
    let (pg, connection) =
        tokio_postgres::connect(&replicas.pg_url, tokio_postgres::NoTls).await.expect("connect to the PG primary");
    tokio::spawn(connection);
    pg.batch_execute(&format!(
        "DROP TABLE IF EXISTS {PROBE}; CREATE TABLE {PROBE} (id bigserial PRIMARY KEY, doc jsonb NOT NULL)"
    ))
    .await
    .expect("create the probe table");
    let mongo = mongodb::Client::with_uri_str(&replicas.mongodb_uri).await.expect("MongoDB replica set URI");
    let hello = mongo.database("admin").run_command(mongodb::bson::doc! {"hello": 1}).await.expect("hello");
    let mongo_primary = hello.get_str("primary").expect("hello names a primary").to_owned();
    let collection = mongo.database("orders").collection::<mongodb::bson::Document>(PROBE);
    collection.drop().await.expect("drop the probe collection");
    let note = "x".repeat(1000);

    let deadline = Instant::now() + Duration::from_secs(WRITE_SECONDS);
    let pg_writes = async {
        let mut written = 0_u64;
        while Instant::now() < deadline {
            let doc = serde_json::json!({"status": "placed", "note": note});
            let id: i64 = pg
                .query_one(&format!("INSERT INTO {PROBE} (doc) VALUES ($1) RETURNING id"), &[&doc])
                .await
                .expect("insert")
                .get(0);
            pg.execute(
                &format!("UPDATE {PROBE} SET doc = jsonb_set(doc, '{{status}}', '\"paid\"') WHERE id = $1"),
                &[&id],
            )
            .await
            .expect("update");
            written += 2;
            tokio::time::sleep(WRITE_PAUSE).await;
        }
        written
    };
    let mongo_writes = async {
        let mut written = 0_u64;
        while Instant::now() < deadline {
            let id = collection
                .insert_one(mongodb::bson::doc! {"status": "placed", "note": &note})
                .await
                .expect("insert")
                .inserted_id;
            collection
                .update_one(mongodb::bson::doc! {"_id": id}, mongodb::bson::doc! {"$set": {"status": "paid"}})
                .await
                .expect("update");
            written += 2;
            tokio::time::sleep(WRITE_PAUSE).await;
        }
        written
    };
    let (pg_written, mongo_written) = tokio::join!(pg_writes, mongo_writes);
    (pg_written, mongo_written, mongo_primary)
}

/// Drops the probe table and collection, once the figures are read (a dropped table's counts
/// leave `orders_pg_member_rows_written`, which would look like a counter reset in the window).
async fn drop_probes(replicas: &Replicas) {
    if let Ok((pg, connection)) = tokio_postgres::connect(&replicas.pg_url, tokio_postgres::NoTls).await {
        tokio::spawn(connection);
        let _ = pg.batch_execute(&format!("DROP TABLE IF EXISTS {PROBE}")).await;
    }
    if let Ok(mongo) = mongodb::Client::with_uri_str(&replicas.mongodb_uri).await {
        let _ = mongo.database("orders").collection::<mongodb::bson::Document>(PROBE).drop().await;
    }
}

/// The series of one panel query, checked to be there, finite and not negative.
fn finite_series(
    prometheus: &Prometheus,
    (title, legend, expr): &(String, String, String),
    w: u64,
    at: f64,
) -> Vec<Point> {
    let points = series(prometheus, expr, w, at);
    assert!(all_finite(&points), "{title} / {legend}: {expr} -> {points:?}");
    points
}

/// The series of one panel query, as Grafana would ask with a rate window of `w` seconds.
fn series(prometheus: &Prometheus, expr: &str, w: u64, at: f64) -> Vec<Point> {
    prometheus.query(&expr.replace("$__rate_interval", &format!("{w}s")), at)
}

fn all_finite(points: &[Point]) -> bool {
    !points.is_empty() && points.iter().all(|p| p.value.is_finite() && p.value >= 0.0)
}

fn label<'a>(point: &'a Point, name: &str) -> &'a str {
    point.labels[name].as_str().unwrap_or_default()
}

#[test]
fn replication_row_shows_lag_bytes_per_write_and_the_real_primary_of_both_engines() {
    let Some(replicas) = replicas() else {
        eprintln!(
            "SKIPPED: the replication panels need the replicated stack (REPLICA_DATABASE_URL, REPLICA_MONGODB_URI and REPLICA_PATRONI_URLS of `stack.sh env` after `stack.sh start --replicas 3`)"
        );
        return;
    };
    let missing = support::missing_commands(&[
        "prometheus",
        "promtool",
        "prometheus-postgres-exporter",
        "prometheus-node-exporter",
    ]);
    if !missing.is_empty() {
        assert!(std::env::var_os("CI").is_none(), "CI must not skip the replication panels' test: missing {missing:?}");
        eprintln!("SKIPPED: missing {} (`bash infra/local/monitor.sh install` installs them)", missing.join(", "));
        return;
    }
    let queries = support::panel_queries(&support::dashboard(), |row| row.starts_with(ROW));
    assert!(queries.len() >= 6, "the dashboard has a Replication row with its panels: {queries:?}");

    let scratch = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("replication_live_{}", std::process::id()));
    std::fs::create_dir_all(&scratch).expect("scratch folder");
    let prometheus = Prometheus { port: support::free_port() };
    let monitor = Monitor {
        env: vec![
            ("MONITOR_DIR".into(), scratch.join("monitor").display().to_string()),
            ("MONITOR_PROMETHEUS_PORT".into(), prometheus.port.to_string()),
            ("MONITOR_NODE_EXPORTER_PORT".into(), support::free_port().to_string()),
            ("MONITOR_REPLICA_PG_EXPORTER_PORT".into(), support::free_port().to_string()),
            ("MONITOR_REPLICA_MONGO_EXPORTER_PORT".into(), support::free_port().to_string()),
            ("MONITOR_PG_SERVICE".into(), format!("127.0.0.1:{}", support::free_port())),
            ("MONITOR_MONGO_SERVICE".into(), format!("127.0.0.1:{}", support::free_port())),
            ("MONITOR_SCRAPE_INTERVAL".into(), "1s".into()),
            ("MONGO_EXPORTER_BIN".into(), env!("CARGO_BIN_EXE_mongo-serverstatus-exporter").into()),
        ],
    };
    let started = monitor.run(&["start", "--replicas"]);
    assert!(
        started.status.success(),
        "monitor.sh start --replicas failed:\n{}{}",
        String::from_utf8_lossy(&started.stdout),
        String::from_utf8_lossy(&started.stderr)
    );
    // The exporters of all six members up (no service runs here: the `orders` job stays down).
    let waited = Instant::now();
    loop {
        std::thread::sleep(Duration::from_millis(500));
        let down: Vec<String> =
            prometheus.targets_down().into_iter().filter(|t| !t.starts_with("\"orders\"")).collect();
        if down.is_empty() {
            break;
        }
        assert!(waited.elapsed() < Duration::from_secs(20), "member exporters still down: {down:?}");
    }

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let t0 = support::unix_now();
    let (pg_written, mongo_written, mongo_primary) = runtime.block_on(write_to_both(&replicas));
    std::thread::sleep(SETTLE);
    let waited = Instant::now();
    let (t1, w) = loop {
        let t1 = support::unix_now();
        let w = (t1 - t0).ceil() as u64;
        let complete = || queries.iter().all(|(_, _, expr)| all_finite(&series(&prometheus, expr, w, t1)));
        if waited.elapsed() > PATIENCE || complete() {
            break (t1, w);
        }
        std::thread::sleep(Duration::from_secs(1));
    };
    eprintln!("wrote {pg_written} rows to PostgreSQL and {mongo_written} documents to MongoDB in {WRITE_SECONDS} s");
    assert!(pg_written > 0 && mongo_written > 0, "the writes ran");

    // Every query of every panel of the row: series, finite, not negative.
    for query in &queries {
        finite_series(&prometheus, query, w, t1);
    }
    let by_legend = |title_part: &str, legend_start: &str| {
        let query = queries
            .iter()
            .find(|(t, l, _)| t.contains(title_part) && l.starts_with(legend_start))
            .unwrap_or_else(|| panic!("a query of a panel '{title_part}' with a legend '{legend_start}...'"));
        (query, finite_series(&prometheus, query, w, t1))
    };

    // Lag: one finite series per standby / secondary.
    for (engine, label_name) in [("postgres", "standby_name"), ("mongodb", "member_idx")] {
        let (query, points) = by_legend("lag per standby", engine);
        eprintln!("{}: {:?}", query.1, points.iter().map(|p| (label(p, label_name), p.value)).collect::<Vec<_>>());
        assert_eq!(points.len(), 2, "{engine}: a lag for each of the two standbys / secondaries: {points:?}");
    }
    // Bytes shipped per write: more than 0 to each standby / secondary.
    for (engine, label_name) in [("postgres", "standby_name"), ("mongodb", "member")] {
        let (query, points) = by_legend("shipped per write", engine);
        eprintln!("{}: {:?}", query.1, points.iter().map(|p| (label(p, label_name), p.value)).collect::<Vec<_>>());
        assert!(
            points.len() == 2 && points.iter().all(|p| p.value > 0.0),
            "{engine}: bytes shipped per write to each of two standbys / secondaries: {points:?}"
        );
    }
    // The primary panel names the member that really is primary.
    let pg_primary = patroni_leader(&replicas.patroni_urls);
    for (engine, really) in [("postgres", &pg_primary), ("mongodb", &mongo_primary)] {
        let (_, points) = by_legend("primary", engine);
        let primaries: Vec<&str> = points.iter().filter(|p| p.value == 1.0).map(|p| label(p, "member")).collect();
        eprintln!("{engine}: the panel's primary {primaries:?}, really {really}");
        assert_eq!(primaries, [really.as_str()], "{engine}: {points:?}");
        assert_eq!(points.len(), 3, "{engine}: a series per member: {points:?}");
    }
    runtime.block_on(drop_probes(&replicas));
    drop(monitor);
}
