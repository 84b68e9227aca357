//! What the runner reads from the databases themselves when it can reach them: exact row and
//! document counts for the fairness gate (`SELECT count(*)`, `countDocuments`), and PostgreSQL's
//! `pg_stat_wal` (WAL records and full-page images, which `/diagnostics` does not report).
//! `n_live_tup` would do for the counts in principle, but backends report their counters lazily,
//! so right after a reload it may still carry the previous round's inserts. When a database is out
//! of reach, the gate falls back to the figures in `/diagnostics` and the WAL figures stay empty.

use mongodb::bson::Document;
use mongodb::options::ClientOptions;
use orders_mongo::indexes::COLLECTION;
use orders_pg::admin;
use std::time::Duration;
use tokio_postgres::NoTls;

const LIMIT: Duration = Duration::from_secs(15);

/// Counts of `orders` in both databases; `None` where the database could not be asked.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Counts {
    pub pg: Option<u64>,
    pub mongo: Option<u64>,
}

async fn pg_count(url: &str) -> Option<u64> {
    let (client, connection) = tokio_postgres::connect(url, NoTls).await.ok()?;
    let connection = tokio::spawn(connection);
    let count = admin::count_orders(&client).await.ok();
    drop(client);
    let _ = connection.await;
    count.and_then(|c| u64::try_from(c).ok())
}

async fn mongo_count(uri: &str, db: &str) -> Option<u64> {
    let mut options = ClientOptions::parse(uri).await.ok()?;
    options.server_selection_timeout = Some(Duration::from_secs(5));
    options.app_name = Some("orders-bench".into());
    let client = mongodb::Client::with_options(options).ok()?;
    orders_mongo::admin::count_orders(&client.database(db).collection::<Document>(COLLECTION)).await.ok()
}

/// `pg_stat_wal`: server-wide WAL records and full-page images since the last reset, and the WAL
/// flushes (fsyncs of the WAL: with `synchronous_commit = on` a commit waits for one, and several
/// commits may share it; PostgreSQL 18 counts them in `pg_stat_io`, 14 to 17 in
/// `pg_stat_wal.wal_sync`; a synchronous `wal_sync_method` makes none).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WalStats {
    pub records: f64,
    pub fpi: f64,
    pub flushes: Option<f64>,
}

pub async fn wal_stats(database_url: &str) -> Option<WalStats> {
    let query = async {
        let (client, connection) = tokio_postgres::connect(database_url, NoTls).await.ok()?;
        let connection = tokio::spawn(connection);
        let figures = admin::wal_records_and_fpi(&client).await.ok();
        let flushes = admin::wal_flushes(&client).await;
        drop(client);
        let _ = connection.await;
        figures.map(|(records, fpi)| WalStats { records, fpi, flushes })
    };
    tokio::time::timeout(LIMIT, query).await.ok().flatten()
}

pub async fn exact(database_url: &str, mongodb_uri: &str, mongodb_db: &str) -> Counts {
    let (pg, mongo) = tokio::join!(
        tokio::time::timeout(LIMIT, pg_count(database_url)),
        tokio::time::timeout(LIMIT, mongo_count(mongodb_uri, mongodb_db))
    );
    Counts { pg: pg.ok().flatten(), mongo: mongo.ok().flatten() }
}
